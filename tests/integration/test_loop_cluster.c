/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: event-loop clients (rlock/loop.h) on a real Redis Cluster
 * (rt_cluster: 3 masters, one replica each), every case once on libuv and
 * once on libevent (the adapters are compiled into this binary): every
 * lock kind on every master; waiters woken by unlock messages in classic,
 * sharded and auto pub/sub; a slot migrated under a hold (renewal through
 * ASK, then MOVED; releases during and after) and under a wait (the
 * sharded subscription follows the slot); a master killed with kill -9
 * under a holder and a waiter, with a call begun at the kill riding the
 * failover out. Through the migrations and the failover the loop runs on
 * a thread of its own (loop_topo.h) while the test's thread drives the
 * cluster, and a 10 ms timer on that loop must never be more than 20 ms
 * late. The blocking client's versions of these cases are in
 * test_cluster.c.
 */
#include "loop_topo.h"

#include <limits.h>

#include "rt_cluster.h"

static rt_cluster *cl;

/* ---- helpers ------------------------------------------------------------ */

static rt_server *node(int i) { return rt_cluster_node(cl, i); }

static const char *url_of(char *buf, size_t size, const char *mode) {
  snprintf(buf, size, "%s%s%s", rt_cluster_url(cl), mode ? "?pubsub=" : "",
           mode ? mode : "");
  return buf;
}

static rlock_client *cluster_client(const char *mode, int64_t watchdog,
                                    rlock_lost_fn lost, void *ud) {
  char url[1024];
  return lt_client(url_of(url, sizeof url, mode), watchdog, lost, ud);
}

/* An integer command on node n; fails on any other reply (a MOVED error:
 * the key is not there). */
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
 * replica's) then `cmd key` on node n. */
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

/* Where a waiter's subscription should be. */
typedef struct subs_want {
  const char *ch;
  int sharded; /* SSUBSCRIBE on `owner` (or `also`), else SUBSCRIBE */
  int owner, also;
  long long n;
} subs_want;

static bool pred_subs(void *arg, char *why, size_t cap) {
  const subs_want *w = arg;
  long long classic = 0, sharded = 0, where = 0;
  char all[512] = "";
  size_t at = 0;
  for (int i = 0; i < rt_cluster_size(cl); i++) {
    if (rt_server_pid(node(i)) == 0)
      continue;
    long long sn = fx_subscribers_of(node(i), 1, w->ch);
    long long cn = fx_subscribers_of(node(i), 0, w->ch);
    sharded += sn;
    classic += cn;
    where += (i == w->owner || i == w->also) ? sn : 0;
    int k = snprintf(all + at, sizeof all - at, " %d:S%lld/C%lld", i, sn, cn);
    at += k > 0 && (size_t)k < sizeof all - at ? (size_t)k : 0;
  }
  bool ok = w->sharded ? sharded == w->n && where == w->n && classic == 0
                       : classic == w->n && sharded == 0;
  snprintf(why, cap,
           "want %lld %s on node %d; per node (S: SHARDNUMSUB, C: "
           "NUMSUB):%s",
           w->n, w->sharded ? "SSUBSCRIBE" : "SUBSCRIBE", w->owner, all);
  return ok;
}

/* pred_subs, while a waiter (its completion `r`) must still be waiting:
 * stops early, saying how it ended, when it is not. */
typedef struct subs_waiting {
  subs_want want;
  lt_res *r;
} subs_waiting;

static bool pred_subs_waiting(void *arg, char *why, size_t cap) {
  subs_waiting *w = arg;
  if (atomic_load(&w->r->done))
    fail_msg("the waiter ended before its subscription was seen: %d (%s)",
             w->r->rc, w->r->msg);
  return pred_subs(&w->want, why, cap);
}

/* Sample PTTL of `key` on node n (through ASKING when `asking`) every
 * 25 ms for `ms`, while the loop runs on its own thread: every sample
 * above 0 and at least one higher than the one before (renewed). */
static long long watch_renewals(int n, const char *key, int asking,
                                int64_t ms) {
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
    if (v <= 0)
      fail_msg("node %d: PTTL %s = %lld: not renewed", n, key, v);
    rises += prev >= 0 && v > prev;
    prev = v;
    low = v < low ? v : low;
    rt_sleep_ms(25); /* sampling: the loop runs meanwhile */
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

/* Node n has run `dels` DELs in all, and SCAN finds no latch key of
 * `name` there. */
typedef struct latch_gone {
  int n;
  const char *name;
  long long dels;
} latch_gone;

static bool pred_latch_gone(void *arg, char *why, size_t cap) {
  latch_gone *g = arg;
  char match[160], cursor[32] = "0";
  snprintf(match, sizeof match, "redisson_unlock_latch:{%s}:*", g->name);
  long long keys = 0, dels = calls_on(g->n, "del");
  do {
    redisReply *r =
        rt_cmd(node(g->n), "SCAN %s MATCH %s COUNT 1000", cursor, match);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2)
      fail_msg("node %d: SCAN answered type %d", g->n, r->type);
    snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
    keys += (long long)r->element[1]->elements;
    freeReplyObject(r);
  } while (strcmp(cursor, "0") != 0);
  snprintf(why, cap, "node %d ran %lld DELs of %lld, %lld latch keys left",
           g->n, dels, g->dels, keys);
  return dels >= g->dels && keys == 0;
}

