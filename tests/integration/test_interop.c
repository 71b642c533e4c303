/* SPDX-License-Identifier: BSD-3-Clause AND Apache-2.0 */
/* Integration: wire compatibility with Redisson. A Redisson client is
 * played by running Redisson's own scripts exactly as the seed articles
 * quote them (shared/seeds/000: tryLockInnerAsync, unlockInnerAsync,
 * forceUnlockAsync; 004: renewExpirationAsync) with a client id of its
 * own, against the same server as rlock. */
#include "fixture.h"

#include <stdlib.h>

/* RedissonLock.tryLockInnerAsync: KEYS[1] name; ARGV lease, owner. */
static const char *REDISSON_LOCK =
    "if (redis.call('exists', KEYS[1]) == 0) then "
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; "
    "end; "
    "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then "
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; "
    "end; "
    "return redis.call('pttl', KEYS[1]);";

/* RedissonLock.unlockInnerAsync: KEYS name, channel; ARGV message,
 * lease, owner. */
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
    "redis.call('publish', KEYS[2], ARGV[1]); "
    "return 1; "
    "end; "
    "return nil;";

/* RedissonLock.forceUnlockAsync: KEYS name, channel; ARGV message. */
static const char *REDISSON_FORCE_UNLOCK =
    "if (redis.call('del', KEYS[1]) == 1) then "
    "redis.call('publish', KEYS[2], ARGV[1]); "
    "return 1 "
    "else "
    "return 0 "
    "end";

/* RedissonBaseLock.renewExpirationAsync: KEYS name; ARGV lease, owner. */
static const char *REDISSON_RENEW =
    "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return 1; "
    "end; "
    "return 0;";

#define JAVA_OWNER "6f1e2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b:57"

static redisReply *java_lock(const char *name, const char *owner) {
  return rt_cmd(srv, "EVAL %s 1 %s 30000 %s", REDISSON_LOCK, name, owner);
}

static redisReply *java_unlock(const char *name, const char *owner) {
  return rt_cmd(srv, "EVAL %s 2 %s redisson_lock__channel:{%s} 0 30000 %s",
                REDISSON_UNLOCK, name, name, owner);
}

static void test_redisson_hold_blocks_rlock(void **state) {
  (void)state;
  redisReply *r = java_lock("interop:block", JAVA_OWNER);
  assert_int_equal(r->type, REDIS_REPLY_NIL);
  freeReplyObject(r);
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "interop:block");
  RC(rlock_lock_try_acquire(l, 0, 0), RLOCK_ELOCKED);
  RC(rlock_lock_try_acquire(l, 300, 5000), RLOCK_ELOCKED);
  rlock_lock_info *info;
  OK(rlock_lock_inspect(&info, l));
  assert_int_equal(rlock_lock_info_holder_count(info), 1);
  assert_string_equal(rlock_lock_info_holder_owner(info, 0), JAVA_OWNER);
  assert_int_equal(rlock_lock_info_holder_holds(info, 0), 1);
  rlock_lock_info_free(info);
  RC(rlock_lock_release(l), RLOCK_ENOTHELD); /* not ours to release */
  assert_int_equal(fx_hget(srv, "interop:block", JAVA_OWNER), 1);
  r = java_unlock("interop:block", JAVA_OWNER);
  assert_int_equal(r->integer, 1);
  freeReplyObject(r);
  rlock_lock_free(l);
  rlock_client_free(c);
}

typedef struct waiter {
  rlock_client *c;
  int rc;
  int64_t acquired_at;
} waiter;

static void *waiter_main(void *arg) {
  waiter *w = arg;
  rlock_lock *l;
  if ((w->rc = rlock_lock_new(&l, w->c, "interop:wake")) != RLOCK_OK)
    return NULL;
  w->rc = rlock_lock_try_acquire(l, 20000, 0);
  w->acquired_at = rt_now_ms();
  if (w->rc == RLOCK_OK)
    w->rc = rlock_lock_release(l);
  rlock_lock_free(l);
  return NULL;
}

static int64_t wake_after(const char *script_kind) {
  const char *channel = "redisson_lock__channel:{interop:wake}";
  freeReplyObject(java_lock("interop:wake", JAVA_OWNER));
  /* The previous call's waiter has left (its client is gone) ... */
  fx_wait_subscribers(srv, channel, 0, "the previous waiter's leaving");
  rlock_client *c = fx_client(srv, 0);
  waiter w = {.c = c};
  pthread_t t;
  pthread_create(&t, NULL, waiter_main, &w);
  /* ... and this one listens: only the message can wake it now. */
  fx_wait_subscribers(srv, channel, 1, "the rlock waiter's subscription");
  int64_t t0 = rt_now_ms();
  redisReply *r = strcmp(script_kind, "unlock") == 0
                      ? java_unlock("interop:wake", JAVA_OWNER)
                      : rt_cmd(srv,
                               "EVAL %s 2 interop:wake "
                               "redisson_lock__channel:{interop:wake} 0",
                               REDISSON_FORCE_UNLOCK);
  assert_int_equal(r->integer, 1);
  freeReplyObject(r);
  pthread_join(t, NULL);
  OK(w.rc);
  rlock_client_free(c);
  return w.acquired_at - t0;
}

