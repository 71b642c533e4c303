/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lops.c - the _async entry points: argument checks, then one call each
 * (an acquisition hands over to lacquire.c).
 *
 * The calls are the ones the blocking functions run (a kind's release,
 * force release and inspection scripts, HGET of a hold count), and their
 * answers are read by the same functions (rlock__release_result,
 * rlock__inspect_parse, ...), so both paths agree on every outcome.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "client_int.h"
#include "common.h"
#include "election_int.h"
#include "lock_int.h"
#include "loop.h"
#include "watchdog.h"

int rlock__lop_check_clients(rlock_lock *const *locks, size_t n,
                             const char *fn) {
  rlock_client *c0 = locks[0]->client;
  for (size_t i = 0; i < n; i++) {
    rlock_client *c = locks[i]->client;
    char who[48] = "the client";
    if (n > 1)
      snprintf(who, sizeof who, "member %zu's client", i);
    if (!rlock__origin_ok(&c->origin))
      return rlock__origin_refuse(&c->origin);
    if (!rlock__user_loop(c))
      return rlock__err(RLOCK_EINVAL,
                        "%s: %s was not made with rlock_client_new_loop "
                        "(use the blocking functions)",
                        fn, who);
    if (!pthread_equal(c->loop->thread, c0->loop->thread))
      return rlock__err(RLOCK_EINVAL,
                        "%s: every member's client must run on one loop "
                        "thread (member %zu's does not run on member 0's)",
                        fn, i);
    if (c->loop->closing)
      return rlock__err(RLOCK_ECLOSED, "%s: %s is being freed", fn, who);
  }
  return RLOCK_OK;
}

/* Checks every entry point shares. */
static int check(rlock_lock *l, const void *cb, const char *fn) {
  if (l == NULL || cb == NULL)
    return rlock__err(RLOCK_EINVAL, "%s: %s is NULL", fn,
                      l == NULL ? "lock" : "callback");
  return rlock__lop_check_clients(&l, 1, fn);
}

static rlock_op *op_new(rlock_lock *l, int type, rlock_async_fn cb, void *arg) {
  rlock_op *op = rlock__lop_new(l, type);
  if (op != NULL) {
    op->cb = cb;
    op->arg = arg;
  }
  return op;
}

/* An operation of `type` for `owner`, the lock, callback and owner
 * checked first: RLOCK_OK with *out (not started yet), or a status. */
static int owned(rlock_lock *l, int type, uint64_t owner, rlock_async_fn cb,
                 void *arg, const char *fn, rlock_op **out) {
  int rc = check(l, (const void *)cb, fn);
  if (rc != RLOCK_OK || (rc = rlock__lop_check_owner(owner, fn)) != RLOCK_OK)
    return rc;
  rlock_op *op = op_new(l, type, cb, arg);
  if (op == NULL)
    return RLOCK_ENOMEM;
  op->owner_number = owner;
  rlock__owner_as(l->client, owner, op->owner);
  *out = op;
  return RLOCK_OK;
}

/* ---- acquire ----------------------------------------------------------- */

int rlock_lock_acquire_async(rlock_lock *l, const rlock_acquire_options *opts,
                             rlock_async_fn cb, void *arg, rlock_op **out) {
  if (out != NULL)
    *out = NULL;
  int rc = check(l, (const void *)cb, "rlock_lock_acquire_async");
  if (rc != RLOCK_OK)
    return rc;
  rlock_acquire_options o;
  if ((rc = rlock__lop_options(&o, opts, "rlock_lock_acquire_async")) !=
      RLOCK_OK)
    return rc;
  rlock_op *op = op_new(l, RLOCK__LOP_ACQUIRE, cb, arg);
  if (op == NULL)
    return RLOCK_ENOMEM;
  op->owner_number = o.owner;
  rlock__owner_as(l->client, o.owner, op->owner);
  op->wait_ms = o.wait_ms;
  op->lease_ms = o.lease_ms;
  if (out != NULL) /* before it can start: from any thread */
    *out = op;
  return rlock__lop_submit(op, rlock__lacquire_start);
}

