/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: rlock against a real Redis Cluster (rt_cluster: 3 masters,
 * one replica each). The cases written once run once per driver
 * (drivers.h: a blocking client, a loop client on libuv and on libevent):
 * every lock kind on every master, keys on the owning node; whois read
 * from the master of the registry key's slot; waiters woken
 * by unlock messages in the three pub/sub modes (classic, sharded, auto);
 * Redisson's own scripts publishing with SPUBLISH; the unlock latch
 * (deleted after each release, replayed for a release whose reply was
 * lost); a slot migrated under held locks and a waiter (ASK, then MOVED
 * and the server's sunsubscribe) and releases half-way through one; a
 * graceful failover and kill -9 of a master under a holder, a waiter and
 * new calls. Where the test's thread drives a migration or a failover, a
 * loop runs on a thread of its own (drivers.h's background mode), whose
 * 10 ms timer must never be more than 20 ms late meanwhile.
 *
 * The blocking client's own cases: contention across processes; watchdog
 * renewal of hundreds of slots, an idle tick and a stopped master; seed
 * lists, wrong-URL errors, MultiLock and RedLock on a cluster client.
 *
 * Every wait is on an observable condition (PUBSUB [SHARD]NUMSUB on the
 * nodes, keys, a file, a line from a child) and bounded; upper bounds of
 * timings stretch with $RLOCK_TEST_TIME_SCALE. The blocking group runs
 * first, failovers last: the loop groups find masters where they are.
 */
#include "drivers.h"

#include <limits.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include "rt_cluster.h"

static rt_cluster *cl;

/* ---- helpers ------------------------------------------------------------ */

static rt_server *node(int i) { return rt_cluster_node(cl, i); }

/* A check that a fixed library bug (named by `bug`, described in the
 * test's comment) is back: fails the test. */
static void regression(const char *bug, const char *detail) {
  fail_msg("regression of %s: %s", bug, detail);
}

/* The node that owns `key`'s slot now. */
static int owner_of(const char *key) {
  return rt_cluster_slot_owner(cl, rt_cluster_slot_of(key));
}

/* "redis-cluster://<masters>[?pubsub=MODE]", copied into buf. */
static const char *cluster_url(char *buf, size_t size, const char *mode) {
  snprintf(buf, size, "%s%s%s", rt_cluster_url(cl), mode ? "?pubsub=" : "",
           mode ? mode : "");
  return buf;
}

/* A client of the running driver. */
static rlock_client *cluster_client(const char *mode, int64_t watchdog) {
  char url[1024];
  return dk_client(cluster_url(url, sizeof url, mode), watchdog, NULL, NULL);
}

/* An integer command on node n; fails the test on any other reply (a
 * MOVED error means the key is not on that node). */
static long long int_on(int n, const char *fmt, const char *key) {
  redisReply *r = rt_cmd(node(n), fmt, key);
  if (r->type != REDIS_REPLY_INTEGER)
    fail_msg("node %d: '%s' on %s answered '%s'", n, fmt, key,
             r->str ? r->str : "(not an integer)");
  long long v = r->integer;
  freeReplyObject(r);
  return v;
}

static long long exists_on(int n, const char *key) {
  return int_on(n, "EXISTS %s", key);
}

/* `first` (ASKING: a key of a slot it imports; READONLY: a key of a
 * replica's) then `cmd key` on node n, over a connection of its own. */
static long long first_int(int n, const char *first, const char *cmd,
                           const char *key) {
  redisContext *ctx = rt_server_connect(node(n));
  freeReplyObject(redisCommand(ctx, first));
  redisReply *r = redisCommand(ctx, "%s %s", cmd, key);
  if (r == NULL || r->type != REDIS_REPLY_INTEGER)
    fail_msg("node %d: %s, %s %s answered %s", n, first, cmd, key,
             r && r->str ? r->str : "nothing");
  long long v = r->integer;
  freeReplyObject(r);
  redisFree(ctx);
  return v;
}

static long long asking_int(int n, const char *cmd, const char *key) {
  return first_int(n, "ASKING", cmd, key);
}

/* HGET as a string into out ("" when absent). */
static void hget_str(int n, const char *key, const char *field, char *out,
                     size_t size) {
  redisReply *r = rt_cmd(node(n), "HGET %s %s", key, field);
  if (r->type == REDIS_REPLY_ERROR)
    fail_msg("node %d: HGET %s: %s", n, key, r->str);
  snprintf(out, size, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
  freeReplyObject(r);
}

/* Another node answers the key with MOVED to its owner: it is not there. */
static void assert_moved_elsewhere(int n, const char *key, int owner) {
  redisReply *r = rt_cmd(node(n), "EXISTS %s", key);
  char want[64];
  snprintf(want, sizeof want, ":%d", rt_cluster_port(cl, owner));
  if (r->type != REDIS_REPLY_ERROR || strncmp(r->str, "MOVED ", 6) != 0 ||
      strstr(r->str, want) == NULL)
    fail_msg("node %d should redirect '%s' to node %d, answered type %d '%s'",
             n, key, owner, r->type, r->str ? r->str : "");
  freeReplyObject(r);
}

/* CLUSTER COUNTKEYSINSLOT on node n. */
static long long keys_in_slot(int n, int slot) {
  return rt_cmd_int(node(n), "CLUSTER COUNTKEYSINSLOT %d", slot);
}

/* The keys of a slot on node n, each as "name (type, PTTL ms)", into out
 * (ASKING before each look, so a slot n imports can be read too): what a
 * count of keys that is not the one expected failed on. */
static void slot_keys_text(int n, int slot, char *out, size_t size) {
  redisContext *ctx = rt_server_connect(node(n));
  redisReply *keys = redisCommand(ctx, "CLUSTER GETKEYSINSLOT %d 20", slot);
  size_t at = (size_t)snprintf(out, size, "none");
  for (size_t k = 0; keys && keys->type == REDIS_REPLY_ARRAY &&
                     k < keys->elements && at < size;
       k++) {
    const char *key = keys->element[k]->str;
    redisAppendCommand(ctx, "ASKING");
    redisAppendCommand(ctx, "TYPE %s", key);
    redisAppendCommand(ctx, "ASKING");
    redisAppendCommand(ctx, "PTTL %s", key);
    redisReply *r[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < 4; i++)
      if (redisGetReply(ctx, (void **)&r[i]) != REDIS_OK)
        r[i] = NULL;
    at = k == 0 ? 0 : at;
    at += (size_t)snprintf(
        out + at, size - at, "%s%s (%s, %lld ms)", k ? "; " : "", key,
        r[1] && r[1]->str ? r[1]->str : "?", r[3] ? r[3]->integer : -3);
    for (int i = 0; i < 4; i++)
      freeReplyObject(r[i]);
  }
  freeReplyObject(keys);
  redisFree(ctx);
}

/* Node n holds `want` keys in the slot; else the test fails naming the
 * keys it found (names, types and TTLs: a count alone tells nothing). */
static void assert_keys_in_slot(int n, int slot, long long want,
                                const char *when) {
  long long got = keys_in_slot(n, slot);
  if (got == want)
    return;
  char found[2048];
  slot_keys_text(n, slot, found, sizeof found);
  fail_msg("%s: node %d holds %lld keys in slot %d, not %lld: %s", when, n, got,
           slot, want, found);
}

/* PUBSUB NUMSUB / SHARDNUMSUB (`sharded`) of one channel on node n. */
static long long subs_on(int n, int sharded, const char *ch) {
  return fx_subscribers_of(node(n), sharded, ch);
}

static bool is_live_master(int i) {
  return rt_server_pid(node(i)) != 0 && rt_cluster_is_master(cl, i);
}

/* The live masters, in index order; how many. */
static int live_masters(int *out) {
  int n = 0;
  for (int i = 0; i < rt_cluster_size(cl); i++)
    if (is_live_master(i))
      out[n++] = i;
  return n;
}

/* What a waiter's subscription should look like on the masters. */
typedef struct subs_want {
  const char *ch;
  int sharded; /* SSUBSCRIBE on `owner` (and nowhere else), else SUBSCRIBE */
  int owner;
  long long n; /* subscriptions expected: 1 while waiting, 0 after */
  int also;    /* sharded: a node of owner's shard that may hold it instead
                  (sharded messages reach the shard's replicas), or -1 */
} subs_want;

/* Every running node's [S] counts of `ch`, for messages. */
static void describe_subs(const char *ch, char *out, size_t cap) {
  size_t at = 0;
  out[0] = '\0';
  for (int i = 0; i < rt_cluster_size(cl) && at < cap; i++) {
    if (rt_server_pid(node(i)) == 0)
      continue;
    int n = snprintf(out + at, cap - at, "%s%d%s:S%lld/C%lld", at ? " " : "", i,
                     rt_cluster_is_master(cl, i) ? "m" : "r", subs_on(i, 1, ch),
                     subs_on(i, 0, ch));
    at += n > 0 ? (size_t)n : 0;
  }
}

static bool pred_subs(void *arg, char *why, size_t cap) {
  const subs_want *w = arg;
  long long classic = 0, sharded = 0, where = 0;
  bool ok = true;
  for (int i = 0; i < rt_cluster_size(cl) && ok; i++) {
    if (rt_server_pid(node(i)) == 0)
      continue;
    long long sn = subs_on(i, 1, w->ch);
    long long cn = subs_on(i, 0, w->ch);
    sharded += sn;
    classic += cn;
    where += (i == w->owner || i == w->also) ? sn : 0;
    ok = !w->sharded || cn == 0;
  }
  ok = ok && (w->sharded ? sharded == w->n && where == w->n
                         : classic == w->n && sharded == 0);
  if (!ok) {
    char all[512];
    describe_subs(w->ch, all, sizeof all);
    snprintf(why, cap,
             "want %lld %s on node %d; per node (m/r: master or "
             "replica, S: SHARDNUMSUB, C: NUMSUB): %s",
             w->n, w->sharded ? "SSUBSCRIBE" : "SUBSCRIBE", w->owner, all);
  }
  return ok;
}

/* Wait for the subscription (a loop of the running driver runs
 * meanwhile). */
static void wait_subs(const char *ch, int sharded, int owner, long long n,
                      int64_t ms) {
  subs_want w = {ch, sharded, owner, n, -1};
  dk_wait(pred_subs, &w, ms, "waiter's subscription");
}

typedef struct waiter_subs {
  subs_want w;
  dk_op *op;
} waiter_subs;

/* The waiter's subscription is there; a waiter that ended instead says
 * why (its status, not only the missing subscription). */
static bool pred_waiter_subs(void *arg, char *why, size_t cap) {
  waiter_subs *ws = arg;
  if (pred_subs(&ws->w, why, cap))
    return true;
  if (dk_op_done(ws->op))
    fail_msg("the waiter ended before it subscribed: %d %s", ws->op->r.rc,
             ws->op->r.msg);
  return false;
}

/* wait_subs for the waiter `op` of `ch` on its owner (sharded). */
static void wait_waiter_subs(dk_op *op, const char *ch, int owner, int64_t ms) {
  waiter_subs ws = {{ch, 1, owner, 1, -1}, op};
  dk_wait(pred_waiter_subs, &ws, ms, "waiter's subscription");
}

/* Whether the subscription is (or becomes within ms) as wanted; false with
 * the reason in why. `also` as in subs_want. */
static bool subs_within(const char *ch, int owner, int also, int64_t ms,
                        char *why, size_t cap) {
  subs_want w = {ch, 1, owner, 1, also};
  int64_t end = rt_now_ms() + rt_scaled_ms(ms);
  for (;;) {
    if (pred_subs(&w, why, cap))
      return true;
    if (rt_now_ms() > end)
      return false;
    rt_sleep_ms(20);
  }
}

/* Sample PTTL of `key` on node n (through ASKING when `asking`) every
 * 25 ms for `ms` (a blocking client's renewals run on its own thread, a
 * loop's on the loop's thread meanwhile): every sample must be above
 * `floor`, and at least one must be higher than the one before (a renewal
 * was seen). Returns the lowest sample. */
static long long watch_renewals(int n, const char *key, int asking, int64_t ms,
                                long long floor) {
  redisContext *ctx = rt_server_connect(node(n));
  long long prev = -3, low = LLONG_MAX;
  int rises = 0;
  int64_t end = rt_now_ms() + ms;
  while (rt_now_ms() < end) {
    if (asking)
      freeReplyObject(redisCommand(ctx, "ASKING"));
    redisReply *r = redisCommand(ctx, "PTTL %s", key);
    if (r == NULL || r->type != REDIS_REPLY_INTEGER)
      fail_msg("node %d: PTTL %s answered %s", n, key,
               r && r->str ? r->str : "nothing");
    long long v = r->integer;
    freeReplyObject(r);
    if (v <= floor)
      fail_msg("node %d: PTTL %s = %lld, not above %lld: not renewed", n, key,
               v, floor);
    rises += prev >= 0 && v > prev;
    prev = v;
    low = v < low ? v : low;
    rt_sleep_ms(25); /* sampling */
  }
  redisFree(ctx);
  if (rises == 0)
    fail_msg("node %d: PTTL %s never went up in %lld ms: no renewal seen", n,
             key, (long long)ms);
  return low;
}

/* Calls of `cmd` (INFO commandstats' cmdstat_<cmd>) node n has run. */
static long long calls_on(int n, const char *cmd) {
  redisReply *r = rt_cmd(node(n), "INFO commandstats");
  char want[64];
  snprintf(want, sizeof want, "cmdstat_%s:calls=", cmd);
  const char *p = r->str ? strstr(r->str, want) : NULL;
  long long v = p ? atoll(p + strlen(want)) : 0;
  freeReplyObject(r);
  return v;
}

/* Latch keys of `name` on node n (SCAN, every page). */
static long long latch_keys(int n, const char *name) {
  char match[160], cursor[32] = "0";
  snprintf(match, sizeof match, "redisson_unlock_latch:{%s}:*", name);
  long long found = 0;
  do {
    redisReply *r =
        rt_cmd(node(n), "SCAN %s MATCH %s COUNT 1000", cursor, match);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2)
      fail_msg("node %d: SCAN answered type %d", n, r->type);
    snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
    found += (long long)r->element[1]->elements;
    freeReplyObject(r);
  } while (strcmp(cursor, "0") != 0);
  return found;
}

/* Node n has run `dels` DELs in all, and holds no latch key of `name`. */
typedef struct latch_gone {
  int n;
  const char *name;
  long long dels;
} latch_gone;

static bool pred_latch_gone(void *arg, char *why, size_t cap) {
  latch_gone *g = arg;
  long long dels = calls_on(g->n, "del"), keys = latch_keys(g->n, g->name);
  snprintf(why, cap, "node %d ran %lld DELs of %lld, %lld latch keys left",
           g->n, dels, g->dels, keys);
  return dels >= g->dels && keys == 0;
}

/* ---- 1. every master: kinds, reentrancy, inspection, key placement ------ */

static void check_plain_on(rlock_client *c, int m) {
  char name[64], owner[RLOCK_OWNER_MAX];
  rt_cluster_key_on(cl, m, "each:lock:", name, sizeof name);
  uint64_t me = dk_me();
  dk_field(c, me, owner);
  rlock_lock *l = fx_lock(c, name);
  OK(dk_acquire(l, me, 0, RLOCK_LEASE_WATCHDOG));
  assert_int_equal(exists_on(m, name), 1);
  assert_int_equal(fx_hget(node(m), name, owner), 1);
  for (int o = 0; o < rt_cluster_size(cl); o++)
    if (o != m && is_live_master(o))
      assert_moved_elsewhere(o, name, m);
  OK(dk_acquire(l, me, 0, 20000)); /* re-entry */
  assert_int_equal(fx_hget(node(m), name, owner), 2);
  rlock_lock_info *info;
  OK(dk_inspect(&info, l));
  assert_int_equal(rlock_lock_info_locked(info), 1);
  assert_int_equal(rlock_lock_info_holder_count(info), 1);
  assert_string_equal(rlock_lock_info_holder_owner(info, 0), owner);
  assert_int_equal(rlock_lock_info_holder_holds(info, 0), 2);
  ASSERT_RANGE(rlock_lock_info_ttl_ms(info), 1, 30000);
  char at[64];
  snprintf(at, sizeof at, "127.0.0.1:%d", rt_cluster_port(cl, m));
  assert_string_equal(rlock_lock_info_node(info), at); /* the slot's master */
  rlock_lock_info_free(info);
  int64_t count;
  OK(dk_hold_count(&count, l, me));
  assert_int_equal(count, 2);
  OK(dk_release(l, me));
  assert_int_equal(fx_hget(node(m), name, owner), 1);
  OK(dk_release(l, me));
  assert_int_equal(exists_on(m, name), 0);
  RC(dk_release(l, me), RLOCK_ENOTHELD);
  OK(dk_inspect(&info, l));
  assert_int_equal(rlock_lock_info_locked(info), 0);
  rlock_lock_info_free(info);
  rlock_lock_free(l);
}

static bool pred_queued(void *arg, char *why, size_t cap) {
  const char *queue = arg;
  long long n = int_on(owner_of(queue), "LLEN %s", queue);
  snprintf(why, cap, "%lld waiters queued in %s", n, queue);
  return n == 1;
}

static void check_fair_on(rlock_client *c, rlock_client *c2, int m) {
  char name[64], owner[RLOCK_OWNER_MAX], queue[96];
  rt_cluster_key_on(cl, m, "each:fair:", name, sizeof name);
  snprintf(queue, sizeof queue, "redisson_lock_queue:{%s}", name);
  uint64_t me = dk_me(), b = rlock_owner_new();
  dk_field(c, me, owner);
  rlock_lock *l, *l2;
  OK(rlock_lock_new_fair(&l, c, name));
  OK(rlock_lock_new_fair(&l2, c2, name));
  OK(dk_acquire(l, me, 0, 30000));
  assert_int_equal(exists_on(m, name), 1);
  assert_int_equal(fx_hget(node(m), name, owner), 1);
  dk_op w;
  dk_acquire_start(&w, l2, b, 20000, 30000);
  /* The waiter queues; the queue lives on the lock's node too. */
  dk_wait(pred_queued, queue, 5000, "the fair waiter to queue");
  assert_int_equal(exists_on(m, queue), 1);
  rlock_lock_info *info;
  OK(dk_inspect(&info, l));
  assert_int_equal(rlock_lock_info_queue_count(info), 1);
  rlock_lock_info_free(info);
  OK(dk_release(l, me));
  OK(dk_op_wait(&w, 5000, "the fair waiter"));
  OK(dk_release(l2, b));
  assert_int_equal(exists_on(m, name), 0);
  assert_int_equal(exists_on(m, queue), 0);
  rlock_lock_free(l);
  rlock_lock_free(l2);
}

static void check_rw_on(rlock_client *a, rlock_client *b, int m) {
  char name[64], oa[RLOCK_OWNER_MAX], ob[RLOCK_OWNER_MAX], mode[16], tkey[256],
      wfield[RLOCK_OWNER_MAX + 8];
  rt_cluster_key_on(cl, m, "each:rw:", name, sizeof name);
  uint64_t a1 = dk_me(), b1 = dk_me();
  dk_field(a, a1, oa);
  dk_field(b, b1, ob);
  rlock_lock *ra, *rb, *wb, *wa;
  OK(rlock_lock_new_read(&ra, a, name));
  OK(rlock_lock_new_read(&rb, b, name));
  OK(rlock_lock_new_write(&wb, b, name));
  OK(rlock_lock_new_write(&wa, a, name));
  OK(dk_acquire(ra, a1, 0, 30000));
  OK(dk_acquire(rb, b1, 0, 30000)); /* shared */
  hget_str(m, name, "mode", mode, sizeof mode);
  assert_string_equal(mode, "read");
  assert_int_equal(fx_hget(node(m), name, oa), 1);
  assert_int_equal(fx_hget(node(m), name, ob), 1);
  snprintf(tkey, sizeof tkey, "{%s}:%s:rwlock_timeout:1", name, oa);
  assert_int_equal(exists_on(m, tkey), 1);
  rlock_lock_info *info;
  OK(dk_inspect(&info, ra));
  assert_string_equal(rlock_lock_info_mode(info), "read");
  assert_int_equal(rlock_lock_info_holder_count(info), 2);
  rlock_lock_info_free(info);
  RC(dk_acquire(wb, b1, 0, 0), RLOCK_EDEADLK); /* b reads */
  OK(dk_release(rb, b1));
  RC(dk_acquire(wb, b1, 100, 0), RLOCK_ELOCKED); /* a reads */
  OK(dk_release(ra, a1));
  assert_int_equal(exists_on(m, name), 0);
  OK(dk_acquire(wb, b1, 0, RLOCK_LEASE_WATCHDOG));
  hget_str(m, name, "mode", mode, sizeof mode);
  assert_string_equal(mode, "write");
  snprintf(wfield, sizeof wfield, "%s:write", ob);
  assert_int_equal(fx_hget(node(m), name, wfield), 1);
  RC(dk_acquire(ra, a1, 0, 0), RLOCK_ELOCKED);
  OK(dk_release(wb, b1));
  assert_int_equal(exists_on(m, name), 0);
  /* A writer waiting for two readers is woken by the second release. */
  uint64_t r1 = rlock_owner_new(), r2 = rlock_owner_new(),
           w = rlock_owner_new();
  OK(dk_acquire(ra, r1, 0, 30000));
  OK(dk_acquire(ra, r2, 0, 30000));
  RC(dk_acquire(wa, w, 0, 30000), RLOCK_ELOCKED);
  dk_op wres;
  dk_acquire_start(&wres, wa, w, 20000, 30000);
  OK(dk_release(ra, r1));
  assert_false(dk_op_done(&wres));
  OK(dk_release(ra, r2));
  OK(dk_op_wait(&wres, 5000, "the writer"));
  hget_str(m, name, "mode", mode, sizeof mode);
  assert_string_equal(mode, "write");
  OK(dk_release(wa, w));
  assert_int_equal(exists_on(m, name), 0);
  rlock_lock_free(ra);
  rlock_lock_free(rb);
  rlock_lock_free(wb);
  rlock_lock_free(wa);
}

static void check_fenced_on(rlock_client *c, int m) {
  char name[64], tkey[96];
  rt_cluster_key_on(cl, m, "each:fenced:", name, sizeof name);
  snprintf(tkey, sizeof tkey, "redisson_lock_token:{%s}", name);
  rlock_lock *l;
  OK(rlock_lock_new_fenced(&l, c, name));
  uint64_t me = dk_me();
  result r;
  OK(dk_acquire_x(l, me, 0, 20000, 1, &r));
  int64_t first = r.value;
  assert_true(first > 0);
  OK(dk_release(l, me));
  OK(dk_acquire_x(l, me, 0, 20000, 1, &r));
  assert_int_equal(r.value, first + 1);
  OK(dk_release(l, me));
  assert_int_equal(exists_on(m, tkey), 1); /* the counter, on the node */
  rlock_lock_free(l);
}

static void check_spin_on(rlock_client *c, int m) {
  char name[64];
  rt_cluster_key_on(cl, m, "each:spin:", name, sizeof name);
  rlock_lock *l;
  OK(rlock_lock_new_spin(&l, c, name));
  uint64_t a = rlock_owner_new(), b = rlock_owner_new();
  OK(dk_acquire(l, a, 0, 30000));
  assert_int_equal(exists_on(m, name), 1);
  dk_op w;
  dk_acquire_start(&w, l, b, 20000, 30000);
  dk_let_time_pass(30); /* a few spins go by */
  assert_false(dk_op_done(&w));
  OK(dk_release(l, a));
  OK(dk_op_wait(&w, 5000, "the spinning waiter"));
  OK(dk_release(l, b));
  assert_int_equal(exists_on(m, name), 0);
  rlock_lock_free(l);
}

static void test_every_master(void **state) {
  (void)state;
  rlock_client *a = cluster_client(NULL, 0), *b = cluster_client(NULL, 0);
  assert_string_equal(rlock_client_topology(a), "cluster");
  int masters[16], n = live_masters(masters);
  assert_int_equal(n, rt_cluster_masters(cl));
  for (int i = 0; i < n; i++) {
    int m = masters[i];
    check_plain_on(a, m);
    check_fair_on(a, b, m);
    check_rw_on(a, b, m);
    check_fenced_on(a, m);
    check_spin_on(a, m);
  }
  dk_free(a);
  dk_free(b);
}

/* Whether a client's registry record is on the node that owns its slot
 * (arg: the key). */
static bool pred_record_on_owner(void *arg, char *why, size_t cap) {
  const char *key = arg;
  int m = owner_of(key);
  snprintf(why, cap, "no %s on node %d", key, m);
  return exists_on(m, key) == 1;
}

/* whois reads each client's record from the master of its key's slot:
 * clients are made until every master holds one's record, and a reader
 * of the running driver finds each, following no redirection (routed by
 * the slot, not by MOVED). */
static void test_whois_by_slot(void **state) {
  (void)state;
  int masters[16], n = live_masters(masters);
  rlock_client *on[16] = {0};
  int have = 0;
  for (int tries = 0; have < n && tries < 60; tries++) {
    rlock_client *c = cluster_client(NULL, 0);
    char key[80];
    snprintf(key, sizeof key, "%s%s", RLOCK_REGISTRY_PREFIX,
             rlock_client_id(c));
    dk_wait(pred_record_on_owner, key, 5000, "a registry record");
    int m = owner_of(key), i = 0;
    while (masters[i] != m)
      i++;
    if (on[i] == NULL) {
      on[i] = c;
      have++;
    } else {
      dk_free(c);
    }
  }
  assert_int_equal(have, n);
  rlock_client *r = cluster_client(NULL, 0);
  rlock_client_record rec;
  RC(dk_whois(r, rlock_client_id(on[0]), &rec), 1); /* the map is known */
  rlock_stats st0, st1;
  OK(rlock_client_stats(r, &st0, sizeof st0));
  for (int i = 0; i < n; i++) {
    char owner[RLOCK_OWNER_MAX];
    snprintf(owner, sizeof owner, "%s:7", rlock_client_id(on[i]));
    RC(dk_whois(r, owner, &rec), 1);
    assert_string_equal(rec.client_id, rlock_client_id(on[i]));
    assert_int_equal(rec.pid, (long long)getpid());
  }
  RC(dk_whois(r, "11111111-2222-3333-4444-555555555555:1", &rec), 0);
  OK(rlock_client_stats(r, &st1, sizeof st1));
  assert_int_equal(st1.redirections, st0.redirections);
  for (int i = 0; i < n; i++)
    dk_free(on[i]);
  dk_free(r);
}

/* ---- 2. wake-ups in each pub/sub mode ------------------------------------ */

/* A waiter (its own client) for a lock held elsewhere with a 30 s lease,
 * woken by the release's message: within 2 s (scaled), not by the lease.
 * `blocking_holder`: the holder is a blocking client, else one of the
 * running driver. */
static void wake(const char *mode, int m, int sharded, int blocking_holder) {
  char url[1024], name[64], ch[128], prefix[32], what[96];
  cluster_url(url, sizeof url, mode);
  snprintf(prefix, sizeof prefix, "lc:wake:%s:", mode ? mode : "default");
  rt_cluster_key_on(cl, m, prefix, name, sizeof name);
  snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", name);
  rlock_client *hc = NULL, *bc = NULL;
  rlock_lock *hl;
  uint64_t holder = rlock_owner_new(), me = rlock_owner_new();
  if (blocking_holder) {
    bc = fx_client_opts(url, 0, NULL, NULL);
    hl = fx_lock(bc, name);
    OK(rlock_lock_acquire_lease(hl, 30000));
  } else {
    hc = dk_client(url, 0, NULL, NULL);
    hl = fx_lock(hc, name);
    OK(dk_acquire(hl, holder, 0, 30000));
  }
  assert_int_equal(exists_on(m, name), 1);
  rlock_client *wc = dk_client(url, 0, NULL, NULL);
  rlock_lock *wl = fx_lock(wc, name);
  dk_op w;
  dk_acquire_start(&w, wl, me, 60000, 30000);
  /* The waiter is subscribed where the mode says, and only there. */
  wait_subs(ch, sharded, m, 1, 10000);
  assert_false(dk_op_done(&w));
  int64_t t0 = rt_now_us();
  if (blocking_holder)
    OK(rlock_lock_release(hl));
  else
    OK(dk_release(hl, holder));
  OK(dk_op_wait(&w, 10000, "the woken waiter"));
  double ms = (double)(w.done_us - t0) / 1000.0;
  snprintf(what, sizeof what, "wake-up, pubsub=%s, %s holder",
           mode ? mode : "(default: auto)",
           blocking_holder ? "blocking" : "same driver's");
  dk_report(what, ms);
  ASSERT_BETWEEN((int64_t)ms, 0, 2000); /* the lease was 30 s */
  char field[RLOCK_OWNER_MAX];
  dk_field(wc, me, field);
  assert_int_equal(fx_hget(node(m), name, field), 1);
  OK(dk_release(wl, me));
  assert_int_equal(exists_on(m, name), 0);
  /* The subscription goes once the channel stops lingering. */
  wait_subs(ch, sharded, m, 0, 10000);
  rlock_lock_free(wl);
  dk_free(wc);
  rlock_lock_free(hl);
  if (hc != NULL)
    dk_free(hc);
  if (bc != NULL)
    rlock_client_free(bc);
}

/* ---- 2. contention across processes, in each pub/sub mode --------------- */

/* Holder child: takes NAME with a 30 s lease, says "held RC", releases
 * once FILE exists and says "released <monotonic us> RC". Waiter child:
 * waits up to 60 s for NAME, says "acquired <monotonic us> RC", releases.
 * CLOCK_MONOTONIC is shared by every process, so the parent can subtract
 * the two times. */
static void wake_across_processes(const char *mode, int m, int sharded) {
  char url[1024], name[64], file[256], line[256];
  cluster_url(url, sizeof url, mode);
  char prefix[32];
  snprintf(prefix, sizeof prefix, "wake:%s:", mode);
  rt_cluster_key_on(cl, m, prefix, name, sizeof name);
  char ch[128];
  snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", name);
  snprintf(file, sizeof file, "%s/rlock-test-cluster-%d-%s",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(), mode);
  unlink(file);

  int hold_fd, wait_fd;
  pid_t holder =
      fx_spawn_child((const char *[]){"hold", url, name, file, NULL}, &hold_fd);
  fx_read_line(hold_fd, line, sizeof line, rt_scaled_ms(15000));
  assert_string_equal(line, "held 0");
  assert_int_equal(exists_on(m, name), 1);
  pid_t waiter_pid =
      fx_spawn_child((const char *[]){"wait", url, name, NULL}, &wait_fd);
  /* The waiter is subscribed where the mode says, and only there. */
  wait_subs(ch, sharded, m, 1, 15000);

  FILE *f = fopen(file, "w");
  assert_non_null(f);
  fclose(f);
  long long released_us, acquired_us;
  int rc;
  fx_read_line(hold_fd, line, sizeof line, rt_scaled_ms(15000));
  assert_int_equal(sscanf(line, "released %lld %d", &released_us, &rc), 2);
  assert_int_equal(rc, RLOCK_OK);
  fx_read_line(wait_fd, line, sizeof line, rt_scaled_ms(15000));
  assert_int_equal(sscanf(line, "acquired %lld %d", &acquired_us, &rc), 2);
  assert_int_equal(rc, RLOCK_OK);
  assert_int_equal(fx_wait_child(holder, rt_scaled_ms(15000)), 0);
  assert_int_equal(fx_wait_child(waiter_pid, rt_scaled_ms(15000)), 0);
  close(hold_fd);
  close(wait_fd);
  unlink(file);

  /* The holder's lease was 30 s: only the unlock message explains this. */
  double ms = (double)(acquired_us - released_us) / 1000.0;
  char what[96];
  snprintf(what, sizeof what, "wake-up across processes, pubsub=%s", mode);
  dk_report(what, ms);
  ASSERT_BETWEEN((int64_t)ms, 0, 500);
  assert_int_equal(exists_on(m, name), 0);
  wait_subs(ch, sharded, m, 0, 10000); /* and the subscription went away */
}

/* Each mode (`mode`; `unnamed`: the URL names none), its subscriptions
 * `sharded` or not: a waiter of the running driver woken by a holder of
 * the same driver on the live master `first` and by a blocking holder on
 * the next; for the blocking client, also across processes. */
static void wake_in_mode(const char *mode, int unnamed, int sharded,
                         int first) {
  int ms[16];
  assert_true(live_masters(ms) >= 3);
  if (!dk_loop())
    wake_across_processes(mode, ms[first], sharded);
  wake(unnamed ? NULL : mode, ms[first], sharded, 0);
  wake(mode, ms[(first + 1) % 3], sharded, 1);
}

static void test_wake_classic(void **state) {
  (void)state;
  wake_in_mode("classic", 0, 0, 0);
}

static void test_wake_sharded(void **state) {
  (void)state;
  wake_in_mode("sharded", 0, 1, 1);
}

/* Redis 7 answers PUBSUB SHARDNUMSUB: auto, named or not, picks sharded. */
static void test_wake_auto(void **state) {
  (void)state;
  wake_in_mode("auto", 1, 1, 2);
}

/* ---- 3. a slot migrated under held locks and a waiter ------------------- */

/* The slot test_migration_under_locks takes from its `home` node to
 * `away`: its teardown brings the slot home, so a case that failed with
 * the migration open (or finished) leaves a cluster as the next cases
 * expect it (no slot MIGRATING/IMPORTING, every slot where it was). */
static struct {
  int slot; /* -1: nothing to undo */
  int home, away;
  bool moved;        /* the migration was finished: the slot is `away`'s */
  char stranger[64]; /* a key the case planted in the slot */
} mig = {-1, 0, 0, false, ""};

static int mig_home(void **state) {
  (void)state;
  if (mig.slot < 0)
    return 0;
  int slot = mig.slot;
  mig.slot = -1;
  if (!mig.moved) /* close the open migration the way it was going */
    rt_cluster_migrate_finish(cl, slot, mig.home, mig.away);
  rt_cluster_migrate_slot(cl, slot, mig.away, mig.home);
  freeReplyObject(rt_cmd(node(mig.home), "DEL %s", mig.stranger));
  return 0;
}

/* Three locks in one slot on a client in sharded mode: A (watchdog) is
 * renewed during the migration (ASK) and after it (MOVED); C (a 20 s
 * lease) is released half-way (ASK); B (a 30 s lease) is waited for by
 * another client and released after the slot moved: `from` dropped the
 * waiter's sharded subscription (sunsubscribe) and it must be redone
 * where the channel now lives, since only the unlock message can explain
 * a prompt wake-up. The test's thread drives the migration meanwhile (a
 * loop runs on a thread of its own, never blocked). */
static void test_migration_under_locks(void **state) {
  (void)state;
  int ms[16];
  assert_true(live_masters(ms) >= 3);
  int from = ms[dk == DK_EV ? 1 : 0], to = ms[dk == DK_EV ? 2 : 1];
  char seed[64], a[64], b[64], c[64], ch[128], prefix[32];
  /* A slot of the driver's own: a release's latch key, deleted after the
   * client answered, may outlive the case for a while. */
  snprintf(prefix, sizeof prefix, "mig:%s:", dk_name());
  rt_cluster_key_on(cl, from, prefix, seed, sizeof seed);
  int slot = rt_cluster_slot_of(seed);
  rt_cluster_key_in_slot(slot, "migA:", a, sizeof a);
  rt_cluster_key_in_slot(slot, "migB:", b, sizeof b);
  rt_cluster_key_in_slot(slot, "migC:", c, sizeof c);
  snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", b);
  int64_t wd = rt_scaled_ms(1500);
  dk_bg_begin();
  rlock_client *h = cluster_client("sharded", wd);
  rlock_client *wc = cluster_client("sharded", 0);
  rlock_lock *la = fx_lock(h, a), *lb = fx_lock(h, b), *lc = fx_lock(h, c);
  rlock_lock *wl = fx_lock(wc, b);
  uint64_t me = dk_me(), w = rlock_owner_new();
  OK(dk_acquire(la, me, 0, RLOCK_LEASE_WATCHDOG));
  /* B's lease outlasts the test (several leases of A pass). */
  OK(dk_acquire(lb, me, 0, rt_scaled_ms(30000)));
  OK(dk_acquire(lc, me, 0, 20000));
  static dk_op wop; /* static: a failed case leaves it to the teardown */
  dk_acquire_start(&wop, wl, w, rt_scaled_ms(60000), 30000);
  wait_subs(ch, 1, from, 1, 10000);
  dk_bg_measure_from_now();
  char *stranger = mig.stranger;
  rt_cluster_key_in_slot(slot, "rlock:client:stranger-", stranger,
                         sizeof mig.stranger);
  rt_cmd_ok(node(from), "SET %s rlock-client PX %lld", stranger,
            (long long)rt_scaled_ms(30000));

  mig.home = from;
  mig.away = to;
  mig.moved = false;
  mig.slot = slot;
  rt_cluster_migrate_begin(cl, slot, from, to);
  /* The slot is shared: besides A, B and C it may hold any client's
   * registry record (rlock:client:<UUID>, in a random slot, PX 30 s; each
   * client of the run has one), and it moves with them. So the case looks
   * for its own keys instead of counting the slot's, with a stranger of
   * that kind planted to keep it honest. */
  rt_cluster_migrate_keys(cl, slot, from, to, -1);
  assert_keys_in_slot(from, slot, 0, "after MIGRATE");
  const char *moved[] = {a, b, c, stranger};
  for (int i = 0; i < 4; i++)
    if (asking_int(to, "EXISTS", moved[i]) != 1) {
      char found[2048];
      slot_keys_text(to, slot, found, sizeof found);
      fail_msg("after MIGRATE: %s is not on node %d, whose keys in slot %d "
               "are: %s",
               moved[i], to, slot, found);
    }
  /* The keys now live on `to`, reachable only with ASKING: renewal (and
   * every other call) must follow ASK. More than one lease passes. */
  long long low = watch_renewals(to, a, 1, wd + wd / 2, 0);
  printf("[   INFO   ] lowest PTTL of a lock renewed through ASK: %lld ms "
         "(lease %lld)\n",
         low, (long long)wd);
  int64_t count;
  OK(dk_hold_count(&count, la, me));
  assert_int_equal(count, 1);
  if (!dk_loop()) {
    int locked;
    OK(rlock_lock_is_locked(&locked, lb));
    assert_int_equal(locked, 1);
  }
  assert_false(dk_op_done(&wop)); /* still waiting */
  OK(dk_release(lc, me));         /* half-way: ASK */
  assert_int_equal(asking_int(to, "EXISTS", c), 0);

  rt_cluster_migrate_finish(cl, slot, from, to);
  mig.moved = true;
  assert_int_equal(owner_of(b), to);
  wait_subs(ch, 1, to, 1, 10000);
  assert_false(dk_op_done(&wop));
  /* A's renewals now get MOVED first. */
  low = watch_renewals(to, a, 0, wd + wd / 2, 0);
  printf("[   INFO   ] lowest PTTL of a lock renewed after MOVED: %lld ms\n",
         low);
  if (!dk_loop()) {
    rlock_stats st;
    OK(rlock_client_stats(h, &st, sizeof st));
    assert_true(st.topology_changes >= 1); /* the slot's move was followed */
    assert_true(st.redirections >= 2);     /* ASK, then MOVED */
  }
  assert_int_equal(exists_on(to, b), 1);
  int64_t released = rt_now_us();
  OK(dk_release(lb, me));
  OK(dk_op_wait(&wop, 10000, "the waiter"));
  double woke = (double)(wop.done_us - released) / 1000.0;
  dk_report("wake-up after the slot moved (sharded, holder's lease 30 s)",
            woke);
  ASSERT_BETWEEN((int64_t)woke, 0, dk_loop() ? 2000 : 500);
  OK(dk_release(wl, w));
  OK(dk_check(la, me));
  OK(dk_release(la, me)); /* after MOVED */
  assert_int_equal(exists_on(to, a), 0);
  assert_int_equal(exists_on(to, b), 0);
  rlock_lock_free(la);
  rlock_lock_free(lb);
  rlock_lock_free(lc);
  rlock_lock_free(wl);
  dk_free(h);
  dk_free(wc);
  dk_bg_end("a slot migrated under held locks and a waiter");
  /* The teardown (mig_home) takes the slot back where it was. */
}

/* Releases while the lock's slot is half-way through a migration: the
 * keys are on the importing node, the migrating node answers ASK.
 *
 * Regression test for BUG-2 "release during migration" (fixed: scripts now
 * declare only the lock's hash as a key). It was (src/lib/lock.c release(),
 * force_release(); fair.c fair_keys(); rw.c): the scripts declare the
 * channel (and the fair queue/timeout keys, the read-write timeout prefix
 * and base) as KEYS. These never exist (or need not), so the importing
 * node answers the ASKING retry with "TRYAGAIN Multiple keys request
 * during rehashing of slot"; cmd.c then goes back to the migrating node
 * (ASK again) and gives up after RLOCK__MAX_REDIRECTS with "redirected
 * more than 5 times" in ~0.3 s, well inside the call's deadline. The hold
 * was already popped, so the lock is left to expire with its lease. */
static void test_release_during_migration(void **state) {
  (void)state;
  int ms[16];
  assert_true(live_masters(ms) >= 3);
  char seed[64], p[64], f[64], rw[64], fresh[64];
  int from = ms[2], to = ms[0];
  rt_cluster_key_on(cl, from, "migrel:", seed, sizeof seed);
  int slot = rt_cluster_slot_of(seed);
  rt_cluster_key_in_slot(slot, "migrel:plain:", p, sizeof p);
  rt_cluster_key_in_slot(slot, "migrel:fair:", f, sizeof f);
  rt_cluster_key_in_slot(slot, "migrel:rw:", rw, sizeof rw);
  rt_cluster_key_in_slot(slot, "migrel:fresh:", fresh, sizeof fresh);
  rlock_client *c = cluster_client("sharded", 0);
  rlock_lock *lp = fx_lock(c, p), *lfresh = fx_lock(c, fresh), *lf, *lw;
  OK(rlock_lock_new_fair(&lf, c, f));
  OK(rlock_lock_new_write(&lw, c, rw));
  uint64_t me = dk_me();
  OK(dk_acquire(lp, me, 0, 20000));
  OK(dk_acquire(lf, me, 0, 20000));
  OK(dk_acquire(lw, me, 0, 20000));
  rt_cluster_migrate_begin(cl, slot, from, to);
  rt_cluster_migrate_keys(cl, slot, from, to, -1);
  assert_int_equal(keys_in_slot(from, slot), 0);
  /* A lock taken during the migration: one key, ASK is followed. */
  OK(dk_acquire(lfresh, me, 0, 20000));
  assert_int_equal(asking_int(to, "EXISTS", fresh), 1);
  struct {
    rlock_lock *l;
    const char *what;
  } rel[4] = {{lfresh, "plain lock taken during it"},
              {lp, "plain lock"},
              {lf, "fair lock"},
              {lw, "write lock"}};
  char failed[1024] = "";
  for (int i = 0; i < 4; i++) {
    int64_t t0 = rt_now_ms();
    int rc = dk_release(rel[i].l, me);
    int64_t took = rt_now_ms() - t0;
    if (rc != RLOCK_OK) {
      size_t at = strlen(failed);
      snprintf(failed + at, sizeof failed - at, "%s%s: %d after %lld ms (%s)",
               at ? "; " : "", rel[i].what, rc, (long long)took,
               rlock_error_last()->message);
    } else {
      assert_int_equal(asking_int(to, "EXISTS", rlock_lock_name(rel[i].l)), 0);
    }
    ASSERT_BETWEEN(took, 0, 1000 + 2000 + 2000 + 500); /* never hangs */
  }
  rt_cluster_migrate_finish(cl, slot, from, to);
  /* What a failed release left behind goes, and the slot goes back where
   * it was, for the cases after this one. */
  freeReplyObject(rt_cmd(node(to), "DEL %s %s %s", p, f, rw));
  rt_cluster_migrate_slot(cl, slot, to, from);
  rlock_lock_free(lp);
  rlock_lock_free(lf);
  rlock_lock_free(lw);
  rlock_lock_free(lfresh);
  dk_free(c);
  if (failed[0] != '\0')
    regression("BUG-2 release during migration", failed);
}

/* ---- 5. watchdog over hundreds of slots ---------------------------------- */

#define MANY 300

static _Atomic int lost_count;
static void count_lost(const char *name, const char *owner, void *ud) {
  (void)owner, (void)ud;
  fprintf(stderr, "lost: %s\n", name);
  atomic_fetch_add(&lost_count, 1);
}

static void test_watchdog_many_slots(void **state) {
  (void)state;
  /* 280 names scattered by their hash, plus 5 hash tags of 4 names each
   * (batches of several keys in one slot). */
  static char names[MANY][48];
  int owners[MANY], per_master[8] = {0};
  for (int i = 0; i < MANY; i++) {
    if (i < 280)
      snprintf(names[i], sizeof names[i], "wd:many:%d", i);
    else
      snprintf(names[i], sizeof names[i], "{wd-tag-%d}:%d", (i - 280) / 4, i);
    owners[i] = owner_of(names[i]);
    assert_true(owners[i] >= 0 && owners[i] < 8);
    per_master[owners[i]]++;
  }
  for (int m = 0; m < rt_cluster_masters(cl); m++)
    assert_true(per_master[m] >= 50);
  int64_t wd = rt_scaled_ms(600);
  char url[1024];
  atomic_store(&lost_count, 0);
  rlock_client *c =
      fx_client_opts(cluster_url(url, sizeof url, NULL), wd, count_lost, NULL);
  rlock_lock **ls = calloc(MANY, sizeof *ls);
  for (int i = 0; i < MANY; i++) {
    ls[i] = fx_lock(c, names[i]);
    OK(rlock_lock_acquire(ls[i]));
  }
  /* Several periods (a period is wd/3): every lock stays above a floor on
   * its own node. A lease would run out after one wd. */
  long long low = LLONG_MAX;
  int rounds = 0;
  int64_t end = rt_now_ms() + 2 * wd;
  while (rt_now_ms() < end || rounds < 3) {
    for (int i = 0; i < MANY; i++) {
      long long v = int_on(owners[i], "PTTL %s", names[i]);
      if (v <= wd / 10)
        fail_msg("%s on node %d: PTTL %lld, not renewed (lease %lld)", names[i],
                 owners[i], v, (long long)wd);
      low = v < low ? v : low;
    }
    rounds++;
  }
  printf("[   INFO   ] %d locks on %d masters renewed for %lld ms: lowest "
         "PTTL %lld of %lld ms over %d sweeps\n",
         MANY, rt_cluster_masters(cl), (long long)(2 * wd), low, (long long)wd,
         rounds);
  assert_int_equal(atomic_load(&lost_count), 0);
  for (int i = 0; i < MANY; i++) {
    OK(rlock_lock_check(ls[i]));
    OK(rlock_lock_release(ls[i]));
    rlock_lock_free(ls[i]);
  }
  free(ls);
  rlock_client_free(c);
  for (int i = 0; i < MANY; i += 37)
    assert_int_equal(exists_on(owners[i], names[i]), 0);
}

/* A cluster client whose watchdog ticks once more after its last hold
 * went (the tick that disarms it). Regression test for a bug this suite
 * found ("BUG-4", fixed in f7f695f): with no holds left the snapshot
 * lists were NULL and renew_all() still called qsort(NULL, 0, ...),
 * undefined, which UBSan (the ASan configuration, no recovery) turned
 * into an abort of the whole test binary. */
static void test_watchdog_idle_tick(void **state) {
  (void)state;
  /* Renewals every 67 ms, released; a shorter lease is lost outright
   * with eight tests running at once. */
  int64_t wd = rt_scaled_ms(200);
  rlock_client *c = cluster_client(NULL, wd);
  char name[64];
  rt_cluster_key_on(cl, 0, "idle:", name, sizeof name);
  rlock_lock *l = fx_lock(c, name);
  OK(rlock_lock_acquire(l));
  watch_renewals(0, name, 0, 4 * wd, 0);
  OK(rlock_lock_release(l));
  /* A tick is due within a period: let several pass. Nothing to observe
   * but the process surviving them. */
  rt_sleep_ms(4 * wd);
  OK(rlock_lock_acquire(l)); /* and the watchdog re-arms */
  watch_renewals(0, name, 0, 4 * wd, 0);
  OK(rlock_lock_release(l));
  rlock_lock_free(l);
  rlock_client_free(c);
}

/* The cluster's failure detection, on every running node: a node stopped
 * for longer than this is failed over by its replica. */
static void set_node_timeout(int64_t ms) {
  for (int i = 0; i < rt_cluster_size(cl); i++)
    if (rt_server_pid(node(i)) != 0)
      freeReplyObject(rt_cmd(node(i), "CONFIG SET cluster-node-timeout %lld",
                             (long long)ms));
}

/* The teardown of a case that stops a node with failovers held off:
 * whatever the case did, the node runs again and the cluster times its
 * nodes out as before, so a failed case leaves no frozen shard behind. */
static int thaw_cluster(void **state) {
  (void)state;
  rt_proc_continue_all();
  set_node_timeout(RT_CLUSTER_NODE_TIMEOUT_MS);
  rt_cluster_wait_ok(cl, rt_scaled_ms(30000));
  return 0;
}

typedef struct lost_wait {
  rlock_lock *l;
} lost_wait;

static bool pred_lost(void *arg, char *why, size_t cap) {
  lost_wait *w = arg;
  int rc = rlock_lock_check(w->l);
  snprintf(why, cap, "rlock_lock_check: %d", rc);
  return rc == RLOCK_ELOST;
}

/* A master that stops answering (SIGSTOP) delays the renewal of its own
 * holds only: the background thread sends every node's batches before
 * reading any reply, and waits for each node until its own deadline. The
 * command timeout (600 ms) is longer than the renewal period (400 ms), so
 * a tick that waited for the stopped node before renewing the others
 * (as ticks did when the stopped node's slots came first: its batch timed
 * out, the rest of the tick was given up, and so again at every retry)
 * would let their leases (1200 ms) run out. Here their PTTLs keep going
 * back up while the stopped node's hold is found lost; the node is thawed
 * and the cluster left as it was. */
static void test_watchdog_stopped_master(void **state) {
  (void)state;
  for (int m = 0; m < 3; m++)
    assert_true(is_live_master(m));
  int64_t wd = 1200;
  rlock_config *cfg;
  rlock_client *c;
  char url[1024];
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, cluster_url(url, sizeof url, NULL)));
  OK(rlock_config_set_connect_timeout_ms(cfg, 1000));
  OK(rlock_config_set_command_timeout_ms(cfg, 600));
  OK(rlock_config_set_watchdog_timeout_ms(cfg, wd));
  OK(rlock_client_new(&c, cfg));
  rlock_config_free(cfg);
  char names[3][64];
  rlock_lock *ls[3];
  for (int m = 0; m < 3; m++) {
    rt_cluster_key_on(cl, m, "wd:stopped:", names[m], sizeof names[m]);
    ls[m] = fx_lock(c, names[m]);
    OK(rlock_lock_acquire(ls[m]));
  }
  watch_renewals(1, names[1], 0, wd, 0); /* renewals run */
  /* Node 0 serves the lowest slots: its batch is the tick's first. */
  set_node_timeout(60000); /* no failover while it is stopped */
  rt_server_freeze(node(0));
  for (int m = 1; m < 3; m++) {
    long long low = watch_renewals(m, names[m], 0, 2 * wd, 0);
    printf("[   INFO   ] node 0 stopped: '%s' on node %d renewed, lowest "
           "PTTL %lld of %lld ms\n",
           names[m], m, low, (long long)wd);
    OK(rlock_lock_check(ls[m]));
  }
  lost_wait w = {ls[0]};
  rt_wait_until(pred_lost, &w, rt_scaled_ms(5000),
                "the stopped node's hold reported lost");
  rt_server_thaw(node(0));
  set_node_timeout(RT_CLUSTER_NODE_TIMEOUT_MS);
  rt_cluster_wait_ok(cl, rt_scaled_ms(30000));
  assert_int_equal(exists_on(0, names[0]), 0); /* never renewed: expired */
  RC(rlock_lock_release(ls[0]), RLOCK_ELOST);
  for (int m = 1; m < 3; m++) {
    OK(rlock_lock_release(ls[m]));
    assert_int_equal(exists_on(m, names[m]), 0);
  }
  for (int m = 0; m < 3; m++)
    rlock_lock_free(ls[m]);
  rlock_client_free(c);
}

