/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: locks through Redis Sentinel, against real deployments
 * (rt_sentinel: a master, one replica, three sentinels; failovers are the
 * sentinels' own). The cases written once run once per driver
 * (drivers.h: a blocking client, a loop client on libuv and on libevent),
 * each driver's group on a deployment of its own: every lock kind lands
 * on the master the sentinels name (checked with ROLE); waiters are woken
 * by unlock messages; a master name no sentinel knows fails at once,
 * saying so; a graceful switch (SENTINEL FAILOVER) under a sleeping waiter
 * is followed through +switch-master alone; the master killed (kill -9)
 * and hung (SIGSTOP) under holders and waiters (the test's thread drives
 * the failover while a loop runs on a thread of its own, whose 10 ms
 * timer must never be more than 20 ms late meanwhile).
 *
 * The blocking client's own cases: waits across processes and a child's
 * watchdog, clients through SENTINEL FAILOVER (a hung first sentinel
 * too), sentinels hung and down, a fresh client's first call through a
 * failover, and passwords. Timings are printed as "[   TIME   ]" lines.
 */
#include "drivers.h"

#include "rt_sentinel.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#define MASTER_NAME "rlock-master"

/* The deployment of the running group (or of a case with its own). */
static rt_sentinel_group *grp;

static rt_sentinel_group *start_group(const char *name) {
  int64_t t0 = rt_now_ms();
  rt_sentinel_group *g = rt_sentinel_start(name, 1, 3);
  dk_report("sentinel group start (1 master, 1 replica, 3 sentinels)",
            (double)(rt_now_ms() - t0));
  return g;
}

/* A case on a deployment of its own (the group's is kept aside). */
static rt_sentinel_group *shared_grp;

static int own_group(void **state) {
  dk_recover(state);
  shared_grp = grp;
  grp = start_group(MASTER_NAME);
  return 0;
}

static int own_group_done(void **state) {
  (void)state;
  rt_sentinel_free(grp);
  grp = shared_grp;
  return 0;
}

/* "redis-sentinel://CREDS[127.0.0.1:DEAD,]S1,S2,S3TAIL#MASTER": the
 * group's sentinels, optionally behind a dead address; TAIL is "", "/db"
 * or "?params". */
static const char *group_url(char *buf, size_t size, const char *creds,
                             int dead_port, const char *tail,
                             const char *master) {
  size_t n = (size_t)snprintf(buf, size, "redis-sentinel://%s", creds);
  if (dead_port > 0)
    n += (size_t)snprintf(buf + n, size - n, "127.0.0.1:%d,", dead_port);
  for (int i = 0; i < rt_sentinel_nsentinels(grp); i++)
    n += (size_t)snprintf(buf + n, size - n, "%s127.0.0.1:%d", i ? "," : "",
                          rt_server_port(rt_sentinel_sentinel(grp, i)));
  snprintf(buf + n, size - n, "%s#%s", tail, master);
  return buf;
}

/* A blocking client with its own connect and command timeouts. */
static rlock_client *client_timed(const char *url, int64_t connect_ms,
                                  int64_t command_ms) {
  rlock_config *cfg;
  rlock_client *c;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, url));
  OK(rlock_config_set_connect_timeout_ms(cfg, connect_ms));
  OK(rlock_config_set_command_timeout_ms(cfg, command_ms));
  OK(rlock_client_new(&c, cfg));
  rlock_config_free(cfg);
  return c;
}

/* A client of the running driver through the group's sentinels. */
static rlock_client *group_client(int64_t watchdog, rlock_lost_fn lost,
                                  void *ud) {
  return dk_client(rt_sentinel_url(grp), watchdog, lost, ud);
}

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

/* Lost-lock callbacks of one client (only its background thread, or its
 * loop, writes). */
typedef struct lost_log {
  atomic_int n;
  char names[8][64];
} lost_log;

static void on_lost(const char *name, const char *owner, void *ud) {
  (void)owner;
  lost_log *log = ud;
  int i = atomic_load(&log->n);
  if (i < 8) {
    snprintf(log->names[i], sizeof log->names[i], "%s", name);
    atomic_store(&log->n, i + 1);
  }
}

static int lost_has(lost_log *log, const char *name) {
  int n = atomic_load(&log->n);
  for (int i = 0; i < n; i++)
    if (strcmp(log->names[i], name) == 0)
      return 1;
  return 0;
}

/* Wait up to `ms` for the callback to report `name`; elapsed ms, or -1. */
static int64_t wait_lost(lost_log *log, const char *name, int64_t ms) {
  int64_t t0 = rt_now_ms();
  while (!lost_has(log, name)) {
    if (rt_now_ms() - t0 > ms)
      return -1;
    dk_idle(10);
  }
  return rt_now_ms() - t0;
}

/* Raw probes on a data server. */
static long long llen(rt_server *s, const char *key) {
  return rt_cmd_int(s, "LLEN %s", key);
}

/* Wait up to `ms` until probe(s, arg) == want (`at_least`: >= want);
 * fails the test otherwise. */
static void wait_probe(long long (*probe)(rt_server *, const char *),
                       rt_server *s, const char *arg, long long want,
                       int at_least, int64_t ms) {
  int64_t t0 = rt_now_ms();
  long long v;
  while ((v = probe(s, arg)) != want && !(at_least && v > want)) {
    if (rt_now_ms() - t0 > ms)
      fail_msg("'%s' is %lld, not %s%lld, after %lld ms", arg, v,
               at_least ? "at least " : "", want, (long long)ms);
    dk_idle(10);
  }
}

static void wait_value(long long (*probe)(rt_server *, const char *),
                       rt_server *s, const char *arg, long long want,
                       int64_t ms) {
  wait_probe(probe, s, arg, want, 0, ms);
}

/* After a failover: whether the watchdog hold of `owner` on `key` survived
 * on the new master `nm`: 1 once it is seen renewed there, 0 once the
 * lost-lock callback reported it, -1 when neither happened within `ms`
 * (a hold gone silently, or renewal stuck). */
static int hold_outcome(rt_server *nm, const char *key, const char *owner,
                        lost_log *log, int64_t ms) {
  long long prev = rt_cmd_int(nm, "PTTL %s", key), cur;
  int64_t t0 = rt_now_ms();
  for (;;) {
    if (lost_has(log, key))
      return 0;
    cur = rt_cmd_int(nm, "PTTL %s", key);
    if (cur > prev && fx_hget(nm, key, owner) >= 1)
      return 1;
    if (rt_now_ms() - t0 > ms)
      return -1;
    prev = cur;
    rt_sleep_ms(20);
  }
}

/* One byte from a child's pipe within `ms`, or 0. */
static char read_byte(int fd, int64_t ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  char b = 0;
  if (poll(&p, 1, (int)ms) == 1 && read(fd, &b, 1) == 1)
    return b;
  return 0;
}

/* ---- 1. basics through the sentinel URL ------------------------------- */

/* A fresh client asks the sentinels, checks the master with ROLE, and
 * every lock kind lands there; the lock's state reads back through every
 * query. */
