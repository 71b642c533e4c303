/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: event-loop clients (rlock/loop.h) through Redis Sentinel
 * (rt_sentinel: a master, one replica, three sentinels), every case once
 * on libuv and once on libevent: the master the sentinels name, checked
 * with ROLE, takes every lock; waiters are woken by unlock messages; a
 * master name no sentinel knows fails at once, saying so; a graceful
 * switch (SENTINEL FAILOVER) under a sleeping waiter is followed through
 * +switch-master alone (the old master stays up); kill -9 of the
 * master under holders and waiters: the waiters ride the failover out
 * within their wait (the subscription follows +switch-master to the new
 * master), a replicated hold is renewed there or reported lost, one the
 * new master never saw is reported lost and taken by its waiter, and a
 * call begun at the kill gets its lock. Through the failover the loop runs
 * on a thread of its own (loop_topo.h) and a 10 ms timer on it must never
 * be more than 20 ms late. The blocking client's versions of these cases
 * are in test_sentinel.c.
 */
#include "loop_topo.h"

#include "rt_sentinel.h"

#define MASTER_NAME "rlock-loop-master"

/* The deployment the basic cases share (started by the first group). */
static rt_sentinel_group *grp;

/* "127.0.0.1:PORT" of a server. */
static const char *addr_of(rt_server *s, char *buf, size_t size) {
  snprintf(buf, size, "127.0.0.1:%d", rt_server_port(s));
  return buf;
}

/* How many times `s` ran `cmd` since its last CONFIG RESETSTAT. */
static long long calls_of(rt_server *s, const char *cmd) {
  char field[64], v[256];
  snprintf(field, sizeof field, "cmdstat_%s", cmd);
  if (!rt_server_info_field(s, "commandstats", field, v, sizeof v))
    return 0;
  const char *p = strstr(v, "calls=");
  return p ? atoll(p + strlen("calls=")) : 0;
}

static bool pred_subscribed(void *arg, char *why, size_t cap) {
  const char *ch = arg;
  long long n = fx_subscribers(rt_sentinel_master(grp), ch);
  snprintf(why, cap, "%lld subscribers of %s on the master", n, ch);
  return n == 1;
}

/* ---- 1. the master the sentinels name ---------------------------------- */

typedef struct seen_info {
  int done, rc;
  char node[64];
} seen_info;

static void on_info(void *arg, int rc, rlock_lock_info *info) {
  seen_info *s = arg;
  s->done++;
  s->rc = rc;
  if (info != NULL)
    snprintf(s->node, sizeof s->node, "%s", rlock_lock_info_node(info));
  rlock_lock_info_free(info);
}

/* A fresh loop client asks the sentinels, checks the master with ROLE,
 * and every lock kind lands there. */
static void test_discovery(void **state) {
  (void)state;
  rt_server *m = rt_sentinel_master(grp);
  rt_cmd_ok(m, "CONFIG RESETSTAT");
  rlock_client *c = lt_client(rt_sentinel_url(grp), 0, NULL, NULL);
  assert_string_equal(rlock_client_topology(c), "sentinel");
  rlock_lock *l = fx_lock(c, "ls:basic");
  uint64_t me = rlock_owner_new();
  char field[RLOCK_OWNER_MAX], at[64];
  field_of(c, me, field);
  OK(acquire(l, me, 0, 20000));
  OK(acquire(l, me, 0, RLOCK_LEASE_WATCHDOG)); /* re-entered */
  assert_int_equal(fx_hget(m, "ls:basic", field), 2);
  assert_true(calls_of(m, "role") >= 1); /* the master was checked */
  seen_info info = {0};
  OK(rlock_lock_inspect_async(l, on_info, &info));
  run_until(&info.done, 1, 5000, "an inspection");
  OK(info.rc);
  assert_string_equal(info.node, addr_of(m, at, sizeof at));
  OK(release(l, me));
  OK(release(l, me));
  assert_int_equal(rt_cmd_int(m, "EXISTS ls:basic"), 0);
  RC(release(l, me), RLOCK_ENOTHELD);
  /* The other kinds. */
  rlock_lock *fair, *rd, *wr, *fenced, *spin;
  OK(rlock_lock_new_fair(&fair, c, "ls:fair"));
  OK(rlock_lock_new_read(&rd, c, "ls:rw"));
  OK(rlock_lock_new_write(&wr, c, "ls:rw"));
  OK(rlock_lock_new_fenced(&fenced, c, "ls:fenced"));
  OK(rlock_lock_new_spin(&spin, c, "ls:spin"));
  rlock_lock *each[] = {fair, rd, fenced, spin};
  const char *keys[] = {"ls:fair", "ls:rw", "ls:fenced", "ls:spin"};
  for (int i = 0; i < 4; i++) {
    OK(acquire(each[i], me, 0, 20000));
    assert_int_equal(rt_cmd_int(m, "EXISTS %s", keys[i]), 1);
    OK(release(each[i], me));
    assert_int_equal(rt_cmd_int(m, "EXISTS %s", keys[i]), 0);
  }
  OK(acquire(wr, me, 0, 20000));
  RC(acquire(rd, rlock_owner_new(), 0, 20000), RLOCK_ELOCKED);
  OK(release(wr, me));
  for (int i = 0; i < 4; i++)
    rlock_lock_free(each[i]);
  rlock_lock_free(wr);
  rlock_lock_free(l);
  loop_free(c);
}

