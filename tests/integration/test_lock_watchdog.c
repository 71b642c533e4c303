/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: lease renewal by the watchdog, its end at release, crashed
 * holders, and lost-lock detection. Uses short watchdog timeouts so that
 * "three timeouts" take seconds, not minutes. The renewal and the lost
 * hold run on every driver (drivers.h): a loop client's renewals run on
 * its loop. */
#include "drivers.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>

#define WD 600 /* ms: renewal every 200 ms */

typedef struct lost_log {
  atomic_int calls;
  char name[128];
  char owner[RLOCK_OWNER_MAX];
  pthread_t thread; /* the last call's */
} lost_log;

static void on_lost(const char *name, const char *owner, void *ud) {
  lost_log *log = ud;
  snprintf(log->name, sizeof log->name, "%s", name);
  snprintf(log->owner, sizeof log->owner, "%s", owner);
  log->thread = pthread_self();
  atomic_fetch_add(&log->calls, 1);
}

static bool pred_lost_called(void *arg, char *why, size_t cap) {
  snprintf(why, cap, "no lost-lock callback yet");
  return atomic_load(&((lost_log *)arg)->calls) > 0;
}

/* Renewed past several leases (a loop client's while its loop runs),
 * each renewal counted in the client's stats; nothing is lost. */
static void test_renewal_beyond_three_timeouts(void **state) {
  (void)state;
  lost_log log = {0};
  rlock_client *c = dk_client(rt_server_url(srv), WD, on_lost, &log);
  rlock_lock *l = fx_lock(c, "wd:renew");
  uint64_t me = dk_me();
  OK(dk_acquire(l, me, 0, RLOCK_LEASE_WATCHDOG));
  /* Time is the point here and below: only renewal keeps a lock past its
   * lease, so each test lets leases pass and looks. */
  for (int i = 0; i < 8; i++) { /* 4 timeouts in all */
    dk_let_time_pass(WD / 2);
    ASSERT_RANGE(rt_cmd_int(srv, "PTTL wd:renew"), 1, WD);
  }
  OK(dk_check(l, me));
  assert_true(dk_renewals(c) >= 2);
  assert_int_equal(atomic_load(&log.calls), 0);
  OK(dk_release(l, me));
  assert_int_equal(rt_cmd_int(srv, "EXISTS wd:renew"), 0);
  DK_FREE((l), (c));
}

static void test_renewal_stops_at_release(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, WD);
  rlock_lock *l = fx_lock(c, "wd:stop");
  char owner[RLOCK_OWNER_MAX];
  fx_owner(c, owner);
  OK(rlock_lock_acquire(l));
  OK(rlock_lock_acquire(l));
  OK(rlock_lock_release(l));
  rt_sleep_ms(WD + 200); /* one hold left: still renewed */
  assert_int_equal(fx_hget(srv, "wd:stop", owner), 1);
  OK(rlock_lock_release(l));
  /* Re-create the very same hold behind the library's back: a renewal
   * still running would keep it alive. */
  freeReplyObject(rt_cmd(srv, "HSET wd:stop %s 1", owner));
  freeReplyObject(rt_cmd(srv, "PEXPIRE wd:stop 300"));
  fx_wait_exists(srv, "wd:stop", 0, 1000);
  FX_FREE((l), (c));
}

static void test_lease_lock_not_renewed(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, WD);
  rlock_lock *l = fx_lock(c, "wd:lease"), *w = fx_lock(c, "wd:other");
  OK(rlock_lock_acquire(w)); /* keeps the watchdog busy meanwhile */
  OK(rlock_lock_acquire_lease(l, 400));
  int64_t gone = fx_wait_exists(srv, "wd:lease", 0, 2000);
  ASSERT_BETWEEN(gone, 250, 1000);
  RC(rlock_lock_release(l), RLOCK_ELOST);
  OK(rlock_lock_release(w));
  FX_FREE((l, w), (c));
}

static void test_mixed_leases_follow_the_hold_stack(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, WD);
  rlock_lock *l = fx_lock(c, "wd:mixed");
  /* Watchdog hold under a lease hold: renewal continues after the lease
   * hold is released. */
  OK(rlock_lock_acquire(l));
  OK(rlock_lock_acquire_lease(l, 5000));
  OK(rlock_lock_release(l));
  rt_sleep_ms(3 * WD); /* three leases: only renewal keeps it */
  OK(rlock_lock_check(l));
  assert_int_equal(rt_cmd_int(srv, "EXISTS wd:mixed"), 1);
  OK(rlock_lock_release(l));
  /* Lease hold under a watchdog hold: once the watchdog hold is released
   * the lock keeps the outer lease and expires with it. */
  OK(rlock_lock_acquire_lease(l, 700));
  OK(rlock_lock_acquire(l));
  rt_sleep_ms(WD + 300); /* past the outer 700 ms lease: renewed */
  assert_int_equal(rt_cmd_int(srv, "EXISTS wd:mixed"), 1);
  OK(rlock_lock_release(l));
  ASSERT_RANGE(rt_cmd_int(srv, "PTTL wd:mixed"), 500, 700);
  fx_wait_exists(srv, "wd:mixed", 0, 1500);
  FX_FREE((l), (c));
}