/* ---- 1. every kind on every master --------------------------------------- */

static void check_reentrant(rlock_client *c, int m) {
  char name[64], field[RLOCK_OWNER_MAX];
  rt_cluster_key_on(cl, m, "lc:each:lock:", name, sizeof name);
  rlock_lock *l = fx_lock(c, name);
  uint64_t me = rlock_owner_new();
  field_of(c, me, field);
  OK(acquire(l, me, 0, RLOCK_LEASE_WATCHDOG));
  assert_int_equal(fx_hget(node(m), name, field), 1);
  OK(acquire(l, me, 0, 20000));
  assert_int_equal(fx_hget(node(m), name, field), 2);
  result r = {0};
  OK(rlock_lock_hold_count_async(l, me, on_done, &r));
  run_until(&r.done, 1, 5000, "a hold count");
  OK(r.rc);
  assert_int_equal(r.value, 2);
  /* Each release writes its latch and, its answer read, deletes it
   * without waiting: one DEL each, no latch key left. */
  latch_gone g = {m, name, calls_on(m, "del") + 2};
  OK(release(l, me));
  OK(release(l, me));
  assert_int_equal(exists_on(m, name), 0);
  run_until_pred(pred_latch_gone, &g, 5000, "both latches deleted");
  RC(release(l, me), RLOCK_ENOTHELD);
  rlock_lock_free(l);
}

/* Node of an inspection, as the loop client saw it. */
typedef struct seen_info {
  int done, rc;
  char node[64];
  int locked;
} seen_info;

static void on_info(void *arg, int rc, rlock_lock_info *info) {
  seen_info *s = arg;
  s->done++;
  s->rc = rc;
  if (info != NULL) {
    snprintf(s->node, sizeof s->node, "%s", rlock_lock_info_node(info));
    s->locked = rlock_lock_info_locked(info);
  }
  rlock_lock_info_free(info);
}

static void check_inspect(rlock_client *c, int m) {
  char name[64], at[64];
  rt_cluster_key_on(cl, m, "lc:each:inspect:", name, sizeof name);
  rlock_lock *l = fx_lock(c, name);
  uint64_t me = rlock_owner_new();
  OK(acquire(l, me, 0, 20000));
  seen_info s = {0};
  OK(rlock_lock_inspect_async(l, on_info, &s));
  run_until(&s.done, 1, 5000, "an inspection");
  OK(s.rc);
  assert_int_equal(s.locked, 1);
  snprintf(at, sizeof at, "127.0.0.1:%d", rt_cluster_port(cl, m));
  assert_string_equal(s.node, at); /* answered by the slot's master */
  OK(release(l, me));
  rlock_lock_free(l);
}

static void check_fair(rlock_client *c, rlock_client *c2, int m) {
  char name[64], queue[96];
  rt_cluster_key_on(cl, m, "lc:each:fair:", name, sizeof name);
  snprintf(queue, sizeof queue, "redisson_lock_queue:{%s}", name);
  rlock_lock *l, *l2;
  OK(rlock_lock_new_fair(&l, c, name));
  OK(rlock_lock_new_fair(&l2, c2, name));
  uint64_t a = rlock_owner_new(), b = rlock_owner_new();
  OK(acquire(l, a, 0, 30000));
  assert_int_equal(exists_on(m, name), 1);
  result w = {0};
  rlock_acquire_options o = opts(b, 20000, 30000);
  OK(rlock_lock_acquire_async(l2, &o, on_done, &w, NULL));
  int64_t end = rt_now_ms() + rt_scaled_ms(5000);
  while (int_on(m, "LLEN %s", queue) != 1) { /* queued on the lock's node */
    if (rt_now_ms() > end)
      fail_msg("the fair waiter on %s never queued on node %d", name, m);
    run_once(20);
  }
  OK(release(l, a));
  run_until(&w.done, 1, 5000, "the fair waiter");
  OK(w.rc);
  OK(release(l2, b));
  assert_int_equal(exists_on(m, name), 0);
  assert_int_equal(exists_on(m, queue), 0);
  rlock_lock_free(l);
  rlock_lock_free(l2);
}

static void check_rw(rlock_client *c, int m) {
  char name[64];
  rt_cluster_key_on(cl, m, "lc:each:rw:", name, sizeof name);
  rlock_lock *rd, *wr;
  OK(rlock_lock_new_read(&rd, c, name));
  OK(rlock_lock_new_write(&wr, c, name));
  uint64_t a = rlock_owner_new(), b = rlock_owner_new(), w = rlock_owner_new();
  OK(acquire(rd, a, 0, 30000));
  OK(acquire(rd, b, 0, 30000)); /* shared */
  redisReply *r = rt_cmd(node(m), "HGET %s mode", name);
  assert_int_equal(r->type, REDIS_REPLY_STRING);
  assert_string_equal(r->str, "read");
  freeReplyObject(r);
  RC(acquire(wr, w, 0, 30000), RLOCK_ELOCKED);
  result wres = {0};
  rlock_acquire_options o = opts(w, 20000, 30000);
  OK(rlock_lock_acquire_async(wr, &o, on_done, &wres, NULL));
  OK(release(rd, a));
  assert_int_equal(wres.done, 0);
  OK(release(rd, b));
  run_until(&wres.done, 1, 5000, "the writer");
  OK(wres.rc);
  r = rt_cmd(node(m), "HGET %s mode", name);
  assert_string_equal(r->str, "write");
  freeReplyObject(r);
  OK(release(wr, w));
  assert_int_equal(exists_on(m, name), 0);
  rlock_lock_free(rd);
  rlock_lock_free(wr);
}

