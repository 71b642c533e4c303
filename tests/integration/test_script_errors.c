/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: a command that a script runs under redis.pcall (to tell a
 * key of another type from a lock, a count or a sorted set) and that the
 * server refuses for another reason (an ACL right missing, the server out
 * of memory) fails the call with that reason's status and Redis's words:
 * RLOCK_EAUTH, RLOCK_ESERVER. It is never RLOCK_EWRONGTYPE, which would
 * send the caller looking at a key that is what it should be. A watchdog
 * renewal so refused is an error, tried again, never a lost hold. */
#include "fixture.h"

/* A client logged in as `user` (password "pw"). */
static rlock_client *as_user(const char *user, int64_t watchdog,
                             rlock_lost_fn lost, void *ud) {
  char url[128];
  snprintf(url, sizeof url, "redis://%s:pw@127.0.0.1:%d", user,
           rt_server_port(srv));
  return fx_client_opts(url, watchdog, lost, ud);
}

/* The user `user`: every key, channel and command but `refused`. */
static void user_without(const char *user, const char *refused) {
  redisReply *r =
      rt_cmd(srv, "ACL SETUSER %s reset on >pw ~* &* +@all -%s", user, refused);
  assert_int_equal(r->type, REDIS_REPLY_STATUS);
  freeReplyObject(r);
}

/* `rc` is `code`, with the server's refusal as the message. */
static void expect(int rc, int code, const char *what) {
  const char *msg = rlock_error_last()->message;
  if (rc != code || strstr(msg, "WRONGTYPE") != NULL)
    fail_msg("%s returned %d (%s), expected %d with the server's refusal", what,
             rc, msg, code);
}

/* A right a script uses through redis.pcall, refused by ACL. */
static void test_acl_refusal_is_not_a_type(void **state) {
  (void)state;
  user_without("se_noincr", "incr");
  rlock_client *c = as_user("se_noincr", 0, NULL, NULL);
  rlock_lock *f;
  OK(rlock_lock_new_fenced(&f, c, "se:fenced"));
  expect(rlock_lock_try_acquire(f, 0, 5000), RLOCK_EAUTH, "fenced acquire");
  rlock_election *e;
  OK(rlock_election_new(&e, c, "se:elect"));
  expect(rlock_election_campaign(e, "v", NULL, NULL), RLOCK_EAUTH, "campaign");
  rlock_election_free(e);
  rlock_lock_free(f);
  rlock_client_free(c);

  user_without("se_noget", "get");
  c = as_user("se_noget", 0, NULL, NULL);
  rlock_semaphore *s;
  OK(rlock_semaphore_new(&s, c, "se:sem"));
  expect(rlock_semaphore_try_set_permits(NULL, s, 2), RLOCK_EAUTH,
         "semaphore try_set_permits");
  rlock_latch *l;
  OK(rlock_latch_new(&l, c, "se:latch"));
  expect(rlock_latch_try_set_count(NULL, l, 2), RLOCK_EAUTH,
         "latch try_set_count");
  rlock_latch_free(l);
  rlock_semaphore_free(s);
  rlock_client_free(c);

  user_without("se_nozrange", "zrangebyscore");
  c = as_user("se_nozrange", 0, NULL, NULL);
  rlock_psemaphore *p;
  OK(rlock_psemaphore_new(&p, c, "se:psem"));
  expect(rlock_psemaphore_try_set_permits(NULL, p, 2), RLOCK_EAUTH,
         "psemaphore try_set_permits");
  rlock_psemaphore_free(p);
  rlock_client_free(c);

  user_without("se_nohexists", "hexists");
  c = as_user("se_nohexists", 0, NULL, NULL);
  rlock_lock *k;
  OK(rlock_lock_new(&k, c, "se:lock"));
  OK(rlock_lock_try_acquire(k, 0, 5000)); /* takes no HEXISTS */
  expect(rlock_lock_release(k), RLOCK_EAUTH, "release");
  rlock_lock_free(k);
  rlock_client_free(c);
  freeReplyObject(rt_cmd(srv, "DEL se:lock se:fenced"));
}

/* A write a script makes through redis.pcall, refused for memory. */
static void test_oom_is_not_a_type(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *f;
  OK(rlock_lock_new_fenced(&f, c, "se:oom"));
  rlock_election *e;
  OK(rlock_election_new(&e, c, "se:oom-elect"));
  freeReplyObject(rt_cmd(srv, "CONFIG SET maxmemory-policy noeviction"));
  freeReplyObject(rt_cmd(srv, "CONFIG SET maxmemory 1"));
  int rc_fenced = rlock_lock_try_acquire(f, 0, 5000);
  char msg[512];
  snprintf(msg, sizeof msg, "%s", rlock_error_last()->message);
  int rc_elect = rlock_election_campaign(e, "v", NULL, NULL);
  freeReplyObject(rt_cmd(srv, "CONFIG SET maxmemory 0"));
  if (rc_fenced != RLOCK_ESERVER || strstr(msg, "OOM") == NULL)
    fail_msg("fenced acquire out of memory returned %d (%s)", rc_fenced, msg);
  expect(rc_elect, RLOCK_ESERVER, "campaign out of memory");
  rlock_election_free(e);
  rlock_lock_free(f);
  rlock_client_free(c);
}

typedef struct seen {
  atomic_int lost, failed;
} seen;

static void on_lost(const char *name, const char *owner, void *ud) {
  (void)name, (void)owner;
  atomic_fetch_add(&((seen *)ud)->lost, 1);
}

static void on_log(rlock_log_level level, const char *message, void *ud) {
  (void)level;
  if (strstr(message, "watchdog: renewing") != NULL)
    atomic_fetch_add(&((seen *)ud)->failed, 1);
}

/* A renewal whose HEXISTS the ACL refuses fails (logged, tried again); the
 * hold is not taken for gone. */
static void test_refused_renewal_is_not_a_loss(void **state) {
  (void)state;
  user_without("se_renew", "acl"); /* every command, for now */
  seen s = {0, 0};
  char url[128];
  snprintf(url, sizeof url, "redis://se_renew:pw@127.0.0.1:%d",
           rt_server_port(srv));
  rlock_config *cfg;
  rlock_client *c;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, url));
  OK(rlock_config_set_watchdog_timeout_ms(cfg, rt_scaled_ms(600)));
  OK(rlock_config_set_lost_callback(cfg, on_lost, &s));
  OK(rlock_config_set_log(cfg, on_log, RLOCK_LOG_WARN, &s));
  OK(rlock_client_new(&c, cfg));
  rlock_config_free(cfg);
  rlock_lock *k;
  OK(rlock_lock_new(&k, c, "se:renew"));
  OK(rlock_lock_acquire(k));
  user_without("se_renew", "hexists");
  int64_t t0 = rt_now_ms();
  while (atomic_load(&s.failed) == 0 && atomic_load(&s.lost) == 0) {
    if (rt_now_ms() - t0 > rt_scaled_ms(5000))
      fail_msg("no renewal was tried in 5 s");
    rt_sleep_ms(5);
  }
  if (atomic_load(&s.lost) != 0)
    fail_msg("a renewal refused by ACL was taken for a lost hold");
  user_without("se_renew", "acl");
  OK(rlock_lock_release(k));
  rlock_lock_free(k);
  rlock_client_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_acl_refusal_is_not_a_type),
      cmocka_unit_test(test_oom_is_not_a_type),
      cmocka_unit_test(test_refused_renewal_is_not_a_loss),
  };
  return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
