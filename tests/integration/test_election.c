/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: leader election (rlock/election.h) on the fenced lock, on a
 * blocking client and on loop clients (drivers.h), against one server and
 * a Redis Cluster: campaign, observe, resign; the statuses of bad input
 * and of a second campaign; a standby taking over when the leader's lease
 * runs out (timed); a leader deposed by force told; a campaign by a
 * leader told of its loss waiting on the ghost of its hold; a Java client's
 * RFencedLock operations (scripts of our own with Redisson's effects) and
 * rlock's lock objects on the same name. */
#include "drivers.h"
#include "rt_cluster.h"

#include <inttypes.h>
#include <stdatomic.h>

static rt_cluster *cl;

/* Where a case runs: a client URL, and the server that holds `name`. */
typedef struct topo {
  char url[1024];
  rt_server *s;
  char name[96];
} topo;

static void topo_single(topo *t, const char *name) {
  snprintf(t->url, sizeof t->url, "%s", rt_server_url(srv));
  t->s = srv;
  snprintf(t->name, sizeof t->name, "%s", name);
}

static void topo_cluster(topo *t, const char *name) {
  snprintf(t->url, sizeof t->url, "%s", rt_cluster_url(cl));
  t->s = rt_cluster_node(cl, 1);
  rt_cluster_key_on(cl, 1, name, t->name, sizeof t->name);
}

static void topo_of(topo *t, int cluster, const char *name) {
  if (cluster)
    topo_cluster(t, name);
  else
    topo_single(t, name);
}

static void key_of(char *buf, size_t size, const char *prefix,
                   const char *name) {
  snprintf(buf, size, "%s:{%s}", prefix, name);
}

/* Start a case from nothing on `name` (each driver's group reuses it). */
static void fresh(rt_server *s, const char *name) {
  char token[160], record[160];
  key_of(token, sizeof token, "redisson_lock_token", name);
  key_of(record, sizeof record, "rlock_leader", name);
  rt_cmd_int(s, "DEL %s %s %s", name, token, record);
}

/* Two cases of the scenario fn(cluster): test_<test>_single on the single
 * server, test_<test>_cluster on the cluster. */
#define ON_BOTH_TOPOLOGIES(test, fn)                                           \
  static void test_##test##_single(void **state) {                             \
    (void)state;                                                               \
    fn(0);                                                                     \
  }                                                                            \
  static void test_##test##_cluster(void **state) {                            \
    (void)state;                                                               \
    fn(1);                                                                     \
  }

/* ---- the election calls, synchronous on every driver -------------------- */

typedef struct el_op {
  rlock_election *e;
  const char *value; /* borrowed: lives as long as the campaign */
  rlock_acquire_options o;
  int rc;
  int64_t term;
  char msg[256];
  atomic_int done;
  int64_t done_us;
  pthread_t thread;
} el_op;

static void el_finish(el_op *op, int rc, int64_t term) {
  op->rc = rc;
  op->term = term;
  snprintf(op->msg, sizeof op->msg, "%s",
           rc == RLOCK_OK ? "" : rlock_error_last()->message);
  op->done_us = rt_now_us();
  atomic_store(&op->done, 1);
}

static void el_on_done(void *arg, int rc, int64_t term) {
  el_finish(arg, rc, term);
}

static void *el_main(void *arg) {
  el_op *op = arg;
  int64_t term = 0;
  int rc = rlock_election_campaign(op->e, op->value, &op->o, &term);
  el_finish(op, rc, term);
  return NULL;
}

static bool el_pred(void *arg, char *why, size_t cap) {
  snprintf(why, cap, "the campaign has not ended");
  return atomic_load(&((el_op *)arg)->done);
}

/* Start a campaign of `owner` (explicit on a blocking client's thread)
 * in the background. */
static void el_start(el_op *op, rlock_election *e, const char *value,
                     uint64_t owner, int64_t wait, int64_t lease) {
  op->e = e;
  op->value = value;
  op->o = opts(owner, wait, lease);
  atomic_store(&op->done, 0);
  if (dk_loop()) {
    int rc = rlock_election_campaign_async(e, op->value, &op->o, el_on_done, op,
                                           NULL);
    if (rc != RLOCK_OK)
      el_finish(op, rc, 0);
  } else {
    assert_int_equal(pthread_create(&op->thread, NULL, el_main, op), 0);
  }
}

