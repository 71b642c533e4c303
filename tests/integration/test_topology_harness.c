/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_topology_harness.c - self-test of tests/support/rt_cluster and
 * rt_sentinel: a real Redis Cluster (hash slots, MOVED, ASK during a live
 * migration, failover) and a real Sentinel deployment (failover after the
 * master is killed). Prints how long start-ups and failovers take.
 *
 * Every wait is on an observable condition (CLUSTER INFO, ROLE, INFO
 * replication, SENTINEL replies), bounded, inside the harness.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "rt_cluster.h"
#include "rt_sentinel.h"
#include "rt_server.h"
#include "rt_util.h"

/* ------------------------------------------------------------------------ */
/* Small helpers                                                            */
/* ------------------------------------------------------------------------ */

static void report(const char *what, int64_t ms) {
  printf("[   TIME   ] %s: %lld ms\n", what, (long long)ms);
  fflush(stdout);
}

/* The reply (freed here) is of type `type` with text `want`: a string, a
   status, or an error such as "MOVED <slot> 127.0.0.1:<port>". */
static void assert_reply(redisReply *r, int type, const char *want) {
  assert_non_null(r);
  if (r->type != type || !r->str || strcmp(r->str, want) != 0)
    fail_msg("expected reply type %d \"%s\", got type %d \"%s\"", type, want,
             r->type, r->str ? r->str : "");
  freeReplyObject(r);
}

#define assert_reply_string(r, want)                                           \
  assert_reply((r), REDIS_REPLY_STRING, (want))

/* The reply is the error "<kind> <slot> 127.0.0.1:<port>". */
static void assert_redirect(redisReply *r, const char *kind, int slot,
                            int port) {
  char want[64];
  snprintf(want, sizeof want, "%s %d 127.0.0.1:%d", kind, slot, port);
  assert_reply(r, REDIS_REPLY_ERROR, want);
}

static bool process_gone(pid_t pid) {
  return kill(pid, 0) == -1 && errno == ESRCH;
}

static bool path_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* Pids and directories of a set of servers, to check they are gone. */
struct leftovers {
  int n;
  pid_t pid[64];
  char dir[64][128];
};

static void note_server(struct leftovers *l, rt_server *s) {
  assert_true(l->n < 64);
  l->pid[l->n] = rt_server_pid(s);
  snprintf(l->dir[l->n], sizeof l->dir[l->n], "%s", rt_server_dir(s));
  l->n++;
}

static void assert_all_gone(const struct leftovers *l) {
  for (int i = 0; i < l->n; i++) {
    if (l->pid[i] > 0 && !process_gone(l->pid[i]))
      fail_msg("process %d is still there", (int)l->pid[i]);
    if (path_exists(l->dir[i]))
      fail_msg("directory %s is still there", l->dir[i]);
  }
}

/* ------------------------------------------------------------------------ */
/* Hash slots (no server)                                                   */
/* ------------------------------------------------------------------------ */

static void test_slot_of_known_values(void **state) {
  (void)state;
  /* The cluster spec's CRC16 check value: 0x31C3 for "123456789". */
  assert_int_equal(rt_cluster_slot_of("123456789"), 0x31C3 % RT_CLUSTER_SLOTS);
  assert_int_equal(rt_cluster_slot_of("foo"), 12182);
  assert_int_equal(rt_cluster_slot_of("{user1000}.following"),
                   rt_cluster_slot_of("{user1000}.followers"));
  assert_int_equal(rt_cluster_slot_of("{a}{b}"), rt_cluster_slot_of("a"));
  assert_int_equal(rt_cluster_slot_of("x{{a}}"), rt_cluster_slot_of("{a"));
  char key[64];
  rt_cluster_key_in_slot(42, "k", key, sizeof key);
  assert_int_equal(rt_cluster_slot_of(key), 42);
}

/* ------------------------------------------------------------------------ */
/* A cluster of three masters, shared by the tests of this group            */
/* ------------------------------------------------------------------------ */