static void test_lock_status_on_master(void **state) {
  (void)state;
  rt_server *m = rt_sentinel_master(grp);
  rt_cmd_ok(m, "CONFIG RESETSTAT");
  rlock_client *c = group_client(0, NULL, NULL);
  assert_string_equal(rlock_client_topology(c), "sentinel");
  rlock_lock *l = fx_lock(c, "sen:basic");
  uint64_t me = dk_me();
  char owner[RLOCK_OWNER_MAX], at[64];
  dk_field(c, me, owner);
  if (!dk_loop())
    OK(rlock_client_ping(c, NULL));
  OK(dk_acquire(l, me, 0, 20000));
  OK(dk_acquire(l, me, 0, RLOCK_LEASE_WATCHDOG)); /* re-entered, renewed */
  assert_int_equal(fx_hget(m, "sen:basic", owner), 2);
  ASSERT_RANGE(rt_cmd_int(m, "PTTL sen:basic"), 20000, 30000);
  assert_true(calls_of(m, "role") >= 1); /* the master was checked */
  int64_t count = 0;
  OK(dk_hold_count(&count, l, me));
  assert_int_equal(count, 2);
  if (!dk_loop()) { /* the blocking client's synchronous queries */
    int locked = 0, held = 0;
    int64_t ttl = 0;
    OK(rlock_lock_is_locked(&locked, l));
    OK(rlock_lock_is_held(&held, l));
    OK(rlock_lock_ttl(&ttl, l));
    assert_int_equal(locked, 1);
    assert_int_equal(held, 1);
    ASSERT_RANGE(ttl, 20000, 30000);
  }
  rlock_lock_info *info;
  OK(dk_inspect(&info, l));
  assert_int_equal(rlock_lock_info_locked(info), 1);
  assert_int_equal(rlock_lock_info_holder_count(info), 1);
  assert_string_equal(rlock_lock_info_holder_owner(info, 0), owner);
  assert_int_equal(rlock_lock_info_holder_holds(info, 0), 2);
  assert_string_equal(rlock_lock_info_node(info), addr_of(m, at, sizeof at));
  rlock_lock_info_free(info);
  OK(rlock_lock_check_owner(l, me));
  OK(dk_release(l, me));
  OK(dk_release(l, me));
  assert_int_equal(rt_cmd_int(m, "EXISTS sen:basic"), 0);
  RC(dk_release(l, me), RLOCK_ENOTHELD);
  /* The other kinds. */
  rlock_lock *fair, *rd, *wr, *fenced, *spin;
  OK(rlock_lock_new_fair(&fair, c, "sen:fair"));
  OK(rlock_lock_new_read(&rd, c, "sen:rw"));
  OK(rlock_lock_new_write(&wr, c, "sen:rw"));
  OK(rlock_lock_new_fenced(&fenced, c, "sen:fenced"));
  OK(rlock_lock_new_spin(&spin, c, "sen:spin"));
  rlock_lock *each[] = {fair, rd, fenced, spin};
  const char *keys[] = {"sen:fair", "sen:rw", "sen:fenced", "sen:spin"};
  for (int i = 0; i < 4; i++) {
    OK(dk_acquire(each[i], me, 0, 20000));
    assert_int_equal(rt_cmd_int(m, "EXISTS %s", keys[i]), 1);
    OK(dk_release(each[i], me));
    assert_int_equal(rt_cmd_int(m, "EXISTS %s", keys[i]), 0);
  }
  OK(dk_acquire(wr, me, 0, 20000));
  RC(dk_acquire(rd, rlock_owner_new(), 0, 20000), RLOCK_ELOCKED);
  OK(dk_release(wr, me));
  for (int i = 0; i < 4; i++)
    rlock_lock_free(each[i]);
  rlock_lock_free(wr);
  rlock_lock_free(l);
  dk_free(c);
}

static void test_database_from_url(void **state) {
  (void)state;
  char url[512];
  rt_server *m = rt_sentinel_master(grp);
  rlock_client *c = dk_client(
      group_url(url, sizeof url, "", 0, "/5", MASTER_NAME), 0, NULL, NULL);
  rlock_lock *l = fx_lock(c, "sen:db5");
  uint64_t me = dk_me();
  OK(dk_acquire(l, me, 0, 20000));
  assert_int_equal(rt_cmd_int(m, "EXISTS sen:db5"), 0); /* not in db 0 */
  redisContext *raw = rt_server_connect(m);
  freeReplyObject(redisCommand(raw, "SELECT 5"));
  redisReply *r = redisCommand(raw, "EXISTS sen:db5");
  assert_non_null(r);
  assert_int_equal(r->integer, 1);
  freeReplyObject(r);
  OK(dk_release(l, me));
  r = redisCommand(raw, "EXISTS sen:db5");
  assert_int_equal(r->integer, 0);
  freeReplyObject(r);
  redisFree(raw);
  rlock_lock_free(l);
  dk_free(c);
}

static bool pred_subscribed(void *arg, char *why, size_t cap) {
  const char *ch = arg;
  long long n = fx_subscribers(rt_sentinel_master(grp), ch);
  snprintf(why, cap, "%lld subscribers of %s on the master", n, ch);
  return n == 1;
}

/* A waiter on its own client, woken by its holder's release well within
 * the holder's 30 s lease: a holder of the running driver, then a
 * blocking holder. */
static void test_wait_and_wake(void **state) {
  (void)state;
  rt_server *m = rt_sentinel_master(grp);
  rlock_client *h = group_client(0, NULL, NULL);
  rlock_client *w = group_client(0, NULL, NULL);
  rlock_client *bc = fx_client_opts(rt_sentinel_url(grp), 0, NULL, NULL);
  rlock_lock *hl = fx_lock(h, "sen:wake"), *wl = fx_lock(w, "sen:wake");
  rlock_lock *bl = fx_lock(bc, "sen:wake");
  uint64_t a = rlock_owner_new(), b = rlock_owner_new();
  char ch[] = "redisson_lock__channel:{sen:wake}";
  for (int blocking = 0; blocking < 2; blocking++) {
    if (blocking)
      OK(rlock_lock_acquire_lease(bl, 30000));
    else
      OK(dk_acquire(hl, a, 0, 30000));
    dk_op op;
    dk_acquire_start(&op, wl, b, 60000, 30000);
    dk_wait(pred_subscribed, ch, 10000, "the waiter's subscription");
    assert_false(dk_op_done(&op));
    int64_t t0 = rt_now_us();
    if (blocking)
      OK(rlock_lock_release(bl));
    else
      OK(dk_release(hl, a));
    OK(dk_op_wait(&op, 10000, "the woken waiter"));
    double ms = (double)(op.done_us - t0) / 1000.0;
    dk_report(blocking ? "wake-up through Sentinel, blocking holder"
                       : "wake-up through Sentinel, holder of this driver",
              ms);
    ASSERT_BETWEEN((int64_t)ms, 0, 2000);
    OK(dk_release(wl, b));
  }
  assert_int_equal(rt_cmd_int(m, "EXISTS sen:wake"), 0);
  rlock_lock_free(hl);
  rlock_lock_free(wl);
  rlock_lock_free(bl);
  dk_free(h);
  dk_free(w);
  rlock_client_free(bc);
}

/* ---- the blocking client's processes ---------------------------------- */

/* Another process waits for a lock this one holds, and is woken by the
 * release's message (not by the holder's 30 s lease). */
static void test_wait_and_wake_across_processes(void **state) {
  (void)state;
  rt_server *m = rt_sentinel_master(grp);
  rlock_client *c = group_client(0, NULL, NULL);
  rlock_lock *l = fx_lock(c, "sen:wake");
  OK(rlock_lock_try_acquire(l, 0, 30000));
  int out;
  const char *args[] = {"wait", rt_sentinel_url(grp), "sen:wake", "20000",
                        NULL};
  pid_t pid = fx_spawn_child(args, &out);
  /* The child waits, subscribed. */
  fx_wait_subscribers(m, "redisson_lock__channel:{sen:wake}", 1,
                      "the waiter's subscription");
  int64_t t0 = rt_now_ms();
  OK(rlock_lock_release(l));
  char b = read_byte(out, rt_scaled_ms(10000));
  int64_t woke = rt_now_ms() - t0;
  close(out);
  assert_int_equal(fx_wait_child(pid, rt_scaled_ms(5000)), 0);
  if (b != 'O')
    fail_msg("the child answered '%c' (O: acquired)", b ? b : '?');
  dk_report("wake-up of a waiting process after release", woke);
  ASSERT_BETWEEN(woke, 0, 1000);
  assert_int_equal(rt_cmd_int(m, "EXISTS sen:wake"), 0);
  rlock_lock_free(l);
  rlock_client_free(c);
}

/* A child holds with the watchdog: renewed on the master beyond three
 * timeouts; once it is killed, the lock frees within one timeout. */
