/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: the reentrant lock's operations and data layout against a
 * real redis-server; the counts and the extension on every driver
 * (drivers.h). */
#include "drivers.h"

#include <inttypes.h>
#include <regex.h>

/* Each acquisition by the holder counts one more hold (whatever its
 * lease), each release one less; the last deletes the lock. */
static void test_reentrant_counts(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 0, NULL, NULL);
  rlock_lock *l = fx_lock(c, "basic:reentrant");
  uint64_t me = dk_me();
  char owner[RLOCK_OWNER_MAX];
  dk_field(c, me, owner);
  int64_t n;
  for (int i = 1; i <= 3; i++) {
    OK(dk_acquire(l, me, 0, i == 2 ? 10000 : RLOCK_LEASE_WATCHDOG));
    OK(dk_hold_count(&n, l, me));
    assert_int_equal(n, i);
    assert_int_equal(fx_hget(srv, "basic:reentrant", owner), i);
    OK(dk_check(l, me));
  }
  for (int i = 2; i >= 0; i--) {
    OK(dk_release(l, me));
    OK(dk_hold_count(&n, l, me));
    assert_int_equal(n, i);
  }
  assert_int_equal(rt_cmd_int(srv, "EXISTS basic:reentrant"), 0);
  RC(dk_release(l, me), RLOCK_ENOTHELD);
  DK_FREE((l), (c));
}

static void test_layout_is_redissons(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "basic:layout");
  OK(rlock_lock_acquire(l));
  redisReply *r = rt_cmd(srv, "TYPE basic:layout");
  assert_string_equal(r->str, "hash");
  freeReplyObject(r);
  r = rt_cmd(srv, "HGETALL basic:layout");
  assert_int_equal(r->elements, 2);
  regex_t re;
  assert_int_equal(regcomp(&re,
                           "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-"
                           "[89ab][0-9a-f]{3}-[0-9a-f]{12}:[0-9]+$",
                           REG_EXTENDED | REG_NOSUB),
                   0);
  assert_int_equal(regexec(&re, r->element[0]->str, 0, NULL, 0), 0);
  regfree(&re);
  char expect[RLOCK_OWNER_MAX];
  snprintf(expect, sizeof expect, "%s:%" PRIu64, rlock_client_id(c),
           rlock_owner_thread());
  assert_string_equal(r->element[0]->str, expect);
  assert_string_equal(r->element[1]->str, "1");
  freeReplyObject(r);
  ASSERT_RANGE(rt_cmd_int(srv, "PTTL basic:layout"), 29000, 30000);
  OK(rlock_lock_release(l));
  FX_FREE((l), (c));
}

typedef struct other {
  rlock_lock *lock;
  int rc;
  int held;
} other;

static void *release_from_other_thread(void *arg) {
  other *o = arg;
  o->rc = rlock_lock_release(o->lock);
  rlock_lock_is_held(&o->held, o->lock);
  return NULL;
}

static void test_release_by_non_holder(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "basic:nonholder");
  OK(rlock_lock_acquire(l));
  other o = {.lock = l, .held = -1};
  pthread_t t;
  pthread_create(&t, NULL, release_from_other_thread, &o);
  pthread_join(t, NULL);
  assert_int_equal(o.rc, RLOCK_ENOTHELD);
  assert_int_equal(o.held, 0);
  int held;
  OK(rlock_lock_is_held(&held, l));
  assert_int_equal(held, 1);
  /* Another client (another process, as far as Redis can tell) too. */
  rlock_client *c2 = fx_client(srv, 0);
  rlock_lock *l2 = fx_lock(c2, "basic:nonholder");
  RC(rlock_lock_release(l2), RLOCK_ENOTHELD);
  assert_non_null(strstr(rlock_error_last()->message, "not held"));
  assert_int_equal(rt_cmd_int(srv, "EXISTS basic:nonholder"), 1);
  OK(rlock_lock_release(l));
  FX_FREE((l2), (c2));
  FX_FREE((l), (c));
}

/* A holder's lease runs out: a waiter is woken by the TTL bound (no
 * unlock message is ever published), and the holder finds its hold lost
 * without a round trip. */