/* A loop waiter on its own client, woken by a loop holder's release well
 * within the holder's 30 s lease; then a blocking holder's. */
static void test_wait_and_wake(void **state) {
  (void)state;
  rt_server *m = rt_sentinel_master(grp);
  rlock_client *h = lt_client(rt_sentinel_url(grp), 0, NULL, NULL);
  rlock_client *w = lt_client(rt_sentinel_url(grp), 0, NULL, NULL);
  rlock_client *bc = fx_client_opts(rt_sentinel_url(grp), 0, NULL, NULL);
  rlock_lock *hl = fx_lock(h, "ls:wake"), *wl = fx_lock(w, "ls:wake");
  rlock_lock *bl = fx_lock(bc, "ls:wake");
  uint64_t a = rlock_owner_new(), b = rlock_owner_new();
  char ch[] = "redisson_lock__channel:{ls:wake}";
  for (int blocking = 0; blocking < 2; blocking++) {
    if (blocking)
      OK(rlock_lock_acquire_lease(bl, 30000));
    else
      OK(acquire(hl, a, 0, 30000));
    result r = {0};
    rlock_acquire_options o = opts(b, 60000, 30000);
    OK(rlock_lock_acquire_async(wl, &o, on_done, &r, NULL));
    run_until_pred(pred_subscribed, ch, 10000, "the waiter's subscription");
    assert_int_equal(r.done, 0);
    int64_t t0 = rt_now_us();
    if (blocking)
      OK(rlock_lock_release(bl));
    else
      OK(release(hl, a));
    run_until(&r.done, 1, 10000, "the woken waiter");
    double ms = (double)(rt_now_us() - t0) / 1000.0;
    OK(r.rc);
    report(blocking ? "wake-up through Sentinel, blocking holder"
                    : "wake-up through Sentinel, loop holder",
           ms);
    ASSERT_BETWEEN((int64_t)ms, 0, 2000);
    OK(release(wl, b));
  }
  assert_int_equal(rt_cmd_int(m, "EXISTS ls:wake"), 0);
  rlock_lock_free(hl);
  rlock_lock_free(wl);
  rlock_lock_free(bl);
  loop_free(h);
  loop_free(w);
  rlock_client_free(bc);
}

/* A master name no sentinel knows is a mistake in the URL, not an outage:
 * the acquisition fails with RLOCK_EIO naming it, within one round of
 * asking, even with a long wait. */