static int setup_cluster3(void **state) {
  int64_t t0 = rt_now_ms();
  rt_cluster *c = rt_cluster_start(3, 0);
  report("cluster start, 3 masters", rt_now_ms() - t0);
  *state = c;
  return 0;
}

static int teardown_cluster(void **state) {
  rt_cluster *c = *state;
  struct leftovers l = {0};
  for (int i = 0; i < rt_cluster_size(c); i++)
    note_server(&l, rt_cluster_node(c, i));
  rt_cluster_free(c);
  assert_all_gone(&l);
  return 0;
}

static void test_cluster_layout(void **state) {
  rt_cluster *c = *state;
  assert_int_equal(rt_cluster_size(c), 3);
  assert_int_equal(rt_cluster_masters(c), 3);
  char url[256];
  snprintf(url, sizeof url,
           "redis-cluster://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
           rt_cluster_port(c, 0), rt_cluster_port(c, 1), rt_cluster_port(c, 2));
  assert_string_equal(rt_cluster_url(c), url);
  for (int i = 0; i < 3; i++) {
    assert_true(rt_cluster_is_master(c, i));
    assert_int_equal(rt_cluster_replica_of(c, i), -1);
    assert_int_equal(strlen(rt_cluster_node_id(c, i)), RT_CLUSTER_ID_LEN);
    assert_int_equal(rt_cluster_node_by_port(c, rt_cluster_port(c, i)), i);
    assert_int_equal(rt_server_port(rt_cluster_node(c, i)),
                     rt_cluster_port(c, i));
    redisReply *r = rt_cmd(rt_cluster_node(c, i), "CLUSTER MYID");
    assert_reply_string(r, rt_cluster_node_id(c, i));
    /* Even ranges, in order. */
    assert_int_equal(rt_cluster_slot_owner(c, i * RT_CLUSTER_SLOTS / 3), i);
    assert_int_equal(
        rt_cluster_slot_owner(c, (i + 1) * RT_CLUSTER_SLOTS / 3 - 1), i);
    char key[64];
    rt_cluster_key_on(c, i, "key:", key, sizeof key);
    assert_int_equal(rt_cluster_slot_owner(c, rt_cluster_slot_of(key)), i);
    rt_cmd_ok(rt_cluster_node(c, i), "SET %s v", key);
  }
  assert_int_equal(rt_cluster_node_by_port(c, 1), -1);
}

/* Our slot function against CLUSTER KEYSLOT, edge cases and many keys. */
static void test_slot_of_matches_server(void **state) {
  rt_cluster *c = *state;
  rt_server *s = rt_cluster_node(c, 0);
  static const char *const edge[] = {
      "",
      "{}",
      "a{}b",
      "{a}{b}",
      "{{a}}",
      "}{a}",
      "{a",
      "a}",
      "{",
      "}",
      "{}{a}",
      "foo{bar}zap",
      "{user1000}.following",
      "a{b}c{d}",
      "{ }",
      "\xff\xfe{\x01}",
  };
  for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) {
    long long want =
        rt_cmd_int(s, "CLUSTER KEYSLOT %b", edge[i], strlen(edge[i]));
    if (rt_cluster_slot_of(edge[i]) != want)
      fail_msg("slot of \"%s\": %d, CLUSTER KEYSLOT says %lld", edge[i],
               rt_cluster_slot_of(edge[i]), want);
  }
  /* Binary keys with NULs, tags anywhere, lengths 0..40. */
  unsigned seed = 12345;
  for (int i = 0; i < 1500; i++) {
    char key[48];
    size_t len = (size_t)(i % 41);
    for (size_t k = 0; k < len; k++) {
      seed = seed * 1103515245u + 12345u;
      unsigned v = (seed >> 16) & 0xff;
      key[k] = (char)(v < 24 ? '{' : v < 48 ? '}' : v < 56 ? 0 : v);
    }
    long long want = rt_cmd_int(s, "CLUSTER KEYSLOT %b", key, len);
    if (rt_cluster_slot_of_len(key, len) != want)
      fail_msg("slot of key #%d (%zu bytes): %d, CLUSTER KEYSLOT says %lld", i,
               len, rt_cluster_slot_of_len(key, len), want);
  }
}

