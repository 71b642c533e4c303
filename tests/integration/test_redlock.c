/* Integration: RedLock over 3 and 5 independent redis-servers. */
#include "fixture.h"

#include <stdatomic.h>

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
  freeReplyObject(rt_cmd(s, "HSET %s 00000000-0000-4000-8000-000000000000:1 1",
                         name));
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
  int taken = 0;
  for (int i = 0; i < 3; i++) {
    if (rlock_redlock_result_status(res, i) != RLOCK_OK)
      continue; /* decided without it: the quorum came first */
    char owner[RLOCK_OWNER_MAX];
    fx_owner(k.c[i], owner);
    assert_int_equal(fx_hget(k.srv[i], "rl:all", owner), 1);
    ASSERT_RANGE(rt_cmd_int(k.srv[i], "PTTL rl:all"), 9000, 10000);
    taken++;
  }
  assert_true(taken >= 2);
  rlock_redlock_result_free(res);
  OK(rlock_redlock_release(k.r));
  for (int i = 0; i < 3; i++)
    assert_int_equal(rt_cmd_int(k.srv[i], "EXISTS rl:all"), 0);
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
  int taken = 0;
  for (int i = 0; i < 5; i++)
    taken += rlock_redlock_result_status(res, i) == RLOCK_OK;
  assert_true(taken >= 3);
  assert_int_equal(rlock_redlock_result_status(res, 1) == RLOCK_OK, 0);
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
  assert_int_equal(fx_hget(k.srv[0], "rl:held",
                           "00000000-0000-4000-8000-000000000000:1"), 1);
  down(&k);
}

static void test_decides_early(void **state) {
  (void)state;
  cluster k;
  up(&k, 5, "rl:early", 0);
  rt_server_freeze(k.srv[0]); /* answers nothing */
  rt_server_freeze(k.srv[1]);
  /* Quorum (3) from the three live servers: no waiting for the frozen
   * ones (the member timeout would be 1 s). */
  int64_t t0 = rt_now_ms();
  rlock_redlock_result *res;
  OK(rlock_redlock_try_acquire(&res, k.r, 0, 20000));
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 300);
  assert_int_equal(rlock_redlock_result_status(res, 0), RLOCK_ETIMEOUT);
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

typedef struct thawer {
  rt_server *s;
  int ms;
} thawer;

static void *thaw_later(void *arg) {
  thawer *t = arg;
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
  thawer th = {k.srv[2], 120};
  pthread_t t;
  pthread_create(&t, NULL, thaw_later, &th);
  rlock_redlock_result *res;
  OK(rlock_redlock_try_acquire(&res, k.r, 0, 4000)); /* node timeout 200 */
  pthread_join(t, NULL);
  int64_t v = rlock_redlock_result_validity_ms(res);
  /* lease - ~120 ms spent - drift (40 + 2) */
  ASSERT_RANGE(v, 1, 4000 - 120 - 42);
  rlock_redlock_result_free(res);
  OK(rlock_redlock_release(k.r));
  down(&k);
}

static void test_restart_while_held(void **state) {
  (void)state;
  cluster k;
  up(&k, 3, "rl:restart", 600);
  rlock_redlock_result *res;
  OK(rlock_redlock_try_acquire(&res, k.r, 0, RLOCK_LEASE_WATCHDOG));
  /* Restart a member that was taken (with an early decision, the third
   * may have been left out). */
  int v = -1;
  for (int i = 0; i < 3 && v < 0; i++)
    if (rlock_redlock_result_status(res, i) == RLOCK_OK)
      v = i;
  rlock_redlock_result_free(res);
  assert_true(v >= 0);
  rt_server_restart(k.srv[v]); /* that member's hold is gone */
  rt_sleep_ms(3 * 600);        /* the others are renewed meanwhile */
  for (int i = 0; i < 3; i++)
    if (i != v)
      assert_int_equal(rt_cmd_int(k.srv[i], "EXISTS rl:restart"),
                       rlock_lock_check(k.l[i]) == RLOCK_OK);
  assert_int_equal(rt_cmd_int(k.srv[v], "EXISTS rl:restart"), 0);
  RC(rlock_lock_check(k.l[v]), RLOCK_ELOST);
  RC(rlock_redlock_release(k.r), RLOCK_ELOST);
  for (int i = 0; i < 3; i++)
    assert_int_equal(rt_cmd_int(k.srv[i], "EXISTS rl:restart"), 0);
  OK(rlock_redlock_try_acquire(NULL, k.r, 0, 5000)); /* usable again */
  OK(rlock_redlock_release(k.r));
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_up),
      cmocka_unit_test(test_minority_down_still_acquires),
      cmocka_unit_test(test_majority_down_fails_cleanly),
      cmocka_unit_test(test_majority_held_elsewhere),
      cmocka_unit_test(test_decides_early),
      cmocka_unit_test(test_slow_member_eats_validity),
      cmocka_unit_test(test_restart_while_held),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
