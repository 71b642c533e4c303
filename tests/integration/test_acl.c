/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: an ACL user allowed exactly what README's "Least-privilege
 * Redis users" gives for locks named `locks:*` runs every lock kind and
 * lists the locks, on a single server, on a cluster (the user on every
 * node, with the cluster extras) and behind Sentinel (the user on the
 * master and the replica, with Sentinel's extra; the sentinels' own user
 * with only the rights README gives it); a user lacking one right gets
 * RLOCK_EAUTH naming what was refused, for every kind, for a RedLock
 * member and for a listing; the password never shows in a message. */
#include "fixture.h"
#include "rt_cluster.h"
#include "rt_sentinel.h"

/* README's rule set, for names starting "locks:" (one server, replicas
 * confirmed with WAIT by default). */
#define RULES                                                                  \
  "~locks:* ~rlock:client:* ~{locks:* ~redisson_lock_queue:{locks:* "          \
  "~redisson_lock_timeout:{locks:* ~redisson_lock_token:{locks:* "             \
  "~redisson_unlock_latch:{locks:* ~rlock_leader:{locks:* "                    \
  "&redisson_lock__channel:{locks:* &redisson_rwlock:{locks:* "                \
  "+evalsha +eval +ping +info +wait +subscribe +unsubscribe +publish +get "    \
  "+hget +hexists +hincrby +hset +hdel +hgetall +hkeys +hlen +pexpire +pttl "  \
  "+del +exists +type +set +incr +lindex +lpop +lrange +lrem +rpush +zadd "    \
  "+zincrby +zrange +zrem +zscore +scan +llen +hmget"

/* README's extras for a cluster, and behind Sentinel; the sentinels' own
 * user. */
#define CLUSTER_RULES                                                          \
  RULES " +cluster|shards +cluster|slots +asking +pubsub|shardnumsub "         \
        "+ssubscribe +sunsubscribe +spublish"
#define SENTINEL_RULES RULES " +role"
#define SENTINELS_OWN                                                          \
  "+sentinel|get-master-addr-by-name +subscribe +ping &+switch-master"

#define SECRET "s3cret-acl-pw"

/* ACL SETUSER name reset on >SECRET <each word of rules>, on `s`. */
static void set_user_on(rt_server *s, const char *name, const char *rules) {
  char copy[2048], *save = NULL;
  const char *argv[128] = {"ACL", "SETUSER", name, "reset", "on", ">" SECRET};
  int argc = 6;
  snprintf(copy, sizeof copy, "%s", rules);
  for (char *w = strtok_r(copy, " ", &save); w != NULL && argc < 128;
       w = strtok_r(NULL, " ", &save))
    argv[argc++] = w;
  redisReply *r = rt_cmd_argv(s, argc, argv, NULL);
  if (r->type != REDIS_REPLY_STATUS)
    fail_msg("ACL SETUSER %s: %s", name, r->str);
  freeReplyObject(r);
}

static void set_user(const char *name, const char *rules) {
  set_user_on(srv, name, rules);
}

/* The URL of a cluster's or Sentinel's deployment with the user's
 * credentials ("": the shared server). */
static char dep_url[1024];

/* `url` ("scheme://hosts[#master]") with user:SECRET@ after the scheme
 * and `params` before any '#', into dep_url. */
static void set_dep_url(const char *url, const char *user, const char *params) {
  const char *hosts = strstr(url, "://") + 3, *hash = strchr(url, '#');
  int before = (int)(hosts - url);
  int mid = (int)((hash ? hash : url + strlen(url)) - hosts);
  snprintf(dep_url, sizeof dep_url, "%.*s%s:" SECRET "@%.*s%s%s", before, url,
           user, mid, hosts, params, hash ? hash : "");
}

/* Where the keys and channels of the lock tests live: the shared server,
 * a cluster's slot owner, or Sentinel's master; and whether waiters
 * listen with SSUBSCRIBE (a Redis 7 cluster, in auto mode). */
static rt_cluster *dep_cluster;
static rt_server *dep_master;
static int dep_sharded;

