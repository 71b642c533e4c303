/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: Redisson's synchronisers (rlock/semaphore.h, rlock/latch.h)
 * on a single server, on a Redis Cluster with sharded pub/sub and behind
 * Sentinel (with its replica frozen: replica confirmation), each case on a
 * blocking client and on libuv and libevent loop clients (drivers.h).
 *
 * Interop: the Java side is played by small scripts written here from the
 * behaviour Redisson documents and its wire format (docs/PROTOCOL.md):
 * they write the same keys and publish the same messages as Redisson's
 * release, count-down and permit release, and a "Java" waiter is a plain
 * connection subscribed to the kind's channel, which then takes its
 * permit as Redisson's tryAcquire does. So a Java-side write wakes a C
 * waiter, and a C write wakes a Java-style waiter, on both topologies.
 */
#include "drivers.h"

#include <stdatomic.h>
#include <time.h>

#include "rt_cluster.h"
#include "rt_sentinel.h"

static rt_cluster *cl;
static rt_sentinel_group *grp;
/* The topology the case runs on: the cluster (topo), Sentinel's group
 * (sen), or neither: the single server. */
static rt_cluster *topo;
static rt_sentinel_group *sen;

/* ---- where things are ------------------------------------------------------
 */

static rt_server *node_of(const char *key) {
  if (sen != NULL)
    return rt_sentinel_master(sen);
  if (topo == NULL)
    return srv;
  return rt_cluster_node(topo,
                         rt_cluster_slot_owner(topo, rt_cluster_slot_of(key)));
}

/* GET of a count, as a number (0 when absent). */
static long long get_count(const char *key) {
  redisReply *r = rt_cmd(node_of(key), "GET %s", key);
  long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
  freeReplyObject(r);
  return v;
}

static rlock_client *client(int64_t watchdog, rlock_lost_fn lost, void *ud) {
  char url[1024];
  if (sen != NULL)
    return dk_client(rt_sentinel_url(sen), watchdog, lost, ud);
  if (topo == NULL)
    return dk_client(rt_server_url(srv), watchdog, lost, ud);
  snprintf(url, sizeof url, "%s?pubsub=sharded", rt_cluster_url(topo));
  return dk_client(url, watchdog, lost, ud);
}

static const char *publish_cmd(void) {
  return topo == NULL ? "PUBLISH" : "SPUBLISH";
}

/* Subscribers of `channel` where the case's clients subscribe it. */
static bool pred_subscribed(void *arg, char *why, size_t cap) {
  const char *channel = arg;
  long long n = fx_subscribers_of(node_of(channel), topo != NULL, channel);
  snprintf(why, cap, "%lld subscribers of %s", n, channel);
  return n >= 1;
}

static void wait_subscribed(const char *channel) {
  dk_wait(pred_subscribed, (void *)channel, 5000, "a waiter subscribed");
}

/* ---- calls, synchronous on every driver ---------------------------------- */

/* A call answered by dk_on_cb (its argument the sk: `cb` comes first),
 * or by sk_permit_cb. */
typedef struct sk {
  dk_cb cb;
  char id[RLOCK_PERMIT_ID_LEN + 1];
  pthread_t thread;
  void *obj;
  int64_t arg, wait;
} sk;

static void sk_permit_cb(void *arg, int rc, const char *id) {
  sk *k = arg;
  if (id != NULL)
    snprintf(k->id, sizeof k->id, "%s", id);
  dk_on_cb(arg, rc, 0);
}

/* A loop call's answer: `rc` is what the _async call returned. */
static int sk_wait(sk *k, int rc) {
  return dk_cb_wait(&k->cb, rc, 15000 + (k->wait > 0 ? k->wait : 0),
                    "an answer");
}

/* SYNC_CALL's `out_` for the calls that give no value. */
static int64_t *const none = NULL;

/* Each: the blocking call, or the _async call answered. */
#define SYNC_CALL(out_, blocking, async_call)                                  \
  do {                                                                         \
    if (!dk_loop())                                                            \
      return (blocking);                                                       \
    sk k_ = {0};                                                               \
    int rc_ = sk_wait(&k_, (async_call));                                      \
    if (rc_ == RLOCK_OK && (out_) != NULL)                                     \
      *(out_) = k_.cb.value;                                                   \
    return rc_;                                                                \
  } while (0)

static int s_acquire(rlock_semaphore *s, int64_t n, int64_t wait) {
  SYNC_CALL(none, rlock_semaphore_acquire(s, n, wait, NULL),
            rlock_semaphore_acquire_async(s, n, wait, dk_on_cb, &k_, NULL));
}
static int s_release(rlock_semaphore *s, int64_t n) {
  SYNC_CALL(none, rlock_semaphore_release(s, n),
            rlock_semaphore_release_async(s, n, dk_on_cb, &k_));
}
static int s_try_set(int64_t *set, rlock_semaphore *s, int64_t n) {
  int flag = 0;
  if (!dk_loop()) {
    int rc = rlock_semaphore_try_set_permits(&flag, s, n);
    *set = flag;
    return rc;
  }
  SYNC_CALL(set, 0, rlock_semaphore_try_set_permits_async(s, n, dk_on_cb, &k_));
}
static int s_set(rlock_semaphore *s, int64_t n) {
  SYNC_CALL(none, rlock_semaphore_set_permits(s, n),
            rlock_semaphore_set_permits_async(s, n, dk_on_cb, &k_));
}
static int s_add(rlock_semaphore *s, int64_t d) {
  SYNC_CALL(none, rlock_semaphore_add_permits(s, d),
            rlock_semaphore_add_permits_async(s, d, dk_on_cb, &k_));
}
static int s_available(int64_t *n, rlock_semaphore *s) {
  SYNC_CALL(n, rlock_semaphore_available(n, s),
            rlock_semaphore_available_async(s, dk_on_cb, &k_));
}
static int s_drain(int64_t *n, rlock_semaphore *s) {
  SYNC_CALL(n, rlock_semaphore_drain(n, s),
            rlock_semaphore_drain_async(s, dk_on_cb, &k_));
}

