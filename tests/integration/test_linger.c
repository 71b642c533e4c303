/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: a lock channel's subscription lingers after its last
 * waiter leaves (rlock_config_set_subscription_linger), so the next wait
 * needs no SUBSCRIBE; it goes once the linger ends, at once with linger
 * 0, and no more than the configured number stay idle. */
#include "fixture.h"

#define CHANNEL(name) "redisson_lock__channel:{" name "}"

/* SUBSCRIBE commands the server has run since its start. */
static long long subscribes(void) {
  char v[128];
  if (!rt_server_info_field(srv, "commandstats", "cmdstat_subscribe", v,
                            sizeof v))
    return 0;
  return atoll(strchr(v, '=') != NULL ? strchr(v, '=') + 1 : "0");
}

static rlock_client *client_linger(int64_t ms, int max_idle) {
  rlock_config *cfg;
  rlock_client *c;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, rt_server_url(srv)));
  OK(rlock_config_set_subscription_linger(cfg, ms, max_idle));
  OK(rlock_client_new(&c, cfg));
  rlock_config_free(cfg);
  return c;
}

/* One wait by `c` on `name` (channel `ch`): held by `holder` until the
 * waiter is subscribed, then released; returns when the waiter has taken
 * and released it. */
static void one_wait(rlock_client *c, rlock_client *holder, const char *name,
                     const char *ch) {
  rlock_lock *h = fx_lock(holder, name);
  OK(rlock_lock_acquire_lease(h, 60000));
  fx_waiter w;
  fx_waiter_start(&w, fx_lock(c, name));
  fx_wait_subscribers(srv, ch, 1, "the waiter's subscription");
  /* The subscription may be an earlier one, lingering: the waiter is then
   * between its attempt and its sleep, and a release now still wakes it
   * (permits), or its next attempt finds the lock free. */
  OK(rlock_lock_release(h));
  fx_waiter_join(&w);
  OK(w.rc);
  rlock_lock_free(w.l);
  rlock_lock_free(h);
}

static void test_second_wait_needs_no_subscribe(void **state) {
  (void)state;
  rlock_client *c = client_linger(rt_scaled_ms(3000), 64);
  rlock_client *holder = fx_client(srv, 0);
  long long before = subscribes();
  one_wait(c, holder, "linger:a", CHANNEL("linger:a"));
  assert_int_equal(subscribes(), before + 1);
  /* Lingering: still subscribed with no waiter. */
  assert_int_equal(fx_subscribers(srv, CHANNEL("linger:a")), 1);
  one_wait(c, holder, "linger:a", CHANNEL("linger:a"));
  assert_int_equal(subscribes(), before + 1); /* reused */
  /* Gone once the linger ends. */
  int64_t t0 = rt_now_ms();
  fx_wait_subscribers(srv, CHANNEL("linger:a"), 0, "the linger's end");
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 3000 + 2000);
  rlock_client_free(holder);
  rlock_client_free(c);
}

/* Linger 0: unsubscribed as soon as the waiter leaves; a second wait
 * subscribes again. */
static void test_no_linger(void **state) {
  (void)state;
  rlock_client *c = client_linger(0, 64), *holder = fx_client(srv, 0);
  long long before = subscribes();
  one_wait(c, holder, "linger:b", CHANNEL("linger:b"));
  fx_wait_subscribers(srv, CHANNEL("linger:b"), 0, "the waiter's leaving");
  one_wait(c, holder, "linger:b", CHANNEL("linger:b"));
  assert_int_equal(subscribes(), before + 2);
  rlock_client_free(holder);
  rlock_client_free(c);
}

/* At most max_idle subscriptions linger: the others go at once. */
static void test_idle_bound(void **state) {
  (void)state;
  rlock_client *c = client_linger(60000, 1), *holder = fx_client(srv, 0);
  one_wait(c, holder, "linger:c", CHANNEL("linger:c"));
  one_wait(c, holder, "linger:d", CHANNEL("linger:d"));
  fx_wait_subscribers(srv, CHANNEL("linger:d"), 0, "the second's leaving");
  assert_int_equal(fx_subscribers(srv, CHANNEL("linger:c")), 1);
  rlock_client_free(c); /* frees the lingering one too */
  fx_wait_subscribers(srv, CHANNEL("linger:c"), 0, "the client's end");
  RC(rlock_config_set_subscription_linger(NULL, 0, 0), RLOCK_EINVAL);
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  RC(rlock_config_set_subscription_linger(cfg, -1, 1), RLOCK_EINVAL);
  RC(rlock_config_set_subscription_linger(cfg, 1000, -1), RLOCK_EINVAL);
  rlock_config_free(cfg);
  rlock_client_free(holder);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_second_wait_needs_no_subscribe),
      cmocka_unit_test(test_no_linger),
      cmocka_unit_test(test_idle_bound),
  };
  return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