static void check_fenced(rlock_client *c, int m) {
  char name[64], tkey[96];
  rt_cluster_key_on(cl, m, "lc:each:fenced:", name, sizeof name);
  snprintf(tkey, sizeof tkey, "redisson_lock_token:{%s}", name);
  rlock_lock *l;
  OK(rlock_lock_new_fenced(&l, c, name));
  uint64_t me = rlock_owner_new();
  result r;
  OK(acquire_r(l, me, 0, 20000, &r));
  int64_t first = r.value;
  assert_true(first > 0);
  OK(release(l, me));
  OK(acquire_r(l, me, 0, 20000, &r));
  assert_int_equal(r.value, first + 1);
  OK(release(l, me));
  assert_int_equal(exists_on(m, tkey), 1); /* the counter, on the node */
  rlock_lock_free(l);
}

static void check_spin(rlock_client *c, int m) {
  char name[64];
  rt_cluster_key_on(cl, m, "lc:each:spin:", name, sizeof name);
  rlock_lock *l;
  OK(rlock_lock_new_spin(&l, c, name));
  uint64_t a = rlock_owner_new(), b = rlock_owner_new();
  OK(acquire(l, a, 0, 30000));
  assert_int_equal(exists_on(m, name), 1);
  result w = {0};
  rlock_acquire_options o = opts(b, 20000, 30000);
  OK(rlock_lock_acquire_async(l, &o, on_done, &w, NULL));
  run_once(30);
  assert_int_equal(w.done, 0);
  OK(release(l, a));
  run_until(&w.done, 1, 5000, "the spinning waiter");
  OK(w.rc);
  OK(release(l, b));
  assert_int_equal(exists_on(m, name), 0);
  rlock_lock_free(l);
}

static void test_every_master(void **state) {
  (void)state;
  rlock_client *a = cluster_client(NULL, 0, NULL, NULL);
  rlock_client *b = cluster_client(NULL, 0, NULL, NULL);
  assert_string_equal(rlock_client_topology(a), "cluster");
  int masters[16], n = live_masters(masters);
  assert_int_equal(n, rt_cluster_masters(cl));
  for (int i = 0; i < n; i++) {
    int m = masters[i];
    check_reentrant(a, m);
    check_inspect(a, m);
    check_fair(a, b, m);
    check_rw(a, m);
    check_fenced(a, m);
    check_spin(a, m);
  }
  loop_free(a);
  loop_free(b);
}

/* ---- 2. wake-ups in each pub/sub mode ------------------------------------ */

/* A loop waiter (its own client) for a lock held elsewhere with a 30 s
 * lease, woken by the release's message: within 2 s (scaled), not by the
 * lease. `blocking_holder`: the holder is a blocking client. */
static void wake(const char *mode, int m, int sharded, int blocking_holder) {
  char url[1024], name[64], ch[128], prefix[32], what[96];
  url_of(url, sizeof url, mode);
  snprintf(prefix, sizeof prefix, "lc:wake:%s:", mode);
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
    hc = lt_client(url, 0, NULL, NULL);
    hl = fx_lock(hc, name);
    OK(acquire(hl, holder, 0, 30000));
  }
  assert_int_equal(exists_on(m, name), 1);
  rlock_client *wc = lt_client(url, 0, NULL, NULL);
  rlock_lock *wl = fx_lock(wc, name);
  result r = {0};
  rlock_acquire_options o = opts(me, 60000, 30000);
  OK(rlock_lock_acquire_async(wl, &o, on_done, &r, NULL));
  subs_want want = {ch, sharded, m, -1, 1};
  run_until_pred(pred_subs, &want, 10000, "the waiter's subscription");
  assert_int_equal(r.done, 0);
  int64_t t0 = rt_now_us();
  if (blocking_holder)
    OK(rlock_lock_release(hl));
  else
    OK(release(hl, holder));
  run_until(&r.done, 1, 10000, "the woken waiter");
  double ms = (double)(rt_now_us() - t0) / 1000.0;
  OK(r.rc);
  snprintf(what, sizeof what, "wake-up, pubsub=%s, %s holder",
           mode ? mode : "(default: auto)",
           blocking_holder ? "blocking" : "loop");
  report(what, ms);
  ASSERT_BETWEEN((int64_t)ms, 0, 2000); /* the lease was 30 s */
  char field[RLOCK_OWNER_MAX];
  field_of(wc, me, field);
  assert_int_equal(fx_hget(node(m), name, field), 1);
  OK(release(wl, me));
  assert_int_equal(exists_on(m, name), 0);
  /* The subscription goes once the channel stops lingering. */
  want.n = 0;
  run_until_pred(pred_subs, &want, 10000, "the subscription to go");
  rlock_lock_free(wl);
  loop_free(wc);
  rlock_lock_free(hl);
  if (hc != NULL)
    loop_free(hc);
  if (bc != NULL)
    rlock_client_free(bc);
}