static void test_crashed_holder_frees_within_timeout(void **state) {
  (void)state;
  int out;
  const char *args[] = {"hold", rt_server_url(srv), "wd:crash", "1000", NULL};
  pid_t pid = fx_spawn_child(args, &out);
  char b;
  assert_int_equal(read(out, &b, 1), 1); /* it holds the lock now */
  close(out);
  rt_sleep_ms(1500); /* longer than its lease: only renewal keeps it */
  assert_int_equal(rt_cmd_int(srv, "EXISTS wd:crash"), 1);
  kill(pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
  int64_t killed = rt_now_ms();
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "wd:crash");
  OK(rlock_lock_try_acquire(l, 5000, 0));
  ASSERT_BETWEEN(rt_now_ms() - killed, 0, 1000 + 300);
  OK(rlock_lock_release(l));
  FX_FREE((l), (c));
}

/* A watchdog hold deleted behind the holder's back is found by the next
 * renewal and reported once (a loop client's on its loop's thread), and
 * never taken back. */
static void test_lost_lock_is_reported_not_retaken(void **state) {
  (void)state;
  lost_log log = {0};
  rlock_client *c = dk_client(rt_server_url(srv), WD, on_lost, &log);
  rlock_lock *l = fx_lock(c, "wd:lost");
  uint64_t me = dk_me();
  char owner[RLOCK_OWNER_MAX];
  dk_field(c, me, owner);
  OK(dk_acquire(l, me, 0, RLOCK_LEASE_WATCHDOG));
  freeReplyObject(rt_cmd(srv, "DEL wd:lost"));
  dk_wait(pred_lost_called, &log, 2000, "the lost-lock callback");
  assert_int_equal(atomic_load(&log.calls), 1);
  assert_string_equal(log.name, "wd:lost");
  assert_string_equal(log.owner, owner);
  if (dk_loop())
    assert_true(pthread_equal(log.thread, pthread_self()));
  RC(dk_check(l, me), RLOCK_ELOST);
  dk_let_time_pass(WD); /* a lease of ticks, none of which may take it back */
  assert_int_equal(rt_cmd_int(srv, "EXISTS wd:lost"), 0);
  assert_int_equal(atomic_load(&log.calls), 1);
  RC(dk_release(l, me), RLOCK_ELOST);
  RC(dk_check(l, me), RLOCK_ENOTHELD);
  DK_FREE((l), (c));
}

static void test_renewals_are_batched(void **state) {
  (void)state;
  enum { N = 250 };
  rlock_client *c = fx_client(srv, WD);
  rlock_lock *l[N];
  char name[32];
  for (int i = 0; i < N; i++) {
    snprintf(name, sizeof name, "wd:batch:%d", i);
    l[i] = fx_lock(c, name);
    OK(rlock_lock_acquire(l[i]));
  }
  freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
  rt_sleep_ms(2 * WD); /* the renewals of two leases, counted */
  long long calls = fx_evalsha_calls(srv);
  /* About 6 ticks of 3 batches each; one call per lock would be 1500. */
  ASSERT_RANGE(calls, 3, 60);
  for (int i = 0; i < N; i++) {
    snprintf(name, sizeof name, "wd:batch:%d", i);
    ASSERT_RANGE(rt_cmd_int(srv, "PTTL %s", name), 1, WD);
    OK(rlock_lock_release(l[i]));
    rlock_lock_free(l[i]);
  }
  rlock_client_free(c);
}

/* Poll rlock_lock_check() until it stops saying RLOCK_OK; returns the
 * answer and sets *at to when (rt_now_ms). */
static int wait_check_not_ok(rlock_lock *l, int64_t limit_ms, int64_t *at) {
  int64_t t0 = rt_now_ms();
  int rc;
  while ((rc = rlock_lock_check(l)) == RLOCK_OK && rt_now_ms() - t0 < limit_ms)
    rt_sleep_ms(5);
  *at = rt_now_ms();
  return rc;
}

static int64_t wait_calls(lost_log *log, int n, int64_t limit_ms) {
  int64_t t0 = rt_now_ms();
  while (atomic_load(&log->calls) < n && rt_now_ms() - t0 < limit_ms)
    rt_sleep_ms(5);
  return rt_now_ms();
}