/* ---- 5a. a stopped master's subscriber delays nobody else ---------------- */

typedef struct dropped {
  rlock_client *c;
  uint64_t before;
} dropped;

static bool pred_dropped(void *arg, char *why, size_t cap) {
  dropped *d = arg;
  rlock_stats st;
  OK(rlock_client_stats(d->c, &st, sizeof st));
  snprintf(why, cap, "%llu connections dropped, %llu before",
           (unsigned long long)st.disconnects, (unsigned long long)d->before);
  return st.disconnects > d->before;
}

/* The cluster's URL with a login ("AUTH default any": the default user
 * has no password, so any is accepted): a connection's first exchange is
 * then a command, which a stopped server never answers. */
static const char *login_url(char *buf, size_t size) {
  const char *u = rt_cluster_url(cl);
  const char *p = strstr(u, "://");
  assert_non_null(p);
  snprintf(buf, size, "%.*sdefault:any@%s", (int)(p + 3 - u), u, p + 3);
  return buf;
}

/* Whether a connection to node n's port that `known` (a CLIENT LIST of
 * the node, taken before it stopped) does not list has bytes queued at
 * the server: a new connection's first command reached the stopped node,
 * which will not answer it. */
typedef struct new_queued {
  int port;
  const char *known;
} new_queued;