static void test_wake_classic(void **state) {
  (void)state;
  int ms[16];
  assert_true(live_masters(ms) >= 3);
  wake("classic", ms[0], 0, 0);
  wake("classic", ms[1], 0, 1);
}

static void test_wake_sharded(void **state) {
  (void)state;
  int ms[16];
  assert_true(live_masters(ms) >= 3);
  wake("sharded", ms[1], 1, 0);
  wake("sharded", ms[2], 1, 1);
}

static void test_wake_auto(void **state) {
  (void)state;
  int ms[16];
  assert_true(live_masters(ms) >= 3);
  /* Redis 7 answers PUBSUB SHARDNUMSUB: auto means sharded. */
  wake(NULL, ms[2], 1, 0);
  wake("auto", ms[0], 1, 1);
}

/* ---- 3. a slot migrated under a hold ------------------------------------- */

typedef struct mig_hold {
  int64_t wd;
  char url[1024];
  const char *a, *c; /* A: watchdog hold; C: a 20 s lease */
  rlock_client *h;
  rlock_lock *la, *lc;
  uint64_t owner;
  lt_res ra, rc, rela, relc;
} mig_hold;

enum { MH_RELEASE_C = 2, MH_RELEASE_A };

static void mig_hold_fn(lt *x, int cmd) {
  mig_hold *s = x->ud;
  rlock_acquire_options o;
  switch (cmd) {
  case LT_INIT:
    s->h = lt_client(s->url, s->wd, NULL, NULL);
    if (rlock_lock_new(&s->la, s->h, s->a) != RLOCK_OK ||
        rlock_lock_new(&s->lc, s->h, s->c) != RLOCK_OK) {
      lt_fail(x, "rlock_lock_new: %s", rlock_error_last()->message);
      return;
    }
    o = opts(s->owner, 0, RLOCK_LEASE_WATCHDOG);
    if (rlock_lock_acquire_async(s->la, &o, lt_done, &s->ra, NULL) != RLOCK_OK)
      lt_fail(x, "acquire A: %s", rlock_error_last()->message);
    o = opts(s->owner, 0, 20000);
    if (rlock_lock_acquire_async(s->lc, &o, lt_done, &s->rc, NULL) != RLOCK_OK)
      lt_fail(x, "acquire C: %s", rlock_error_last()->message);
    return;
  case MH_RELEASE_C:
    if (rlock_lock_release_async(s->lc, s->owner, lt_done, &s->relc) !=
        RLOCK_OK)
      lt_fail(x, "release C: %s", rlock_error_last()->message);
    return;
  case MH_RELEASE_A:
    if (rlock_lock_release_async(s->la, s->owner, lt_done, &s->rela) !=
        RLOCK_OK)
      lt_fail(x, "release A: %s", rlock_error_last()->message);
    return;
  case LT_STOP:
    rlock_lock_free(s->la);
    rlock_lock_free(s->lc);
    if (s->h != NULL && rlock_client_free(s->h) != RLOCK_OK)
      lt_fail(x, "client free: %s", rlock_error_last()->message);
    return;
  }
}

/* Hold two locks of one slot on a loop client (one watchdog-renewed, one
 * with a lease) while the slot migrates: the watchdog hold is renewed
 * through ASK while the keys sit on the importing node and through MOVED
 * after; the leased one is released half-way (ASK), the renewed one after
 * the move: both succeed. */
