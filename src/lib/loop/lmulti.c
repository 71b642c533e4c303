/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lmulti.c - a MultiLock on the loop: multilock.c's all-or-none sequence
 * as a chain of member operations.
 *
 *   TAKING   member i's acquisition, with what is left of the wait; on
 *            failure the members taken (and member i itself after a
 *            transport error: its script may have run) are given back
 *   RELETTING with a fixed lease, every member but the last gets the full
 *            lease again once the last is taken (as multilock.c)
 *   GIVING_BACK members released in reverse, then the outcome
 *
 * Each step is an ordinary operation of its member's client (a child),
 * whose callback moves the chain on; the MultiLock's own callback comes
 * last. The members may be on several loop clients of one loop thread:
 * the MultiLock's operation belongs to member 0's client, and a child's
 * callback, run from its own client's turn, enters member 0's client
 * (rlock__loop_enter, as lredlock.c) so that what it queues there goes
 * out.
 */
#include <stddef.h>
#include <stdio.h>

#include "client_int.h"
#include "common.h"
#include "lock_int.h"
#include "loop.h"

enum { TAKING, RELETTING, GIVING_BACK };

static void step(rlock_op *op);

static void release_next(rlock_op *op);

/* Fail with rc (the last error's message): give back `held` members. */
static void fail(rlock_op *op, int rc, size_t held) {
  op->rc = rc;
  snprintf(op->msg, sizeof op->msg, "%s", rlock_error_last()->message);
  op->phase = GIVING_BACK;
  op->index = held;
  release_next(op);
}

static void taken_next(rlock_op *op, int rc) {
  if (rc == RLOCK_OK && op->canceled) {
    fail(op, rlock__lop_canceled(), op->index + 1);
    return;
  }
  if (rc != RLOCK_OK) {
    fail(op, rc, rlock__multi_give_back(op->index, rc));
    return;
  }
  op->index++;
  step(op);
}

static void relet_next(rlock_op *op, int rc) {
  if (rc != RLOCK_OK) {
    fail(op, rc, op->multi->n);
    return;
  }
  op->index++;
  step(op);
}

static void released_next(rlock_op *op, int rc);

/* A step's child answered (the phase says which step): enter member 0's
 * client, so that what the chain queues there (the MultiLock's completion
 * included) goes out at the leave, forget the child, and go on. */
static void member_done(void *arg, int rc, int64_t v) {
  (void)v;
  rlock_op *op = arg;
  rlock__loop_enter(op->c);
  op->child = NULL;
  if (op->phase == TAKING)
    taken_next(op, rc);
  else if (op->phase == RELETTING)
    relet_next(op, rc);
  else
    released_next(op, rc);
  rlock__loop_leave(op->c);
}

/* A step's operation on member `i` for op's owner, reporting to
 * member_done(); NULL when out of memory. */
static rlock_op *child_new(rlock_op *op, size_t i, int type) {
  rlock_lock *l = op->multi->members[i];
  rlock_op *child = rlock__lop_new(l, type);
  if (child == NULL)
    return NULL;
  child->cb = member_done;
  child->arg = op;
  child->index = i;
  child->owner_number = op->owner_number;
  rlock__owner_as(l->client, op->owner_number, child->owner);
  op->child = child;
  return child;
}

static void take(rlock_op *op) {
  int rc =
      rlock__multi_in_time(op->multi, op->index, op->wait_ms, op->deadline_us);
  if (rc != RLOCK_OK) {
    fail(op, rc, op->index);
    return;
  }
  rlock_op *child = child_new(op, op->index, RLOCK__LOP_ACQUIRE);
  if (child == NULL) {
    fail(op, RLOCK_ENOMEM, op->index);
    return;
  }
  child->wait_ms = rlock__multi_wait_left(op->wait_ms, op->deadline_us);
  child->lease_ms = op->lease_ms;
  rlock__lop_submit(child, rlock__lacquire_start);
}

/* ---- the fresh leases -----------------------------------------------------
 */

static void relet(rlock_op *op) {
  rlock_op *child = child_new(op, op->index, RLOCK__LOP_RELET);
  if (child == NULL) {
    fail(op, RLOCK_ENOMEM, op->multi->n);
    return;
  }
  child->keep_ms = op->lease_ms;
  child->multi = op->multi; /* a member's fresh lease (lops.c) */
  rlock__lop_submit(child, rlock__lrelet_start);
}

/* ---- the chain ------------------------------------------------------------
 */

static void step(rlock_op *op) {
  size_t n = op->multi->n;
  if (op->canceled) {
    fail(op, rlock__lop_canceled(), op->phase == TAKING ? op->index : n);
    return;
  }
  if (op->phase == TAKING && op->index < n) {
    take(op);
    return;
  }
  if (op->phase == TAKING) { /* all taken: fresh leases for the earlier */
    op->phase = RELETTING;
    op->index = 0;
  }
  if (rlock__multi_relets(op->multi, op->index, op->lease_ms)) {
    relet(op);
    return;
  }
  rlock__lop_finish(op, RLOCK_OK, 0);
}