static void test_watchdog_renews_on_master(void **state) {
  (void)state;
  enum { WD = 600 };
  rt_server *m = rt_sentinel_master(grp);
  int out;
  const char *args[] = {"hold", rt_sentinel_url(grp), "sen:wd", "600", NULL};
  pid_t pid = fx_spawn_child(args, &out);
  char b = read_byte(out, rt_scaled_ms(10000));
  close(out);
  if (b != 'H') {
    kill(pid, SIGKILL);
    fx_wait_child(pid, 5000);
    fail_msg("the child did not take the lock ('%c')", b ? b : '?');
  }
  for (int i = 0; i < 8; i++) { /* 4 timeouts */
    rt_sleep_ms(WD / 2);
    ASSERT_RANGE(rt_cmd_int(m, "PTTL sen:wd"), 1, WD);
  }
  kill(pid, SIGKILL);
  fx_wait_child(pid, 5000);
  int64_t killed = rt_now_ms();
  rlock_client *c = group_client(0, NULL, NULL);
  rlock_lock *l = fx_lock(c, "sen:wd");
  OK(rlock_lock_try_acquire(l, 5000, 0));
  ASSERT_BETWEEN(rt_now_ms() - killed, 0, WD + 400);
  OK(rlock_lock_release(l));
  rlock_lock_free(l);
  rlock_client_free(c);
}

static void test_lost_lock_reported(void **state) {
  (void)state;
  rt_server *m = rt_sentinel_master(grp);
  lost_log log = {0};
  rlock_client *c = group_client(600, on_lost, &log);
  rlock_lock *l = fx_lock(c, "sen:lost");
  uint64_t me = dk_me();
  OK(dk_acquire(l, me, 0, RLOCK_LEASE_WATCHDOG));
  assert_int_equal(rt_cmd_int(m, "DEL sen:lost"), 1);
  ASSERT_BETWEEN(wait_lost(&log, "sen:lost", 3000), 0, 1000);
  RC(rlock_lock_check_owner(l, me), RLOCK_ELOST);
  RC(dk_release(l, me), RLOCK_ELOST);
  assert_int_equal(rt_cmd_int(m, "EXISTS sen:lost"), 0);
  rlock_lock_free(l);
  dk_free(c);
}

/* Two waiters of a fair lock get it in the order they queued. */
static void test_fair_lock_order(void **state) {
  (void)state;
  rt_server *m = rt_sentinel_master(grp);
  rlock_client *c = group_client(0, NULL, NULL),
               *wc = group_client(0, NULL, NULL);
  rlock_lock *l, *wl[2];
  OK(rlock_lock_new_fair(&l, c, "sen:fair"));
  uint64_t me = dk_me(), o[2];
  OK(dk_acquire(l, me, 0, 30000));
  dk_op w[2];
  for (int i = 0; i < 2; i++) {
    OK(rlock_lock_new_fair(&wl[i], wc, "sen:fair"));
    o[i] = rlock_owner_new();
    dk_acquire_start(&w[i], wl[i], o[i], 10000, 10000);
    wait_value(llen, m, "redisson_lock_queue:{sen:fair}", i + 1,
               rt_scaled_ms(5000));
  }
  rlock_lock_info *info;
  OK(dk_inspect(&info, l));
  assert_int_equal(rlock_lock_info_queue_count(info), 2);
  rlock_lock_info_free(info);
  OK(dk_release(l, me));
  /* In the order they queued: the second waits for the first's release. */
  OK(dk_op_wait(&w[0], 10000, "the first fair waiter"));
  assert_false(dk_op_done(&w[1]));
  OK(dk_release(wl[0], o[0]));
  OK(dk_op_wait(&w[1], 10000, "the second fair waiter"));
  OK(dk_release(wl[1], o[1]));
  assert_int_equal(rt_cmd_int(m, "EXISTS sen:fair"), 0);
  assert_int_equal(rt_cmd_int(m, "EXISTS redisson_lock_queue:{sen:fair}"), 0);
  rlock_lock_free(wl[0]);
  rlock_lock_free(wl[1]);
  rlock_lock_free(l);
  dk_free(c);
  dk_free(wc);
}

static void test_read_write_lock(void **state) {
  (void)state;
  rt_server *m = rt_sentinel_master(grp);
  rlock_client *a = group_client(0, NULL, NULL),
               *b = group_client(0, NULL, NULL);
  rlock_lock *ra, *rb, *wb;
  OK(rlock_lock_new_read(&ra, a, "sen:rw"));
  OK(rlock_lock_new_read(&rb, b, "sen:rw"));
  OK(rlock_lock_new_write(&wb, b, "sen:rw"));
  uint64_t oa = dk_me(), ob = dk_me(), ow = rlock_owner_new();
  OK(dk_acquire(ra, oa, 0, 30000));
  OK(dk_acquire(rb, ob, 0, 30000)); /* readers share */
  redisReply *r = rt_cmd(m, "HGET sen:rw mode");
  assert_string_equal(r->str, "read");
  freeReplyObject(r);
  dk_op w;
  dk_acquire_start(&w, wb, ow, 10000, 10000);
  dk_wait_subscribers(m, "redisson_rwlock:{sen:rw}", 1,
                      "the waiter's subscription");
  OK(dk_release(ra, oa));
  int64_t t0 = rt_now_us();
  OK(dk_release(rb, ob));
  OK(dk_op_wait(&w, 10000, "the writer"));
  ASSERT_BETWEEN((w.done_us - t0) / 1000, 0, 1000);
  OK(dk_release(wb, ow));
  assert_int_equal(rt_cmd_int(m, "EXISTS sen:rw"), 0);
  rlock_lock_free(ra);
  rlock_lock_free(rb);
  rlock_lock_free(wb);
  dk_free(a);
  dk_free(b);
}

/* The first sentinel listed is a port where nothing listens. */
static void test_dead_first_sentinel(void **state) {
  (void)state;
  char url[512];
  group_url(url, sizeof url, "", rt_free_port(), "", MASTER_NAME);
  rt_server *m = rt_sentinel_master(grp);
  rlock_client *c = dk_client(url, 0, NULL, NULL);
  rlock_lock *l = fx_lock(c, "sen:deadfirst");
  uint64_t me = dk_me();
  int64_t t0 = rt_now_ms();
  OK(dk_acquire(l, me, 0, 20000));
  dk_report("first lock with a dead first sentinel",
            (double)(rt_now_ms() - t0));
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 1000);
  assert_int_equal(rt_cmd_int(m, "EXISTS sen:deadfirst"), 1);
  OK(dk_release(l, me));
  rlock_lock_free(l);
  dk_free(c);
}

/* A master name no sentinel knows is a mistake in the URL, not an outage
 * to ride out: the acquisition fails with RLOCK_EIO naming it, within one
 * round of asking, whatever the wait. */
static void test_unknown_master_name(void **state) {
  (void)state;
  char url[512];
  group_url(url, sizeof url, "", 0, "", "no-such-master");
  rlock_client *c = dk_client(url, 0, NULL, NULL);
  rlock_lock *l = fx_lock(c, "sen:nomaster");
  uint64_t me = dk_me();
  result r;
  int64_t t0 = rt_now_ms();
  RC(dk_acquire_r(l, me, 0, 20000, &r), RLOCK_EIO);
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 1000 + 2000 + 1000); /* connect +
                                                               command */
  if (strstr(r.msg, "no-such-master") == NULL)
    fail_msg("the message does not name the master: %s", r.msg);
  if (!dk_loop())
    RC(rlock_client_ping(c, NULL), RLOCK_EIO);
  t0 = rt_now_ms();
  RC(dk_acquire_r(l, me, 8000, 20000, &r), RLOCK_EIO);
  int64_t took = rt_now_ms() - t0;
  dk_report("unknown master name: a call with an 8 s wait failed after",
            (double)took);
  if (took >= 8000 / 2) /* as good as the whole wait, at any scale */
    fail_msg("a master no sentinel knows was retried for %lld ms of an "
             "8000 ms wait (%s)",
             (long long)took, r.msg);
  rlock_lock_free(l);
  dk_free(c);
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

