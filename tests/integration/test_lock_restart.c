/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: the server restarting or going away while locks are held
 * or awaited. Operations during an outage must fail with a clear error,
 * never hang, and the client must recover by itself afterwards. A wait
 * that meets a server not up yet, the unreachable retry bound and what
 * trying again cannot mend run on every driver (drivers.h). */
#include "drivers.h"

#include <stdatomic.h>

#define WD 600

static void count_lost(const char *name, const char *owner, void *ud) {
  (void)name, (void)owner;
  atomic_fetch_add((atomic_int *)ud, 1);
}

static void test_restart_while_holding(void **state) {
  (void)state;
  atomic_int lost = 0;
  rlock_client *c = fx_client_opts(rt_server_url(srv), WD, count_lost, &lost);
  rlock_lock *l = fx_lock(c, "restart:hold");
  OK(rlock_lock_acquire(l));
  rt_server_restart(srv); /* data lost */
  int64_t t0 = rt_now_ms();
  while (atomic_load(&lost) == 0 && rt_now_ms() - t0 < rt_scaled_ms(3000))
    rt_sleep_ms(10);
  assert_int_equal(atomic_load(&lost), 1);
  RC(rlock_lock_check(l), RLOCK_ELOST);
  RC(rlock_lock_release(l), RLOCK_ELOST);
  /* The same client takes it again, and renewal works again. */
  OK(rlock_lock_acquire(l));
  /* Time is the point: three leases, which only renewal outlasts. */
  rt_sleep_ms(3 * WD);
  OK(rlock_lock_check(l));
  ASSERT_RANGE(rt_cmd_int(srv, "PTTL restart:hold"), 1, WD);
  OK(rlock_lock_release(l));
  FX_FREE((l), (c));
}

typedef struct waiter {
  rlock_client *c;
  const char *name;
  int64_t wait_ms;
  rlock_cancel *cancel;
  int rc;
  int64_t done_at;
  char msg[256];
} waiter;

static void *waiter_main(void *arg) {
  waiter *w = arg;
  rlock_lock *l;
  w->rc = rlock_lock_new(&l, w->c, w->name);
  if (w->rc == RLOCK_OK) {
    rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
    o.wait_ms = w->wait_ms;
    o.cancel = w->cancel;
    w->rc = rlock_lock_acquire_opts(l, &o);
    snprintf(w->msg, sizeof w->msg, "%s", rlock_error_last()->message);
    w->done_at = rt_now_ms();
    if (w->rc == RLOCK_OK)
      rlock_lock_release(l);
    rlock_lock_free(l);
  }
  return NULL;
}

static void test_restart_while_waiting(void **state) {
  (void)state;
  rlock_client *holder = fx_client(srv, 0), *wc = fx_client(srv, 0);
  rlock_lock *l = fx_lock(holder, "restart:wait");
  OK(rlock_lock_acquire_lease(l, 60000));
  waiter w = {.c = wc, .name = "restart:wait", .wait_ms = 30000};
  pthread_t t;
  pthread_create(&t, NULL, waiter_main, &w);
  fx_wait_subscribers(srv, "redisson_lock__channel:{restart:wait}", 1,
                      "the waiter's subscription");
  int64_t down = rt_now_ms();
  rt_server_restart(srv); /* the holder's lock is gone with the data */
  int64_t back = rt_now_ms();
  pthread_join(t, NULL);
  OK(w.rc);
  /* Not before the restart; and woken when its subscription came back
   * (possibly before the harness saw the server ready), not by the 60 s
   * lease. */
  assert_true(w.done_at >= down);
  ASSERT_BETWEEN(w.done_at - back, -1000, 3000);
  FX_FREE((l), (holder, wc));
}

/* A try (wait 0) against a server that is down fails at once, and so do
 * the calls that do not wait; all work again once it is back. */
