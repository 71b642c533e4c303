/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lredlock.c - a RedLock on the loop: blocking/redlock.c's rounds as member
 * operations of the members' own loop clients, all on one loop thread.
 *
 *   ROUND        every member's one attempt at once, each on its own
 *                client; the round ends when every member has answered,
 *                once the quorum is out of reach, or at the member timeout
 *                (the op's timer), whichever comes first. Members still
 *                pending then are canceled (an acquisition the server
 *                grants after that is given back by the member's client).
 *   GIVING_BACK  a round that missed the quorum releases what it took
 *   PAUSE        1 to 50 ms (random, within the wait) before the next round
 *
 * The RedLock's operation belongs to member 0's client; its children to
 * each member's client, so their callbacks run from that client's turn:
 * they enter member 0's client (rlock__loop_enter) so that what they queue
 * there (bytes, the RedLock's completion) goes out at their end.
 *
 * Each member's outcome (status and message) is kept as it comes, and
 * handed to a caller who asked for it (the _result entry points) as an
 * rlock_redlock_result, like the blocking RedLock's: the operation's own
 * callback is completed() below, which calls the caller's and frees the
 * round state, so that state lives exactly as long as the operation.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "client_int.h"
#include "common.h"
#include "lock_int.h"
#include "loop.h"
#include "redlock_int.h"
#include "watchdog.h"

enum { ROUND, GIVING_BACK, PAUSE };

/* What a child's callback needs: its RedLock operation and its member. */
typedef struct slot {
  rlock_op *op;
  size_t i;
} slot;

struct rlock__lred {
  rlock_op *child[RLOCK_MAX_REDLOCK_MEMBERS]; /* pending, else NULL */
  int status[RLOCK_MAX_REDLOCK_MEMBERS];      /* this round's answers */
  char recorded[RLOCK_MAX_REDLOCK_MEMBERS];   /* release: a hold recorded */
  slot slots[RLOCK_MAX_REDLOCK_MEMBERS];
  size_t pending, taken;
  int64_t started_us, lease_min_ms;
  int rc; /* a failed round's status, while giving back */
  char msg[512];
  /* The caller: one of cb and res_cb. res gathers each member's message
   * as it comes (a missed round's message names one), and its status and
   * validity at the end; it is handed over with res_cb. */
  rlock_async_fn cb;
  rlock_redlock_fn res_cb;
  void *arg;
  rlock_redlock_result *res;
};

#define PENDING 1 /* not a status code: they are <= 0 */

static void new_round(rlock_op *op);

/* Member i's outcome in this round (or release), with its message. */
static void note(struct rlock__lred *red, size_t i, int rc, const char *msg) {
  red->status[i] = rc;
  snprintf(red->res->message[i], sizeof red->res->message[i], "%s",
           rc == RLOCK_OK ? "" : msg);
}

/* The operation's callback (run_completions, with the last error set):
 * the caller's, then the round state goes. A member still pending when
 * the operation ended (client freed, out of memory) gets its status. */
static void completed(void *arg, int rc, int64_t value) {
  rlock_op *op = arg;
  struct rlock__lred *red = op->red;
  op->red = NULL;
  if (red->res_cb == NULL) {
    red->cb(red->arg, rc, value);
    free(red->res);
    free(red);
    return;
  }
  rlock_redlock_result *res = red->res;
  for (size_t i = 0; i < res->n; i++) {
    if (red->status[i] == PENDING)
      note(red, i, rc, rlock_error_last()->message);
    res->status[i] = red->status[i];
  }
  res->validity_ms = value; /* an acquisition's validity, else 0 */
  rlock_redlock_fn cb = red->res_cb;
  void *cb_arg = red->arg;
  free(red);
  cb(cb_arg, rc, value, res);
}

/* A member operation for op's owner on member i, reporting to cb. */
static rlock_op *child_new(rlock_op *op, size_t i, int type,
                           rlock_async_fn cb) {
  rlock_lock *l = op->redlock->members[i];
  rlock_op *child = rlock__lop_new(l, type);
  if (child == NULL)
    return NULL;
  op->red->slots[i] = (slot){op, i};
  child->cb = cb;
  child->arg = &op->red->slots[i];
  child->owner_number = op->owner_number;
  rlock__owner_as(l->client, op->owner_number, child->owner);
  op->red->child[i] = child;
  return child;
}

/* Cancel member i's pending attempt; whatever it does later (give back a
 * late grant) tells no one. */
static void drop_child(rlock_op *op, size_t i) {
  rlock_op *child = op->red->child[i];
  if (child == NULL)
    return;
  child->cb = rlock__lop_ignore;
  op->red->child[i] = NULL;
  rlock__lacquire_cancel_member(child);
}

/* ---- giving back, then the next round or the end -------------------------
 */

static void after_give_back(rlock_op *op) {
  struct rlock__lred *red = op->red;
  if (!rlock__redlock_retry(red->rc, op->canceled, op->wait_ms,
                            op->deadline_us)) {
    rlock__lop_finish(op,
                      op->canceled ? rlock__lop_canceled()
                                   : rlock__err(red->rc, "%s", red->msg),
                      0);
    return;
  }
  op->phase = PAUSE;
  if (rlock__ltimer_at(op->c, &op->timer,
                       rlock__redlock_next_round(&op->seed, op->deadline_us)) !=
      RLOCK_OK)
    rlock__lop_finish(op, RLOCK_ENOMEM, 0);
}

/* A member operation answered: enter member 0's client (what the answer
 * queues there goes out at rlock__loop_leave(op->c)) and forget the
 * child. The operation stays allocated until its own callback has run. */
static rlock_op *answered(slot *s) {
  rlock_op *op = s->op;
  rlock__loop_enter(op->c);
  op->red->child[s->i] = NULL;
  op->red->pending--;
  return op;
}

static void given_back(void *arg, int rc, int64_t v) {
  (void)rc, (void)v;
  rlock_op *op = answered(arg);
  if (op->red->pending == 0)
    after_give_back(op);
  rlock__loop_leave(op->c);
}

/* Release the members this round took (status RLOCK_OK). */
static void give_back(rlock_op *op, int rc) {
  struct rlock__lred *red = op->red;
  red->rc = rc;
  snprintf(red->msg, sizeof red->msg, "%s", rlock_error_last()->message);
  op->phase = GIVING_BACK;
  red->pending = 0;
  for (size_t i = 0; i < op->redlock->n; i++) {
    if (red->status[i] != RLOCK_OK)
      continue;
    rlock_op *child = child_new(op, i, RLOCK__LOP_RELEASE, given_back);
    if (child == NULL)
      continue; /* it expires with its lease */
    red->pending++;
    rlock__lop_submit(child, rlock__lrelease_start);
  }
  if (red->pending == 0)
    after_give_back(op);
}

/* ---- a round's outcome ---------------------------------------------------
 */

/* Members not waited for: canceled, each with why (as blocking/redlock.c). */
static void drop_unanswered(rlock_op *op) {
  struct rlock__lred *red = op->red;
  char why[128];
  if (red->taken + red->pending < op->redlock->quorum)
    snprintf(why, sizeof why, "not waited for: the quorum was out of reach");
  else
    snprintf(why, sizeof why, "no answer within the member timeout (%lld ms)",
             (long long)rlock__redlock_node_timeout_ms(op->redlock,
                                                       red->lease_min_ms));
  for (size_t i = 0; i < op->redlock->n; i++)
    if (red->child[i] != NULL) {
      drop_child(op, i);
      note(red, i, RLOCK_ETIMEOUT, why);
    }
}

static void decide(rlock_op *op) {
  struct rlock__lred *red = op->red;
  rlock__ltimer_stop(op->c, &op->timer);
  drop_unanswered(op);
  red->pending = 0;
  int64_t validity =
      rlock__redlock_validity(red->lease_min_ms, red->started_us);
  if (op->canceled) {
    give_back(op, rlock__lop_canceled());
    return;
  }
  if (rlock__redlock_held(op->redlock, red->taken, validity)) {
    rlock__lop_finish(op, RLOCK_OK, validity);
    return;
  }
  for (size_t i = 0; i < op->redlock->n; i++)
    red->res->status[i] = red->status[i];
  give_back(op,
            rlock__redlock_miss(op->redlock, red->res, red->taken, validity));
}

/* Whether the round can end now: every member answered, or too many
 * refused for a quorum (reaching it is no reason to stop: members still
 * to answer are taken too). */
static int round_over(const rlock_op *op) {
  const struct rlock__lred *red = op->red;
  if (op->canceled) /* every member's answer: grants are given back */
    return red->pending == 0;
  return red->pending == 0 ||
         rlock__redlock_out_of_reach(op->redlock, op->redlock->n - red->taken -
                                                      red->pending);
}

static void member_answered(void *arg, int rc, int64_t v) {
  (void)v;
  rlock_op *op = answered(arg);
  note(op->red, ((slot *)arg)->i, rc, rlock_error_last()->message);
  op->red->taken += rc == RLOCK_OK;
  if (round_over(op))
    decide(op);
  rlock__loop_leave(op->c);
}

static void round_timer(rlock_client *c, rlock__ltimer *t) {
  (void)c;
  rlock_op *op = (rlock_op *)((char *)t - offsetof(rlock_op, timer));
  if (op->phase == ROUND)
    decide(op);
  else if (op->phase == PAUSE)
    new_round(op);
}

static void new_round(rlock_op *op) {
  struct rlock__lred *red = op->red;
  rlock_redlock *r = op->redlock;
  if (op->canceled) {
    rlock__lop_finish(op, rlock__lop_canceled(), 0);
    return;
  }
  op->phase = ROUND;
  red->taken = 0;
  red->pending = 0;
  red->lease_min_ms = rlock__redlock_lease_min(r, op->lease_ms);
  red->started_us = rlock__now_us();
  int64_t timeout_ms = rlock__redlock_node_timeout_ms(r, red->lease_min_ms);
  if (rlock__ltimer_at(op->c, &op->timer,
                       red->started_us + timeout_ms * 1000) != RLOCK_OK) {
    rlock__lop_finish(op, RLOCK_ENOMEM, 0);
    return;
  }
  red->res->n = r->n; /* this round's outcome from now on */
  for (size_t i = 0; i < r->n; i++) {
    red->status[i] = PENDING;
    rlock_op *child = child_new(op, i, RLOCK__LOP_ACQUIRE, member_answered);
    if (child == NULL) {
      note(red, i, RLOCK_ENOMEM, "out of memory");
      continue;
    }
    child->wait_ms = 0; /* one attempt */
    child->unmetered = 1;
    child->lease_ms = op->lease_ms;
    red->pending++;
  }
  /* Submitted after counting: a member's answer may come at once (its
   * client refusing), and the round must not end before all are out. */
  for (size_t i = 0; i < r->n; i++)
    if (red->child[i] != NULL)
      rlock__lop_submit(red->child[i], rlock__lacquire_start);
  if (op->red == red && op->phase == ROUND && !op->finished && round_over(op))
    decide(op);
}

static void redlock_start(rlock_op *op) {
  op->deadline_us = rlock__deadline_after_ms(op->wait_ms);
  op->seed = (uint64_t)rlock__now_us() ^ (uint64_t)(uintptr_t)op;
  rlock__ltimer_init(&op->timer, round_timer);
  new_round(op);
}

/* rlock_op_cancel on the loop thread. */
static void redlock_cancel(rlock_op *op) {
  if (op->canceled || op->finished || op->red == NULL)
    return;
  op->canceled = 1;
  if (op->phase == ROUND) {
    /* Each pending member answers (a grant given back by its client
     * first); then what was taken is given back and the op ends. */
    for (size_t i = 0; i < op->redlock->n; i++)
      if (op->red->child[i] != NULL)
        rlock__lacquire_cancel_member(op->red->child[i]);
    if (round_over(op))
      decide(op);
  } else if (op->phase == PAUSE) {
    rlock__lop_finish(op, rlock__lop_canceled(), 0);
  } /* GIVING_BACK: ends canceled once given back */
}

/* The client is being freed: cancel the members' pending attempts, which
 * tell it nothing any more. */
static void redlock_abandon(rlock_op *op) {
  if (op->red == NULL)
    return;
  for (size_t i = 0; i < op->redlock->n; i++)
    drop_child(op, i); /* the round state goes with the callback */
}

/* ---- release -------------------------------------------------------------
 */

static void member_released(void *arg, int rc, int64_t v) {
  (void)v;
  slot *s = arg;
  rlock_op *op = answered(s);
  struct rlock__lred *red = op->red;
  int recorded = red->recorded[s->i];
  note(red, s->i, rc, rlock_error_last()->message);
  /* As the blocking release: only a member with a hold recorded can fail
   * it (one never taken may even be down); the first failure is the
   * outcome. */
  if (recorded && rc != RLOCK_OK && red->rc == RLOCK_OK) {
    red->rc = rc;
    snprintf(red->msg, sizeof red->msg, "RedLock member %zu: %s", s->i,
             rlock_error_last()->message);
  }
  red->taken += rc == RLOCK_OK;
  if (red->pending == 0) {
    int out = red->rc != RLOCK_OK ? red->rc
              : red->taken == 0   ? RLOCK_ENOTHELD
                                  : RLOCK_OK;
    if (red->rc != RLOCK_OK)
      rlock__err(out, "%s", red->msg);
    else if (out == RLOCK_ENOTHELD)
      rlock__err(out, "RedLock is not held by this owner on any member");
    rlock__lop_finish(op, out, 0);
  }
  rlock__loop_leave(op->c);
}

static void release_start(rlock_op *op) {
  struct rlock__lred *red = op->red;
  rlock_redlock *r = op->redlock;
  red->res->n = r->n;
  for (size_t i = 0; i < r->n; i++) {
    red->status[i] = PENDING;
    rlock_op *child = child_new(op, i, RLOCK__LOP_RELEASE, member_released);
    if (child == NULL) {
      note(red, i, RLOCK_ENOMEM, "out of memory");
      if (red->rc == RLOCK_OK) {
        red->rc = RLOCK_ENOMEM;
        snprintf(red->msg, sizeof red->msg, "out of memory");
      }
      continue;
    }
    rlock_lock *l = r->members[i];
    char field[RLOCK_FIELD_MAX];
    rlock__field(l, child->owner, field);
    /* Held, or lost (which the release reports). */
    red->recorded[i] =
        rlock__hold_check(l->client, l->name, field) != RLOCK_ENOTHELD;
    red->pending++;
  }
  if (red->pending == 0) {
    rlock__err(red->rc, "%s", red->msg);
    rlock__lop_finish(op, red->rc, 0);
    return;
  }
  for (size_t i = 0; i < r->n; i++)
    if (red->child[i] != NULL)
      rlock__lop_submit(red->child[i], rlock__lrelease_start);
}

/* ---- entry points ---------------------------------------------------------
 */

/* Every member on a loop client of one loop thread. */
static int check_redlock(rlock_redlock *r, const void *cb, const char *fn) {
  if (r == NULL || cb == NULL)
    return rlock__err(RLOCK_EINVAL, "%s: %s is NULL", fn,
                      r == NULL ? "RedLock" : "callback");
  return rlock__lop_check_clients(r->members, r->n, fn);
}

/* Who the operation tells: cb, or res_cb with each member's outcome. */
typedef struct caller {
  rlock_async_fn cb;
  rlock_redlock_fn res_cb;
  void *arg;
} caller;

static rlock_op *op_new(rlock_redlock *r, const caller *who, uint64_t owner) {
  rlock_op *op = rlock__lop_new(r->members[0], RLOCK__LOP_REDLOCK);
  if (op == NULL)
    return NULL;
  op->cancel = redlock_cancel;
  op->abandon = redlock_abandon;
  struct rlock__lred *red = rlock__calloc(1, sizeof *red);
  if (red != NULL && (red->res = rlock__calloc(1, sizeof *red->res)) == NULL) {
    free(red);
    red = NULL;
  }
  if (red == NULL) {
    free(op);
    rlock__err(RLOCK_ENOMEM, "out of memory");
    return NULL;
  }
  red->cb = who->cb;
  red->res_cb = who->res_cb;
  red->arg = who->arg;
  op->red = red;
  op->cb = completed; /* then the caller's */
  op->arg = op;
  op->redlock = r;
  op->owner_number = owner;
  return op;
}

static int acquire(rlock_redlock *r, const rlock_acquire_options *opts,
                   const caller *who, rlock_op **out, const char *fn) {
  if (out != NULL)
    *out = NULL;
  const void *cb = who->cb ? (const void *)who->cb : (const void *)who->res_cb;
  int rc = check_redlock(r, cb, fn);
  if (rc != RLOCK_OK)
    return rc;
  rlock_acquire_options o;
  if ((rc = rlock__lop_options(&o, opts, fn)) != RLOCK_OK)
    return rc;
  rlock_op *op = op_new(r, who, o.owner);
  if (op == NULL)
    return RLOCK_ENOMEM;
  op->wait_ms = o.wait_ms;
  op->lease_ms = o.lease_ms;
  op->whole = &op->c->obs.kinds[RLOCK__MK_REDLOCK];
  op->start_us = rlock__now_us();
  if (out != NULL) /* before it can start: from any thread */
    *out = op;
  return rlock__lop_submit(op, redlock_start);
}

static int release(rlock_redlock *r, uint64_t owner, const caller *who,
                   const char *fn) {
  const void *cb = who->cb ? (const void *)who->cb : (const void *)who->res_cb;
  int rc = check_redlock(r, cb, fn);
  if (rc != RLOCK_OK || (rc = rlock__lop_check_owner(owner, fn)) != RLOCK_OK)
    return rc;
  rlock_op *op = op_new(r, who, owner);
  if (op == NULL)
    return RLOCK_ENOMEM;
  op->phase = GIVING_BACK; /* not cancelable */
  op->canceled = 1;
  return rlock__lop_submit(op, release_start);
}

int rlock_redlock_acquire_async(rlock_redlock *r,
                                const rlock_acquire_options *opts,
                                rlock_async_fn cb, void *arg, rlock_op **out) {
  caller who = {cb, NULL, arg};
  return acquire(r, opts, &who, out, "rlock_redlock_acquire_async");
}

int rlock_redlock_acquire_async_result(rlock_redlock *r,
                                       const rlock_acquire_options *opts,
                                       rlock_redlock_fn cb, void *arg,
                                       rlock_op **out) {
  caller who = {NULL, cb, arg};
  return acquire(r, opts, &who, out, "rlock_redlock_acquire_async_result");
}

int rlock_redlock_release_async(rlock_redlock *r, uint64_t owner,
                                rlock_async_fn cb, void *arg) {
  caller who = {cb, NULL, arg};
  return release(r, owner, &who, "rlock_redlock_release_async");
}

int rlock_redlock_release_async_result(rlock_redlock *r, uint64_t owner,
                                       rlock_redlock_fn cb, void *arg) {
  caller who = {NULL, cb, arg};
  return release(r, owner, &who, "rlock_redlock_release_async_result");
}