/* SENTINEL FAILOVER while a waiter sleeps (its holder's lease is 30 s):
 * the old master stays up and keeps the waiter's subscriber connection,
 * and the waiter makes no attempt, so only the +switch-master watch can
 * tell the client; its subscription must move to the new master, where
 * the holder's release (a blocking client, which follows the switch
 * itself) then wakes it. A deployment of its own. */
static void test_switch_master_followed(void **state) {
  (void)state;
  rt_sentinel_group *g = rt_sentinel_start(MASTER_NAME "-switch", 1, 3);
  const char *ch = "redisson_lock__channel:{sen:switch}";
  rlock_client *bc = fx_client_opts(rt_sentinel_url(g), 0, NULL, NULL);
  rlock_lock *bl = fx_lock(bc, "sen:switch");
  OK(rlock_lock_acquire_lease(bl, 30000));
  /* Without WAIT: the old master, turned into the new one's replica
   * meanwhile, may still be syncing, and would make the waiter's
   * acquisition wait out the sync timeout for its confirmation. */
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, rt_sentinel_url(g)));
  OK(rlock_config_set_replica_sync(cfg, 0));
  rlock_client *w = dk_client_cfg(cfg);
  rlock_config_free(cfg);
  rlock_lock *wl = fx_lock(w, "sen:switch");
  uint64_t me = rlock_owner_new();
  dk_op op;
  dk_acquire_start(&op, wl, me, 60000, 30000);
  subs_on on = {rt_sentinel_master(g), ch};
  dk_wait(pred_subs_on, &on, 10000, "the waiter's subscription");
  rt_sentinel_failover(g, rt_scaled_ms(30000));
  dk_report("SENTINEL FAILOVER", (double)rt_sentinel_failover_ms(g));
  on.s = rt_sentinel_master(g);
  int64_t t0 = rt_now_ms();
  dk_wait(pred_subs_on, &on, 10000,
          "the waiter's subscription on the new master");
  dk_report("the switch seen to the subscription on the new master",
            (double)(rt_now_ms() - t0));
  assert_false(dk_op_done(&op));
  int64_t released = rt_now_us();
  OK(rlock_lock_release(bl));
  OK(dk_op_wait(&op, 10000, "the waiter"));
  double woke = (double)(op.done_us - released) / 1000.0;
  dk_report("wake-up after a graceful switch", woke);
  ASSERT_BETWEEN((int64_t)woke, 0, 2000);
  assert_int_equal(rt_cmd_int(on.s, "EXISTS sen:switch"), 1);
  OK(dk_release(wl, me));
  rlock_lock_free(wl);
  dk_free(w);
  rlock_lock_free(bl);
  rlock_client_free(bc);
  rt_sentinel_free(g);
}

/* ---- 3. the blocking client through SENTINEL FAILOVER ------------------ */

/* A loopback port that accepts TCP connections (the kernel completes them
 * into the backlog) and never answers: a hung sentinel that cannot be
 * frozen under the harness's feet. Returns the listening fd. */
static int black_hole(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(fd, 64) != 0 || getsockname(fd, (struct sockaddr *)&a, &len))
    fail_msg("cannot make a listening socket");
  *port = ntohs(a.sin_port);
  return fd;
}

/* A client taking a fresh lock, again and again, until one lands on
 * `target` (the new master): how long after `since` it moved. */
typedef struct mover {
  rlock_client *c;
  const char *name;
  rt_server *target;
  int64_t since;
  int64_t moved; /* -1: not within the bound */
  int on_old;    /* locks it took elsewhere meanwhile */
  int errors;
  char err[256];
  pthread_t thread;
} mover;

static void *mover_main(void *arg) {
  mover *m = arg;
  rlock_lock *l;
  m->moved = -1;
  if (rlock_lock_new(&l, m->c, m->name) != RLOCK_OK)
    return NULL;
  while (rt_now_ms() - m->since < 15000) {
    int rc = rlock_lock_try_acquire(l, 0, 10000);
    if (rc != RLOCK_OK) {
      m->errors++;
      snprintf(m->err, sizeof m->err, "%d %s", rc, rlock_error_last()->message);
      rt_sleep_ms(20);
      continue;
    }
    int there = rt_cmd_int(m->target, "EXISTS %s", m->name) == 1;
    rlock_lock_release(l); /* wherever it went */
    if (there) {
      m->moved = rt_now_ms() - m->since;
      break;
    }
    m->on_old++;
    rt_sleep_ms(20);
  }
  rlock_lock_free(l);
  return NULL;
}

static void mover_report(const mover *m, const char *who) {
  char what[160];
  snprintf(what, sizeof what,
           "graceful switch: %s: first lock on the new "
           "master, after the switch",
           who);
  dk_report(what, m->moved);
  printf("[   INFO   ] %s: %d locks taken on the old master after the "
         "switch, %d errors %s\n",
         who, m->on_old, m->errors, m->err);
  fflush(stdout);
}

/* Connections subscribed to something on sentinel `s` (the clients'
 * +switch-master watches): " sub=1 " entries of CLIENT LIST. */
static long long watchers(rt_server *s, const char *unused) {
  (void)unused;
  redisReply *r = rt_cmd(s, "CLIENT LIST");
  long long n = 0;
  for (const char *p = r->str; p && (p = strstr(p, " sub=1 ")); p++)
    n++;
  freeReplyObject(r);
  return n;
}

/* The master port sentinel `s` reports for `name`, or -1. */
static long long reported_port(rt_server *s, const char *name) {
  redisReply *r = rt_cmd(s, "SENTINEL get-master-addr-by-name %s", name);
  long long port = r->type == REDIS_REPLY_ARRAY && r->elements == 2
                       ? atoll(r->element[1]->str)
                       : -1;
  freeReplyObject(r);
  return port;
}

/* Clients through SENTINEL FAILOVER: one holding a watchdog lock, one
 * waiting for it, and one whose first sentinel is hung; the first
 * sentinel of the others is stopped before the switch. The old master
 * answers as a master until the sentinels demote it about 10 s later, so a
 * client that only moved after a failed command would write there
 * meanwhile: each must move as soon as the sentinels announce the switch
 * (+switch-master; a sentinel learns of a switch within its 2 s hello
 * period), and the held lock must be renewed on the new master. */
