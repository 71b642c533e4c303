/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: the client registry (rlock_config_set_registry_period,
 * rlock_client_whois), on a blocking client and on loop clients
 * (drivers.h): the record is written when the client is made, names the
 * host, pid, program, version and start time, expires after three
 * periods, is written again once a period and no more often however many
 * locks are taken; off, no key is written; a write an ACL refuses is
 * logged once and the locks go on; whois reads it back from an owner
 * field, says 0 for an unknown client, refuses bad arguments.
 */
#include "drivers.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static rt_server *srv;

#define PERIOD 200

static rlock_client *reg_client(int64_t period, const char *program,
                                const char *url, rlock_log_fn log, void *ud) {
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, url));
  OK(rlock_config_set_connect_timeout_ms(cfg, 1000));
  OK(rlock_config_set_command_timeout_ms(cfg, 2000));
  OK(rlock_config_set_registry_period(cfg, period));
  if (program != NULL)
    OK(rlock_config_set_program(cfg, program));
  if (log != NULL)
    OK(rlock_config_set_log(cfg, log, RLOCK_LOG_WARN, ud));
  rlock_client *c = dk_client_cfg(cfg);
  rlock_config_free(cfg);
  return c;
}

static void key_of(const rlock_client *c, char *key, size_t cap) {
  snprintf(key, cap, "%s%s", RLOCK_REGISTRY_PREFIX, rlock_client_id(c));
}

static bool pred_exists(void *arg, char *why, size_t cap) {
  snprintf(why, cap, "no key %s", (const char *)arg);
  return rt_cmd_int(srv, "EXISTS %s", (const char *)arg) == 1;
}

/* Wait (running a loop client's loop) for the client's record. */
static void wait_key(const rlock_client *c) {
  char key[80];
  key_of(c, key, sizeof key);
  dk_wait(pred_exists, key, 2000, "the registry record");
}

static void free_client(rlock_client *c) { dk_free(c); }

/* The record names this process, the program set, the version; its TTL
 * is three periods; whois reads it back from an owner field. */
static void test_record(void **state) {
  (void)state;
  int64_t before = (int64_t)time(NULL) * 1000 - 1000;
  rlock_client *c =
      reg_client(PERIOD, "registry test\nprog", rt_server_url(srv), NULL, NULL);
  wait_key(c);
  char key[80];
  key_of(c, key, sizeof key);
  long long ttl = rt_cmd_int(srv, "PTTL %s", key);
  ASSERT_RANGE(ttl, 1, 3 * PERIOD);
  rlock_client *b = fx_client(srv, 0); /* whois is blocking */
  char owner[RLOCK_OWNER_MAX];
  snprintf(owner, sizeof owner, "%s:42", rlock_client_id(c));
  rlock_client_record rec;
  RC(rlock_client_whois(b, owner, &rec), 1);
  assert_string_equal(rec.client_id, rlock_client_id(c));
  assert_int_equal(rec.pid, (long long)getpid());
  assert_string_equal(rec.program, "registry test prog"); /* no newline */
  assert_string_equal(rec.version, rlock_version_string());
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  assert_string_equal(rec.host, host);
  ASSERT_RANGE(rec.started_ms, before, (int64_t)time(NULL) * 1000 + 1000);
  RC(rlock_client_whois(b, rlock_client_id(c), &rec), 1); /* a bare id */
  rlock_client_free(b);
  free_client(c);
}

static bool pred_sets(void *arg, char *why, size_t cap) {
  long long want = *(long long *)arg;
  char v[64] = "";
  long long n = 0;
  if (rt_server_info_field(srv, "commandstats", "cmdstat_set", v, sizeof v))
    n = atoll(strstr(v, "calls=") ? strstr(v, "calls=") + 6 : "0");
  snprintf(why, cap, "%lld SETs, want %lld", n, want);
  return n >= want;
}

static long long sets_now(void) {
  char v[64] = "";
  if (!rt_server_info_field(srv, "commandstats", "cmdstat_set", v, sizeof v))
    return 0;
  return atoll(strstr(v, "calls=") ? strstr(v, "calls=") + 6 : "0");
}