static int p_acquire(char *id, rlock_psemaphore *s, int64_t wait,
                     int64_t lease) {
  if (!dk_loop())
    return rlock_psemaphore_acquire(id, s, wait, lease, NULL);
  sk k = {0};
  k.wait = wait;
  int rc = sk_wait(&k, rlock_psemaphore_acquire_async(s, wait, lease,
                                                      sk_permit_cb, &k, NULL));
  if (rc == RLOCK_OK)
    snprintf(id, RLOCK_PERMIT_ID_LEN + 1, "%s", k.id);
  return rc;
}
static int p_release(rlock_psemaphore *s, const char *id) {
  SYNC_CALL(none, rlock_psemaphore_release(s, id),
            rlock_psemaphore_release_async(s, id, dk_on_cb, &k_));
}
static int p_update(rlock_psemaphore *s, const char *id, int64_t lease) {
  SYNC_CALL(none, rlock_psemaphore_update_lease(s, id, lease),
            rlock_psemaphore_update_lease_async(s, id, lease, dk_on_cb, &k_));
}
static int p_try_set(rlock_psemaphore *s, int64_t n) {
  SYNC_CALL(none, rlock_psemaphore_try_set_permits(NULL, s, n),
            rlock_psemaphore_try_set_permits_async(s, n, dk_on_cb, &k_));
}
static int p_set(rlock_psemaphore *s, int64_t n) {
  SYNC_CALL(none, rlock_psemaphore_set_permits(s, n),
            rlock_psemaphore_set_permits_async(s, n, dk_on_cb, &k_));
}
static int p_available(int64_t *n, rlock_psemaphore *s) {
  SYNC_CALL(n, rlock_psemaphore_available(n, s),
            rlock_psemaphore_available_async(s, dk_on_cb, &k_));
}
static int p_permits(int64_t *n, rlock_psemaphore *s) {
  SYNC_CALL(n, rlock_psemaphore_permits(n, s),
            rlock_psemaphore_permits_async(s, dk_on_cb, &k_));
}
static int p_lease(int64_t *n, rlock_psemaphore *s, const char *id) {
  SYNC_CALL(n, rlock_psemaphore_lease_ms(n, s, id),
            rlock_psemaphore_lease_ms_async(s, id, dk_on_cb, &k_));
}

typedef struct pk {
  dk_cb cb; /* first: the callback's argument is the pk */
  rlock_permits_info *info;
} pk;

static void pk_cb(void *arg, int rc, rlock_permits_info *info) {
  ((pk *)arg)->info = info;
  dk_on_cb(arg, rc, 0);
}

static int p_inspect(rlock_permits_info **out, rlock_psemaphore *s) {
  if (!dk_loop())
    return rlock_psemaphore_inspect(out, s);
  pk k = {0};
  int rc = dk_cb_wait(&k.cb, rlock_psemaphore_inspect_async(s, pk_cb, &k),
                      15000, "a snapshot");
  *out = k.info;
  return rc;
}

typedef struct p_check_arg {
  rlock_psemaphore *s;
  const char *id;
  int rc;
  char msg[256];
} p_check_arg;

static void p_check_fn(void *arg) {
  p_check_arg *a = arg;
  a->rc = rlock_psemaphore_check(a->s, a->id);
  snprintf(a->msg, sizeof a->msg, "%s", rlock_error_last()->message);
}

static int p_check(rlock_psemaphore *s, const char *id) {
  p_check_arg a = {s, id, 0, ""};
  dk_on_loop(p_check_fn, &a);
  if (a.rc != RLOCK_OK)
    rlock_loop_error(a.rc, a.msg);
  return a.rc;
}

static int l_try_set(rlock_latch *x, int64_t n) {
  SYNC_CALL(none, rlock_latch_try_set_count(NULL, x, n),
            rlock_latch_try_set_count_async(x, n, dk_on_cb, &k_));
}
static int l_down(rlock_latch *x) {
  SYNC_CALL(none, rlock_latch_count_down(x),
            rlock_latch_count_down_async(x, dk_on_cb, &k_));
}
static int l_count(int64_t *n, rlock_latch *x) {
  SYNC_CALL(n, rlock_latch_count(n, x),
            rlock_latch_count_async(x, dk_on_cb, &k_));
}
static int l_await(rlock_latch *x, int64_t wait) {
  SYNC_CALL(none, rlock_latch_await(x, wait, NULL),
            rlock_latch_await_async(x, wait, dk_on_cb, &k_, NULL));
}
static int l_delete(int64_t *deleted, rlock_latch *x) {
  int flag = 0;
  if (!dk_loop()) {
    int rc = rlock_latch_delete(&flag, x);
    *deleted = flag;
    return rc;
  }
  SYNC_CALL(deleted, 0, rlock_latch_delete_async(x, dk_on_cb, &k_));
}

/* ---- a wait in the background ------------------------------------------- */

enum { BG_SEM, BG_PSEM, BG_LATCH };

static void *bg_main(void *arg) {
  sk *k = arg;
  int rc;
  if (k->arg == BG_SEM)
    rc = rlock_semaphore_acquire(k->obj, 1, k->wait, NULL);
  else if (k->arg == BG_PSEM)
    rc = rlock_psemaphore_acquire(k->id, k->obj, k->wait, 5000, NULL);
  else
    rc = rlock_latch_await(k->obj, k->wait, NULL);
  dk_on_cb(k, rc, 0);
  return NULL;
}

/* Start a wait of `what` on `obj`: a thread (blocking) or the loop. */
static void bg_start(sk *k, int what, void *obj, int64_t wait) {
  *k = (sk){0};
  k->obj = obj;
  k->arg = what;
  k->wait = wait;
  if (!dk_loop()) {
    assert_int_equal(pthread_create(&k->thread, NULL, bg_main, k), 0);
    return;
  }
  if (what == BG_SEM)
    OK(rlock_semaphore_acquire_async(obj, 1, wait, dk_on_cb, k, NULL));
  else if (what == BG_PSEM)
    OK(rlock_psemaphore_acquire_async(obj, wait, 5000, sk_permit_cb, k, NULL));
  else
    OK(rlock_latch_await_async(obj, wait, dk_on_cb, k, NULL));
}

static int bg_end(sk *k) {
  int rc = dk_cb_wait(&k->cb, RLOCK_OK, 10000, "the background wait");
  if (!dk_loop())
    pthread_join(k->thread, NULL);
  return rc;
}

/* ---- the Java side ------------------------------------------------------- */
/* Scripts doing what Redisson's do to the keys and channels (PROTOCOL.md),
 * run on the node that owns the key. */

/* RSemaphore.release(n): add, publish the new count. */
static const char *JAVA_SEM_RELEASE = "return redis.call(ARGV[2], KEYS[2], "
                                      "redis.call('incrby', KEYS[1], ARGV[1]))";
/* RSemaphore.tryAcquire(n): take when enough, 1; else 0. */
static const char *JAVA_SEM_TRY =
    "local have = tonumber(redis.call('get', KEYS[1]) or '0') "
    "if have < tonumber(ARGV[1]) then return 0 end "
    "redis.call('decrby', KEYS[1], ARGV[1]) return 1";