static void test_lease_expiry(void **state) {
  (void)state;
  const char *url = rt_server_url(srv);
  rlock_client *a = dk_client(url, 0, NULL, NULL);
  rlock_client *b = dk_client(url, 0, NULL, NULL);
  rlock_lock *la = fx_lock(a, "basic:lease"), *lb = fx_lock(b, "basic:lease");
  uint64_t ma = dk_me(), mb = dk_me();
  int64_t taken = rt_now_ms();
  OK(dk_acquire(la, ma, 0, 400));
  ASSERT_RANGE(rt_cmd_int(srv, "PTTL basic:lease"), 1, 400);
  OK(dk_check(la, ma));
  RC(dk_acquire(lb, mb, 0, 0), RLOCK_ELOCKED);
  int64_t t0 = rt_now_ms();
  OK(dk_acquire(lb, mb, 5000, 0)); /* wakes when the lease ends */
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 1500);
  ASSERT_RANGE(rt_now_ms() - taken, 390, INT64_MAX); /* not before it */
  RC(dk_check(la, ma), RLOCK_ELOST); /* known locally, no round trip */
  RC(dk_release(la, ma), RLOCK_ELOST);
  assert_non_null(strstr(rlock_error_last()->message, "lost"));
  OK(dk_release(lb, mb));
  DK_FREE((la, lb), (a, b));
}

static bool renewed(void *arg, char *why, size_t cap) {
  rlock_stats st;
  OK(rlock_client_stats(arg, &st, sizeof st));
  snprintf(why, cap, "%llu renewals", (unsigned long long)st.renewals);
  return st.renewals > 0;
}

/* acquire_lease(0) is try_acquire(FOREVER, 0): a watchdog lease, renewed. */
static void test_acquire_lease_zero_is_watchdog(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 3000);
  rlock_lock *l = fx_lock(c, "basic:lease0");
  OK(rlock_lock_acquire_lease(l, 0));
  ASSERT_RANGE(rt_cmd_int(srv, "PTTL basic:lease0"), 1, 3000);
  rt_wait_until(renewed, c, rt_scaled_ms(5000), "a watchdog renewal");
  ASSERT_RANGE(rt_cmd_int(srv, "PTTL basic:lease0"), 1, 3000);
  OK(rlock_lock_check(l));
  OK(rlock_lock_release(l));
  assert_int_equal(rt_cmd_int(srv, "EXISTS basic:lease0"), 0);
  RC(rlock_lock_acquire_lease(l, -1), RLOCK_EINVAL);
  FX_FREE((l), (c));
}

static void test_reentry_keeps_explicit_lease(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "basic:relase");
  for (int i = 0; i < 3; i++)
    OK(rlock_lock_acquire_lease(l, 10000));
  OK(rlock_lock_release(l));
  OK(rlock_lock_release(l));
  int64_t ttl;
  OK(rlock_lock_ttl(&ttl, l));
  ASSERT_RANGE(ttl, 9000, 10000);
  OK(rlock_lock_release(l));
  OK(rlock_lock_ttl(&ttl, l));
  assert_int_equal(ttl, -2);
  FX_FREE((l), (c));
}

/* Reentry deeper than a hold record keeps inline (4 levels), leases
 * mixed with watchdog levels: each release leaves the TTL of the level
 * below. Then the record, released, is reused by a lock of a longer name. */
static void test_deep_reentry_mixed_leases(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 30000);
  rlock_lock *l = fx_lock(c, "basic:deep");
  int64_t lease[10], ttl, n;
  for (int i = 0; i < 10; i++) {
    lease[i] = i % 3 == 1 ? 0 : 20000 + 10000 * i; /* 0: watchdog */
    if (lease[i] == 0)
      OK(rlock_lock_acquire(l));
    else
      OK(rlock_lock_acquire_lease(l, lease[i]));
  }
  OK(rlock_lock_hold_count(&n, l));
  assert_int_equal(n, 10);
  for (int i = 9; i > 0; i--) {
    OK(rlock_lock_release(l));
    OK(rlock_lock_ttl(&ttl, l));
    int64_t want = lease[i - 1] ? lease[i - 1] : 30000;
    ASSERT_RANGE(ttl, want - 2000, want);
  }
  OK(rlock_lock_release(l));
  RC(rlock_lock_release(l), RLOCK_ENOTHELD);
  rlock_lock *m = fx_lock(c, "basic:deep:a-longer-name-than-the-one-before");
  OK(rlock_lock_acquire(m));
  OK(rlock_lock_check(m));
  RC(rlock_lock_check(l), RLOCK_ENOTHELD);
  OK(rlock_lock_release(m));
  FX_FREE((m, l), (c));
}