/* Written again each period (a deleted record comes back), and no more
 * often than once a period however many locks are taken. */
static void test_period(void **state) {
  (void)state;
  rlock_client *c = reg_client(PERIOD, NULL, rt_server_url(srv), NULL, NULL);
  wait_key(c);
  char key[80];
  key_of(c, key, sizeof key);
  rt_cmd_int(srv, "DEL %s", key);
  wait_key(c); /* back within a period */
  rlock_lock *l = fx_lock(c, "registry:period");
  uint64_t me = dk_me();
  rt_cmd_ok(srv, "CONFIG RESETSTAT");
  int64_t t0 = rt_now_ms();
  for (int i = 0; i < 50; i++) {
    OK(dk_acquire(l, me, 0, 0));
    OK(dk_release(l, me));
  }
  long long want = 4;
  dk_wait(pred_sets, &want, 5000, "four registry writes");
  int64_t took = rt_now_ms() - t0;
  long long n = sets_now();
  /* n writes need n - 1 whole periods at least (the first may come at
   * once); at most one more than the periods elapsed */
  ASSERT_RANGE(took, (n - 1) * PERIOD - 50, rt_scaled_ms(5000));
  ASSERT_RANGE(n, 4, rt_scaled_ms(5000) / PERIOD);
  if (dk_loop())
    free_client(c);
  rlock_lock_free(l);
  if (!dk_loop())
    free_client(c);
}

/* Off: no key, whatever the client does; whois says 0. */
static void test_off(void **state) {
  (void)state;
  rlock_client *off = reg_client(0, NULL, rt_server_url(srv), NULL, NULL);
  rlock_lock *l = fx_lock(off, "registry:off");
  uint64_t me = dk_me();
  OK(dk_acquire(l, me, 0, 0));
  OK(dk_release(l, me));
  rlock_client *on = reg_client(PERIOD, NULL, rt_server_url(srv), NULL, NULL);
  wait_key(on); /* written after anything the first could have written */
  char key[80];
  key_of(off, key, sizeof key);
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", key), 0);
  rlock_client *b = fx_client(srv, 0);
  rlock_client_record rec;
  RC(rlock_client_whois(b, rlock_client_id(off), &rec), 0);
  assert_string_equal(rec.host, "");
  rlock_client_free(b);
  free_client(on);
  if (dk_loop())
    free_client(off);
  rlock_lock_free(l);
  if (!dk_loop())
    free_client(off);
}

static atomic_int warns;
static char warned[512];

static void count_warn(rlock_log_level level, const char *msg, void *ud) {
  (void)ud;
  if (level == RLOCK_LOG_WARN && strstr(msg, "registry") != NULL &&
      atomic_fetch_add(&warns, 1) == 0)
    snprintf(warned, sizeof warned, "%s", msg);
}

static bool pred_denied(void *arg, char *why, size_t cap) {
  long long want = *(long long *)arg;
  redisReply *r = rt_cmd(srv, "ACL LOG");
  long long n = 0;
  for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
    redisReply *e = r->element[i];
    for (size_t j = 0; j + 1 < e->elements; j += 2)
      if (strcmp(e->element[j]->str, "count") == 0)
        n += e->element[j + 1]->integer;
  }
  freeReplyObject(r);
  snprintf(why, cap, "%lld refusals in ACL LOG, want %lld", n, want);
  return n >= want;
}

/* An ACL that does not grant the prefix: the locks work, one WARN says
 * why, the writes go on (Redis's ACL LOG counts each) without more. */
