/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: RedLock over 3 and 5 independent redis-servers. The cases
 * written once run once per driver (drivers.h): a RedLock over blocking
 * clients (rlock_redlock_acquire_opts, _release_owner) and one over loop
 * clients on libuv and on libevent (rlock_redlock_acquire_async_result,
 * _release_async). The blocking RedLock's own cases: rounds slowed by
 * frozen and unreachable members, renewals and a restarted member, an
 * explicit owner across threads, the constructor's refusals, a round
 * canceled while members are frozen. The loop
 * RedLock's own: each member's outcome of a release, cancels (on the loop
 * and off it), a member's client freed with an acquisition pending, the
 * async calls' refusals.
 */
#include "drivers.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAXS 5

typedef struct cluster {
  int n;
  rt_server *srv[MAXS];
  rlock_client *c[MAXS];
  rlock_lock *l[MAXS];
  rlock_redlock *r;
} cluster;

/* n servers, a client of the running driver on each, a RedLock over a
 * lock `name` of each. */
static void up(cluster *k, int n, const char *name, int64_t watchdog) {
  k->n = n;
  for (int i = 0; i < n; i++) {
    k->srv[i] = rt_server_start(NULL);
    k->c[i] = dk_client(rt_server_url(k->srv[i]), watchdog, NULL, NULL);
    k->l[i] = fx_lock(k->c[i], name);
  }
  OK(rlock_redlock_new(&k->r, k->l, (size_t)n));
}

/* Free what is left (a client already freed is NULL). A blocking
 * client's locks go before it; a loop client goes before its locks,
 * since a member's canceled attempt may still be pending (freeing its
 * client completes it; it reads its lock). */
static void down(cluster *k) {
  rlock_redlock_free(k->r);
  for (int i = 0; i < k->n; i++) {
    if (dk_loop() && k->c[i] != NULL)
      dk_free(k->c[i]);
    rlock_lock_free(k->l[i]);
    if (!dk_loop())
      dk_free(k->c[i]);
    rt_server_free(k->srv[i]);
  }
}

static void hold_foreign(rt_server *s, const char *name) {
  freeReplyObject(
      rt_cmd(s, "HSET %s 00000000-0000-4000-8000-000000000000:1 1", name));
  freeReplyObject(rt_cmd(s, "PEXPIRE %s 60000", name));
}

/* The hold count of `owner` on member i, as its server stores it (-1:
 * none). */
static long long held(cluster *k, int i, const char *name, uint64_t owner) {
  char field[RLOCK_OWNER_MAX];
  dk_field(k->c[i], owner, field);
  return fx_hget(k->srv[i], name, field);
}

/* ---- the RedLock's calls, on either driver ------------------------------- */

/* An acquisition's or a release's outcome, with each member's. */
typedef struct outcome {
  atomic_int done;
  int rc;
  int64_t validity;
  rlock_redlock_result *res;
  char msg[256];
  /* a blocking call in the background */
  rlock_redlock *r;
  rlock_acquire_options o;
  pthread_t thread;
} outcome;

static void on_result(void *arg, int rc, int64_t validity,
                      rlock_redlock_result *res) {
  outcome *o = arg;
  o->rc = rc;
  o->validity = validity;
  o->res = res;
  snprintf(o->msg, sizeof o->msg, "%s",
           rc == RLOCK_OK ? "" : rlock_error_last()->message);
  atomic_fetch_add(&o->done, 1);
}

static void *acquire_main(void *arg) {
  outcome *o = arg;
  rlock_redlock_result *res = NULL;
  int rc = rlock_redlock_acquire_opts(&res, o->r, &o->o);
  on_result(o, rc, rlock_redlock_result_validity_ms(res), res);
  return NULL;
}

/* Start acquiring for `owner` (explicit), answered later: on a thread of
 * its own (blocking) or on the loop. */
static void acquire_start(outcome *out, cluster *k, uint64_t owner,
                          int64_t wait, int64_t lease) {
  *out = (outcome){.r = k->r, .o = opts(owner, wait, lease)};
  if (dk_loop()) {
    OK(rlock_redlock_acquire_async_result(k->r, &out->o, on_result, out, NULL));
    assert_int_equal(atomic_load(&out->done), 0); /* never from inside */
  } else {
    assert_int_equal(pthread_create(&out->thread, NULL, acquire_main, out), 0);
  }
}

static bool pred_outcome(void *arg, char *why, size_t cap) {
  snprintf(why, cap, "no outcome yet");
  return atomic_load(&((outcome *)arg)->done) > 0;
}

/* Wait for an outcome started with acquire_start; its status. */
static int outcome_wait(outcome *out, int64_t ms, const char *what) {
  dk_wait(pred_outcome, out, ms + (out->o.wait_ms > 0 ? out->o.wait_ms : 0),
          what);
  if (!dk_loop())
    pthread_join(out->thread, NULL);
  assert_non_null(out->res);
  if (out->rc != RLOCK_OK)
    rlock_loop_error(out->rc, out->msg); /* for RC()'s message */
  return out->rc;
}

/* Acquire for `owner` (RLOCK_OWNER_THREAD: the blocking caller's
 * thread); its status, each member's in *res (if given: free it with
 * rlock_redlock_result_free) and the validity in *validity. */
static int rl_acquire(cluster *k, uint64_t owner, int64_t wait, int64_t lease,
                      int64_t *validity, rlock_redlock_result **res) {
  outcome out = {0};
  if (dk_loop()) {
    acquire_start(&out, k, owner, wait, lease);
    outcome_wait(&out, 5000, "a RedLock acquisition");
  } else {
    rlock_acquire_options o = opts(owner, wait, lease);
    out.rc = rlock_redlock_acquire_opts(&out.res, k->r, &o);
    out.validity = rlock_redlock_result_validity_ms(out.res);
    snprintf(out.msg, sizeof out.msg, "%s",
             out.rc == RLOCK_OK ? "" : rlock_error_last()->message);
  }
  assert_int_equal(rlock_redlock_result_count(out.res), (size_t)k->n);
  assert_int_equal(rlock_redlock_result_validity_ms(out.res), out.validity);
  if (validity != NULL)
    *validity = out.validity;
  if (res != NULL)
    *res = out.res;
  else
    rlock_redlock_result_free(out.res);
  if (out.rc != RLOCK_OK)
    rlock_loop_error(out.rc, out.msg);
  return out.rc;
}