static void test_force_release(void **state) {
  (void)state;
  rlock_client *a = fx_client(srv, 0), *b = fx_client(srv, 0);
  rlock_lock *la = fx_lock(a, "basic:force"), *lb = fx_lock(b, "basic:force");
  int deleted = -1, locked;
  OK(rlock_lock_force_release(&deleted, lb));
  assert_int_equal(deleted, 0);
  OK(rlock_lock_acquire(la));
  OK(rlock_lock_force_release(&deleted, lb));
  assert_int_equal(deleted, 1);
  OK(rlock_lock_is_locked(&locked, lb));
  assert_int_equal(locked, 0);
  RC(rlock_lock_release(la), RLOCK_ELOST);
  /* Force-releasing one's own lock: the holder sees it lost locally. */
  OK(rlock_lock_acquire(la));
  OK(rlock_lock_force_release(&deleted, la));
  assert_int_equal(deleted, 1);
  RC(rlock_lock_check(la), RLOCK_ELOST);
  RC(rlock_lock_release(la), RLOCK_ELOST);
  RC(rlock_lock_check(la), RLOCK_ENOTHELD);
  FX_FREE((la, lb), (a, b));
}

static void expect_wrongtype(rlock_lock *l, const char *key) {
  int flag;
  int64_t n;
  rlock_lock_info *info;
  RC(rlock_lock_try_acquire(l, 0, 0), RLOCK_EWRONGTYPE);
  assert_non_null(strstr(rlock_error_last()->message, key));
  RC(rlock_lock_try_acquire(l, 200, 1000), RLOCK_EWRONGTYPE);
  RC(rlock_lock_release(l), RLOCK_EWRONGTYPE);
  RC(rlock_lock_force_release(NULL, l), RLOCK_EWRONGTYPE);
  RC(rlock_lock_is_locked(&flag, l), RLOCK_EWRONGTYPE);
  RC(rlock_lock_is_held(&flag, l), RLOCK_EWRONGTYPE);
  RC(rlock_lock_hold_count(&n, l), RLOCK_EWRONGTYPE);
  RC(rlock_lock_ttl(&n, l), RLOCK_EWRONGTYPE);
  RC(rlock_lock_inspect(&info, l), RLOCK_EWRONGTYPE);
}

static void test_wrong_type_loses_nothing(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  freeReplyObject(rt_cmd(srv, "SET basic:string precious"));
  freeReplyObject(rt_cmd(srv, "RPUSH basic:list a b"));
  rlock_lock *ls = fx_lock(c, "basic:string"), *ll = fx_lock(c, "basic:list");
  expect_wrongtype(ls, "basic:string");
  expect_wrongtype(ll, "basic:list");
  redisReply *r = rt_cmd(srv, "GET basic:string");
  assert_string_equal(r->str, "precious");
  freeReplyObject(r);
  assert_int_equal(rt_cmd_int(srv, "LLEN basic:list"), 2);
  assert_int_equal(rt_cmd_int(srv, "PTTL basic:string"), -1);
  FX_FREE((ls, ll), (c));
}

static void test_inspect(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "basic:inspect");
  rlock_lock_info *info;
  OK(rlock_lock_inspect(&info, l));
  assert_int_equal(rlock_lock_info_locked(info), 0);
  assert_int_equal(rlock_lock_info_ttl_ms(info), -2);
  assert_int_equal(rlock_lock_info_holder_count(info), 0);
  rlock_lock_info_free(info);
  OK(rlock_lock_acquire_lease(l, 20000));
  OK(rlock_lock_acquire_lease(l, 20000));
  OK(rlock_lock_inspect(&info, l));
  char owner[RLOCK_OWNER_MAX];
  fx_owner(c, owner);
  assert_int_equal(rlock_lock_info_locked(info), 1);
  ASSERT_RANGE(rlock_lock_info_ttl_ms(info), 19000, 20000);
  assert_int_equal(rlock_lock_info_holder_count(info), 1);
  assert_string_equal(rlock_lock_info_holder_owner(info, 0), owner);
  assert_int_equal(rlock_lock_info_holder_holds(info, 0), 2);
  assert_null(rlock_lock_info_holder_owner(info, 1));
  rlock_lock_info_free(info);
  int locked;
  OK(rlock_lock_is_locked(&locked, l));
  assert_int_equal(locked, 1);
  OK(rlock_lock_release(l));
  OK(rlock_lock_release(l));
  FX_FREE((l), (c));
}

