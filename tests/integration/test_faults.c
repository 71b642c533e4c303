/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault runs: worker processes take turns on fenced locks while the
 * harness injects faults, and the history checker (rt_history.h) judges
 * what they recorded. Each worker loops: acquire (2 s wait), bump a
 * counter inside the lock (GET then SET: a lost update shows two holders
 * at once), write its fencing token to a fenced resource (a Lua check:
 * refused below the highest token seen), check the lock is still held,
 * release. Faults: holders killed with SIGKILL; holders stopped past
 * their lease (SIGSTOP, SIGCONT); the server restarted with an
 * append-only file; the server paused; connections killed (CLIENT KILL,
 * the subscriber's too). Each runs RLOCK_FAULT_SECONDS (default 3);
 * every scenario but the slow link is written once and runs with
 * blocking workers and with libuv loop workers (FK_BOTH_DRIVERS,
 * faults_kit.h); those on the server (restart, pause, maxmemory) with
 * libevent loop workers too (FK_ALL_DRIVERS).
 * Where a lease lock cannot promise exclusion (a stopped holder), the
 * checker requires the stale holder to have been refused. */
#include "faults_kit.h"

#include "rt_cluster.h"
#include "rt_sentinel.h"

/* `--child worker ...` (the kit's workers) or `--child netem`. */
static int netem_main(void);

static int child_main(int argc, char **argv) {
  if (argc == 1 && strcmp(argv[0], "netem") == 0)
    return netem_main();
  return fk_child_main(argc, argv) == 0 ? 0 : 64;
}

static unsigned seed = 12345;

/* Holders killed at random moments: the lock comes free when their lease
 * runs out, and no two workers ever hold it at once. */
static void kill9(fk_mode mode) {
  int fd = fk_begin("kill9", mode);
  fk_kill9_faults(fd, &seed);
  fk_finish(fd, "kill9", 1);
}

/* Holders stopped for twice their lease: others take the lock meanwhile;
 * the stale holder's fenced write is refused or it learns it lost the
 * lock. (Its counter bump may be lost: the counter is not fenced.) */
static void sigstop(fk_mode mode) {
  int fd = fk_begin("sigstop", mode);
  int stale = fk_sigstop_faults(fd, &seed);
  rt_verdict v = fk_finish(fd, "sigstop", 0);
  /* Each stale holder was told: its write refused, or the lock lost. */
  assert_true(stale > 0);
  assert_true(v.writes_refused + v.lost >= stale);
}

/* The server restarted with an append-only file (fsync always): locks
 * and the counter survive, waiters ride the restart out. */
static void restart_persistent(fk_mode mode) {
  rt_server *plain = srv; /* the workers use srv: this run's server */
  srv = rt_server_start((const char *const[]){"--appendonly", "yes",
                                              "--appendfsync", "always", NULL});
  int fd = fk_begin("restart-aof", mode);
  for (int64_t t0 = rt_now_ms(); rt_now_ms() - t0 < fk_run_ms();) {
    rt_sleep_ms(500 + rand_r(&seed) % 300);
    rt_history_add(fd, -1, -1, RT_EV_FAULT, 'R', 0, 0);
    rt_server_restart(srv); /* the same options: the AOF is read back */
  }
  fk_finish(fd, "restart-aof", 1);
  rt_server_free(srv);
  srv = plain;
}

/* The server paused for less than a lease: calls wait or time out with a
 * documented status, nothing overlaps. */
static void server_paused(fk_mode mode) {
  int fd = fk_begin("pause", mode);
  for (int64_t t0 = rt_now_ms(); rt_now_ms() - t0 < fk_run_ms();) {
    rt_sleep_ms(300 + rand_r(&seed) % 300);
    rt_history_add(fd, -1, -1, RT_EV_FAULT, 'P', 0, 0);
    rt_server_freeze(srv);
    rt_sleep_ms(FK_WATCHDOG_MS / 2); /* the pause is the fault */
    rt_server_thaw(srv);
  }
  fk_finish(fd, "pause", 1);
}

/* Connections killed under the workers' feet, the subscribers' too:
 * waiters still wake (none starves), nothing overlaps. */
static void client_kill(fk_mode mode) {
  int fd = fk_begin("client-kill", mode);
  for (int64_t t0 = rt_now_ms(); rt_now_ms() - t0 < fk_run_ms();) {
    rt_sleep_ms(100 + rand_r(&seed) % 200);
    int pubsub = rand_r(&seed) % 2;
    rt_history_add(fd, -1, -1, RT_EV_FAULT, pubsub ? 'S' : 'N', 0, 0);
    freeReplyObject(rt_cmd(srv, "CLIENT KILL TYPE %s SKIPME yes",
                           pubsub ? "pubsub" : "normal"));
  }
  fk_finish(fd, "client-kill", 0); /* the counter's own link is killed too */
}

/* Append a record at *t, then step *t a microsecond. */
static void put(int fd, int64_t *t, int worker, int lock, rt_ev ev, int64_t a,
                int64_t b, int64_t c) {
  rt_record r = {(*t)++, worker, lock, (int32_t)ev, 0, a, b, c};
  assert_int_equal(write(fd, &r, sizeof r), (ssize_t)sizeof r);
}

/* The checker itself: a hand-made history with an overlap and a token
 * inversion is caught; a clean one passes. */
static void test_checker(void **state) {
  (void)state;
  char path[512];
  snprintf(path, sizeof path, "%s/checker.history", rt_server_dir(srv));
  unlink(path);
  int fd = rt_history_open(path);
  int64_t t = 1000; /* times of its own, a microsecond apart: records
                       of one microsecond would make holds of none */
  put(fd, &t, 0, 0, RT_EV_ACQUIRED, 5, 0, 0);
  put(fd, &t, 0, 0, RT_EV_WRITE_ACCEPTED, 5, 0, 0);
  put(fd, &t, 1, 0, RT_EV_ACQUIRED, 4, 0, 0);       /* overlap */
  put(fd, &t, 1, 0, RT_EV_WRITE_ACCEPTED, 4, 0, 0); /* inversion */
  put(fd, &t, 1, 0, RT_EV_RELEASING, 0, 0, 0);
  put(fd, &t, 0, 0, RT_EV_RELEASING, 0, 0, 0);
  put(fd, &t, 2, 1, RT_EV_ACQUIRE_CALL, 100, 5000, 0); /* starved */
  put(fd, &t, 2, 1, RT_EV_ACQUIRE_FAILED, -99, 100, 5000);
  put(fd, &t, 2, 1, RT_EV_ACQUIRE_CALL, 100, 100, 0);
  put(fd, &t, 2, 1, RT_EV_ACQUIRE_FAILED, RLOCK_EHELD, 0, 0); /* documented */
  close(fd);
  rt_verdict v = rt_history_check(path, -1, 1000);
  assert_int_equal(v.overlaps, 1);
  assert_int_equal(v.token_inversions, 1);
  assert_int_equal(v.starved, 1);
  assert_int_equal(v.undocumented, 1);
  assert_false(rt_history_clean(&v));
  unlink(path);
  fd = rt_history_open(path);
  t = 1000;
  for (int w = 0; w < 2; w++) {
    put(fd, &t, w, 0, RT_EV_ACQUIRED, w + 1, 0, 0);
    put(fd, &t, w, 0, RT_EV_BUMP_DONE, w + 1, 0, 0);
    put(fd, &t, w, 0, RT_EV_RELEASING, 0, 0, 0);
  }
  close(fd);
  v = rt_history_check(path, 1, 1000); /* two bumps, counter 1: lost */
  assert_int_equal(v.lost_updates, 1);
  v = rt_history_check(path, 2, 1000);
  assert_true(rt_history_clean(&v));
}

/* The server restarted WITHOUT persistence: it forgets the locks (and the
 * token counters), so two holders may overlap; each overlap's stale
 * holder must learn it (its lock lost) or be refused by the fenced
 * resource, kept in a file here since Redis forgets it too. */
static void restart_volatile(fk_mode mode) {
  fk.file_fence = 1;
  snprintf(fk.fence_path, sizeof fk.fence_path, "%s/fence", rt_server_dir(srv));
  int fd = fk_begin("restart-volatile", mode);
  for (int64_t t0 = rt_now_ms(); rt_now_ms() - t0 < fk_run_ms();) {
    rt_sleep_ms(500 + rand_r(&seed) % 300);
    rt_history_add(fd, -1, -1, RT_EV_FAULT, 'V', 0, 0);
    rt_server_restart(srv); /* no data kept */
  }
  rt_verdict v = fk_finish(fd, "restart-volatile", 0);
  fk.file_fence = 0;
  assert_true(v.faults > 0);
}

/* maxmemory reached (noeviction): acquisitions fail with a documented
 * status (the server's OOM refusal) while it lasts, nothing is half
 * written, and locks work again once memory is freed. */
static void maxmemory(fk_mode mode) {
  int fd = fk_begin("maxmemory", mode);
  rt_cmd_ok(srv, "CONFIG SET maxmemory-policy noeviction");
  for (int64_t t0 = rt_now_ms(); rt_now_ms() - t0 < fk_run_ms();) {
    rt_sleep_ms(200 + rand_r(&seed) % 200);
    rt_history_add(fd, -1, -1, RT_EV_FAULT, 'M', 0, 0);
    rt_cmd_ok(srv, "CONFIG SET maxmemory 1");
    rt_sleep_ms(300); /* the fault lasts this long */
    rt_cmd_ok(srv, "CONFIG SET maxmemory 0");
  }
  rt_verdict v = fk_finish(fd, "maxmemory", 1);
  assert_true(v.acquire_failed > 0); /* the OOM refusals, documented */
}

/* Sentinel moves the master (SENTINEL FAILOVER: the replica is promoted
 * at once) every 0.3-0.6 s under the workers. Acquisitions are confirmed
 * with WAIT on the replicas the master has; right after a switch the new
 * master has none attached yet, and what it accepts then is lost at the
 * next switch (asynchronous replication): locks vanish and token counters
 * go back. Overlaps must have their stale holder told or refused; the
 * counter, not fenced, may lose updates then, so it is not judged. */
static void sentinel_failover(fk_mode mode) {
  rt_sentinel_group *g = rt_sentinel_start("faultmaster", 1, 3);
  fk.lock_url = rt_sentinel_url(g);
  int fd = fk_begin("sentinel-failover", mode);
  int switches = 0;
  for (int64_t t0 = rt_now_ms(); rt_now_ms() - t0 < fk_run_ms(); switches++) {
    rt_sleep_ms(300 + rand_r(&seed) % 300);
    rt_history_add(fd, -1, -1, RT_EV_FAULT, 'F', 0, 0);
    rt_sentinel_failover(g, rt_scaled_ms(30000));
  }
  rt_verdict v = fk_finish(fd, "sentinel-failover", 0);
  fk.lock_url = NULL;
  rt_sentinel_free(g);
  assert_true(switches > 0 && v.acquisitions > 0);
}

/* A cluster master fails over (CLUSTER FAILOVER on its replica) under the
 * workers: slots move, redirections are followed, nothing overlaps
 * unexplained. */
static void cluster_failover(fk_mode mode) {
  rt_cluster *cl = rt_cluster_start(3, 1);
  fk.lock_url = rt_cluster_url(cl);
  int fd = fk_begin("cluster-failover", mode);
  int switches = 0;
  for (int64_t t0 = rt_now_ms(); rt_now_ms() - t0 < fk_run_ms(); switches++) {
    rt_sleep_ms(300 + rand_r(&seed) % 300);
    rt_history_add(fd, -1, -1, RT_EV_FAULT, 'C', 0, 0);
    int m = -1; /* the first master: its replica takes over */
    for (int i = 0; i < rt_cluster_size(cl) && m < 0; i++)
      if (rt_cluster_is_master(cl, i))
        m = i;
    rt_cluster_failover(cl, m);
  }
  rt_verdict v = fk_finish(fd, "cluster-failover", 1);
  fk.lock_url = NULL;
  rt_cluster_free(cl);
  assert_true(switches > 0 && v.acquisitions > 0);
}

/* ---- one client in the test's own process, on either driver ----------- */

/* A client of `url` on `mode`'s driver (a loop client on its own libuv
 * loop or libevent base, run here while a call waits), the lock its calls
 * take (set by the caller) and their owner. */
typedef struct one_client {
  fk_mode mode;
  uv_loop_t loop;
  struct event_base *evb;
  rlock_client *c;
  rlock_lock *l;
  uint64_t owner; /* the loop's calls' (a blocking call's: the thread) */
} one_client;

static void one_open(one_client *o, fk_mode mode, const char *url) {
  rlock_config *cfg;
  o->mode = mode;
  o->l = NULL;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, url));
  OK(rlock_config_set_connect_timeout_ms(cfg, 500));
  OK(rlock_config_set_command_timeout_ms(cfg, 1000));
  if (mode == FK_LOOP) {
    uv_loop_init(&o->loop);
    OK(rlock_client_new_uv(&o->c, cfg, &o->loop));
  } else if (mode == FK_EVENT) {
    assert_non_null(o->evb = event_base_new());
    OK(rlock_client_new_event(&o->c, cfg, o->evb));
  } else {
    OK(rlock_client_new(&o->c, cfg));
  }
  rlock_config_free(cfg);
  o->owner = mode == FK_BLOCKING ? RLOCK_OWNER_THREAD : rlock_owner_new();
}