static bool pred_new_queued(void *arg, char *why, size_t cap) {
  const new_queued *q = arg;
  FILE *f = fopen("/proc/net/tcp", "r");
  if (f == NULL)
    fail_msg("cannot read /proc/net/tcp");
  char line[512], addr[64];
  bool found = false;
  fgets(line, sizeof line, f); /* the header */
  while (!found && fgets(line, sizeof line, f) != NULL) {
    unsigned lport, rport, tx, rx;
    if (sscanf(line, " %*d: %*x:%x %*x:%x %*x %x:%x", &lport, &rport, &tx,
               &rx) != 4 ||
        (int)lport != q->port || rx == 0)
      continue;
    snprintf(addr, sizeof addr, "addr=127.0.0.1:%u ", rport);
    found = strstr(q->known, addr) == NULL;
  }
  fclose(f);
  snprintf(why, cap, "no new connection to port %d has a command queued",
           q->port);
  return found;
}

static bool pred_either(void *arg, char *why, size_t cap) {
  dk_op **ops = arg;
  snprintf(why, cap, "neither waiter has the lock");
  return dk_op_done(ops[0]) || dk_op_done(ops[1]);
}

/* Release `l` (held by `owner`) and return how long, in ms, until `w`
 * (waiting for it) had it. */
static double handoff_ms(rlock_lock *l, uint64_t owner, dk_op *w,
                         dk_op *other) {
  int64_t t0 = rt_now_us();
  OK(dk_release(l, owner));
  dk_op *ops[2] = {w, other != NULL ? other : w};
  dk_wait(pred_either, ops, 5000, "a waiter to take the released lock");
  dk_op *got = dk_op_done(w) ? w : other;
  if (got->r.rc != RLOCK_OK)
    fail_msg("waiter: %d %s", got->r.rc, got->r.msg);
  return (double)(got->done_us - t0) / 1000.0;
}