static void test_outage_fails_fast_then_recovers(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "restart:outage");
  OK(rlock_client_ping(c, NULL));
  rt_server_stop(srv);
  int64_t t0 = rt_now_ms();
  RC(rlock_lock_try_acquire(l, 0, 10000), RLOCK_EIO);
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 1000);
  assert_null(strstr(rlock_error_last()->message, "tried again"));
  char port[16];
  snprintf(port, sizeof port, "%d", rt_server_port(srv));
  assert_non_null(strstr(rlock_error_last()->message, port));
  RC(rlock_client_ping(c, NULL), RLOCK_EIO);
  rlock_lock_info *info;
  RC(rlock_lock_inspect(&info, l), RLOCK_EIO);
  RC(rlock_lock_release(l), RLOCK_EIO);
  rt_server_start_again(srv);
  OK(rlock_lock_acquire(l));
  OK(rlock_lock_release(l));
  FX_FREE((l), (c));
}

/* A waiter told to wait as long as it takes outlives an outage longer
 * than the holder's lease: it tries again with back-off and takes the
 * lock once the server is back (restarted without data: the lock is
 * gone). */
static void test_outage_while_waiting_forever(void **state) {
  (void)state;
  rlock_client *holder = fx_client(srv, 0), *wc = fx_client(srv, 0);
  rlock_lock *l = fx_lock(holder, "restart:down");
  OK(rlock_lock_acquire_lease(l, 1000));
  waiter w = {.c = wc, .name = "restart:down", .wait_ms = RLOCK_WAIT_FOREVER};
  pthread_t t;
  pthread_create(&t, NULL, waiter_main, &w);
  fx_wait_subscribers(srv, "redisson_lock__channel:{restart:down}", 1,
                      "the waiter's subscription");
  rt_server_stop(srv);
  /* Time is the point: an outage twice the holder's lease, through which
   * the waiter's attempts fail (it used to give up here). */
  rt_sleep_ms(2000);
  assert_int_equal(w.done_at, 0);
  int64_t back = rt_now_ms();
  rt_server_start_again(srv);
  pthread_join(t, NULL);
  OK(w.rc);
  /* Back-off is at most 1 s between attempts. */
  ASSERT_BETWEEN(w.done_at - back, 0, 1000 + 3000);
  FX_FREE((l), (holder, wc));
}

/* A bounded wait through an outage ends at its deadline with the
 * transport's code, saying how long it tried. */
static void test_outage_while_waiting_ends_at_deadline(void **state) {
  (void)state;
  rlock_client *holder = fx_client(srv, 0), *wc = fx_client(srv, 0);
  rlock_lock *l = fx_lock(holder, "restart:bounded");
  OK(rlock_lock_acquire_lease(l, 1000)); /* ends within the wait */
  int64_t start = rt_now_ms();
  waiter w = {.c = wc, .name = "restart:bounded", .wait_ms = 2500};
  pthread_t t;
  pthread_create(&t, NULL, waiter_main, &w);
  fx_wait_subscribers(srv, "redisson_lock__channel:{restart:bounded}", 1,
                      "the waiter's subscription");
  rt_server_stop(srv);
  pthread_join(t, NULL); /* must not hang on a dead server */
  assert_true(w.rc == RLOCK_EIO || w.rc == RLOCK_ETIMEOUT);
  assert_non_null(strstr(w.msg, "127.0.0.1"));
  if (strstr(w.msg, "tried again for") == NULL)
    fail_msg("message: %s", w.msg);
  /* The wait, plus at most one connect and command timeout. */
  ASSERT_BETWEEN(w.done_at - start, 2500, 2500 + 3000);
  rt_server_start_again(srv);
  FX_FREE((l), (holder, wc));
}

/* A waiter riding out an outage can still be canceled. */
static void test_outage_wait_canceled(void **state) {
  (void)state;
  rlock_client *holder = fx_client(srv, 0), *wc = fx_client(srv, 0);
  rlock_lock *l = fx_lock(holder, "restart:cancel");
  OK(rlock_lock_acquire_lease(l, 500));
  waiter w = {.c = wc, .name = "restart:cancel", .wait_ms = RLOCK_WAIT_FOREVER};
  OK(rlock_cancel_new(&w.cancel));
  pthread_t t;
  pthread_create(&t, NULL, waiter_main, &w);
  fx_wait_subscribers(srv, "redisson_lock__channel:{restart:cancel}", 1,
                      "the waiter's subscription");
  rt_server_stop(srv);
  rt_sleep_ms(1500); /* time is the point: past the lease, into the outage */
  assert_int_equal(w.done_at, 0);
  int64_t fired = rt_now_ms();
  rlock_cancel_fire(w.cancel);
  pthread_join(t, NULL);
  RC(w.rc, RLOCK_ECANCELED);
  ASSERT_BETWEEN(w.done_at - fired, 0, 1000);
  rt_server_start_again(srv);
  rlock_cancel_free(w.cancel);
  FX_FREE((l), (holder, wc));
}