/* RCountDownLatch.countDown(): one down; at zero gone and "0" told. */
static const char *JAVA_LATCH_DOWN =
    "local left = redis.call('decr', KEYS[1]) "
    "if left <= 0 then redis.call('del', KEYS[1]) end "
    "if left == 0 then redis.call(ARGV[1], KEYS[2], 0) end";
/* RPermitExpirableSemaphore.release(id): the permit's 16 bytes out of
 * the timeout set, one more available, the count published. */
static const char *JAVA_PSEM_RELEASE =
    "local raw = string.gsub(ARGV[1], '..', function(h) "
    "return string.char(tonumber(h, 16)) end) "
    "if redis.call('zrem', KEYS[3], raw) ~= 1 then return 0 end "
    "redis.call(ARGV[2], KEYS[2], redis.call('incrby', KEYS[1], 1)) "
    "return 1";

/* RPermitExpirableSemaphore.tryAcquire(1 permit, lease): give back at
 * most as many expired permits as it takes (one), publishing the new count
 * when positive; then, with a permit available, DECRBY 1, ZADD the id's
 * 16 bytes at the deadline, and give the timeout set NAME's TTL when it
 * has one: 1; else 0. KEYS name, timeout set, channel; ARGV deadline, now,
 * id (hex), publish command. */
static const char *JAVA_PSEM_ACQUIRE =
    "local raw = string.gsub(ARGV[3], '..', function(h) "
    "return string.char(tonumber(h, 16)) end) "
    "local gone = redis.call('zrangebyscore', KEYS[2], 0, ARGV[2], 'limit', "
    "0, 1) "
    "if #gone > 0 then redis.call('zrem', KEYS[2], unpack(gone)) "
    "local v = redis.call('incrby', KEYS[1], #gone) "
    "if v > 0 then redis.call(ARGV[4], KEYS[3], v) end end "
    "local have = redis.call('get', KEYS[1]) "
    "if have == false or tonumber(have) < 1 then return 0 end "
    "redis.call('decrby', KEYS[1], 1) "
    "redis.call('zadd', KEYS[2], ARGV[1], raw) "
    "local ttl = redis.call('pttl', KEYS[1]) "
    "if ttl > 0 then redis.call('pexpire', KEYS[2], ttl) end "
    "return 1";

static long long java_eval(const char *key, const char *script, int nkeys,
                           const char *const *keys, int nargs,
                           const char *const *args) {
  const char *argv[16];
  char n[8];
  int argc = 0;
  snprintf(n, sizeof n, "%d", nkeys);
  argv[argc++] = "EVAL";
  argv[argc++] = script;
  argv[argc++] = n;
  for (int i = 0; i < nkeys; i++)
    argv[argc++] = keys[i];
  for (int i = 0; i < nargs; i++)
    argv[argc++] = args[i];
  redisReply *r = rt_cmd_argv(node_of(key), argc, argv, NULL);
  if (r->type == REDIS_REPLY_ERROR)
    fail_msg("the Java-side script failed: %s", r->str);
  long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
  freeReplyObject(r);
  return v;
}

/* A Java-style waiter: a connection subscribed to `channel`. */
static redisContext *java_subscribe(const char *channel) {
  redisContext *ctx = rt_server_connect(node_of(channel));
  redisReply *r =
      redisCommand(ctx, "%s %s", topo ? "SSUBSCRIBE" : "SUBSCRIBE", channel);
  assert_non_null(r);
  freeReplyObject(r);
  struct timeval tv = {rt_scaled_ms(5000) / 1000, 0};
  redisSetTimeout(ctx, tv);
  return ctx;
}

/* The next message's payload, as a number. */
static long long java_message(redisContext *ctx) {
  redisReply *r = NULL;
  if (redisGetReply(ctx, (void **)&r) != REDIS_OK || r == NULL)
    fail_msg("the Java-style waiter got no message");
  assert_int_equal(r->type, REDIS_REPLY_ARRAY);
  assert_int_equal(r->elements, 3);
  long long v = atoll(r->element[2]->str);
  freeReplyObject(r);
  redisFree(ctx);
  return v;
}

/* ---- names ------------------------------------------------------------------
 */

static void fresh(char *buf, size_t size, const char *what) {
  static int seq;
  snprintf(buf, size, "sync-%s-%s-%d%d-%d", what, dk_name(), topo != NULL,
           sen != NULL, ++seq);
}

enum { NAME_LEN = 128, KEY_LEN = 160 };

/* A case's start: a fresh name for `tag` in `name` (NAME_LEN bytes), and
 * a client (no watchdog) where the case's topology is; with `channel` or
 * `tkey` (KEY_LEN bytes) not NULL, the semaphores' channel and the
 * permits' timeout set of that name. */
static rlock_client *case_open(char *name, char *channel, char *tkey,
                               const char *tag) {
  fresh(name, NAME_LEN, tag);
  if (channel != NULL)
    snprintf(channel, KEY_LEN, "redisson_sc:{%s}", name);
  if (tkey != NULL)
    snprintf(tkey, KEY_LEN, "{%s}:timeout", name);
  return client(0, NULL, NULL);
}

/* ---- the semaphore
 * ------------------------------------------------------------ */

static void test_semaphore_basics(void **state) {
  (void)state;
  char name[NAME_LEN];
  rlock_client *c = case_open(name, NULL, NULL, "sem");
  rlock_semaphore *s;
  OK(rlock_semaphore_new(&s, c, name));
  int64_t v = -1;
  OK(s_try_set(&v, s, 2));
  assert_int_equal(v, 1);
  OK(s_try_set(&v, s, 5));
  assert_int_equal(v, 0); /* set already: left as it was */
  OK(s_acquire(s, 1, 0));
  RC(s_acquire(s, 2, 0), RLOCK_ELOCKED);
  assert_non_null(strstr(rlock_error_last()->message, name));
  OK(s_available(&v, s));
  assert_int_equal(v, 1);
  OK(s_release(s, 3));
  OK(s_drain(&v, s));
  assert_int_equal(v, 4);
  OK(s_add(s, -2));
  OK(s_available(&v, s));
  assert_int_equal(v, -2); /* Redisson lets addPermits go below zero */
  OK(s_set(s, 7));
  assert_int_equal(get_count(name), 7);
  /* A TTL (Java's trySetPermits(n, ttl)) survives a release, as with
   * Redisson's INCRBY. */
  rt_cmd_int(node_of(name), "PEXPIRE %s 60000", name);
  OK(s_release(s, 1));
  ASSERT_RANGE(rt_cmd_int(node_of(name), "PTTL %s", name), 1, 60000);
  OK(s_set(s, 7));
  /* Bad input: refused, nothing written. */
  RC(s_acquire(s, 0, 0), RLOCK_EINVAL);
  RC(s_release(s, -1), RLOCK_EINVAL);
  RC(s_add(s, 0), RLOCK_EINVAL);
  RC(s_set(s, RLOCK_MAX_PERMITS + 1), RLOCK_EINVAL);
  RC(s_release(s, RLOCK_MAX_PERMITS), RLOCK_EINVAL);
  assert_int_equal(get_count(name), 7);
  rlock_semaphore_free(s);
  dk_free(c);
}

