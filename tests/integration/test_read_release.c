/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: read_release.lua run as rlock sends it, against a real
 * server, on states written here as a Redisson client would leave them.
 * The lease to keep -1 (the client records no read level of the owner
 * left) takes every read level of that owner off with its timeout keys,
 * and only those: another reader's level and timeout key stay and set the
 * lock's TTL, a writer's write level keeps the lock in write mode; the
 * last holder's release deletes the lock and publishes "0". Any other
 * lease to keep takes one level, as Redisson's read unlock does.
 * (test_faults' release_after_outage runs the client side of it.) */
#include "fixture.h"

#include "script.h"

#define NAME "rr:lock"
#define BASE "{rr:lock}"
#define CHANNEL "redisson_rwlock:{rr:lock}"

/* The timeout-key prefix of `owner`'s read holds. */
static const char *prefix_of(const char *owner, char *buf, size_t cap) {
  snprintf(buf, cap, "%s:%s:rwlock_timeout", BASE, owner);
  return buf;
}

/* EXISTS of `owner`'s timeout key of read level `i`. */
static long long level_key(const char *owner, int i) {
  char p[128];
  return rt_cmd_int(srv, "EXISTS %s:%d", prefix_of(owner, p, sizeof p), i);
}

/* `owner` takes `n` read levels of NAME whose timeout keys live `ttl_ms`
 * (mode `mode`, written when absent), the lock's TTL kept at least that. */
static void read_levels(const char *owner, int n, long long ttl_ms) {
  char p[128];
  rt_cmd_int(srv, "HSETNX %s mode read", NAME);
  rt_cmd_int(srv, "HSET %s %s %d", NAME, owner, n);
  for (int i = 1; i <= n; i++)
    rt_cmd_ok(srv, "SET %s:%d 1 PX %lld", prefix_of(owner, p, sizeof p), i,
              ttl_ms);
  if (rt_cmd_int(srv, "PTTL %s", NAME) < ttl_ms)
    rt_cmd_int(srv, "PEXPIRE %s %lld", NAME, ttl_ms);
}

/* read_release.lua's answer for `owner` with the lease to keep `keep`
 * (no latch): the integer, or -100 for nil. */
static long long release(const char *owner, const char *keep) {
  char p[128];
  const char *argv[] = {"EVAL",    rlock__script_read_release.text,
                        "1",       NAME,
                        "0",       owner,
                        "PUBLISH", "0",
                        CHANNEL,   prefix_of(owner, p, sizeof p),
                        BASE,      "rr:latch:none",
                        keep};
  redisReply *r =
      rt_cmd_argv(srv, (int)(sizeof argv / sizeof argv[0]), argv, NULL);
  long long v = -100;
  if (r->type == REDIS_REPLY_INTEGER)
    v = r->integer;
  else if (r->type != REDIS_REPLY_NIL)
    fail_msg("read_release.lua: reply type %d (%s)", r->type,
             r->type == REDIS_REPLY_ERROR ? r->str : "");
  freeReplyObject(r);
  return v;
}

/* A connection subscribed to the lock's channel, answers within 5 s. */
static redisContext *subscriber(void) {
  redisContext *sub = rt_server_connect(srv);
  struct timeval tv = {.tv_sec = rt_scaled_ms(5000) / 1000};
  redisSetTimeout(sub, tv);
  redisReply *r = redisCommand(sub, "SUBSCRIBE %s", CHANNEL);
  assert_non_null(r);
  freeReplyObject(r);
  return sub;
}

/* The next message on `sub`'s channel is `want`. */
static void expect_message(redisContext *sub, const char *want) {
  redisReply *r = NULL;
  if (redisGetReply(sub, (void **)&r) != REDIS_OK || r == NULL)
    fail_msg("no message on %s", CHANNEL);
  assert_int_equal(r->type, REDIS_REPLY_ARRAY);
  assert_int_equal(r->elements, 3);
  assert_string_equal(r->element[2]->str, want);
  freeReplyObject(r);
}

/* Two readers: the stale-level release of one leaves the other's hold. */
static void test_reader_beside_reader(void **state) {
  (void)state;
  rt_cmd_int(srv, "DEL %s", NAME);
  read_levels("aa:1", 3, 60000);
  read_levels("bb:1", 1, 20000);
  /* Any lease to keep but -1: one level, the top one's key. */
  assert_int_equal(release("aa:1", "30000"), 0);
  assert_int_equal(fx_hget(srv, NAME, "aa:1"), 2);
  assert_int_equal(level_key("aa:1", 3), 0);
  assert_int_equal(level_key("aa:1", 2), 1);
  /* -1: both levels left and their keys; bb's stay and set the TTL. */
  assert_int_equal(release("aa:1", "-1"), 0);
  assert_int_equal(rt_cmd_int(srv, "HEXISTS %s aa:1", NAME), 0);
  assert_int_equal(level_key("aa:1", 1) + level_key("aa:1", 2), 0);
  assert_int_equal(fx_hget(srv, NAME, "bb:1"), 1);
  assert_int_equal(level_key("bb:1", 1), 1);
  ASSERT_RANGE(rt_cmd_int(srv, "PTTL %s", NAME), 1, 20000);
  redisReply *mode = rt_cmd(srv, "HGET %s mode", NAME);
  assert_string_equal(mode->str, "read");
  freeReplyObject(mode);
  /* Nothing of aa's left: its release answers nil, changes nothing. */
  assert_int_equal(release("aa:1", "-1"), -100);
  assert_int_equal(fx_hget(srv, NAME, "bb:1"), 1);
  /* The last reader's -1 deletes the lock and tells a waiter. */
  redisContext *sub = subscriber();
  assert_int_equal(release("bb:1", "-1"), 1);
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", NAME), 0);
  assert_int_equal(level_key("bb:1", 1), 0);
  expect_message(sub, "0");
  redisFree(sub);
}

/* A writer's own read levels go; its write level keeps the lock. */
static void test_writer_keeps_its_write_level(void **state) {
  (void)state;
  rt_cmd_int(srv, "DEL %s", NAME);
  rt_cmd_int(srv, "HSET %s mode write ww:1:write 1", NAME);
  rt_cmd_int(srv, "PEXPIRE %s 60000", NAME);
  read_levels("ww:1", 2, 60000);
  assert_int_equal(release("ww:1", "-1"), 0);
  assert_int_equal(rt_cmd_int(srv, "HEXISTS %s ww:1", NAME), 0);
  assert_int_equal(level_key("ww:1", 1) + level_key("ww:1", 2), 0);
  assert_int_equal(fx_hget(srv, NAME, "ww:1:write"), 1);
  redisReply *mode = rt_cmd(srv, "HGET %s mode", NAME);
  assert_string_equal(mode->str, "write");
  freeReplyObject(mode);
  ASSERT_RANGE(rt_cmd_int(srv, "PTTL %s", NAME), 1, 60000);
  rt_cmd_int(srv, "DEL %s", NAME);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reader_beside_reader),
      cmocka_unit_test(test_writer_keeps_its_write_level),
  };
  return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