static void test_migration_during_hold(void **state) {
  (void)state;
  int ms[16];
  assert_true(live_masters(ms) >= 3);
  int from = ms[kind == UV ? 0 : 1], to = ms[kind == UV ? 1 : 2];
  char seed[64];
  static char a[64], c[64]; /* the loop thread's, as s and x */
  rt_cluster_key_on(cl, from, "lc:mighold:", seed, sizeof seed);
  int slot = rt_cluster_slot_of(seed);
  rt_cluster_key_in_slot(slot, "lc:migA:", a, sizeof a);
  rt_cluster_key_in_slot(slot, "lc:migC:", c, sizeof c);
  static mig_hold s; /* static: a failed case leaves it to the teardown */
  s = (mig_hold){.wd = rt_scaled_ms(1500), .a = a, .c = c};
  s.owner = rlock_owner_new();
  url_of(s.url, sizeof s.url, "sharded");
  lt_res *rs[] = {&s.ra, &s.rc, &s.rela, &s.relc};
  for (int i = 0; i < 4; i++)
    lt_res_reset(rs[i]);
  static lt x;
  lt_start(&x, mig_hold_fn, &s);
  lt_wait(&s.ra, rt_scaled_ms(10000), "the watchdog hold");
  lt_wait(&s.rc, rt_scaled_ms(10000), "the leased hold");
  if (s.ra.rc != RLOCK_OK || s.rc.rc != RLOCK_OK)
    fail_msg("acquisitions: %d (%s), %d (%s)", s.ra.rc, s.ra.msg, s.rc.rc,
             s.rc.msg);
  assert_int_equal(exists_on(from, a), 1);
  lt_measure_from_now(&x);

  rt_cluster_migrate_begin(cl, slot, from, to);
  assert_int_equal(rt_cluster_migrate_keys(cl, slot, from, to, -1), 2);
  /* The keys are on `to`, reachable only with ASKING: renewals follow
   * ASK. More than a lease passes. */
  long long low = watch_renewals(to, a, 1, s.wd + s.wd / 2);
  printf("[   INFO   ] lowest PTTL renewed through ASK: %lld of %lld ms\n", low,
         (long long)s.wd);
  lt_do(&x, MH_RELEASE_C); /* half-way: ASK */
  lt_wait(&s.relc, rt_scaled_ms(10000), "the release during the migration");
  if (s.relc.rc != RLOCK_OK)
    fail_msg("release during the migration: %d (%s)", s.relc.rc, s.relc.msg);
  assert_int_equal(asking_int(to, "EXISTS", c), 0);

  rt_cluster_migrate_finish(cl, slot, from, to);
  assert_int_equal(rt_cluster_slot_owner(cl, slot), to);
  low = watch_renewals(to, a, 0, s.wd + s.wd / 2); /* after MOVED */
  printf("[   INFO   ] lowest PTTL renewed after MOVED: %lld ms\n", low);
  lt_do(&x, MH_RELEASE_A);
  lt_wait(&s.rela, rt_scaled_ms(10000), "the release after the migration");
  if (s.rela.rc != RLOCK_OK)
    fail_msg("release after the migration: %d (%s)", s.rela.rc, s.rela.msg);
  assert_int_equal(exists_on(to, a), 0);
  int64_t late = lt_stop(&x);
  lt_check_responsive(&x, late, "a slot migrated under a hold");
  /* Back where it was, for the cases after this one. */
  rt_cluster_migrate_slot(cl, slot, to, from);
}

/* ---- 4. a slot migrated under a wait ------------------------------------- */

typedef struct mig_wait {
  char url[1024];
  const char *name;
  rlock_client *h, *w;
  rlock_lock *lh, *lw;
  uint64_t holder, waiter;
  lt_res held, got, rel, relw;
  int64_t release_us;
} mig_wait;

enum { MW_WAIT = 2, MW_RELEASE, MW_RELEASE_WAITER };

static void mig_wait_fn(lt *x, int cmd) {
  mig_wait *s = x->ud;
  rlock_acquire_options o;
  int rc = RLOCK_OK;
  switch (cmd) {
  case LT_INIT:
    s->h = lt_client(s->url, 0, NULL, NULL);
    s->w = lt_client(s->url, 0, NULL, NULL);
    if ((rc = rlock_lock_new(&s->lh, s->h, s->name)) == RLOCK_OK &&
        (rc = rlock_lock_new(&s->lw, s->w, s->name)) == RLOCK_OK) {
      o = opts(s->holder, 0, 30000);
      rc = rlock_lock_acquire_async(s->lh, &o, lt_done, &s->held, NULL);
    }
    break;
  case MW_WAIT:
    o = opts(s->waiter, rt_scaled_ms(60000), 30000);
    rc = rlock_lock_acquire_async(s->lw, &o, lt_done, &s->got, NULL);
    break;
  case MW_RELEASE:
    s->release_us = rt_now_us();
    rc = rlock_lock_release_async(s->lh, s->holder, lt_done, &s->rel);
    break;
  case MW_RELEASE_WAITER:
    rc = rlock_lock_release_async(s->lw, s->waiter, lt_done, &s->relw);
    break;
  case LT_STOP:
    rlock_lock_free(s->lh);
    rlock_lock_free(s->lw);
    rlock_client_free(s->h);
    rlock_client_free(s->w);
    break;
  }
  if (rc != RLOCK_OK)
    lt_fail(x, "command %d: %s", cmd, rlock_error_last()->message);
}

/* A waiter (sharded pub/sub) subscribed on the slot's node when the slot
 * migrates: the old node drops the subscription (sunsubscribe), the loop
 * client subscribes again on the new owner, and the holder's release
 * wakes it well before the holder's 30 s lease. */