static bool pred_subs_or_ended(void *arg, char *why, size_t cap) {
  waiter_subs *ws = arg;
  return pred_subs(&ws->w, why, cap) || dk_op_done(ws->op);
}

/* The waiter `wa` on `la` (channel `ch`, node 0) subscribed again after
 * node 0 was thawed. While the node was stopped, the attempt the waiter
 * makes once its subscriber is back may have run out of the command
 * timeout: that waiter ended (a timeout, or the connection cut) and
 * never subscribes; it is started again, a new owner. */

static void waiter_back(dk_op *wa, rlock_lock *la, const char *ch) {
  for (int tries = 1;; tries++) {
    waiter_subs ws = {{ch, 1, 0, 1, -1}, wa};
    char why[512];
    dk_wait(pred_subs_or_ended, &ws, 10000, "waiter's subscription");
    if (pred_subs(&ws.w, why, sizeof why))
      return;
    if (tries == 3)
      fail_msg("waiter's subscription: %s", why);
    if (wa->r.rc != RLOCK_ETIMEOUT && wa->r.rc != RLOCK_EIO)
      fail_msg("waiter on node 0: %d %s", wa->r.rc, wa->r.msg);
    dk_op_wait(wa, 1000, "the waiter on node 0"); /* joined */
    dk_acquire_start(wa, la, rlock_owner_new(), rt_scaled_ms(60000), 30000);
  }
}

