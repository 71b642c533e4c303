/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: confirming lock writes on replicas (WAIT after a lock
 * write where the master has replicas, Redisson's checkLockSyncedSlaves),
 * and the unlock latch that makes a repeated release return the first
 * answer. A real master with a real replica; every case once per driver
 * (drivers.h: blocking, libuv, libevent): an acquisition returns once the
 * replica has the hold, a release once it is gone there too; with
 * confirmation off neither WAIT nor INFO is sent; a paused replica
 * (SIGSTOP) confirms nothing, so an acquisition is given back and fails
 * with RLOCK_EREPLICA (or, within a wait, is tried again and succeeds once
 * the replica is back), and a release is reported RLOCK_EREPLICA; so is
 * an acquisition whose WAIT the master cut short when it was made a
 * replica.
 */
#include "drivers.h"

#include "script.h"

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
  rlock_client *c = dk_client_cfg(cfg);
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

/* Lock `name` of client `c`, once `me` took and released it: the client
 * has learnt the replica count (a blocking client pings first; a loop
 * client learns it from the first write). */
static rlock_lock *primed_lock(rlock_client *c, const char *name, uint64_t me) {
  rlock_lock *l = fx_lock(c, name);
  if (!dk_loop())
    OK(rlock_client_ping(c, NULL));
  OK(dk_acquire(l, me, 0, 30000));
  OK(dk_release(l, me));
  return l;
}

/* With a replica attached, every lock write is followed by WAIT: when the
 * acquisition returns, the replica has the hold already; when the release
 * does, the replica has let it go. */
static void test_writes_wait_for_the_replica(void **state) {
  (void)state;
  rlock_client *c = client(1, 2000);
  rt_cmd_ok(master, "CONFIG RESETSTAT");
  rlock_lock *l = fx_lock(c, "rep:a");
  uint64_t me = dk_me();
  char field[RLOCK_OWNER_MAX];
  dk_field(c, me, field);
  OK(dk_acquire(l, me, 0, 30000));
  assert_int_equal(fx_hget(replica, "rep:a", field), 1);
  OK(dk_acquire(l, me, 0, 30000)); /* re-entered */
  assert_int_equal(fx_hget(replica, "rep:a", field), 2);
  OK(dk_release(l, me));
  assert_int_equal(fx_hget(replica, "rep:a", field), 1);
  OK(dk_release(l, me));
  assert_int_equal(rt_cmd_int(replica, "EXISTS rep:a"), 0);
  long long waits, infos;
  counts(master, &waits, &infos);
  assert_true(waits >= 4);
  assert_int_equal(infos, 1); /* the replica count, once */
  /* The other kinds' writes wait too. */
  rlock_lock *fair, *wr;
  OK(rlock_lock_new_fair(&fair, c, "rep:fair"));
  OK(rlock_lock_new_write(&wr, c, "rep:rw"));
  OK(dk_acquire(fair, me, 0, 30000));
  assert_int_equal(fx_hget(replica, "rep:fair", field), 1);
  OK(dk_acquire(wr, me, 0, 30000));
  assert_int_equal(rt_cmd_int(replica, "EXISTS rep:rw"), 1);
  OK(dk_release(fair, me));
  OK(dk_release(wr, me));
  assert_int_equal(rt_cmd_int(replica, "EXISTS rep:fair rep:rw"), 0);
  rlock_lock_free(fair);
  rlock_lock_free(wr);
  rlock_lock_free(l);
  dk_free(c);
}

/* Turned off: no WAIT, no INFO. */
static void test_sync_off(void **state) {
  (void)state;
  rlock_client *c = client(0, 1000);
  rt_cmd_ok(master, "CONFIG RESETSTAT");
  rlock_lock *l = fx_lock(c, "rep:off");
  uint64_t me = dk_me();
  OK(dk_acquire(l, me, 0, 30000));
  OK(dk_release(l, me));
  long long waits, infos;
  counts(master, &waits, &infos);
  assert_int_equal(waits, 0);
  assert_int_equal(infos, 0);
  rlock_lock_free(l);
  dk_free(c);
}

/* A paused replica confirms nothing: an acquisition without a wait fails
 * with RLOCK_EREPLICA after the sync timeout and leaves no hold, locally
 * or on the server; one with a wait is tried again and succeeds once the
 * replica is back; a release no replica confirmed is RLOCK_EREPLICA (the
 * master did release it). */
static void test_paused_replica(void **state) {
  (void)state;
  rlock_client *c = client(1, 200);
  uint64_t me = dk_me();
  rlock_lock *l = primed_lock(c, "rep:paused", me);
  rt_server_freeze(replica);
  int64_t t0 = rt_now_ms();
  result r;
  RC(dk_acquire_r(l, me, 0, 30000, &r), RLOCK_EREPLICA);
  ASSERT_BETWEEN(rt_now_ms() - t0, 150, 3000);
  if (strstr(r.msg, "given back") == NULL)
    fail_msg("the message does not say the hold was given back: %s", r.msg);
  assert_int_equal(rt_cmd_int(master, "EXISTS rep:paused"), 0);
  RC(rlock_lock_check_owner(l, me), RLOCK_ENOTHELD);
  int64_t holds = -1;
  OK(dk_hold_count(&holds, l, me));
  assert_int_equal(holds, 0);
  if (!dk_loop()) {
    int held = 1;
    OK(rlock_lock_is_held(&held, l));
    assert_int_equal(held, 0);
  }
  /* Within a wait: tried again until the replica confirms. */
  uint64_t other = rlock_owner_new();
  dk_op w;
  dk_acquire_start(&w, l, other, rt_scaled_ms(10000), 30000);
  dk_let_time_pass(500); /* several unconfirmed tries go by */
  assert_false(dk_op_done(&w));
  rt_server_thaw(replica);
  OK(dk_op_wait(&w, 15000, "the acquisition waiting for the replica"));
  OK(rlock_lock_check_owner(l, other));
  dk_wait(link_up, replica, 10000, "the replica to come back");
  char field[RLOCK_OWNER_MAX];
  dk_field(c, other, field);
  assert_int_equal(fx_hget(replica, "rep:paused", field), 1);
  /* A release while the replica is paused: done on the master, but not
   * confirmed. */
  rt_server_freeze(replica);
  RC(dk_release(l, other), RLOCK_EREPLICA);
  rt_server_thaw(replica);
  assert_int_equal(rt_cmd_int(master, "EXISTS rep:paused"), 0);
  dk_wait(link_up, replica, 10000, "the replica to come back");
  /* With the replica back, an acquisition with a wait is confirmed. */
  OK(dk_acquire(l, me, 5000, 30000));
  OK(dk_release(l, me));
  rlock_lock_free(l);
  dk_free(c);
}

/* The master counts its replica online again (the replica's own
 * master_link_status can still say up from before its link was cut). */
static bool replica_online(void *arg, char *why, size_t size) {
  char v[128];
  rt_server_info_field(arg, "replication", "slave0", v, sizeof v);
  snprintf(why, size, "slave0:%s", v);
  return strstr(v, "state=online") != NULL;
}

/* The master has a client blocked (WAIT, here). */
static bool a_client_blocked(void *arg, char *why, size_t size) {
  char v[32];
  rt_server_info_field(arg, "clients", "blocked_clients", v, sizeof v);
  snprintf(why, size, "blocked_clients:%s", v);
  return atoi(v) > 0;
}

/* The replica frozen (its WAIT never answers), then `me`'s acquisition
 * of `l` started in `w` and seen blocked in WAIT on the master. */
static void start_blocked_wait(dk_op *w, rlock_lock *l, uint64_t me) {
  rt_server_freeze(replica);
  dk_acquire_start(w, l, me, 0, 30000);
  dk_wait(a_client_blocked, master, 5000, "the acquisition's WAIT");
}

/* The master turned into a replica while the acquisition's WAIT is
 * blocked (as Sentinel turns an old master into a replica): the server
 * answers WAIT with -UNBLOCKED and closes the connection. No replica
 * confirmed the hold, which the new master may not have: the acquisition
 * is given back and fails with RLOCK_EREPLICA, never reported held. */
static void test_demoted_during_wait(void **state) {
  (void)state;
  rlock_client *c = client(1, 1500); /* below the command timeout */
  uint64_t me = rlock_owner_new();   /* the acquisition runs elsewhere */
  rlock_lock *l = primed_lock(c, "rep:demoted", me);
  dk_op w;
  start_blocked_wait(&w, l, me);
  rt_cmd_ok(master, "REPLICAOF 127.0.0.1 %d", rt_free_port());
  RC(dk_op_wait(&w, 15000, "the acquisition whose WAIT was cut"),
     RLOCK_EREPLICA);
  RC(rlock_lock_check_owner(l, me), RLOCK_ENOTHELD);
  rt_cmd_ok(master, "REPLICAOF NO ONE");
  rt_server_thaw(replica);
  freeReplyObject(rt_cmd(master, "DEL rep:demoted")); /* not given back */
  dk_wait(replica_online, master, 10000, "the replica to come back");
  dk_wait(link_up, replica, 10000, "the replica's link");
  rlock_lock_free(l);
  dk_free(c);
}

/* The connection cut after the acquisition's own reply, while its WAIT
 * waits: the hold was taken and no replica confirmed it, so it is given
 * back and the acquisition fails with RLOCK_EREPLICA, by every driver (a
 * loop client read the hold back from the server and reported it held). */
static void test_cut_during_wait(void **state) {
  (void)state;
  rlock_client *c = client(1, 1500); /* below the command timeout */
  uint64_t me = rlock_owner_new();   /* the acquisition runs elsewhere */
  rlock_lock *l = primed_lock(c, "rep:cut", me);
  dk_op w;
  start_blocked_wait(&w, l, me);
  freeReplyObject(rt_cmd(master, "CLIENT KILL TYPE normal"));
  RC(dk_op_wait(&w, 15000, "the acquisition whose connection was cut"),
     RLOCK_EREPLICA);
  RC(rlock_lock_check_owner(l, me), RLOCK_ENOTHELD);
  rt_server_thaw(replica);
  dk_wait(link_up, replica, 10000, "the replica's link");
  assert_int_equal(rt_cmd_int(master, "EXISTS rep:cut"), 0); /* given back */
  rlock_lock_free(l);
  dk_free(c);
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
 * the first answer and releases nothing more; a new id releases again.
 * (The script alone, no client: in the blocking group only.) */
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

/* ---- the groups -----------------------------------------------------------
 */

static int setup(void) {
  if (master == NULL) {
    master = rt_server_start(NULL);
    char port[16];
    snprintf(port, sizeof port, "%d", rt_server_port(master));
    replica = rt_server_start(
        (const char *const[]){"--replicaof", "127.0.0.1", port, NULL});
    rt_wait_until(link_up, replica, rt_scaled_ms(10000), "the replica to sync");
  }
  return 0;
}

static void teardown(void) {
  if (rt_server_pid(replica) != 0)
    kill(rt_server_pid(replica), SIGCONT); /* a failed case froze it */
  char role[16];
  rt_server_role(master, role, sizeof role);
  if (strcmp(role, "master") != 0) /* or left it a replica */
    rt_cmd_ok(master, "REPLICAOF NO ONE");
}

int main(void) {
  (void)srv; /* fixture.h's single server: unused here */
  const dk_case cases[] = {
      DK_CASE(test_writes_wait_for_the_replica, DK_ALL),
      DK_CASE(test_sync_off, DK_ALL),
      DK_CASE(test_paused_replica, DK_ALL),
      DK_CASE(test_demoted_during_wait, DK_ALL),
      DK_CASE(test_cut_during_wait, DK_ALL),
      DK_CASE(test_latch_makes_release_idempotent, DK_BLOCK),
  };
  int failed = DK_RUN(cases, setup, teardown);
  rt_server_free(replica);
  rt_server_free(master);
  return failed;
}