static rt_server *server_of(const char *key) {
  if (dep_cluster != NULL)
    return rt_cluster_node(
        dep_cluster,
        rt_cluster_slot_owner(dep_cluster, rt_cluster_slot_of(key)));
  return dep_master != NULL ? dep_master : srv;
}

/* The watchdog timeout of user_client()'s clients. With replicas, a
 * write's WAIT can take about a second (a replica that has just
 * attached confirms at its next periodic ACK), and a lease shorter than
 * that could run out before the acquisition returns. */
static int64_t dep_watchdog_ms = 600;

static rlock_client *user_client(const char *user) {
  char url[1200];
  if (dep_url[0] != '\0')
    snprintf(url, sizeof url, "%s", dep_url);
  else
    snprintf(url, sizeof url, "redis://%s:" SECRET "@127.0.0.1:%d", user,
             rt_server_port(srv));
  return fx_client_opts(url, dep_watchdog_ms, NULL, NULL);
}

typedef int (*lock_new_fn)(rlock_lock **, rlock_client *, const char *);

static const struct {
  const char *kind;
  lock_new_fn make;
} kinds[] = {
    {"reentrant", rlock_lock_new},     {"fair", rlock_lock_new_fair},
    {"read", rlock_lock_new_read},     {"write", rlock_lock_new_write},
    {"fenced", rlock_lock_new_fenced}, {"spin", rlock_lock_new_spin},
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

static uint64_t renewals(rlock_client *c) {
  rlock_stats st;
  OK(rlock_client_stats(c, &st, sizeof st));
  return st.renewals;
}

typedef struct renewed {
  rlock_client *c;
  uint64_t before;
} renewed;

static bool pred_renewed(void *arg, char *why, size_t cap) {
  renewed *r = arg;
  uint64_t n = renewals(r->c);
  snprintf(why, cap, "%llu renewals", (unsigned long long)(n - r->before));
  return n > r->before;
}

/* The kind of lock that makes a lock of kind k wait (the read lock waits
 * for a writer), and the channel a waiter of kind k subscribes to (NULL:
 * the fair lock's own, or none for the spin lock). */
static lock_new_fn blocker(size_t k) {
  return k == 2 ? rlock_lock_new_write : kinds[k].make;
}

static const char *wait_channel(size_t k, const char *name, char *buf,
                                size_t size) {
  if (k == 1 || k == 5)
    return NULL;
  snprintf(buf, size,
           k == 2 || k == 3 ? "redisson_rwlock:{%s}"
                            : "redisson_lock__channel:{%s}",
           name);
  return buf;
}

typedef struct subs_want {
  const char *channel;
  long long n;
} subs_want;

static bool pred_subs(void *arg, char *why, size_t cap) {
  const subs_want *w = arg;
  long long n =
      fx_subscribers_of(server_of(w->channel), dep_sharded, w->channel);
  snprintf(why, cap, "%lld subscribers of %s", n, w->channel);
  return n == w->n;
}

/* Wait until `channel` has one subscriber where it lives. */
static void wait_subscribed(const char *channel) {
  subs_want w = {channel, 1};
  rt_wait_until(pred_subs, &w, rt_scaled_ms(5000), "a waiter's subscription");
}

/* A fair waiter queued on `name` (a plain name) listens on its own
 * channel: it is then asleep, and a release reaches it. */
static void wait_fair_waiter(const char *name) {
  char queue[128], channel[256];
  snprintf(queue, sizeof queue, "redisson_lock_queue:{%s}", name);
  fx_wait_exists(server_of(queue), queue, 1, rt_scaled_ms(5000));
  redisReply *r = rt_cmd(server_of(queue), "LINDEX %s 0", queue);
  assert_int_equal(r->type, REDIS_REPLY_STRING);
  snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}:%s", name,
           r->str);
  freeReplyObject(r);
  wait_subscribed(channel);
}

/* Everything one kind does, as `c`: re-entry, inspection, a wait woken by
 * another holder's release (`other`), the watchdog's renewal, force
 * release. */