static void one_close(one_client *o) {
  OK(rlock_client_free(o->c));
  if (o->mode == FK_LOOP) {
    uv_run(&o->loop, UV_RUN_NOWAIT); /* the adapter's handles close */
    assert_int_equal(uv_loop_close(&o->loop), 0);
  } else if (o->mode == FK_EVENT) {
    event_base_free(o->evb);
  }
}

/* Run the loop until the call `done` answers: its status. */
static int one_wait(one_client *o, fk_call *done) {
  int64_t end = rt_now_ms() + rt_scaled_ms(10000);
  while (!done->done && rt_now_ms() < end)
    if (o->mode == FK_EVENT)
      event_base_loop(o->evb, EVLOOP_ONCE);
    else
      uv_run(&o->loop, UV_RUN_ONCE);
  if (!done->done)
    fail_msg("no answer from the loop client within 10 s");
  return done->rc;
}

/* Acquire with a wait of 5 s and a fixed lease of `lease_ms`. */
static int one_acquire(one_client *o, int64_t lease_ms) {
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  opts.wait_ms = 5000;
  opts.lease_ms = lease_ms;
  opts.owner = o->owner;
  if (o->mode == FK_BLOCKING)
    return rlock_lock_acquire_opts(o->l, &opts);
  fk_call done = {0};
  int rc = rlock_lock_acquire_async(o->l, &opts, fk_on_done, &done, NULL);
  return rc != RLOCK_OK ? rc : one_wait(o, &done);
}