static void test_graceful_switch(void **state) {
  (void)state;
  enum { WD = 3000 };
  /* static: a failed case leaves its clients' threads writing here */
  static lost_log log;
  log = (lost_log){0};
  rlock_client *c = group_client(WD, on_lost, &log),
               *wc = group_client(0, NULL, NULL);
  rt_server *old = rt_sentinel_master(grp);
  rlock_lock *held = fx_lock(c, "gf:held"), *wl = fx_lock(wc, "gf:held");
  uint64_t w = rlock_owner_new();
  char owner[RLOCK_OWNER_MAX], url[512];
  fx_owner(c, owner);
  int hole_port, hole = black_hole(&hole_port);
  rlock_client *deaf = client_timed(
      group_url(url, sizeof url, "", hole_port, "", MASTER_NAME), 1000, 500);
  rlock_lock *dl = fx_lock(deaf, "gf:deaf");
  OK(rlock_lock_try_acquire(dl, 0, 10000)); /* it knows the master now */
  OK(rlock_lock_release(dl));
  rlock_lock_free(dl);
  OK(rlock_lock_acquire(held));
  fx_wait_exists(rt_sentinel_replica(grp, 0), "gf:held", 1, 5000);
  static dk_op wop;
  dk_acquire_start(&wop, wl, w, 30000, 10000);
  fx_wait_subscribers(old, "redisson_lock__channel:{gf:held}", 1,
                      "the waiter's subscription");
  /* c's and wc's watches move to the next sentinel (which may watch for
   * others too: the hung-sentinel client's watch can be there already). */
  rt_server *s0 = rt_sentinel_sentinel(grp, 0);
  long long watching = watchers(s0, "");
  assert_true(watching >= 2);
  rt_server_stop(s0);
  wait_probe(watchers, rt_sentinel_sentinel(grp, 1), "", watching, 1,
             rt_scaled_ms(5000));

  rt_sentinel_failover(grp, 30000);
  int64_t switched = rt_now_ms();
  rt_server *nm = rt_sentinel_master(grp);
  dk_report("graceful failover (SENTINEL FAILOVER)",
            rt_sentinel_failover_ms(grp));
  mover mc = {.c = c, .name = "gf:probe", .target = nm, .since = switched},
        md = {.c = deaf,
              .name = "gf:probe-deaf",
              .target = nm,
              .since = switched};
  assert_int_equal(pthread_create(&mc.thread, NULL, mover_main, &mc), 0);
  assert_int_equal(pthread_create(&md.thread, NULL, mover_main, &md), 0);
  pthread_join(mc.thread, NULL);
  pthread_join(md.thread, NULL);
  mover_report(&mc, "client");
  mover_report(&md, "client whose first sentinel is hung");
  rlock_client_free(deaf);
  close(hole);
  /* Back, s0 names the old master until it hears of the switch. */
  rt_server_start_again(s0);
  wait_value(reported_port, s0, MASTER_NAME, rt_server_port(nm),
             rt_scaled_ms(10000));

  /* The held lock went over by replication and is renewed there; the
   * waiter is woken by its release. (Every thread is joined before the
   * first assertion.) */
  int outcome =
      hold_outcome(nm, "gf:held", owner, &log, rt_scaled_ms(WD / 3 + 1000));
  int lost = atomic_load(&log.n), check = rlock_lock_check(held);
  rlock_stats st;
  int stats = rlock_client_stats(c, &st, sizeof st);
  int64_t t0 = rt_now_ms();
  int released = rlock_lock_release(held);
  int woken = dk_op_wait(&wop, 10000, "the waiter");
  if (woken == RLOCK_OK)
    OK(dk_release(wl, w));
  rlock_lock_free(held);
  rlock_lock_free(wl);
  rlock_client_free(c);
  rlock_client_free(wc);
  dk_report("graceful switch: waiter woken after the release",
            (double)(wop.done_us / 1000 - t0));

  if (mc.moved < 0)
    fail_msg("the client never took a lock on the new master");
  ASSERT_BETWEEN(mc.moved, 0, 3000);
  if (outcome != 1 || lost != 0)
    fail_msg("gf:held after a graceful switch: %s, %d lost-lock callbacks",
             outcome == 0 ? "reported lost" : "not renewed on the new master",
             lost);
  RC(check, RLOCK_OK);
  RC(released, RLOCK_OK);
  if (woken != RLOCK_OK)
    fail_msg("waiter: %d (%s)", woken, wop.r.msg);
  ASSERT_BETWEEN(wop.done_us / 1000 - t0, 0, 1000);
  OK(stats);
  assert_int_equal(st.topology_changes, 1); /* the switch, counted once */

  /* A hung first sentinel must not leave the client deaf to the switch. */
  if (md.moved < 0)
    fail_msg("the client with a hung first sentinel never took a lock on "
             "the new master");
  ASSERT_BETWEEN(md.moved, 0, 3000);
}

/* ---- sentinels hung, then down (last: they stay down) ------------------ */

static void test_sentinels_hung_then_down(void **state) {
  (void)state;
  enum { CONNECT = 300, COMMAND = 300 };
  int n = rt_sentinel_nsentinels(grp);
  rt_server *m = rt_sentinel_master(grp);
  for (int i = 0; i < n; i++) /* an earlier failure may have left one down */
    if (rt_server_pid(rt_sentinel_sentinel(grp, i)) == 0)
      rt_server_start_again(rt_sentinel_sentinel(grp, i));
  rlock_client *known = group_client(0, NULL, NULL);
  rlock_lock *kl = fx_lock(known, "down:known");
  OK(rlock_lock_try_acquire(kl, 0, 20000)); /* it knows the master now */
  OK(rlock_lock_release(kl));

  /* Hung sentinels accept connections and never answer. */
  for (int i = 0; i < n; i++)
    rt_server_freeze(rt_sentinel_sentinel(grp, i));
  rlock_client *c = client_timed(rt_sentinel_url(grp), CONNECT, COMMAND);
  rlock_lock *l = fx_lock(c, "down:fresh");
  int64_t t0 = rt_now_ms();
  int rc = rlock_lock_try_acquire(l, 0, 20000);
  int64_t took = rt_now_ms() - t0;
  dk_report("first lock, all sentinels hung: failed after", took);
  if (rc != RLOCK_EIO && rc != RLOCK_ETIMEOUT)
    fail_msg("all sentinels hung: %d (%s)", rc, rlock_error_last()->message);
  ASSERT_BETWEEN(took, 0, n * (CONNECT + COMMAND) + 1000);
  rlock_lock_free(l);
  rlock_client_free(c);
  for (int i = 0; i < n; i++)
    rt_server_thaw(rt_sentinel_sentinel(grp, i));

  /* Stopped sentinels refuse connections. */
  for (int i = 0; i < n; i++)
    rt_server_stop(rt_sentinel_sentinel(grp, i));
  c = client_timed(rt_sentinel_url(grp), CONNECT, COMMAND);
  l = fx_lock(c, "down:fresh");
  t0 = rt_now_ms();
  RC(rlock_lock_try_acquire(l, 0, 20000), RLOCK_EIO);
  took = rt_now_ms() - t0;
  dk_report("first lock, all sentinels down: failed after", took);
  ASSERT_BETWEEN(took, 0, n * CONNECT + 1000);
  char port[16];
  snprintf(port, sizeof port, "%d",
           rt_server_port(rt_sentinel_sentinel(grp, n - 1)));
  if (strstr(rlock_error_last()->message, port) == NULL)
    fail_msg("the message does not name a sentinel: %s",
             rlock_error_last()->message);
  rlock_lock_free(l);
  rlock_client_free(c);

  /* A client that knows the master does not need the sentinels. */
  OK(rlock_lock_try_acquire(kl, 0, 20000));
  assert_int_equal(rt_cmd_int(m, "EXISTS down:known"), 1);
  OK(rlock_lock_release(kl));
  rlock_lock_free(kl);
  rlock_client_free(known);
}

/* A client made without the test harness (child processes, threads). */
static int child_client(const char *url, int64_t watchdog, rlock_client **c) {
  rlock_config *cfg;
  int rc = rlock_config_new(&cfg);
  if (rc == RLOCK_OK)
    rc = rlock_config_set_url(cfg, url);
  if (rc == RLOCK_OK && watchdog > 0)
    rc = rlock_config_set_watchdog_timeout_ms(cfg, watchdog);
  if (rc == RLOCK_OK)
    rc = rlock_client_new(c, cfg);
  rlock_config_free(cfg);
  return rc;
}

/* ---- 2. the master killed ---------------------------------------------- */

/* A fresh client, made after the master died (or hung), taking a lock
 * with a generous wait until it succeeds. */
typedef struct prober {
  const char *name;
  int64_t killed;
  int first_rc;     /* the first call's status ... */
  int64_t first_ms; /* ... and when it returned, after the kill */
  char first_msg[256];
  int failures;
  int64_t acquired_ms; /* -1: never */
  pthread_t thread;
} prober;

static void *prober_main(void *arg) {
  prober *p = arg;
  rlock_client *c;
  rlock_lock *l;
  p->acquired_ms = -1;
  p->first_rc = 1;
  if (child_client(rt_sentinel_url(grp), 0, &c) != RLOCK_OK)
    return NULL;
  if (rlock_lock_new(&l, c, p->name) == RLOCK_OK) {
    while (rt_now_ms() - p->killed < 40000) {
      int rc = rlock_lock_try_acquire(l, 30000, 5000);
      if (p->first_rc == 1) {
        p->first_rc = rc;
        p->first_ms = rt_now_ms() - p->killed;
        snprintf(p->first_msg, sizeof p->first_msg, "%s",
                 rlock_error_last()->message);
      }
      if (rc == RLOCK_OK) {
        p->acquired_ms = rt_now_ms() - p->killed;
        rlock_lock_release(l);
        break;
      }
      p->failures++;
      rt_sleep_ms(20);
    }
    rlock_lock_free(l);
  }
  rlock_client_free(c);
  return NULL;
}

