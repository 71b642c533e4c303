/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * acquire.c - the acquire loop shared by every lock kind.
 *
 * Waiting never polls: after a failed attempt the waiter subscribes to
 * the kind's channel, and only once the server has confirmed the
 * subscription does it try again (an unlock published before that could
 * not have reached it). Then it sleeps until an unlock message or until
 * the holder's TTL runs out, whichever is first, and tries again.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cancel.h"
#include "calls.h"
#include "common.h"
#include "lock_int.h"
#include "watchdog.h"
#include "plan.h"
#include "pubsub.h"

/* Run a call whose outcome does not change the caller's: keeps the last
 * error (the reason the caller is giving up or failing). It runs even
 * when the wait has ended or was canceled, within a margin of its own
 * (rlock__cleanup_bound). */
static void run_quietly(rlock_lock *l, rlock__call *call) {
  rlock__saved_error saved;
  rlock__reply *r;
  rlock__error_save(&saved);
  rlock__bound was = rlock__bound_extend(rlock__cleanup_bound());
  call->sync = 1;
  if (rlock__lock_run(l, call, &r) == RLOCK_OK)
    rlock__reply_free(r);
  rlock__bound_restore(was);
  rlock__error_restore(&saved);
}

/* Give back one level of `owner`'s hold (what an attempt took, or may
 * have taken), quietly: a release without a latch, never sent again. */
static void give_back(rlock_lock *l, const char *owner, int64_t lease) {
  rlock__call call;
  l->kind->release(l, owner, lease, &rlock__no_latch, &call);
  run_quietly(l, &call);
}

/* An acquisition no replica confirmed is given back (Redisson does the
 * same): a failover now would lose it, and another owner could take it. */
static int undo_unconfirmed(rlock_lock *l, const char *owner, int64_t lease,
                            const rlock__call *taken) {
  rlock__acquire_unconfirmed(l, taken);
  give_back(l, owner, lease);
  return RLOCK_EREPLICA;
}

/* The attempt ran on the server but its reply could not be read (no
 * memory for it): it may have taken the lock, or one more level of it.
 * Give one level back, which does nothing where it took none (the owner
 * holds no field then; a re-entry always takes one). */
static int undo_unread(rlock_lock *l, const char *owner, int64_t lease) {
  rlock__saved_error saved;
  rlock__error_save(&saved);
  give_back(l, owner, lease);
  rlock__error_restore(&saved);
  return rlock__err(RLOCK_ENOMEM,
                    "%s (what the server may have granted "
                    "was given back)",
                    saved.message);
}

static void sleep_until(int64_t until_us, const rlock_cancel *cancel);

/* The owner's hold count of `l` on the server, read again while it fails
 * for a reason that may pass (through a failover, or a server coming
 * back), as long as the plan allows. */
static int read_count(rlock_lock *l, const char *owner, rlock__plan *plan,
                      int64_t *count) {
  rlock__plan_settle_begin(plan, l->client);
  for (;;) {
    rlock__call call;
    rlock__reply *r;
    rlock__count_call(l, owner, &call);
    int rc = rlock__lock_run_until(l, &call, plan->settle_until_us, &r);
    if (rc == RLOCK_OK) {
      rc = rlock__count_reply(r, count);
      rlock__reply_free(r);
      return rc;
    }
    int64_t again = rlock__plan_settle_again(plan, &call, rc);
    if (again == 0 || rlock__bound_reached())
      return rc;
    sleep_until(again, NULL);
  }
}

/* The attempt was sent but the server closed or reset the connection
 * before answering (killed, failing over, CLIENT KILL): it may have taken
 * the lock or not, and it will not run later (a closed connection's
 * unread commands are dropped). Not after a timeout: a slow server may
 * still run the attempt after a read on another connection, so that read
 * would settle nothing. Reading the owner's field settles which
 * (rlock__plan_settled): taken (a fenced lock's token is then the
 * counter's value: no one else can have taken one since), or not
 * (*transient: attempt again). Anything else, or no answer to the read
 * within the plan's settle steps, leaves the original failure. */