static int one_release(one_client *o) {
  if (o->mode == FK_BLOCKING)
    return rlock_lock_release(o->l);
  fk_call done = {0};
  int rc = rlock_lock_release_async(o->l, o->owner, fk_on_done, &done);
  return rc != RLOCK_OK ? rc : one_wait(o, &done);
}

/* A release that cannot reach the server (it is down) leaves the owner's
 * hold there, to run out with its lease (rlock_lock_release's
 * RLOCK_EIO). Taken again by the same owner meanwhile, the lock must not
 * count that stale level: the next release, this client's last, frees
 * it. (Otherwise an owner taking and releasing the lock in a loop keeps
 * it held one level deep for good, as restart_persistent's workers did,
 * and every other client's wait runs out.) */
static void outage_round(one_client *o, rt_server *aof, const char *name) {
  OK(one_acquire(o, 60000)); /* a fixed lease outlasts the test */
  rt_server_stop(aof);
  int rc = one_release(o);
  if (rc != RLOCK_EIO && rc != RLOCK_ETIMEOUT)
    fail_msg("%s: a release with the server down: %d (%s)", name, rc,
             rlock_error_last()->message);
  rt_server_start_again(aof); /* the lock is read back from the AOF */
  if (rt_cmd_int(aof, "EXISTS %s", name) != 1)
    fail_msg("%s: the failed release's level is not there", name);
  OK(one_acquire(o, 60000));
  OK(one_release(o));
  if (rt_cmd_int(aof, "EXISTS %s", name) != 0)
    fail_msg("%s: still held after its owner's last release", name);
}

