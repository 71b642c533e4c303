/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: keys that are not locks, and locks of another family on
 * the same name. Every operation of every lock kind must refuse them with
 * RLOCK_EWRONGTYPE (or, for a release of something never held,
 * RLOCK_ENOTHELD) and leave the key byte for byte as it was; no script
 * may loop over a count it read from the hash without a budget, so Redis
 * keeps answering PING. Locks of other Redisson ports, whose owner ids are
 * not "<uuid>:<thread>", are still honoured. */
#include "fixture.h"

enum kind { PLAIN, FAIR, READ, WRITE, NKINDS };
static const char *const kind_name[NKINDS] = {"plain", "fair", "read", "write"};

static rlock_lock *make(rlock_client *c, enum kind k, const char *name) {
  rlock_lock *l;
  switch (k) {
  case PLAIN:
    OK(rlock_lock_new(&l, c, name));
    break;
  case FAIR:
    OK(rlock_lock_new_fair(&l, c, name));
    break;
  case READ:
    OK(rlock_lock_new_read(&l, c, name));
    break;
  default:
    OK(rlock_lock_new_write(&l, c, name));
    break;
  }
  return l;
}

/* DUMP of `key` (its exact value and type) into buf; returns the length.
 * PTTL is compared apart: it moves. */
static size_t dump(const char *key, char *buf, size_t size) {
  redisReply *r = rt_cmd(srv, "DUMP %s", key);
  assert_int_equal(r->type, REDIS_REPLY_STRING);
  assert_true(r->len <= size);
  memcpy(buf, r->str, r->len);
  size_t n = r->len;
  freeReplyObject(r);
  return n;
}

/* Redis still answers PING (`after` says after what). */
static void assert_pong(const char *after) {
  redisReply *r = rt_cmd(srv, "PING");
  if (r->type != REDIS_REPLY_STATUS || strcmp(r->str, "PONG") != 0)
    fail_msg("after %s Redis answers '%s' to PING", after,
             r->str ? r->str : "?");
  freeReplyObject(r);
}

/* A key and its DUMP before the calls of one lock kind on it. */
typedef struct before {
  const char *key, *kind, *needle;
  char dump[4096];
  size_t n;
} before;

static before before_calls(const char *key, const char *kind,
                           const char *needle) {
  before b = {key, kind, needle, "", 0};
  b.n = dump(key, b.dump, sizeof b.dump);
  return b;
}

/* `op`'s status `rc`: refused, RLOCK_EWRONGTYPE saying b->needle (a
 * release, `notheld_ok`, may say RLOCK_ENOTHELD); the key is as it was
 * and Redis answers. */
static void refused(const before *b, const char *op, int rc, int notheld_ok) {
  char what[128], after[4096];
  snprintf(what, sizeof what, "%s %s", b->kind, op);
  const char *msg = rlock_error_last()->message;
  if (rc != RLOCK_EWRONGTYPE && !(notheld_ok && rc == RLOCK_ENOTHELD))
    fail_msg("%s returned %d (%s), expected RLOCK_EWRONGTYPE", what, rc, msg);
  if (rc == RLOCK_EWRONGTYPE && b->needle != NULL &&
      strstr(msg, b->needle) == NULL)
    fail_msg("%s: message '%s' lacks '%s'", what, msg, b->needle);
  size_t m = dump(b->key, after, sizeof after);
  if (m != b->n || memcmp(b->dump, after, m) != 0)
    fail_msg("%s changed key '%s'", what, b->key);
  assert_pong(what);
}

/* Acquire (at once and waiting), force release and release with `l` on
 * `key`: each refused, the key unchanged. A release of a key this thread
 * never held may also say RLOCK_ENOTHELD. */
static void refuse_writes(rlock_lock *l, const char *kind, const char *key,
                          const char *needle, int force) {
  before b = before_calls(key, kind, needle);
  refused(&b, "try_acquire(0)", rlock_lock_try_acquire(l, 0, 5000), 0);
  refused(&b, "try_acquire(200ms)", rlock_lock_try_acquire(l, 200, 0), 0);
  if (force)
    refused(&b, "force_release", rlock_lock_force_release(NULL, l), 0);
  refused(&b, "release", rlock_lock_release(l), 1);
}

/* Every question about a key that is not a lock is refused too. */
static void refuse_queries(rlock_lock *l, const char *kind, const char *key,
                           const char *needle) {
  before b = before_calls(key, kind, needle);
  int64_t v;
  int locked;
  rlock_lock_info *info;
  refused(&b, "is_locked", rlock_lock_is_locked(&locked, l), 0);
  refused(&b, "ttl", rlock_lock_ttl(&v, l), 0);
  refused(&b, "inspect", rlock_lock_inspect(&info, l), 0);
}