static void test_migration_during_wait(void **state) {
  (void)state;
  int ms[16];
  assert_true(live_masters(ms) >= 3);
  int from = ms[kind == UV ? 2 : 1], to = ms[0];
  char name[64], ch[128];
  rt_cluster_key_on(cl, from, "lc:migwait:", name, sizeof name);
  int slot = rt_cluster_slot_of(name);
  snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", name);
  static mig_wait s;
  static char sname[64];
  snprintf(sname, sizeof sname, "%s", name);
  s = (mig_wait){.name = sname};
  s.holder = rlock_owner_new();
  s.waiter = rlock_owner_new();
  url_of(s.url, sizeof s.url, "sharded");
  lt_res *rs[] = {&s.held, &s.got, &s.rel, &s.relw};
  for (int i = 0; i < 4; i++)
    lt_res_reset(rs[i]);
  static lt x;
  lt_start(&x, mig_wait_fn, &s);
  lt_wait(&s.held, rt_scaled_ms(10000), "the holder");
  if (s.held.rc != RLOCK_OK)
    fail_msg("holder: %d (%s)", s.held.rc, s.held.msg);
  lt_do(&x, MW_WAIT);
  subs_want want = {ch, 1, from, -1, 1};
  rt_wait_until(pred_subs, &want, rt_scaled_ms(10000),
                "the waiter's subscription on the slot's node");
  lt_measure_from_now(&x);
  rt_cluster_migrate_slot(cl, slot, from, to);
  subs_waiting moved = {want, &s.got};
  moved.want.owner = to;
  rt_wait_until(pred_subs_waiting, &moved, rt_scaled_ms(10000),
                "the waiter's subscription on the slot's new node");
  assert_int_equal(atomic_load(&s.got.done), 0); /* still waiting */
  assert_int_equal(exists_on(to, name), 1);
  lt_do(&x, MW_RELEASE);
  lt_wait(&s.got, rt_scaled_ms(10000), "the waiter");
  lt_wait(&s.rel, rt_scaled_ms(10000), "the release");
  if (s.rel.rc != RLOCK_OK || s.got.rc != RLOCK_OK)
    fail_msg("release %d (%s), waiter %d (%s)", s.rel.rc, s.rel.msg, s.got.rc,
             s.got.msg);
  double woke = (double)(s.got.at_us - s.release_us) / 1000.0;
  report("wake-up after the slot moved (sharded, holder's lease 30 s)", woke);
  ASSERT_BETWEEN((int64_t)woke, 0, 2000);
  lt_do(&x, MW_RELEASE_WAITER);
  lt_wait(&s.relw, rt_scaled_ms(10000), "the waiter's release");
  if (s.relw.rc != RLOCK_OK)
    fail_msg("the waiter's release: %d (%s)", s.relw.rc, s.relw.msg);
  assert_int_equal(exists_on(to, name), 0);
  int64_t late = lt_stop(&x);
  lt_check_responsive(&x, late, "a slot migrated under a wait");
  rt_cluster_migrate_slot(cl, slot, to, from);
}

/* ---- 5. kill -9 of a master -----------------------------------------------
 */

typedef struct killed {
  char url[1024];
  const char *name, *ride;
  int64_t wd;
  rlock_client *h, *w, *r;
  rlock_lock *lh, *lw, *lr;
  uint64_t holder, waiter, rider;
  lt_res held, got, rel, relw, rode, relr;
  int64_t release_us, ride_us;
  atomic_int lost;
} killed;

enum { KM_WAIT = 2, KM_RIDE, KM_RELEASE, KM_RELEASE_WAITER };

static void km_lost(const char *name, const char *owner, void *ud) {
  (void)owner;
  killed *s = ud;
  if (strcmp(name, s->name) == 0)
    atomic_fetch_add(&s->lost, 1);
}

static void killed_fn(lt *x, int cmd) {
  killed *s = x->ud;
  rlock_acquire_options o;
  int rc = RLOCK_OK;
  switch (cmd) {
  case LT_INIT:
    s->h = lt_client(s->url, s->wd, km_lost, s);
    s->w = lt_client(s->url, 0, NULL, NULL);
    s->r = lt_client(s->url, 0, NULL, NULL);
    if ((rc = rlock_lock_new(&s->lh, s->h, s->name)) == RLOCK_OK &&
        (rc = rlock_lock_new(&s->lw, s->w, s->name)) == RLOCK_OK &&
        (rc = rlock_lock_new(&s->lr, s->r, s->ride)) == RLOCK_OK) {
      o = opts(s->holder, 0, RLOCK_LEASE_WATCHDOG);
      rc = rlock_lock_acquire_async(s->lh, &o, lt_done, &s->held, NULL);
    }
    break;
  case KM_WAIT:
    o = opts(s->waiter, rt_scaled_ms(60000), 30000);
    rc = rlock_lock_acquire_async(s->lw, &o, lt_done, &s->got, NULL);
    break;
  case KM_RIDE:
    s->ride_us = rt_now_us();
    o = opts(s->rider, rt_scaled_ms(20000), 10000);
    rc = rlock_lock_acquire_async(s->lr, &o, lt_done, &s->rode, NULL);
    break;
  case KM_RELEASE:
    s->release_us = rt_now_us();
    rc = rlock_lock_release_async(s->lh, s->holder, lt_done, &s->rel);
    if (rc == RLOCK_OK && atomic_load(&s->rode.done) && s->rode.rc == RLOCK_OK)
      rc = rlock_lock_release_async(s->lr, s->rider, lt_done, &s->relr);
    break;
  case KM_RELEASE_WAITER:
    rc = rlock_lock_release_async(s->lw, s->waiter, lt_done, &s->relw);
    break;
  case LT_STOP:
    rlock_lock_free(s->lh);
    rlock_lock_free(s->lw);
    rlock_lock_free(s->lr);
    rlock_client_free(s->h);
    rlock_client_free(s->w);
    rlock_client_free(s->r);
    break;
  }
  if (rc != RLOCK_OK)
    lt_fail(x, "command %d: %s", cmd, rlock_error_last()->message);
}