static void full_cycle(rlock_client *c, rlock_client *other, size_t k) {
  char name[64], ch[128];
  snprintf(name, sizeof name, "locks:%s", kinds[k].kind);
  rlock_lock *l, *o;
  OK(kinds[k].make(&l, c, name));
  OK(blocker(k)(&o, other, name));
  OK(rlock_lock_acquire(l));
  OK(rlock_lock_acquire(l));
  renewed r = {c, renewals(c)}; /* the watchdog's script, as this user */
  rt_wait_until(pred_renewed, &r, rt_scaled_ms(5000), "a renewal");
  int locked;
  int64_t count;
  OK(rlock_lock_is_locked(&locked, l));
  assert_int_equal(locked, 1);
  OK(rlock_lock_hold_count(&count, l));
  if (count != 2)
    fail_msg("%s: hold count %lld after two acquisitions", kinds[k].kind,
             (long long)count);
  rlock_lock_info *info;
  OK(rlock_lock_inspect(&info, l));
  rlock_lock_info_free(info);
  OK(rlock_lock_release(l));
  OK(rlock_lock_release(l));
  /* A wait, woken by the other's release. */
  OK(rlock_lock_acquire_lease(o, 60000));
  fx_waiter w;
  fx_waiter_start(&w, l);
  if (k == 1)
    wait_fair_waiter(name);
  else if (wait_channel(k, name, ch, sizeof ch) != NULL)
    wait_subscribed(ch);
  OK(rlock_lock_release(o));
  OK(fx_waiter_join(&w));
  int deleted;
  OK(rlock_lock_acquire(o));
  OK(rlock_lock_force_release(&deleted, o));
  assert_int_equal(deleted, 1);
  rlock_lock_free(o);
  rlock_lock_free(l);
}

static int count_lock(const char *name, const char *kind,
                      const rlock_lock_info *info, void *arg) {
  (void)name, (void)kind, (void)info;
  ++*(int *)arg;
  return 0;
}

/* rlock_client_list_locks(pattern) as `c`: its status; *n locks seen. */
static int list_as(rlock_client *c, const char *pattern, int *n) {
  *n = 0;
  return rlock_client_list_locks(c, pattern, count_lock, n);
}

/* Every kind's whole cycle as the user, then a listing of locks held by
 * the user: of each kind, a fair one with a waiter queued. */
static void cycle_and_list(void) {
  rlock_client *c = user_client("locker"), *other = user_client("locker");
  for (size_t k = 0; k < NKINDS; k++)
    full_cycle(c, other, k);
  rlock_lock *l[NKINDS];
  char name[64];
  for (size_t k = 0; k < NKINDS; k++) {
    snprintf(name, sizeof name, "locks:listed:%s", kinds[k].kind);
    OK(kinds[k].make(&l[k], c, name));
    OK(rlock_lock_acquire_lease(l[k], 60000));
  }
  rlock_lock *w;
  OK(rlock_lock_new_fair(&w, other, "locks:listed:fair"));
  fx_waiter waiter;
  fx_waiter_start(&waiter, w);
  wait_fair_waiter("locks:listed:fair");
  int n;
  OK(list_as(c, "locks:*", &n));
  assert_int_equal(n, NKINDS);
  for (size_t k = 0; k < NKINDS; k++)
    OK(rlock_lock_release(l[k]));
  OK(fx_waiter_join(&waiter));
  rlock_lock_free(w);
  for (size_t k = 0; k < NKINDS; k++)
    rlock_lock_free(l[k]);
  rlock_client_free(other);
  rlock_client_free(c);
}

static void test_documented_rules_suffice(void **state) {
  (void)state;
  set_user("locker", RULES);
  cycle_and_list();
}

/* An election as the user: campaign, observe, resign, another client's
 * campaign; without the leader record's key pattern a campaign is refused
 * (RLOCK_EAUTH), nothing written. */