static void test_unknown_master_name(void **state) {
  (void)state;
  char url[512];
  size_t n = (size_t)snprintf(url, sizeof url, "redis-sentinel://");
  for (int i = 0; i < rt_sentinel_nsentinels(grp); i++)
    n += (size_t)snprintf(url + n, sizeof url - n, "%s127.0.0.1:%d",
                          i ? "," : "",
                          rt_server_port(rt_sentinel_sentinel(grp, i)));
  snprintf(url + n, sizeof url - n, "#no-such-master");
  rlock_client *c = lt_client(url, 0, NULL, NULL);
  rlock_lock *l = fx_lock(c, "ls:nomaster");
  result r;
  int64_t t0 = rt_now_ms();
  RC(acquire_r(l, rlock_owner_new(), 0, 20000, &r), RLOCK_EIO);
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 1000 + 2000 + 1000);
  if (strstr(r.msg, "no-such-master") == NULL)
    fail_msg("the message does not name the master: %s", r.msg);
  t0 = rt_now_ms();
  RC(acquire_r(l, rlock_owner_new(), 8000, 20000, &r), RLOCK_EIO);
  int64_t took = rt_now_ms() - t0;
  if (took >= 8000 / 2)
    fail_msg("a master no sentinel knows was retried for %lld ms of an "
             "8000 ms wait (%s)",
             (long long)took, r.msg);
  rlock_lock_free(l);
  loop_free(c);
}

/* ---- 2. a graceful switch: +switch-master ------------------------------ */

typedef struct subs_on {
  rt_server *s;
  const char *ch;
} subs_on;

static bool pred_subs_on(void *arg, char *why, size_t cap) {
  subs_on *w = arg;
  long long n = fx_subscribers(w->s, w->ch);
  snprintf(why, cap, "%lld subscribers of %s on port %d", n, w->ch,
           rt_server_port(w->s));
  return n == 1;
}

/* SENTINEL FAILOVER while a loop waiter sleeps (its holder's lease is
 * 30 s): the old master stays up and keeps the waiter's subscriber
 * connection, and the waiter makes no attempt, so only the +switch-master
 * watch can tell the client; its subscription must move to the new
 * master, where the holder's release (a blocking client, which follows
 * the switch itself) then wakes it. */
static void test_switch_master_followed(void **state) {
  (void)state;
  rt_sentinel_group *g = rt_sentinel_start(MASTER_NAME "-switch", 1, 3);
  const char *ch = "redisson_lock__channel:{ls:switch}";
  rlock_client *bc = fx_client_opts(rt_sentinel_url(g), 0, NULL, NULL);
  rlock_lock *bl = fx_lock(bc, "ls:switch");
  OK(rlock_lock_acquire_lease(bl, 30000));
  /* Without WAIT: the old master, turned into the new one's replica
   * meanwhile, may still be syncing, and would make the waiter's
   * acquisition wait out the sync timeout for its confirmation. */
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, rt_sentinel_url(g)));
  OK(rlock_config_set_replica_sync(cfg, 0));
  rlock_client *w = loop_client_cfg(cfg);
  rlock_config_free(cfg);
  rlock_lock *wl = fx_lock(w, "ls:switch");
  uint64_t me = rlock_owner_new();
  result r = {0};
  rlock_acquire_options o = opts(me, 60000, 30000);
  OK(rlock_lock_acquire_async(wl, &o, on_done, &r, NULL));
  subs_on on = {rt_sentinel_master(g), ch};
  run_until_pred(pred_subs_on, &on, 10000, "the waiter's subscription");
  rt_sentinel_failover(g, rt_scaled_ms(30000));
  report("SENTINEL FAILOVER", (double)rt_sentinel_failover_ms(g));
  on.s = rt_sentinel_master(g);
  int64_t t0 = rt_now_ms();
  run_until_pred(pred_subs_on, &on, 10000,
                 "the waiter's subscription on the new master");
  report("the switch seen to the subscription on the new master",
         (double)(rt_now_ms() - t0));
  assert_int_equal(r.done, 0);
  int64_t released = rt_now_us();
  OK(rlock_lock_release(bl));
  run_until(&r.done, 1, 10000, "the waiter");
  OK(r.rc);
  double woke = (double)(rt_now_us() - released) / 1000.0;
  report("wake-up after a graceful switch", woke);
  ASSERT_BETWEEN((int64_t)woke, 0, 2000);
  assert_int_equal(rt_cmd_int(on.s, "EXISTS ls:switch"), 1);
  OK(release(wl, me));
  rlock_lock_free(wl);
  loop_free(w);
  rlock_lock_free(bl);
  rlock_client_free(bc);
  rt_sentinel_free(g);
}

