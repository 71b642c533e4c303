/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: an ACL user allowed exactly what README's "Least-privilege
 * Redis users" gives for locks named `locks:*` runs every lock kind; a
 * user lacking one right gets RLOCK_EAUTH naming what was refused, for
 * every kind and for a RedLock member; the password never shows in a
 * message. */
#include "fixture.h"

/* README's rule set, for names starting "locks:" (one server, replicas
 * confirmed with WAIT by default). */
#define RULES                                                                  \
  "~locks:* ~{locks:* ~redisson_lock_queue:{locks:* "                          \
  "~redisson_lock_timeout:{locks:* ~redisson_lock_token:{locks:* "             \
  "~redisson_unlock_latch:{locks:* "                                           \
  "&redisson_lock__channel:{locks:* &redisson_rwlock:{locks:* "                \
  "+evalsha +eval +ping +info +wait +subscribe +unsubscribe +publish +get "    \
  "+hget +hexists +hincrby +hset +hdel +hgetall +hkeys +hlen +pexpire +pttl "  \
  "+del +exists +type +set +incr +lindex +lpop +lrange +lrem +rpush +zadd "    \
  "+zincrby +zrange +zrem +zscore"

#define SECRET "s3cret-acl-pw"

/* ACL SETUSER name reset on >SECRET <each word of rules>. */
static void set_user(const char *name, const char *rules) {
  char copy[2048], *save = NULL;
  const char *argv[128] = {"ACL", "SETUSER", name, "reset", "on", ">" SECRET};
  int argc = 6;
  snprintf(copy, sizeof copy, "%s", rules);
  for (char *w = strtok_r(copy, " ", &save); w != NULL && argc < 128;
       w = strtok_r(NULL, " ", &save))
    argv[argc++] = w;
  redisReply *r = rt_cmd_argv(srv, argc, argv, NULL);
  if (r->type != REDIS_REPLY_STATUS)
    fail_msg("ACL SETUSER %s: %s", name, r->str);
  freeReplyObject(r);
}

static rlock_client *user_client(const char *user) {
  char url[256];
  snprintf(url, sizeof url, "redis://%s:" SECRET "@127.0.0.1:%d", user,
           rt_server_port(srv));
  return fx_client_opts(url, 600, NULL, NULL);
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
  assert_int_equal(count, 2);
  rlock_lock_info *info;
  OK(rlock_lock_inspect(&info, l));
  rlock_lock_info_free(info);
  OK(rlock_lock_release(l));
  OK(rlock_lock_release(l));
  /* A wait, woken by the other's release. */
  OK(rlock_lock_acquire_lease(o, 60000));
  fx_waiter w;
  fx_waiter_start(&w, l);
  if (k == 1) {
    fx_wait_exists(srv, "redisson_lock_queue:{locks:fair}", 1,
                   rt_scaled_ms(5000));
    fx_wait_fair_head_subscribed(srv, name);
  } else if (wait_channel(k, name, ch, sizeof ch) != NULL)
    fx_wait_subscribers(srv, ch, 1, "the waiter's subscription");
  OK(rlock_lock_release(o));
  OK(fx_waiter_join(&w));
  int deleted;
  OK(rlock_lock_acquire(o));
  OK(rlock_lock_force_release(&deleted, o));
  assert_int_equal(deleted, 1);
  rlock_lock_free(o);
  rlock_lock_free(l);
}

static void test_documented_rules_suffice(void **state) {
  (void)state;
  set_user("locker", RULES);
  rlock_client *c = user_client("locker"), *other = user_client("locker");
  for (size_t k = 0; k < NKINDS; k++)
    full_cycle(c, other, k);
  rlock_client_free(other);
  rlock_client_free(c);
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

/* A RedLock member whose user may not run scripts: that member is
 * refused with RLOCK_EAUTH, the others still make the quorum. */
static void test_redlock_member(void **state) {
  (void)state;
  set_user("noeval2", RULES " -evalsha -eval");
  rt_server *s2 = rt_server_start(NULL), *s3 = rt_server_start(NULL);
  rlock_client *c[3] = {user_client("noeval2"), fx_client(s2, 0),
                        fx_client(s3, 0)};
  rlock_lock *m[3];
  for (int i = 0; i < 3; i++)
    m[i] = fx_lock(c[i], "locks:red");
  rlock_redlock *r;
  OK(rlock_redlock_new(&r, m, 3));
  rlock_redlock_result *res;
  OK(rlock_redlock_try_acquire(&res, r, 0, 10000));
  expect_eauth(rlock_redlock_result_status(res, 0),
               rlock_redlock_result_message(res, 0), "evalsha", "member 0");
  OK(rlock_redlock_result_status(res, 1));
  rlock_redlock_result_free(res);
  OK(rlock_redlock_release(r));
  rlock_redlock_free(r);
  for (int i = 0; i < 3; i++) {
    rlock_lock_free(m[i]);
    rlock_client_free(c[i]);
  }
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
  rlock_lock *m[3];
  for (int i = 0; i < 3; i++) {
    rt_server *keep = srv;
    srv = s[i]; /* set_user and user_client address `srv` */
    set_user("locker", RULES);
    rc[i] = user_client("locker");
    srv = keep;
    m[i] = fx_lock(rc[i], "locks:red");
  }
  rlock_redlock *r;
  OK(rlock_redlock_new(&r, m, 3));
  rlock_redlock_result *res;
  OK(rlock_redlock_try_acquire(&res, r, 0, 10000));
  for (size_t i = 0; i < 3; i++)
    OK(rlock_redlock_result_status(res, i));
  rlock_redlock_result_free(res);
  OK(rlock_redlock_release(r));
  rlock_redlock_free(r);
  for (int i = 0; i < 3; i++) {
    rlock_lock_free(m[i]);
    rlock_client_free(rc[i]);
  }
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
      cmocka_unit_test(test_missing_rights),
      cmocka_unit_test(test_redlock_member),
      cmocka_unit_test(test_password_not_shown),
      cmocka_unit_test(test_multi_and_redlock_as_user),
      cmocka_unit_test(test_cli_hides_password),
  };
  return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