/* A server outage: renewals fail, so the hold is vouched for only until a
 * watchdog lease after the last confirmed renewal. The check says so on
 * time, the callback follows within a renewal period, once. */
static void run_outage(int freeze) {
  rt_server *s = rt_server_start(NULL);
  lost_log log = {0};
  rlock_client *c = fx_client_opts(rt_server_url(s), WD, on_lost, &log);
  rlock_lock *l = fx_lock(c, "wd:outage");
  freeReplyObject(rt_cmd(s, "CONFIG RESETSTAT"));
  OK(rlock_lock_acquire(l));
  /* At least one renewal served (the acquisition is the first EVALSHA). */
  fx_wait_evalsha(s, 2, "a renewal");
  int64_t t0 = rt_now_ms();
  if (freeze)
    rt_server_freeze(s);
  else
    rt_server_stop(s);
  int64_t lost_at;
  RC(wait_check_not_ok(l, rt_scaled_ms(5 * WD), &lost_at), RLOCK_ELOST);
  /* Vouched for until WD after the last confirmed renewal: sent before t0,
   * and just before (the test saw it served), so at least WD / 3 on. */
  ASSERT_BETWEEN(lost_at - t0, WD / 3, WD + 100);
  print_message("check: lost %lld ms after the outage began\n",
                (long long)(lost_at - t0));
  if (!freeze) {
    /* Renewals fail fast (refused): the tick notices within a period. */
    int64_t told = wait_calls(&log, 1, rt_scaled_ms(5 * WD));
    assert_int_equal(atomic_load(&log.calls), 1);
    ASSERT_BETWEEN(told - lost_at, 0, WD / 3 + 200);
    print_message("callback: %lld ms after the check said lost\n",
                  (long long)(told - lost_at));
    assert_string_equal(log.name, "wd:outage");
    rt_sleep_ms(WD); /* more failing ticks: no second call */
    assert_int_equal(atomic_load(&log.calls), 1);
    RC(rlock_lock_check(l), RLOCK_ELOST);
  } else {
    /* The background thread is stuck in a renewal until the command
     * timeout; the check answers without it. */
    rt_server_thaw(s);
    wait_calls(&log, 1, rt_scaled_ms(4000));
    assert_int_equal(atomic_load(&log.calls), 1);
  }
  /* Stopped: the server may still be down. Frozen: renewals queued in
   * the socket ran at the thaw and kept the key, which the release then
   * deletes (RLOCK_OK) unless it expired first (RLOCK_ELOST). */
  int rc = rlock_lock_release(l);
  assert_true(rc == RLOCK_ELOST || (!freeze && rc == RLOCK_EIO) ||
              (freeze && rc == RLOCK_OK));
  RC(rlock_lock_check(l), RLOCK_ENOTHELD);
  FX_FREE((l), (c));
  rt_server_free(s);
}

static void test_outage_loses_hold_within_a_lease(void **state) {
  (void)state;
  run_outage(0);
}

static void test_frozen_server_loses_hold_within_a_lease(void **state) {
  (void)state;
  run_outage(1);
}

/* Normal releases, also racing renewal ticks, never call back. The
 * lease is long enough that a loaded machine does not lose the hold
 * outright (which would rightly call back): a 60 ms one was lost with
 * eight tests running at once. */
static void test_no_callback_after_release(void **state) {
  (void)state;
  lost_log log = {0};
  const int64_t lease = rt_scaled_ms(150);
  rlock_client *c = fx_client_opts(rt_server_url(srv), lease, on_lost, &log);
  rlock_lock *l = fx_lock(c, "wd:quiet");
  int64_t t0 = rt_now_ms();
  while (rt_now_ms() - t0 < 500) { /* renewal every 50 ms meanwhile */
    OK(rlock_lock_acquire(l));
    rt_sleep_ms(rt_now_ms() % 7);
    OK(rlock_lock_release(l));
  }
  OK(rlock_lock_acquire(l));
  rt_sleep_ms(2 * lease); /* renewed */
  OK(rlock_lock_check(l));
  OK(rlock_lock_release(l));
  rt_sleep_ms(lease); /* ticks after the release */
  assert_int_equal(atomic_load(&log.calls), 0);
  FX_FREE((l), (c));
}

/* A renewal in flight while the last watchdog level is released must not
 * stretch the fixed lease left below it to the watchdog lease. A 30 ms
 * watchdog renews every 10 ms, so releases often meet a renewal. A
 * thread of the test held up past the 30 ms (a loaded machine) loses
 * the whole key: that iteration shows nothing and is counted out. */