static int el_wait(el_op *op, int64_t ms) {
  dk_wait(el_pred, op, ms, "a campaign");
  if (!dk_loop())
    pthread_join(op->thread, NULL);
  if (op->rc != RLOCK_OK)
    rlock_loop_error(op->rc, op->msg);
  return op->rc;
}

/* Campaign and wait for the outcome; *term the term. */
static int campaign(rlock_election *e, const char *value, uint64_t owner,
                    int64_t wait, int64_t lease, int64_t *term) {
  el_op op = {0};
  int rc;
  if (dk_loop()) {
    el_start(&op, e, value, owner, wait, lease);
    rc = el_wait(&op, 10000 + (wait > 0 ? wait : 0));
  } else { /* here: the owner may be this thread */
    op.o = opts(owner, wait, lease);
    rc = rlock_election_campaign(e, value, &op.o, &op.term);
  }
  if (term != NULL)
    *term = op.term;
  return rc;
}

typedef struct el_q {
  atomic_int done;
  int rc;
  rlock_leader *leader;
  char msg[256];
} el_q;

static void el_on_rc(void *arg, int rc, int64_t v) {
  (void)v;
  el_q *q = arg;
  q->rc = rc;
  snprintf(q->msg, sizeof q->msg, "%s",
           rc == RLOCK_OK ? "" : rlock_error_last()->message);
  atomic_store(&q->done, 1);
}

static void el_on_leader(void *arg, int rc, rlock_leader *l) {
  el_q *q = arg;
  q->leader = l;
  el_on_rc(arg, rc, 0);
}

static bool el_q_pred(void *arg, char *why, size_t cap) {
  snprintf(why, cap, "no answer yet");
  return atomic_load(&((el_q *)arg)->done);
}

static int el_q_wait(el_q *q) {
  dk_wait(el_q_pred, q, 10000, "an election call");
  if (q->rc != RLOCK_OK)
    rlock_loop_error(q->rc, q->msg);
  return q->rc;
}

static int resign(rlock_election *e, uint64_t owner) {
  if (!dk_loop())
    return rlock_election_resign(e, owner);
  el_q q = {0};
  OK(rlock_election_resign_async(e, owner, el_on_rc, &q));
  return el_q_wait(&q);
}

static rlock_leader *observe(rlock_election *e) {
  rlock_leader *l = NULL;
  if (!dk_loop()) {
    OK(rlock_election_observe(&l, e));
    return l;
  }
  el_q q = {0};
  OK(rlock_election_observe_async(e, el_on_leader, &q));
  OK(el_q_wait(&q));
  return q.leader;
}

typedef struct check_arg {
  rlock_election *e;
  uint64_t owner;
  int rc;
} check_arg;

static void check_fn(void *arg) {
  check_arg *a = arg;
  a->rc = rlock_election_check(a->e, a->owner);
}

static int check(rlock_election *e, uint64_t owner) {
  check_arg a = {e, owner, 0};
  dk_on_loop(check_fn, &a);
  return a.rc;
}

static rlock_election *election(rlock_client *c, const char *name) {
  rlock_election *e;
  OK(rlock_election_new(&e, c, name));
  return e;
}

static long long get_int(rt_server *s, const char *key) {
  redisReply *r = rt_cmd(s, "GET %s", key);
  long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
  freeReplyObject(r);
  return v;
}

/* ---- 1. campaign, observe, resign; bad input ----------------------------- */

/* Two contenders on a fresh `name` (topo_of), each on a client of its
 * own with its election: a (with `watchdog` and `lost`) and b. */
typedef struct rivals {
  topo t;
  rlock_client *a, *b;
  rlock_election *ea, *eb;
} rivals;

static void rivals_open(rivals *r, int cluster, const char *name,
                        int64_t watchdog, rlock_lost_fn lost) {
  topo_of(&r->t, cluster, name);
  fresh(r->t.s, r->t.name);
  r->a = dk_client(r->t.url, watchdog, lost, NULL);
  r->b = dk_client(r->t.url, 0, NULL, NULL);
  r->ea = election(r->a, r->t.name);
  r->eb = election(r->b, r->t.name);
}

