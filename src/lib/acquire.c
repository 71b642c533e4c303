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
#include <stdio.h>
#include <string.h>

#include "cancel.h"
#include "common.h"
#include "lock_int.h"

int rlock__check_wait(int64_t wait_ms) {
  if (wait_ms == RLOCK_WAIT_FOREVER)
    return RLOCK_OK;
  if (wait_ms < 0 || wait_ms > RLOCK_MAX_DURATION_MS)
    return rlock__err(RLOCK_EINVAL,
                      "wait must be 0..%" PRId64 " ms or RLOCK_WAIT_FOREVER "
                      "(got %" PRId64 ")",
                      RLOCK_MAX_DURATION_MS, wait_ms);
  return RLOCK_OK;
}

int rlock__check_lease(int64_t lease_ms) {
  if (lease_ms < 0 || lease_ms > RLOCK_MAX_DURATION_MS)
    return rlock__err(RLOCK_EINVAL,
                      "lease must be 1..%" PRId64 " ms or "
                      "RLOCK_LEASE_WATCHDOG (got %" PRId64 ")",
                      RLOCK_MAX_DURATION_MS, lease_ms);
  return RLOCK_OK;
}

/* The scripts' refusals read "WRONGTYPE key <why>" (lockcheck.lua); a
 * plain command on a key of another type gets Redis's own WRONGTYPE. */
int rlock__wrongtype(const rlock_lock *l, int rc) {
  if (rc != RLOCK_EWRONGTYPE)
    return rc;
  static const char tag[] = "WRONGTYPE key ";
  const char *why = strstr(rlock_error_last()->message, tag);
  if (why == NULL)
    return rlock__err(rc, "key '%s' holds a value of another type, not a "
                      "%s; left untouched", l->name, l->kind->label);
  char copy[256]; /* the message is rewritten below */
  snprintf(copy, sizeof copy, "%s", why + sizeof tag - 1);
  return rlock__err(rc, "key '%s' %s; left untouched", l->name, copy);
}

/* Sleep bound for one round: the holder's TTL (at least 1 ms, so a lock
 * about to expire is not hammered), capped by the caller's deadline. */
static int64_t round_until(int64_t ttl_ms, int64_t deadline) {
  if (ttl_ms < 0 || ttl_ms > RLOCK_MAX_DURATION_MS)
    return deadline; /* no expiry, or absurd: only a message or the wait */
  int64_t until = rlock__now_us() + (ttl_ms > 0 ? ttl_ms : 1) * 1000;
  return until < deadline ? until : deadline;
}

/* Run a call whose outcome does not change the caller's: keeps the last
 * error (the reason the caller is giving up or failing). */
static void run_quietly(rlock_lock *l, rlock__call *call) {
  rlock__saved_error saved;
  rlock__reply *r;
  rlock__error_save(&saved);
  call->sync = 1;
  if (rlock__lock_run(l, call, &r) == RLOCK_OK)
    rlock__reply_free(r);
  rlock__error_restore(&saved);
}

/* An acquisition no replica confirmed is given back (Redisson does the
 * same): a failover now would lose it, and another owner could take it. */
static int undo_unconfirmed(rlock_lock *l, const char *owner, int64_t lease,
                            const rlock__call *taken) {
  rlock__err(RLOCK_EREPLICA, "%s '%s' was acquired on %s, but none of its "
             "%d replicas confirmed it within %lld ms; it was given back",
             l->kind->label, l->name, taken->served_by, taken->replicas,
             (long long)l->client->cfg.replica_sync_timeout_ms);
  rlock__call undo;
  l->kind->release(l, owner, lease, &rlock__no_latch, &undo);
  run_quietly(l, &undo);
  return RLOCK_EREPLICA;
}

/* One attempt: build the kind's call, run it (riding out a failover
 * until the wait's deadline), read its answer; confirmed on replicas
 * where the master has them. */
static int attempt_once(rlock_lock *l, const char *owner, int64_t lease,
                        int64_t wait_ms, int64_t deadline, int64_t *ttl) {
  rlock__call call;
  rlock__reply *r;
  l->kind->attempt(l, owner, lease, wait_ms, &call);
  call.sync = 1;
  int rc = rlock__lock_run_until(l, &call, deadline, &r);
  if (rc != RLOCK_OK)
    return rc;
  rc = rlock__attempt_result(l, r, ttl);
  rlock__reply_free(r);
  if (rc == RLOCK_OK && rlock__call_unconfirmed(&call))
    rc = undo_unconfirmed(l, owner, lease, &call);
  return rc;
}