/* A waiter's client of the running driver with short timeouts and, if
 * `retry_ms` >= -1, that unreachable retry bound. */
static rlock_client *retry_client(const char *url, int64_t retry_ms) {
  rlock_config *cfg = fx_config(url, 0, NULL, NULL);
  if (retry_ms >= -1)
    OK(rlock_config_set_unreachable_retry_ms(cfg, retry_ms));
  rlock_client *c = dk_client_cfg(cfg);
  rlock_config_free(cfg);
  return c;
}

static bool connect_failed(void *arg, char *why, size_t cap) {
  uint64_t n = dk_connect_failures(arg);
  snprintf(why, cap, "%llu connections refused", (unsigned long long)n);
  return n >= 1;
}

/* A wait begun while the server is down (not up yet, or restarting)
 * rides that out from its first attempt and takes the lock once the
 * server comes up, within the wait: as one lost during the wait. */
static void test_wait_meets_server_not_up_yet(void **state) {
  (void)state;
  rt_server_stop(srv);
  rlock_client *wc = retry_client(rt_server_url(srv), -2);
  rlock_lock *l = fx_lock(wc, "restart:late");
  uint64_t me = rlock_owner_new();
  dk_op op;
  dk_acquire_start(&op, l, me, 5000, 10000);
  dk_wait(connect_failed, wc, 3000, "the waiter's first attempt");
  /* Time is the point: the server comes up a second after the wait
   * began, which the waiter must outlast (a loop running meanwhile). */
  dk_let_time_pass(1000);
  assert_false(dk_op_done(&op));
  int64_t back = rt_now_ms();
  rt_server_start_again(srv);
  OK(dk_op_wait(&op, 5000, "the acquisition once the server is up"));
  ASSERT_BETWEEN(op.done_us / 1000 - back, -1000, 1000 + 3000);
  rlock_stats st;
  OK(rlock_client_stats(wc, &st, sizeof st));
  assert_true(st.connect_failures >= 2); /* tried again */
  assert_int_equal(st.acquisitions, 1);
  assert_int_equal(rt_cmd_int(srv, "EXISTS restart:late"), 1);
  OK(dk_release(l, me));
  DK_FREE((l), (wc));
}

/* The unreachable retry bound ends a wait without a bound on a server
 * that stays down, with the last failure saying how long it tried; 0
 * gives up at the first failure; and without one, a try (wait 0) fails
 * at once naming the connection. */
static void test_retry_bound_ends_unbounded_wait(void **state) {
  (void)state;
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  RC(rlock_config_set_unreachable_retry_ms(cfg, -2), RLOCK_EINVAL);
  RC(rlock_config_set_unreachable_retry_ms(cfg, RLOCK_MAX_DURATION_MS + 1),
     RLOCK_EINVAL);
  RC(rlock_config_set_unreachable_retry_ms(NULL, 5), RLOCK_EINVAL);
  OK(rlock_config_set_unreachable_retry_ms(cfg, RLOCK_RETRY_FOREVER));
  rlock_config_free(cfg);
  rt_server_stop(srv);
  uint64_t me = dk_me();
  rlock_client *c = retry_client(rt_server_url(srv), 800);
  rlock_lock *l = fx_lock(c, "restart:bound");
  int64_t t0 = rt_now_ms();
  RC(dk_acquire(l, me, RLOCK_WAIT_FOREVER, RLOCK_LEASE_WATCHDOG), RLOCK_EIO);
  ASSERT_BETWEEN(rt_now_ms() - t0, 800, 800 + 2000);
  if (strstr(rlock_error_last()->message, "tried again for") == NULL ||
      strstr(rlock_error_last()->message, "Connection refused") == NULL)
    fail_msg("message: %s", rlock_error_last()->message);
  assert_true(dk_connect_failures(c) >= 2);
  DK_FREE((l), (c));
  for (int wait = 1; wait >= 0; wait--) {
    /* Bound 0 with a wait; the default bound with a try. */
    c = retry_client(rt_server_url(srv), wait ? 0 : -2);
    l = fx_lock(c, "restart:bound");
    t0 = rt_now_ms();
    RC(dk_acquire(l, me, wait ? 5000 : 0, 1000), RLOCK_EIO);
    ASSERT_BETWEEN(rt_now_ms() - t0, 0, 1000);
    assert_non_null(strstr(rlock_error_last()->message, "connect"));
    assert_null(strstr(rlock_error_last()->message, "tried again"));
    DK_FREE((l), (c));
  }
  rt_server_start_again(srv);
}