static void test_acl_refused(void **state) {
  (void)state;
  rt_cmd_ok(srv, "ACL SETUSER regtest reset on >pw ~registry:* &* +@all");
  rt_cmd_ok(srv, "ACL LOG RESET");
  atomic_store(&warns, 0);
  char url[256];
  snprintf(url, sizeof url, "redis://regtest:pw@127.0.0.1:%d",
           rt_server_port(srv));
  rlock_client *c = reg_client(PERIOD, NULL, url, count_warn, NULL);
  rlock_lock *l = fx_lock(c, "registry:acl");
  uint64_t me = dk_me();
  OK(dk_acquire(l, me, 0, 0));
  OK(dk_release(l, me));
  long long want = 3;
  dk_wait(pred_denied, &want, 5000, "three refused registry writes");
  OK(dk_acquire(l, me, 0, 0));
  OK(dk_release(l, me));
  assert_int_equal(atomic_load(&warns), 1);
  assert_non_null(strstr(warned, RLOCK_REGISTRY_PREFIX));
  if (dk_loop())
    free_client(c);
  rlock_lock_free(l);
  if (!dk_loop())
    free_client(c);
  rt_cmd_int(srv, "ACL DELUSER regtest");
}

/* The arguments' refusals, and a key that is not a record. */
static void test_args(void **state) {
  (void)state;
  rlock_client *b = fx_client(srv, 0);
  rlock_client_record rec;
  const char *id = rlock_client_id(b);
  RC(rlock_client_whois(NULL, id, &rec), RLOCK_EINVAL);
  RC(rlock_client_whois(b, NULL, &rec), RLOCK_EINVAL);
  RC(rlock_client_whois(b, id, NULL), RLOCK_EINVAL);
  RC(rlock_client_whois(b, "", &rec), RLOCK_EINVAL);
  RC(rlock_client_whois(b, "not-a-uuid:1", &rec), RLOCK_EINVAL);
  RC(rlock_client_whois(b, "0123456789abcdef0123456789abcdef0123:1", &rec),
     RLOCK_EINVAL); /* 36 characters, no dashes */
  RC(rlock_client_whois(b, "11111111-2222-3333-4444-555555555555", &rec), 0);
  rt_cmd_ok(srv, "SET " RLOCK_REGISTRY_PREFIX
                 "11111111-2222-3333-4444-555555555555 garbage");
  RC(rlock_client_whois(b, "11111111-2222-3333-4444-555555555555:7", &rec),
     RLOCK_EWRONGTYPE);
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  RC(rlock_config_set_registry_period(NULL, 1000), RLOCK_EINVAL);
  RC(rlock_config_set_registry_period(cfg, -1), RLOCK_EINVAL);
  RC(rlock_config_set_registry_period(cfg, 99), RLOCK_EINVAL);
  RC(rlock_config_set_registry_period(cfg, 3600001), RLOCK_EINVAL);
  OK(rlock_config_set_registry_period(cfg, 0));
  OK(rlock_config_set_registry_period(cfg, 3600000));
  char big[RLOCK_PROGRAM_MAX + 2];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  RC(rlock_config_set_program(NULL, "x"), RLOCK_EINVAL);
  RC(rlock_config_set_program(cfg, ""), RLOCK_EINVAL);
  RC(rlock_config_set_program(cfg, big), RLOCK_EINVAL);
  big[RLOCK_PROGRAM_MAX] = '\0';
  OK(rlock_config_set_program(cfg, big));
  OK(rlock_config_set_program(cfg, NULL));
  rlock_config_free(cfg);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) { /* a fork()ed child's client is refused */
    rt_forked_child();
    _exit(rlock_client_whois(b, id, &rec) == RLOCK_ECLOSED ? 0 : 1);
  }
  int st;
  waitpid(pid, &st, 0);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  rlock_client_free(b);
}

static int start(void) {
  srv = rt_server_start(NULL);
  return srv == NULL;
}

static void stop(void) {
  rt_server_free(srv);
  srv = NULL;
}

int main(void) {
  const dk_case cases[] = {
      DK_CASE(test_record, DK_ALL), DK_CASE(test_period, DK_ALL),
      DK_CASE(test_off, DK_ALL),    DK_CASE(test_acl_refused, DK_ALL),
      DK_CASE(test_args, DK_BLOCK),
  };
  return DK_RUN(cases, start, stop);
}