static void test_inflight_renewal_does_not_stretch_fixed_lease(void **state) {
  (void)state;
  rlock_client *c = fx_client_opts(rt_server_url(srv), 30, NULL, NULL);
  rlock_lock *l = fx_lock(c, "wd:stretch");
  int lost = 0;
  for (int i = 0; i < 200; i++) {
    OK(rlock_lock_acquire_lease(l, 5000));
    OK(rlock_lock_acquire(l));
    rt_sleep_ms(i % 11);
    /* PEXPIRE 5000: the fixed lease again */
    int rc = rlock_lock_release(l);
    if (rc == RLOCK_ELOST) {
      lost++;
      continue; /* the key expired: both levels are gone */
    }
    OK(rc);
    rt_sleep_ms(12); /* a late renewal (PEXPIRE 30) would land by now */
    long long ttl = rt_cmd_int(srv, "PTTL wd:stretch");
    if (ttl < 4000)
      fail_msg("iteration %d: PTTL %lld after the watchdog level went", i, ttl);
    OK(rlock_lock_release(l));
  }
  if (lost > 100)
    fail_msg("%d of 200 holds lost before their release: nothing shown", lost);
  FX_FREE((l), (c));
}

/* Child role "hold URL NAME WATCHDOG_MS": acquire with the watchdog,
 * write one byte to stdout, then wait to be killed. */
static int child_main(int argc, char **argv) {
  if (argc != 4 || strcmp(argv[0], "hold") != 0)
    return 64;
  rlock_config *cfg;
  rlock_client *c;
  rlock_lock *l;
  if (rlock_config_new(&cfg) || rlock_config_set_url(cfg, argv[1]) ||
      rlock_config_set_watchdog_timeout_ms(cfg, atoll(argv[3])) ||
      rlock_client_new(&c, cfg) || rlock_lock_new(&l, c, argv[2]) ||
      rlock_lock_acquire(l))
    return 1;
  if (write(STDOUT_FILENO, "x", 1) != 1)
    return 1;
  for (;;)
    pause();
}

/* A watchdog hold on a server that stops (SIGSTOP) for 2.5 s while
 * renewals tick every 300 ms and each renewal gives up after 250 ms (the
 * command timeout): every tick and every retry after a failure (75 ms
 * on) finds the node's connection failed or its renewal in flight, and
 * dials it again only after the one before failed, until the hold is
 * lost (900 ms without a confirmed renewal) and nothing more is sent. The
 * server counts the connections it was offered meanwhile (the kernel
 * queues them while it is stopped): the renewals' two at most (one
 * after the other), and one to spare. */
static void test_stopped_server_not_redialled_per_tick(void **state) {
  (void)state;
  rlock_config *cfg = fx_config(rt_server_url(srv), 900, NULL, NULL);
  OK(rlock_config_set_command_timeout_ms(cfg, 250));
  /* No registry record: its write, racing the stop, is no renewal's. */
  OK(rlock_config_set_registry_period(cfg, 0));
  rlock_client *c = dk_client_cfg(cfg);
  rlock_config_free(cfg);
  rlock_lock *l = fx_lock(c, "wd:stopped");
  uint64_t me = dk_me();
  OK(dk_acquire(l, me, 0, RLOCK_LEASE_WATCHDOG));
  long long before = fx_connections_taken(srv);
  rt_server_freeze(srv);
  /* Time is the point: ticks must come and go while it is stopped. */
  dk_let_time_pass(2500);
  rt_server_thaw(srv);
  long long opened = fx_connections_taken(srv) - before;
  print_message("%s: %lld connections made to the stopped server\n", dk_name(),
                opened);
  if (opened > 3)
    fail_msg("%lld connections in 2.5 s of 300 ms ticks", opened);
  RC(dk_check(l, me), RLOCK_ELOST);
  dk_release(l, me);
  rlock_lock_free(l);
  dk_free(c);
}

static const dk_case cases[] = {
    DK_CASE(test_renewal_beyond_three_timeouts, DK_ALL),
    DK_CASE(test_renewal_stops_at_release, DK_BLOCK),
    DK_CASE(test_lease_lock_not_renewed, DK_BLOCK),
    DK_CASE(test_mixed_leases_follow_the_hold_stack, DK_BLOCK),
    DK_CASE(test_crashed_holder_frees_within_timeout, DK_BLOCK),
    DK_CASE(test_lost_lock_is_reported_not_retaken, DK_ALL),
    DK_CASE(test_stopped_server_not_redialled_per_tick, DK_ALL),
    DK_CASE(test_renewals_are_batched, DK_BLOCK),
    DK_CASE(test_outage_loses_hold_within_a_lease, DK_BLOCK),
    DK_CASE(test_frozen_server_loses_hold_within_a_lease, DK_BLOCK),
    DK_CASE(test_no_callback_after_release, DK_BLOCK),
    DK_CASE(test_inflight_renewal_does_not_stretch_fixed_lease, DK_BLOCK),
};

DK_MAIN(cases, child_main)