/* Kill this client's subscriber connection to node 0 (the waiter `wa` on
 * `la`, channel `ch`, there) and stop the node while the reconnection's
 * login waits for its answer. The reconnection can win the race and log
 * in between the kill and the stop: then the node is thawed, the channel
 * subscribed again (waiter_back), and the whole is tried again. */
static void stop_during_login(rlock_client *c, const char *ch, dk_op *wa,
                              rlock_lock *la) {
  char why[256];
  for (int tries = 1;; tries++) {
    rlock_stats st;
    OK(rlock_client_stats(c, &st, sizeof st));
    dropped d = {c, st.disconnects};
    redisReply *known = rt_cmd(node(0), "CLIENT LIST");
    freeReplyObject(rt_cmd(node(0), "CLIENT KILL TYPE pubsub"));
    rt_server_freeze(node(0));
    dk_wait(pred_dropped, &d, 5000, "the subscriber to node 0 dropped");
    new_queued q = {rt_server_port(node(0)), known->str ? known->str : ""};
    bool queued =
        rt_poll_until(pred_new_queued, &q, rt_scaled_ms(2000), why, sizeof why);
    freeReplyObject(known);
    if (queued && tries > 1)
      printf("[   INFO   ] the subscriber's login caught at try %d\n", tries);
    if (queued)
      return;
    if (tries == 5)
      fail_msg("the subscriber's login sent to node 0: %s", why);
    rt_server_thaw(node(0));
    waiter_back(wa, la, ch);
  }
}

/* Another master that stops answering (SIGSTOP) while this client's
 * subscriber to it reconnects (its pub/sub connection killed just before
 * the stop, a waiter still waiting there) delays nobody elsewhere: two
 * waiters on one lock of a healthy master (one channel, so neither
 * watches the socket alone) each take it well within the command timeout
 * of its release, and watchdog holds on the two healthy masters keep being
 * renewed (a lease of 3000 ms against a command timeout of 4000 ms: one
 * wait on the stopped node's login would let them run out). No shorter:
 * on a loaded machine (a load of 12 on 2 cores) the loop thread waits for
 * a CPU over half the time, and a tick late by 500 ms with its answer
 * 600 ms on the way outlasts a lease of 1200 ms with no node stopped. The
 * node is thawed and the cluster left as it was. */
static void test_stopped_master_subscriber(void **state) {
  (void)state;
  for (int m = 0; m < 3; m++)
    assert_true(is_live_master(m));
  int64_t wd = 3000;
  char url[1024], na[64], nb[64], nr[2][64], cha[128], chb[128];
  char pre[4][64]; /* each driver's names: a failed run leaves no hold */
  const char *part[4] = {"a", "b", "r1", "r2"};
  for (int i = 0; i < 4; i++)
    snprintf(pre[i], sizeof pre[i], "sm:%s:%s:", dk_name(), part[i]);
  rt_cluster_key_on(cl, 0, pre[0], na, sizeof na);
  rt_cluster_key_on(cl, 1, pre[1], nb, sizeof nb);
  rt_cluster_key_on(cl, 1, pre[2], nr[0], sizeof nr[0]);
  rt_cluster_key_on(cl, 2, pre[3], nr[1], sizeof nr[1]);
  snprintf(cha, sizeof cha, "redisson_lock__channel:{%s}", na);
  snprintf(chb, sizeof chb, "redisson_lock__channel:{%s}", nb);
  set_node_timeout(60000); /* no failover while it is stopped */
  dk_bg_begin();
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, login_url(url, sizeof url)));
  OK(rlock_config_set_connect_timeout_ms(cfg, 1000));
  OK(rlock_config_set_command_timeout_ms(cfg, 4000));
  OK(rlock_config_set_watchdog_timeout_ms(cfg, wd));
  if (getenv("RLOCK_TEST_LOG") != NULL) /* as dk_client's */
    OK(rlock_config_set_log(cfg, lt_log, RLOCK_LOG_DEBUG, (void *)(intptr_t)1));
  rlock_client *c = dk_client_cfg(cfg);
  rlock_config_free(cfg);
  static rlock_lock *la, *lb, *lr[2]; /* static, as the ops below */
  la = fx_lock(c, na);
  lb = fx_lock(c, nb);
  uint64_t ha = rlock_owner_new(), hb = rlock_owner_new();
  uint64_t hr = rlock_owner_new(), o1 = rlock_owner_new(),
           o2 = rlock_owner_new();
  OK(dk_acquire(la, ha, 0, 60000));
  OK(dk_acquire(lb, hb, 0, 60000));
  for (int i = 0; i < 2; i++) {
    lr[i] = fx_lock(c, nr[i]);
    OK(dk_acquire(lr[i], hr, 0, RLOCK_LEASE_WATCHDOG));
  }
  static dk_op wa, w1, w2;
  dk_acquire_start(&wa, la, rlock_owner_new(), rt_scaled_ms(60000), 30000);
  wait_waiter_subs(&wa, cha, 0, 10000);
  long long scripts0 = calls_on(1, "evalsha") + calls_on(1, "eval");
  dk_acquire_start(&w1, lb, o1, rt_scaled_ms(60000), 30000);
  dk_acquire_start(&w2, lb, o2, rt_scaled_ms(60000), 30000);
  wait_waiter_subs(&w1, chb, 1, 10000);
  int64_t t0 = rt_now_ms();
  while (calls_on(1, "evalsha") + calls_on(1, "eval") < scripts0 + 2) {
    if (rt_now_ms() - t0 > rt_scaled_ms(10000))
      fail_msg("the two waiters did not both attempt");
    rt_sleep_ms(5);
  }
  stop_during_login(c, cha, &wa, la);
  dk_bg_measure_from_now();
  double first = handoff_ms(lb, hb, &w1, &w2);
  dk_op *got = dk_op_done(&w1) ? &w1 : &w2, *next = got == &w1 ? &w2 : &w1;
  double second = handoff_ms(lb, got == &w1 ? o1 : o2, next, NULL);
  printf("[   INFO   ] node 0 stopped, its subscriber reconnecting: "
         "handoffs on node 1 in %.1f and %.1f ms\n",
         first, second);
  /* A fraction of the command timeout: a handoff held up by the stopped
   * node's login would take all of it. */
  ASSERT_BETWEEN(first, 0, rt_scaled_ms(750));
  ASSERT_BETWEEN(second, 0, rt_scaled_ms(750));
  OK(dk_op_wait(&w1, 1000, "the first waiter on node 1")); /* joined */
  OK(dk_op_wait(&w2, 1000, "the second waiter on node 1"));
  OK(dk_release(lb, got == &w1 ? o2 : o1));
  for (int i = 0; i < 2; i++)
    watch_renewals(i + 1, nr[i], 0, wd + wd / 2, 0);
  rt_server_thaw(node(0));
  OK(dk_release(la, ha));
  /* The waiter there may have given up on the stopped node (a timeout),
   * or takes the lock now. */
  if (dk_op_wait(&wa, 20000, "the waiter on node 0") == RLOCK_OK)
    OK(dk_release(la, wa.o.owner));
  else if (wa.r.rc != RLOCK_ETIMEOUT && wa.r.rc != RLOCK_EIO)
    fail_msg("waiter on node 0: %d %s", wa.r.rc, wa.r.msg);
  for (int i = 0; i < 2; i++) {
    OK(dk_release(lr[i], hr));
    rlock_lock_free(lr[i]);
  }
  rlock_lock_free(la);
  rlock_lock_free(lb);
  dk_free(c);
  dk_bg_end("a stopped master's subscriber reconnecting");
  set_node_timeout(RT_CLUSTER_NODE_TIMEOUT_MS);
  rt_cluster_wait_ok(cl, rt_scaled_ms(30000));
}