/* What trying again cannot mend fails at once, wait or not: a host name
 * that does not resolve (looked up off a loop's thread), a refused
 * login. */
static void test_wait_fails_at_once_when_final(void **state) {
  (void)state;
  uint64_t me = dk_me();
  rlock_client *c =
      retry_client("redis://no-such-host.invalid:6379", RLOCK_RETRY_FOREVER);
  rlock_lock *l = fx_lock(c, "restart:final");
  int64_t t0 = rt_now_ms();
  int rc = dk_acquire(l, me, 3000, 1000);
  int64_t took = rt_now_ms() - t0;
  const char *msg = rlock_error_last()->message;
  if (dk_loop()) {
    /* Either answer, within the connect timeout, naming the host. */
    ASSERT_BETWEEN(took, 0, 1000 + 500);
    if (strstr(msg, "no-such-host.invalid") == NULL)
      fail_msg("message: %s", msg);
  }
  if (rc == RLOCK_ETIMEOUT && strstr(msg, "did not finish in time") != NULL) {
    /* No resolver answered within the connect timeout: no "no" to go by,
     * so the wait went on (as for a server that does not answer). */
    print_message("note: this machine's resolver did not answer for "
                  "no-such-host.invalid within 1 s; the final-name case "
                  "was not checked (%s)\n",
                  msg);
  } else {
    RC(rc, RLOCK_EIO);
    ASSERT_BETWEEN(took, 0, 1000 + 500); /* the connect timeout */
    if (strstr(msg, "no-such-host.invalid") == NULL ||
        strstr(msg, "did not resolve") == NULL)
      fail_msg("message: %s", msg);
    assert_null(strstr(msg, "tried again"));
  }
  DK_FREE((l), (c));
  /* A wrong password, to a server that wants another and to one that
   * wants none. */
  rt_server *pw =
      rt_server_start((const char *const[]){"--requirepass", "right", NULL});
  rt_server *to[2] = {pw, srv};
  for (int i = 0; i < 2; i++) {
    char url[128];
    snprintf(url, sizeof url, "redis://:wrong@127.0.0.1:%d",
             rt_server_port(to[i]));
    c = retry_client(url, RLOCK_RETRY_FOREVER);
    l = fx_lock(c, "restart:final");
    t0 = rt_now_ms();
    RC(dk_acquire(l, me, 5000, 1000), RLOCK_EAUTH);
    ASSERT_BETWEEN(rt_now_ms() - t0, 0, 1000);
    assert_non_null(strstr(rlock_error_last()->message, "AUTH refused"));
    DK_FREE((l), (c));
  }
  rt_server_free(pw);
}

/* Each case starts with the server up: one that failed while it was
 * stopped would leave the next case's unbounded calls waiting for ever. */
static int server_up(void **state) {
  dk_recover(state);
  if (rt_server_pid(srv) == 0)
    rt_server_start_again(srv);
  return 0;
}

#define CASE(fn, drivers) DK_CASE_ST(fn, server_up, NULL, drivers)

static const dk_case cases[] = {
    CASE(test_restart_while_holding, DK_BLOCK),
    CASE(test_restart_while_waiting, DK_BLOCK),
    CASE(test_outage_fails_fast_then_recovers, DK_BLOCK),
    CASE(test_outage_while_waiting_forever, DK_BLOCK),
    CASE(test_outage_while_waiting_ends_at_deadline, DK_BLOCK),
    CASE(test_outage_wait_canceled, DK_BLOCK),
    CASE(test_wait_meets_server_not_up_yet, DK_ALL),
    CASE(test_retry_bound_ends_unbounded_wait, DK_ALL),
    CASE(test_wait_fails_at_once_when_final, DK_ALL),
};

DK_MAIN(cases, NULL)
