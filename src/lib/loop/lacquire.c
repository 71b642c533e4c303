/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lacquire.c - an acquisition on the loop: acquire.c's loop turned into
 * a state machine.
 *
 *   ATTEMPTING --acquired--> recorded, done
 *       |  held elsewhere, the wait lasts
 *       v
 *   SUBSCRIBING (channel not confirmed)  --confirmed--> ATTEMPTING
 *   SLEEPING    (confirmed, no permit)   --message----> ATTEMPTING
 *   either, when the holder's TTL or the wait runs out --> ATTEMPTING
 *
 * As in the blocking path, the first attempt after subscribing comes only
 * once the server has confirmed the subscription, an unlock message "0"
 * wakes one waiter (the longest asleep, lsub.c), and without a message
 * the only wake-up is the holder's TTL: no polling. A spin lock sleeps a
 * back-off instead of subscribing. Ending without the lock after waiting
 * makes a fair waiter leave the queue first; a cancel that finds the lock
 * granted gives it back first (GIVING_BACK), so a canceled acquisition
 * never leaves a hold behind.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "common.h"
#include "lock_int.h"
#include "loop.h"
#include "watchdog.h"

static rlock_op *of_timer(rlock__ltimer *t) {
  return (rlock_op *)((char *)t - offsetof(rlock_op, timer));
}

static void attempt(rlock_op *op);
static void settle_read(rlock_op *op);

/* Send op->lreq.call (built by the caller), its answer to `done`, bound
 * by `bound_us` (0: none; what follows the wait is not cut by it). */
static void send_call(rlock_op *op, void (*done)(rlock_client *, rlock__lreq *),
                      int64_t bound_us) {
  op->lreq.bound_us = bound_us;
  rlock__lreq_send(op->c, &op->lreq, done);
}

static int op_asleep(const rlock__lwaiter *w);
/* The acquisition's outcome into its lock's metrics (obs.h). */
static void metered(rlock_op *op, int rc) {
  if (!op->unmetered)
    rlock__obs_acquire_end(op->l->ms, rc, op->plan.waiting, op->start_us,
                           op->woke_us);
}

/* The end: out of the channel, outcome recorded. */
static void done(rlock_op *op, int rc, int64_t value) {
  rlock__lsub_leave(op->c, &op->sw);
  metered(op, rc);
  rlock__lop_finish(op, rc, value);
}

static void epilogue_done(rlock_client *c, rlock__lreq *r) {
  (void)c;
  rlock_op *op = rlock__lop_of(r);
  rlock__reply_free(r->q.reply);
  rlock__call_clear(&r->call);
  rlock__err(op->rc, "%s", op->msg); /* the reason it ends, not this call's */
  metered(op, op->rc);
  rlock__lop_finish(op, op->rc, 0);
}

/* Run op->lreq.call (built by the caller), then end with `rc` and the
 * last error as it is now, whatever the call's own outcome. */
static void end_after_call(rlock_op *op, int rc) {
  rlock__lsub_leave(op->c, &op->sw);
  rlock__ltimer_stop(op->c, &op->timer);
  op->rc = rc;
  snprintf(op->msg, sizeof op->msg, "%s", rlock_error_last()->message);
  op->state = RLOCK__LACQ_GIVING_BACK;
  op->lreq.call.sync = 1; /* a lock write, as the blocking path's */
  send_call(op, epilogue_done, 0);
}

/* Give back what the server may have granted, then end with rc. */
static void give_back(rlock_op *op, int rc) {
  rlock_lock *l = op->l;
  l->kind->release(l, op->owner, op->lease_sent, &rlock__no_latch,
                   &op->lreq.call);
  end_after_call(op, rc);
}

/* End without the lock: a fair waiter leaves the queue first. */
static void fail(rlock_op *op, int rc) {
  rlock_lock *l = op->l;
  if (l->kind->give_up != NULL && op->wait_ms != 0) {
    l->kind->give_up(l, op->owner, op->wait_ms, &op->lreq.call);
    end_after_call(op, rc);
    return;
  }
  done(op, rc, 0);
}