static int rl_release(cluster *k, uint64_t owner) {
  if (!dk_loop())
    return rlock_redlock_release_owner(k->r, owner);
  result r = {0};
  OK(rlock_redlock_release_async(k->r, owner, on_done, &r));
  run_until(&r.done, 1, 5000, "a RedLock release");
  if (r.rc != RLOCK_OK)
    rlock_loop_error(r.rc, r.msg);
  return r.rc;
}

/* Run a loop meanwhile until `name` is gone from server s (a member's
 * client giving back a grant on its own). */
static bool pred_gone(void *arg, char *why, size_t cap) {
  const char *const *w = arg;
  snprintf(why, cap, "%s is still held on its server", w[1]);
  return rt_cmd_int((rt_server *)(uintptr_t)w[0], "EXISTS %s", w[1]) == 0;
}

static void wait_gone(rt_server *s, const char *name) {
  const char *w[2] = {(const char *)(uintptr_t)s, name};
  dk_wait(pred_gone, w, 5000, "a member's key to go");
}

/* ---- on every driver ------------------------------------------------------
 */

static void test_all_members(void **state) {
  (void)state;
  cluster k;
  up(&k, 3, "rl:all", 0);
  uint64_t a = dk_me(), b = rlock_owner_new();
  rlock_redlock_result *res;
  int64_t validity;
  OK(rl_acquire(&k, a, 0, 10000, &validity, &res));
  ASSERT_RANGE(validity, 9000, 10000 - 102);
  /* Every member is taken, not just the first quorum to answer. */
  for (int i = 0; i < 3; i++) {
    OK(rlock_redlock_result_status(res, i));
    assert_string_equal(rlock_redlock_result_message(res, i), "");
    assert_int_equal(held(&k, i, "rl:all", a), 1);
    ASSERT_RANGE(rt_cmd_int(k.srv[i], "PTTL rl:all"), 9000, 10000);
    OK(rlock_lock_check_owner(k.l[i], a)); /* recorded on its own client */
  }
  rlock_redlock_result_free(res);
  RC(rl_acquire(&k, b, 0, 10000, NULL, NULL), RLOCK_ELOCKED);
  RC(rl_acquire(&k, b, 200, 10000, NULL, NULL), RLOCK_ELOCKED); /* rounds
                                                                    retried */
  for (int i = 0; i < 3; i++)
    assert_int_equal(held(&k, i, "rl:all", b), -1);
  OK(rl_acquire(&k, a, 0, 10000, NULL, NULL)); /* reentrant on every member */
  assert_int_equal(held(&k, 1, "rl:all", a), 2);
  OK(rl_release(&k, a));
  OK(rl_release(&k, a));
  for (int i = 0; i < 3; i++)
    assert_int_equal(rt_cmd_int(k.srv[i], "EXISTS rl:all"), 0);
  RC(rl_release(&k, a), RLOCK_ENOTHELD); /* nothing held now */
  assert_non_null(strstr(rlock_error_last()->message, "not held"));
  /* Watchdog lease: the members' clients renew; validity from it. */
  OK(rl_acquire(&k, b, 0, RLOCK_LEASE_WATCHDOG, &validity, NULL));
  ASSERT_RANGE(validity, 20000, 30000);
  OK(rlock_lock_check_owner(k.l[2], b));
  if (dk_loop()) {
    /* The blocking release refuses loop clients before touching any
     * member's hold record: every member stays recorded (and renewed). */
    RC(rlock_redlock_release_owner(k.r, b), RLOCK_EINVAL);
    assert_non_null(strstr(rlock_error_last()->message, "event loop"));
    for (int i = 0; i < 3; i++)
      OK(rlock_lock_check_owner(k.l[i], b));
  }
  OK(rl_release(&k, b));
  down(&k);
}

static void test_minority_down_still_acquires(void **state) {
  (void)state;
  cluster k;
  up(&k, 5, "rl:minority", 0);
  rt_server_stop(k.srv[1]);
  rt_server_stop(k.srv[3]);
  uint64_t a = dk_me();
  rlock_redlock_result *res;
  int64_t validity;
  OK(rl_acquire(&k, a, 0, 10000, &validity, &res));
  assert_true(validity > 0);
  assert_true(validity <= 10000);
  for (int i = 0; i < 5; i += 2) {
    OK(rlock_redlock_result_status(res, i));
    assert_int_equal(held(&k, i, "rl:minority", a), 1);
  }
  assert_int_equal(rlock_redlock_result_status(res, 1) == RLOCK_OK, 0);
  assert_int_equal(rlock_redlock_result_status(res, 3) == RLOCK_OK, 0);
  assert_true(strlen(rlock_redlock_result_message(res, 1)) > 0);
  rlock_redlock_result_free(res);
  OK(rl_release(&k, a)); /* members never taken are ignored */
  for (int i = 0; i < 5; i += 2)
    assert_int_equal(rt_cmd_int(k.srv[i], "EXISTS rl:minority"), 0);
  down(&k);
}

static void test_majority_down_fails_cleanly(void **state) {
  (void)state;
  cluster k;
  up(&k, 3, "rl:majority", 0);
  rt_server_stop(k.srv[0]);
  rt_server_stop(k.srv[2]);
  uint64_t a = dk_me();
  rlock_redlock_result *res;
  int64_t validity, t0 = rt_now_ms();
  int rc = rl_acquire(&k, a, 500, 10000, &validity, &res);
  int64_t took = rt_now_ms() - t0;
  assert_int_equal(rc, RLOCK_EIO);
  ASSERT_BETWEEN(took, 500, 1500);
  assert_non_null(strstr(rlock_error_last()->message, "quorum"));
  assert_int_equal(validity, 0);
  assert_int_equal(rlock_redlock_result_status(res, 0), RLOCK_EIO);
  rlock_redlock_result_free(res);
  /* The live member's grant is given back: by the blocking call before it
   * returns; by a loop member's client on its own when the round was
   * decided without waiting for it. */
  if (!dk_loop())
    assert_int_equal(rt_cmd_int(k.srv[1], "EXISTS rl:majority"), 0);
  wait_gone(k.srv[1], "rl:majority");
  /* Waiting for ever does not hang on an outage either. */
  t0 = rt_now_ms();
  RC(rl_acquire(&k, a, RLOCK_WAIT_FOREVER, 10000, NULL, NULL), RLOCK_EIO);
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 1500);
  down(&k);
}

