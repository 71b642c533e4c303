/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: the non-reentrant locks (Redisson 4.4's
 * RedissonNonReentrantLock and RedissonNonReentrantFairLock). The holder
 * asking again is refused at once with RLOCK_EHELD, nothing written or
 * queued; other owners wait as usual; the layout is the lock's and the
 * fair lock's, so a Java client's acquisition (played below by a script of
 * our own with the effects PROTOCOL.md gives Redisson's) and rlock refuse
 * each other's re-entry and share the lock. */
#include "fixture.h"

#include <stdatomic.h>

/* A Java client's non-reentrant acquisition, as Redisson's has it: a free
 * lock is taken with a count of 1 and the lease; the holder asking again
 * gets an error reply with the text it passes; anyone else the TTL.
 * KEYS name; ARGV lease, owner, the error text. */
static const char *JAVA_NONREENTRANT_LOCK =
    "if redis.call('hget', KEYS[1], ARGV[2]) then "
    "  return redis.error_reply(ARGV[3]) "
    "elseif redis.call('exists', KEYS[1]) == 1 then "
    "  return redis.call('pttl', KEYS[1]) "
    "end "
    "redis.call('hset', KEYS[1], ARGV[2], 1) "
    "redis.call('pexpire', KEYS[1], ARGV[1]) "
    "return nil";

#define JAVA_OWNER "0b1e2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b:7"

static redisReply *java_acquire(const char *name, const char *owner) {
  return rt_cmd(srv, "EVAL %s 1 %s 30000 %s NON_REENTRANT_REACQUIRE",
                JAVA_NONREENTRANT_LOCK, name, owner);
}

/* Refused at once (no wait, whatever the wait asked), with its status and
 * a message naming the lock; the hold count stays 1. */
static void expect_refused(rlock_lock *l, const char *name, int64_t wait) {
  int64_t t0 = rt_now_ms();
  RC(rlock_lock_try_acquire(l, wait, RLOCK_LEASE_WATCHDOG), RLOCK_EHELD);
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 500);
  assert_non_null(strstr(rlock_error_last()->message, name));
  assert_non_null(strstr(rlock_error_last()->message, "already held"));
  int64_t count = 0;
  OK(rlock_lock_hold_count(&count, l));
  assert_int_equal(count, 1);
}

typedef struct other {
  rlock_lock *l;
  int rc;
} other;

static void *other_thread(void *arg) {
  other *o = arg;
  o->rc = rlock_lock_try_acquire(o->l, 20000, RLOCK_LEASE_WATCHDOG);
  if (o->rc == RLOCK_OK)
    o->rc = rlock_lock_release(o->l);
  return NULL;
}

static bool pred_queued(void *arg, char *why, size_t cap) {
  const char *name = arg;
  long long n = rt_cmd_int(srv, "LLEN redisson_lock_queue:{%s}", name);
  snprintf(why, cap, "%lld queued", n);
  return n == 1;
}

/* Another owner waits for the holder's release, then takes it. */
static void other_waits(rlock_lock *l, const char *name, int fair) {
  other o = {.l = l, .rc = -1};
  pthread_t t;
  pthread_create(&t, NULL, other_thread, &o);
  if (fair) {
    rt_wait_until(pred_queued, (void *)name, rt_scaled_ms(5000),
                  "the other owner queued");
    fx_wait_fair_head_subscribed(srv, name);
  } else {
    char channel[256];
    snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
    fx_wait_subscribers(srv, channel, 1, "the other owner's wait");
  }
  OK(rlock_lock_release(l));
  pthread_join(t, NULL);
  OK(o.rc);
}

static void test_reentry_refused(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l;
  OK(rlock_lock_new_nonreentrant(&l, c, "nr:plain"));
  OK(rlock_lock_try_acquire(l, 0, RLOCK_LEASE_WATCHDOG));
  expect_refused(l, "nr:plain", 0);
  expect_refused(l, "nr:plain", 5000);
  expect_refused(l, "nr:plain", RLOCK_WAIT_FOREVER);
  other_waits(l, "nr:plain", 0);
  RC(rlock_lock_release(l), RLOCK_ENOTHELD);
  assert_int_equal(rt_cmd_int(srv, "EXISTS nr:plain"), 0);
  rlock_lock_free(l);
  rlock_client_free(c);
}

static void test_fair_reentry_refused(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l;
  OK(rlock_lock_new_fair_nonreentrant(&l, c, "nr:fair"));
  OK(rlock_lock_try_acquire(l, 0, RLOCK_LEASE_WATCHDOG));
  expect_refused(l, "nr:fair", 5000);
  /* nothing queued for the holder */
  assert_int_equal(rt_cmd_int(srv, "LLEN redisson_lock_queue:{nr:fair}"), 0);
  assert_int_equal(rt_cmd_int(srv, "ZCARD redisson_lock_timeout:{nr:fair}"), 0);
  other_waits(l, "nr:fair", 1);
  rlock_lock_free(l);
  rlock_client_free(c);
}

/* A Java client (its acquisition played) and rlock on one lock: each refuses
 * the other's re-entry for the same owner field, and each is a held lock to the
 * other's owners. */
static void test_interop_with_java_acquisition(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l;
  OK(rlock_lock_new_nonreentrant(&l, c, "nr:java"));
  char me[RLOCK_OWNER_MAX];
  fx_owner(c, me);
  /* rlock holds: Java's script refuses that owner, waits for another */
  OK(rlock_lock_try_acquire(l, 0, RLOCK_LEASE_WATCHDOG));
  redisReply *r = java_acquire("nr:java", me);
  assert_int_equal(r->type, REDIS_REPLY_ERROR);
  assert_non_null(strstr(r->str, "NON_REENTRANT_REACQUIRE"));
  freeReplyObject(r);
  r = java_acquire("nr:java", JAVA_OWNER);
  assert_int_equal(r->type, REDIS_REPLY_INTEGER); /* the holder's TTL */
  assert_true(r->integer > 0);
  freeReplyObject(r);
  OK(rlock_lock_release(l));
  /* Java holds under rlock's owner field: rlock refuses the re-entry */
  r = java_acquire("nr:java", me);
  assert_int_equal(r->type, REDIS_REPLY_NIL);
  freeReplyObject(r);
  RC(rlock_lock_try_acquire(l, 0, RLOCK_LEASE_WATCHDOG), RLOCK_EHELD);
  assert_int_equal(fx_hget(srv, "nr:java", me), 1);
  assert_int_equal(rt_cmd_int(srv, "DEL nr:java"), 1);
  rlock_lock_free(l);
  rlock_client_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reentry_refused),
      cmocka_unit_test(test_fair_reentry_refused),
      cmocka_unit_test(test_interop_with_java_acquisition),
  };
  return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