static void sleep_until(rlock_op *op, int state, int64_t until) {
  op->state = state;
  if (until != INT64_MAX)
    rlock__ltimer_at(op->c, &op->timer, until);
}

/* A wake-up with no message: attempt, unless the wait's own sleep
 * (op->resting) has reached its end (rlock__plan_wait_ended): then it
 * ends "not in time", no write racing the bound. */
static void wake(rlock_op *op) {
  if (op->resting && rlock__plan_wait_ended(&op->plan, op->l)) {
    rlock__ltimer_stop(op->c, &op->timer);
    fail(op, rlock__not_acquired(op->l, RLOCK_ELOCKED, op->plan.ttl_ms));
    return;
  }
  attempt(op);
}

static void on_timer(rlock_client *c, rlock__ltimer *t) {
  (void)c;
  rlock_op *op = of_timer(t);
  if (op->state == RLOCK__LACQ_SETTLING) { /* read_done's pause */
    settle_read(op);
  } else if (op->state == RLOCK__LACQ_SUBSCRIBING ||
             op->state == RLOCK__LACQ_SLEEPING) {
    wake(op);
  }
}

/* Held elsewhere and the wait lasts: subscribe, sleep or spin. */
static void wait_more(rlock_op *op) {
  rlock_lock *l = op->l;
  if (l->kind->spin) {
    op->resting = 1;
    sleep_until(op, RLOCK__LACQ_SLEEPING,
                rlock__plan_spin(&op->plan, &l->spin));
    return;
  }
  int64_t bound = rlock__plan_round_until(&op->plan);
  if (op->sw.chan == NULL) {
    char chbuf[RLOCK_MAX_NAME_LEN + 128];
    const char *ch = l->kind->channel(l, op->owner, chbuf, sizeof chbuf);
    op->sw.asleep = op_asleep;
    op->sw.event = rlock__lacquire_event;
    int rc = rlock__lsub_join(op->c, &op->sw, ch);
    if (rc < 0) {
      fail(op, rc);
      return;
    }
    if (rc == 0) {
      op->resting = 1;
      sleep_until(op, RLOCK__LACQ_SUBSCRIBING, bound);
      return;
    }
    attempt(op); /* confirmed already: a message may have gone by */
    return;
  }
  if (op->woken || rlock__lsub_take_permit(&op->sw)) {
    attempt(op);
    return;
  }
  op->resting = 1;
  sleep_until(op,
              rlock__lsub_active(&op->sw) ? RLOCK__LACQ_SLEEPING
                                          : RLOCK__LACQ_SUBSCRIBING,
              bound);
}

/* Acquired: record the hold (given back when it cannot be). */
static void acquired(rlock_op *op, int64_t token) {
  if (rlock__acquired_record(op->l, op->owner, op->lease_ms, op->lreq.sent_us,
                             op->owner_number) != RLOCK_OK)
    give_back(op, RLOCK_ENOMEM);
  else
    done(op, RLOCK_OK, token);
}

/* A failure that ran nothing and may pass (rlock__retryable), in an
 * acquisition that waits, at its first attempt or later: try again after
 * the plan's pause (plan.h), as the blocking path rides out an outage.
 * 1 when it will. */
static int ride_out(rlock_op *op, int retryable) {
  int64_t until = rlock__plan_ride_out(&op->plan, op->c, retryable);
  if (until == 0)
    return 0;
  sleep_until(op, RLOCK__LACQ_SLEEPING, until);
  return 1;
}

/* Give up after an outage: the last failure, saying how long it was
 * tried again. */
static void outage_fail(rlock_op *op, int rc) {
  fail(op, rlock__plan_outage_end(&op->plan, rc));
}

/* Whether a failed request may pass: it ran nothing, and it met no
 * server (connection refused or timed out) or a refusal for now
 * (LOADING, ...); not a refused login (a connection that fails before it
 * is ready marks every request transient). */
