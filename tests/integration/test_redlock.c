/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: RedLock over 3 and 5 independent redis-servers. */
#include "fixture.h"

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

static void up(cluster *k, int n, const char *name, int64_t watchdog) {
  k->n = n;
  for (int i = 0; i < n; i++) {
    k->srv[i] = rt_server_start(NULL);
    k->c[i] = fx_client(k->srv[i], watchdog);
    k->l[i] = fx_lock(k->c[i], name);
  }
  OK(rlock_redlock_new(&k->r, k->l, (size_t)n));
}

static void down(cluster *k) {
  rlock_redlock_free(k->r);
  for (int i = 0; i < k->n; i++) {
    rlock_lock_free(k->l[i]);
    rlock_client_free(k->c[i]);
    rt_server_free(k->srv[i]);
  }
}

static void hold_foreign(rt_server *s, const char *name) {
  freeReplyObject(
      rt_cmd(s, "HSET %s 00000000-0000-4000-8000-000000000000:1 1", name));
  freeReplyObject(rt_cmd(s, "PEXPIRE %s 60000", name));
}

static void test_all_up(void **state) {
  (void)state;
  cluster k;
  up(&k, 3, "rl:all", 0);
  rlock_redlock_result *res;
  OK(rlock_redlock_try_acquire(&res, k.r, 0, 10000));
  assert_int_equal(rlock_redlock_result_count(res), 3);
  ASSERT_RANGE(rlock_redlock_result_validity_ms(res), 9000, 10000 - 102);
  /* Every member is taken, not just the first quorum to answer. */
  for (int i = 0; i < 3; i++) {
    OK(rlock_redlock_result_status(res, i));
    assert_string_equal(rlock_redlock_result_message(res, i), "");
    char owner[RLOCK_OWNER_MAX];
    fx_owner(k.c[i], owner);
    assert_int_equal(fx_hget(k.srv[i], "rl:all", owner), 1);
    ASSERT_RANGE(rt_cmd_int(k.srv[i], "PTTL rl:all"), 9000, 10000);
    OK(rlock_lock_check(k.l[i])); /* recorded on its own client */
  }
  rlock_redlock_result_free(res);
  OK(rlock_redlock_release(k.r));
  for (int i = 0; i < 3; i++)
    assert_int_equal(rt_cmd_int(k.srv[i], "EXISTS rl:all"), 0);
  RC(rlock_redlock_release(k.r), RLOCK_ENOTHELD); /* nothing held now */
  assert_non_null(strstr(rlock_error_last()->message, "not held"));
  down(&k);
}

static void test_minority_down_still_acquires(void **state) {
  (void)state;
  cluster k;
  up(&k, 5, "rl:minority", 0);
  rt_server_stop(k.srv[1]);
  rt_server_stop(k.srv[3]);
  rlock_redlock_result *res;
  OK(rlock_redlock_try_acquire(&res, k.r, 0, 10000));
  assert_true(rlock_redlock_result_validity_ms(res) > 0);
  assert_true(rlock_redlock_result_validity_ms(res) <= 10000);
  for (int i = 0; i < 5; i += 2)
    OK(rlock_redlock_result_status(res, i));
  assert_int_equal(rlock_redlock_result_status(res, 1) == RLOCK_OK, 0);
  assert_int_equal(rlock_redlock_result_status(res, 3) == RLOCK_OK, 0);
  assert_true(strlen(rlock_redlock_result_message(res, 1)) > 0);
  rlock_redlock_result_free(res);
  OK(rlock_redlock_release(k.r)); /* members never taken are ignored */
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
  rlock_redlock_result *res;
  int64_t t0 = rt_now_ms();
  int rc = rlock_redlock_try_acquire(&res, k.r, 500, 10000);
  int64_t took = rt_now_ms() - t0;
  assert_int_equal(rc, RLOCK_EIO);
  ASSERT_BETWEEN(took, 500, 1500);
  assert_non_null(strstr(rlock_error_last()->message, "quorum"));
  assert_int_equal(rlock_redlock_result_validity_ms(res), 0);
  assert_int_equal(rlock_redlock_result_status(res, 0), RLOCK_EIO);
  rlock_redlock_result_free(res);
  assert_int_equal(rt_cmd_int(k.srv[1], "EXISTS rl:majority"), 0);
  /* Waiting for ever does not hang on an outage either. */
  t0 = rt_now_ms();
  RC(rlock_redlock_try_acquire(NULL, k.r, RLOCK_WAIT_FOREVER, 10000),
     RLOCK_EIO);
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 1500);
  down(&k);
}

static void test_majority_held_elsewhere(void **state) {
  (void)state;
  cluster k;
  up(&k, 3, "rl:held", 0);
  hold_foreign(k.srv[0], "rl:held");
  hold_foreign(k.srv[1], "rl:held");
  int64_t t0 = rt_now_ms();
  RC(rlock_redlock_try_acquire(NULL, k.r, 300, 10000), RLOCK_ELOCKED);
  ASSERT_BETWEEN(rt_now_ms() - t0, 300, 1500);
  assert_int_equal(rt_cmd_int(k.srv[2], "EXISTS rl:held"), 0);
  /* With one holder gone the quorum is back. */
  freeReplyObject(rt_cmd(k.srv[1], "DEL rl:held"));
  OK(rlock_redlock_try_acquire(NULL, k.r, 300, 10000));
  OK(rlock_redlock_release(k.r));
  assert_int_equal(
      fx_hget(k.srv[0], "rl:held", "00000000-0000-4000-8000-000000000000:1"),
      1);
  down(&k);
}

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_up),
      cmocka_unit_test(test_minority_down_still_acquires),
      cmocka_unit_test(test_majority_down_fails_cleanly),
      cmocka_unit_test(test_majority_held_elsewhere),
      cmocka_unit_test(test_waits_for_all_decides_early_on_refusals),
      cmocka_unit_test(test_free_members_all_taken),
      cmocka_unit_test(test_watchdog_renews_every_member),
      cmocka_unit_test(test_slow_member_eats_validity),
      cmocka_unit_test(test_restart_while_held),
      cmocka_unit_test(test_explicit_owner_across_threads),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_unreachable_member_delays_no_other),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