/* ---- 3. kill -9 of the master ------------------------------------------- */

typedef struct killed {
  const char *url;
  rlock_client *h, *w, *r;
  rlock_lock *kept, *leased, *wkept, *wleased, *ride;
  uint64_t holder, waiter, rider;
  lt_res held[2], got_kept, got_leased, rel_kept, rel_leased, rode;
  lt_res relw[2], relr;
  int64_t release_us;
  atomic_int lost_kept, lost_leased;
} killed;

enum { KM_WAIT = 2, KM_RIDE, KM_RELEASE, KM_RELEASE_REST };

static void km_lost(const char *name, const char *owner, void *ud) {
  (void)owner;
  killed *s = ud;
  if (strcmp(name, "ls:kill:kept") == 0)
    atomic_fetch_add(&s->lost_kept, 1);
  if (strcmp(name, "ls:kill:leased") == 0)
    atomic_fetch_add(&s->lost_leased, 1);
}

static int km_acquire(rlock_lock *l, uint64_t owner, int64_t wait,
                      int64_t lease, lt_res *r) {
  rlock_acquire_options o = opts(owner, wait, lease);
  return rlock_lock_acquire_async(l, &o, lt_done, r, NULL);
}

static int km_init(killed *s) {
  s->h = lt_client(s->url, 6000, km_lost, s);
  s->w = lt_client(s->url, 0, NULL, NULL);
  s->r = lt_client(s->url, 0, NULL, NULL);
  int rc;
  if ((rc = rlock_lock_new(&s->kept, s->h, "ls:kill:kept")) != RLOCK_OK ||
      (rc = rlock_lock_new(&s->leased, s->h, "ls:kill:leased")) != RLOCK_OK ||
      (rc = rlock_lock_new(&s->wkept, s->w, "ls:kill:kept")) != RLOCK_OK ||
      (rc = rlock_lock_new(&s->wleased, s->w, "ls:kill:leased")) != RLOCK_OK ||
      (rc = rlock_lock_new(&s->ride, s->r, "ls:kill:ride")) != RLOCK_OK)
    return rc;
  if ((rc = km_acquire(s->kept, s->holder, 0, RLOCK_LEASE_WATCHDOG,
                       &s->held[0])) != RLOCK_OK)
    return rc;
  return km_acquire(s->leased, s->holder, 0, 60000, &s->held[1]);
}

static void killed_fn(lt *x, int cmd) {
  killed *s = x->ud;
  int rc = RLOCK_OK;
  switch (cmd) {
  case LT_INIT:
    rc = km_init(s);
    break;
  case KM_WAIT:
    rc = km_acquire(s->wkept, s->waiter, rt_scaled_ms(60000), 10000,
                    &s->got_kept);
    if (rc == RLOCK_OK)
      rc = km_acquire(s->wleased, s->waiter, rt_scaled_ms(30000), 10000,
                      &s->got_leased);
    break;
  case KM_RIDE:
    rc = km_acquire(s->ride, s->rider, rt_scaled_ms(20000), 10000, &s->rode);
    break;
  case KM_RELEASE:
    s->release_us = rt_now_us();
    rc = rlock_lock_release_async(s->kept, s->holder, lt_done, &s->rel_kept);
    if (rc == RLOCK_OK)
      rc = rlock_lock_release_async(s->leased, s->holder, lt_done,
                                    &s->rel_leased);
    break;
  case KM_RELEASE_REST:
    if (s->got_kept.rc == RLOCK_OK)
      rc = rlock_lock_release_async(s->wkept, s->waiter, lt_done, &s->relw[0]);
    if (rc == RLOCK_OK && s->got_leased.rc == RLOCK_OK)
      rc =
          rlock_lock_release_async(s->wleased, s->waiter, lt_done, &s->relw[1]);
    if (rc == RLOCK_OK && s->rode.rc == RLOCK_OK)
      rc = rlock_lock_release_async(s->ride, s->rider, lt_done, &s->relr);
    break;
  case LT_STOP: {
    rlock_lock *ls[] = {s->kept, s->leased, s->wkept, s->wleased, s->ride};
    for (int i = 0; i < 5; i++)
      rlock_lock_free(ls[i]);
    rlock_client_free(s->h);
    rlock_client_free(s->w);
    rlock_client_free(s->r);
    break;
  }
  }
  if (rc != RLOCK_OK)
    lt_fail(x, "command %d: %s", cmd, rlock_error_last()->message);
}