static void test_moved(void **state) {
  rt_cluster *c = *state;
  for (int owner = 0; owner < 3; owner++) {
    char key[64];
    rt_cluster_key_on(c, owner, "moved:", key, sizeof key);
    int slot = rt_cluster_slot_of(key);
    for (int other = 0; other < 3; other++) {
      if (other == owner)
        continue;
      assert_redirect(rt_cmd(rt_cluster_node(c, other), "SET %s v", key),
                      "MOVED", slot, rt_cluster_port(c, owner));
    }
    rt_cmd_ok(rt_cluster_node(c, owner), "SET %s v", key);
  }
}

/* Live migration of a slot with 10 keys, stopped half-way: -ASK for a key
   already moved, the value still served for one not moved yet, ASKING on
   the target; after finishing, every node's CLUSTER SLOTS and -MOVED name
   the new owner, and every key is there. */
static void test_migration(void **state) {
  rt_cluster *c = *state;
  enum { NKEYS = 10 };
  char tag[32], keys[NKEYS][48];
  rt_cluster_key_on(c, 0, "mig", tag, sizeof tag);
  int slot = rt_cluster_slot_of(tag);
  rt_server *from = rt_cluster_node(c, 0), *to = rt_cluster_node(c, 1);
  for (int k = 0; k < NKEYS; k++) {
    snprintf(keys[k], sizeof keys[k], "{%s}:%d", tag, k);
    assert_int_equal(rt_cluster_slot_of(keys[k]), slot);
    rt_cmd_ok(from, "SET %s value-%d", keys[k], k);
  }

  rt_cluster_migrate_begin(c, slot, 0, 1);
  assert_int_equal(rt_cluster_migrate_keys(c, slot, 0, 1, 3), 3);
  assert_int_equal(rt_cmd_int(from, "CLUSTER COUNTKEYSINSLOT %d", slot),
                   NKEYS - 3);
  /* Which keys went: those the source no longer lists (EXISTS would
     answer -ASK for them). */
  redisReply *left = rt_cmd(from, "CLUSTER GETKEYSINSLOT %d %d", slot, NKEYS);
  assert_int_equal(left->type, REDIS_REPLY_ARRAY);
  assert_int_equal(left->elements, NKEYS - 3);
  int moved_key = -1, kept_key = -1;
  for (int k = 0; k < NKEYS; k++) {
    bool here = false;
    for (size_t e = 0; e < left->elements; e++)
      here = here || strcmp(left->element[e]->str, keys[k]) == 0;
    *(here ? &kept_key : &moved_key) = k;
  }
  freeReplyObject(left);
  assert_true(moved_key >= 0 && kept_key >= 0);
  assert_redirect(rt_cmd(from, "GET %s", keys[moved_key]), "ASK", slot,
                  rt_server_port(to));
  char want[32];
  snprintf(want, sizeof want, "value-%d", kept_key);
  assert_reply_string(rt_cmd(from, "GET %s", keys[kept_key]), want);
  /* Without ASKING the target still redirects to the owner. */
  assert_redirect(rt_cmd(to, "GET %s", keys[moved_key]), "MOVED", slot,
                  rt_server_port(from));
  redisContext *asking = rt_server_connect(to);
  assert_reply(redisCommand(asking, "ASKING"), REDIS_REPLY_STATUS, "OK");
  snprintf(want, sizeof want, "value-%d", moved_key);
  assert_reply_string(redisCommand(asking, "GET %s", keys[moved_key]), want);
  redisFree(asking);

  rt_cluster_migrate_finish(c, slot, 0, 1);
  assert_int_equal(rt_cluster_slot_owner(c, slot), 1);
  for (int i = 0; i < 3; i++) {
    rt_server *s = rt_cluster_node(c, i);
    redisReply *r = rt_cmd(s, "CLUSTER SLOTS");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    int owner_port = -1;
    for (size_t k = 0; k < r->elements; k++) {
      redisReply *range = r->element[k];
      if (range->element[0]->integer <= slot &&
          slot <= range->element[1]->integer)
        owner_port = (int)range->element[2]->element[1]->integer;
    }
    freeReplyObject(r);
    assert_int_equal(owner_port, rt_server_port(to));
    if (i != 1)
      assert_redirect(rt_cmd(s, "GET %s", keys[0]), "MOVED", slot,
                      rt_server_port(to));
  }
  assert_int_equal(rt_cmd_int(to, "CLUSTER COUNTKEYSINSLOT %d", slot), NKEYS);
  for (int k = 0; k < NKEYS; k++) {
    snprintf(want, sizeof want, "value-%d", k);
    assert_reply_string(rt_cmd(to, "GET %s", keys[k]), want);
  }
  /* And back in one go. */
  rt_cluster_migrate_slot(c, slot, 1, 0);
  assert_int_equal(rt_cluster_slot_owner(c, slot), 0);
  assert_int_equal(rt_cmd_int(from, "CLUSTER COUNTKEYSINSLOT %d", slot), NKEYS);
}