static void rivals_close(rivals *r) {
  rlock_election_free(r->ea);
  rlock_election_free(r->eb);
  dk_free(r->a);
  dk_free(r->b);
}

static void campaign_observe_resign(int cluster) {
  rivals r;
  rivals_open(&r, cluster, "el:basic", 0, NULL);
  char token[160], record[160], field[RLOCK_OWNER_MAX];
  key_of(token, sizeof token, "redisson_lock_token", r.t.name);
  key_of(record, sizeof record, "rlock_leader", r.t.name);
  uint64_t me = dk_me(), other = rlock_owner_new();
  rlock_leader *l = observe(r.eb); /* nobody yet */
  assert_false(rlock_leader_present(l));
  assert_null(rlock_leader_value(l));
  assert_int_equal(rlock_leader_ttl_ms(l), -2);
  rlock_leader_free(l);
  int64_t term = 0;
  OK(campaign(r.ea, "alpha", me, 0, 0, &term));
  assert_true(term >= 1);
  assert_int_equal(get_int(r.t.s, token), term);
  l = observe(r.eb);
  assert_true(rlock_leader_present(l));
  assert_string_equal(rlock_leader_value(l), "alpha");
  assert_int_equal(rlock_leader_term(l), term);
  assert_true(rlock_leader_ttl_ms(l) > 0);
  dk_field(r.a, me, field);
  assert_string_equal(rlock_leader_owner(l), field);
  rlock_leader_free(l);
  OK(check(r.ea, me));
  /* A second campaign of the leader: refused, nothing written. */
  assert_int_equal(campaign(r.ea, "again", me, 0, 0, NULL), RLOCK_EHELD);
  assert_int_equal(get_int(r.t.s, token), term);
  assert_int_equal(fx_hget(r.t.s, r.t.name, field), 1);
  /* Another owner: the leader leads; a try ends RLOCK_ELOCKED. */
  assert_int_equal(campaign(r.eb, "beta", other, 0, 0, NULL), RLOCK_ELOCKED);
  assert_int_equal(campaign(r.eb, "beta", other, 200, 0, NULL), RLOCK_ELOCKED);
  /* Resign when not leader: a clear status, nothing written. */
  assert_int_equal(resign(r.eb, other), RLOCK_ENOTHELD);
  assert_int_equal(rt_cmd_int(r.t.s, "EXISTS %s", r.t.name), 1);
  assert_int_equal(rt_cmd_int(r.t.s, "EXISTS %s", record), 1);
  OK(resign(r.ea, me));
  assert_int_equal(rt_cmd_int(r.t.s, "EXISTS %s", r.t.name), 0);
  assert_int_equal(rt_cmd_int(r.t.s, "EXISTS %s", record), 0);
  assert_int_equal(check(r.ea, me), RLOCK_ENOTHELD);
  l = observe(r.eb);
  assert_false(rlock_leader_present(l));
  rlock_leader_free(l);
  /* The next term is larger. */
  int64_t next = 0;
  OK(campaign(r.eb, "beta", other, 0, 0, &next));
  assert_true(next > term);
  OK(resign(r.eb, other));
  rivals_close(&r);
}

ON_BOTH_TOPOLOGIES(basic, campaign_observe_resign)