/* ---- one call, one answer --------------------------------------------- */

static void release_send(rlock_op *op);

static void unlatch_done(rlock_client *c, rlock__lreq *r) {
  (void)c;
  rlock__reply_free(r->q.reply);
  rlock__call_clear(&r->call);
  free(r);
}

/* The release's last answer `reply` is read and it goes no more: delete
 * its latch (rlock__latch_spent) with a request of its own, whose answer
 * nobody waits for, so the operation completes now. Out of memory, or a
 * DEL that fails, leaves the latch to its TTL. The last error is kept. */
static void unlatch(rlock_op *op, const rlock__reply *reply) {
  if (!rlock__latch_spent(&op->latch, reply))
    return;
  rlock__saved_error saved;
  rlock__error_save(&saved);
  rlock__lreq *r = rlock__calloc(1, sizeof *r);
  if (r != NULL) {
    rlock__latch_del(op->l, &op->latch, &r->call);
    r->no_pause = 1; /* never parked on a timer past the client */
    rlock__lreq_send(op->c, r, unlatch_done);
  }
  rlock__error_restore(&saved);
}

static void release_again_due(rlock_client *c, rlock__ltimer *t) {
  (void)c;
  release_send((rlock_op *)((char *)t - offsetof(rlock_op, timer)));
}

/* As rlock_lock_release: a release that failed in flight or that no
 * replica confirmed is sent again with the same latch while the connect
 * plus the command timeout lasts (the latch answers a repeat with the
 * first answer). */
static void release_done(rlock_client *c, rlock__lreq *r) {
  (void)c;
  rlock_op *op = rlock__lop_of(r);
  rlock__reply *reply;
  int rc = rlock__lreq_take(r, &reply);
  if (rlock__release_again(&op->latch, rc, &r->call)) {
    rlock__reply_free(reply);
    rlock__ltimer_init(&op->timer, release_again_due);
    if (rlock__ltimer_at(op->c, &op->timer,
                         rlock__deadline_after_ms(RLOCK__RELEASE_PAUSE_MS)) ==
        RLOCK_OK)
      return;
    rc = rlock__err(RLOCK_ENOMEM, "out of memory");
    reply = NULL;
  }
  if (rc == RLOCK_OK)
    unlatch(op, reply);
  if (rc == RLOCK_OK) {
    char field[RLOCK_FIELD_MAX];
    rlock__field(op->l, op->owner, field);
    rc = rlock__release_result(op->l, &r->call, field, op->hold_state, reply);
  }
  rlock__reply_free(reply);
  rlock__lop_finish(op, rlock__wrongtype(op->l, rc), 0);
}

static void release_send(rlock_op *op) {
  rlock_lock *l = op->l;
  l->kind->release(l, op->owner, op->keep_ms, &op->latch, &op->lreq.call);
  op->lreq.call.sync = 1;
  rlock__lreq_send(op->c, &op->lreq, release_done);
}

/* Stop renewal first, as the blocking release does. */
void rlock__lrelease_start(rlock_op *op) {
  rlock_lock *l = op->l;
  char field[RLOCK_FIELD_MAX];
  rlock__field(l, op->owner, field);
  rlock__hold_pop(op->c, l->name, field, &op->hold_state, &op->keep_ms);
  rlock__release_latch(l, &op->latch, op->latch_id);
  release_send(op);
}

int rlock_lock_release_async(rlock_lock *l, uint64_t owner, rlock_async_fn cb,
                             void *arg) {
  rlock_op *op;
  int rc = owned(l, RLOCK__LOP_RELEASE, owner, cb, arg,
                 "rlock_lock_release_async", &op);
  return rc != RLOCK_OK ? rc : rlock__lop_submit(op, rlock__lrelease_start);
}