/* A majority held by someone else: no round reaches the quorum, and
 * what the free member granted is given back; a wait goes on until the
 * others let go. */
static void test_majority_held_elsewhere(void **state) {
  (void)state;
  cluster k;
  up(&k, 3, "rl:held", 0);
  hold_foreign(k.srv[0], "rl:held");
  hold_foreign(k.srv[1], "rl:held");
  uint64_t a = dk_me(), b = rlock_owner_new();
  int64_t t0 = rt_now_ms();
  RC(rl_acquire(&k, a, 300, 10000, NULL, NULL), RLOCK_ELOCKED);
  ASSERT_BETWEEN(rt_now_ms() - t0, 300, 1500);
  /* The failure names a member that refused, on both drivers. */
  if (strstr(rlock_error_last()->message,
             "member 0: lock 'rl:held' is held by another owner") == NULL)
    fail_msg("message: %s", rlock_error_last()->message);
  if (!dk_loop()) /* given back before the call returns */
    assert_int_equal(rt_cmd_int(k.srv[2], "EXISTS rl:held"), 0);
  RC(rl_acquire(&k, a, 0, 10000, NULL, NULL), RLOCK_ELOCKED);
  /* Member 2 may not have been waited for once two had refused: its
   * client gives back a late grant on its own. */
  wait_gone(k.srv[2], "rl:held");
  /* With one holder gone the quorum is back. */
  freeReplyObject(rt_cmd(k.srv[1], "DEL rl:held"));
  OK(rl_acquire(&k, a, 300, 10000, NULL, NULL));
  OK(rl_release(&k, a));
  assert_int_equal(
      fx_hget(k.srv[0], "rl:held", "00000000-0000-4000-8000-000000000000:1"),
      1);
  /* Waiting: the rounds go on until the others let go. */
  hold_foreign(k.srv[1], "rl:held");
  outcome w;
  acquire_start(&w, &k, b, 10000, 10000);
  dk_let_time_pass(20);
  assert_int_equal(atomic_load(&w.done), 0);
  assert_int_equal(rt_cmd_int(k.srv[0], "DEL rl:held"), 1);
  assert_int_equal(rt_cmd_int(k.srv[1], "DEL rl:held"), 1);
  OK(outcome_wait(&w, 10000, "the RedLock after the others let go"));
  rlock_redlock_result_free(w.res);
  for (int i = 0; i < 3; i++)
    assert_int_equal(held(&k, i, "rl:held", b), 1);
  OK(rl_release(&k, b));
  down(&k);
}

/* ---- the blocking RedLock's own -------------------------------------------
 */

static void test_waits_for_all_decides_early_on_refusals(void **state) {
  (void)state;
  cluster k;
  up(&k, 5, "rl:early", 0);
  rt_server_freeze(k.srv[0]); /* answers nothing */
  rt_server_freeze(k.srv[1]);
  /* Quorum (3) from the three live servers, but the round waits for the
   * frozen ones up to the member timeout (5% of 20 s: 1 s), which the
   * validity pays for. */
  int64_t t0 = rt_now_ms();
  rlock_redlock_result *res;
  OK(rlock_redlock_try_acquire(&res, k.r, 0, 20000));
  ASSERT_BETWEEN(rt_now_ms() - t0, 1000, 1500);
  assert_int_equal(rlock_redlock_result_status(res, 0), RLOCK_ETIMEOUT);
  assert_int_equal(rlock_redlock_result_status(res, 1), RLOCK_ETIMEOUT);
  for (int i = 2; i < 5; i++)
    OK(rlock_redlock_result_status(res, i));
  ASSERT_RANGE(rlock_redlock_result_validity_ms(res), 1, 20000 - 1000 - 202);
  rlock_redlock_result_free(res);
  rt_server_thaw(k.srv[0]);
  rt_server_thaw(k.srv[1]);
  OK(rlock_redlock_release(k.r));
  /* Impossible once 3 of 5 refuse: decided without the frozen two; the
   * clean-up after the failed round waits at most the member timeout
   * (100 ms for a 2 s lease). */
  for (int i = 2; i < 5; i++)
    hold_foreign(k.srv[i], "rl:early");
  rt_server_freeze(k.srv[0]);
  rt_server_freeze(k.srv[1]);
  t0 = rt_now_ms();
  RC(rlock_redlock_try_acquire(NULL, k.r, 0, 2000), RLOCK_ELOCKED);
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 300);
  rt_server_thaw(k.srv[0]);
  rt_server_thaw(k.srv[1]);
  down(&k);
}

/* Thaws a frozen member `ms` after the round is seen to have begun: once
 * `key` exists on a quick member's server `watch`, so the round has been
 * slowed by at least `ms` when the frozen member answers. */
typedef struct thawer {
  rt_server *s;
  int ms;
  rt_server *watch;
  const char *key;
} thawer;

static void *thaw_later(void *arg) {
  thawer *t = arg;
  int64_t give_up = rt_now_ms() + rt_scaled_ms(5000);
  while (rt_cmd_int(t->watch, "EXISTS %s", t->key) == 0 &&
         rt_now_ms() < give_up)
    rt_sleep_ms(1);
  rt_sleep_ms(t->ms);
  rt_server_thaw(t->s);
  return NULL;
}

static void test_slow_member_eats_validity(void **state) {
  (void)state;
  cluster k;
  up(&k, 3, "rl:slow", 0);
  hold_foreign(k.srv[0], "rl:slow"); /* so the slow one is needed */
  rt_server_freeze(k.srv[2]);
  thawer th = {k.srv[2], 120, k.srv[1], "rl:slow"};
  pthread_t t;
  pthread_create(&t, NULL, thaw_later, &th);
  rlock_redlock_result *res;
  OK(rlock_redlock_try_acquire(&res, k.r, 0, 8000)); /* node timeout 400 */
  pthread_join(t, NULL);
  int64_t v = rlock_redlock_result_validity_ms(res);
  /* lease - >= 120 ms spent - drift (80 + 2) */
  ASSERT_RANGE(v, 1, 8000 - 120 - 82);
  rlock_redlock_result_free(res);
  OK(rlock_redlock_release(k.r));
  down(&k);
}