static void test_election_as_user(void **state) {
  (void)state;
  set_user("locker", RULES);
  rlock_client *c = user_client("locker"), *d = user_client("locker");
  rlock_election *e, *f;
  OK(rlock_election_new(&e, c, "locks:leader"));
  OK(rlock_election_new(&f, d, "locks:leader"));
  int64_t term = 0;
  OK(rlock_election_campaign(e, "a", NULL, &term));
  rlock_leader *l;
  OK(rlock_election_observe(&l, f));
  assert_string_equal(rlock_leader_value(l), "a");
  assert_int_equal(rlock_leader_term(l), term);
  rlock_leader_free(l);
  OK(rlock_election_resign(e, RLOCK_OWNER_THREAD));
  OK(rlock_election_campaign(f, "b", NULL, &term));
  OK(rlock_election_resign(f, RLOCK_OWNER_THREAD));
  rlock_election_free(e);
  rlock_election_free(f);
  rlock_client_free(d);
  rlock_client_free(c);
  char rules[2048];
  snprintf(rules, sizeof rules, "%s", RULES);
  char *p = strstr(rules, "~rlock_leader:{locks:* ");
  assert_non_null(p);
  memmove(p, p + strlen("~rlock_leader:{locks:* "),
          strlen(p + strlen("~rlock_leader:{locks:* ")) + 1);
  set_user("norecord", rules);
  c = user_client("norecord");
  OK(rlock_election_new(&e, c, "locks:leader2"));
  assert_int_equal(rlock_election_campaign(e, "a", NULL, NULL), RLOCK_EAUTH);
  assert_int_equal(rt_cmd_int(srv, "EXISTS locks:leader2"), 0);
  rlock_election_free(e);
  rlock_client_free(c);
}

/* A cluster: the user (with the cluster extras) on every node. */
static void test_rules_on_cluster(void **state) {
  (void)state;
  rt_cluster *cl = rt_cluster_start(3, 1);
  for (int i = 0; i < rt_cluster_size(cl); i++)
    set_user_on(rt_cluster_node(cl, i), "locker", CLUSTER_RULES);
  dep_cluster = cl;
  dep_sharded = 1; /* Redis 7, pubsub=auto */
  dep_watchdog_ms = 3000;
  set_dep_url(rt_cluster_url(cl), "locker", "");
  cycle_and_list();
  /* Listing needs SCAN on every master. */
  for (int i = 0; i < rt_cluster_size(cl); i++)
    set_user_on(rt_cluster_node(cl, i), "locker", CLUSTER_RULES " -scan");
  rlock_client *c = user_client("locker");
  int n;
  RC(list_as(c, "locks:*", &n), RLOCK_EAUTH);
  assert_non_null(strstr(rlock_error_last()->message, "scan"));
  rlock_client_free(c);
  dep_url[0] = '\0';
  dep_cluster = NULL;
  dep_sharded = 0;
  dep_watchdog_ms = 600;
  rt_cluster_free(cl);
}

typedef struct watched {
  rt_server *sentinel;
} watched;

/* Our +switch-master subscription, made as the sentinels' own user: a
 * line of the sentinel's CLIENT LIST with both "user=watcher" and
 * "sub=1". */
static bool pred_watching(void *arg, char *why, size_t cap) {
  const watched *w = arg;
  redisReply *r = rt_cmd(w->sentinel, "CLIENT LIST");
  bool ok = false;
  for (char *line = r->type == REDIS_REPLY_STRING ? r->str : NULL;
       line != NULL && *line != '\0' && !ok;) {
    char *nl = strchr(line, '\n'), buf[1024];
    snprintf(buf, sizeof buf, " %.*s ",
             (int)(nl ? (size_t)(nl - line) : strlen(line)), line);
    ok =
        strstr(buf, " sub=1 ") != NULL && strstr(buf, " user=watcher ") != NULL;
    line = nl ? nl + 1 : NULL;
  }
  freeReplyObject(r);
  snprintf(why, cap, "no subscriber logged in as 'watcher'");
  return ok;
}

/* Sentinel: the user (with Sentinel's extra) on the master and the
 * replica; the sentinels' own user with only what README gives it, which
 * must suffice to find the master and to watch for +switch-master. */