/* A call begun as the master goes: `op` acquires `l` for `owner` with a
 * 20 s wait. */
typedef struct call {
  dk_op *op;
  rlock_lock *l;
  uint64_t owner;
} call;

/* Take the master down (SIGKILL, or SIGSTOP when `hang`), begin `begun`
 * (if any) and, with `probe`, let `p` probe from a fresh client, and wait
 * for the sentinels to fail over. Returns the new master; *left is
 * `key`'s PTTL there at the switch. */
static rt_server *fail_over(int hang, prober *p, int probe, const char *key,
                            long long *left, int64_t *switched,
                            const call *begun) {
  p->killed = rt_now_ms();
  if (hang)
    rt_server_freeze(rt_sentinel_master(grp));
  else
    rt_sentinel_kill_master(grp);
  if (begun != NULL)
    dk_acquire_start(begun->op, begun->l, begun->owner, rt_scaled_ms(20000),
                     10000);
  if (probe)
    assert_int_equal(pthread_create(&p->thread, NULL, prober_main, p), 0);
  rt_sentinel_wait_failover(grp, rt_scaled_ms(30000));
  rt_server *nm = rt_sentinel_master(grp);
  *left = rt_cmd_int(nm, "PTTL %s", key);
  *switched = rt_now_ms();
  dk_report(hang ? "failover after the master hung (SIGSTOP)"
                 : "failover after kill -9 of the master",
            rt_sentinel_failover_ms(grp));
  return nm;
}

/* What became of a replicated watchdog hold and of the fresh client. */
static void outage_report(const char *what, const prober *p, long long left,
                          int survived, int64_t after) {
  printf("[   INFO   ] %s: the replicated watchdog hold (PTTL %lld on the "
         "new master at the switch) %s after %lld ms\n",
         what, left,
         survived == 1   ? "was renewed on the new master"
         : survived == 0 ? "was reported lost"
                         : "was neither renewed nor reported lost",
         (long long)after);
  printf("[   INFO   ] %s: fresh client's first call: %d after %lld ms (%s), "
         "%d failed calls\n",
         what, p->first_rc, (long long)p->first_ms,
         p->first_rc ? p->first_msg : "ok", p->failures);
  char line[128];
  snprintf(line, sizeof line,
           "%s: first lock by a fresh client, after the "
           "master went",
           what);
  dk_report(line, p->acquired_ms);
}

/* The fresh client's first call, with a 30 s wait, rode out the failover
 * and got the lock within `bound_ms` of the master going. */
static void assert_rode_out(const prober *p, int64_t bound_ms) {
  if (p->acquired_ms < 0)
    fail_msg("the fresh client never took a lock");
  if (p->first_rc != RLOCK_OK)
    fail_msg("the fresh client's first call, with a 30 s wait, failed "
             "after %lld ms: %d (%s)",
             (long long)p->first_ms, p->first_rc, p->first_msg);
  ASSERT_BETWEEN(p->acquired_ms, 0, bound_ms);
}

/* kill -9 of the master (a deployment of its own) under holders and
 * waiters: a replicated watchdog hold (kept), one the replica is made to
 * forget (gone) and a 60 s lease it forgets too (leased), a short and a
 * long waiter on kept and one on leased. New calls work on the new master
 * (a call begun at the kill with a 20 s wait too); the hold the new
 * master never saw is reported lost, never re-taken; the replicated hold
 * is renewed there (its short waiter gives up, its long waiter is woken
 * by its release) unless it expired during the failover, and is then
 * reported lost; the waiter on the lease lock the new master never saw
 * gets it once its subscription is back, not after the 60 s lease. For
 * the blocking client also: a fresh client's first call rides out the
 * failover. The test's thread drives the failover meanwhile (a loop runs
 * on a thread of its own, never blocked). */