static void test_try_once_and_tagged_channel(void **state) {
  (void)state;
  rlock_client *a = fx_client(srv, 0), *b = fx_client(srv, 0);
  const char *name = "{user42}:orders";
  rlock_lock *la = fx_lock(a, name), *lb = fx_lock(b, name);
  redisContext *sub = rt_server_connect(srv);
  redisReply *r =
      redisCommand(sub, "SUBSCRIBE redisson_lock__channel:{user42}:orders");
  freeReplyObject(r);
  OK(rlock_lock_acquire_lease(la, 60000));
  int64_t t0 = rt_now_ms();
  RC(rlock_lock_try_acquire(lb, 0, 0), RLOCK_ELOCKED);
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 1000);
  assert_non_null(strstr(rlock_error_last()->message, "held by another"));
  OK(rlock_lock_release(la));
  assert_int_equal(redisGetReply(sub, (void **)&r), REDIS_OK);
  assert_string_equal(r->element[0]->str, "message");
  assert_string_equal(r->element[2]->str, "0");
  freeReplyObject(r);
  redisFree(sub);
  FX_FREE((la, lb), (a, b));
}

/* rlock_lock_extend for the thread's holds (a blocking client's own
 * owner), rlock_lock_extend_owner or its _async form for another. */
static int extend(rlock_lock *l, uint64_t owner, int64_t lease) {
  if (owner == RLOCK_OWNER_THREAD)
    return rlock_lock_extend(l, lease);
  return dk_extend(l, owner, lease);
}

/* A fixed-lease hold given a fresh lease: the server's TTL moves to the
 * new lease, the local record with it (rlock_lock_check stays OK past the
 * old lease); a watchdog hold, a hold of nobody and one that is gone are
 * refused, each with its own status, and nothing is re-created. */
static void test_extend(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 0, NULL, NULL);
  rlock_lock *l = fx_lock(c, "basic:extend");
  uint64_t me = dk_me();
  RC(extend(l, me, 1000), RLOCK_ENOTHELD);
  OK(dk_acquire(l, me, 0, 300));
  OK(extend(l, me, 20000));
  ASSERT_RANGE(rt_cmd_int(srv, "PTTL basic:extend"), 15000, 20000);
  RC(extend(l, me, 0), RLOCK_EINVAL);
  RC(extend(l, me, -5), RLOCK_EINVAL);
  RC(extend(NULL, me, 1000), RLOCK_EINVAL);
  dk_let_time_pass(400); /* past the first lease: the time is what is tested */
  OK(dk_check(l, me));
  assert_int_equal(rt_cmd_int(srv, "EXISTS basic:extend"), 1);
  /* Gone on the server (deleted by hand): lost, and not re-created. */
  assert_int_equal(rt_cmd_int(srv, "DEL basic:extend"), 1);
  RC(extend(l, me, 20000), RLOCK_ELOST);
  assert_int_equal(rt_cmd_int(srv, "EXISTS basic:extend"), 0);
  dk_release(l, me);
  /* The watchdog's hold needs none. */
  OK(dk_acquire(l, me, 0, RLOCK_LEASE_WATCHDOG));
  RC(extend(l, me, 20000), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "watchdog"));
  OK(dk_release(l, me));
  DK_FREE((l), (c));
}

/* A host name is looked up (off a loop's thread) and connected at
 * whichever of its addresses the server listens on ("localhost" may name
 * ::1 first; the server listens on 127.0.0.1). */
static void test_connects_by_name(void **state) {
  (void)state;
  char url[96];
  snprintf(url, sizeof url, "redis://localhost:%d", rt_server_port(srv));
  rlock_client *c = dk_client(url, 0, NULL, NULL);
  rlock_lock *l = fx_lock(c, "basic:by-name");
  uint64_t me = dk_me();
  OK(dk_acquire(l, me, 0, 1000));
  assert_int_equal(rt_cmd_int(srv, "EXISTS basic:by-name"), 1);
  OK(dk_release(l, me));
  DK_FREE((l), (c));
}

static const dk_case cases[] = {
    DK_CASE(test_reentrant_counts, DK_ALL),
    DK_CASE(test_layout_is_redissons, DK_BLOCK),
    DK_CASE(test_release_by_non_holder, DK_BLOCK),
    DK_CASE(test_lease_expiry, DK_ALL),
    DK_CASE(test_acquire_lease_zero_is_watchdog, DK_BLOCK),
    DK_CASE(test_reentry_keeps_explicit_lease, DK_BLOCK),
    DK_CASE(test_deep_reentry_mixed_leases, DK_BLOCK),
    DK_CASE(test_force_release, DK_BLOCK),
    DK_CASE(test_wrong_type_loses_nothing, DK_BLOCK),
    DK_CASE(test_inspect, DK_BLOCK),
    DK_CASE(test_try_once_and_tagged_channel, DK_BLOCK),
    DK_CASE(test_extend, DK_ALL),
    DK_CASE(test_connects_by_name, DK_ALL),
};

DK_MAIN(cases, NULL)