/* A key that is not a lock: every operation of every kind refuses it. */
static void refuse_everything(const char *key, const char *needle) {
  rlock_client *c = fx_client(srv, 0);
  for (int k = 0; k < NKINDS; k++) {
    rlock_lock *l = make(c, (enum kind)k, key);
    refuse_writes(l, kind_name[k], key, needle, 1);
    refuse_queries(l, kind_name[k], key, needle);
    rlock_lock_free(l);
  }
  rlock_client_free(c);
}

static void test_user_hash_is_not_a_lock(void **state) {
  (void)state;
  freeReplyObject(rt_cmd(srv, "HSET user:42 name alice balance 20"));
  refuse_everything("user:42", "not a lock");
  /* With an expiry it is still not a lock: "alice" is no hold count. */
  freeReplyObject(rt_cmd(srv, "PEXPIRE user:42 600000"));
  refuse_everything("user:42", "\"name\" is not a hold count");
  freeReplyObject(rt_cmd(srv, "DEL user:42"));
}

static void test_hash_with_huge_number(void **state) {
  (void)state;
  freeReplyObject(rt_cmd(srv, "HSET user:44 balance 99999999999"));
  refuse_everything("user:44", "no expiry");
  /* A mode field does not make it a read-write lock without an expiry. */
  freeReplyObject(rt_cmd(srv, "HSET user:45 mode read balance 99999999999"));
  refuse_everything("user:45", "not a lock");
  freeReplyObject(rt_cmd(srv, "DEL user:44 user:45"));
}

static void test_other_types(void **state) {
  (void)state;
  freeReplyObject(rt_cmd(srv, "SET bk:string v"));
  freeReplyObject(rt_cmd(srv, "RPUSH bk:list a b"));
  freeReplyObject(rt_cmd(srv, "SADD bk:set a"));
  refuse_everything("bk:string", "holds a string, not a lock");
  refuse_everything("bk:list", "holds a list, not a lock");
  refuse_everything("bk:set", "holds a set, not a lock");
  freeReplyObject(rt_cmd(srv, "DEL bk:string bk:list bk:set"));
}

/* A plain lock and a read-write lock on one name never both get in, not
 * even for the same thread (Redisson lets a reader's thread take the
 * plain lock, whose field is the reader's). */
static void test_families_do_not_mix(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *plain = make(c, PLAIN, "mix:a");
  OK(rlock_lock_try_acquire(plain, 0, 0));
  for (int k = READ; k <= WRITE; k++) {
    rlock_lock *l = make(c, (enum kind)k, "mix:a");
    refuse_writes(l, kind_name[k], "mix:a", "not a read-write lock", 1);
    rlock_lock_free(l);
  }
  OK(rlock_lock_release(plain));
  rlock_lock_free(plain);

  /* A fair lock object's force release takes any lock (tools use it for
   * every kind), so only its acquire and release are refused here. */
  for (int k = READ; k <= WRITE; k++) {
    rlock_lock *held = make(c, (enum kind)k, "mix:b");
    OK(rlock_lock_try_acquire(held, 0, 0));
    for (int m = PLAIN; m <= FAIR; m++) {
      rlock_lock *l = make(c, (enum kind)m, "mix:b");
      refuse_writes(l, kind_name[m], "mix:b", "holds a read-write lock",
                    m == PLAIN);
      rlock_lock_free(l);
    }
    OK(rlock_lock_release(held));
    rlock_lock_free(held);
  }
  assert_int_equal(rt_cmd_int(srv, "EXISTS mix:a mix:b"), 0);
  rlock_client_free(c);
}

/* Another port's owner ids ("host-7/worker-3") are still hold counts with
 * a lease: honoured as held, never refused or overwritten. */