static void force_done(rlock_client *c, rlock__lreq *r) {
  (void)c;
  rlock_op *op = rlock__lop_of(r);
  rlock__reply *reply;
  int rc = rlock__lreq_take(r, &reply);
  int deleted = 0;
  if (rc == RLOCK_OK)
    rc = rlock__force_result(op->l, &r->call, reply, &deleted);
  rlock__reply_free(reply);
  rlock__lop_finish(op, rlock__wrongtype(op->l, rc), deleted);
}

static void force_start(rlock_op *op) {
  op->l->kind->force_release(op->l, &op->lreq.call);
  op->lreq.call.sync = 1;
  rlock__lreq_send(op->c, &op->lreq, force_done);
}

int rlock_lock_force_release_async(rlock_lock *l, rlock_async_fn cb,
                                   void *arg) {
  int rc = check(l, (const void *)cb, "rlock_lock_force_release_async");
  if (rc != RLOCK_OK)
    return rc;
  rlock_op *op = op_new(l, RLOCK__LOP_FORCE, cb, arg);
  return op == NULL ? RLOCK_ENOMEM : rlock__lop_submit(op, force_start);
}

/* ---- queries ------------------------------------------------------------ */

static void inspect_done(rlock_client *c, rlock__lreq *r) {
  (void)c;
  rlock_op *op = rlock__lop_of(r);
  const char *where = r->node != NULL ? r->node->where : "";
  rlock__reply *reply;
  int rc = rlock__lreq_take(r, &reply);
  rlock_lock_info *info = NULL;
  if (rc == RLOCK_OK && (info = rlock__info_new()) == NULL)
    rc = RLOCK_ENOMEM;
  if (rc == RLOCK_OK)
    rc = rlock__inspect_parse(reply, info, where);
  rlock__reply_free(reply);
  int64_t value = 0;
  if (rc == RLOCK_OK && op->type == RLOCK__LOP_IS_LOCKED)
    value = rlock__info_locked(op->l, info);
  else if (rc == RLOCK_OK && op->type == RLOCK__LOP_TTL)
    value = rlock_lock_info_ttl_ms(info);
  if (rc == RLOCK_OK && op->type == RLOCK__LOP_INSPECT) {
    op->info = info;
    info = NULL;
  }
  rlock_lock_info_free(info);
  rlock__lop_finish(op, rlock__wrongtype(op->l, rc), value);
}

static void inspect_start(rlock_op *op) {
  op->l->kind->inspect(op->l, &op->lreq.call);
  rlock__lreq_send(op->c, &op->lreq, inspect_done);
}

static int query(rlock_lock *l, int type, rlock_async_fn cb,
                 rlock_info_fn info_cb, void *arg, const char *fn) {
  int rc = check(l, cb ? (const void *)cb : (const void *)info_cb, fn);
  if (rc != RLOCK_OK)
    return rc;
  rlock_op *op = op_new(l, type, cb, arg);
  if (op == NULL)
    return RLOCK_ENOMEM;
  op->info_cb = info_cb;
  return rlock__lop_submit(op, inspect_start);
}

int rlock_lock_is_locked_async(rlock_lock *l, rlock_async_fn cb, void *arg) {
  return query(l, RLOCK__LOP_IS_LOCKED, cb, NULL, arg,
               "rlock_lock_is_locked_async");
}

int rlock_lock_ttl_async(rlock_lock *l, rlock_async_fn cb, void *arg) {
  return query(l, RLOCK__LOP_TTL, cb, NULL, arg, "rlock_lock_ttl_async");
}

int rlock_lock_inspect_async(rlock_lock *l, rlock_info_fn cb, void *arg) {
  return query(l, RLOCK__LOP_INSPECT, NULL, cb, arg,
               "rlock_lock_inspect_async");
}

static void count_done(rlock_client *c, rlock__lreq *r) {
  (void)c;
  rlock_op *op = rlock__lop_of(r);
  rlock__reply *reply;
  int rc = rlock__lreq_take(r, &reply);
  int64_t count = 0;
  if (rc == RLOCK_OK)
    rc = rlock__count_reply(reply, &count);
  rlock__reply_free(reply);
  rlock__lop_finish(op, rlock__wrongtype(op->l, rc), count);
}