/* ------------------------------------------------------------------------ */
/* Three masters with a replica each: failovers                             */
/* ------------------------------------------------------------------------ */

static void test_cluster_failover(void **state) {
  (void)state;
  int64_t t0 = rt_now_ms();
  rt_cluster *c = rt_cluster_start(3, 1);
  report("cluster start, 3 masters + 3 replicas", rt_now_ms() - t0);
  assert_int_equal(rt_cluster_size(c), 6);
  for (int m = 0; m < 3; m++) {
    assert_true(rt_cluster_is_master(c, m));
    assert_false(rt_cluster_is_master(c, 3 + m));
    assert_int_equal(rt_cluster_replica_of(c, m), 3 + m);
  }
  char key[64];
  rt_cluster_key_on(c, 0, "fo:", key, sizeof key);
  int slot = rt_cluster_slot_of(key);
  rt_cmd_ok(rt_cluster_node(c, 0), "SET %s before", key);
  /* The replica serves reads only in READONLY mode; WAIT makes sure the
     write has reached it. */
  assert_int_equal(rt_cmd_int(rt_cluster_node(c, 0), "WAIT 1 5000"), 1);

  /* Graceful: node 3 takes over from node 0, which becomes its replica. */
  assert_int_equal(rt_cluster_failover(c, 0), 3);
  report("cluster graceful failover (CLUSTER FAILOVER)",
         rt_cluster_last_failover_ms(c));
  assert_true(rt_cluster_is_master(c, 3));
  assert_false(rt_cluster_is_master(c, 0));
  assert_int_equal(rt_cluster_slot_owner(c, slot), 3);
  assert_int_equal(rt_cluster_replica_of(c, 3), 0);
  assert_reply_string(rt_cmd(rt_cluster_node(c, 3), "GET %s", key), "before");
  assert_redirect(rt_cmd(rt_cluster_node(c, 0), "GET %s", key), "MOVED", slot,
                  rt_cluster_port(c, 3));

  /* Crash: node 1 is killed, node 4 takes over by itself. */
  rt_cluster_key_on(c, 1, "fo:", key, sizeof key);
  slot = rt_cluster_slot_of(key);
  pid_t killed = rt_server_pid(rt_cluster_node(c, 1));
  assert_int_equal(rt_cluster_kill_master(c, 1, rt_scaled_ms(30000)), 4);
  report("cluster failover after kill -9 of a master",
         rt_cluster_last_failover_ms(c));
  assert_true(process_gone(killed));
  assert_int_equal(rt_server_pid(rt_cluster_node(c, 1)), 0);
  assert_int_equal(rt_cluster_slot_owner(c, slot), 4);
  rt_cmd_ok(rt_cluster_node(c, 4), "SET %s after", key);
  char url[256];
  snprintf(url, sizeof url,
           "redis-cluster://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
           rt_cluster_port(c, 2), rt_cluster_port(c, 3), rt_cluster_port(c, 4));
  assert_string_equal(rt_cluster_url(c), url);

  /* The killed node comes back as a replica of its successor. */
  rt_server_start_again(rt_cluster_node(c, 1));
  rt_cluster_wait_ok(c, rt_scaled_ms(30000));
  assert_false(rt_cluster_is_master(c, 1));
  assert_int_equal(rt_cluster_replica_of(c, 4), 1);

  void *cs = c;
  teardown_cluster(&cs);
}