static void test_master_killed(void **state) {
  (void)state;
  enum { WD = 6000 }; /* renewal every 2 s */
  static lost_log log;
  log = (lost_log){0};
  rt_server *old = rt_sentinel_master(grp), *rep = rt_sentinel_replica(grp, 0);
  dk_bg_begin();
  rlock_client *h = group_client(WD, on_lost, &log),
               *wc = group_client(0, NULL, NULL),
               *rc = group_client(0, NULL, NULL);
  static rlock_lock *kept, *gone, *leased, *wk[2], *wleased, *ride;
  kept = fx_lock(h, "kill:kept");
  gone = fx_lock(h, "kill:gone");
  leased = fx_lock(h, "kill:leased");
  wk[0] = fx_lock(wc, "kill:kept");
  wk[1] = fx_lock(wc, "kill:kept");
  wleased = fx_lock(wc, "kill:leased");
  ride = fx_lock(rc, "kill:ride");
  uint64_t me = dk_me(),
           ow[3] = {rlock_owner_new(), rlock_owner_new(), rlock_owner_new()},
           orider = rlock_owner_new();
  char owner[RLOCK_OWNER_MAX];
  dk_field(h, me, owner);
  OK(dk_acquire(kept, me, 0, RLOCK_LEASE_WATCHDOG));
  OK(dk_acquire(gone, me, 0, RLOCK_LEASE_WATCHDOG));
  OK(dk_acquire(leased, me, 0, 60000));
  /* WAIT answered: the replica has all three. As if the kill had come
   * before two of these writes reached the replica (asynchronous
   * replication), the replica forgets them. */
  assert_int_equal(rt_cmd_int(rep, "EXISTS kill:kept kill:gone kill:leased"),
                   3);
  rt_cmd_ok(rep, "CONFIG SET replica-read-only no");
  assert_int_equal(rt_cmd_int(rep, "DEL kill:gone kill:leased"), 2);
  static dk_op w_kept, w_kept_long, w_leased, rode;
  int64_t started = rt_now_ms();
  dk_acquire_start(&w_kept, wk[0], ow[0], 8000, 10000);
  dk_acquire_start(&w_kept_long, wk[1], ow[1], rt_scaled_ms(60000), 10000);
  dk_acquire_start(&w_leased, wleased, ow[2], rt_scaled_ms(30000), 10000);
  dk_wait_subscribers(old, "redisson_lock__channel:{kill:kept}", 1,
                      "the waiters' subscription");
  dk_wait_subscribers(old, "redisson_lock__channel:{kill:leased}", 1,
                      "the waiter's subscription");
  dk_bg_measure_from_now();

  static prober p;
  p = (prober){.name = "kill:probe"};
  long long left;
  int64_t switched;
  rt_server *nm = fail_over(0, &p, !dk_loop(), "kill:kept", &left, &switched,
                            &(call){&rode, ride, orider});
  int64_t failover = rt_sentinel_failover_ms(grp);
  assert_ptr_equal(nm, rt_sentinel_server(grp, 1));

  /* New locks work, from the holder's client too, and the call begun at
   * the kill got its lock. */
  rlock_lock *fresh = fx_lock(h, "kill:after");
  OK(dk_acquire(fresh, me, 10000, 10000));
  assert_int_equal(rt_cmd_int(nm, "EXISTS kill:after"), 1);
  OK(dk_release(fresh, me));
  rlock_lock_free(fresh);
  OK(dk_op_wait(&rode, 25000, "the call begun at the kill"));
  dk_report("kill -9 to the lock of a call waiting through the failover",
            (double)(rode.done_us / 1000 - p.killed));
  assert_int_equal(rt_cmd_int(nm, "EXISTS kill:ride"), 1);
  OK(dk_release(ride, orider));
  /* The waiter on the lease lock the new master never saw gets it once
   * its subscription is back, not after the 60 s lease. */
  OK(dk_op_wait(&w_leased, 10000, "the waiter on kill:leased"));
  dk_report("master killed: waiter acquired the unreplicated lease lock, "
            "after the kill",
            (double)(w_leased.done_us / 1000 - p.killed));
  ASSERT_BETWEEN(w_leased.done_us / 1000 - p.killed, 0, failover + 5000);
  /* The hold the new master never saw is reported lost, never re-taken. */
  int64_t lost_after = wait_lost(&log, "kill:gone", rt_scaled_ms(WD + 5000));
  dk_report("master killed: unreplicated hold reported lost, after the "
            "failover",
            (double)lost_after);
  if (lost_after < 0)
    fail_msg("no lost-lock callback for kill:gone");
  RC(dk_check(gone, me), RLOCK_ELOST);
  RC(dk_release(gone, me), RLOCK_ELOST);
  assert_int_equal(rt_cmd_int(nm, "EXISTS kill:gone"), 0);
  /* The replicated hold: kept and renewed on the new master, unless it
   * expired during the failover; then it is reported lost. */
  int survived =
      hold_outcome(nm, "kill:kept", owner, &log, rt_scaled_ms(WD / 3 + 3000));
  int64_t outcome_after = rt_now_ms() - switched;
  if (!dk_loop()) {
    pthread_join(p.thread, NULL);
    outage_report("master killed", &p, left, survived, outcome_after);
  }
  if (survived < 0)
    fail_msg("kill:kept neither renewed on the new master nor reported lost");
  dk_op_wait(&w_kept, 10000, "the short waiter on kill:kept");
  printf("[   INFO   ] master killed: short waiter on the replicated hold: "
         "%d (%s) after %lld ms\n",
         w_kept.r.rc, w_kept.r.rc ? w_kept.r.msg : "ok",
         (long long)(w_kept.done_us / 1000 - started));
  ASSERT_BETWEEN(w_kept.done_us / 1000 - started, 0, 8000 + 3000 + 1000);
  if (survived) {
    assert_int_equal(fx_hget(nm, "kill:kept", owner), 1);
    OK(dk_check(kept, me));
    if (w_kept.r.rc != RLOCK_ELOCKED && w_kept.r.rc != RLOCK_EIO &&
        w_kept.r.rc != RLOCK_ETIMEOUT)
      fail_msg("waiter on a surviving hold: %d (%s)", w_kept.r.rc,
               w_kept.r.msg);
    ASSERT_RANGE(rt_cmd_int(nm, "PTTL kill:kept"), 1, WD);
    assert_false(dk_op_done(&w_kept_long));
    dk_wait_subscribers(nm, "redisson_lock__channel:{kill:kept}", 1,
                        "the waiter's subscription on the new master");
    int64_t released = rt_now_us();
    OK(dk_release(kept, me));
    OK(dk_op_wait(&w_kept_long, 10000, "the long waiter on kill:kept"));
    double woke = (double)(w_kept_long.done_us - released) / 1000.0;
    dk_report("wake-up after a kill -9 failover", woke);
    ASSERT_BETWEEN((int64_t)woke, 0, 2000);
  } else {
    RC(dk_check(kept, me), RLOCK_ELOST);
    RC(dk_release(kept, me), RLOCK_ELOST);
    OK(dk_op_wait(&w_kept_long, 10000, "the long waiter on kill:kept"));
  }
  if (w_kept.r.rc == RLOCK_OK)
    OK(dk_release(wk[0], ow[0]));
  OK(dk_release(wk[1], ow[1]));
  RC(dk_release(leased, me), RLOCK_ELOST); /* its waiter took it meanwhile */
  OK(dk_release(wleased, ow[2]));
  if (!dk_loop())
    assert_rode_out(&p, failover + 3000);
  rlock_lock *all[] = {kept, gone, leased, wk[0], wk[1], wleased, ride};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    rlock_lock_free(all[i]);
  dk_free(h);
  dk_free(wc);
  dk_free(rc);
  dk_bg_end("kill -9 of the Sentinel master");
}

/* ---- the master hung (SIGSTOP) ---------------------------------------- */

/* A hung master accepts connections and answers nothing: calls time out
 * instead of being refused. The sentinels fail over; the holder's lock
 * (replicated) must be renewed on the new master when it still has more
 * time to live there than one command timeout (the holder may be inside
 * a renewal to the hung master when the switch comes, but not in two);
 * the waiter never gets it while it is held, and (blocking) a fresh
 * client's first call rides out the failover. The test's thread drives
 * the failover meanwhile (a loop runs on a thread of its own, never
 * blocked). */
static void test_master_hung(void **state) {
  (void)state;
  enum { WD = 6000 };
  static lost_log log;
  log = (lost_log){0};
  rt_server *old = rt_sentinel_master(grp);
  dk_bg_begin();
  rlock_client *h = group_client(WD, on_lost, &log),
               *wc = group_client(0, NULL, NULL);
  static rlock_lock *held, *wl; /* static, as the waiter's op */
  held = fx_lock(h, "hung:held");
  wl = fx_lock(wc, "hung:held");
  uint64_t me = dk_me(), w = rlock_owner_new();
  char owner[RLOCK_OWNER_MAX];
  dk_field(h, me, owner);
  OK(dk_acquire(held, me, 0, RLOCK_LEASE_WATCHDOG));
  fx_wait_exists(rt_sentinel_replica(grp, 0), "hung:held", 1, 5000);
  static dk_op wop;
  int64_t started = rt_now_ms();
  dk_acquire_start(&wop, wl, w, 8000, 10000);
  dk_wait_subscribers(old, "redisson_lock__channel:{hung:held}", 1,
                      "the waiter's subscription");
  dk_bg_measure_from_now();

  static prober p;
  p = (prober){.name = "hung:probe"};
  long long left;
  int64_t switched;
  rt_server *nm =
      fail_over(1, &p, !dk_loop(), "hung:held", &left, &switched, NULL);
  int64_t failover = rt_sentinel_failover_ms(grp);
  int survived =
      hold_outcome(nm, "hung:held", owner, &log, rt_scaled_ms(WD / 3 + 4000));
  int64_t outcome_after = rt_now_ms() - switched;
  dk_op_wait(&wop, 10000, "the waiter");
  if (!dk_loop()) {
    pthread_join(p.thread, NULL);
    outage_report("master hung", &p, left, survived, outcome_after);
  }
  printf("[   INFO   ] master hung: waiter: %d (%s) after %lld ms\n", wop.r.rc,
         wop.r.rc ? wop.r.msg : "ok",
         (long long)(wop.done_us / 1000 - started));
  fflush(stdout);
  if (survived < 0)
    fail_msg("hung:held neither renewed on the new master nor reported lost");
  ASSERT_BETWEEN(wop.done_us / 1000 - started, 0, 8000 + 3000 + 1000);
  if (survived) {
    OK(dk_check(held, me));
    if (wop.r.rc != RLOCK_ELOCKED && wop.r.rc != RLOCK_EIO &&
        wop.r.rc != RLOCK_ETIMEOUT)
      fail_msg("waiter on a hold that survived: %d (%s)", wop.r.rc, wop.r.msg);
    OK(dk_release(held, me));
    assert_int_equal(rt_cmd_int(nm, "EXISTS hung:held"), 0);
  } else {
    RC(dk_check(held, me), RLOCK_ELOST);
    RC(dk_release(held, me), RLOCK_ELOST);
  }
  if (wop.r.rc == RLOCK_OK)
    OK(dk_release(wl, w));
  rt_server_thaw(old);
  rlock_lock_free(held);
  rlock_lock_free(wl);
  dk_free(h);
  dk_free(wc);
  dk_bg_end("the Sentinel master hung");
  if (!dk_loop())
    assert_rode_out(&p, failover + 3000 + 2000);
  if (!survived && left > 2000 + rt_scaled_ms(500))
    fail_msg("hung:held was lost, though it had %lld ms to live on the new "
             "master at the switch (command timeout 2000 ms)",
             left);
}