static void test_rules_behind_sentinel(void **state) {
  (void)state;
  rt_sentinel_group *g = rt_sentinel_start("aclmaster", 1, 1);
  for (int i = 0; i < rt_sentinel_nservers(g); i++)
    set_user_on(rt_sentinel_server(g, i), "locker", SENTINEL_RULES);
  set_user_on(rt_sentinel_sentinel(g, 0), "watcher", SENTINELS_OWN);
  dep_master = rt_sentinel_master(g);
  dep_watchdog_ms = 3000;
  set_dep_url(rt_sentinel_url(g), "locker",
              "?sentinel_user=watcher&sentinel_password=" SECRET);
  cycle_and_list();
  rlock_client *c = user_client("locker");
  rlock_lock *l = fx_lock(c, "locks:watch");
  OK(rlock_lock_acquire(l)); /* the watchdog's hold starts the watch */
  watched w = {rt_sentinel_sentinel(g, 0)};
  rt_wait_until(pred_watching, &w, rt_scaled_ms(5000),
                "the +switch-master watch as 'watcher'");
  OK(rlock_lock_release(l));
  rlock_lock_free(l);
  rlock_client_free(c);
  dep_url[0] = '\0';
  dep_master = NULL;
  dep_watchdog_ms = 600;
  rt_sentinel_free(g);
}

/* The status and message of acquiring `name` as `user` (kind k), when
 * `held` has another client hold it first (a wait). */
static int refused(const char *user, size_t k, const char *name, int held,
                   char *msg, size_t size) {
  rlock_client *c = user_client(user), *h = fx_client(srv, 0);
  rlock_lock *l, *o;
  OK(kinds[k].make(&l, c, name));
  OK(blocker(k)(&o, h, name));
  if (held)
    OK(rlock_lock_acquire_lease(o, 1000));
  int rc = rlock_lock_try_acquire(l, held ? 5000 : 0, 0);
  snprintf(msg, size, "%s", rlock_error_last()->message);
  if (rc == RLOCK_OK)
    rlock_lock_release(l);
  if (held)
    rlock_lock_force_release(NULL, o);
  rlock_lock_free(l);
  rlock_lock_free(o);
  rlock_client_free(c);
  rlock_client_free(h);
  return rc;
}

static void expect_eauth(int rc, const char *msg, const char *what,
                         const char *kind) {
  char lower[512];
  size_t i = 0;
  for (; msg[i] != '\0' && i + 1 < sizeof lower; i++)
    lower[i] = (char)(msg[i] >= 'A' && msg[i] <= 'Z' ? msg[i] + 32 : msg[i]);
  lower[i] = '\0';
  if (rc != RLOCK_EAUTH || strstr(lower, what) == NULL)
    fail_msg("%s: status %d, message '%s', wanted RLOCK_EAUTH naming '%s'",
             kind, rc, msg, what);
  assert_null(strstr(msg, SECRET));
}

/* One right less each: every kind is refused with RLOCK_EAUTH naming
 * what was missing. */
static void test_missing_rights(void **state) {
  (void)state;
  char rules[2048], msg[512];
  /* No scripts at all. */
  snprintf(rules, sizeof rules, "%s -evalsha -eval", RULES);
  set_user("noeval", rules);
  for (size_t k = 0; k < NKINDS; k++)
    expect_eauth(refused("noeval", k, "locks:ne", 0, msg, sizeof msg), msg,
                 "evalsha", kinds[k].kind);
  /* A name outside the key patterns. */
  set_user("locker", RULES);
  for (size_t k = 0; k < NKINDS; k++)
    expect_eauth(refused("locker", k, "orders:1", 0, msg, sizeof msg), msg,
                 "no permissions", kinds[k].kind);
  /* No channel: a wait cannot subscribe (the spin lock never does). */
  set_user("nochan", "~locks:* ~{locks:* ~redisson_lock_queue:{locks:* "
                     "~redisson_lock_timeout:{locks:* "
                     "~redisson_lock_token:{locks:* "
                     "+evalsha +eval +ping +info +wait +subscribe "
                     "+unsubscribe +publish +get +hget +hexists +hincrby "
                     "+hset +hdel +hgetall +hkeys +hlen +pexpire +pttl +del "
                     "+exists +type +set +incr +lindex +lpop +lrange +lrem "
                     "+rpush +zadd +zincrby +zrange +zrem +zscore");
  for (size_t k = 0; k < NKINDS; k++)
    if (k != 5)
      expect_eauth(refused("nochan", k, "locks:nc", 1, msg, sizeof msg), msg,
                   "channel", kinds[k].kind);
}