/* Each kind whose levels the server counts. */
static const struct {
  const char *name;
  int (*make)(rlock_lock **, rlock_client *, const char *);
} counted_kinds[] = {{"fault:outage", rlock_lock_new},
                     {"fault:outage:fair", rlock_lock_new_fair},
                     {"fault:outage:write", rlock_lock_new_write},
                     {"fault:outage:read", rlock_lock_new_read}};

static void release_after_outage(fk_mode mode) {
  rt_server *aof = rt_server_start((const char *const[]){
      "--appendonly", "yes", "--appendfsync", "always", NULL});
  one_client o;
  one_open(&o, mode, rt_server_url(aof));
  for (size_t i = 0; i < sizeof counted_kinds / sizeof counted_kinds[0]; i++) {
    OK(counted_kinds[i].make(&o.l, o.c, counted_kinds[i].name));
    outage_round(&o, aof, counted_kinds[i].name);
    rlock_lock_free(o.l);
  }
  one_close(&o);
  rt_server_free(aof);
}

FK_BOTH_DRIVERS(kill9)
FK_BOTH_DRIVERS(sigstop)
FK_BOTH_DRIVERS(client_kill)
FK_ALL_DRIVERS(server_paused)
FK_ALL_DRIVERS(restart_persistent)
FK_ALL_DRIVERS(restart_volatile)
FK_ALL_DRIVERS(maxmemory)
FK_ALL_DRIVERS(release_after_outage)
FK_BOTH_DRIVERS(sentinel_failover)
FK_BOTH_DRIVERS(cluster_failover)