static bool pred_promoted(void *arg, char *why, size_t cap) {
  int rep = *(int *)arg;
  snprintf(why, cap, "node %d is not a master yet", rep);
  return rt_cluster_is_master(cl, rep);
}

/* The case's names and its loop thread, kept where a failed case leaves
 * them to the teardown. */
static killed km;
static lt km_x;
static char km_name[64], km_ride[64];

/* A holder (watchdog) on master k and a waiter subscribed for it, with
 * the hold on the replica `rep` already (WAIT answered). */
static void km_hold_and_wait(int k, int rep) {
  rt_cluster_key_on(cl, k, kind == UV ? "lc:kill:uv:" : "lc:kill:ev:", km_name,
                    sizeof km_name);
  rt_cluster_key_on(cl, k, kind == UV ? "lc:ride:uv:" : "lc:ride:ev:", km_ride,
                    sizeof km_ride);
  km = (killed){.name = km_name, .ride = km_ride, .wd = 10000};
  km.holder = rlock_owner_new();
  km.waiter = rlock_owner_new();
  km.rider = rlock_owner_new();
  url_of(km.url, sizeof km.url, NULL);
  lt_res *rs[] = {&km.held, &km.got, &km.rel, &km.relw, &km.rode, &km.relr};
  for (int i = 0; i < 6; i++)
    lt_res_reset(rs[i]);
  lt_start(&km_x, killed_fn, &km);
  lt_wait_ok(&km.held, 10000, "the holder");
  assert_int_equal(first_int(rep, "READONLY", "EXISTS", km_name), 1);
  lt_do(&km_x, KM_WAIT);
  char ch[128];
  snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", km_name);
  subs_want want = {ch, 1, k, -1, 1};
  rt_wait_until(pred_subs, &want, rt_scaled_ms(10000),
                "the waiter's subscription");
}

/* kill -9 of master k and a call begun right after with a 20 s wait: it
 * gets its lock on `rep` once that took over. */
static void km_kill(int k, int rep) {
  int64_t kill_us = rt_now_us();
  rt_server_kill(node(k));
  lt_do(&km_x, KM_RIDE);
  rt_wait_until(pred_promoted, &rep, rt_scaled_ms(30000), "the failover");
  rt_cluster_wait_ok(cl, rt_scaled_ms(30000));
  report("kill -9 to the cluster ok again",
         (double)(rt_now_us() - kill_us) / 1000.0);
  lt_wait_ok(&km.rode, 25000, "an acquisition begun at the kill");
  report("kill -9 to the lock of a call waiting through the failover",
         (double)(km.rode.at_us - kill_us) / 1000.0);
  assert_int_equal(rt_cluster_slot_owner(cl, rt_cluster_slot_of(km_name)), rep);
  assert_int_equal(exists_on(rep, km_ride), 1);
}

/* The hold, replicated before the kill and leased for 10 s, outlives a
 * failover of a few seconds: it is renewed on `rep` for its holder (the
 * blocking client's test_cluster asks the same), never reported lost. */
static void km_renewed(int rep) {
  char field[RLOCK_OWNER_MAX];
  field_of(km.h, km.holder, field);
  long long before = rt_cmd_int(node(rep), "PTTL %s", km_name), now = before;
  int64_t end = rt_now_ms() + rt_scaled_ms(km.wd / 3 + 5000);
  while (now <= before || fx_hget(node(rep), km_name, field) != 1) {
    if (atomic_load(&km.lost) != 0)
      fail_msg("%s was reported lost after the failover: its renewals did "
               "not reach node %d within its 10 s lease",
               km_name, rep);
    if (rt_now_ms() > end)
      fail_msg("%s not renewed for its holder on node %d (PTTL %lld)", km_name,
               rep, now);
    before = now > before ? now : before;
    rt_sleep_ms(20); /* sampling */
    now = rt_cmd_int(node(rep), "PTTL %s", km_name);
  }
}

/* The holder lets go: the waiter, subscribed on the new master by now,
 * is woken by the release. */
static void km_release(int k, int rep) {
  char ch[128];
  snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", km_name);
  assert_int_equal(atomic_load(&km.got.done), 0);
  subs_waiting moved = {{ch, 1, rep, k, 1}, &km.got};
  rt_wait_until(pred_subs_waiting, &moved, rt_scaled_ms(10000),
                "the waiter's subscription on the new master");
  lt_do(&km_x, KM_RELEASE);
  lt_wait_ok(&km.rel, 10000, "the holder's release");
  lt_wait_ok(&km.got, 10000, "the waiter (10 s after the release)");
  double woke = (double)(km.got.at_us - km.release_us) / 1000.0;
  report("wake-up after a kill -9 failover (holder's lease 10 s)", woke);
  ASSERT_BETWEEN((int64_t)woke, 0, 2000);
  lt_do(&km_x, KM_RELEASE_WAITER);
  lt_wait_ok(&km.relw, 10000, "the waiter's release");
}