/* Bad input: RLOCK_EINVAL with a message, nothing written. */
static void test_bad_input(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 0, NULL, NULL);
  fresh(srv, "el:bad");
  rlock_election *e = election(c, "el:bad");
  rlock_election *none = NULL;
  assert_int_equal(rlock_election_new(&none, c, ""), RLOCK_EINVAL);
  assert_int_equal(rlock_election_new(NULL, c, "x"), RLOCK_EINVAL);
  assert_int_equal(rlock_election_new(&none, NULL, "x"), RLOCK_EINVAL);
  uint64_t me = dk_me();
  assert_int_equal(campaign(e, "", me, 0, 0, NULL), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "empty"));
  size_t n = RLOCK_MAX_LEADER_VALUE + 1;
  char *big = malloc(n + 1);
  assert_non_null(big);
  memset(big, 'v', n);
  big[n] = '\0';
  assert_int_equal(campaign(e, big, me, 0, 0, NULL), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "longer than"));
  big[RLOCK_MAX_LEADER_VALUE] = '\0'; /* exactly the bound: accepted */
  OK(campaign(e, big, me, 0, 0, NULL));
  rlock_leader *l = observe(e);
  assert_int_equal(strlen(rlock_leader_value(l)), RLOCK_MAX_LEADER_VALUE);
  rlock_leader_free(l);
  OK(resign(e, me));
  free(big);
  if (!dk_loop()) {
    int64_t term;
    rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
    o.token = &term;
    assert_int_equal(rlock_election_campaign(e, "v", &o, NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_election_campaign(NULL, "v", NULL, NULL),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_election_campaign(e, NULL, NULL, NULL),
                     RLOCK_EINVAL);
    o = opts(0, -5, 0);
    assert_int_equal(rlock_election_campaign(e, "v", &o, NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_election_resign(NULL, 0), RLOCK_EINVAL);
    assert_int_equal(rlock_election_check(NULL, 0), RLOCK_EINVAL);
    assert_int_equal(rlock_election_observe(NULL, e), RLOCK_EINVAL);
  }
  assert_int_equal(rt_cmd_int(srv, "EXISTS el:bad"), 0);
  assert_int_equal(rt_cmd_int(srv, "EXISTS rlock_leader:{el:bad}"), 0);
  assert_int_equal(get_int(srv, "redisson_lock_token:{el:bad}"), 1);
  rlock_election_free(e);
  dk_free(c);
}

/* ---- 2. a standby takes over when the leader's lease runs out ----------- */

static void standby_takes_over(int cluster) {
  rivals r;
  rivals_open(&r, cluster, "el:expiry", 0, NULL);
  const int64_t lease = 1000;
  uint64_t me = dk_me(), standby = rlock_owner_new();
  int64_t t1 = 0;
  int64_t sent_us = rt_now_us();
  OK(campaign(r.ea, "first", me, 0, lease, &t1));
  el_op op = {0};
  el_start(&op, r.eb, "second", standby, 10000, 0);
  OK(el_wait(&op, 10000));
  double ms = (double)(op.done_us - sent_us) / 1000.0;
  dk_report(cluster ? "takeover after the lease (cluster), from the "
                      "leader's campaign; lease 1000 ms"
                    : "takeover after the lease, from the leader's "
                      "campaign; lease 1000 ms",
            ms);
  /* The lease, then at most the standby's wake-up (its sleep ends with the
   * holder's TTL): one lease + 100 ms promised, a generous bound here. */
  assert_true(ms >= (double)lease - 5);
  assert_true(ms <= (double)(lease + rt_scaled_ms(1000)));
  assert_true(op.term > t1);
  assert_int_equal(check(r.ea, me), RLOCK_ELOST);
  rlock_leader *l = observe(r.ea);
  assert_string_equal(rlock_leader_value(l), "second");
  assert_int_equal(rlock_leader_term(l), op.term);
  rlock_leader_free(l);
  /* The deposed leader's resignation writes nothing. */
  assert_int_equal(resign(r.ea, me), RLOCK_ELOST);
  l = observe(r.ea);
  assert_string_equal(rlock_leader_value(l), "second");
  rlock_leader_free(l);
  OK(resign(r.eb, standby));
  rivals_close(&r);
}

ON_BOTH_TOPOLOGIES(takeover, standby_takes_over)

/* ---- 3. deposed by force: told --------------------------------------- */

static atomic_int lost_calls;

static void on_lost(const char *name, const char *owner, void *ud) {
  (void)name, (void)owner, (void)ud;
  atomic_fetch_add(&lost_calls, 1);
}

static bool lost_pred(void *arg, char *why, size_t cap) {
  (void)arg;
  snprintf(why, cap, "the lost callback has not run");
  return atomic_load(&lost_calls) > 0;
}

static void deposed_told(int cluster) {
  rivals r;
  rivals_open(&r, cluster, "el:force", 900, on_lost);
  atomic_store(&lost_calls, 0);
  uint64_t me = dk_me(), standby = rlock_owner_new();
  int64_t t1 = 0, t2 = 0;
  OK(campaign(r.ea, "first", me, 0, 0, &t1));
  el_op op = {0};
  el_start(&op, r.eb, "second", standby, 10000, 0);
  /* Taken by force (a DEL, as an operator's or Redisson's forceUnlock,
   * without the unlock message: the standby wakes with the TTL it saw). */
  rt_cmd_int(r.t.s, "DEL %s", r.t.name);
  dk_wait(lost_pred, NULL, 5000, "the deposed leader told");
  assert_int_equal(check(r.ea, me), RLOCK_ELOST);
  OK(el_wait(&op, 10000));
  t2 = op.term;
  assert_true(t2 > t1);
  rlock_leader *l = observe(r.ea);
  assert_string_equal(rlock_leader_value(l), "second");
  rlock_leader_free(l);
  OK(resign(r.eb, standby));
  rivals_close(&r);
}

ON_BOTH_TOPOLOGIES(deposed, deposed_told)

/* ---- 3b. its own lost hold's ghost: waited on, not refused ------------- */

/* PTTL of `key` (ms; -2 when absent). */
static long long pttl(rt_server *s, const char *key) {
  return rt_cmd_int(s, "PTTL %s", key);
}

/* A leader told its hold is lost, while the server still carries a hold
 * of its field (as a promoted replica carries the old master's until its
 * lease runs out; here the hold is deleted until the leader is told, then
 * put back with a short TTL): the owner holds nothing it knows of, so its
 * campaign waits on that ghost as on another leader's (a wait shorter
 * than the ghost ends RLOCK_ELOCKED) and wins once it expires, with a new
 * term. A leader that knows it leads is still refused RLOCK_EHELD. */
static void ghost_waited_on(int cluster) {
  rivals r;
  rivals_open(&r, cluster, "el:ghost", 900, on_lost);
  atomic_store(&lost_calls, 0);
  uint64_t me = dk_me();
  char field[RLOCK_OWNER_MAX];
  dk_field(r.a, me, field);
  int64_t t1 = 0, t2 = 0;
  OK(campaign(r.ea, "first", me, 0, 0, &t1));
  rt_cmd_int(r.t.s, "DEL %s", r.t.name);
  dk_wait(lost_pred, NULL, 5000, "the leader told of its loss");
  assert_int_equal(check(r.ea, me), RLOCK_ELOST);
  const long long ghost = rt_scaled_ms(1500);
  assert_int_equal(rt_cmd_int(r.t.s, "HSET %s %s 1", r.t.name, field), 1);
  assert_int_equal(rt_cmd_int(r.t.s, "PEXPIRE %s %lld", r.t.name, ghost), 1);
  int64_t begun_us = rt_now_us();
  assert_int_equal(campaign(r.ea, "second", me, 200, 0, NULL), RLOCK_ELOCKED);
  double ms = (double)(rt_now_us() - begun_us) / 1000.0;
  assert_true(ms >= 195); /* it waited, as for another leader */
  assert_int_equal(fx_hget(r.t.s, r.t.name, field), 1); /* nothing written */
  long long left = pttl(r.t.s, r.t.name);
  assert_true(left > 0);
  begun_us = rt_now_us();
  OK(campaign(r.ea, "second", me, rt_scaled_ms(10000), 0, &t2));
  ms = (double)(rt_now_us() - begun_us) / 1000.0;
  dk_report(cluster ? "elected past its own ghost hold (cluster), from "
                      "the campaign"
                    : "elected past its own ghost hold, from the campaign",
            ms);
  assert_true(ms >= (double)left - 20); /* woken by the ghost's TTL */
  assert_true(ms <= (double)(left + rt_scaled_ms(1000)));
  assert_true(t2 > t1);
  OK(check(r.ea, me));
  rlock_leader *l = observe(r.eb);
  assert_string_equal(rlock_leader_value(l), "second");
  assert_int_equal(rlock_leader_term(l), t2);
  rlock_leader_free(l);
  /* Now it leads and knows it: refused at once, nothing written. */
  assert_int_equal(campaign(r.ea, "third", me, 0, 0, NULL), RLOCK_EHELD);
  assert_int_equal(fx_hget(r.t.s, r.t.name, field), 1);
  OK(resign(r.ea, me));
  rivals_close(&r);
}

ON_BOTH_TOPOLOGIES(ghost, ghost_waited_on)

/* ---- 4. a Java client's operations and rlock's lock objects on the name - */

/* A Java client is played by scripts of our own with the effects
 * docs/PROTOCOL.md gives Redisson's (§2.1, §2.3); they are not Redisson's
 * source. */

/* RFencedLock's acquisition: when the hash is absent or already the
 * owner's, the token counter goes up, the owner's count goes up and the
 * lease is set, answering {-1, token}; else {pttl, -1}. KEYS name, token;
 * ARGV lease, owner. */
static const char *JAVA_FENCED_LOCK =
    "local mine = redis.call('hexists', KEYS[1], ARGV[2]) == 1 "
    "local free = redis.call('exists', KEYS[1]) == 0 "
    "if not (free or mine) then "
    "  return {redis.call('pttl', KEYS[1]), -1} "
    "end "
    "local token = redis.call('incr', KEYS[2]) "
    "redis.call('hincrby', KEYS[1], ARGV[2], 1) "
    "redis.call('pexpire', KEYS[1], ARGV[1]) "
    "return {-1, token}";

/* The watchdog's renewal: a new lease only while the owner's field is
 * there; 1 renewed, 0 gone. KEYS name; ARGV lease, owner. */
static const char *JAVA_RENEW =
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return 0 end "
    "redis.call('pexpire', KEYS[1], ARGV[1]) "
    "return 1";

/* A release: nil when the owner holds nothing; one hold less, 0 with the
 * lease kept while holds remain; else the hash deleted and the message
 * published, 1. KEYS name, channel; ARGV message, lease, owner. */
static const char *JAVA_UNLOCK =
    "if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end "
    "local left = redis.call('hincrby', KEYS[1], ARGV[3], -1) "
    "if left <= 0 then "
    "  redis.call('del', KEYS[1]) "
    "  redis.call('publish', KEYS[2], ARGV[1]) "
    "  return 1 "
    "end "
    "redis.call('pexpire', KEYS[1], ARGV[2]) "
    "return 0";

#define JAVA_OWNER "0d9e8f7a-1b2c-4d3e-8f4a-5b6c7d8e9f01:73"

static void test_redisson_on_the_layout(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 0, NULL, NULL);
  fresh(srv, "el:java");
  rlock_election *e = election(c, "el:java");
  uint64_t me = dk_me();
  int64_t term = 0;
  OK(campaign(e, "rlock", me, 0, 0, &term));
  /* Java sees a fenced lock held: its try gets the TTL, its token reads
   * the term, its renewal of an owner it is not finds nothing. */
  redisReply *r = rt_cmd(srv,
                         "EVAL %s 2 el:java redisson_lock_token:{el:java} "
                         "30000 %s",
                         JAVA_FENCED_LOCK, JAVA_OWNER);
  assert_int_equal(r->type, REDIS_REPLY_ARRAY);
  assert_true(r->element[0]->integer > 0);
  freeReplyObject(r);
  assert_int_equal(get_int(srv, "redisson_lock_token:{el:java}"), term);
  assert_int_equal(
      rt_cmd_int(srv, "EVAL %s 1 el:java 30000 %s", JAVA_RENEW, JAVA_OWNER), 0);
  /* rlock's own lock objects on the name read it as a lock. */
  rlock_lock_info *info;
  OK(dk_inspect(&info, rlock_election_lock(e)));
  assert_int_equal(rlock_lock_info_holder_count(info), 1);
  rlock_lock_info_free(info);
  rlock_lock *other = NULL;
  OK(rlock_lock_new_fenced(&other, c, "el:java"));
  assert_int_equal(dk_acquire(other, rlock_owner_new(), 0, 0), RLOCK_ELOCKED);
  OK(resign(e, me));
  /* A Java holder that did not campaign: it leads, with no value. */
  r = rt_cmd(srv, "EVAL %s 2 el:java redisson_lock_token:{el:java} 30000 %s",
             JAVA_FENCED_LOCK, JAVA_OWNER);
  assert_int_equal(r->element[0]->integer, -1);
  assert_true(r->element[1]->integer > term);
  freeReplyObject(r);
  rlock_leader *l = observe(e);
  assert_true(rlock_leader_present(l));
  assert_string_equal(rlock_leader_owner(l), JAVA_OWNER);
  assert_null(rlock_leader_value(l));
  assert_int_equal(rlock_leader_term(l), 0);
  rlock_leader_free(l);
  assert_int_equal(campaign(e, "rlock", me, 0, 0, NULL), RLOCK_ELOCKED);
  /* Its release wakes a campaign waiting on the lock's channel. */
  el_op op = {0};
  uint64_t bg = rlock_owner_new(); /* a campaign on another thread */
  el_start(&op, e, "after-java", bg, 10000, 0);
  dk_wait_subscribers(srv, "redisson_lock__channel:{el:java}", 1,
                      "the campaign subscribed");
  assert_int_equal(rt_cmd_int(srv,
                              "EVAL %s 2 el:java redisson_lock__channel:{el:"
                              "java} 0 30000 %s",
                              JAVA_UNLOCK, JAVA_OWNER),
                   1);
  OK(el_wait(&op, 5000));
  assert_true(op.term > term + 1);
  /* And Java's renewal and release of the rlock leader's field work on
   * the election's layout (a Java process acting for the leader). */
  char field[RLOCK_OWNER_MAX];
  dk_field(c, bg, field);
  assert_int_equal(
      rt_cmd_int(srv, "EVAL %s 1 el:java 60000 %s", JAVA_RENEW, field), 1);
  assert_true(rt_cmd_int(srv, "PTTL el:java") > 30000);
  OK(resign(e, bg));
  rlock_lock_free(other);
  rlock_election_free(e);
  dk_free(c);
}