static void multi_start(rlock_op *op) {
  op->phase = TAKING;
  op->index = 0;
  op->deadline_us = rlock__deadline_after_ms(op->wait_ms);
  step(op);
}

/* rlock_op_cancel on the loop thread. */
static void multi_cancel(rlock_op *op) {
  if (op->canceled || op->finished)
    return;
  op->canceled = 1;
  if (op->phase == TAKING && op->child != NULL)
    rlock__lacquire_cancel_member(op->child); /* its answer moves on */
}

/* The client is being freed: the operation's child, if any, tells it
 * nothing any more. */
static void multi_abandon(rlock_op *op) {
  rlock_op *child = op->child;
  op->child = NULL;
  if (child == NULL)
    return;
  child->cb = rlock__lop_ignore;
  /* On another client, which lives on: canceled, it gives back a late
   * grant by itself. (On this one it is completed with the client.) */
  if (child->c != op->c)
    rlock__lacquire_cancel_member(child);
}

/* ---- entry points -----------------------------------------------------------
 */

/* Every member on a loop client of one loop thread: the chain's steps are
 * those clients' operations, driven from that thread. */
static int check_multi(rlock_multilock *m, const void *cb, const char *fn) {
  if (m == NULL || cb == NULL)
    return rlock__err(RLOCK_EINVAL, "%s: %s is NULL", fn,
                      m == NULL ? "MultiLock" : "callback");
  return rlock__lop_check_clients(m->members, m->n, fn);
}

int rlock_multilock_acquire_async(rlock_multilock *m,
                                  const rlock_acquire_options *opts,
                                  rlock_async_fn cb, void *arg,
                                  rlock_op **out) {
  static const char fn[] = "rlock_multilock_acquire_async";
  if (out != NULL)
    *out = NULL;
  int rc = check_multi(m, (const void *)cb, fn);
  if (rc != RLOCK_OK)
    return rc;
  rlock_acquire_options o;
  if ((rc = rlock__lop_options(&o, opts, fn)) != RLOCK_OK)
    return rc;
  rlock_op *op = rlock__lop_new(m->members[0], RLOCK__LOP_MULTI);
  if (op == NULL)
    return RLOCK_ENOMEM;
  op->cancel = multi_cancel;
  op->abandon = multi_abandon;
  op->cb = cb;
  op->arg = arg;
  op->multi = m;
  op->whole = &op->c->obs.kinds[RLOCK__MK_MULTILOCK];
  op->start_us = rlock__now_us();
  op->owner_number = o.owner;
  op->wait_ms = o.wait_ms;
  op->lease_ms = o.lease_ms;
  if (out != NULL) /* before it can start: from any thread */
    *out = op;
  return rlock__lop_submit(op, multi_start);
}

/* Release members [0, index) in reverse, then end with op->rc: the
 * reason a failed acquisition gives them back, or (a release, op->rc
 * RLOCK_OK to begin with) the first release that failed. */
static void release_next(rlock_op *op) {
  if (op->index == 0) {
    if (op->rc != RLOCK_OK)
      rlock__err(op->rc, "%s", op->msg);
    rlock__lop_finish(op, op->rc, 0);
    return;
  }
  --op->index;
  rlock_op *child = child_new(op, op->index, RLOCK__LOP_RELEASE);
  if (child == NULL) {
    member_done(op, RLOCK_ENOMEM, 0);
    return;
  }
  rlock__lop_submit(child, rlock__lrelease_start);
}

static void released_next(rlock_op *op, int rc) {
  if (rc != RLOCK_OK && op->rc == RLOCK_OK) {
    op->rc = rc;
    snprintf(op->msg, sizeof op->msg, "%s", rlock_error_last()->message);
  }
  release_next(op);
}

static void release_all_start(rlock_op *op) {
  op->index = op->multi->n;
  op->rc = RLOCK_OK;
  release_next(op);
}

int rlock_multilock_release_async(rlock_multilock *m, uint64_t owner,
                                  rlock_async_fn cb, void *arg) {
  static const char fn[] = "rlock_multilock_release_async";
  int rc = check_multi(m, (const void *)cb, fn);
  if (rc != RLOCK_OK || (rc = rlock__lop_check_owner(owner, fn)) != RLOCK_OK)
    return rc;
  rlock_op *op = rlock__lop_new(m->members[0], RLOCK__LOP_MULTI);
  if (op == NULL)
    return RLOCK_ENOMEM;
  op->cancel = multi_cancel;
  op->abandon = multi_abandon;
  op->cb = cb;
  op->arg = arg;
  op->multi = m;
  op->owner_number = owner;
  op->phase = GIVING_BACK; /* not cancelable */
  op->canceled = 1;
  return rlock__lop_submit(op, release_all_start);
}