/* Whether the watchdog hold of `field` on `key` survived on the new
 * master `nm`: 1 once seen renewed there, still the holder's; 0 once
 * reported lost. */
static int hold_outcome(rt_server *nm, const char *key, const char *field,
                        atomic_int *lost, int64_t ms) {
  long long before = rt_cmd_int(nm, "PTTL %s", key), now = before;
  int64_t end = rt_now_ms() + ms;
  while (atomic_load(lost) == 0 &&
         (now <= before || fx_hget(nm, key, field) != 1)) {
    if (rt_now_ms() > end)
      fail_msg("%s neither renewed for its holder on the new master (PTTL "
               "%lld) nor reported lost within %lld ms",
               key, now, (long long)ms);
    before = now > before ? now : before;
    rt_sleep_ms(20); /* sampling */
    now = rt_cmd_int(nm, "PTTL %s", key);
  }
  return atomic_load(lost) == 0;
}

static killed km;
static lt km_x;

/* Holds on the master (one the replica is made to forget) and a waiter
 * subscribed for each. */
static void km_hold_and_wait(rt_sentinel_group *g) {
  rt_server *old = rt_sentinel_master(g), *rep = rt_sentinel_replica(g, 0);
  km = (killed){.url = rt_sentinel_url(g)};
  km.holder = rlock_owner_new();
  km.waiter = rlock_owner_new();
  km.rider = rlock_owner_new();
  lt_res *rs[] = {&km.held[0],  &km.held[1],    &km.got_kept, &km.got_leased,
                  &km.rel_kept, &km.rel_leased, &km.rode,     &km.relw[0],
                  &km.relw[1],  &km.relr};
  for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++)
    lt_res_reset(rs[i]);
  lt_start(&km_x, killed_fn, &km);
  lt_wait_ok(&km.held[0], 10000, "the watchdog hold");
  lt_wait_ok(&km.held[1], 10000, "the leased hold");
  /* WAIT answered: the replica has both. As if the kill had come before
   * the leased one reached it (asynchronous replication), the replica
   * forgets it. */
  assert_int_equal(rt_cmd_int(rep, "EXISTS ls:kill:kept ls:kill:leased"), 2);
  rt_cmd_ok(rep, "CONFIG SET replica-read-only no");
  assert_int_equal(rt_cmd_int(rep, "DEL ls:kill:leased"), 1);
  lt_do(&km_x, KM_WAIT);
  fx_wait_subscribers(old, "redisson_lock__channel:{ls:kill:kept}", 1,
                      "the waiter's subscription");
  fx_wait_subscribers(old, "redisson_lock__channel:{ls:kill:leased}", 1,
                      "the waiter's subscription");
}

/* kill -9 of the master: a call begun right after gets its lock on the
 * new master, and the waiter on the lock the new master never saw takes
 * it, well before its holder's 60 s lease. Returns the new master. */
static rt_server *km_kill(rt_sentinel_group *g) {
  int64_t kill_us = rt_now_us();
  rt_sentinel_kill_master(g);
  lt_do(&km_x, KM_RIDE);
  int port = rt_sentinel_wait_failover(g, rt_scaled_ms(30000));
  rt_server *nm = rt_sentinel_master(g);
  assert_int_equal(rt_server_port(nm), port);
  assert_ptr_equal(nm, rt_sentinel_server(g, 1));
  report("kill -9 to the sentinels naming the replica",
         (double)rt_sentinel_failover_ms(g));
  lt_wait_ok(&km.rode, 25000, "the call begun at the kill");
  report("kill -9 to the lock of a call waiting through the failover",
         (double)(km.rode.at_us - kill_us) / 1000.0);
  assert_int_equal(rt_cmd_int(nm, "EXISTS ls:kill:ride"), 1);
  lt_wait_ok(&km.got_leased, 30000, "the waiter on the unreplicated lock");
  report("kill -9 to the waiter taking the lock the new master never saw",
         (double)(km.got_leased.at_us - kill_us) / 1000.0);
  return nm;
}

