/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: event-loop clients (rlock/loop.h) confirming lock writes on
 * replicas (WAIT after a lock write where the master has replicas, as
 * blocking clients do), every case once on libuv and once on libevent,
 * against a real master with a real replica: an acquisition's callback
 * runs once the replica has the hold, and a release's once it is gone
 * there too; with confirmation off neither WAIT nor INFO is sent; a
 * paused replica (SIGSTOP) confirms nothing, so an acquisition is given
 * back and fails with RLOCK_EREPLICA (or, within a wait, is tried again
 * and succeeds once the replica is back), and a release is reported
 * RLOCK_EREPLICA. The blocking client's versions are in test_replicas.c.
 */
#include "loop_topo.h"

static rt_server *master, *replica;

static bool link_up(void *arg, char *why, size_t size) {
  char v[32];
  rt_server_info_field(arg, "replication", "master_link_status", v, sizeof v);
  snprintf(why, size, "master_link_status:%s", v);
  return strcmp(v, "up") == 0;
}

static rlock_client *client(int sync, int64_t sync_ms) {
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, rt_server_url(master)));
  OK(rlock_config_set_connect_timeout_ms(cfg, 1000));
  OK(rlock_config_set_command_timeout_ms(cfg, 2000));
  OK(rlock_config_set_replica_sync(cfg, sync));
  OK(rlock_config_set_replica_sync_timeout_ms(cfg, sync_ms));
  if (getenv("RLOCK_TEST_LOG") != NULL)
    OK(rlock_config_set_log(cfg, lt_log, RLOCK_LOG_DEBUG, NULL));
  rlock_client *c = loop_client_cfg(cfg);
  rlock_config_free(cfg);
  return c;
}

/* How many WAIT and INFO commands `s` ran since its last CONFIG RESETSTAT. */
static void counts(rt_server *s, long long *wait, long long *info) {
  redisReply *r = rt_cmd(s, "INFO commandstats");
  const char *w = strstr(r->str, "cmdstat_wait:calls=");
  const char *i = strstr(r->str, "cmdstat_info:calls=");
  *wait = w ? atoll(w + strlen("cmdstat_wait:calls=")) : 0;
  *info = i ? atoll(i + strlen("cmdstat_info:calls=")) : 0;
  freeReplyObject(r);
}

/* With a replica attached, every lock write is followed by WAIT: when the
 * acquisition's callback runs, the replica has the hold already; when the
 * release's does, the replica has let it go. */
static void test_writes_wait_for_the_replica(void **state) {
  (void)state;
  rlock_client *c = client(1, 2000);
  rt_cmd_ok(master, "CONFIG RESETSTAT");
  rlock_lock *l = fx_lock(c, "lrep:a");
  uint64_t me = rlock_owner_new();
  char field[RLOCK_OWNER_MAX];
  field_of(c, me, field);
  OK(acquire(l, me, 0, 30000));
  assert_int_equal(fx_hget(replica, "lrep:a", field), 1);
  OK(acquire(l, me, 0, 30000)); /* re-entered */
  assert_int_equal(fx_hget(replica, "lrep:a", field), 2);
  OK(release(l, me));
  assert_int_equal(fx_hget(replica, "lrep:a", field), 1);
  OK(release(l, me));
  assert_int_equal(rt_cmd_int(replica, "EXISTS lrep:a"), 0);
  long long waits, infos;
  counts(master, &waits, &infos);
  assert_true(waits >= 4);
  assert_int_equal(infos, 1); /* the replica count, once */
  /* The other kinds' writes wait too. */
  rlock_lock *fair, *wr;
  OK(rlock_lock_new_fair(&fair, c, "lrep:fair"));
  OK(rlock_lock_new_write(&wr, c, "lrep:rw"));
  OK(acquire(fair, me, 0, 30000));
  assert_int_equal(fx_hget(replica, "lrep:fair", field), 1);
  OK(acquire(wr, me, 0, 30000));
  assert_int_equal(rt_cmd_int(replica, "EXISTS lrep:rw"), 1);
  OK(release(fair, me));
  OK(release(wr, me));
  assert_int_equal(rt_cmd_int(replica, "EXISTS lrep:fair lrep:rw"), 0);
  rlock_lock_free(fair);
  rlock_lock_free(wr);
  rlock_lock_free(l);
  loop_free(c);
}

