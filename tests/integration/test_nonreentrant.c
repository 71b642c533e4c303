/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: the non-reentrant locks (Redisson 4.4's
 * RedissonNonReentrantLock and RedissonNonReentrantFairLock). The holder
 * asking again is refused at once with RLOCK_EHELD, nothing written or
 * queued; other owners wait as usual; the layout is the lock's and the
 * fair lock's, so a Java client's acquisition (played below by a script of
 * our own with the effects PROTOCOL.md gives Redisson's) and rlock refuse
 * each other's re-entry and share the lock. Each case runs on every
 * driver (drivers.h). */
#include "drivers.h"

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
static void expect_refused(rlock_lock *l, uint64_t me, const char *name,
                           int64_t wait) {
  int64_t t0 = rt_now_ms();
  RC(dk_acquire(l, me, wait, RLOCK_LEASE_WATCHDOG), RLOCK_EHELD);
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 500);
  assert_non_null(strstr(rlock_error_last()->message, name));
  assert_non_null(strstr(rlock_error_last()->message, "already held"));
  int64_t count = 0;
  OK(dk_hold_count(&count, l, me));
  assert_int_equal(count, 1);
}

static bool pred_queued(void *arg, char *why, size_t cap) {
  const char *name = arg;
  long long n = rt_cmd_int(srv, "LLEN redisson_lock_queue:{%s}", name);
  snprintf(why, cap, "%lld queued", n);
  return n == 1;
}

/* Another owner waits for the holder's (`me`) release, then takes it. */
static void other_waits(rlock_lock *l, uint64_t me, const char *name,
                        int fair) {
  uint64_t other = rlock_owner_new();
  dk_op op;
  dk_acquire_start(&op, l, other, 20000, RLOCK_LEASE_WATCHDOG);
  char channel[512];
  if (fair) {
    dk_wait(pred_queued, (void *)name, 5000, "the other owner queued");
    redisReply *r = rt_cmd(srv, "LINDEX redisson_lock_queue:{%s} 0", name);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}:%s", name,
             r->str);
    freeReplyObject(r);
  } else {
    snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
  }
  dk_wait_subscribers(srv, channel, 1, "the other owner's wait");
  OK(dk_release(l, me));
  OK(dk_op_wait(&op, 10000, "the other owner's acquisition"));
  OK(dk_release(l, other));
}

/* The holder's re-entry of `name` (a fair one: `fair`) refused whatever
 * the wait, nothing queued for it; another owner waits and takes it; the
 * holder, released once, holds nothing more. */
static void reentry_refused(const char *name, int fair) {
  rlock_client *c = dk_client(rt_server_url(srv), 0, NULL, NULL);
  rlock_lock *l;
  if (fair)
    OK(rlock_lock_new_fair_nonreentrant(&l, c, name));
  else
    OK(rlock_lock_new_nonreentrant(&l, c, name));
  uint64_t me = dk_me();
  OK(dk_acquire(l, me, 0, RLOCK_LEASE_WATCHDOG));
  const int64_t waits[] = {0, 5000, RLOCK_WAIT_FOREVER};
  for (int i = 0; i < 3; i++)
    expect_refused(l, me, name, waits[i]);
  assert_int_equal(rt_cmd_int(srv, "LLEN redisson_lock_queue:{%s}", name), 0);
  assert_int_equal(rt_cmd_int(srv, "ZCARD redisson_lock_timeout:{%s}", name),
                   0);
  other_waits(l, me, name, fair);
  RC(dk_release(l, me), RLOCK_ENOTHELD);
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
  rlock_lock_free(l);
  dk_free(c);
}

static void test_reentry_refused(void **state) {
  (void)state;
  reentry_refused("nr:plain", 0);
}

static void test_fair_reentry_refused(void **state) {
  (void)state;
  reentry_refused("nr:fair", 1);
}

/* A Java client (its acquisition played) and rlock on one lock: each refuses
 * the other's re-entry for the same owner field, and each is a held lock to the
 * other's owners. */
static void test_interop_with_java_acquisition(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 0, NULL, NULL);
  rlock_lock *l;
  OK(rlock_lock_new_nonreentrant(&l, c, "nr:java"));
  uint64_t owner = dk_me();
  char me[RLOCK_OWNER_MAX];
  dk_field(c, owner, me);
  /* rlock holds: Java's script refuses that owner, waits for another */
  OK(dk_acquire(l, owner, 0, RLOCK_LEASE_WATCHDOG));
  redisReply *r = java_acquire("nr:java", me);
  assert_int_equal(r->type, REDIS_REPLY_ERROR);
  assert_non_null(strstr(r->str, "NON_REENTRANT_REACQUIRE"));
  freeReplyObject(r);
  r = java_acquire("nr:java", JAVA_OWNER);
  assert_int_equal(r->type, REDIS_REPLY_INTEGER); /* the holder's TTL */
  assert_true(r->integer > 0);
  freeReplyObject(r);
  OK(dk_release(l, owner));
  /* Java holds under rlock's owner field: rlock refuses the re-entry */
  r = java_acquire("nr:java", me);
  assert_int_equal(r->type, REDIS_REPLY_NIL);
  freeReplyObject(r);
  RC(dk_acquire(l, owner, 0, RLOCK_LEASE_WATCHDOG), RLOCK_EHELD);
  assert_int_equal(fx_hget(srv, "nr:java", me), 1);
  assert_int_equal(rt_cmd_int(srv, "DEL nr:java"), 1);
  rlock_lock_free(l);
  dk_free(c);
}

static const dk_case cases[] = {
    DK_CASE(test_reentry_refused, DK_ALL),
    DK_CASE(test_fair_reentry_refused, DK_ALL),
    DK_CASE(test_interop_with_java_acquisition, DK_ALL),
};

DK_MAIN(cases, NULL)
