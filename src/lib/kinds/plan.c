/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan.c - the decisions of one acquisition, for both drivers (plan.h).
 */
#include "plan.h"

#include "client_int.h"
#include "cmd.h"
#include "common.h"
#include "lock_int.h"

/* Reads settling an attempt lost in flight start 25 ms apart, doubling
 * to the outage pauses' 1 s. */
#define SETTLE_FIRST_MS 25

void rlock__plan_init(rlock__plan *p, int64_t wait_ms) {
  *p = (rlock__plan){.wait_ms = wait_ms,
                     .deadline_us = rlock__deadline_after_ms(wait_ms),
                     .ttl_ms = -1};
}

int64_t rlock__plan_round_until(const rlock__plan *p) {
  if (p->ttl_ms < 0 || p->ttl_ms > RLOCK_MAX_DURATION_MS)
    return p->deadline_us; /* no expiry, or absurd: a message or the wait */
  int64_t until = rlock__now_us() + (p->ttl_ms > 0 ? p->ttl_ms : 1) * 1000;
  return until < p->deadline_us ? until : p->deadline_us;
}

int64_t rlock__plan_retry_limit(const rlock__plan *p, const rlock_client *c,
                                int64_t now) {
  return rlock__outage_until(c, p->outage_us ? p->outage_us : now,
                             p->deadline_us);
}

int64_t rlock__plan_ride_out(rlock__plan *p, const rlock_client *c,
                             int retryable) {
  if (!retryable || p->wait_ms == 0)
    return 0;
  int64_t now = rlock__now_us(), limit = rlock__plan_retry_limit(p, c, now);
  if (now >= limit)
    return 0;
  if (p->outage_us == 0) {
    p->outage_us = now;
    p->backoff_ms = RLOCK__OUTAGE_FIRST_MS;
  }
  int64_t until = now + p->backoff_ms * 1000;
  p->backoff_ms = rlock__doubled(p->backoff_ms, RLOCK__OUTAGE_MAX_MS);
  return until < limit ? until : limit;
}

void rlock__plan_answered(rlock__plan *p, const rlock_lock *l, int rc) {
  if (rc != RLOCK_OK && rc != RLOCK_ELOCKED)
    return;
  p->outage_us = 0;
  if (rc == RLOCK_ELOCKED && p->wait_ms != 0 && !p->waiting) {
    p->waiting = 1;
    rlock__obs_count(&l->client->obs, RLOCK__STAT_WAITS);
    rlock__obs_wait_begin(l->ms);
  }
}

int64_t rlock__plan_spin(rlock__plan *p, const rlock__spin *s) {
  int64_t ms = p->spin_ms;
  if (p->spins++ == 0) { /* seeded here: most acquisitions never spin */
    p->seed =
        (uint64_t)rlock__now_us() ^ rlock__thread_id() ^ (uint64_t)(uintptr_t)p;
    ms = rlock__spin_first(s);
  }
  p->spin_ms = rlock__spin_next(s, ms, p->spins, &p->seed);
  int64_t until = rlock__now_us() + ms * 1000;
  int64_t bound = rlock__plan_round_until(p);
  return until < bound ? until : bound;
}

int rlock__plan_outage_end(const rlock__plan *p, int rc) {
  if (p->outage_us == 0)
    return rc;
  return rlock__err(rc, "%s (tried again for %lld ms while waiting)",
                    rlock_error_last()->message,
                    (long long)((rlock__now_us() - p->outage_us) / 1000));
}

void rlock__plan_settle_begin(rlock__plan *p, const rlock_client *c) {
  int64_t now = rlock__now_us();
  int64_t floor = rlock__deadline_after_ms(c->cfg.connect_timeout_ms +
                                           c->cfg.command_timeout_ms);
  int64_t limit =
      p->wait_ms == 0 ? p->deadline_us : rlock__plan_retry_limit(p, c, now);
  p->settle_until_us = limit > floor ? limit : floor;
  p->settle_ms = SETTLE_FIRST_MS;
  if (p->wait_ms != 0 && p->outage_us == 0) { /* the connection was lost: */
    p->outage_us = now; /* a wait that ends in it says how long it tried */
    p->backoff_ms = RLOCK__OUTAGE_FIRST_MS;
  }
}

int64_t rlock__plan_settle_again(rlock__plan *p, const rlock__call *call,
                                 int rc) {
  int passing = call->transient || (call->in_flight && rc == RLOCK_EIO &&
                                    !rlock__error_is_final());
  int64_t next = rlock__deadline_after_ms(p->settle_ms);
  if (!passing || next >= p->settle_until_us)
    return 0;
  p->settle_ms = rlock__doubled(p->settle_ms, RLOCK__OUTAGE_MAX_MS);
  return next;
}

int64_t rlock__plan_unconfirmed_again(const rlock__plan *p) {
  if (p->wait_ms == 0)
    return 0;
  int64_t next = rlock__deadline_after_ms(RLOCK__UNCONFIRMED_PAUSE_MS);
  return next < p->deadline_us ? next : 0;
}

rlock__settled rlock__plan_settled(int64_t had, int64_t now) {
  return now == had       ? RLOCK__SETTLED_UNTAKEN
         : now == had + 1 ? RLOCK__SETTLED_TAKEN
                          : RLOCK__SETTLED_UNKNOWN;
}

int rlock__plan_read_cut(const rlock__plan *p, const rlock_lock *l, int rc) {
  return rc == RLOCK_ETIMEOUT && l->kind->reads &&
         rlock__now_us() >= p->deadline_us;
}

int rlock__plan_wait_ended(const rlock__plan *p, const rlock_lock *l) {
  return p->wait_ms > 0 && !l->kind->reads && rlock__now_us() >= p->deadline_us;
}