/* The holder lets go: the replicated hold, renewed on the new master (or
 * reported lost), wakes its waiter, now subscribed there; the lock the
 * new master never saw is RLOCK_ELOST to its holder. */
static void km_release(rt_server *nm) {
  char field[RLOCK_OWNER_MAX];
  field_of(km.h, km.holder, field);
  int survived = hold_outcome(nm, "ls:kill:kept", field, &km.lost_kept,
                              rt_scaled_ms(2000 + 5000));
  printf("[   INFO   ] the replicated hold %s the failover\n",
         survived ? "survived (renewed on the new master)"
                  : "did not survive (reported lost)");
  if (survived) {
    assert_int_equal(atomic_load(&km.got_kept.done), 0);
    fx_wait_subscribers(nm, "redisson_lock__channel:{ls:kill:kept}", 1,
                        "the waiter's subscription on the new master");
  }
  lt_do(&km_x, KM_RELEASE);
  lt_wait(&km.rel_kept, rt_scaled_ms(10000), "the holder's release");
  lt_wait(&km.rel_leased, rt_scaled_ms(10000), "the holder's release");
  lt_wait_ok(&km.got_kept, 10000, "the waiter on the replicated hold");
  if (survived) {
    RC(km.rel_kept.rc, RLOCK_OK);
    double woke = (double)(km.got_kept.at_us - km.release_us) / 1000.0;
    report("wake-up after a kill -9 failover", woke);
    ASSERT_BETWEEN((int64_t)woke, 0, 2000);
  } else {
    RC(km.rel_kept.rc, RLOCK_ELOST);
  }
  RC(km.rel_leased.rc, RLOCK_ELOST); /* its waiter took it meanwhile */
  lt_do(&km_x, KM_RELEASE_REST);
  lt_wait_ok(&km.relw[0], 10000, "a waiter's release");
  lt_wait_ok(&km.relw[1], 10000, "a waiter's release");
  lt_wait_ok(&km.relr, 10000, "the rider's release");
}

/* kill -9 of the Sentinel master (a deployment of its own) under holders
 * and waiters on loop clients, whose loop runs on its own thread and
 * never blocks meanwhile. */
static void test_master_killed(void **state) {
  (void)state;
  rt_sentinel_group *g = rt_sentinel_start(MASTER_NAME "-kill", 1, 3);
  km_hold_and_wait(g);
  lt_measure_from_now(&km_x);
  km_release(km_kill(g));
  int64_t late = lt_stop(&km_x);
  lt_check_responsive(&km_x, late, "kill -9 of the Sentinel master");
  rt_sentinel_free(g);
}

/* ---- the groups ------------------------------------------------------------
 */

static int setup(void **state) {
  (void)state;
  if (grp == NULL) {
    int64_t t0 = rt_now_ms();
    grp = rt_sentinel_start(MASTER_NAME, 1, 3);
    printf("[   TIME   ] sentinel group start (1 master, 1 replica, 3 "
           "sentinels): %lld ms\n",
           (long long)(rt_now_ms() - t0));
  }
  loop_open();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  lt_abandon();
  loop_close();
  return 0;
}

int main(void) {
  (void)srv; /* fixture.h's single server: unused here */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_discovery),
      cmocka_unit_test(test_wait_and_wake),
      cmocka_unit_test(test_unknown_master_name),
      cmocka_unit_test(test_switch_master_followed),
      cmocka_unit_test(test_master_killed),
  };
  if (getenv("RLOCK_TEST_FILTER") != NULL)
    cmocka_set_test_filter(getenv("RLOCK_TEST_FILTER"));
  int failed = 0;
  kind = UV;
  failed += cmocka_run_group_tests_name("libuv", tests, setup, teardown);
  kind = EV;
  failed += cmocka_run_group_tests_name("libevent", tests, setup, teardown);
  rt_sentinel_free(grp);
  return failed;
}