/* ---- 4. passwords: the sentinels' own and the data nodes' --------------- */

/* Both have characters that must be %-encoded in a URL. */
#define DATA_PW "da:ta@pw"
#define DATA_PW_URL "da%3Ata%40pw"
#define SENT_PW "se/nt&pw"
#define SENT_PW_URL "se%2Fnt%26pw"

static rt_server *pw_master, *pw_sentinel;

static int setup_passwords(void **state) {
  dk_recover(state);
  pw_master =
      rt_server_start((const char *const[]){"--requirepass", DATA_PW, NULL});
  rt_cmd_ok(pw_master, "ACL SETUSER app on >apppw ~* &* +@all");
  char config[512];
  snprintf(config, sizeof config,
           "sentinel monitor pwm 127.0.0.1 %d 1\n"
           "sentinel auth-pass pwm %s\n",
           rt_server_port(pw_master), DATA_PW);
  pw_sentinel = rt_server_start_opts(&(rt_server_opts){
      .config = config,
      .sentinel = true,
      .extra_args = (const char *const[]){"--requirepass", SENT_PW, NULL}});
  rt_cmd_ok(pw_sentinel, "ACL SETUSER sen on >senpw +@all");
  return 0;
}

static int teardown_passwords(void **state) {
  (void)state;
  rt_server_free(pw_sentinel);
  rt_server_free(pw_master);
  return 0;
}

static const char *pw_url(char *buf, size_t size, const char *creds,
                          const char *params) {
  snprintf(buf, size, "redis-sentinel://%s127.0.0.1:%d%s#pwm", creds,
           rt_server_port(pw_sentinel), params);
  return buf;
}

/* Lock and release "pw:lock" through `url`: the key was on the master,
 * written by a connection logged in as `user`. */
static void lock_through(const char *url, const char *user) {
  rlock_client *c = fx_client_opts(url, 0, NULL, NULL);
  rlock_lock *l = fx_lock(c, "pw:lock");
  OK(rlock_lock_try_acquire(l, 0, 20000));
  assert_int_equal(rt_cmd_int(pw_master, "EXISTS pw:lock"), 1);
  char want[64];
  snprintf(want, sizeof want, " user=%s ", user);
  redisReply *r = rt_cmd(pw_master, "CLIENT LIST");
  int found = r->type == REDIS_REPLY_STRING && strstr(r->str, want) != NULL;
  freeReplyObject(r);
  if (!found)
    fail_msg("no connection of user '%s' on the master", user);
  OK(rlock_lock_release(l));
  rlock_lock_free(l);
  rlock_client_free(c);
}

static void test_passwords_in_url(void **state) {
  (void)state;
  char url[512];
  lock_through(pw_url(url, sizeof url, ":" DATA_PW_URL "@",
                      "?sentinel_password=" SENT_PW_URL),
               "default");
  /* ACL users on both sides. */
  lock_through(pw_url(url, sizeof url, "app:apppw@",
                      "?sentinel_user=sen&sentinel_password=senpw"),
               "app");
}

/* `url` fails with `code`, and the message names `who` (a port). */
static void refused(const char *url, int code, int who) {
  rlock_client *c = fx_client_opts(url, 0, NULL, NULL);
  rlock_lock *l = fx_lock(c, "pw:refused");
  int rc = rlock_lock_try_acquire(l, 0, 20000);
  char msg[512], port[16];
  snprintf(msg, sizeof msg, "%s", rlock_error_last()->message);
  snprintf(port, sizeof port, "%d", who);
  rlock_lock_free(l);
  rlock_client_free(c);
  if (rc != code || strstr(msg, port) == NULL)
    fail_msg("%s: %d (%s), expected %d naming port %d", url, rc, msg, code,
             who);
}

static void test_bad_credentials(void **state) {
  (void)state;
  char url[512];
  int sp = rt_server_port(pw_sentinel), mp = rt_server_port(pw_master);
  refused(
      pw_url(url, sizeof url, ":" DATA_PW_URL "@", "?sentinel_password=wrong"),
      RLOCK_EAUTH, sp);
  refused(pw_url(url, sizeof url, ":wrong@", "?sentinel_password=" SENT_PW_URL),
          RLOCK_EAUTH, mp);
  refused(pw_url(url, sizeof url, "", "?sentinel_password=" SENT_PW_URL),
          RLOCK_EAUTH, mp);
  /* No sentinel password: the sentinel answers -NOAUTH. */
  refused(pw_url(url, sizeof url, ":" DATA_PW_URL "@", ""), RLOCK_EAUTH, sp);
}

/* ---- child roles ------------------------------------------------------- */

/* "wait URL NAME WAIT_MS": try to acquire; write 'O' (acquired, then
 * released), 'L' (RLOCK_ELOCKED) or 'E'. "hold URL NAME WATCHDOG_MS":
 * acquire with the watchdog, write 'H', wait to be killed. */
static int child_main(int argc, char **argv) {
  rlock_client *c;
  rlock_lock *l;
  if (argc != 4 ||
      child_client(argv[1], strcmp(argv[0], "hold") == 0 ? atoll(argv[3]) : 0,
                   &c) != RLOCK_OK)
    return 64;
  if (rlock_lock_new(&l, c, argv[2]) != RLOCK_OK)
    return 1;
  if (strcmp(argv[0], "hold") == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives a failed test */
    if (rlock_lock_acquire(l) != RLOCK_OK || write(STDOUT_FILENO, "H", 1) != 1)
      return 1;
    for (;;)
      pause();
  }
  int rc = rlock_lock_try_acquire(l, atoll(argv[3]), 0);
  char b = rc == RLOCK_OK ? 'O' : rc == RLOCK_ELOCKED ? 'L' : 'E';
  if (write(STDOUT_FILENO, &b, 1) != 1)
    return 1;
  if (rc == RLOCK_OK)
    rlock_lock_release(l);
  rlock_lock_free(l);
  rlock_client_free(c);
  return 0;
}

/* ---- the groups ------------------------------------------------------------
 */

/* Each driver's group on a deployment of its own: the blocking group's
 * last case leaves its sentinels down. */
static int setup(void) {
  grp = start_group(MASTER_NAME);
  return 0;
}

static void teardown(void) {
  rt_sentinel_free(grp);
  grp = NULL;
}

int main(int argc, char **argv) {
  fx_argv0 = argv[0];
  if (argc > 2 && strcmp(argv[1], "--child") == 0)
    return child_main(argc - 2, argv + 2);
  (void)srv; /* fixture.h's single server: unused here */
  const dk_case cases[] = {
      DK_CASE(test_lock_status_on_master, DK_ALL),
      DK_CASE(test_database_from_url, DK_ALL),
      DK_CASE(test_wait_and_wake, DK_ALL),
      DK_CASE(test_wait_and_wake_across_processes, DK_BLOCK),
      DK_CASE(test_watchdog_renews_on_master, DK_BLOCK),
      DK_CASE(test_lost_lock_reported, DK_ALL),
      DK_CASE(test_fair_lock_order, DK_ALL),
      DK_CASE(test_read_write_lock, DK_ALL),
      DK_CASE(test_dead_first_sentinel, DK_ALL),
      DK_CASE(test_unknown_master_name, DK_ALL),
      DK_CASE(test_switch_master_followed, DK_ALL),
      DK_CASE(test_graceful_switch, DK_BLOCK),
      /* The last on the group's deployment: it leaves the sentinels down. */
      DK_CASE(test_sentinels_hung_then_down, DK_BLOCK),
      DK_CASE_ST(test_master_killed, own_group, own_group_done, DK_ALL),
      DK_CASE_ST(test_master_hung, own_group, own_group_done, DK_ALL),
      DK_CASE_ST(test_passwords_in_url, setup_passwords, teardown_passwords,
                 DK_BLOCK),
      DK_CASE_ST(test_bad_credentials, setup_passwords, teardown_passwords,
                 DK_BLOCK),
  };
  return DK_RUN(cases, setup, teardown);
}