/* Inside the network namespace test_slow_link made: the workload over its
 * shaped loopback, no other fault. */
static void test_shaped_link(void **state) {
  (void)state;
  int fd = fk_begin("slow-link", FK_BLOCKING);
  rt_sleep_ms(fk_run_ms()); /* the link is the fault, all along */
  fk_finish(fd, "slow-link", 1);
}

static int netem_main(void) {
  const struct CMUnitTest inside[] = {cmocka_unit_test(test_shaped_link)};
  return cmocka_run_group_tests(inside, fx_setup, fx_teardown);
}

/* Slow and lossy links: the test binary runs again in a network namespace
 * of its own (unshare --net) whose loopback gets tc netem (2 ms +- 1 ms
 * delay, 1% loss) or, where the kernel has no netem, a token bucket
 * (tbf, 8 Mbit/s: slow, not lossy), and the workload runs there. Skipped
 * where the machine allows neither a namespace nor a shaping qdisc. */
static void test_slow_link(void **state) {
  (void)state;
  const char *probe =
      "unshare --net -- sh -c 'ip link set lo up && "
      "(tc qdisc add dev lo root netem delay 2ms 1ms loss 1% || "
      "tc qdisc add dev lo root tbf rate 8mbit burst 256kbit latency 200ms)' "
      ">/dev/null 2>&1";
  if (system(probe) != 0) {
    print_message("no network namespace with tc netem or tbf here: "
                  "skipped\n");
    skip();
  }
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "unshare --net -- sh -c 'ip link set lo up && "
           "{ tc qdisc add dev lo root netem delay 2ms 1ms loss 1%% "
           "2>/dev/null && echo \"[   INFO   ] loopback: netem 2ms+-1ms, "
           "1%% loss\" || { tc qdisc add dev lo root tbf rate 8mbit burst "
           "256kbit latency 200ms && echo \"[   INFO   ] loopback: no netem in "
           "this kernel; tbf 8 Mbit/s (slow, not lossy)\"; }; } && "
           "exec \"$0\" --child netem' '%s'",
           fx_argv0);
  fflush(stdout);
  int st = system(cmd);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fail_msg("the run in the shaped namespace failed (status %d)", st);
}

static const struct CMUnitTest tests_of_faults[] = {
    cmocka_unit_test(test_checker),
    FK_CASES(kill9),
    FK_CASES(sigstop),
    FK_ALL_CASES(server_paused),
    FK_CASES(client_kill),
    FK_ALL_CASES(restart_persistent),
    FK_ALL_CASES(restart_volatile),
    FK_ALL_CASES(maxmemory),
    FK_ALL_CASES(release_after_outage),
    FK_CASES(sentinel_failover),
    FK_CASES(cluster_failover),
    cmocka_unit_test(test_slow_link),
};

FX_MAIN(tests_of_faults, fx_setup, fx_teardown, child_main)