static void test_redisson_unlock_wakes_rlock_waiter(void **state) {
  (void)state;
  /* The Java hold has a 30 s lease: only the message explains a prompt
   * wake-up. */
  ASSERT_BETWEEN(wake_after("unlock"), 0, 250);
  ASSERT_BETWEEN(wake_after("force"), 0, 250);
}

static void test_rlock_hold_looks_like_redisson_hold(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "interop:ours");
  char owner[RLOCK_OWNER_MAX];
  fx_owner(c, owner);
  OK(rlock_lock_acquire(l));
  freeReplyObject(java_lock("interop:theirs", JAVA_OWNER));
  const char *keys[2] = {"interop:ours", "interop:theirs"};
  for (int i = 0; i < 2; i++) {
    redisReply *r = rt_cmd(srv, "TYPE %s", keys[i]);
    assert_string_equal(r->str, "hash");
    freeReplyObject(r);
    assert_int_equal(rt_cmd_int(srv, "HLEN %s", keys[i]), 1);
    ASSERT_RANGE(rt_cmd_int(srv, "PTTL %s", keys[i]), 29000, 30000);
  }
  assert_int_equal(fx_hget(srv, "interop:ours", owner), 1);
  /* Redisson's scripts accept the rlock hold as a hold of that owner:
   * re-entry, renewal and unlock all work on it. */
  redisReply *r = java_lock("interop:ours", owner);
  assert_int_equal(r->type, REDIS_REPLY_NIL);
  freeReplyObject(r);
  assert_int_equal(fx_hget(srv, "interop:ours", owner), 2);
  r = rt_cmd(srv, "EVAL %s 1 interop:ours 30000 %s", REDISSON_RENEW, owner);
  assert_int_equal(r->integer, 1);
  freeReplyObject(r);
  r = java_unlock("interop:ours", owner);
  assert_int_equal(r->integer, 0);
  freeReplyObject(r);
  r = java_unlock("interop:ours", JAVA_OWNER); /* a stranger cannot */
  assert_int_equal(r->type, REDIS_REPLY_NIL);
  freeReplyObject(r);
  OK(rlock_lock_release(l));
  assert_int_equal(rt_cmd_int(srv, "EXISTS interop:ours"), 0);
  freeReplyObject(java_unlock("interop:theirs", JAVA_OWNER));
  rlock_lock_free(l);
  rlock_client_free(c);
}

static void test_redisson_waiter_notified_by_rlock(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "interop:notify");
  OK(rlock_lock_acquire(l));
  /* A Java waiter: its lock attempt fails with the TTL, it listens on
   * the channel. */
  redisReply *r = java_lock("interop:notify", JAVA_OWNER);
  assert_int_equal(r->type, REDIS_REPLY_INTEGER);
  ASSERT_RANGE(r->integer, 29000, 30000);
  freeReplyObject(r);
  redisContext *sub = rt_server_connect(srv);
  freeReplyObject(
      redisCommand(sub, "SUBSCRIBE redisson_lock__channel:{interop:notify}"));
  OK(rlock_lock_release(l));
  assert_int_equal(redisGetReply(sub, (void **)&r), REDIS_OK);
  assert_string_equal(r->element[0]->str, "message");
  assert_string_equal(r->element[1]->str,
                      "redisson_lock__channel:{interop:notify}");
  assert_string_equal(r->element[2]->str, "0");
  freeReplyObject(r);
  r = java_lock("interop:notify", JAVA_OWNER); /* and now it gets it */
  assert_int_equal(r->type, REDIS_REPLY_NIL);
  freeReplyObject(r);
  /* rlock's force release notifies Java the same way. */
  int deleted;
  OK(rlock_lock_force_release(&deleted, l));
  assert_int_equal(deleted, 1);
  assert_int_equal(redisGetReply(sub, (void **)&r), REDIS_OK);
  assert_string_equal(r->element[2]->str, "0");
  freeReplyObject(r);
  redisFree(sub);
  rlock_lock_free(l);
  rlock_client_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_redisson_hold_blocks_rlock),
      cmocka_unit_test(test_redisson_unlock_wakes_rlock_waiter),
      cmocka_unit_test(test_rlock_hold_looks_like_redisson_hold),
      cmocka_unit_test(test_redisson_waiter_notified_by_rlock),
  };
  return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