/* Pause between attempts whose acquisition no replica confirmed. */
#define UNCONFIRMED_PAUSE_MS 50

/* attempt_once, again after an unconfirmed acquisition while the wait
 * lasts (a replica may be catching up). */
static int attempt(rlock_lock *l, const char *owner, int64_t lease,
                   int64_t wait_ms, int64_t deadline, int64_t *ttl) {
  for (;;) {
    int rc = attempt_once(l, owner, lease, wait_ms, deadline, ttl);
    if (rc != RLOCK_EREPLICA ||
        rlock__ms_left(deadline) <= UNCONFIRMED_PAUSE_MS)
      return rc;
    rlock__sleep_ms(UNCONFIRMED_PAUSE_MS);
  }
}

/* Subscribe, then attempt on every wake-up. *sent is when the last attempt
 * was sent. */
static int wait_and_retry(rlock_lock *l, const char *owner, int64_t lease,
                          int64_t wait_ms, int64_t deadline, int64_t *ttl,
                          int64_t *sent, const rlock_cancel *cancel) {
  rlock_client *c = l->client;
  char chbuf[RLOCK_MAX_NAME_LEN + 128];
  const char *ch = l->kind->channel(l, owner, chbuf, sizeof chbuf);
  rlock__sub *sub;
  int rc = rlock__sub_acquire(c, ch, deadline, cancel, &sub);
  if (rc == RLOCK__EDEADLINE)
    return RLOCK_ELOCKED;
  if (rc != RLOCK_OK)
    return rc;
  for (;;) {
    *sent = rlock__now_us();
    rc = attempt(l, owner, lease, wait_ms, deadline, ttl);
    if (rc != RLOCK_ELOCKED || rlock__now_us() >= deadline)
      break;
    rlock__sub_wait(c, sub, round_until(*ttl, deadline), cancel);
    if (rlock__canceled(cancel)) {
      rc = rlock__err(RLOCK_ECANCELED, "wait canceled");
      break;
    }
  }
  rlock__sub_release(c, sub);
  return rc;
}

int rlock__acquire(rlock_lock *l, int64_t wait_ms, int64_t lease_ms,
                   const rlock_cancel *cancel) {
  if (l == NULL)
    return rlock__err(RLOCK_EINVAL, "lock is NULL");
  int rc = rlock__check_wait(wait_ms);
  if (rc == RLOCK_OK)
    rc = rlock__check_lease(lease_ms);
  if (rc != RLOCK_OK)
    return rc;
  if (rlock__canceled(cancel))
    return rlock__err(RLOCK_ECANCELED, "wait canceled before it began");
  rlock_client *c = l->client;
  char owner[RLOCK_OWNER_MAX];
  rlock__owner(c, owner);
  int64_t lease = lease_ms > 0 ? lease_ms : c->cfg.watchdog_timeout_ms;
  int64_t deadline = rlock__deadline_after_ms(wait_ms);
  int64_t ttl = -1, sent = rlock__now_us();

  rc = attempt(l, owner, lease, wait_ms, deadline, &ttl);
  if (rc == RLOCK_ELOCKED && wait_ms != 0)
    rc = wait_and_retry(l, owner, lease, wait_ms, deadline, &ttl, &sent,
                        cancel);
  rlock__call call;
  if (rc != RLOCK_OK && l->kind->give_up != NULL && wait_ms != 0) {
    l->kind->give_up(l, owner, wait_ms, &call);
    run_quietly(l, &call);
  }
  if (rc == RLOCK_ELOCKED && ttl < 0)
    return rlock__err(rc, "%s '%s' is held by another owner (no expiry)",
                      l->kind->label, l->name);
  if (rc == RLOCK_ELOCKED)
    return rlock__err(rc, "%s '%s' is held by another owner (remaining "
                      "lease %" PRId64 " ms)", l->kind->label, l->name, ttl);
  if (rc != RLOCK_OK)
    return rc; /* rlock__lock_run worded a refusal already */
  char field[RLOCK_FIELD_MAX];
  rlock__field(l, owner, field);
  rc = rlock__hold_push(c, l->name, field, lease_ms, sent,
                        l->kind->read_renewal ? l->base : NULL);
  if (rc != RLOCK_OK) { /* held but untracked: give it back */
    rlock__err(RLOCK_ENOMEM, "out of memory recording the hold of '%s' "
               "(released)", l->name);
    l->kind->release(l, owner, lease, &rlock__no_latch, &call);
    run_quietly(l, &call);
  }
  return rc;
}