/* A lock's hash, a list or a string that is no count at a semaphore's or
 * latch's name: refused, untouched. */
static void test_foreign_keys(void **state) {
  (void)state;
  char name[128], latch[128];
  fresh(name, sizeof name, "foreign");
  fresh(latch, sizeof latch, "foreign-latch");
  rlock_client *c = client(0, NULL, NULL);
  rlock_semaphore *s;
  rlock_psemaphore *p;
  rlock_latch *x;
  OK(rlock_semaphore_new(&s, c, name));
  OK(rlock_psemaphore_new(&p, c, name));
  OK(rlock_latch_new(&x, c, name));
  rt_cmd_int(node_of(name), "HSET %s owner:1 1", name);
  rt_cmd_int(node_of(name), "PEXPIRE %s 60000", name);
  RC(s_acquire(s, 1, 0), RLOCK_EWRONGTYPE);
  RC(s_release(s, 1), RLOCK_EWRONGTYPE);
  assert_non_null(strstr(rlock_error_last()->message, "hash"));
  char id[RLOCK_PERMIT_ID_LEN + 1];
  RC(p_acquire(id, p, 0, 1000), RLOCK_EWRONGTYPE);
  RC(l_down(x), RLOCK_EWRONGTYPE);
  assert_int_equal(fx_hget(node_of(name), name, "owner:1"), 1);
  /* A semaphore name used by a lock: the lock refuses it too. */
  rt_cmd_int(node_of(name), "DEL %s", name);
  rt_cmd_ok(node_of(name), "SET %s 3", name);
  rlock_lock *l = fx_lock(c, name);
  RC(dk_acquire(l, dk_me(), 0, 1000), RLOCK_EWRONGTYPE);
  rlock_lock_free(l);
  rt_cmd_ok(node_of(name), "SET %s many", name);
  RC(s_acquire(s, 1, 0), RLOCK_EWRONGTYPE);
  RC(l_await(x, 0), RLOCK_EWRONGTYPE);
  /* The timeout set of a permit-expirable semaphore. */
  rt_cmd_ok(node_of(name), "SET %s 3", name);
  char tkey[160];
  snprintf(tkey, sizeof tkey, "{%s}:timeout", name);
  rt_cmd_int(node_of(name), "RPUSH %s x", tkey);
  RC(p_acquire(id, p, 0, 1000), RLOCK_EWRONGTYPE);
  assert_int_equal(get_count(name), 3);
  /* A permit id that is not one. */
  RC(p_release(p, "xyz"), RLOCK_EINVAL);
  RC(rlock_psemaphore_release(NULL, id), RLOCK_EINVAL);
  rlock_semaphore_free(s);
  rlock_psemaphore_free(p);
  rlock_latch_free(x);
  dk_free(c);
}

/* A waiter woken by a Java-side release, and a Java-style waiter woken
 * by this library's. */
static void test_semaphore_interop(void **state) {
  (void)state;
  char name[NAME_LEN], channel[KEY_LEN];
  rlock_client *c = case_open(name, channel, NULL, "semx");
  rlock_semaphore *s;
  OK(rlock_semaphore_new(&s, c, name));
  OK(s_set(s, 0));
  sk w;
  bg_start(&w, BG_SEM, s, 20000);
  wait_subscribed(channel);
  int64_t t0 = rt_now_ms();
  const char *keys[] = {name, channel};
  const char *args[] = {"1", publish_cmd()};
  java_eval(name, JAVA_SEM_RELEASE, 2, keys, 2, args);
  OK(bg_end(&w));
  dk_report("Java release -> C waiter holds", (double)(rt_now_ms() - t0));
  assert_int_equal(get_count(name), 0);
  /* The other way. */
  redisContext *java = java_subscribe(channel);
  OK(s_release(s, 2));
  assert_int_equal(java_message(java), 2);
  const char *two[] = {"2"};
  assert_int_equal(java_eval(name, JAVA_SEM_TRY, 1, keys, 1, two), 1);
  rlock_semaphore_free(s);
  dk_free(c);
}

typedef struct cancel_arg {
  const char *channel;
  rlock_cancel *tok;
} cancel_arg;

static void *fire_when_waiting(void *arg) {
  cancel_arg *a = arg;
  rt_wait_until(pred_subscribed, (void *)a->channel, rt_scaled_ms(5000),
                "the waiter subscribed");
  rlock_cancel_fire(a->tok);
  return NULL;
}

/* A wait ends when its cancel token fires (blocking) or when it is
 * canceled (rlock_op_cancel, loop): RLOCK_ECANCELED, nothing taken. */
static void test_cancel(void **state) {
  (void)state;
  char name[NAME_LEN], channel[KEY_LEN];
  rlock_client *c = case_open(name, channel, NULL, "cancel");
  rlock_semaphore *s;
  OK(rlock_semaphore_new(&s, c, name));
  OK(s_set(s, 0));
  int64_t t0 = rt_now_ms();
  if (!dk_loop()) { /* fired by another thread while it waits */
    cancel_arg a = {.channel = channel};
    OK(rlock_cancel_new(&a.tok));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fire_when_waiting, &a), 0);
    RC(rlock_semaphore_acquire(s, 1, 20000, a.tok), RLOCK_ECANCELED);
    pthread_join(t, NULL);
    rlock_cancel_free(a.tok);
  } else {
    sk k = {0};
    rlock_op *op;
    OK(rlock_semaphore_acquire_async(s, 1, 20000, dk_on_cb, &k, &op));
    wait_subscribed(channel);
    OK(rlock_op_cancel(op));
    RC(sk_wait(&k, RLOCK_OK), RLOCK_ECANCELED);
  }
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 5000);
  OK(s_release(s, 1));
  int64_t v = 0;
  OK(s_available(&v, s));
  assert_int_equal(v, 1); /* nothing was taken */
  rlock_semaphore_free(s);
  dk_free(c);
}