/* Listing needs SCAN, and LLEN for a fair lock's queue (refused inside
 * the script: Redis 7.0 does not name the command, so only "scan" is
 * looked for in the message); a pattern that reaches a hash outside the
 * user's key patterns is refused (RLOCK_EAUTH); the CLI exits 69 then, 0
 * within them. */
static void test_list_rights(void **state) {
  (void)state;
  freeReplyObject(
      rt_cmd(srv, "HSET locks:q 00000000-0000-4000-8000-000000000000:1 1"));
  freeReplyObject(rt_cmd(srv, "PEXPIRE locks:q 60000"));
  freeReplyObject(rt_cmd(srv, "RPUSH redisson_lock_queue:{locks:q} w"));
  freeReplyObject(rt_cmd(srv, "HSET other:h a 1"));
  freeReplyObject(rt_cmd(srv, "PEXPIRE other:h 60000"));
  int n;
  set_user("locker", RULES);
  rlock_client *c = user_client("locker");
  OK(list_as(c, "locks:*", &n));
  assert_int_equal(n, 1);
  RC(list_as(c, "*", &n), RLOCK_EAUTH);
  rlock_client_free(c);
  const char *need[] = {"scan", "llen"};
  for (int i = 0; i < 2; i++) {
    char rules[2048], msg[512];
    snprintf(rules, sizeof rules, "%s -%s", RULES, need[i]);
    set_user("less", rules);
    c = user_client("less");
    int rc = list_as(c, "locks:*", &n);
    snprintf(msg, sizeof msg, "%s", rlock_error_last()->message);
    expect_eauth(rc, msg, i == 0 ? "scan" : "script", "list");
    rlock_client_free(c);
  }
  const char *dir = getenv("RLOCK_TEST_BINDIR");
  char cli[512], cmd[2048];
  snprintf(cli, sizeof cli, "%s/rlock", dir != NULL ? dir : ".");
  if (access(cli, X_OK) != 0)
    fail_msg("no rlock binary at %s (set RLOCK_TEST_BINDIR)", cli);
  const char *pattern[2] = {"locks:*", "*"};
  for (int i = 0; i < 2; i++) {
    snprintf(cmd, sizeof cmd,
             "'%s' -u 'redis://locker:" SECRET "@127.0.0.1:%d' list '%s' "
             ">/dev/null 2>&1",
             cli, rt_server_port(srv), pattern[i]);
    int st = system(cmd);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), i == 0 ? 0 : 69);
  }
  freeReplyObject(rt_cmd(srv, "DEL locks:q redisson_lock_queue:{locks:q} "
                              "other:h"));
}

/* A RedLock on "locks:red" over clients `c` (freed here) acquired (no
 * wait, 10 s lease) and released: every member taken, or, with
 * `refused0`, member 0 refused with RLOCK_EAUTH naming it and the others
 * taken. */
static void redlock_over(rlock_client *c[3], const char *refused0) {
  rlock_lock *m[3];
  for (int i = 0; i < 3; i++)
    m[i] = fx_lock(c[i], "locks:red");
  rlock_redlock *r;
  OK(rlock_redlock_new(&r, m, 3));
  rlock_redlock_result *res;
  OK(rlock_redlock_try_acquire(&res, r, 0, 10000));
  if (refused0 != NULL)
    expect_eauth(rlock_redlock_result_status(res, 0),
                 rlock_redlock_result_message(res, 0), refused0, "member 0");
  for (size_t i = refused0 != NULL; i < 3; i++)
    OK(rlock_redlock_result_status(res, i));
  rlock_redlock_result_free(res);
  OK(rlock_redlock_release(r));
  rlock_redlock_free(r);
  for (int i = 0; i < 3; i++) {
    rlock_lock_free(m[i]);
    rlock_client_free(c[i]);
  }
}

/* A RedLock member whose user may not run scripts: that member is
 * refused with RLOCK_EAUTH, the others still make the quorum. */
static void test_redlock_member(void **state) {
  (void)state;
  set_user("noeval2", RULES " -evalsha -eval");
  rt_server *s2 = rt_server_start(NULL), *s3 = rt_server_start(NULL);
  rlock_client *c[3] = {user_client("noeval2"), fx_client(s2, 0),
                        fx_client(s3, 0)};
  redlock_over(c, "evalsha");
  rt_server_free(s2);
  rt_server_free(s3);
}