/* kill -9 of the master holding a lock (watchdog, 10 s) that a waiter on
 * another loop client waits for (60 s): the hold, replicated before the
 * kill (WAIT), survives on the promoted replica and is renewed there; the
 * waiter rides the failover out and is woken by the release; a call begun right
 * after the kill with a 20 s wait gets its lock once the replica took over. The
 * loop never blocks meanwhile. */
static void test_kill_master(void **state) {
  (void)state;
  int ms[16], n = live_masters(ms), k = -1, rep = -1;
  for (int i = n - 1; i >= 0 && k < 0; i--)
    if ((rep = rt_cluster_replica_of(cl, ms[i])) >= 0)
      k = ms[i];
  assert_true(k >= 0);
  km_hold_and_wait(k, rep);
  lt_measure_from_now(&km_x);
  km_kill(k, rep);
  km_renewed(rep);
  km_release(k, rep);
  int64_t late = lt_stop(&km_x);
  lt_check_responsive(&km_x, late, "kill -9 of a cluster master");
  /* The killed node comes back as a replica: the cluster is whole. */
  rt_server_start_again(node(k));
  rt_cluster_wait_ok(cl, rt_scaled_ms(30000));
}

/* ---- the groups ------------------------------------------------------------
 */

/* ---- the unlock latch: a release whose reply is lost ----------------------
 */

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

/* As test_cluster's: the master stopped with a lock held twice, the
 * release times out on the loop (its connection failed, its bytes left in
 * the master's socket), the master goes on, the repeat is answered from
 * the latch: RLOCK_OK, one level gone although the script ran more than
 * once, and then no latch key left. */
static void test_latch_replays_lost_reply(void **state) {
  (void)state;
  int m = is_live_master(1) ? 1 : 0;
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  char url[1024];
  OK(rlock_config_set_url(cfg, url_of(url, sizeof url, NULL)));
  OK(rlock_config_set_connect_timeout_ms(cfg, rt_scaled_ms(2000)));
  OK(rlock_config_set_command_timeout_ms(cfg, 300));
  OK(rlock_config_set_replica_sync_timeout_ms(cfg, 200));
  rlock_client *c = loop_client_cfg(cfg);
  rlock_config_free(cfg);
  char name[64], field[RLOCK_OWNER_MAX];
  rt_cluster_key_on(cl, m, "lc:latch:lost:", name, sizeof name);
  rlock_lock *l = fx_lock(c, name);
  uint64_t me = rlock_owner_new();
  field_of(c, me, field);
  OK(acquire(l, me, 0, 60000));
  OK(acquire(l, me, 0, 60000));
  assert_int_equal(fx_hget(node(m), name, field), 2);
  long long scripts0 = calls_on(m, "evalsha") + calls_on(m, "eval");
  rlock_stats st;
  OK(rlock_client_stats(c, &st, sizeof st));
  dropped d = {c, st.disconnects};
  rt_server_freeze(node(m));
  result r = {0};
  OK(rlock_lock_release_async(l, me, on_done, &r));
  run_until_pred(pred_dropped, &d, 5000, "the release's first try to fail");
  rt_server_thaw(node(m));
  run_until(&r.done, 1, 10000, "the release");
  if (r.rc != RLOCK_OK)
    fail_msg("release: %d %s", r.rc, r.msg);
  long long runs = calls_on(m, "evalsha") + calls_on(m, "eval") - scripts0;
  printf("[   INFO   ] the master ran the release script %lld times\n", runs);
  assert_true(runs >= 2);
  assert_int_equal(fx_hget(node(m), name, field), 1);
  latch_gone g = {m, name, 0};
  run_until_pred(pred_latch_gone, &g, 5000,
                 "the replayed release's latch deleted");
  OK(release(l, me));
  assert_int_equal(exists_on(m, name), 0);
  run_until_pred(pred_latch_gone, &g, 5000, "the last latch deleted");
  rlock_lock_free(l);
  loop_free(c);
}

static int setup(void **state) {
  (void)state;
  if (cl == NULL) {
    int64_t t0 = rt_now_ms();
    cl = rt_cluster_start(3, 1);
    printf("[   TIME   ] cluster start, 3 masters + 3 replicas: %lld ms\n",
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
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_master),
      cmocka_unit_test(test_latch_replays_lost_reply),
      cmocka_unit_test(test_wake_classic),
      cmocka_unit_test(test_wake_sharded),
      cmocka_unit_test(test_wake_auto),
      cmocka_unit_test(test_migration_during_hold),
      cmocka_unit_test(test_migration_during_wait),
      cmocka_unit_test(test_kill_master),
  };
  if (getenv("RLOCK_TEST_FILTER") != NULL)
    cmocka_set_test_filter(getenv("RLOCK_TEST_FILTER"));
  int failed = 0;
  kind = UV;
  failed += cmocka_run_group_tests_name("libuv", tests, setup, teardown);
  kind = EV;
  failed += cmocka_run_group_tests_name("libevent", tests, setup, teardown);
  rt_cluster_free(cl);
  return failed;
}