/* ---- 5b. the unlock latch: replayed, then deleted ------------------------ */

/* Every release of a cluster client writes a latch (the first answer,
 * for a re-send) and, its answer read, deletes it without waiting: after
 * a partial and a full release no latch key is left on the node, and the
 * node ran one DEL for each (so each latch was written, then deleted, not
 * just never there). A release of nothing held stores no latch. */
static void test_latch_deleted(void **state) {
  (void)state;
  int ms[16];
  assert_true(live_masters(ms) >= 1);
  rlock_client *c = cluster_client(NULL, 0);
  char name[64];
  rt_cluster_key_on(cl, ms[0], "latch:plain:", name, sizeof name);
  int n = owner_of(name);
  rlock_lock *l = fx_lock(c, name);
  uint64_t me = dk_me();
  OK(dk_acquire(l, me, 0, 30000));
  OK(dk_acquire(l, me, 0, 30000));
  latch_gone g = {n, name, calls_on(n, "del") + 2};
  OK(dk_release(l, me)); /* one level left: answer 0 */
  OK(dk_release(l, me)); /* deleted: answer 1 */
  assert_int_equal(exists_on(n, name), 0);
  dk_wait(pred_latch_gone, &g, 5000, "both latches deleted");
  RC(dk_release(l, me), RLOCK_ENOTHELD);
  assert_int_equal(latch_keys(n, name), 0);
  rlock_lock_free(l);
  dk_free(c);
}

/* A release whose reply is lost is sent again with its latch, and the
 * server answers the repeat from the latch instead of releasing again:
 * the master is stopped (SIGSTOP) with a lock held twice; the release
 * goes into its socket and times out (the connection dropped, its bytes
 * still there); the master is let go; the client's repeat is answered.
 * The master ran the release script more than once, yet one level went,
 * not two, and the client was told RLOCK_OK, not RLOCK_ELOST. Then no
 * latch key is left. */
static void test_latch_replays_lost_reply(void **state) {
  (void)state;
  int m = is_live_master(1) ? 1 : 0;
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  char url[1024];
  OK(rlock_config_set_url(cfg, cluster_url(url, sizeof url, NULL)));
  /* A try times out after the command plus the replica sync timeout;
   * repeats go on for the connect plus the command timeout. */
  OK(rlock_config_set_connect_timeout_ms(cfg, rt_scaled_ms(2000)));
  OK(rlock_config_set_command_timeout_ms(cfg, 300));
  OK(rlock_config_set_replica_sync_timeout_ms(cfg, 200));
  /* No registry record: its connection to the stopped master would drop
   * too, and the test waits for the release's own drop by the count. */
  OK(rlock_config_set_registry_period(cfg, 0));
  rlock_client *c = dk_client_cfg(cfg);
  rlock_config_free(cfg);
  char name[64], field[RLOCK_OWNER_MAX];
  rt_cluster_key_on(cl, m, "latch:lost:", name, sizeof name);
  rlock_lock *l = fx_lock(c, name);
  uint64_t me = rlock_owner_new();
  field_of(c, me, field);
  /* No watchdog: no renewal script in the counts. */
  OK(dk_acquire(l, me, 0, 60000));
  OK(dk_acquire(l, me, 0, 60000));
  assert_int_equal(fx_hget(node(m), name, field), 2);
  long long scripts0 = calls_on(m, "evalsha") + calls_on(m, "eval");
  rlock_stats st;
  OK(rlock_client_stats(c, &st, sizeof st));
  dropped d = {c, st.disconnects};
  rt_server_freeze(node(m));
  dk_op r;
  dk_release_start(&r, l, me);
  /* The first try timed out: its connection was dropped, its bytes wait
   * in the stopped master's socket. */
  dk_wait(pred_dropped, &d, 5000, "the release's first try to time out");
  rt_server_thaw(node(m));
  if (dk_op_wait(&r, 10000, "the release") != RLOCK_OK)
    fail_msg("release: %d %s", r.r.rc, r.r.msg);
  long long runs = calls_on(m, "evalsha") + calls_on(m, "eval") - scripts0;
  printf("[   INFO   ] the master ran the release script %lld times\n", runs);
  assert_true(runs >= 2); /* the lost try, and the repeat */
  assert_int_equal(fx_hget(node(m), name, field), 1); /* one level, once */
  int64_t count = 0;
  OK(dk_hold_count(&count, l, me));
  assert_int_equal(count, 1);
  latch_gone g = {m, name, 0};
  dk_wait(pred_latch_gone, &g, 5000, "the replayed release's latch deleted");
  OK(dk_release(l, me));
  assert_int_equal(exists_on(m, name), 0);
  dk_wait(pred_latch_gone, &g, 5000, "the last release's latch deleted");
  rlock_lock_free(l);
  dk_free(c);
}

/* ---- 6. a seed list whose first node is dead ----------------------------- */

static void test_dead_first_seed(void **state) {
  (void)state;
  int dead = rt_free_port();
  char url[256];
  snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d,127.0.0.1:%d", dead,
           rt_cluster_port(cl, 1));
  rlock_client *c = fx_client_opts(url, 0, NULL, NULL);
  OK(rlock_client_ping(c, NULL));
  char name[64];
  rt_cluster_key_on(cl, 2, "seed:", name, sizeof name);
  rlock_lock *l = fx_lock(c, name);
  OK(rlock_lock_acquire(l));
  assert_int_equal(exists_on(2, name), 1);
  OK(rlock_lock_release(l));
  rlock_lock_free(l);
  rlock_client_free(c);
  /* Every seed dead: a transport error, promptly, naming the problem. */
  snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d", dead);
  c = fx_client_opts(url, 0, NULL, NULL);
  int64_t t0 = rt_now_ms();
  RC(rlock_client_ping(c, NULL), RLOCK_EIO);
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 4000);
  rlock_client_free(c);
}

/* ---- 7. the wrong URL for the server ------------------------------------- */

static void test_wrong_url_kind(void **state) {
  (void)state;
  char url[256];
  snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d",
           rt_server_port(srv));
  rlock_client *c = fx_client_opts(url, 0, NULL, NULL);
  RC(rlock_client_ping(c, NULL), RLOCK_ESERVER);
  const char *msg = rlock_error_last()->message;
  if (strstr(msg, "cluster support is disabled") == NULL)
    fail_msg("unclear message: %s", msg);
  rlock_lock *l = fx_lock(c, "wrongurl:plain");
  RC(rlock_lock_try_acquire(l, 0, 0), RLOCK_ESERVER);
  msg = rlock_error_last()->message;
  if (strstr(msg, "cluster support is disabled") == NULL)
    fail_msg("unclear message: %s", msg);
  rlock_lock_free(l);
  rlock_client_free(c);

  /* redis:// at a cluster node: a key owned elsewhere is refused (MOVED)
   * with a hint, a key it owns works. */
  c = fx_client_opts(rt_server_url(node(0)), 0, NULL, NULL);
  OK(rlock_client_ping(c, NULL));
  char elsewhere[64], here[64];
  rt_cluster_key_on(cl, 1, "wrongurl:", elsewhere, sizeof elsewhere);
  rt_cluster_key_on(cl, 0, "wrongurl:", here, sizeof here);
  l = fx_lock(c, here);
  OK(rlock_lock_acquire(l));
  assert_int_equal(exists_on(0, here), 1);
  OK(rlock_lock_release(l));
  rlock_lock_free(l);
  l = fx_lock(c, elsewhere);
  RC(rlock_lock_try_acquire(l, 0, 0), RLOCK_ESERVER);
  char moved_msg[512];
  snprintf(moved_msg, sizeof moved_msg, "%s", rlock_error_last()->message);
  printf("[   INFO   ] redis:// at a cluster node: %s\n", moved_msg);
  rlock_lock_free(l);
  rlock_client_free(c);
  if (strstr(moved_msg, "redis-cluster://") == NULL)
    fail_msg("no hint to use redis-cluster://: %s", moved_msg);
  /* Regression test for BUG-1 "hint overwrites the message it quotes"
   * (fixed: rlock__err formats aside first). It was (src/lib/
   * cmd.c, next_node()): rlock__err(q->rc, "%s (a cluster node: use a
   * redis-cluster:// URL)", rlock_error_last()->message) formats the
   * thread's error buffer into itself (vsnprintf with overlapping source
   * and destination: undefined; glibc leaves the quoted part empty), so
   * the server and the MOVED reply are lost. The "redirected more than %d
   * times; last: %s" message two lines above has the same fault. */
  if (strstr(moved_msg, "MOVED") == NULL)
    regression("BUG-1 hint overwrites the message it quotes", moved_msg);
}

/* ---- 8. MultiLock and RedLock with a cluster client -----------------------
 */

static void test_multilock(void **state) {
  (void)state;
  rlock_client *cc = cluster_client(NULL, 0), *sc = fx_client(srv, 0);
  rlock_client *other = cluster_client(NULL, 0);
  char names[3][64];
  rlock_lock *m[5];
  for (int i = 0; i < 3; i++) {
    rt_cluster_key_on(cl, i, "multi:", names[i], sizeof names[i]);
    m[i] = fx_lock(cc, names[i]);
  }
  OK(rlock_lock_new_fair(&m[3], cc, "multi:fair"));
  m[4] = fx_lock(sc, "multi:single");
  rlock_multilock *ml;
  OK(rlock_multilock_new(&ml, m, 5));
  OK(rlock_multilock_acquire(ml));
  for (int i = 0; i < 3; i++)
    assert_int_equal(exists_on(i, names[i]), 1);
  assert_int_equal(exists_on(owner_of("multi:fair"), "multi:fair"), 1);
  assert_int_equal(rt_cmd_int(srv, "EXISTS multi:single"), 1);
  int held;
  OK(rlock_multilock_is_held(&held, ml));
  assert_int_equal(held, 1);
  /* Another client wanting a free name and a held one gets neither. */
  char free_name[64];
  rt_cluster_key_on(cl, 2, "multi:free:", free_name, sizeof free_name);
  rlock_lock *o[2] = {fx_lock(other, free_name), fx_lock(other, names[1])};
  rlock_multilock *ml2;
  OK(rlock_multilock_new(&ml2, o, 2));
  RC(rlock_multilock_try_acquire(ml2, 200, 0), RLOCK_ELOCKED);
  assert_int_equal(exists_on(2, free_name), 0);
  OK(rlock_multilock_release(ml));
  for (int i = 0; i < 3; i++)
    assert_int_equal(exists_on(i, names[i]), 0);
  assert_int_equal(rt_cmd_int(srv, "EXISTS multi:single"), 0);
  OK(rlock_multilock_try_acquire(ml2, 1000, 0));
  OK(rlock_multilock_release(ml2));
  rlock_multilock_free(ml2);
  rlock_lock_free(o[0]);
  rlock_lock_free(o[1]);
  rlock_multilock_free(ml);
  for (int i = 0; i < 5; i++)
    rlock_lock_free(m[i]);
  rlock_client_free(cc);
  rlock_client_free(sc);
  rlock_client_free(other);
}

/* Member i held elsewhere: refused, or not waited for (the fan-out stops
 * early once the quorum is out of reach). */
static void check_refused(const rlock_redlock_result *res, size_t i) {
  int st = rlock_redlock_result_status(res, i);
  if (st != RLOCK_ELOCKED &&
      !(st == RLOCK_ETIMEOUT &&
        strstr(rlock_redlock_result_message(res, i), "not waited") != NULL))
    fail_msg("RedLock member %zu: %d %s, expected ELOCKED", i, st,
             rlock_redlock_result_message(res, i));
}