/* PTTL of every member, watched until each has gone back up (been
 * renewed) at least once after `after_ms` (rt_now_ms). */
typedef struct renewals {
  cluster *k;
  const char *name;
  int skip; /* a member not watched, or -1 */
  int64_t after_ms;
  long long last[MAXS];
  int renewed[MAXS];
} renewals;

static bool pred_renewed(void *arg, char *why, size_t cap) {
  renewals *w = arg;
  bool all = true;
  int64_t now = rt_now_ms();
  size_t at = 0;
  why[0] = '\0';
  for (int i = 0; i < w->k->n; i++) {
    if (i == w->skip)
      continue;
    long long ttl = rt_cmd_int(w->k->srv[i], "PTTL %s", w->name);
    if (ttl < 0)
      fail_msg("member %d: '%s' is gone (PTTL %lld)", i, w->name, ttl);
    if (w->last[i] > 0 && ttl > w->last[i] && now > w->after_ms)
      w->renewed[i] = 1;
    w->last[i] = ttl;
    all = all && w->renewed[i];
    if (at < cap) {
      int n = snprintf(why + at, cap - at, "%smember %d PTTL %lld%s",
                       at ? ", " : "", i, ttl, w->renewed[i] ? " renewed" : "");
      at += n > 0 ? (size_t)n : 0;
    }
  }
  return all;
}

static void wait_renewed(cluster *k, const char *name, int skip,
                         int64_t after_ms) {
  renewals w = {.k = k, .name = name, .skip = skip, .after_ms = after_ms};
  rt_wait_until(pred_renewed, &w, rt_scaled_ms(after_ms - rt_now_ms() + 3000),
                "every member's renewal");
}

/* Five servers: one held elsewhere, one slow to answer (frozen, thawed
 * well within the member timeout). The three quick free members make the
 * quorum, and the slow one is taken as well. */
static void test_free_members_all_taken(void **state) {
  (void)state;
  cluster k;
  up(&k, 5, "rl:allfree", 0);
  hold_foreign(k.srv[4], "rl:allfree");
  rt_server_freeze(k.srv[0]);
  thawer th = {k.srv[0], 100, k.srv[1], "rl:allfree"};
  pthread_t t;
  pthread_create(&t, NULL, thaw_later, &th);
  rlock_redlock_result *res;
  /* Member timeout: 5% of 40 s, capped by the 2 s command timeout. */
  OK(rlock_redlock_try_acquire(&res, k.r, 0, 40000));
  pthread_join(t, NULL);
  for (int i = 0; i < 4; i++) {
    OK(rlock_redlock_result_status(res, i));
    char owner[RLOCK_OWNER_MAX];
    fx_owner(k.c[i], owner);
    assert_int_equal(fx_hget(k.srv[i], "rl:allfree", owner), 1);
    OK(rlock_lock_check(k.l[i]));
  }
  assert_int_equal(rlock_redlock_result_status(res, 4), RLOCK_ELOCKED);
  assert_non_null(strstr(rlock_redlock_result_message(res, 4), "another"));
  print_message("validity %lld ms\n",
                (long long)rlock_redlock_result_validity_ms(res));
  /* lease - >= 100 ms spent - drift (400 + 2) */
  ASSERT_RANGE(rlock_redlock_result_validity_ms(res), 1, 40000 - 100 - 402);
  rlock_redlock_result_free(res);
  OK(rlock_redlock_release(k.r));
  for (int i = 0; i < 4; i++)
    assert_int_equal(rt_cmd_int(k.srv[i], "EXISTS rl:allfree"), 0);
  assert_int_equal(
      fx_hget(k.srv[4], "rl:allfree", "00000000-0000-4000-8000-000000000000:1"),
      1);
  down(&k);
}

/* With the watchdog, every member taken is renewed by its own client:
 * past more than one watchdog timeout, all of them are still held. */
static void test_watchdog_renews_every_member(void **state) {
  (void)state;
  cluster k;
  int64_t wd = rt_scaled_ms(1000); /* member timeout: 5% of it */
  up(&k, 3, "rl:renew", wd);
  rlock_redlock_result *res;
  OK(rlock_redlock_try_acquire(&res, k.r, 0, RLOCK_LEASE_WATCHDOG));
  int64_t t0 = rt_now_ms();
  for (int i = 0; i < 3; i++)
    OK(rlock_redlock_result_status(res, i));
  rlock_redlock_result_free(res);
  /* Each member's PTTL goes back up after its first lease would have run
   * out: renewed, so still there. */
  wait_renewed(&k, "rl:renew", -1, t0 + wd);
  assert_true(rt_now_ms() - t0 > wd);
  print_message("every member renewed after %lld ms\n",
                (long long)(rt_now_ms() - t0));
  for (int i = 0; i < 3; i++) {
    char owner[RLOCK_OWNER_MAX];
    fx_owner(k.c[i], owner);
    assert_int_equal(fx_hget(k.srv[i], "rl:renew", owner), 1);
    OK(rlock_lock_check(k.l[i]));
  }
  OK(rlock_redlock_release(k.r));
  for (int i = 0; i < 3; i++)
    assert_int_equal(rt_cmd_int(k.srv[i], "EXISTS rl:renew"), 0);
  down(&k);
}

static bool pred_lost(void *arg, char *why, size_t cap) {
  rlock_lock *l = arg;
  int rc = rlock_lock_check(l);
  snprintf(why, cap, "rlock_lock_check says %d", rc);
  return rc == RLOCK_ELOST;
}

/* A member lost later (its server restarted without persistence) is found
 * gone by its watchdog; the two others, both taken and renewed, still make
 * the quorum. */
