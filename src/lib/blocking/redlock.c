/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redlock.c - the blocking RedLock: acquisition rounds (kinds/redlock.c's
 * decisions, one fan-out each: every member's call carried by its
 * client's loop, loop/lfan.c, while this thread waits), release and
 * results.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cancel.h"
#include "calls.h"
#include "common.h"
#include "loop.h"
#include "redlock_int.h"
#include "watchdog.h"

/* One acquisition round over every member. */
typedef struct rlock__round {
  rlock_redlock *r;
  uint64_t owner_number; /* RLOCK_OWNER_THREAD or an explicit owner */
  rlock__fan fan[RLOCK_MAX_REDLOCK_MEMBERS];
  char owner[RLOCK_MAX_REDLOCK_MEMBERS][RLOCK_OWNER_MAX];
  int64_t started;         /* monotonic us */
  int64_t lease_min;       /* ms */
  int64_t node_timeout_ms; /* how long a member may take in this round */
  int64_t validity;        /* ms; may be <= 0 */
  size_t taken;
} rlock__round;

/* A fan-out of one call per member (build(i, call) builds member i's),
 * run until `deadline` (and decide), its outcomes in out[]. */
static void fan_members(rlock_lock *const *locks, size_t n, rlock__fan *out,
                        void (*build)(void *arg, size_t i, rlock__call *call),
                        void *arg, int64_t deadline, int (*decide)(void *arg)) {
  rlock__lfan *g = rlock__lfan_new(n);
  if (g == NULL) {
    rlock__lfan_fail(out, n, rlock__err(RLOCK_ENOMEM, "out of memory"));
    return;
  }
  for (size_t i = 0; i < n; i++) {
    rlock__call *call = rlock__lfan_call(g, i, locks[i]);
    if (call != NULL)
      build(arg, i, call);
  }
  rlock__lfan_run(g, out, deadline, decide, arg);
}

static int taken(const rlock__fan *f) {
  return f->done && f->rc == RLOCK_OK && f->reply->type == RLOCK__R_NIL;
}

/* The round's early stop (rlock__redlock_out_of_reach). */
static int decide(void *arg) {
  rlock__round *rd = arg;
  size_t no = 0;
  for (size_t i = 0; i < rd->r->n; i++)
    no += rd->fan[i].done && !taken(&rd->fan[i]);
  return rlock__redlock_out_of_reach(rd->r, no);
}

/* Member i's attempt, with the round's lease (rd->lease_min holds the
 * caller's lease meanwhile). */
static void build_attempt(void *arg, size_t i, rlock__call *call) {
  rlock__round *rd = arg;
  rlock_lock *l = rd->r->members[i];
  l->kind->attempt(l, rd->owner[i],
                   rlock__redlock_member_lease(rd->r, i, rd->lease_min), 0,
                   call);
  call->sync = 0; /* independent masters: no WAIT (ARCHITECTURE.md) */
}

/* Send the acquire script to every member at once and collect every
 * answer until the member timeout (sooner only once the quorum is out of
 * reach). Free the replies with round_free(). */
static void redlock_round(rlock__round *rd, int64_t lease) {
  rlock_redlock *r = rd->r;
  int64_t lease_min = rlock__redlock_lease_min(r, lease);
  for (size_t i = 0; i < r->n; i++)
    rlock__owner_as(r->members[i]->client, rd->owner_number, rd->owner[i]);
  rd->lease_min = lease; /* for build_attempt */
  rd->started = rlock__now_us();
  rd->node_timeout_ms = rlock__redlock_node_timeout_ms(r, lease_min);
  fan_members(r->members, r->n, rd->fan, build_attempt, rd,
              rd->started + rd->node_timeout_ms * 1000, decide);
  rd->lease_min = lease_min;
  rd->validity = rlock__redlock_validity(rd->lease_min, rd->started);
  rd->taken = 0;
  for (size_t i = 0; i < r->n; i++)
    rd->taken += taken(&rd->fan[i]);
}

static void round_free(rlock__round *rd) {
  for (size_t i = 0; i < rd->r->n; i++)
    if (rd->fan[i].done && rd->fan[i].rc == RLOCK_OK)
      rlock__reply_free(rd->fan[i].reply);
}

/* Status and message of member i after a round. */
static int member_status(const rlock__fan *f, char *msg, size_t size,
                         const rlock_lock *l) {
  if (f->rc == RLOCK__EABANDONED) {
    snprintf(msg, size, "not waited for: the quorum was out of reach");
    return RLOCK_ETIMEOUT;
  }
  if (f->rc != RLOCK_OK) {
    snprintf(msg, size, "%s", f->error);
    return f->rc;
  }
  int64_t ttl = -1;
  int rc = rlock__attempt_result(l, f->reply, &ttl);
  if (rc == RLOCK_ELOCKED)
    snprintf(msg, size,
             "lock '%s' is held by another owner (remaining lease "
             "%lld ms)",
             l->name, (long long)ttl);
  else if (rc != RLOCK_OK)
    snprintf(msg, size, "%s", rlock_error_last()->message);
  else
    msg[0] = '\0';
  return rc;
}

static void fill_result(rlock_redlock_result *res, const rlock__round *rd,
                        int ok) {
  res->n = rd->r->n;
  res->validity_ms = ok ? rd->validity : 0;
  for (size_t i = 0; i < res->n; i++)
    res->status[i] = member_status(&rd->fan[i], res->message[i],
                                   sizeof res->message[i], rd->r->members[i]);
}

/* The members one release concerns, and what is known of each. */
typedef struct release_set {
  size_t n;
  size_t idx[RLOCK_MAX_REDLOCK_MEMBERS]; /* member indexes */
  int state[RLOCK_MAX_REDLOCK_MEMBERS];  /* rlock__hold_pop's answer */
  char owner[RLOCK_MAX_REDLOCK_MEMBERS][RLOCK_OWNER_MAX];
  int64_t keep_ms[RLOCK_MAX_REDLOCK_MEMBERS];
  rlock_lock *locks[RLOCK_MAX_REDLOCK_MEMBERS];
  rlock__fan fan[RLOCK_MAX_REDLOCK_MEMBERS];
} release_set;

/* Prepare the release of `owner`'s hold of member i: with `recorded`, pop
 * its record first (renewal must stop before the release is sent). */
static void release_prepare(release_set *s, rlock_redlock *r, size_t i,
                            int recorded, uint64_t owner) {
  size_t k = s->n++;
  rlock_lock *l = r->members[i];
  int64_t keep_ms = l->client->cfg.watchdog_timeout_ms;
  s->idx[k] = i;
  s->state[k] = RLOCK__HOLD_NONE;
  rlock__owner_as(l->client, owner, s->owner[k]);
  if (recorded)
    rlock__hold_pop(l->client, l->name, s->owner[k], &s->state[k], &keep_ms);
  s->keep_ms[k] = keep_ms;
  s->locks[k] = l;
}

static void build_release(void *arg, size_t k, rlock__call *call) {
  release_set *s = arg;
  rlock_lock *l = s->locks[k];
  l->kind->release(l, s->owner[k], s->keep_ms[k], &rlock__no_latch, call);
  call->sync = 0; /* independent masters: no WAIT (ARCHITECTURE.md) */
}

/* Whether member k of a release was held by the owner: recorded, or
 * released by its server (what rlock__release_result counts as OK). */
static int was_held(const release_set *s, size_t k) {
  const rlock__fan *f = &s->fan[k];
  return s->state[k] != RLOCK__HOLD_NONE ||
         (f->rc == RLOCK_OK && f->reply->type == RLOCK__R_INT &&
          f->reply->integer != 2);
}

/* Release members in parallel, waiting until `deadline`: those in `which`
 * (NULL: all). With `recorded`, a hold this thread recorded that is gone
 * means lost; nil answers from members never taken are ignored, and when
 * no member was held at all the release is RLOCK_ENOTHELD (as a lock's
 * and a MultiLock's). */
static int release_members(rlock_redlock *r, uint64_t owner, int recorded,
                           const int *which, int64_t deadline) {
  release_set *s = rlock__calloc(1, sizeof *s);
  if (s == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  for (size_t i = 0; i < r->n; i++)
    if (which == NULL || which[i])
      release_prepare(s, r, i, recorded, owner);
  fan_members(s->locks, s->n, s->fan, build_release, s, deadline, NULL);
  int rc = RLOCK_OK, held = 0;
  for (size_t k = 0; k < s->n; k++) {
    size_t i = s->idx[k];
    rlock_lock *l = r->members[i];
    rlock__fan *f = &s->fan[k];
    held |= was_held(s, k);
    int gone = f->rc == RLOCK_OK && f->reply->type == RLOCK__R_NIL;
    if (f->rc == RLOCK_OK && f->reply->type == RLOCK__R_INT &&
        f->reply->integer == 1) /* our last hold of it went */
      rlock__hold_forget(l->client, l->name, s->owner[k]);
    if (s->state[k] != RLOCK__HOLD_NONE && rc == RLOCK_OK &&
        (gone || f->rc != RLOCK_OK))
      rc = gone ? rlock__err(RLOCK_ELOST,
                             "RedLock member %zu ('%s') was "
                             "lost before release",
                             i, l->name)
                : rlock__err(f->rc, "RedLock member %zu: %s", i, f->error);
    if (f->rc == RLOCK_OK)
      rlock__reply_free(f->reply);
  }
  free(s);
  if (rc == RLOCK_OK && recorded && !held)
    rc = rlock__err(RLOCK_ENOTHELD,
                    "RedLock is not held by this owner on any member");
  return rc;
}

/* Record the holds of a successful round for release and renewal: every
 * member taken, beyond the quorum too, on its own client (whose watchdog
 * renews it with RLOCK_LEASE_WATCHDOG). */
static int record(rlock__round *rd, int64_t lease) {
  for (size_t i = 0; i < rd->r->n; i++) {
    rlock_lock *l = rd->r->members[i];
    if (taken(&rd->fan[i]) &&
        rlock__acquired_record(l, rd->owner[i], lease, rd->started,
                               rd->owner_number) != RLOCK_OK)
      return RLOCK_ENOMEM;
  }
  return RLOCK_OK;
}

/* Members a failed round must release: those it took, and those whose
 * outcome is unknown (no answer, or a broken connection: the script may
 * have run). A member that answered "held by another" is left alone, so a
 * re-entrant hold of ours elsewhere is never decremented by mistake. */
static void to_release(const rlock__round *rd, int *which) {
  for (size_t i = 0; i < rd->r->n; i++) {
    const rlock__fan *f = &rd->fan[i];
    which[i] =
        !(f->done && f->rc == RLOCK_OK && f->reply->type == RLOCK__R_INT);
  }
}

/* One round: OK (held and recorded) or a failure status, with the round's
 * holds released. */
static int one_round(rlock__round *rd, int64_t lease,
                     rlock_redlock_result *res) {
  int which[RLOCK_MAX_REDLOCK_MEMBERS];
  redlock_round(rd, lease);
  int ok = rlock__redlock_held(rd->r, rd->taken, rd->validity);
  fill_result(res, rd, ok);
  to_release(rd, which);
  int rc = ok ? record(rd, lease)
              : rlock__redlock_miss(rd->r, res, rd->taken, rd->validity);
  round_free(rd);
  if (rc != RLOCK_OK) {
    rlock__saved_error saved;
    rlock__error_save(&saved);
    /* Best effort, bounded like the round, or by the margin once the
     * caller's wait has ended or was canceled: each give-back is sent,
     * whether it is waited for or not, behind its member's attempt on
     * that member's connection, so one the server has not answered yet
     * still runs after it. (ok: recording ran out of memory.) */
    int64_t until = rlock__bound_reached()
                        ? rlock__cleanup_bound()
                        : rlock__now_us() + rd->node_timeout_ms * 1000;
    rlock__bound was = rlock__bound_extend(rlock__cleanup_bound());
    release_members(rd->r, rd->owner_number, ok, which, until);
    rlock__bound_restore(was);
    rlock__error_restore(&saved);
  }
  return rc;
}

/* Rounds until held, the wait runs out, or the cancel token fires. */
static int acquire_rounds(rlock_redlock *r, const rlock_acquire_options *o,
                          rlock_redlock_result *res) {
  rlock__round *rd = rlock__calloc(1, sizeof *rd);
  if (rd == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  rd->r = r;
  rd->owner_number = o->owner;
  int64_t deadline = rlock__deadline_after_ms(o->wait_ms);
  uint64_t seed = (uint64_t)rlock__now_us() ^ rlock__thread_id();
  int rc;
  while ((rc = rlock__canceled(o->cancel)
                   ? rlock__err(RLOCK_ECANCELED, "wait canceled")
                   : one_round(rd, o->lease_ms, res)) != RLOCK_ECANCELED &&
         rlock__redlock_retry(rc, rlock__canceled(o->cancel), o->wait_ms,
                              deadline)) {
    int64_t at = rlock__redlock_next_round(&seed, deadline);
    rlock__bound_sleep_ms((at - rlock__now_us() + 999) / 1000);
  }
  free(rd);
  if (rc != RLOCK_OK && rc != RLOCK_ECANCELED && rlock__canceled(o->cancel))
    rc = rlock__err(RLOCK_ECANCELED, "wait canceled");
  return rc;
}

int rlock_redlock_acquire_opts(rlock_redlock_result **result, rlock_redlock *r,
                               const rlock_acquire_options *opts) {
  if (result != NULL)
    *result = NULL;
  if (r == NULL)
    return rlock__err(RLOCK_EINVAL, "RedLock is NULL");
  rlock_acquire_options o;
  int rc = rlock__options(&o, opts);
  if (rc != RLOCK_OK ||
      (rc = rlock__blocking_check_all(r->members, r->n)) != RLOCK_OK)
    return rc;
  if (o.token != NULL)
    return rlock__err(RLOCK_EINVAL, "a RedLock issues no fencing token");
  rlock_redlock_result *res = rlock__calloc(1, sizeof *res);
  if (res == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  rlock_client *c = r->members[0]->client;
  int64_t start = rlock__now_us();
  rlock__bound was =
      rlock__bound_enter(rlock__wait_bound(c, o.wait_ms), o.cancel);
  rc = acquire_rounds(r, &o, res);
  rlock__obs_acquire_end(&c->obs.kinds[RLOCK__MK_REDLOCK], rc, 0, start, 0);
  rlock__bound_restore(was);
  if (result != NULL)
    *result = res;
  else
    free(res);
  return rc;
}

int rlock_redlock_try_acquire_cancel(rlock_redlock_result **result,
                                     rlock_redlock *r, int64_t wait_ms,
                                     int64_t lease_ms, rlock_cancel *cancel) {
  rlock_acquire_options o = rlock__options_with(wait_ms, lease_ms, cancel);
  return rlock_redlock_acquire_opts(result, r, &o);
}

int rlock_redlock_try_acquire(rlock_redlock_result **result, rlock_redlock *r,
                              int64_t wait_ms, int64_t lease_ms) {
  return rlock_redlock_try_acquire_cancel(result, r, wait_ms, lease_ms, NULL);
}

int rlock_redlock_release(rlock_redlock *r) {
  return rlock_redlock_release_owner(r, RLOCK_OWNER_THREAD);
}

int rlock_redlock_release_owner(rlock_redlock *r, uint64_t owner) {
  if (r == NULL)
    return rlock__err(RLOCK_EINVAL, "RedLock is NULL");
  int rc = rlock__blocking_check_all(r->members, r->n); /* before any hold */
  if (rc != RLOCK_OK)
    return rc;
  return release_members(
      r, owner, 1, NULL,
      rlock__deadline_after_ms(r->members[0]->client->cfg.command_timeout_ms));
}

int64_t rlock_redlock_result_validity_ms(const rlock_redlock_result *res) {
  return res ? res->validity_ms : 0;
}

size_t rlock_redlock_result_count(const rlock_redlock_result *res) {
  return res ? res->n : 0;
}

int rlock_redlock_result_status(const rlock_redlock_result *res, size_t i) {
  return res && i < res->n ? res->status[i] : RLOCK_EINVAL;
}

const char *rlock_redlock_result_message(const rlock_redlock_result *res,
                                         size_t i) {
  return res && i < res->n ? res->message[i] : "";
}

void rlock_redlock_result_free(rlock_redlock_result *res) { free(res); }