static int settle_in_flight(rlock_lock *l, const char *owner, int64_t lease,
                            rlock__plan *plan, int rc, int64_t *token,
                            int *transient) {
  if (l->kind->sync)
    return rc; /* no field to read (lock_int.h) */
  rlock__saved_error why;
  rlock__error_save(&why);
  char field[RLOCK_FIELD_MAX];
  rlock__field(l, owner, field);
  int64_t had = (int64_t)rlock__hold_depth(l->client, l->name, field), now;
  rlock__settled was = read_count(l, owner, plan, &now) == RLOCK_OK
                           ? rlock__plan_settled(had, now)
                           : RLOCK__SETTLED_UNKNOWN;
  *transient = was == RLOCK__SETTLED_UNTAKEN;
  if (was == RLOCK__SETTLED_TAKEN) {
    *token = 0;
    if (!l->kind->tokens || rlock_lock_token(token, l) == RLOCK_OK)
      return RLOCK_OK;
    give_back(l, owner, lease); /* taken, but its token is unknown */
  }
  rlock__error_restore(&why);
  return rc;
}

/* What one acquisition works with, resolved once. */
typedef struct acq {
  rlock_lock *l;
  const char *owner; /* the hash field's owner part */
  int64_t lease;     /* the lease sent: the watchdog's when 0 was asked */
  const rlock_cancel *cancel;
  rlock__plan plan; /* the wait, the holder's TTL, the outage (plan.h) */
  int64_t sent;     /* when the last attempt was written */
  int64_t token;    /* the last successful attempt's fencing token */
  int64_t start;    /* when the call began (the metrics' wait time) */
  int64_t woke;     /* the last attempt's start: while waiting, when the
                       waiter last woke (the metrics' handoff time) */
} acq;

/* One attempt: build the kind's call, run it (riding out a failover
 * until `deadline`), read its answer; confirmed on replicas where the
 * master has them. *transient as rlock__call's. a->sent becomes the time
 * the attempt was last written: a call that rode out an outage before it
 * could be sent took the lock only then, and its lease runs from then. */
static int attempt_once(acq *a, int64_t deadline, int *transient) {
  rlock_lock *l = a->l;
  const char *owner = a->owner;
  int64_t lease = a->lease, *ttl = &a->plan.ttl_ms, *token = &a->token;
  rlock__call call;
  rlock__reply *r;
  l->kind->attempt(l, owner, lease, a->plan.wait_ms, &call);
  call.sync = 1;
  int rc = rlock__lock_run_until(l, &call, deadline, &r);
  *transient = call.transient;
  if (call.sent_us != 0)
    a->sent = rlock__call_granted_from(&call);
  if (rc == RLOCK_ENOMEM && call.in_flight)
    return undo_unread(l, owner, lease);
  if (rc == RLOCK_EIO && call.in_flight)
    return settle_in_flight(l, owner, lease, &a->plan, rc, token, transient);
  if (rc != RLOCK_OK)
    return rc;
  rc = rlock__attempt_result(l, r, ttl);
  if (rc == RLOCK_OK)
    *token = rlock__attempt_token(r);
  rlock__reply_free(r);
  if (rc == RLOCK_OK && rlock__call_unconfirmed(&call))
    rc = undo_unconfirmed(l, owner, lease, &call);
  return rc;
}

/* While the server cannot be reached, an acquisition that waits
 * (wait_ms != 0) tries again after a pause (rlock__plan_ride_out) until
 * the server answers, the wait ends, the client's unreachable retry
 * bound passes or it is canceled. Its first attempt too: a wait covers a
 * server that is not up yet (restarting, or starting along with the job)
 * as it covers one lost during the wait. Only failures that ran nothing
 * and may pass (rlock__retryable) are tried again, so nothing applies
 * twice, and a name that does not resolve, a refused login or a refused
 * certificate is reported at once. 1 when it paused and may go on. */
static int ride_out(acq *a, int retryable) {
  int64_t until = rlock__plan_ride_out(&a->plan, a->l->client, retryable);
  if (until == 0)
    return 0;
  sleep_until(until, a->cancel);
  return !rlock__canceled(a->cancel);
}

/* The failure a wait ends with during an outage (plan.h). */
static int outage_end(acq *a, int rc) {
  if (rlock__canceled(a->cancel))
    return rlock__err(RLOCK_ECANCELED, "wait canceled");
  return rlock__plan_outage_end(&a->plan, rc);
}

/* attempt_once, again after an unconfirmed acquisition while the wait
 * lasts (a replica may be catching up), and again while the server is
 * out of reach and the caller waits (ride_out). */
static int attempt(acq *a) {
  rlock_client *c = a->l->client;
  for (;;) {
    a->woke = a->sent = rlock__now_us();
    int transient;
    int rc = attempt_once(a, rlock__plan_retry_limit(&a->plan, c, a->sent),
                          &transient);
    if (rlock__plan_read_cut(&a->plan, a->l, rc))
      rc = RLOCK_ELOCKED;
    int64_t again;
    if (rc == RLOCK_EREPLICA &&
        (again = rlock__plan_unconfirmed_again(&a->plan)) != 0) {
      sleep_until(again, a->cancel);
      continue;
    }
    rlock__plan_answered(&a->plan, a->l, rc);
    if (rc == RLOCK_OK || rc == RLOCK_ELOCKED)
      return rc;
    if (!ride_out(a, rlock__retryable(rc, transient)))
      return outage_end(a, rc);
  }
}