static void test_restart_while_held(void **state) {
  (void)state;
  cluster k;
  /* Scaled: the first round's member timeout (5% of the watchdog
   * timeout) covers connecting, slow under valgrind. */
  int64_t wd = rt_scaled_ms(600);
  up(&k, 3, "rl:restart", wd);
  rlock_redlock_result *res;
  OK(rlock_redlock_try_acquire(&res, k.r, 0, RLOCK_LEASE_WATCHDOG));
  for (int i = 0; i < 3; i++)
    OK(rlock_redlock_result_status(res, i));
  rlock_redlock_result_free(res);
  rt_server_restart(k.srv[0]); /* that member's hold is gone */
  rt_wait_until(pred_lost, k.l[0], rt_scaled_ms(5000),
                "the restarted member to be found lost");
  /* The others are renewed meanwhile, past their first lease. */
  wait_renewed(&k, "rl:restart", 0, rt_now_ms() + wd);
  for (int i = 1; i < 3; i++) {
    assert_int_equal(rt_cmd_int(k.srv[i], "EXISTS rl:restart"), 1);
    OK(rlock_lock_check(k.l[i]));
  }
  assert_int_equal(rt_cmd_int(k.srv[0], "EXISTS rl:restart"), 0);
  RC(rlock_redlock_release(k.r), RLOCK_ELOST);
  for (int i = 0; i < 3; i++)
    assert_int_equal(rt_cmd_int(k.srv[i], "EXISTS rl:restart"), 0);
  OK(rlock_redlock_try_acquire(NULL, k.r, 0, 5000)); /* usable again */
  OK(rlock_redlock_release(k.r));
  down(&k);
}

typedef struct releaser {
  rlock_redlock *r;
  uint64_t owner;
  int thread_rc; /* the thread's own-thread release: not its hold */
  int owner_rc;
} releaser;

static void *release_elsewhere(void *arg) {
  releaser *x = arg;
  x->thread_rc = rlock_redlock_release(x->r);
  x->owner_rc = rlock_redlock_release_owner(x->r, x->owner);
  return NULL;
}

/* An explicit owner takes the RedLock on this thread; another thread
 * releases it by that owner. Options the RedLock refuses: a token. */
static void test_explicit_owner_across_threads(void **state) {
  (void)state;
  cluster k;
  up(&k, 3, "rl:owner", 0);
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.owner = rlock_owner_new();
  o.wait_ms = 0;
  o.lease_ms = 20000;
  OK(rlock_redlock_acquire_opts(NULL, k.r, &o));
  char field[RLOCK_OWNER_MAX + 32];
  for (int i = 0; i < 3; i++) {
    snprintf(field, sizeof field, "%s:%llu", rlock_client_id(k.c[i]),
             (unsigned long long)o.owner);
    assert_int_equal(fx_hget(k.srv[i], "rl:owner", field), 1);
    OK(rlock_lock_check_owner(k.l[i], o.owner));
  }
  releaser x = {k.r, o.owner, 0, 0};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, release_elsewhere, &x), 0);
  pthread_join(t, NULL);
  /* That thread took no member: nothing to release (as the async
   * release, a lock's and a MultiLock's). */
  RC(x.thread_rc, RLOCK_ENOTHELD);
  OK(x.owner_rc);
  for (int i = 0; i < 3; i++)
    assert_int_equal(rt_cmd_int(k.srv[i], "EXISTS rl:owner"), 0);
  int64_t token;
  o.token = &token;
  RC(rlock_redlock_acquire_opts(NULL, k.r, &o), RLOCK_EINVAL);
  o.token = NULL;
  o.version = 0;
  RC(rlock_redlock_acquire_opts(NULL, k.r, &o), RLOCK_EINVAL);
  for (int i = 0; i < 3; i++)
    assert_int_equal(rt_cmd_int(k.srv[i], "EXISTS rl:owner"), 0);
  down(&k);
}

static void test_bad_input(void **state) {
  (void)state;
  rt_server *s = rt_server_start(NULL);
  rlock_client *a = fx_client(s, 0), *b = fx_client(s, 0);
  rlock_lock *la = fx_lock(a, "rl:bad"), *la2 = fx_lock(a, "rl:other");
  rlock_lock *lb = fx_lock(b, "rl:bad"), *fair;
  OK(rlock_lock_new_fair(&fair, b, "rl:bad"));
  rlock_redlock *r;
  rlock_lock *same_client[2] = {la, la2}, *same_server[2] = {la, lb};
  rlock_lock *with_fair[1] = {fair}, *with_null[2] = {la, NULL};
  RC(rlock_redlock_new(&r, NULL, 0), RLOCK_EINVAL);
  RC(rlock_redlock_new(NULL, same_client, 1), RLOCK_EINVAL);
  RC(rlock_redlock_new(&r, with_null, 2), RLOCK_EINVAL);
  RC(rlock_redlock_new(&r, same_client, 2), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "same client"));
  RC(rlock_redlock_new(&r, same_server, 2), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "same server"));
  RC(rlock_redlock_new(&r, with_fair, 1), RLOCK_EINVAL);
  RC(rlock_redlock_new(&r, same_client, RLOCK_MAX_REDLOCK_MEMBERS + 1),
     RLOCK_EINVAL);
  OK(rlock_redlock_new(&r, same_client, 1));
  RC(rlock_redlock_try_acquire(NULL, r, -3, 1000), RLOCK_EINVAL);
  RC(rlock_redlock_try_acquire(NULL, r, 0, -3), RLOCK_EINVAL);
  RC(rlock_redlock_try_acquire(NULL, NULL, 0, 1000), RLOCK_EINVAL);
  RC(rlock_redlock_release(NULL), RLOCK_EINVAL);
  assert_int_equal(rlock_redlock_result_count(NULL), 0);
  rlock_redlock_result_free(NULL);
  rlock_redlock_free(r);
  rlock_redlock_free(NULL);
  rlock_lock_free(la);
  rlock_lock_free(la2);
  rlock_lock_free(lb);
  rlock_lock_free(fair);
  rlock_client_free(a);
  rlock_client_free(b);
  rt_server_free(s);
}

/* A loopback port whose connects never complete: listen(2) with the
 * smallest backlog, filled by connections nobody accepts, so the kernel
 * drops every later SYN. The fds to close (listener first) go in fds. */