static void test_redlock(void **state) {
  (void)state;
  rt_server *srv2 = rt_server_start(NULL);
  rlock_client *cc = cluster_client(NULL, 0), *s1 = fx_client(srv, 0),
               *s2 = fx_client(srv2, 0);
  char name[64];
  rt_cluster_key_on(cl, 2, "red:", name, sizeof name);
  int slot = rt_cluster_slot_of(name);
  rlock_lock *m[3] = {fx_lock(cc, name), fx_lock(s1, name), fx_lock(s2, name)};
  rlock_redlock *rl;
  OK(rlock_redlock_new(&rl, m, 3));
  /* srv2's copy is held by a foreign owner: the quorum (2 of 3) needs
   * the cluster member, so the fan-out must wait for it. */
  freeReplyObject(
      rt_cmd(srv2, "HSET %s 00000000-0000-4000-8000-000000000000:1 1", name));
  freeReplyObject(rt_cmd(srv2, "PEXPIRE %s 60000", name));
  rlock_redlock_result *res;
  OK(rlock_redlock_try_acquire(&res, rl, 0, 10000));
  ASSERT_RANGE(rlock_redlock_result_validity_ms(res), 1, 10000);
  OK(rlock_redlock_result_status(res, 0));
  OK(rlock_redlock_result_status(res, 1));
  check_refused(res, 2);
  rlock_redlock_result_free(res);
  assert_int_equal(exists_on(2, name), 1);
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 1);
  OK(rlock_redlock_release(rl));
  assert_int_equal(exists_on(2, name), 0);
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
  assert_int_equal(rt_cmd_int(srv2, "EXISTS %s", name), 1); /* not ours */

  /* The cluster member's slot moves after the client learned the map: its
   * attempt gets MOVED inside the fan-out and is followed. */
  rt_cluster_migrate_slot(cl, slot, 2, 0);
  OK(rlock_redlock_try_acquire(&res, rl, 0, 0)); /* watchdog leases */
  OK(rlock_redlock_result_status(res, 0));
  OK(rlock_redlock_result_status(res, 1));
  check_refused(res, 2);
  rlock_redlock_result_free(res);
  assert_int_equal(exists_on(0, name), 1);
  OK(rlock_redlock_release(rl));
  assert_int_equal(exists_on(0, name), 0);
  /* Back where it was, for the tests after this one. */
  rt_cluster_migrate_slot(cl, slot, 0, 2);
  rlock_redlock_free(rl);
  for (int i = 0; i < 3; i++)
    rlock_lock_free(m[i]);
  rlock_client_free(cc);
  rlock_client_free(s1);
  rlock_client_free(s2);
  rt_server_free(srv2);
}

/* ---- 9. Redisson's own scripts, publishing with SPUBLISH ----------------- */

/* RedissonLock.tryLockInnerAsync: KEYS[1] name; ARGV lease, owner. */
static const char *REDISSON_LOCK =
    "if ((redis.call('exists', KEYS[1]) == 0) "
    "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then "
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; "
    "end; "
    "return redis.call('pttl', KEYS[1]);";

/* RedissonLock.unlockInnerAsync (3.22+): KEYS name, channel; ARGV message,
 * lease, owner, publish command (SPUBLISH in sharded cluster mode). */
static const char *REDISSON_UNLOCK =
    "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then "
    "return nil;"
    "end; "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
    "if (counter > 0) then "
    "redis.call('pexpire', KEYS[1], ARGV[2]); "
    "return 0; "
    "else "
    "redis.call('del', KEYS[1]); "
    "redis.call(ARGV[4], KEYS[2], ARGV[1]); "
    "return 1; "
    "end; "
    "return nil;";

#define JAVA_OWNER "6f1e2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b:57"

static void test_interop_spublish(void **state) {
  (void)state;
  int ms[16];
  assert_true(live_masters(ms) >= 2);
  char name[64], ch[128];
  int m = ms[1];
  rt_cluster_key_on(cl, m, "interop:", name, sizeof name);
  snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", name);
  /* A Redisson holder blocks rlock. */
  redisReply *r =
      rt_cmd(node(m), "EVAL %s 1 %s 30000 %s", REDISSON_LOCK, name, JAVA_OWNER);
  assert_int_equal(r->type, REDIS_REPLY_NIL);
  freeReplyObject(r);
  rlock_client *c = cluster_client(NULL, 0);
  rlock_lock *l = fx_lock(c, name);
  uint64_t me = dk_me(), other = rlock_owner_new();
  RC(dk_acquire(l, me, 0, 0), RLOCK_ELOCKED);
  /* Its unlock's SPUBLISH wakes an rlock waiter at once. */
  dk_op w;
  dk_acquire_start(&w, l, other, 20000, 30000);
  wait_subs(ch, 1, m, 1, 10000);
  int64_t t0 = rt_now_us();
  r = rt_cmd(node(m), "EVAL %s 2 %s %s 0 30000 %s SPUBLISH", REDISSON_UNLOCK,
             name, ch, JAVA_OWNER);
  assert_int_equal(r->integer, 1);
  freeReplyObject(r);
  OK(dk_op_wait(&w, 20000, "the waiter"));
  double ms_woke = (double)(w.done_us - t0) / 1000.0;
  OK(dk_release(l, other));
  dk_report("rlock waiter woken by Redisson's unlock (SPUBLISH)", ms_woke);
  ASSERT_BETWEEN((int64_t)ms_woke, 0, 250);

  /* The other way: an rlock release reaches a Redisson waiter's
   * SSUBSCRIBE on the owning node, and its lock script then succeeds. */
  OK(dk_acquire(l, me, 0, RLOCK_LEASE_WATCHDOG));
  r = rt_cmd(node(m), "EVAL %s 1 %s 30000 %s", REDISSON_LOCK, name, JAVA_OWNER);
  assert_int_equal(r->type, REDIS_REPLY_INTEGER);
  freeReplyObject(r);
  redisContext *sub = rt_server_connect(node(m));
  r = redisCommand(sub, "SSUBSCRIBE %s", ch);
  assert_non_null(r);
  freeReplyObject(r);
  OK(dk_release(l, me));
  struct timeval tv = {.tv_sec = rt_scaled_ms(5000) / 1000};
  redisSetTimeout(sub, tv);
  assert_int_equal(redisGetReply(sub, (void **)&r), REDIS_OK);
  assert_string_equal(r->element[0]->str, "smessage");
  assert_string_equal(r->element[1]->str, ch);
  assert_string_equal(r->element[2]->str, "0");
  freeReplyObject(r);
  redisFree(sub);
  r = rt_cmd(node(m), "EVAL %s 1 %s 30000 %s", REDISSON_LOCK, name, JAVA_OWNER);
  assert_int_equal(r->type, REDIS_REPLY_NIL);
  freeReplyObject(r);
  r = rt_cmd(node(m), "EVAL %s 2 %s %s 0 30000 %s SPUBLISH", REDISSON_UNLOCK,
             name, ch, JAVA_OWNER);
  assert_int_equal(r->integer, 1);
  freeReplyObject(r);
  rlock_lock_free(l);
  dk_free(c);
}

/* ---- 4. failovers during contention ---------------------------------------
 */

/* Graceful failover (CLUSTER FAILOVER) of the master holding a lock that
 * another client waits for in sharded mode: the hold is renewed on the
 * promoted replica, the waiter's subscription stays in the slot's shard,
 * and the release (its client freed right after) wakes the waiter. The
 * test's thread drives the failover meanwhile (a loop runs on a thread of
 * its own, never blocked). */
static void test_graceful_failover(void **state) {
  (void)state;
  int ms[16], n = live_masters(ms), g = -1;
  for (int i = 0; i < n && g < 0; i++) /* the second master, or another */
    if (rt_cluster_replica_of(cl, ms[(i + 1) % n]) >= 0)
      g = ms[(i + 1) % n];
  assert_true(g >= 0);
  char name[64], ch[128];
  rt_cluster_key_on(cl, g, "fo:graceful:", name, sizeof name);
  snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", name);
  int64_t wd = 3000;
  dk_bg_begin();
  rlock_client *h = cluster_client(NULL, wd), *wc = cluster_client(NULL, 0);
  static rlock_lock *l, *wl; /* static, as the waiter's op */
  l = fx_lock(h, name);
  wl = fx_lock(wc, name);
  uint64_t me = dk_me(), w = rlock_owner_new();
  OK(dk_acquire(l, me, 0, RLOCK_LEASE_WATCHDOG));
  static dk_op wop;
  dk_acquire_start(&wop, wl, w, 60000, 30000);
  wait_subs(ch, 1, g, 1, 10000);
  dk_bg_measure_from_now();
  int ng = rt_cluster_failover(cl, g);
  dk_report("graceful failover (CLUSTER FAILOVER)",
            (double)rt_cluster_last_failover_ms(cl));
  assert_int_equal(owner_of(name), ng);
  assert_int_equal(exists_on(ng, name), 1);
  /* The subscription follows the slot's shard: on the promoted replica,
   * or still on the demoted master, now its replica (Redis propagates
   * SPUBLISH to a shard's replicas, so it hears the unlocks there). */
  char why[768];
  if (!subs_within(ch, ng, g, 10000, why, sizeof why))
    fail_msg("the waiter's subscription left the slot's shard: %s", why);
  char where[512];
  describe_subs(ch, where, sizeof where);
  printf("[   INFO   ] after CLUSTER FAILOVER %d -> %d: %s\n", g, ng, where);
  watch_renewals(ng, name, 0, wd + wd / 3, 0);
  assert_false(dk_op_done(&wop));
  int64_t released = rt_now_us();
  OK(dk_release(l, me));
  rlock_lock_free(l);
  dk_free(h); /* the waiter does not depend on the holder's client */
  OK(dk_op_wait(&wop, 10000, "the waiter"));
  double woke = (double)(wop.done_us - released) / 1000.0;
  dk_report("wake-up after a graceful failover (holder's lease 3 s)", woke);
  ASSERT_BETWEEN((int64_t)woke, 0, 500);
  OK(dk_release(wl, w));
  rlock_lock_free(wl);
  dk_free(wc);
  dk_bg_end("a graceful failover");
}

/* A thread that keeps taking fresh names on the victim's slots with
 * wait 0 while the master is killed and replaced: each call must succeed
 * or fail with a documented code within its deadline. Its calls use no
 * cmocka assertion (they are off the test's thread). */
#define PROBE_NAMES 400
typedef struct prober {
  rlock_client *c;
  char (*names)[48];
  _Atomic int stop;
  _Atomic int ok;
  _Atomic int64_t kill_us;
  _Atomic int64_t first_ok_after_us; /* first OK of a call begun after it */
  int64_t worst_ms;                  /* longest call */
  int calls, failed, bad_rc, bad_rc_value;
  char bad_msg[256];
  pthread_t t;
} prober;

/* `what` on `l` for `owner` from a thread that is not the test's: the
 * blocking call, or the _async one waited for (polling) up to `wait` plus
 * 15 s; -100 when no answer came. */
static int probe_call(int what, rlock_lock *l, uint64_t owner, int64_t wait,
                      int64_t lease, char *msg, size_t cap) {
  dk_op *op = calloc(1, sizeof *op);
  if (op == NULL)
    return RLOCK_ENOMEM;
  *op = (dk_op){.l = l, .what = what, .o = opts(owner, wait, lease)};
  if (!dk_loop()) {
    dk_op_call(op);
  } else {
    int rc = what == DK_RELEASE
                 ? rlock_lock_release_async(l, owner, dk_op_on_done, op)
                 : rlock_lock_acquire_async(l, &op->o, dk_op_on_done, op, NULL);
    int64_t end = rt_now_ms() + wait + rt_scaled_ms(15000);
    while (rc == RLOCK_OK && !dk_op_done(op) && rt_now_ms() < end)
      rt_sleep_ms(1);
    if (rc != RLOCK_OK)
      dk_op_finish(op, rc, 0);
    if (!dk_op_done(op)) { /* op and lock stay: the answer may yet come */
      snprintf(msg, cap, "no answer within %lld ms", (long long)(wait + 15000));
      return -100;
    }
  }
  snprintf(msg, cap, "%s", op->r.msg);
  int rc = op->r.rc;
  free(op);
  return rc;
}

static void *prober_main(void *arg) {
  prober *p = arg;
  uint64_t owner = rlock_owner_new();
  for (int i = 0; i < PROBE_NAMES && !atomic_load(&p->stop); i++) {
    rlock_lock *l;
    char msg[256];
    if (rlock_lock_new(&l, p->c, p->names[i]) != RLOCK_OK)
      break;
    int64_t t0 = rt_now_us();
    int rc = probe_call(DK_ACQUIRE, l, owner, 0, 10000, msg, sizeof msg);
    int64_t t1 = rt_now_us();
    if (rc == RLOCK_OK)
      rc = probe_call(DK_RELEASE, l, owner, 0, 0, msg, sizeof msg);
    int64_t ms = (t1 - t0) / 1000;
    p->worst_ms = ms > p->worst_ms ? ms : p->worst_ms;
    p->calls++;
    if (rc == RLOCK_OK) {
      atomic_fetch_add(&p->ok, 1);
      int64_t k = atomic_load(&p->kill_us);
      if (k != 0 && t0 >= k && atomic_load(&p->first_ok_after_us) == 0)
        atomic_store(&p->first_ok_after_us, t1);
    } else if (rc == RLOCK_EIO || rc == RLOCK_ETIMEOUT || rc == RLOCK_ESERVER ||
               rc == RLOCK_EREPLICA) {
      /* EREPLICA: the new master's replica (the killed node back) still
       * syncing, so WAIT could not confirm; the hold was given back. */
      p->failed++;
    } else if (p->bad_rc++ == 0) {
      p->bad_rc_value = rc;
      snprintf(p->bad_msg, sizeof p->bad_msg, "%s", msg);
    }
    if (rc != -100)
      rlock_lock_free(l);
    rt_sleep_ms(rc == RLOCK_OK ? 5 : 20);
  }
  return NULL;
}