static int retryable(const rlock__lreq *r, int rc, int transient) {
  return rlock__retryable(rc, transient &&
                                  (rc == RLOCK_EIO || rc == RLOCK_ETIMEOUT ||
                                   r->q.step == RLOCK__STEP_RETRY));
}

/* ---- an attempt lost in flight (acquire.c's settle_in_flight) ---------- */

/* The attempt did not take the lock (`untaken`): its failure ran nothing,
 * and a waiter rides it out. Or it cannot be told: the failure stands,
 * never tried again (plan.h's rlock__settled). */
static void settled_failed(rlock_op *op, int untaken) {
  rlock__err(op->settle_rc, "%s", op->msg);
  if (op->canceled)
    fail(op, rlock__lop_canceled());
  else if (!untaken || !ride_out(op, 1))
    outage_fail(op, op->settle_rc);
}

static void settled_taken(rlock_op *op, int64_t token) {
  if (op->canceled) {
    give_back(op, rlock__lop_canceled());
    return;
  }
  acquired(op, token);
}

static void token_done(rlock_client *c, rlock__lreq *r) {
  (void)c;
  rlock_op *op = rlock__lop_of(r);
  rlock__reply *reply;
  int64_t token = 0;
  int ok = rlock__lreq_take(r, &reply) == RLOCK_OK &&
           reply->type == RLOCK__R_STR &&
           rlock__token_reply(op->l, reply, &token) == RLOCK_OK;
  rlock__reply_free(reply);
  if (ok) {
    settled_taken(op, token);
    return;
  }
  rlock__err(op->settle_rc, "%s", op->msg); /* taken, but no token: */
  give_back(op, op->settle_rc);             /* given back, not granted */
}

static void read_done(rlock_client *c, rlock__lreq *r) {
  (void)c;
  rlock_op *op = rlock__lop_of(r);
  rlock__reply *reply;
  int rc = rlock__lreq_take(r, &reply);
  int64_t now = -1, retry;
  if (rc == RLOCK_OK)
    rc = rlock__count_reply(reply, &now);
  rlock__reply_free(reply);
  retry =
      rc != RLOCK_OK ? rlock__plan_settle_again(&op->plan, &r->call, rc) : 0;
  if (rc != RLOCK_OK && retry != 0) {
    rlock__ltimer_at(op->c, &op->timer, retry);
    return;
  }
  rlock__settled was = rc != RLOCK_OK
                           ? RLOCK__SETTLED_UNKNOWN
                           : rlock__plan_settled(op->settle_had, now);
  if (was != RLOCK__SETTLED_TAKEN) {
    settled_failed(op, was == RLOCK__SETTLED_UNTAKEN);
  } else if (op->l->kind->tokens) {
    rlock__call_cmd(&op->lreq.call, "GET");
    rlock__call_key(&op->lreq.call, op->l->token);
    send_call(op, token_done, 0);
  } else {
    settled_taken(op, 0);
  }
}

static void settle_read(rlock_op *op) {
  rlock__count_call(op->l, op->owner, &op->lreq.call);
  send_call(op, read_done, 0);
}

/* The server closed the connection after reading the attempt: read the
 * owner's field to tell whether it took the lock. */
static void settle(rlock_op *op, int rc) {
  rlock_client *c = op->c;
  char field[RLOCK_FIELD_MAX];
  rlock__field(op->l, op->owner, field);
  op->state = RLOCK__LACQ_SETTLING;
  op->settle_rc = rc;
  snprintf(op->msg, sizeof op->msg, "%s", rlock_error_last()->message);
  op->settle_had = (int64_t)rlock__hold_depth(c, op->l->name, field);
  rlock__plan_settle_begin(&op->plan, c);
  settle_read(op);
}