/* ------------------------------------------------------------------------ */
/* Sentinel                                                                 */
/* ------------------------------------------------------------------------ */

static void test_sentinel_kill_master(void **state) {
  (void)state;
  int64_t t0 = rt_now_ms();
  rt_sentinel_group *g = rt_sentinel_start("mymaster", 1, 3);
  report("sentinel group start, 1 master + 1 replica + 3 sentinels",
         rt_now_ms() - t0);

  assert_string_equal(rt_sentinel_name(g), "mymaster");
  assert_int_equal(rt_sentinel_nservers(g), 2);
  assert_int_equal(rt_sentinel_nreplicas(g), 1);
  assert_int_equal(rt_sentinel_nsentinels(g), 3);
  rt_server *master = rt_sentinel_master(g),
            *replica = rt_sentinel_replica(g, 0);
  assert_ptr_equal(master, rt_sentinel_server(g, 0));
  assert_ptr_equal(replica, rt_sentinel_server(g, 1));
  assert_int_equal(rt_sentinel_master_index(g), 0);
  char url[256];
  snprintf(url, sizeof url,
           "redis-sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d#mymaster",
           rt_server_port(rt_sentinel_sentinel(g, 0)),
           rt_server_port(rt_sentinel_sentinel(g, 1)),
           rt_server_port(rt_sentinel_sentinel(g, 2)));
  assert_string_equal(rt_sentinel_url(g), url);
  assert_int_equal(rt_sentinel_master_port(g), rt_server_port(master));
  char role[16];
  rt_server_role(rt_sentinel_sentinel(g, 0), role, sizeof role);
  assert_string_equal(role, "sentinel");
  /* Sentinel rewrote its config, which stays in its directory. */
  assert_true(path_exists(rt_server_config_path(rt_sentinel_sentinel(g, 0))));

  rt_cmd_ok(master, "SET k before");
  assert_int_equal(rt_cmd_int(master, "WAIT 1 5000"), 1);
  rt_sentinel_kill_master(g);
  int port = rt_sentinel_wait_failover(g, rt_scaled_ms(30000));
  report("sentinel failover after kill -9 of the master",
         rt_sentinel_failover_ms(g));
  assert_int_equal(port, rt_server_port(replica));
  assert_ptr_equal(rt_sentinel_master(g), replica);
  assert_ptr_equal(rt_sentinel_replica(g, 0), master);
  rt_server_role(replica, role, sizeof role);
  assert_string_equal(role, "master");
  assert_reply_string(rt_cmd(replica, "GET k"), "before");
  rt_cmd_ok(replica, "SET k after");

  struct leftovers l = {0};
  for (int i = 0; i < 2; i++)
    note_server(&l, rt_sentinel_server(g, i));
  for (int i = 0; i < 3; i++)
    note_server(&l, rt_sentinel_sentinel(g, i));
  rt_sentinel_free(g);
  assert_all_gone(&l);
}

static void test_sentinel_graceful_failover(void **state) {
  (void)state;
  rt_sentinel_group *g = rt_sentinel_start("graceful", 1, 3);
  rt_server *old_master = rt_sentinel_master(g),
            *replica = rt_sentinel_replica(g, 0);
  int port = rt_sentinel_failover(g, rt_scaled_ms(30000));
  report("sentinel graceful failover (SENTINEL FAILOVER)",
         rt_sentinel_failover_ms(g));
  assert_int_equal(port, rt_server_port(replica));
  assert_int_equal(rt_sentinel_master_port(g), port);
  assert_ptr_equal(rt_sentinel_master(g), replica);
  assert_ptr_equal(rt_sentinel_replica(g, 0), old_master);
  /* The sentinels make the old master a replica of the new one only some
     10 s later (they first wait for it to keep claiming to be a master
     for four hello periods): rt_sentinel_wait_replicas() would wait for
     that, too long for this test. */
  rt_sentinel_free(g);
}