/* A refused password is not repeated in the message. */
static void test_password_not_shown(void **state) {
  (void)state;
  char url[256];
  snprintf(url, sizeof url, "redis://locker:wrong-" SECRET "@127.0.0.1:%d",
           rt_server_port(srv));
  rlock_client *c = fx_client_opts(url, 0, NULL, NULL);
  RC(rlock_client_ping(c, NULL), RLOCK_EAUTH);
  assert_null(strstr(rlock_error_last()->message, SECRET));
  assert_non_null(strstr(rlock_error_last()->message, "AUTH"));
  rlock_client_free(c);
}

/* MultiLock (fair, read and fenced members) and a RedLock over three
 * servers, each server with the documented user: all as that user. */
static void test_multi_and_redlock_as_user(void **state) {
  (void)state;
  set_user("locker", RULES);
  rlock_client *c = user_client("locker");
  rlock_lock *mm[3];
  OK(rlock_lock_new_fair(&mm[0], c, "locks:m1"));
  OK(rlock_lock_new_read(&mm[1], c, "locks:m2"));
  OK(rlock_lock_new_fenced(&mm[2], c, "locks:m3"));
  rlock_multilock *ml;
  OK(rlock_multilock_new(&ml, mm, 3));
  OK(rlock_multilock_acquire(ml));
  int held;
  OK(rlock_multilock_is_held(&held, ml));
  assert_int_equal(held, 1);
  OK(rlock_multilock_release(ml));
  rlock_multilock_free(ml);
  for (int i = 0; i < 3; i++)
    rlock_lock_free(mm[i]);
  rlock_client_free(c);

  rt_server *s[3] = {srv, rt_server_start(NULL), rt_server_start(NULL)};
  rlock_client *rc[3];
  for (int i = 0; i < 3; i++) {
    rt_server *keep = srv;
    srv = s[i]; /* set_user and user_client address `srv` */
    set_user("locker", RULES);
    rc[i] = user_client("locker");
    srv = keep;
  }
  redlock_over(rc, NULL);
  rt_server_free(s[1]);
  rt_server_free(s[2]);
}

/* `rlock status` run with the password in its URL never prints it, when
 * the server takes it and when it refuses it. */
static void test_cli_hides_password(void **state) {
  (void)state;
  const char *dir = getenv("RLOCK_TEST_BINDIR");
  char cli[512], out[512], err[512], cmd[2048];
  snprintf(cli, sizeof cli, "%s/rlock", dir != NULL ? dir : ".");
  if (access(cli, X_OK) != 0) {
    print_message("no rlock binary at %s (RLOCK_BUILD_CLI off, or "
                  "RLOCK_TEST_BINDIR unset): skipped\n",
                  cli);
    skip();
  }
  set_user("locker", RULES);
  fx_tmp_path(out, sizeof out, "cli.out");
  fx_tmp_path(err, sizeof err, "cli.err");
  const char *pw[2] = {SECRET, "wrong-" SECRET};
  for (int i = 0; i < 2; i++) {
    snprintf(cmd, sizeof cmd,
             "'%s' -u 'redis://locker:%s@127.0.0.1:%d' status locks:cli "
             ">'%s' 2>'%s'",
             cli, pw[i], rt_server_port(srv), out, err);
    int st = system(cmd);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), i == 0 ? 0 : 69); /* EAUTH: 69 */
    assert_null(strstr(fx_slurp(out), SECRET));
    assert_null(strstr(fx_slurp(err), SECRET));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_documented_rules_suffice),
      cmocka_unit_test(test_election_as_user),
      cmocka_unit_test(test_missing_rights),
      cmocka_unit_test(test_redlock_member),
      cmocka_unit_test(test_password_not_shown),
      cmocka_unit_test(test_multi_and_redlock_as_user),
      cmocka_unit_test(test_cli_hides_password),
      cmocka_unit_test(test_list_rights),
      cmocka_unit_test(test_rules_on_cluster),
      cmocka_unit_test(test_rules_behind_sentinel),
  };
  return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