static void undo_done(rlock_client *c, rlock__lreq *r) {
  (void)c;
  rlock_op *op = rlock__lop_of(r);
  rlock__reply_free(r->q.reply);
  r->q.reply = NULL;
  rlock__call_clear(&r->call);
  int64_t next = rlock__plan_unconfirmed_again(&op->plan);
  if (op->canceled || next == 0) {
    done(op,
         op->canceled ? rlock__lop_canceled()
                      : rlock__err(RLOCK_EREPLICA, "%s", op->msg),
         0);
    return;
  }
  sleep_until(op, RLOCK__LACQ_SLEEPING, next); /* then attempt again */
}

/* Taken, but no replica confirmed it (acquire.c's undo_unconfirmed): a
 * failover now would lose it. Given back, then tried again within the
 * wait; RLOCK_EREPLICA once the wait is over. */
static void undo_unconfirmed(rlock_op *op, const rlock__call *taken) {
  rlock_lock *l = op->l;
  rlock__acquire_unconfirmed(l, taken);
  snprintf(op->msg, sizeof op->msg, "%s", rlock_error_last()->message);
  l->kind->release(l, op->owner, op->lease_sent, &rlock__no_latch,
                   &op->lreq.call);
  op->lreq.call.sync = 1;
  op->state = RLOCK__LACQ_GIVING_BACK;
  send_call(op, undo_done, 0);
}

static void attempt_done(rlock_client *c, rlock__lreq *r) {
  (void)c;
  rlock_op *op = rlock__lop_of(r);
  rlock__reply *reply;
  int rc = rlock__lreq_take(r, &reply);
  int in_flight = r->call.in_flight;
  if (r->call.stamped_us != 0 && r->call.stamped_us < r->sent_us)
    r->sent_us = r->call.stamped_us; /* the lease runs from its stamp */
  int may_pass = rc != RLOCK_OK && retryable(r, rc, r->call.transient);
  int64_t token = 0;
  if (rc == RLOCK_OK) {
    rc = rlock__attempt_result(op->l, reply, &op->plan.ttl_ms);
    if (rc == RLOCK_OK)
      token = rlock__attempt_token(reply);
    rlock__reply_free(reply);
  } else if (rc == RLOCK_ENOMEM && in_flight) {
    rlock__err(RLOCK_ENOMEM,
               "%s (what the server may have granted was "
               "given back)",
               rlock_error_last()->message);
    give_back(op, RLOCK_ENOMEM);
    return;
  } else if (rc == RLOCK_EIO && in_flight && !op->l->kind->sync) {
    settle(op, rc); /* a synchroniser has no field to read (lock_int.h) */
    return;
  }
  if (op->canceled) {
    if (rc == RLOCK_OK)
      give_back(op, rlock__lop_canceled());
    else
      fail(op, rlock__lop_canceled());
    return;
  }
  if (rc == RLOCK_OK && rlock__call_unconfirmed(&r->call)) {
    undo_unconfirmed(op, &r->call);
    return;
  }
  if (rc == RLOCK_OK) {
    acquired(op, token);
    return;
  }
  if (rlock__plan_read_cut(&op->plan, op->l, rc))
    rc = RLOCK_ELOCKED;
  if (rc != RLOCK_ELOCKED) {
    if (!ride_out(op, may_pass))
      outage_fail(op, rlock__wrongtype(op->l, rc));
    return;
  }
  rlock__plan_answered(&op->plan, op->l, rc);
  if (op->wait_ms == 0 || rlock__now_us() >= op->deadline_us) {
    fail(op, rlock__not_acquired(op->l, rc, op->plan.ttl_ms));
    return;
  }
  if (op->sub_rc != RLOCK_OK) { /* the channel was refused meanwhile */
    rlock__err(op->sub_rc, "%s", op->msg);
    fail(op, op->sub_rc);
    return;
  }
  wait_more(op);
}