/* ---- the permit-expirable semaphore
 * ------------------------------------------- */

static void test_psemaphore_basics(void **state) {
  (void)state;
  char name[NAME_LEN], tkey[KEY_LEN];
  rlock_client *c = case_open(name, NULL, tkey, "psem");
  rlock_psemaphore *p;
  OK(rlock_psemaphore_new(&p, c, name));
  OK(p_try_set(p, 1));
  char a[RLOCK_PERMIT_ID_LEN + 1], b[RLOCK_PERMIT_ID_LEN + 1];
  OK(p_acquire(a, p, 0, 600));
  assert_int_equal(strlen(a), RLOCK_PERMIT_ID_LEN);
  assert_int_equal(strspn(a, "0123456789abcdef"), RLOCK_PERMIT_ID_LEN);
  /* Redisson's form: the id's 16 bytes in the timeout set. */
  assert_int_equal(rt_cmd_int(node_of(name), "ZCARD %s", tkey), 1);
  redisReply *r = rt_cmd(node_of(name), "ZRANGE %s 0 0", tkey);
  assert_int_equal(r->element[0]->len, 16);
  freeReplyObject(r);
  int64_t v = 0;
  OK(p_lease(&v, p, a));
  assert_true(v > 0 && v <= 600);
  RC(p_acquire(b, p, 0, 1000), RLOCK_ELOCKED);
  OK(p_check(p, a));
  rlock_permits_info *info = NULL;
  OK(p_inspect(&info, p));
  assert_int_equal(rlock_permits_info_available(info), 0);
  assert_int_equal(rlock_permits_info_leased(info), 1);
  assert_int_equal(rlock_permits_info_count(info), 1);
  assert_string_equal(rlock_permits_info_id(info, 0), a);
  assert_true(rlock_permits_info_lease_ms(info, 0) > 0 &&
              rlock_permits_info_lease_ms(info, 0) <= 600);
  assert_null(rlock_permits_info_id(info, 1));
  rlock_permits_info_free(info);
  /* A waiter gets the permit once the lease runs out (no message). */
  int64_t t0 = rt_now_ms();
  OK(p_acquire(b, p, 5000, 5000));
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 3000);
  RC(p_check(p, a), RLOCK_ELOST);
  RC(p_release(p, a), RLOCK_ELOST);
  OK(p_permits(&v, p));
  assert_int_equal(v, 1);
  OK(p_update(p, b, 60000));
  OK(p_lease(&v, p, b));
  assert_true(v > 50000);
  OK(p_release(p, b));
  RC(p_release(p, b), RLOCK_ENOTHELD);
  RC(p_release(p, "0123456789abcdef0123456789abcdef"), RLOCK_ENOTHELD);
  OK(p_available(&v, p));
  assert_int_equal(v, 1);
  OK(p_set(p, 3));
  OK(p_available(&v, p));
  assert_int_equal(v, 3);
  rlock_psemaphore_free(p);
  dk_free(c);
}

static atomic_int lost_calls;
static char lost_owner[64];

static void on_lost(const char *name, const char *owner, void *ud) {
  (void)name, (void)ud;
  snprintf(lost_owner, sizeof lost_owner, "%s", owner);
  atomic_fetch_add(&lost_calls, 1);
}

static bool pred_lost(void *arg, char *why, size_t cap) {
  (void)arg;
  snprintf(why, cap, "%d lost calls", atomic_load(&lost_calls));
  return atomic_load(&lost_calls) > 0;
}

/* The watchdog keeps a permit past several leases; deleted, it is told
 * lost as a lock is. */
static void test_psemaphore_watchdog(void **state) {
  (void)state;
  char name[128];
  fresh(name, sizeof name, "psemwd");
  atomic_store(&lost_calls, 0);
  rlock_client *c = client(600, on_lost, NULL);
  rlock_psemaphore *p;
  OK(rlock_psemaphore_new(&p, c, name));
  OK(p_try_set(p, 1));
  char a[RLOCK_PERMIT_ID_LEN + 1];
  OK(p_acquire(a, p, 0, RLOCK_LEASE_WATCHDOG));
  dk_let_time_pass(1800); /* three leases */
  OK(p_check(p, a));
  int64_t v = 0;
  OK(p_lease(&v, p, a));
  assert_true(v > 0);
  OK(p_available(&v, p));
  assert_int_equal(v, 0);
  char tkey[160];
  snprintf(tkey, sizeof tkey, "{%s}:timeout", name);
  rt_cmd_int(node_of(name), "DEL %s", tkey);
  dk_wait(pred_lost, NULL, 5000, "the lost callback");
  assert_string_equal(lost_owner, a);
  RC(p_check(p, a), RLOCK_ELOST);
  RC(p_release(p, a), RLOCK_ELOST);
  rlock_psemaphore_free(p);
  dk_free(c);
}

static void test_psemaphore_interop(void **state) {
  (void)state;
  char name[NAME_LEN], channel[KEY_LEN], tkey[KEY_LEN];
  rlock_client *c = case_open(name, channel, tkey, "psemx");
  rlock_psemaphore *p;
  OK(rlock_psemaphore_new(&p, c, name));
  OK(p_try_set(p, 1));
  char a[RLOCK_PERMIT_ID_LEN + 1];
  OK(p_acquire(a, p, 0, 60000));
  sk w;
  bg_start(&w, BG_PSEM, p, 20000);
  wait_subscribed(channel);
  const char *keys[] = {name, channel, tkey};
  const char *args[] = {a, publish_cmd()};
  assert_int_equal(java_eval(name, JAVA_PSEM_RELEASE, 3, keys, 2, args), 1);
  OK(bg_end(&w));
  assert_int_equal(strlen(w.id), RLOCK_PERMIT_ID_LEN);
  /* this library's release wakes a Java-style waiter */
  redisContext *java = java_subscribe(channel);
  OK(p_release(p, w.id));
  assert_int_equal(java_message(java), 1);
  RC(p_release(p, a), RLOCK_ELOST); /* released by the Java side */
  rlock_psemaphore_free(p);
  dk_free(c);
}

/* A permit-expirable semaphore's stored state, one line: the count, the
 * timeout set (members in hex, scores), whether each key has a TTL. */
