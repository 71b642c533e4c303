/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rules.c - what an acquisition means, whichever driver runs it: its
 * options (read by the caller's version), the checks of a wait and a
 * lease, the back-off while a server cannot be reached and the spin
 * kind's, which failures are worth another try, and how a refusal or a
 * wait that ran out is worded. The blocking driver's loop
 * (blocking/acquire.c) and the loop's state machine (loop/lacquire.c)
 * both follow them.
 */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

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
  if (rc == RLOCK_EHELD)
    return rlock__err(rc,
                      "%s '%s' is already held by this owner: a second "
                      "acquisition is refused (release it first)",
                      l->kind->label, l->name);
  if (rc != RLOCK_EWRONGTYPE)
    return rc;
  static const char tag[] = "WRONGTYPE key ";
  const char *why = strstr(rlock_error_last()->message, tag);
  if (why == NULL)
    return rlock__err(rc,
                      "key '%s' holds a value of another type, not a "
                      "%s; left untouched",
                      l->name, l->kind->label);
  char copy[256]; /* the message is rewritten below */
  snprintf(copy, sizeof copy, "%s", why + sizeof tag - 1);
  return rlock__err(rc, "key '%s' %s; left untouched", l->name, copy);
}

int rlock__retryable(int rc, int transient) {
  return transient && rc != RLOCK_EAUTH && !rlock__error_is_final();
}

int64_t rlock__outage_until(const rlock_client *c, int64_t since_us,
                            int64_t deadline_us) {
  int64_t bound = c->cfg.unreachable_retry_ms;
  if (bound < 0 || bound > (deadline_us - since_us) / 1000)
    return deadline_us;
  return since_us + bound * 1000;
}

int64_t rlock__wait_bound(const rlock_client *c, int64_t wait_ms) {
  if (wait_ms < 0)
    return INT64_MAX;
  if (wait_ms == 0) {
    int64_t t = c->cfg.command_timeout_ms;
    return rlock__deadline_after_ms(
        c->cfg.connect_timeout_ms > t ? c->cfg.connect_timeout_ms : t);
  }
  return rlock__deadline_after_ms(wait_ms + RLOCK__WAIT_MARGIN_MS);
}

int64_t rlock__lease_sent(const rlock_client *c, int64_t lease_ms) {
  return lease_ms > 0 ? lease_ms : c->cfg.watchdog_timeout_ms;
}

int64_t rlock__cleanup_bound(void) {
  return rlock__deadline_after_ms(RLOCK__WAIT_MARGIN_MS);
}

int64_t rlock__spin_first(const rlock__spin *p) {
  return p->backoff == RLOCK_SPIN_CONSTANT ? p->delay_ms : p->initial_ms;
}

/* Redisson's back-offs: constant, or exponential (by default from 1 ms,
 * doubling to at most 128 ms) plus a random 0..failures-1 ms so that
 * spinning waiters drift apart; at the cap, no more jitter. */
int64_t rlock__spin_next(const rlock__spin *p, int64_t cur, unsigned failures,
                         uint64_t *seed) {
  if (p->backoff == RLOCK_SPIN_CONSTANT)
    return p->delay_ms;
  if (cur >= p->max_ms)
    return p->max_ms;
  double grown = (double)cur * p->multiplier; /* exact below 2^53 */
  int64_t next = grown >= (double)p->max_ms ? p->max_ms : (int64_t)grown;
  if (next <= cur && p->multiplier > 1.0)
    next = cur + 1; /* 1.5 x 1 ms: grow, not stay */
  if (p->jitter) {
    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    next += (int64_t)((*seed >> 33) % failures);
  }
  return next < p->max_ms ? next : p->max_ms;
}

/* The size of rlock_acquire_options as each version declared it: a
 * caller built against version v owns only that many bytes, so neither
 * reading its options nor initialising them may touch more. A version
 * that appends fields appends its size here. */
static const size_t options_size[RLOCK_ACQUIRE_OPTIONS_VERSION + 1] = {
    [1] = offsetof(rlock_acquire_options, token) + sizeof(int64_t *),
};

int rlock__options(rlock_acquire_options *out,
                   const rlock_acquire_options *in) {
  rlock_acquire_options defaults = RLOCK_ACQUIRE_OPTIONS_INIT;
  *out = defaults;
  if (in == NULL)
    return RLOCK_OK;
  if (in->version < 1 || in->version > RLOCK_ACQUIRE_OPTIONS_VERSION)
    return rlock__err(RLOCK_EINVAL,
                      "rlock_acquire_options version %u is "
                      "not one this library knows (1 to %d): initialise "
                      "with RLOCK_ACQUIRE_OPTIONS_INIT",
                      in->version, RLOCK_ACQUIRE_OPTIONS_VERSION);
  /* The fields the caller's version has; later ones keep their defaults. */
  memcpy(out, in, options_size[in->version]);
  int rc = rlock__check_wait(out->wait_ms);
  return rc == RLOCK_OK ? rlock__check_lease(out->lease_ms) : rc;
}

rlock_acquire_options rlock__options_with(int64_t wait_ms, int64_t lease_ms,
                                          rlock_cancel *cancel) {
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = wait_ms;
  o.lease_ms = lease_ms;
  o.cancel = cancel;
  return o;
}

int rlock_acquire_options_init(rlock_acquire_options *opts,
                               unsigned int version) {
  if (opts == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_acquire_options_init: opts is "
                                    "NULL");
  if (version < 1 || version > RLOCK_ACQUIRE_OPTIONS_VERSION)
    return rlock__err(RLOCK_EINVAL,
                      "rlock_acquire_options version %u is "
                      "not one this library knows (1 to %d)",
                      version, RLOCK_ACQUIRE_OPTIONS_VERSION);
  rlock_acquire_options defaults = RLOCK_ACQUIRE_OPTIONS_INIT;
  defaults.version = version;
  memcpy(opts, &defaults, options_size[version]); /* no more than it has */
  return RLOCK_OK;
}

int rlock__not_acquired(const rlock_lock *l, int rc, int64_t ttl) {
  if (rc == RLOCK_ELOCKED && l->kind->unavailable != NULL)
    return rlock__err(rc, "%s '%s' %s within the wait", l->kind->label, l->name,
                      l->kind->unavailable);
  if (rc == RLOCK_ELOCKED && ttl < 0)
    return rlock__err(rc, "%s '%s' is held by another owner (no expiry)",
                      l->kind->label, l->name);
  if (rc == RLOCK_ELOCKED && l->kind->give_up != NULL)
    /* a fair lock's answer is a sleep bound, not the holder's lease */
    return rlock__err(rc,
                      "%s '%s' is held by another owner or promised to "
                      "a waiter queued earlier",
                      l->kind->label, l->name);
  if (rc == RLOCK_ELOCKED)
    return rlock__err(rc,
                      "%s '%s' is held by another owner (remaining "
                      "lease %" PRId64 " ms)",
                      l->kind->label, l->name, ttl);
  return rc; /* rlock__lock_run worded a refusal already */
}