static void test_foreign_owner_ids_are_honoured(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  freeReplyObject(rt_cmd(srv, "HSET port:plain host-7/worker-3 2"));
  freeReplyObject(rt_cmd(srv, "PEXPIRE port:plain 60000"));
  rlock_lock *l = make(c, PLAIN, "port:plain");
  RC(rlock_lock_try_acquire(l, 0, 1000), RLOCK_ELOCKED);
  rlock_lock_info *info;
  OK(rlock_lock_inspect(&info, l));
  assert_int_equal(rlock_lock_info_holder_count(info), 1);
  assert_string_equal(rlock_lock_info_holder_owner(info, 0), "host-7/worker-3");
  assert_int_equal(rlock_lock_info_holder_holds(info, 0), 2);
  rlock_lock_info_free(info);
  rlock_lock_free(l);
  assert_int_equal(fx_hget(srv, "port:plain", "host-7/worker-3"), 2);

  freeReplyObject(rt_cmd(srv, "HSET port:rw mode read node-a 1 node-b 3"));
  freeReplyObject(rt_cmd(srv, "PEXPIRE port:rw 60000"));
  /* Redisson's readers each have a timeout key per hold. */
  freeReplyObject(rt_cmd(srv, "SET {port:rw}:node-a:rwlock_timeout:1 1 "
                              "PX 60000"));
  freeReplyObject(rt_cmd(srv, "SET {port:rw}:node-b:rwlock_timeout:3 1 "
                              "PX 60000"));
  rlock_lock *r = make(c, READ, "port:rw"), *w = make(c, WRITE, "port:rw");
  OK(rlock_lock_try_acquire(r, 0, 1000)); /* readers share */
  RC(rlock_lock_try_acquire(w, 0, 1000), RLOCK_EDEADLK);
  OK(rlock_lock_release(r));
  RC(rlock_lock_try_acquire(w, 0, 1000), RLOCK_ELOCKED);
  assert_int_equal(fx_hget(srv, "port:rw", "node-b"), 3);
  rlock_lock_free(r);
  rlock_lock_free(w);
  freeReplyObject(rt_cmd(srv, "DEL port:plain port:rw "
                              "{port:rw}:node-a:rwlock_timeout:1 "
                              "{port:rw}:node-b:rwlock_timeout:3"));
  rlock_client_free(c);
}

/* A read-write lock whose hash carries an enormous hold count (valid in
 * shape, written by anyone): the read release's TTL recomputation probes a
 * bounded number of timeout keys, and Redis keeps answering. */
static void test_huge_count_in_a_lock_is_bounded(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  freeReplyObject(rt_cmd(srv, "HSET huge:rw mode read other 99999999999"));
  freeReplyObject(rt_cmd(srv, "PEXPIRE huge:rw 60000"));
  rlock_lock *r = make(c, READ, "huge:rw");
  OK(rlock_lock_try_acquire(r, 0, 5000));
  int64_t t0 = rt_now_ms();
  OK(rlock_lock_release(r));
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 2000);
  assert_int_equal(fx_hget(srv, "huge:rw", "other"), 99999999999LL);
  assert_pong("a release");
  rlock_lock_free(r);
  freeReplyObject(rt_cmd(srv, "DEL huge:rw"));
  rlock_client_free(c);
}

/* The read renewal reads this owner's count from the hash: a forged huge
 * count must not make the watchdog's script run for ever. */
static void test_forged_count_does_not_wedge_renewal(void **state) {
  (void)state;
  /* A renewal every lease/3; the key is left two thirds of a lease, so a
   * late tick still finds it (a loaded machine delays ticks). */
  const int64_t lease = rt_scaled_ms(1500), left = lease * 2 / 3;
  rlock_client *c = fx_client(srv, lease);
  char owner[RLOCK_OWNER_MAX];
  fx_owner(c, owner);
  rlock_lock *r = make(c, READ, "huge:renew");
  OK(rlock_lock_try_acquire(r, 0, RLOCK_LEASE_WATCHDOG));
  freeReplyObject(rt_cmd(srv, "HSET huge:renew %s 99999999999", owner));
  freeReplyObject(rt_cmd(srv, "PEXPIRE huge:renew %lld", (long long)left));
  /* The next renewal extends the lock back to a whole lease. */
  int64_t t0 = rt_now_ms();
  while (rt_cmd_int(srv, "PTTL huge:renew") <= left + 10) {
    if (rt_now_ms() - t0 > rt_scaled_ms(3000))
      fail_msg("the watchdog did not renew the lock");
    rt_sleep_ms(10);
  }
  assert_pong("a renewal");
  freeReplyObject(rt_cmd(srv, "DEL huge:renew"));
  RC(rlock_lock_release(r), RLOCK_ELOST);
  rlock_lock_free(r);
  rlock_client_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_user_hash_is_not_a_lock),
      cmocka_unit_test(test_hash_with_huge_number),
      cmocka_unit_test(test_other_types),
      cmocka_unit_test(test_families_do_not_mix),
      cmocka_unit_test(test_foreign_owner_ids_are_honoured),
      cmocka_unit_test(test_huge_count_in_a_lock_is_bounded),
      cmocka_unit_test(test_forged_count_does_not_wedge_renewal),
  };
  return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