static void count_start(rlock_op *op) {
  rlock__count_call(op->l, op->owner, &op->lreq.call);
  rlock__lreq_send(op->c, &op->lreq, count_done);
}

int rlock_lock_hold_count_async(rlock_lock *l, uint64_t owner,
                                rlock_async_fn cb, void *arg) {
  rlock_op *op;
  int rc = owned(l, RLOCK__LOP_COUNT, owner, cb, arg,
                 "rlock_lock_hold_count_async", &op);
  return rc != RLOCK_OK ? rc : rlock__lop_submit(op, count_start);
}

/* ---- a fresh fixed lease ------------------------------------------------ */

/* One call for both: what the checks and the answer mean differs (an
 * extension's hold, or a MultiLock member's: relet.c). */
static void relet_done(rlock_client *c, rlock__lreq *r) {
  (void)c;
  rlock_op *op = rlock__lop_of(r);
  char field[RLOCK_FIELD_MAX];
  rlock__field(op->l, op->owner, field);
  rlock__reply *reply;
  int rc = rlock__lreq_take(r, &reply);
  if (op->multi != NULL)
    rc = rlock__relet_result(op->l, op->index, field, op->keep_ms, rc, reply,
                             r->sent_us);
  else
    rc = rlock__extend_result(op->l, field, op->keep_ms, rc, reply, r->sent_us);
  rlock__reply_free(reply);
  rlock__lop_finish(op, rc, 0);
}

void rlock__lrelet_start(rlock_op *op) {
  char field[RLOCK_FIELD_MAX];
  rlock__field(op->l, op->owner, field);
  int rc = op->multi != NULL
               ? rlock__relet_check(op->l, op->index, field, op->keep_ms)
               : rlock__extend_check(op->l, field, op->keep_ms);
  if (rc != RLOCK_OK) {
    rlock__lop_finish(op, rc, 0);
    return;
  }
  rlock__relet_call(op->l, field, op->keep_ms, &op->lreq.call);
  rlock__lreq_send(op->c, &op->lreq, relet_done);
}

int rlock_lock_extend_async(rlock_lock *l, uint64_t owner, int64_t lease_ms,
                            rlock_async_fn cb, void *arg) {
  rlock_op *op;
  int rc = owned(l, RLOCK__LOP_RELET, owner, cb, arg, "rlock_lock_extend_async",
                 &op);
  if (rc != RLOCK_OK)
    return rc;
  op->keep_ms = lease_ms;
  return rlock__lop_submit(op, rlock__lrelet_start);
}

/* ---- an election's observation ----------------------------------------- */

static void observe_done(rlock_client *c, rlock__lreq *r) {
  (void)c;
  rlock_op *op = rlock__lop_of(r);
  rlock__reply *reply;
  int rc = rlock__lreq_take(r, &reply);
  if (rc == RLOCK_OK)
    rc = rlock__observe_parse(reply, &op->leader);
  rlock__reply_free(reply);
  rlock__lop_finish(op, rlock__wrongtype(op->l, rc), 0);
}

void rlock__lobserve_start(rlock_op *op) {
  rlock__observe_call(op->l, &op->lreq.call);
  rlock__lreq_send(op->c, &op->lreq, observe_done);
}

int rlock_election_observe_async(rlock_election *e, rlock_leader_fn cb,
                                 void *arg) {
  if (e == NULL)
    return rlock__err(RLOCK_EINVAL,
                      "rlock_election_observe_async: election is NULL");
  int rc = check(e->lock, (const void *)cb, "rlock_election_observe_async");
  if (rc != RLOCK_OK)
    return rc;
  rlock_op *op = op_new(e->lock, RLOCK__LOP_OBSERVE, NULL, arg);
  if (op == NULL)
    return RLOCK_ENOMEM;
  op->leader_cb = cb;
  return rlock__lop_submit(op, rlock__lobserve_start);
}