static int unconnectable(int fds[3]) {
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  fds[0] = socket(AF_INET, SOCK_STREAM, 0);
  if (fds[0] < 0 || bind(fds[0], (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(fds[0], 0) != 0 ||
      getsockname(fds[0], (struct sockaddr *)&a, &len) != 0)
    fail_msg("cannot make a listening socket");
  for (int i = 1; i < 3; i++) { /* fill the accept queue */
    fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (connect(fds[i], (struct sockaddr *)&a, sizeof a) != 0 &&
        errno != EINPROGRESS)
      fail_msg("cannot fill the accept queue");
  }
  return ntohs(a.sin_port);
}

/* A member whose connect hangs until its 2 s connect timeout, listed
 * first, delays no other: its round ends at the member timeout (5% of
 * the 2 s lease: 100 ms), with the other two taken. */
static void test_unreachable_member_delays_no_other(void **state) {
  (void)state;
  int fds[3], port = unconnectable(fds);
  rt_server *s1 = rt_server_start(NULL), *s2 = rt_server_start(NULL);
  char url[64];
  snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
  rlock_client *c[3] = {fx_client_opts(url, 0, NULL, NULL), fx_client(s1, 0),
                        fx_client(s2, 0)};
  rlock_lock *l[3];
  for (int i = 0; i < 3; i++)
    l[i] = fx_lock(c[i], "rl:unreachable");
  rlock_redlock *r;
  OK(rlock_redlock_new(&r, l, 3));
  rlock_redlock_result *res;
  int64_t t0 = rt_now_ms();
  OK(rlock_redlock_try_acquire(&res, r, 0, 2000));
  int64_t took = rt_now_ms() - t0;
  print_message("round with an unconnectable first member: %lld ms\n",
                (long long)took);
  ASSERT_BETWEEN(took, 0, 100 + 400); /* not the 1000 ms connect timeout */
  RC(rlock_redlock_result_status(res, 0), RLOCK_ETIMEOUT);
  OK(rlock_redlock_result_status(res, 1));
  OK(rlock_redlock_result_status(res, 2));
  assert_true(rlock_redlock_result_validity_ms(res) > 1500);
  rlock_redlock_result_free(res);
  OK(rlock_redlock_release(r));
  assert_int_equal(rt_cmd_int(s1, "EXISTS rl:unreachable"), 0);
  rlock_redlock_free(r);
  for (int i = 0; i < 3; i++) {
    rlock_lock_free(l[i]);
    rlock_client_free(c[i]); /* waits out the connect still running */
  }
  for (int i = 0; i < 3; i++)
    close(fds[i]);
  rt_server_free(s1);
  rt_server_free(s2);
}

typedef struct firer {
  rlock_cancel *token;
  int64_t after_ms;
} firer;

static void *fire_later(void *arg) {
  firer *f = arg;
  rt_sleep_ms(f->after_ms);
  rlock_cancel_fire(f->token);
  return NULL;
}

static bool pred_all_free(void *arg, char *why, size_t cap) {
  cluster *k = arg;
  for (int i = 0; i < k->n; i++)
    if (rt_cmd_int(k->srv[i], "EXISTS rl:cancel") != 0) {
      snprintf(why, cap, "member %d still holds rl:cancel", i);
      return false;
    }
  return true;
}

/* A blocking round waiting on two frozen members (no quorum yet, member
 * timeout 2 s) ends soon after its cancel token fires. Its attempts on
 * the frozen members are abandoned, not stopped: the give-back of each
 * goes behind it on the same connection, so once the members thaw no
 * member is left held for the 60 s lease. */
static void test_cancel_blocking_round(void **state) {
  (void)state;
  cluster k;
  up(&k, 3, "rl:cancel", 0);
  rlock_cancel *token;
  OK(rlock_cancel_new(&token));
  rt_server_freeze(k.srv[1]);
  rt_server_freeze(k.srv[2]);
  firer f = {token, 150};
  pthread_t t;
  pthread_create(&t, NULL, fire_later, &f);
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = 10000;
  o.lease_ms = 60000;
  o.cancel = token;
  int64_t t0 = rt_now_ms();
  RC(rlock_redlock_acquire_opts(NULL, k.r, &o), RLOCK_ECANCELED);
  int64_t took = rt_now_ms() - t0;
  pthread_join(t, NULL);
  print_message("canceled after 150 ms; returned after %lld ms\n",
                (long long)took);
  ASSERT_BETWEEN(took, 150, 150 + 600); /* not the 2000 ms member timeout */
  rt_server_thaw(k.srv[1]);
  rt_server_thaw(k.srv[2]);
  rt_wait_until(pred_all_free, &k, rt_scaled_ms(3000),
                "every member given back");
  rlock_cancel_free(token);
  down(&k);
}

/* ---- the loop RedLock's own -----------------------------------------------
 */

static outcome acquire_result(cluster *k, uint64_t owner, int64_t wait,
                              int64_t lease) {
  outcome out;
  acquire_start(&out, k, owner, wait, lease);
  outcome_wait(&out, 5000, "a RedLock result");
  assert_int_equal(rlock_redlock_result_count(out.res), (size_t)k->n);
  return out;
}

static outcome release_result(cluster *k, uint64_t owner) {
  outcome out = {0};
  OK(rlock_redlock_release_async_result(k->r, owner, on_result, &out));
  outcome_wait(&out, 5000, "a RedLock release's result");
  assert_int_equal(rlock_redlock_result_count(out.res), (size_t)k->n);
  assert_int_equal(rlock_redlock_result_validity_ms(out.res), 0);
  return out;
}

static void expect_member(const rlock_redlock_result *res, size_t i, int rc,
                          const char *needle) {
  const char *msg = rlock_redlock_result_message(res, i);
  if (rlock_redlock_result_status(res, i) != rc ||
      (needle != NULL && strstr(msg, needle) == NULL) ||
      (rc == RLOCK_OK) != (msg[0] == '\0'))
    fail_msg("member %zu: %d '%s', expected %d '%s'", i,
             rlock_redlock_result_status(res, i), msg, rc,
             needle ? needle : "");
}

/* Each member's outcome after an async acquisition and release, as the
 * blocking RedLock's result tells it. */
static void test_results(void **state) {
  (void)state;
  cluster k;
  up(&k, 3, "lrl:res", 0);
  uint64_t a = rlock_owner_new(), b = rlock_owner_new();
  outcome o = acquire_result(&k, a, 0, 10000);
  OK(o.rc);
  assert_int_equal(rlock_redlock_result_validity_ms(o.res), o.validity);
  ASSERT_RANGE(o.validity, 9000, 10000 - 102);
  for (size_t i = 0; i < 3; i++)
    expect_member(o.res, i, RLOCK_OK, NULL);
  rlock_redlock_result_free(o.res);
  /* Held by A everywhere: B's round misses, every member says why. */
  o = acquire_result(&k, b, 0, 10000);
  RC(o.rc, RLOCK_ELOCKED);
  assert_int_equal(o.validity, 0);
  assert_int_equal(rlock_redlock_result_validity_ms(o.res), 0);
  int locked = 0;
  for (size_t i = 0; i < 3; i++) {
    int st = rlock_redlock_result_status(o.res, i);
    if (st == RLOCK_ELOCKED)
      expect_member(o.res, i, RLOCK_ELOCKED, "held by another");
    else /* the quorum was out of reach before it answered */
      expect_member(o.res, i, RLOCK_ETIMEOUT, "not waited for");
    locked += st == RLOCK_ELOCKED;
  }
  assert_true(locked >= 2);
  rlock_redlock_result_free(o.res);
  o = release_result(&k, a);
  OK(o.rc);
  for (size_t i = 0; i < 3; i++)
    expect_member(o.res, i, RLOCK_OK, NULL);
  rlock_redlock_result_free(o.res);
  o = release_result(&k, a); /* nothing held now */
  RC(o.rc, RLOCK_ENOTHELD);
  for (size_t i = 0; i < 3; i++)
    expect_member(o.res, i, RLOCK_ENOTHELD, "not held");
  rlock_redlock_result_free(o.res);
  down(&k);
}

/* A member down: the quorum is taken, that member says why not; its
 * release fails too, and does not count (it was never taken); with a
 * majority down, a transport error. A round canceled in flight: every
 * member says so. */
static void test_results_member_down(void **state) {
  (void)state;
  cluster k;
  up(&k, 3, "lrl:resdown", 0);
  uint64_t a = rlock_owner_new(), b = rlock_owner_new();
  outcome o;
  rt_server_stop(k.srv[2]);
  o = acquire_result(&k, a, 0, 10000);
  OK(o.rc);
  expect_member(o.res, 0, RLOCK_OK, NULL);
  expect_member(o.res, 1, RLOCK_OK, NULL);
  assert_int_equal(held(&k, 0, "lrl:resdown", a), 1);
  assert_int_equal(held(&k, 1, "lrl:resdown", a), 1);
  int st = rlock_redlock_result_status(o.res, 2);
  assert_true(st == RLOCK_EIO || st == RLOCK_ETIMEOUT);
  expect_member(o.res, 2, st, NULL);
  rlock_redlock_result_free(o.res);
  o = release_result(&k, a);
  OK(o.rc);
  expect_member(o.res, 0, RLOCK_OK, NULL);
  expect_member(o.res, 1, RLOCK_OK, NULL);
  st = rlock_redlock_result_status(o.res, 2);
  assert_true(st == RLOCK_EIO || st == RLOCK_ETIMEOUT);
  expect_member(o.res, 2, st, NULL);
  rlock_redlock_result_free(o.res);
  /* Canceled with its first round in flight: every member says so (or
   * that it was not waited for). */
  outcome c = {0};
  rlock_op *op;
  rlock_acquire_options ao = opts(b, RLOCK_WAIT_FOREVER, 10000);
  OK(rlock_redlock_acquire_async_result(k.r, &ao, on_result, &c, &op));
  OK(rlock_op_cancel(op));
  outcome_wait(&c, 5000, "the canceled RedLock's result");
  RC(c.rc, RLOCK_ECANCELED);
  assert_int_equal(rlock_redlock_result_count(c.res), 3);
  for (size_t i = 0; i < 3; i++) {
    st = rlock_redlock_result_status(c.res, i);
    assert_true(st == RLOCK_ECANCELED || st == RLOCK_ETIMEOUT);
    expect_member(c.res, i, st, NULL);
  }
  rlock_redlock_result_free(c.res);
  RC(rlock_redlock_acquire_async_result(k.r, &ao, NULL, &c, NULL),
     RLOCK_EINVAL);
  RC(rlock_redlock_release_async_result(k.r, RLOCK_OWNER_THREAD, on_result, &c),
     RLOCK_EINVAL);
  /* A majority down: a transport error, nothing left on the live one. */
  rt_server_stop(k.srv[1]);
  int rc = rl_acquire(&k, a, 0, 10000, NULL, NULL);
  assert_true(rc == RLOCK_EIO || rc == RLOCK_ETIMEOUT);
  assert_int_equal(rt_cmd_int(k.srv[0], "EXISTS lrl:resdown"), 0);
  down(&k);
}

static void test_cancel(void **state) {
  (void)state;
  cluster k;
  up(&k, 3, "lrl:cancel", 0);
  hold_foreign(k.srv[0], "lrl:cancel");
  hold_foreign(k.srv[1], "lrl:cancel");
  uint64_t a = rlock_owner_new();
  result r = {0};
  rlock_op *op = NULL;
  rlock_acquire_options o = opts(a, RLOCK_WAIT_FOREVER, 10000);
  OK(rlock_redlock_acquire_async(k.r, &o, on_done, &r, &op));
  assert_non_null(op);
  OK(rlock_op_cancel(op)); /* with the first round in flight */
  run_until(&r.done, 1, 5000, "the canceled RedLock");
  RC(r.rc, RLOCK_ECANCELED);
  /* Given back before the callback: nothing of ours on the free member. */
  assert_int_equal(rt_cmd_int(k.srv[2], "EXISTS lrl:cancel"), 0);
  run_once(50);
  assert_int_equal(r.done, 1);
  down(&k);
}

typedef struct elsewhere {
  rlock_redlock *r;
  uint64_t owner;
  rlock_op *op;
  result res;
  int rc, cancel_rc;
} elsewhere;

/* Started and canceled at once on a thread that is not the loop's (the
 * loop is not running meanwhile, so no callback can). */
static void *start_cancel_elsewhere(void *arg) {
  elsewhere *e = arg;
  rlock_acquire_options o = opts(e->owner, RLOCK_WAIT_FOREVER, 10000);
  e->rc = rlock_redlock_acquire_async(e->r, &o, on_done, &e->res, &e->op);
  e->cancel_rc = e->rc == RLOCK_OK ? rlock_op_cancel(e->op) : e->rc;
  return NULL;
}

/* A RedLock acquisition started and canceled off the loop's thread. */
static void test_cancel_other_thread(void **state) {
  (void)state;
  cluster k;
  up(&k, 3, "lrl:xcancel", 0);
  hold_foreign(k.srv[0], "lrl:xcancel");
  hold_foreign(k.srv[1], "lrl:xcancel");
  elsewhere e = {.r = k.r, .owner = rlock_owner_new()};
  pthread_t t;
  pthread_create(&t, NULL, start_cancel_elsewhere, &e);
  pthread_join(t, NULL);
  OK(e.rc);
  OK(e.cancel_rc);
  run_until(&e.res.done, 1, 5000, "the RedLock canceled elsewhere");
  RC(e.res.rc, RLOCK_ECANCELED);
  wait_gone(k.srv[2], "lrl:xcancel");
  assert_int_equal(held(&k, 2, "lrl:xcancel", e.owner), -1);
  down(&k);
}

/* Member 0's client (the operation's) freed with the acquisition pending:
 * its callback runs once, inside the free, with RLOCK_ECLOSED; the other
 * members' clients give back what they were granted. */
static void test_free_with_pending(void **state) {
  (void)state;
  cluster k;
  up(&k, 3, "lrl:free", 0);
  hold_foreign(k.srv[0], "lrl:free");
  hold_foreign(k.srv[1], "lrl:free");
  uint64_t a = rlock_owner_new();
  result r = {0};
  rlock_acquire_options o = opts(a, RLOCK_WAIT_FOREVER, 10000);
  OK(rlock_redlock_acquire_async(k.r, &o, on_done, &r, NULL));
  outcome out = {0}; /* and one telling each member's outcome */
  o.owner = rlock_owner_new();
  OK(rlock_redlock_acquire_async_result(k.r, &o, on_result, &out, NULL));
  run_once(20);
  loop_free(k.c[0]);
  k.c[0] = NULL;
  assert_int_equal(r.done, 1);
  RC(r.rc, RLOCK_ECLOSED);
  assert_int_equal(atomic_load(&out.done), 1);
  RC(out.rc, RLOCK_ECLOSED);
  assert_int_equal(rlock_redlock_result_count(out.res), 3);
  for (size_t i = 0; i < 3; i++) /* taken, or why not */
    assert_true(rlock_redlock_result_status(out.res, i) <= RLOCK_OK);
  rlock_redlock_result_free(out.res);
  wait_gone(k.srv[2], "lrl:free");
  assert_int_equal(r.done, 1);
  down(&k);
}

static void test_bad_input_async(void **state) {
  (void)state;
  cluster k;
  up(&k, 3, "lrl:bad", 0);
  result r = {0};
  rlock_acquire_options o = opts(rlock_owner_new(), 0, 10000);
  RC(rlock_redlock_acquire_async(NULL, &o, on_done, &r, NULL), RLOCK_EINVAL);
  RC(rlock_redlock_acquire_async(k.r, &o, NULL, &r, NULL), RLOCK_EINVAL);
  RC(rlock_redlock_acquire_async(k.r, NULL, on_done, &r, NULL), RLOCK_EINVAL);
  o.owner = RLOCK_OWNER_THREAD;
  RC(rlock_redlock_acquire_async(k.r, &o, on_done, &r, NULL), RLOCK_EINVAL);
  o = opts(rlock_owner_new(), -5, 10000);
  RC(rlock_redlock_acquire_async(k.r, &o, on_done, &r, NULL), RLOCK_EINVAL);
  RC(rlock_redlock_release_async(k.r, RLOCK_OWNER_THREAD, on_done, &r),
     RLOCK_EINVAL);
  RC(rlock_redlock_release_async(NULL, 1, on_done, &r), RLOCK_EINVAL);
  /* The blocking RedLock refuses loop clients, the async one blocking
   * clients. */
  RC(rlock_redlock_try_acquire(NULL, k.r, 0, 10000), RLOCK_EINVAL);
  rlock_client *blocking = fx_client(k.srv[0], 0);
  rlock_lock *bl = fx_lock(blocking, "lrl:bad");
  rlock_lock *mixed[3] = {bl, k.l[1], k.l[2]};
  rlock_redlock *m;
  OK(rlock_redlock_new(&m, mixed, 3));
  o = opts(rlock_owner_new(), 0, 10000);
  RC(rlock_redlock_acquire_async(m, &o, on_done, &r, NULL), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "rlock_client_new_loop"));
  rlock_redlock_free(m);
  rlock_lock_free(bl);
  rlock_client_free(blocking);
  assert_int_equal(r.done, 0);
  down(&k);
}

int main(void) {
  (void)srv; /* fixture.h's single server: unused here */
  const dk_case cases[] = {
      DK_CASE(test_all_members, DK_ALL),
      DK_CASE(test_minority_down_still_acquires, DK_ALL),
      DK_CASE(test_majority_down_fails_cleanly, DK_ALL),
      DK_CASE(test_majority_held_elsewhere, DK_ALL),
      DK_CASE(test_waits_for_all_decides_early_on_refusals, DK_BLOCK),
      DK_CASE(test_free_members_all_taken, DK_BLOCK),
      DK_CASE(test_watchdog_renews_every_member, DK_BLOCK),
      DK_CASE(test_slow_member_eats_validity, DK_BLOCK),
      DK_CASE(test_restart_while_held, DK_BLOCK),
      DK_CASE(test_explicit_owner_across_threads, DK_BLOCK),
      DK_CASE(test_bad_input, DK_BLOCK),
      DK_CASE(test_unreachable_member_delays_no_other, DK_BLOCK),
      DK_CASE(test_cancel_blocking_round, DK_BLOCK),
      DK_CASE(test_results, DK_LOOPS),
      DK_CASE(test_results_member_down, DK_LOOPS),
      DK_CASE(test_cancel, DK_LOOPS),
      DK_CASE(test_cancel_other_thread, DK_LOOPS),
      DK_CASE(test_free_with_pending, DK_LOOPS),
      DK_CASE(test_bad_input_async, DK_LOOPS),
  };
  return DK_RUN(cases, NULL, NULL);
}