typedef struct key_seen {
  rt_server *s;
  const char *key, *want;
} key_seen;

static bool pred_key_seen(void *arg, char *why, size_t cap) {
  key_seen *w = arg;
  redisReply *r = rt_cmd(w->s, "GET %s", w->key);
  bool ok = r->type == REDIS_REPLY_STRING && strcmp(r->str, w->want) == 0;
  snprintf(why, cap, "port %d: %s is %s", rt_server_port(w->s), w->key,
           r->type == REDIS_REPLY_STRING ? r->str : "not set");
  freeReplyObject(r);
  return ok;
}

/* A write on the master reaches the replica at once, with no WAIT to ask
 * for it: the replica receives the master's stream. (Well under the
 * replica's once-a-second REPLCONF ACK, which a Redis 7 master waits for
 * after a diskless full sync before it streams to that replica.) */
static void assert_streams(rt_server *master, rt_server *replica,
                           const char *value) {
  rt_cmd_ok(master, "SET k %s", value);
  key_seen w = {replica, "k", value};
  rt_wait_until(pred_key_seen, &w, rt_scaled_ms(300),
                "the write on the replica, without WAIT");
}

/* Back-to-back failovers, each settled: the second promotes the first old
 * master, which by then replicates the first new one, so a write made
 * between the two is still there. (With rt_sentinel_failover() alone the
 * old master is still a master of its own when the second failover
 * promotes it: the write is gone.) Settled means streaming, not only the
 * link up: after each, a write reaches the replica without WAIT. */
static void test_sentinel_failover_settled(void **state) {
  (void)state;
  rt_sentinel_group *g = rt_sentinel_start("settled", 1, 3);
  rt_server *first = rt_sentinel_master(g), *second = rt_sentinel_replica(g, 0);
  int port = rt_sentinel_failover_settled(g, rt_scaled_ms(30000));
  assert_int_equal(port, rt_server_port(second));
  char role[16];
  rt_server_role(first, role, sizeof role);
  assert_string_equal(role, "slave");
  assert_streams(second, first, "between");
  assert_int_equal(rt_cmd_int(second, "WAIT 1 5000"), 1);
  port = rt_sentinel_failover_settled(g, rt_scaled_ms(30000));
  assert_int_equal(port, rt_server_port(first));
  assert_reply_string(rt_cmd(first, "GET k"), "between");
  rt_server_role(second, role, sizeof role);
  assert_string_equal(role, "slave");
  assert_streams(first, second, "after");
  port = rt_sentinel_failover_settled(g, rt_scaled_ms(30000));
  assert_int_equal(port, rt_server_port(second));
  assert_streams(second, first, "third");
  rt_sentinel_free(g);
}

int main(void) {
  const struct CMUnitTest slots[] = {
      cmocka_unit_test(test_slot_of_known_values),
  };
  const struct CMUnitTest cluster3[] = {
      cmocka_unit_test(test_cluster_layout),
      cmocka_unit_test(test_slot_of_matches_server),
      cmocka_unit_test(test_moved),
      cmocka_unit_test(test_migration),
  };
  const struct CMUnitTest others[] = {
      cmocka_unit_test(test_cluster_failover),
      cmocka_unit_test(test_sentinel_kill_master),
      cmocka_unit_test(test_sentinel_graceful_failover),
      cmocka_unit_test(test_sentinel_failover_settled),
  };
  int failed = cmocka_run_group_tests_name("hash slots", slots, NULL, NULL);
  failed += cmocka_run_group_tests_name("cluster of 3 masters", cluster3,
                                        setup_cluster3, teardown_cluster);
  failed += cmocka_run_group_tests_name("failovers", others, NULL, NULL);
  return failed;
}
