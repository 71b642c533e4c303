/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: one stopped master of a real Redis Cluster (rt_cluster: 3
 * masters, no replicas, SIGSTOP by rt_server_freeze) must stall only what
 * lives on it, on both drivers: a blocking client and a loop client
 * (libuv, the adapter compiled in; the loop runs on a thread of its own,
 * loop_topo.h, while the test's thread watches the servers).
 *
 *  - test_stopped_master_renewals: watchdog lease 500 ms, one hold on each
 *    master, master 0 stopped for 2.5 s. The holds on the two healthy
 *    masters keep a positive PTTL throughout and are never reported lost;
 *    after the thaw the stopped master's hold is renewed or reported lost,
 *    never silently gone.
 *  - test_wakeups_while_renewal_stuck: a watchdog hold on master 0, which
 *    is stopped, so the client's renewal ticks wait on it; two waiters of
 *    the same client on a lock of master 2 are still woken within 100 ms
 *    (scaled) of its release, taken the moment a renewal tick has begun.
 */
#include "loop_topo.h"

#include <limits.h>

#include "rt_cluster.h"

static rt_cluster *cl;

static rt_server *node(int i) { return rt_cluster_node(cl, i); }

/* No automatic failover while a master is stopped (there is no replica to
 * take over; the cluster would only declare itself down). */
static void set_node_timeout(int64_t ms) {
  for (int i = 0; i < rt_cluster_size(cl); i++)
    if (rt_server_pid(node(i)) != 0)
      freeReplyObject(rt_cmd(node(i), "CONFIG SET cluster-node-timeout %lld",
                             (long long)ms));
}

/* Every master running and the cluster ok: what a case that failed with
 * master 0 stopped may have left. */
static void cluster_ready(void) {
  lt_abandon(); /* a loop thread a failed case left */
  rt_server_thaw(node(0));
  set_node_timeout(RT_CLUSTER_NODE_TIMEOUT_MS);
  rt_cluster_wait_ok(cl, rt_scaled_ms(30000));
}

static long long pttl_on(redisContext *ctx, int n, const char *key) {
  redisReply *r = redisCommand(ctx, "PTTL %s", key);
  if (r == NULL || r->type != REDIS_REPLY_INTEGER)
    fail_msg("node %d: PTTL %s answered %s", n, key,
             r && r->str ? r->str : "nothing");
  long long v = r->integer;
  freeReplyObject(r);
  return v;
}

/* ---- the client under test, on either driver ---------------------------- */

#define NHOLDS 3
#define OWNER 1 /* the loop client's explicit owner of the holds */

typedef struct waiter_rec {
  rlock_lock *l;
  uint64_t owner;
  int rc;
  int64_t at_us; /* when the acquisition returned */
  atomic_int done;
  lt_res rel; /* loop: its release */
  pthread_t thread;
} waiter_rec;

static struct {
  int loop; /* 0: a blocking client, 1: a libuv loop client */
  int64_t watchdog;
  char url[1024];
  rlock_client *c;
  char names[NHOLDS][64];
  int nholds;
  rlock_lock *holds[NHOLDS];
  lt_res held[NHOLDS];
  atomic_int lost[NHOLDS]; /* the lost callback named holds[i] */
  atomic_int lost_other;
  char wname[64];
  rlock_lock *wl[2]; /* one lock object per waiter */
  waiter_rec w[2];
  lt x;
} st;

static void on_lost(const char *name, const char *owner, void *ud) {
  (void)owner, (void)ud;
  for (int i = 0; i < st.nholds; i++)
    if (strcmp(name, st.names[i]) == 0) {
      atomic_fetch_add(&st.lost[i], 1);
      return;
    }
  atomic_fetch_add(&st.lost_other, 1);
}

enum { CMD_HOLD = 2, CMD_WAIT = 3 };

static void loop_waiter_done(void *arg, int rc, int64_t value) {
  (void)value;
  waiter_rec *w = arg;
  w->rc = rc;
  w->at_us = rt_now_us();
  if (rc == RLOCK_OK &&
      rlock_lock_release_async(w->l, w->owner, lt_done, &w->rel) != RLOCK_OK)
    lt_fail(&st.x, "waiter release: %s", rlock_error_last()->message);
  atomic_store(&w->done, 1);
}

/* On the loop thread. */
static void loop_cmd(lt *x, int cmd) {
  if (cmd == LT_INIT) {
    st.c = lt_client(st.url, st.watchdog, on_lost, NULL);
    for (int i = 0; i < st.nholds; i++)
      if (rlock_lock_new(&st.holds[i], st.c, st.names[i]) != RLOCK_OK)
        lt_fail(x, "lock: %s", rlock_error_last()->message);
    for (int i = 0; i < 2 && st.wname[0] != '\0'; i++)
      if (rlock_lock_new(&st.wl[i], st.c, st.wname) != RLOCK_OK)
        lt_fail(x, "lock: %s", rlock_error_last()->message);
  } else if (cmd == CMD_HOLD) {
    for (int i = 0; i < st.nholds; i++) {
      rlock_acquire_options o = opts(OWNER, 5000, RLOCK_LEASE_WATCHDOG);
      lt_res_reset(&st.held[i]);
      if (rlock_lock_acquire_async(st.holds[i], &o, lt_done, &st.held[i],
                                   NULL) != RLOCK_OK)
        lt_fail(x, "acquire: %s", rlock_error_last()->message);
    }
  } else if (cmd == CMD_WAIT) {
    for (int i = 0; i < 2; i++) {
      waiter_rec *w = &st.w[i];
      rlock_acquire_options o = opts(w->owner, 20000, 10000);
      if (rlock_lock_acquire_async(w->l, &o, loop_waiter_done, w, NULL) !=
          RLOCK_OK)
        lt_fail(x, "waiter: %s", rlock_error_last()->message);
    }
  } else if (cmd == LT_STOP) {
    for (int i = 0; i < st.nholds; i++)
      rlock_lock_free(st.holds[i]);
    for (int i = 0; i < 2; i++)
      rlock_lock_free(st.wl[i]);
    if (st.c != NULL)
      rlock_client_free(st.c);
    st.c = NULL;
  }
}

/* Make the client and its lock objects (holds on names[0..nholds), and
 * two on wname when set). */
static void client_start(int loop, int64_t watchdog) {
  st.loop = loop;
  st.watchdog = watchdog;
  snprintf(st.url, sizeof st.url, "%s", rt_cluster_url(cl));
  for (int i = 0; i < NHOLDS; i++)
    atomic_store(&st.lost[i], 0);
  atomic_store(&st.lost_other, 0);
  memset(st.holds, 0, sizeof st.holds);
  memset(st.wl, 0, sizeof st.wl);
  for (int i = 0; i < 2; i++) {
    st.w[i].owner = (uint64_t)(i + 2);
    atomic_store(&st.w[i].done, 0);
    lt_res_reset(&st.w[i].rel);
  }
  if (loop) {
    lt_start(&st.x, loop_cmd, NULL);
  } else {
    st.c = fx_client_opts(st.url, watchdog, on_lost, NULL);
    for (int i = 0; i < st.nholds; i++)
      st.holds[i] = fx_lock(st.c, st.names[i]);
    for (int i = 0; i < 2 && st.wname[0] != '\0'; i++)
      st.wl[i] = fx_lock(st.c, st.wname);
  }
  for (int i = 0; i < 2; i++)
    st.w[i].l = st.wl[i];
}

/* One watchdog hold on each of names[0..nholds). */
static void take_holds(void) {
  if (!st.loop) {
    for (int i = 0; i < st.nholds; i++)
      OK(rlock_lock_acquire(st.holds[i]));
    return;
  }
  lt_do(&st.x, CMD_HOLD);
  for (int i = 0; i < st.nholds; i++)
    lt_wait_ok(&st.held[i], 10000, "a watchdog hold");
}

/* The client's own view of hold i: RLOCK_OK or RLOCK_ELOST. */
static int hold_check(int i) {
  return st.loop ? rlock_lock_check_owner(st.holds[i], OWNER)
                 : rlock_lock_check(st.holds[i]);
}

static void client_stop(void) {
  if (st.loop) {
    lt_stop(&st.x);
  } else {
    for (int i = 0; i < st.nholds; i++)
      rlock_lock_free(st.holds[i]);
    for (int i = 0; i < 2; i++)
      rlock_lock_free(st.wl[i]);
    rlock_client_free(st.c);
  }
  st.c = NULL;
}

static rlock_stats stats(void) {
  rlock_stats s;
  OK(rlock_client_stats(st.c, &s, sizeof s));
  return s;
}

/* ---- 1. a stopped master delays only its own holds' renewals ------------ */

typedef struct settled {
  redisContext *ctx;
  uint64_t renewals; /* the client's count when the master came back */
} settled;

/* The stopped master's hold is reported lost, or is there and renewed
 * since it came back. */
static bool pred_settled(void *arg, char *why, size_t cap) {
  settled *s = arg;
  int lost = atomic_load(&st.lost[0]) > 0;
  long long pttl = pttl_on(s->ctx, 0, st.names[0]);
  uint64_t renewals = stats().renewals;
  snprintf(why, cap,
           "hold on node 0: reported lost %d, PTTL %lld, check %d, %llu "
           "renewals since the thaw",
           lost, pttl, hold_check(0),
           (unsigned long long)(renewals - s->renewals));
  return lost || (pttl > 0 && hold_check(0) == RLOCK_OK &&
                  renewals >= s->renewals + NHOLDS);
}

/* Poll the healthy masters' holds while master 0 is stopped: every PTTL
 * stays positive. Returns the lowest seen. */
static long long watch_healthy(redisContext **ctx, int64_t ms) {
  long long low = LLONG_MAX;
  int64_t end = rt_now_ms() + ms;
  while (rt_now_ms() < end) {
    for (int m = 1; m < NHOLDS; m++) {
      long long v = pttl_on(ctx[m], m, st.names[m]);
      if (v <= 0)
        fail_msg("node %d: PTTL %s = %lld %.1f s into node 0's stop: not "
                 "renewed (%s client)",
                 m, st.names[m], v, (double)(ms - (end - rt_now_ms())) / 1000.0,
                 st.loop ? "loop" : "blocking");
      low = v < low ? v : low;
    }
    rt_sleep_ms(20); /* polling the servers, not waiting for the client */
  }
  return low;
}

static void stopped_master_renewals(int loop) {
  const int64_t wd = 500;
  cluster_ready();
  st.nholds = NHOLDS;
  st.wname[0] = '\0';
  for (int m = 0; m < NHOLDS; m++)
    rt_cluster_key_on(cl, m,
                      loop ? "stall:renew:loop:" : "stall:renew:", st.names[m],
                      sizeof st.names[m]);
  client_start(loop, wd);
  take_holds();
  redisContext *ctx[NHOLDS];
  for (int m = 0; m < NHOLDS; m++)
    ctx[m] = rt_server_connect(node(m));
  /* Renewals run (a lease's worth, and more: each is renewed a few times). */
  uint64_t before = stats().renewals;
  watch_healthy(ctx, 2 * wd);
  assert_true(stats().renewals >= before + NHOLDS);
  set_node_timeout(60000);
  rt_server_freeze(node(0));
  int64_t t0 = rt_now_ms();
  long long low = watch_healthy(ctx, 2500);
  printf("[   INFO   ] %s client, node 0 stopped %.1f s: the other holds' "
         "lowest PTTL %lld of %lld ms\n",
         loop ? "loop" : "blocking", (double)(rt_now_ms() - t0) / 1000.0, low,
         (long long)wd);
  for (int m = 1; m < NHOLDS; m++) {
    assert_int_equal(atomic_load(&st.lost[m]), 0);
    OK(hold_check(m));
  }
  settled s = {ctx[0], stats().renewals};
  rt_server_thaw(node(0));
  set_node_timeout(RT_CLUSTER_NODE_TIMEOUT_MS);
  rt_wait_until(pred_settled, &s, rt_scaled_ms(5000),
                "the stopped master's hold renewed or reported lost");
  /* Not silently gone: absent on the server means told. */
  if (pttl_on(ctx[0], 0, st.names[0]) <= 0) {
    assert_int_equal(atomic_load(&st.lost[0]), 1);
    RC(hold_check(0), RLOCK_ELOST);
  }
  for (int m = 1; m < NHOLDS; m++) {
    assert_true(pttl_on(ctx[m], m, st.names[m]) > 0);
    assert_int_equal(atomic_load(&st.lost[m]), 0);
  }
  assert_int_equal(atomic_load(&st.lost_other), 0);
  for (int m = 0; m < NHOLDS; m++)
    redisFree(ctx[m]);
  client_stop();
  rt_cluster_wait_ok(cl, rt_scaled_ms(30000));
}

static void test_stopped_master_renewals_blocking(void **state) {
  (void)state;
  stopped_master_renewals(0);
}

static void test_stopped_master_renewals_loop(void **state) {
  (void)state;
  stopped_master_renewals(1);
}

/* ---- 2. waiters woken while a renewal tick waits on a stopped master ---- */

static void *blocking_waiter(void *arg) {
  waiter_rec *w = arg;
  w->rc = rlock_lock_try_acquire(w->l, 20000, 10000);
  w->at_us = rt_now_us();
  if (w->rc == RLOCK_OK && rlock_lock_release(w->l) != RLOCK_OK)
    w->rc = -200;
  atomic_store(&w->done, 1);
  return NULL;
}

static void start_waiters(void) {
  if (st.loop) {
    lt_do(&st.x, CMD_WAIT);
    return;
  }
  for (int i = 0; i < 2; i++)
    assert_int_equal(
        pthread_create(&st.w[i].thread, NULL, blocking_waiter, &st.w[i]), 0);
}

typedef struct subscribed {
  const char *channel;
} subscribed;

/* Both waiters found the lock held, and its channel is subscribed on some
 * node (classic or sharded pub/sub, whichever the cluster got). */
static bool pred_waiting(void *arg, char *why, size_t cap) {
  subscribed *s = arg;
  long long subs = 0;
  for (int m = 0; m < rt_cluster_masters(cl); m++)
    subs += fx_subscribers_of(node(m), 0, s->channel) +
            fx_subscribers_of(node(m), 1, s->channel);
  uint64_t waits = stats().waits;
  snprintf(why, cap, "%llu waits, %lld subscriptions of %s",
           (unsigned long long)waits, subs, s->channel);
  return waits >= 2 && subs >= 1;
}

static bool pred_waiters_done(void *arg, char *why, size_t cap) {
  (void)arg;
  int n = atomic_load(&st.w[0].done) + atomic_load(&st.w[1].done);
  snprintf(why, cap, "%d of 2 waiters returned", n);
  return n == 2;
}

/* Wait until a renewal tick has begun: the PTTL of hold 1 (a healthy
 * master's) goes up. The tick sent hold 0's batch too, to the stopped
 * master, and waits for its answer from now on. */
static void wait_tick(redisContext *ctx) {
  long long prev = pttl_on(ctx, 1, st.names[1]);
  int64_t end = rt_now_ms() + rt_scaled_ms(5000);
  for (;;) {
    long long v = pttl_on(ctx, 1, st.names[1]);
    if (v > prev)
      return;
    prev = v;
    if (rt_now_ms() > end)
      fail_msg("no renewal of %s seen", st.names[1]);
    rt_sleep_ms(2); /* polling the server for the tick's renewal */
  }
}

static void wakeups_while_renewal_stuck(int loop) {
  /* Renewal every second; a node's answer is awaited up to the command
   * timeout (2 s): a tick waits on the stopped master that long. */
  const int64_t wd = 3000;
  cluster_ready();
  st.nholds = 2;
  const char *p[3] = {"stall:stuck:", "stall:tick:", "stall:wait:"};
  const char *lp[3] = {
      "stall:stuck:loop:", "stall:tick:loop:", "stall:wait:loop:"};
  rt_cluster_key_on(cl, 0, (loop ? lp : p)[0], st.names[0], sizeof st.names[0]);
  rt_cluster_key_on(cl, 1, (loop ? lp : p)[1], st.names[1], sizeof st.names[1]);
  rt_cluster_key_on(cl, 2, (loop ? lp : p)[2], st.wname, sizeof st.wname);
  char channel[128];
  snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", st.wname);
  client_start(loop, wd);
  take_holds();
  rlock_client *hc = fx_client_opts(rt_cluster_url(cl), 0, NULL, NULL);
  rlock_lock *held = fx_lock(hc, st.wname);
  OK(rlock_lock_try_acquire(held, 0, 30000));
  start_waiters();
  subscribed sub = {channel};
  rt_wait_until(pred_waiting, &sub, rt_scaled_ms(5000), "both waiters");
  redisContext *ctx = rt_server_connect(node(1));
  set_node_timeout(60000);
  /* Stopped just after a tick, so the next one (a second on) sends hold
   * 0's renewal to the stopped master, while that hold is still vouched
   * for (3 s from its last renewal), and waits for its answer. */
  wait_tick(ctx);
  rt_server_freeze(node(0));
  wait_tick(ctx);
  int64_t t0 = rt_now_us();
  OK(rlock_lock_release(held));
  rt_wait_until(pred_waiters_done, NULL, rt_scaled_ms(10000),
                "both waiters served");
  rt_server_thaw(node(0));
  set_node_timeout(RT_CLUSTER_NODE_TIMEOUT_MS);
  if (!loop)
    for (int i = 0; i < 2; i++)
      pthread_join(st.w[i].thread, NULL);
  else
    for (int i = 0; i < 2; i++)
      lt_wait_ok(&st.w[i].rel, 10000, "a waiter's release");
  for (int i = 0; i < 2; i++) {
    double ms = (double)(st.w[i].at_us - t0) / 1000.0;
    printf("[   INFO   ] %s client: waiter %d served %.1f ms after the "
           "release, a renewal tick waiting on a stopped master\n",
           loop ? "loop" : "blocking", i, ms);
    OK(st.w[i].rc);
  }
  for (int i = 0; i < 2; i++)
    if (st.w[i].at_us - t0 > rt_scaled_ms(100) * 1000)
      fail_msg("%s client: waiter %d served %.1f ms after the release (more "
               "than %lld ms)",
               loop ? "loop" : "blocking", i,
               (double)(st.w[i].at_us - t0) / 1000.0,
               (long long)rt_scaled_ms(100));
  redisFree(ctx);
  rlock_lock_free(held);
  rlock_client_free(hc);
  client_stop();
  st.wname[0] = '\0';
  rt_cluster_wait_ok(cl, rt_scaled_ms(30000));
}

static void test_wakeups_while_renewal_stuck_blocking(void **state) {
  (void)state;
  wakeups_while_renewal_stuck(0);
}

static void test_wakeups_while_renewal_stuck_loop(void **state) {
  (void)state;
  wakeups_while_renewal_stuck(1);
}

/* ---- the group ------------------------------------------------------------
 */

static int setup(void **state) {
  (void)state;
  kind = UV;
  cl = rt_cluster_start(3, 0);
  loop_open();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  lt_abandon();
  loop_close();
  rt_cluster_free(cl);
  cl = NULL;
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stopped_master_renewals_blocking),
      cmocka_unit_test(test_stopped_master_renewals_loop),
      cmocka_unit_test(test_wakeups_while_renewal_stuck_blocking),
      cmocka_unit_test(test_wakeups_while_renewal_stuck_loop),
  };
  return RT_RUN_GROUP("tests", tests, setup, teardown);
}