/* ---- following the leader (rlock_election_watch_new) --------------------- */

/* What the leader-change callback told, in order: "-" for nobody, else
 * the value and term; read by the test's thread. */
typedef struct told {
  pthread_mutex_t mu;
  char seq[1024];
  int64_t terms[16];
  int n, failures;
} told;

static void on_change(void *arg, int rc, rlock_leader *l) {
  told *t = arg;
  pthread_mutex_lock(&t->mu);
  if (rc != RLOCK_OK) {
    t->failures++;
  } else {
    char one[64];
    if (rlock_leader_present(l))
      snprintf(one, sizeof one, "%s;", rlock_leader_value(l));
    else
      snprintf(one, sizeof one, "-;");
    strncat(t->seq, one, sizeof t->seq - strlen(t->seq) - 1);
    if (t->n < 16)
      t->terms[t->n] = rlock_leader_term(l);
    t->n++;
  }
  pthread_mutex_unlock(&t->mu);
  rlock_leader_free(l);
}

typedef struct told_want {
  told *t;
  const char *tail; /* the sequence ends with it */
} told_want;

static bool pred_told(void *arg, char *why, size_t cap) {
  told_want *w = arg;
  pthread_mutex_lock(&w->t->mu);
  size_t n = strlen(w->t->seq), m = strlen(w->tail);
  bool ok = n >= m && strcmp(w->t->seq + n - m, w->tail) == 0;
  snprintf(why, cap, "told '%s', want it to end with '%s'", w->t->seq, w->tail);
  pthread_mutex_unlock(&w->t->mu);
  return ok;
}