static void psem_state(const char *name, const char *tkey, char *out,
                       size_t cap) {
  size_t n =
      (size_t)snprintf(out, cap, "count=%lld ttl=%d set:", get_count(name),
                       rt_cmd_int(node_of(name), "PTTL %s", name) > 0);
  redisReply *r = rt_cmd(node_of(name), "ZRANGE %s 0 -1 WITHSCORES", tkey);
  for (size_t i = 0; i + 1 < r->elements && n < cap; i += 2) {
    n += (size_t)snprintf(out + n, cap - n, " ");
    for (size_t k = 0; k < r->element[i]->len && n < cap; k++)
      n += (size_t)snprintf(out + n, cap - n, "%02x",
                            (unsigned char)r->element[i]->str[k]);
    n += (size_t)snprintf(out + n, cap - n, "@%s", r->element[i + 1]->str);
  }
  freeReplyObject(r);
  if (n < cap)
    snprintf(out + n, cap - n, " set-ttl=%d",
             rt_cmd_int(node_of(name), "PTTL %s", tkey) > 0);
}

/* The payloads `ctx` (subscribed) was sent so far, space-separated: a
 * PING's answer comes after every message published before it. */
static void java_messages(redisContext *ctx, char *out, size_t cap) {
  size_t n = 0;
  out[0] = '\0';
  redisAppendCommand(ctx, "PING");
  for (;;) {
    redisReply *r = NULL;
    if (redisGetReply(ctx, (void **)&r) != REDIS_OK || r == NULL)
      fail_msg("the Java-style subscriber got no answer to PING");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    int pong = strcmp(r->element[0]->str, "pong") == 0;
    if (!pong && n < cap)
      n += (size_t)snprintf(out + n, cap - n, " %s", r->element[2]->str);
    freeReplyObject(r);
    if (pong)
      return;
  }
}

/* The hex of a 16-byte member, as a permit id. */
static void permit_hex(const char *raw, char *id) {
  for (int i = 0; i < 16; i++)
    snprintf(id + 2 * i, 3, "%02x", (unsigned char)raw[i]);
}

typedef struct psem_pair {
  char name[2][128], tkey[2][160], channel[2][160];
  redisContext *sub[2];
} psem_pair;

/* Both semaphores, this library's [0] and Java's [1], in the same state
 * and told the same messages since the last look. */
static void psem_same(psem_pair *p, const char *step) {
  char state[2][2048], msgs[2][256];
  for (int i = 0; i < 2; i++) {
    psem_state(p->name[i], p->tkey[i], state[i], sizeof state[i]);
    java_messages(p->sub[i], msgs[i], sizeof msgs[i]);
  }
  if (strcmp(state[0], state[1]) != 0 || strcmp(msgs[0], msgs[1]) != 0)
    fail_msg("%s: this library left %s, told [%s]; Redisson's scripts %s, "
             "told [%s]",
             step, state[0], msgs[0], state[1], msgs[1]);
}

/* This library's acquisition on [0] (a 60 s lease), then Redisson's with
 * the same id and the deadline this library wrote on [1]; the same after. */
static void both_acquire(psem_pair *p, rlock_psemaphore *ps, char *id,
                         const char *step) {
  OK(p_acquire(id, ps, 0, 60000));
  unsigned char raw[16];
  for (int i = 0; i < 16; i++)
    sscanf(id + 2 * i, "%2hhx", &raw[i]);
  redisReply *d =
      rt_cmd(node_of(p->name[0]), "ZSCORE %s %b", p->tkey[0], raw, sizeof raw);
  assert_int_equal(d->type, REDIS_REPLY_STRING);
  char now[24];
  snprintf(now, sizeof now, "%lld", (long long)time(NULL) * 1000);
  const char *keys[] = {p->name[1], p->tkey[1], p->channel[1]};
  const char *args[] = {d->str, now, id, publish_cmd()};
  assert_int_equal(java_eval(p->name[1], JAVA_PSEM_ACQUIRE, 3, keys, 4, args),
                   1);
  freeReplyObject(d);
  psem_same(p, step);
}

/* This library's release of `id` on [0] (answering `want`), then
 * Redisson's on [1]; the same after. */
static void both_release(psem_pair *p, rlock_psemaphore *ps, const char *id,
                         int want, const char *step) {
  RC(p_release(ps, id), want);
  const char *keys[] = {p->name[1], p->channel[1], p->tkey[1]};
  const char *args[] = {id, publish_cmd()};
  assert_int_equal(java_eval(p->name[1], JAVA_PSEM_RELEASE, 3, keys, 2, args),
                   1);
  psem_same(p, step);
}

/* Both copies of permit `id` given a deadline a second ago: a lease run
 * out, its deadline as many digits as now's. */
static void psem_run_out(psem_pair *p, const char *id) {
  unsigned char raw[16];
  for (int i = 0; i < 16; i++)
    sscanf(id + 2 * i, "%2hhx", &raw[i]);
  for (int i = 0; i < 2; i++)
    assert_int_equal(rt_cmd_int(node_of(p->name[i]), "ZADD %s XX CH %lld %b",
                                p->tkey[i], (long long)time(NULL) * 1000 - 1000,
                                raw, sizeof raw),
                     1);
}

/* The stored state after each of this library's scripts is what
 * Redisson's leave, started from the same state, and the messages are
 * Redisson's: an acquisition with two expired permits present (Redisson's
 * gives back one), a release with an expired permit of another's present
 * (Redisson's release purges nothing), the release of that expired permit,
 * the release of a permit whose lease ran out (lost: its deadline read as
 * a number of as many digits as now's), and the common pair: an
 * acquisition with none expired, its release.
 * For a plain name and for one with a {tag}, whose timeout set and
 * channel Redisson names without adding braces (the hot scripts make the
 * channel themselves). */
