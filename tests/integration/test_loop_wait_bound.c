/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: on the event-loop API too, an acquisition's wait bounds the
 * whole operation: against a server that takes connections and never
 * answers (SIGSTOP), its callback comes by the wait plus a small margin,
 * not after the command timeout; on libuv and on libevent. */
#include "loop_fixture.h"

/* Generous for a loaded machine; the library's margin is 100 ms. */
#define MARGIN_MS 400

static int setup(void **state) {
  (void)state;
  srv = rt_server_start(NULL);
  loop_open();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  loop_close();
  rt_server_free(srv);
  return 0;
}

static rlock_client *loop_client(void) {
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, rt_server_url(srv)));
  OK(rlock_config_set_connect_timeout_ms(cfg, 1000));
  OK(rlock_config_set_command_timeout_ms(cfg, 3000));
  rlock_client *c = loop_client_cfg(cfg);
  rlock_config_free(cfg);
  return c;
}

/* Acquire with `wait`; returns how long the callback took to come. */
static int64_t timed_acquire(rlock_lock *l, uint64_t owner, int64_t wait,
                             result *r) {
  rlock_acquire_options o = opts(owner, wait, 5000);
  int64_t t0 = rt_now_ms();
  OK(rlock_lock_acquire_async(l, &o, on_done, r, NULL));
  run_until(&r->done, 1, 10000, "an acquisition");
  return rt_now_ms() - t0;
}

/* A connected client and a fresh one, each waiting 400 ms. */
static void test_wait_bounds_a_hung_server(void **state) {
  (void)state;
  uint64_t me = rlock_owner_new();
  rlock_client *warm = loop_client();
  rlock_lock *lw = fx_lock(warm, "lbound:hung");
  result r = {0};
  timed_acquire(lw, me, 0, &r);
  assert_int_equal(r.rc, RLOCK_OK);
  result rel = {0};
  OK(rlock_lock_release_async(lw, me, on_done, &rel));
  run_until(&rel.done, 1, 5000, "a release");
  rlock_client *cold = loop_client();
  rlock_lock *lc = fx_lock(cold, "lbound:hung");
  rt_server_freeze(srv);
  rlock_lock *locks[2] = {lw, lc};
  for (int i = 0; i < 2; i++) {
    result w = {0};
    int64_t ms = timed_acquire(locks[i], me, 400, &w);
    if (w.rc != RLOCK_ETIMEOUT || strstr(w.msg, "time the caller gave") == NULL)
      fail_msg("client %d: status %d (%s)", i, w.rc, w.msg);
    ASSERT_BETWEEN(ms, 390, 400 + MARGIN_MS);
  }
  rt_server_thaw(srv);
  rlock_lock_free(lc);
  rlock_lock_free(lw);
  loop_free(cold);
  loop_free(warm);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_wait_bounds_a_hung_server),
  };
  int failed = 0;
  kind = UV;
  failed += cmocka_run_group_tests_name("libuv", tests, setup, teardown);
  kind = EV;
  failed += cmocka_run_group_tests_name("libevent", tests, setup, teardown);
  return failed;
}