static void wait_told(told *t, const char *tail) {
  told_want w = {t, tail};
  dk_wait(pred_told, &w, 5000, "the leader-change callback");
}

/* The callback tells the leader now, then each change: a resignation's
 * message brings the standby it woke (never missed between two leaders:
 * the interval is a minute, no poll sees any of it), then nobody. */
static void test_follow_leader(void **state) {
  (void)state;
  topo t;
  topo_single(&t, "el:follow");
  fresh(t.s, t.name);
  rlock_client *c = dk_client(t.url, 30000, NULL, NULL);
  rlock_client *o = dk_client(t.url, 30000, NULL, NULL);
  rlock_election *e, *eo;
  OK(rlock_election_new(&e, c, t.name));
  OK(rlock_election_new(&eo, o, t.name));
  static told tl;
  memset(&tl, 0, sizeof tl);
  pthread_mutex_init(&tl.mu, NULL);
  rlock_election_watch *w;
  OK(rlock_election_watch_new(&w, e, 60000, on_change, &tl));
  wait_told(&tl, "-;");
  char channel[160];
  snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", t.name);
  dk_wait_subscribers(t.s, channel, 1, "the watch's subscription");
  uint64_t a = rlock_owner_new(), b = rlock_owner_new();
  int64_t ta, tb;
  OK(campaign(eo, "A", a, 0, RLOCK_LEASE_WATCHDOG, &ta));
  /* Taking publishes nothing: A is seen by the lease's end or the
   * interval only, unless a message comes. B waits for it. */
  el_op ob = {0};
  el_start(&ob, eo, "B", b, 20000, RLOCK_LEASE_WATCHDOG);
  dk_wait_subscribers(t.s, channel, 2, "the standby's subscription");
  OK(resign(eo, a));
  OK(el_wait(&ob, 10000));
  tb = ob.term;
  wait_told(&tl, "B;");
  OK(resign(eo, b));
  wait_told(&tl, "B;-;");
  pthread_mutex_lock(&tl.mu);
  const char *seq = tl.seq;
  assert_true(strcmp(seq, "-;B;-;") == 0 || strcmp(seq, "-;-;B;-;") == 0 ||
              strcmp(seq, "-;A;-;B;-;") == 0 || strcmp(seq, "-;A;B;-;") == 0);
  assert_true(tb > ta);
  assert_int_equal(tl.failures, 0);
  pthread_mutex_unlock(&tl.mu);
  rlock_election_watch_free(w);
  /* Bad arguments. */
  rlock_election_watch *bad = (rlock_election_watch *)1;
  assert_int_equal(rlock_election_watch_new(&bad, NULL, 1000, on_change, NULL),
                   RLOCK_EINVAL);
  assert_null(bad);
  assert_int_equal(rlock_election_watch_new(&bad, e, 9, on_change, NULL),
                   RLOCK_EINVAL);
  assert_int_equal(
      rlock_election_watch_new(&bad, e, RLOCK_ELECTION_WATCH_MAX_INTERVAL + 1,
                               on_change, NULL),
      RLOCK_EINVAL);
  assert_int_equal(rlock_election_watch_new(&bad, e, 1000, NULL, NULL),
                   RLOCK_EINVAL);
  assert_int_equal(rlock_election_watch_new(NULL, e, 1000, on_change, NULL),
                   RLOCK_EINVAL);
  rlock_election_watch_free(NULL);
  rlock_election_free(e);
  rlock_election_free(eo);
  dk_free(c);
  dk_free(o);
}

static int setup(void) {
  if (cl == NULL) {
    srv = rt_server_start(NULL);
    cl = rt_cluster_start(3, 0);
  }
  return 0;
}

int main(int argc, char **argv) {
  (void)argc;
  fx_argv0 = argv[0];
  const dk_case cases[] = {
      DK_CASE(test_basic_single, DK_ALL),
      DK_CASE(test_bad_input, DK_ALL),
      DK_CASE(test_takeover_single, DK_ALL),
      DK_CASE(test_deposed_single, DK_ALL),
      DK_CASE(test_ghost_single, DK_ALL),
      DK_CASE(test_redisson_on_the_layout, DK_ALL),
      DK_CASE(test_follow_leader, DK_ALL),
      DK_CASE(test_basic_cluster, DK_ALL),
      DK_CASE(test_takeover_cluster, DK_ALL),
      DK_CASE(test_deposed_cluster, DK_ALL),
      DK_CASE(test_ghost_cluster, DK_ALL),
  };
  int failed = DK_RUN(cases, setup, NULL);
  rt_cluster_free(cl);
  rt_server_free(srv);
  return failed;
}