static void psem_redisson_state(int tagged) {
  psem_pair p;
  for (int i = 0; i < 2; i++) {
    char base[96];
    fresh(base, sizeof base, i == 0 ? "psemst-c" : "psemst-j");
    if (tagged) {
      snprintf(p.name[i], sizeof p.name[i], "t{%s}:sem", base);
      snprintf(p.tkey[i], sizeof p.tkey[i], "%s:timeout", p.name[i]);
      snprintf(p.channel[i], sizeof p.channel[i], "redisson_sc:%s", p.name[i]);
    } else {
      snprintf(p.name[i], sizeof p.name[i], "%s", base);
      snprintf(p.tkey[i], sizeof p.tkey[i], "{%s}:timeout", p.name[i]);
      snprintf(p.channel[i], sizeof p.channel[i], "redisson_sc:{%s}",
               p.name[i]);
    }
    rt_server *s = node_of(p.name[i]);
    rt_cmd_ok(s, "SET %s 0 PX 600000", p.name[i]);
    /* two expired permits, one without a lease (Redisson's marker) */
    assert_int_equal(rt_cmd_int(s, "ZADD %s 1000 %s 2000 %s 922337203685477 %s",
                                p.tkey[i], "expired-permit-1",
                                "expired-permit-2", "unleased-permit!"),
                     3);
    p.sub[i] = java_subscribe(p.channel[i]);
  }
  rlock_client *c = client(0, NULL, NULL);
  rlock_psemaphore *ps;
  OK(rlock_psemaphore_new(&ps, c, p.name[0]));
  char a[RLOCK_PERMIT_ID_LEN + 1], b[RLOCK_PERMIT_ID_LEN + 1];
  char expired[RLOCK_PERMIT_ID_LEN + 1];
  permit_hex("expired-permit-2", expired);
  both_acquire(&p, ps, a, "acquisition, two permits expired");
  both_release(&p, ps, a, RLOCK_OK, "release, another permit expired");
  both_release(&p, ps, expired, RLOCK_ENOTHELD, "release of an expired permit");
  both_acquire(&p, ps, a, "acquisition, its lease to run out");
  psem_run_out(&p, a);
  both_release(&p, ps, a, RLOCK_ELOST, "release after the lease ran out");
  both_acquire(&p, ps, b, "acquisition, none expired");
  both_release(&p, ps, b, RLOCK_OK, "release");
  for (int i = 0; i < 2; i++)
    redisFree(p.sub[i]);
  rlock_psemaphore_free(ps);
  dk_free(c);
}

static void test_psemaphore_redisson_state(void **state) {
  (void)state;
  psem_redisson_state(0);
  psem_redisson_state(1);
}

/* ---- the count-down latch
 * ------------------------------------------------------ */

/* Scripts a server ran since its CONFIG RESETSTAT (EVAL or EVALSHA). */
static long long scripts_run(rt_server *s) {
  return fx_calls(s, "eval") + fx_calls(s, "evalsha");
}

/* A waiter looked before it subscribed and once subscribed: asleep. */
static bool pred_two_looks(void *arg, char *why, size_t cap) {
  long long n = scripts_run(arg);
  snprintf(why, cap, "%lld scripts run, want 2", n);
  return n >= 2;
}

static void test_latch(void **state) {
  (void)state;
  char name[128], channel[200];
  fresh(name, sizeof name, "latch");
  snprintf(channel, sizeof channel, "redisson_countdownlatch__channel__{%s}",
           name);
  rlock_client *c = client(0, NULL, NULL);
  rlock_latch *x;
  OK(rlock_latch_new(&x, c, name));
  OK(l_await(x, 0)); /* absent: zero */
  RC(l_try_set(x, 0), RLOCK_EINVAL);
  OK(l_try_set(x, 2));
  int64_t v = 0;
  OK(l_count(&v, x));
  assert_int_equal(v, 2);
  RC(l_await(x, 0), RLOCK_ELOCKED);
  sk w;
  bg_start(&w, BG_LATCH, x, 20000);
  wait_subscribed(channel);
  OK(l_down(x));
  /* the Java side counts the last one down, and wakes the C waiter */
  const char *keys[] = {name, channel};
  const char *args[] = {publish_cmd()};
  java_eval(name, JAVA_LATCH_DOWN, 2, keys, 1, args);
  OK(bg_end(&w));
  assert_int_equal(rt_cmd_int(node_of(name), "EXISTS %s", name), 0);
  /* a C count-down wakes a Java-style waiter with "0" */
  OK(l_try_set(x, 1));
  redisContext *java = java_subscribe(channel);
  OK(l_down(x));
  assert_int_equal(java_message(java), 0);
  /* delete wakes waiters, who find zero */
  OK(l_try_set(x, 5));
  bg_start(&w, BG_LATCH, x, 20000);
  wait_subscribed(channel);
  OK(l_delete(&v, x));
  assert_int_equal(v, 1);
  OK(bg_end(&w));
  OK(l_delete(&v, x));
  assert_int_equal(v, 0);
  if (topo == NULL && sen == NULL) { /* the single server: stopping a
                                        Sentinel master fails it over */
    /* The wait's last read, sent at its end, finds the server stopped: the
     * bound cuts it a margin later, and the wait ends "not in time" (a
     * read took nothing), not as a failure. */
    OK(l_try_set(x, 1));
    /* A command timeout past the wait's end: whenever a look goes out
     * after the stop, the wait's bound is what ends it. */
    rlock_config *cfg;
    OK(rlock_config_new(&cfg));
    OK(rlock_config_set_url(cfg, rt_server_url(srv)));
    OK(rlock_config_set_command_timeout_ms(cfg, rt_scaled_ms(20000)));
    rlock_client *patient = dk_client_cfg(cfg);
    rlock_config_free(cfg);
    rlock_latch *px;
    OK(rlock_latch_new(&px, patient, name));
    freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
    bg_start(&w, BG_LATCH, px, rt_scaled_ms(1500));
    wait_subscribed(channel);
    dk_wait(pred_two_looks, srv, 5000, "the look before and after subscribing");
    rt_server_freeze(srv);
    int rc = bg_end(&w);
    rt_server_thaw(srv);
    RC(rc, RLOCK_ELOCKED);
    rlock_latch_free(px);
    dk_free(patient);
    OK(l_delete(&v, x));
  }
  rlock_latch_free(x);
  if (topo != NULL) {
    /* A {tag} of its own: Redisson's channel for it is in another slot,
     * which a script cannot SPUBLISH to: refused, nothing written. */
    OK(rlock_latch_new(&x, c, "sync-{tagged}-latch"));
    RC(l_try_set(x, 1), RLOCK_EINVAL);
    assert_non_null(strstr(rlock_error_last()->message, "{tag}"));
    RC(l_await(x, 0), RLOCK_EINVAL);
    assert_int_equal(rt_cmd_int(node_of("sync-{tagged}-latch"),
                                "EXISTS sync-{tagged}-latch"),
                     0);
    rlock_latch_free(x);
  }
  dk_free(c);
}

/* Behind Sentinel, with the master's replica frozen: a write no replica
 * confirmed says so (RLOCK_EREPLICA: it stands on the master), and a permit
 * taken is given back, as a lock's acquisition is. */
static bool pred_link_up(void *arg, char *why, size_t cap) {
  char v[32] = "";
  rt_server_info_field(arg, "replication", "master_link_status", v, sizeof v);
  snprintf(why, cap, "master_link_status %s", v);
  return strcmp(v, "up") == 0;
}

/* The master lists its replica, linked: the client's first write then
 * counts one replica to confirm on. */