/* Subscribe; while the server is out of reach, attempt between pauses
 * instead (the lock may come free without a message reaching us). A
 * subscription not confirmed by the time the holder's lease runs out (the
 * background thread short of memory, a failover under way) does not hold
 * the waiter up: it attempts then, as a sleeping waiter would, and goes on
 * waiting for the confirmation. RLOCK_OK with *sub NULL when such an
 * attempt took the lock. */
static int subscribe(acq *a, const char *ch, rlock__sub **sub) {
  for (;;) {
    int64_t until = rlock__plan_round_until(&a->plan);
    int rc = rlock__sub_acquire(a->l->client, ch, until, a->cancel, sub);
    if (rc == RLOCK__EDEADLINE && until >= a->plan.deadline_us)
      return RLOCK_ELOCKED;
    int transient = rc == RLOCK_EIO || rc == RLOCK_ETIMEOUT;
    if (rc != RLOCK__EDEADLINE &&
        (rc == RLOCK_OK || !ride_out(a, rlock__retryable(rc, transient))))
      return rc == RLOCK_OK ? rc : outage_end(a, rc);
    if ((rc = attempt(a)) != RLOCK_ELOCKED) {
      *sub = NULL;
      return rc;
    }
  }
}

/* Subscribe, then attempt on every wake-up; a wake-up with no message
 * past the wait's end gives up instead (rlock__plan_wait_ended). */
static int wait_and_retry(acq *a) {
  rlock_lock *l = a->l;
  rlock_client *c = l->client;
  char chbuf[RLOCK_MAX_NAME_LEN + 128];
  const char *ch = l->kind->channel(l, a->owner, chbuf, sizeof chbuf);
  rlock__sub *sub;
  int rc = subscribe(a, ch, &sub);
  if (rc != RLOCK_OK || sub == NULL)
    return rc;
  for (int woken = 0;;) {
    if (!woken && rlock__plan_wait_ended(&a->plan, l)) {
      rc = RLOCK_ELOCKED;
      break;
    }
    rc = attempt(a);
    if (rc != RLOCK_ELOCKED || rlock__now_us() >= a->plan.deadline_us)
      break;
    woken =
        rlock__sub_wait(c, sub, rlock__plan_round_until(&a->plan), a->cancel);
    if (rlock__canceled(a->cancel)) {
      rc = rlock__err(RLOCK_ECANCELED, "wait canceled");
      break;
    }
  }
  rlock__sub_release(c, sub);
  return rc;
}

/* Sleep until `until_us`, in steps short enough to notice `cancel`. */
static void sleep_until(int64_t until_us, const rlock_cancel *cancel) {
  for (int64_t now = rlock__now_us();
       now < until_us && !rlock__canceled(cancel); now = rlock__now_us()) {
    int64_t step = rlock__cancel_step(cancel, until_us) - now;
    rlock__sleep_ms(step >= 1000 ? step / 1000 : 1);
  }
}

/* The spin lock's wait: no subscription; back off (rlock__plan_spin),
 * then attempt again. A pause that reached the wait's end ends it "not in
 * time" without an attempt, as a subscribed wait does. */
static int spin_and_retry(acq *a) {
  for (;;) {
    sleep_until(rlock__plan_spin(&a->plan, &a->l->spin), a->cancel);
    if (rlock__canceled(a->cancel))
      return rlock__err(RLOCK_ECANCELED, "wait canceled");
    if (rlock__plan_wait_ended(&a->plan, a->l))
      return RLOCK_ELOCKED;
    int rc = attempt(a);
    if (rc != RLOCK_ELOCKED || rlock__now_us() >= a->plan.deadline_us)
      return rc;
  }
}

/* The grant was read after the token fired (the read's grace,
 * RLOCK__CANCEL_GRACE_MS): the caller gave up, so it is given back. */
static int give_back_canceled(acq *a) {
  give_back(a->l, a->owner, a->lease);
  return rlock__err(RLOCK_ECANCELED, "wait canceled");
}

