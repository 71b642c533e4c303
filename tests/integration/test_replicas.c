/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: confirming lock writes on replicas (WAIT, Redisson's
 * checkLockSyncedSlaves) and the unlock latch that makes a repeated
 * release return the first answer. A real master with a real replica. */
#include "fixture.h"

#include "script.h"

static rt_server *master, *replica;

static bool link_up(void *arg, char *why, size_t size) {
  char v[32];
  rt_server_info_field(arg, "replication", "master_link_status", v, sizeof v);
  snprintf(why, size, "master_link_status:%s", v);
  return strcmp(v, "up") == 0;
}

static int setup(void **state) {
  (void)state;
  master = rt_server_start(NULL);
  char port[16];
  snprintf(port, sizeof port, "%d", rt_server_port(master));
  replica = rt_server_start(
      (const char *const[]){"--replicaof", "127.0.0.1", port, NULL});
  rt_wait_until(link_up, replica, rt_scaled_ms(10000), "the replica to sync");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  rt_server_free(replica);
  rt_server_free(master);
  return 0;
}

static rlock_client *client(int sync, int64_t sync_ms) {
  rlock_config *cfg;
  rlock_client *c;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, rt_server_url(master)));
  OK(rlock_config_set_replica_sync(cfg, sync));
  OK(rlock_config_set_replica_sync_timeout_ms(cfg, sync_ms));
  OK(rlock_client_new(&c, cfg));
  rlock_config_free(cfg);
  return c;
}

/* How many WAIT and INFO commands `s` ran since its last CONFIG RESETSTAT,
 * read with one INFO (which counts only once it has run). */
static void counts(rt_server *s, long long *wait, long long *info) {
  redisReply *r = rt_cmd(s, "INFO commandstats");
  const char *w = strstr(r->str, "cmdstat_wait:calls=");
  const char *i = strstr(r->str, "cmdstat_info:calls=");
  *wait = w ? atoll(w + strlen("cmdstat_wait:calls=")) : 0;
  *info = i ? atoll(i + strlen("cmdstat_info:calls=")) : 0;
  freeReplyObject(r);
}

/* With a replica attached, every lock write is followed by WAIT: when the
 * acquisition returns, the replica already has the hold. */
static void test_writes_wait_for_the_replica(void **state) {
  (void)state;
  rlock_client *c = client(1, 2000);
  freeReplyObject(rt_cmd(master, "CONFIG RESETSTAT"));
  rlock_lock *l = fx_lock(c, "rep:a");
  char owner[RLOCK_OWNER_MAX];
  fx_owner(c, owner);
  OK(rlock_lock_try_acquire(l, 0, 30000));
  assert_int_equal(fx_hget(replica, "rep:a", owner), 1);
  OK(rlock_lock_release(l));
  assert_int_equal(rt_cmd_int(replica, "EXISTS rep:a"), 0);
  long long waits, infos;
  counts(master, &waits, &infos);
  assert_true(waits >= 2);
  assert_int_equal(infos, 1); /* the replica count, once */
  rlock_lock_free(l);
  rlock_client_free(c);
}

/* Turned off: no WAIT, no INFO. */
static void test_sync_off(void **state) {
  (void)state;
  rlock_client *c = client(0, 1000);
  freeReplyObject(rt_cmd(master, "CONFIG RESETSTAT"));
  rlock_lock *l = fx_lock(c, "rep:off");
  OK(rlock_lock_try_acquire(l, 0, 30000));
  OK(rlock_lock_release(l));
  long long waits, infos;
  counts(master, &waits, &infos);
  assert_int_equal(waits, 0);
  assert_int_equal(infos, 0);
  rlock_lock_free(l);
  rlock_client_free(c);
}

/* A paused replica confirms nothing: the acquisition fails cleanly after
 * the sync timeout and leaves no hold; within a wait it is retried and
 * succeeds once the replica is back. */
static void test_unconfirmed_acquisition_is_undone(void **state) {
  (void)state;
  rlock_client *c = client(1, 200);
  rlock_lock *l = fx_lock(c, "rep:paused");
  OK(rlock_client_ping(c, NULL)); /* learn the replica count first */
  OK(rlock_lock_try_acquire(l, 0, 30000));
  OK(rlock_lock_release(l));
  rt_server_freeze(replica);
  int64_t t0 = rt_now_ms();
  RC(rlock_lock_try_acquire(l, 0, 30000), RLOCK_EREPLICA);
  ASSERT_BETWEEN(rt_now_ms() - t0, 150, 3000);
  assert_non_null(strstr(rlock_error_last()->message, "given back"));
  assert_int_equal(rt_cmd_int(master, "EXISTS rep:paused"), 0);
  int held = 1;
  OK(rlock_lock_is_held(&held, l));
  assert_int_equal(held, 0);
  RC(rlock_lock_check(l), RLOCK_ENOTHELD);
  rt_server_thaw(replica);
  rt_wait_until(link_up, replica, rt_scaled_ms(10000),
                "the replica to come back");
  OK(rlock_lock_try_acquire(l, 5000, 30000));
  OK(rlock_lock_release(l));
  rlock_lock_free(l);
  rlock_client_free(c);
}

/* Run lock_release.lua as the library sends it, with latch `id`. */
static long long release_with_latch(const char *name, const char *owner,
                                    const char *id) {
  char latch[128], channel[128];
  snprintf(latch, sizeof latch, "redisson_unlock_latch:{%s}:%s", name, id);
  snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
  const rlock__script *s = &rlock__script_lock_release;
  const char *argv[] = {"EVAL", s->text,   "1",     name,    "0",  "30000",
                        owner,  "PUBLISH", "10000", channel, latch};
  size_t lens[11];
  for (int i = 0; i < 11; i++)
    lens[i] = strlen(argv[i]);
  redisReply *r = rt_cmd_argv(master, 11, argv, lens);
  assert_int_equal(r->type, REDIS_REPLY_INTEGER);
  long long v = r->integer;
  freeReplyObject(r);
  return v;
}

/* The unlock latch: a release repeated with the same request id returns
 * the first answer and releases nothing more; a new id releases again. */
static void test_latch_makes_release_idempotent(void **state) {
  (void)state;
  const char *owner = "00000000-0000-4000-8000-000000000000:7";
  freeReplyObject(rt_cmd(master, "HSET rep:latch %s 2", owner));
  freeReplyObject(rt_cmd(master, "PEXPIRE rep:latch 60000"));
  assert_int_equal(release_with_latch("rep:latch", owner, "a1"), 0);
  assert_int_equal(fx_hget(master, "rep:latch", owner), 1);
  assert_int_equal(release_with_latch("rep:latch", owner, "a1"), 0);
  assert_int_equal(fx_hget(master, "rep:latch", owner), 1); /* not again */
  assert_int_equal(release_with_latch("rep:latch", owner, "b2"), 1);
  assert_int_equal(rt_cmd_int(master, "EXISTS rep:latch"), 0);
  assert_int_equal(release_with_latch("rep:latch", owner, "b2"), 1);
  ASSERT_RANGE(rt_cmd_int(master, "PTTL redisson_unlock_latch:{rep:latch}:b2"),
               1, 10000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_writes_wait_for_the_replica),
      cmocka_unit_test(test_sync_off),
      cmocka_unit_test(test_unconfirmed_acquisition_is_undone),
      cmocka_unit_test(test_latch_makes_release_idempotent),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