static bool pred_replica_listed(void *arg, char *why, size_t cap) {
  char v[32] = "";
  rt_server_info_field(arg, "replication", "connected_slaves", v, sizeof v);
  snprintf(why, cap, "connected_slaves %s", v);
  return atoi(v) >= 1;
}

/* The replica-wait case's teardown: whatever it did, the replica runs and
 * the next cases look at their own servers. */
static int replica_wait_done(void **state) {
  (void)state;
  rt_proc_continue_all();
  sen = NULL;
  return 0;
}

static void test_replica_wait(void **state) {
  (void)state;
  dk_wait(pred_link_up, rt_sentinel_replica(grp, 0), 10000,
          "the replica linked");
  dk_wait(pred_replica_listed, rt_sentinel_master(grp), 10000,
          "the master listing its replica");
  sen = grp;
  char name[128];
  fresh(name, sizeof name, "wait");
  rlock_config *cfg = fx_config(rt_sentinel_url(grp), 0, NULL, NULL);
  OK(rlock_config_set_replica_sync_timeout_ms(cfg, 200));
  rlock_client *c = dk_client_cfg(cfg);
  rlock_config_free(cfg);
  rlock_semaphore *s;
  rlock_psemaphore *p;
  OK(rlock_semaphore_new(&s, c, name));
  char pname[160];
  snprintf(pname, sizeof pname, "%s-p", name);
  OK(rlock_psemaphore_new(&p, c, pname));
  OK(s_set(s, 2)); /* confirmed: the replica runs */
  OK(p_try_set(p, 1));
  rt_server *replica = rt_sentinel_replica(grp, 0);
  rt_server_freeze(replica);
  RC(s_release(s, 1), RLOCK_EREPLICA);
  assert_non_null(strstr(rlock_error_last()->message, "replica"));
  assert_int_equal(get_count(name), 3); /* done on the master */
  char id[RLOCK_PERMIT_ID_LEN + 1];
  RC(p_acquire(id, p, 0, 30000), RLOCK_EREPLICA);
  char tkey[200];
  snprintf(tkey, sizeof tkey, "{%s}:timeout", pname);
  assert_int_equal(rt_cmd_int(node_of(pname), "ZCARD %s", tkey), 0);
  assert_int_equal(get_count(pname), 1); /* given back */
  /* A release of a permit nobody leased says so, confirmed or not. */
  RC(p_release(p, "0123456789abcdef0123456789abcdef"), RLOCK_ENOTHELD);
  rt_server_thaw(replica);
  dk_wait(pred_link_up, replica, 10000, "the replica back");
  /* A lease update no replica confirmed still took on the master. */
  OK(p_acquire(id, p, 0, 30000));
  rt_server_freeze(replica);
  RC(p_update(p, id, 60000), RLOCK_EREPLICA);
  OK(p_check(p, id));
  int64_t left = 0;
  OK(p_lease(&left, p, id));
  assert_true(left > 40000);
  RC(p_release(p, id), RLOCK_EREPLICA); /* released on the master */
  assert_int_equal(rt_cmd_int(node_of(pname), "ZCARD %s", tkey), 0);
  rt_server_thaw(replica);
  dk_wait(pred_link_up, replica, 10000, "the replica back");
  OK(p_acquire(id, p, 0, 30000));
  OK(p_release(p, id));
  rlock_semaphore_free(s);
  rlock_psemaphore_free(p);
  dk_free(c);
  sen = NULL;
}

/* ---- the groups
 * ---------------------------------------------------------------- */

#define BOTH(fn)                                                               \
  static void fn##_single(void **state) {                                      \
    topo = NULL;                                                               \
    fn(state);                                                                 \
  }                                                                            \
  static void fn##_cluster(void **state) {                                     \
    topo = cl;                                                                 \
    fn(state);                                                                 \
    topo = NULL;                                                               \
  }                                                                            \
  static void fn##_sentinel(void **state) {                                    \
    sen = grp;                                                                 \
    fn(state);                                                                 \
    sen = NULL;                                                                \
  }

BOTH(test_semaphore_interop)
BOTH(test_psemaphore_interop)
BOTH(test_psemaphore_redisson_state)
BOTH(test_latch)
BOTH(test_psemaphore_watchdog)

static int setup(void) {
  if (srv == NULL)
    srv = rt_server_start(NULL);
  if (cl == NULL && getenv("RLOCK_TEST_NO_CLUSTER") == NULL)
    cl = rt_cluster_start(3, 0);
  if (grp == NULL && getenv("RLOCK_TEST_NO_CLUSTER") == NULL)
    grp = rt_sentinel_start("sync-master", 1, 3);
  return 0;
}

/* A case left a replica frozen: thaw it for the next. */
static void teardown(void) {
  if (grp != NULL) {
    rt_server *r = rt_sentinel_replica(grp, 0);
    if (rt_server_pid(r) != 0)
      kill(rt_server_pid(r), SIGCONT);
  }
  sen = NULL;
  topo = NULL;
}

int main(void) {
  const dk_case cases[] = {
      DK_CASE(test_semaphore_basics, DK_ALL),
      DK_CASE(test_foreign_keys, DK_ALL),
      DK_CASE(test_cancel, DK_ALL),
      DK_CASE(test_semaphore_interop_single, DK_ALL),
      DK_CASE(test_psemaphore_basics, DK_ALL),
      DK_CASE(test_psemaphore_watchdog_single, DK_ALL),
      DK_CASE(test_psemaphore_interop_single, DK_ALL),
      DK_CASE(test_psemaphore_redisson_state_single, DK_ALL),
      DK_CASE(test_latch_single, DK_ALL),
      DK_CASE(test_semaphore_interop_cluster, DK_ALL),
      DK_CASE(test_psemaphore_interop_cluster, DK_ALL),
      DK_CASE(test_psemaphore_redisson_state_cluster, DK_ALL),
      DK_CASE(test_psemaphore_watchdog_cluster, DK_ALL),
      DK_CASE(test_latch_cluster, DK_ALL),
      DK_CASE(test_semaphore_interop_sentinel, DK_ALL),
      DK_CASE(test_psemaphore_watchdog_sentinel, DK_ALL),
      DK_CASE(test_psemaphore_interop_sentinel, DK_ALL),
      DK_CASE(test_psemaphore_redisson_state_sentinel, DK_ALL),
      DK_CASE(test_latch_sentinel, DK_ALL),
      DK_CASE_ST(test_replica_wait, dk_recover, replica_wait_done, DK_ALL),
  };
  int failed = DK_RUN(cases, setup, teardown);
  rt_sentinel_free(grp);
  rt_cluster_free(cl);
  rt_server_free(srv);
  return failed;
}