/* After a failed wait: leave the queue (fair lock), and word ELOCKED. */
static int not_acquired(acq *a, int rc) {
  rlock_lock *l = a->l;
  rlock__call call;
  if (l->kind->give_up != NULL && a->plan.wait_ms != 0) {
    l->kind->give_up(l, a->owner, a->plan.wait_ms, &call);
    run_quietly(l, &call);
  }
  return rlock__not_acquired(l, rc, a->plan.ttl_ms);
}

/* Record the hold for renewal and rlock_lock_check; give it back when it
 * cannot be recorded. */
static int record(acq *a, int64_t lease_ms, uint64_t owner_number) {
  rlock_lock *l = a->l;
  int rc = rlock__acquired_record(l, a->owner, lease_ms, a->sent, owner_number);
  if (rc != RLOCK_OK)
    give_back(l, a->owner, a->lease);
  return rc;
}

int rlock__acquire_opts(rlock_lock *l, const rlock_acquire_options *o) {
  if (l == NULL)
    return rlock__err(RLOCK_EINVAL, "lock is NULL");
  char owner[RLOCK_OWNER_MAX];
  rlock__owner_as(l->client, o->owner, owner);
  return rlock__acquire_as(l, owner, o);
}

int rlock__acquire_as(rlock_lock *l, const char *owner,
                      const rlock_acquire_options *o) {
  int rc = rlock__blocking_check(l->client);
  if (rc != RLOCK_OK)
    return rc;
  if (o->token != NULL && !l->kind->tokens)
    return rlock__err(RLOCK_EINVAL,
                      "%s '%s' issues no fencing tokens: "
                      "create it with rlock_lock_new_fenced()",
                      l->kind->label, l->name);
  if (rlock__canceled(o->cancel))
    return rlock__err(RLOCK_ECANCELED, "wait canceled before it began");
  rlock_client *c = l->client;
  acq a = {.l = l,
           .owner = owner,
           .lease = rlock__lease_sent(c, o->lease_ms),
           .cancel = o->cancel,
           .start = rlock__now_us()};
  rlock__plan_init(&a.plan, o->wait_ms);
  rlock__bound was =
      rlock__bound_enter(rlock__wait_bound(c, o->wait_ms), o->cancel);
  rc = attempt(&a);
  if (rc == RLOCK_ELOCKED && o->wait_ms != 0)
    rc = l->kind->spin ? spin_and_retry(&a) : wait_and_retry(&a);
  if (rc == RLOCK_OK && rlock__canceled(o->cancel))
    rc = give_back_canceled(&a);
  if (rc != RLOCK_OK)
    rc = not_acquired(&a, rc);
  else if ((rc = record(&a, o->lease_ms, o->owner)) == RLOCK_OK &&
           o->token != NULL)
    *o->token = a.token;
  rlock__obs_acquire_end(l->ms, rc, a.plan.waiting, a.start, a.woke);
  rlock__bound_restore(was);
  return rc;
}

int rlock__acquire(rlock_lock *l, int64_t wait_ms, int64_t lease_ms,
                   const rlock_cancel *cancel) {
  rlock_acquire_options o =
      rlock__options_with(wait_ms, lease_ms, (rlock_cancel *)cancel);
  rlock_acquire_options checked;
  int rc = rlock__options(&checked, &o);
  return rc == RLOCK_OK ? rlock__acquire_opts(l, &checked) : rc;
}

/* ---- the blocking entry points ------------------------------------------ */

int rlock_lock_acquire_opts(rlock_lock *l, const rlock_acquire_options *opts) {
  rlock_acquire_options o;
  int rc = rlock__options(&o, opts);
  return rc == RLOCK_OK ? rlock__acquire_opts(l, &o) : rc;
}

int rlock_lock_acquire(rlock_lock *l) {
  return rlock_lock_acquire_opts(l, NULL);
}

/* Lease 0 is RLOCK_LEASE_WATCHDOG, as for rlock_lock_try_acquire(), whose
 * twin this is. */
int rlock_lock_acquire_lease(rlock_lock *l, int64_t lease_ms) {
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.lease_ms = lease_ms;
  return rlock_lock_acquire_opts(l, &o);
}

int rlock_lock_try_acquire(rlock_lock *l, int64_t wait_ms, int64_t lease_ms) {
  return rlock_lock_try_acquire_cancel(l, wait_ms, lease_ms, NULL);
}

int rlock_lock_try_acquire_cancel(rlock_lock *l, int64_t wait_ms,
                                  int64_t lease_ms, rlock_cancel *cancel) {
  rlock_acquire_options o = rlock__options_with(wait_ms, lease_ms, cancel);
  return rlock_lock_acquire_opts(l, &o);
}