static bool pred_promoted(void *arg, char *why, size_t cap) {
  int rep = *(int *)arg;
  snprintf(why, cap, "node %d is not a master yet", rep);
  return rt_cluster_is_master(cl, rep);
}

static atomic_int kill_lost; /* lost-lock callbacks for the holder's lock */

static void on_kill_lost(const char *name, const char *owner, void *ud) {
  (void)owner, (void)ud;
  fprintf(stderr, "lost: %s\n", name);
  atomic_fetch_add(&kill_lost, 1);
}

/* kill -9 of the master holding a lock (watchdog, 10 s) that another
 * client waits for (sharded mode, 60 s), while new locks are being taken
 * on its slots (wait 0, every call answered with a documented code within
 * its deadline) and a call begun right after the kill waits 20 s: the
 * hold, replicated before the kill (WAIT), survives on the promoted
 * replica and is renewed there for its holder, never reported lost; the
 * call begun at the kill gets its lock once the replica took over; the
 * waiter's subscription moves to the promoted replica and the release
 * wakes it. The test's thread drives the failover meanwhile (a loop runs
 * on a thread of its own, never blocked).
 *
 * Regression test for BUG-3 "sharded subscription stuck on a dead node"
 * (fixed: a sharded subscriber that cannot reconnect looks its channels'
 * owners up again; the subscriber is loop/lsub.c's for both drivers now,
 * whose failed connection refreshes the topology). It was: when the node of a
 * sharded subscriber connection dies, drop() reroutes its subscriptions, but
 * the slot map still names the dead node (CLUSTER SHARDS leaves out a shard
 * whose master failed, and apply_map() keeps the old owner), so they are
 * assigned to a new connection to the same dead node. connect_sc() then
 * fails forever with back-off and never reroutes again: s->on stays on the
 * dead node after the map names the promoted replica. The waiter hears no
 * unlock and wakes only when the holder's TTL runs out. */
static void test_kill_master(void **state) {
  (void)state;
  int ms[16], n = live_masters(ms), k = -1, rep = -1;
  for (int i = n - 1; i >= 0 && k < 0; i--)
    if ((rep = rt_cluster_replica_of(cl, ms[i])) >= 0)
      k = ms[i];
  assert_true(k >= 0);
  char name[64], ch[128], ride[64], field[RLOCK_OWNER_MAX];
  rt_cluster_key_on(cl, k, "fo:kill:", name, sizeof name);
  rt_cluster_key_on(cl, k, "fo:ride:", ride, sizeof ride);
  snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", name);
  static char probe_names[PROBE_NAMES][48];
  for (int i = 0; i < PROBE_NAMES; i++) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "fo:probe:%d:", i);
    rt_cluster_key_on(cl, k, prefix, probe_names[i], sizeof probe_names[i]);
  }
  /* The holder's watchdog lease outlives the failover (~3-4 s). */
  int64_t wd = 10000;
  char url[1024];
  cluster_url(url, sizeof url, NULL);
  atomic_store(&kill_lost, 0);
  dk_bg_begin();
  rlock_client *h = dk_client(url, wd, on_kill_lost, NULL);
  rlock_client *wc = cluster_client(NULL, 0), *pc = cluster_client(NULL, 0),
               *rc = cluster_client(NULL, 0);
  static rlock_lock *l, *wl, *rl; /* static, as the ops below */
  l = fx_lock(h, name);
  wl = fx_lock(wc, name);
  rl = fx_lock(rc, ride);
  uint64_t me = dk_me(), w = rlock_owner_new(), r = rlock_owner_new();
  dk_field(h, me, field);
  OK(dk_acquire(l, me, 0, RLOCK_LEASE_WATCHDOG));
  /* WAIT answered: the replica has the hold before the crash. */
  assert_int_equal(first_int(rep, "READONLY", "EXISTS", name), 1);
  static dk_op wop, rop;
  dk_acquire_start(&wop, wl, w, rt_scaled_ms(60000), 30000);
  wait_subs(ch, 1, k, 1, 10000);
  static prober p;
  p = (prober){.c = pc, .names = probe_names};
  assert_int_equal(pthread_create(&p.t, NULL, prober_main, &p), 0);
  int64_t t0 = rt_now_ms();
  while (atomic_load(&p.ok) < 3) {
    if (rt_now_ms() - t0 > rt_scaled_ms(10000))
      fail_msg("the prober took no lock before the kill");
    rt_sleep_ms(5);
  }
  dk_bg_measure_from_now();

  int64_t kill_us = rt_now_us();
  atomic_store(&p.kill_us, kill_us);
  rt_server_kill(node(k));
  dk_acquire_start(&rop, rl, r, rt_scaled_ms(20000), 10000);
  rt_wait_until(pred_promoted, &rep, rt_scaled_ms(30000), "the failover");
  rt_cluster_wait_ok(cl, rt_scaled_ms(30000));
  dk_report("kill -9 to the cluster ok again",
            (double)(rt_now_us() - kill_us) / 1000.0);
  while (atomic_load(&p.first_ok_after_us) == 0) {
    if (rt_now_us() - kill_us > rt_scaled_ms(30000) * 1000)
      fail_msg("no lock on the failed master's slots succeeded within %lld ms",
               (long long)rt_scaled_ms(30000));
    rt_sleep_ms(10);
  }
  dk_report("kill -9 to the first lock taken by a wait-0 prober",
            (double)(atomic_load(&p.first_ok_after_us) - kill_us) / 1000.0);
  atomic_store(&p.stop, 1);
  pthread_join(p.t, NULL);
  printf("[   INFO   ] prober: %d calls, %d ok, %d failed with EIO/ETIMEOUT/"
         "ESERVER/EREPLICA, longest %lld ms\n",
         p.calls, atomic_load(&p.ok), p.failed, (long long)p.worst_ms);
  if (p.bad_rc != 0)
    fail_msg("%d calls failed with an undocumented code, first %d: %s",
             p.bad_rc, p.bad_rc_value, p.bad_msg);
  /* wait 0: retries for connect + command timeout, then at most one
   * command in flight and one connect. */
  ASSERT_BETWEEN(p.worst_ms, 0, 1000 + 2000 + 2000 + 1000 + 500);
  if (dk_op_wait(&rop, 25000, "the call begun at the kill") != RLOCK_OK)
    fail_msg("an acquisition begun at the kill with a 20 s wait failed: "
             "%d %s",
             rop.r.rc, rop.r.msg);
  dk_report("kill -9 to the lock of a call waiting through the failover",
            (double)(rop.done_us - kill_us) / 1000.0);
  assert_int_equal(exists_on(rep, ride), 1);
  OK(dk_release(rl, r));

  assert_int_equal(owner_of(name), rep);
  assert_int_equal(exists_on(rep, name), 1);
  /* The holder's renewals resumed on the new master, for its holder; the
   * hold was never reported lost. */
  watch_renewals(rep, name, 0, wd / 3 + wd / 6, wd / 3);
  assert_int_equal(fx_hget(node(rep), name, field), 1);
  assert_int_equal(atomic_load(&kill_lost), 0);
  /* The waiter's subscription moves to the promoted replica. (Checked
   * without failing at once, so that the wake-up is measured too.) */
  char why[768];
  bool moved = subs_within(ch, rep, -1, 5000, why, sizeof why);
  assert_false(dk_op_done(&wop));
  int64_t released = rt_now_us();
  OK(dk_release(l, me));
  rlock_lock_free(l);
  dk_free(h); /* the waiter does not depend on the holder's client */
  dk_op_wait(&wop, 10000, "the waiter");
  double woke = (double)(wop.done_us - released) / 1000.0;
  dk_report("wake-up after a kill -9 failover (holder's lease 10 s)", woke);
  OK(wop.r.rc);
  OK(dk_release(wl, w));
  rlock_lock_free(wl);
  rlock_lock_free(rl);
  dk_free(wc);
  dk_free(pc);
  dk_free(rc);
  dk_bg_end("kill -9 of a cluster master");
  /* The killed node comes back as a replica: the cluster is whole again. */
  rt_server_start_again(node(k));
  rt_cluster_wait_ok(cl, rt_scaled_ms(30000));
  int64_t bound = rt_scaled_ms(dk_loop() ? 2000 : 500);
  if (!moved || woke > (double)bound) {
    char detail[1024];
    snprintf(detail, sizeof detail,
             "subscription %s; waiter woke %.0f ms after the release "
             "(holder's TTL bound, not the message; at most %lld ms): %s",
             moved ? "moved" : "not moved to the new master", woke,
             (long long)bound, moved ? "" : why);
    regression("BUG-3 sharded subscription stuck on a dead node", detail);
  }
}

/* ---- children --------------------------------------------------------------
 */

static int child_main(int argc, char **argv) {
  if (argc < 3)
    return 64;
  /* Die with the test process, should a failed test leave us behind. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1)
    return 70;
  const char *role = argv[0], *url = argv[1], *name = argv[2];
  rlock_config *cfg;
  rlock_client *c = NULL;
  rlock_lock *l = NULL;
  int rc = rlock_config_new(&cfg);
  if (rc == RLOCK_OK)
    rc = rlock_config_set_url(cfg, url);
  if (rc == RLOCK_OK)
    rc = rlock_client_new(&c, cfg);
  rlock_config_free(cfg);
  if (rc == RLOCK_OK)
    rc = rlock_lock_new(&l, c, name);
  if (rc == RLOCK_OK && strcmp(role, "hold") == 0 && argc == 4) {
    rc = rlock_lock_try_acquire(l, 10000, 30000);
    printf("held %d\n", rc);
    fflush(stdout);
    struct stat st;
    int64_t t0 = rt_now_ms();
    while (rc == RLOCK_OK && stat(argv[3], &st) != 0 &&
           rt_now_ms() - t0 < 120000)
      rt_sleep_ms(1);
    long long t = (long long)rt_now_us();
    if (rc == RLOCK_OK)
      rc = rlock_lock_release(l);
    printf("released %lld %d\n", t, rc);
    fflush(stdout);
  } else if (rc == RLOCK_OK && strcmp(role, "wait") == 0) {
    rc = rlock_lock_try_acquire(l, 60000, 30000);
    long long t = (long long)rt_now_us();
    printf("acquired %lld %d\n", t, rc);
    fflush(stdout);
    if (rc == RLOCK_OK)
      rc = rlock_lock_release(l);
  } else if (rc == RLOCK_OK) {
    rc = 64;
  }
  if (rc != RLOCK_OK)
    fprintf(stderr, "child %s: %d %s\n", role, rc, rlock_error_last()->message);
  rlock_lock_free(l);
  rlock_client_free(c);
  return rc == RLOCK_OK ? 0 : 1;
}

/* ---- the groups ------------------------------------------------------------
 */

/* The cluster and a plain server, once for every group. */
static int setup(void) {
  if (cl == NULL) {
    int64_t t0 = rt_now_ms();
    cl = rt_cluster_start(3, 1);
    dk_report("cluster start, 3 masters + 3 replicas",
              (double)(rt_now_ms() - t0));
    srv = rt_server_start(NULL);
  }
  return 0;
}

int main(int argc, char **argv) {
  fx_argv0 = argv[0];
  if (argc > 2 && strcmp(argv[1], "--child") == 0)
    return child_main(argc - 2, argv + 2);
  const dk_case cases[] = {
      DK_CASE(test_wrong_url_kind, DK_BLOCK),
      DK_CASE(test_dead_first_seed, DK_BLOCK),
      DK_CASE(test_every_master, DK_ALL),
      DK_CASE(test_whois_by_slot, DK_ALL),
      DK_CASE(test_latch_replays_lost_reply, DK_ALL),
      DK_CASE(test_wake_classic, DK_ALL),
      DK_CASE(test_wake_sharded, DK_ALL),
      DK_CASE(test_wake_auto, DK_ALL),
      DK_CASE(test_interop_spublish, DK_ALL),
      DK_CASE(test_multilock, DK_BLOCK),
      DK_CASE(test_redlock, DK_BLOCK),
      DK_CASE(test_watchdog_many_slots, DK_BLOCK),
      DK_CASE(test_watchdog_idle_tick, DK_BLOCK),
      DK_CASE_ST(test_watchdog_stopped_master, dk_recover, thaw_cluster,
                 DK_BLOCK),
      DK_CASE_ST(test_stopped_master_subscriber, dk_recover, thaw_cluster,
                 DK_ALL),
      DK_CASE(test_latch_deleted, DK_ALL),
      DK_CASE_ST(test_migration_under_locks, dk_recover, mig_home, DK_ALL),
      DK_CASE(test_release_during_migration, DK_ALL),
      DK_CASE(test_graceful_failover, DK_ALL),
      DK_CASE(test_kill_master, DK_ALL),
  };
  int failed = DK_RUN(cases, setup, NULL);
  rt_cluster_free(cl);
  rt_server_free(srv);
  return failed;
}