static void attempt(rlock_op *op) {
  rlock_lock *l = op->l;
  rlock__ltimer_stop(op->c, &op->timer);
  /* A waiter's wake-up (handoff time): now, unless an unlock message came
   * while the last attempt flew (its arrival, lacquire_event). */
  if (op->plan.waiting && !op->woken)
    op->woke_us = rlock__now_us();
  op->state = RLOCK__LACQ_ATTEMPTING;
  op->woken = 0;
  op->resting = 0;
  l->kind->attempt(l, op->owner, op->lease_sent, op->wait_ms, &op->lreq.call);
  op->lreq.call.sync = 1;
  op->lreq.deadline_us = op->deadline_us; /* ride out a failover */
  send_call(op, attempt_done, op->bound_us);
}

void rlock__lacquire_start(rlock_op *op) {
  rlock__ltimer_init(&op->timer, on_timer);
  rlock__plan_init(&op->plan, op->wait_ms);
  op->start_us = rlock__now_us();
  op->deadline_us = op->plan.deadline_us;
  /* A single try is bounded by the connection's own timeouts. */
  op->bound_us = op->wait_ms > 0 ? rlock__wait_bound(op->c, op->wait_ms) : 0;
  op->lease_sent = rlock__lease_sent(op->c, op->lease_ms);
  attempt(op);
}

/* An unlock message "0" goes to the longest sleeper. */
static int op_asleep(const rlock__lwaiter *w) {
  const rlock_op *op =
      (const rlock_op *)((const char *)w - offsetof(rlock_op, sw));
  return op->state == RLOCK__LACQ_SLEEPING;
}

void rlock__lacquire_event(rlock__lwaiter *w, rlock__chan_event what) {
  rlock_op *op = (rlock_op *)((char *)w - offsetof(rlock_op, sw));
  if (what == RLOCK__CHAN_WOKEN_ALL) /* one acquisition: one wake-up */
    what = RLOCK__CHAN_WOKEN;
  if (what == RLOCK__CHAN_FAILED) { /* the channel was refused (an ACL): last
                                       error set */
    rlock__lsub_leave(op->c, &op->sw);
    if (op->state == RLOCK__LACQ_ATTEMPTING ||
        op->state == RLOCK__LACQ_SETTLING ||
        op->state == RLOCK__LACQ_GIVING_BACK) {
      op->sub_rc = rlock_error_last()->code;
      snprintf(op->msg, sizeof op->msg, "%s", rlock_error_last()->message);
      return;
    }
    rlock__ltimer_stop(op->c, &op->timer);
    fail(op, rlock_error_last()->code);
    return;
  }
  if (op->state == RLOCK__LACQ_ATTEMPTING ||
      op->state == RLOCK__LACQ_SETTLING) {
    if (what == RLOCK__CHAN_WOKEN && !op->woken) /* the message's arrival */
      op->woke_us = rlock__now_us();
    op->woken |= what == RLOCK__CHAN_WOKEN;
    return;
  }
  if (op->state == RLOCK__LACQ_SUBSCRIBING && what != RLOCK__CHAN_WOKEN)
    wake(op); /* confirmed: attempt, unless the wait has ended */
  else if (op->state == RLOCK__LACQ_SUBSCRIBING ||
           (what == RLOCK__CHAN_WOKEN && op->state == RLOCK__LACQ_SLEEPING))
    attempt(op);
}

void rlock__lacquire_cancel(rlock_op *op) {
  if (op->canceled || op->finished)
    return;
  op->canceled = 1;
  if (op->state == RLOCK__LACQ_ATTEMPTING ||
      op->state == RLOCK__LACQ_SETTLING || op->state == RLOCK__LACQ_GIVING_BACK)
    return; /* decided when the answer comes */
  rlock__ltimer_stop(op->c, &op->timer);
  fail(op, rlock__lop_canceled());
}

void rlock__lacquire_cancel_member(rlock_op *op) {
  if (op->type != RLOCK__LOP_ACQUIRE || op->finished)
    return;
  rlock__loop_enter(op->c);
  rlock__lacquire_cancel(op);
  rlock__loop_leave(op->c);
}

void rlock__lacquire_abandon(rlock_op *op) {
  metered(op, RLOCK_ECLOSED);
  rlock__ltimer_stop(op->c, &op->timer);
  rlock__lsub_leave(op->c, &op->sw);
}