/* Turned off: no WAIT, no INFO. */
static void test_sync_off(void **state) {
  (void)state;
  rlock_client *c = client(0, 1000);
  rt_cmd_ok(master, "CONFIG RESETSTAT");
  rlock_lock *l = fx_lock(c, "lrep:off");
  uint64_t me = rlock_owner_new();
  OK(acquire(l, me, 0, 30000));
  OK(release(l, me));
  long long waits, infos;
  counts(master, &waits, &infos);
  assert_int_equal(waits, 0);
  assert_int_equal(infos, 0);
  rlock_lock_free(l);
  loop_free(c);
}

/* A paused replica confirms nothing: an acquisition without a wait fails
 * with RLOCK_EREPLICA after the sync timeout and leaves no hold, locally
 * or on the server; one with a wait is tried again and succeeds once the
 * replica is back; a release no replica confirmed is RLOCK_EREPLICA (the
 * master did release it). */
static void test_paused_replica(void **state) {
  (void)state;
  rlock_client *c = client(1, 200);
  rlock_lock *l = fx_lock(c, "lrep:paused");
  uint64_t me = rlock_owner_new();
  OK(acquire(l, me, 0, 30000)); /* learns the replica count */
  OK(release(l, me));
  rt_server_freeze(replica);
  int64_t t0 = rt_now_ms();
  result r;
  RC(acquire_r(l, me, 0, 30000, &r), RLOCK_EREPLICA);
  ASSERT_BETWEEN(rt_now_ms() - t0, 150, 3000);
  if (strstr(r.msg, "given back") == NULL)
    fail_msg("the message does not say the hold was given back: %s", r.msg);
  assert_int_equal(rt_cmd_int(master, "EXISTS lrep:paused"), 0);
  RC(rlock_lock_check_owner(l, me), RLOCK_ENOTHELD);
  /* Within a wait: tried again until the replica confirms. */
  result w = {0};
  rlock_acquire_options o = opts(me, rt_scaled_ms(10000), 30000);
  OK(rlock_lock_acquire_async(l, &o, on_done, &w, NULL));
  int64_t end = rt_now_ms() + 500;
  while (rt_now_ms() < end) /* several unconfirmed tries go by */
    run_once(end - rt_now_ms());
  assert_int_equal(w.done, 0);
  rt_server_thaw(replica);
  run_until(&w.done, 1, 15000, "the acquisition waiting for the replica");
  OK(w.rc);
  OK(rlock_lock_check_owner(l, me));
  run_until_pred(link_up, replica, 10000, "the replica to come back");
  char field[RLOCK_OWNER_MAX];
  field_of(c, me, field);
  assert_int_equal(fx_hget(replica, "lrep:paused", field), 1);
  /* A release while the replica is paused: done on the master, but not
   * confirmed. */
  rt_server_freeze(replica);
  result rel = {0};
  OK(rlock_lock_release_async(l, me, on_done, &rel));
  run_until(&rel.done, 1, 15000, "the unconfirmed release");
  rt_server_thaw(replica);
  RC(rel.rc, RLOCK_EREPLICA);
  assert_int_equal(rt_cmd_int(master, "EXISTS lrep:paused"), 0);
  run_until_pred(link_up, replica, 10000, "the replica to come back");
  rlock_lock_free(l);
  loop_free(c);
}

/* ---- the groups ------------------------------------------------------------
 */

static int setup(void **state) {
  (void)state;
  if (master == NULL) {
    master = rt_server_start(NULL);
    char port[16];
    snprintf(port, sizeof port, "%d", rt_server_port(master));
    replica = rt_server_start(
        (const char *const[]){"--replicaof", "127.0.0.1", port, NULL});
    rt_wait_until(link_up, replica, rt_scaled_ms(10000), "the replica to sync");
  }
  loop_open();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  if (rt_server_pid(replica) != 0)
    kill(rt_server_pid(replica), SIGCONT); /* a failed case froze it */
  loop_close();
  return 0;
}

int main(void) {
  (void)srv; /* fixture.h's single server: unused here */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_writes_wait_for_the_replica),
      cmocka_unit_test(test_sync_off),
      cmocka_unit_test(test_paused_replica),
  };
  if (getenv("RLOCK_TEST_FILTER") != NULL)
    cmocka_set_test_filter(getenv("RLOCK_TEST_FILTER"));
  int failed = 0;
  kind = UV;
  failed += cmocka_run_group_tests_name("libuv", tests, setup, teardown);
  kind = EV;
  failed += cmocka_run_group_tests_name("libevent", tests, setup, teardown);
  rt_server_free(replica);
  rt_server_free(master);
  return failed;
}
