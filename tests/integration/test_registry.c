/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: the client registry (rlock_config_set_registry_period,
 * rlock_client_whois), on a blocking client and on loop clients
 * (drivers.h): the record is written when the client is made, names the
 * host, pid, program, version and start time, expires after three
 * periods, is written again once a period and no more often however many
 * locks are taken; off, no key is written; a write an ACL refuses is
 * logged once and the locks go on; whois reads it back from an owner
 * field, says 0 for an unknown client (a Redisson holder), refuses bad
 * arguments; on a loop client rlock_client_whois_async does (dk_whois),
 * from any thread, and a client freed completes it with RLOCK_ECLOSED.
 */
#include "drivers.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static rt_server *srv;

#define PERIOD 200

static rlock_client *reg_client(int64_t period, const char *program,
                                const char *url, rlock_log_fn log, void *ud) {
  rlock_config *cfg = fx_config(url, 0, NULL, NULL);
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

/* The wall clock in ms, read as the library stamps the record (time()
 * is coarse: it may still say the last second a few ms into the next). */
static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The record names this process, the program set, the version; its TTL
 * is three periods; whois reads it back from an owner field. */
static void test_record(void **state) {
  (void)state;
  int64_t before = wall_ms();
  rlock_client *c =
      reg_client(PERIOD, "registry test\nprog", rt_server_url(srv), NULL, NULL);
  wait_key(c);
  char key[80];
  key_of(c, key, sizeof key);
  long long ttl = rt_cmd_int(srv, "PTTL %s", key);
  ASSERT_RANGE(ttl, 1, 3 * PERIOD);
  char owner[RLOCK_OWNER_MAX];
  snprintf(owner, sizeof owner, "%s:42", rlock_client_id(c));
  rlock_client_record rec;
  RC(dk_whois(c, owner, &rec), 1); /* the loop's whois on a loop driver */
  assert_string_equal(rec.client_id, rlock_client_id(c));
  assert_int_equal(rec.pid, (long long)getpid());
  assert_string_equal(rec.program, "registry test prog"); /* no newline */
  assert_string_equal(rec.version, rlock_version_string());
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  assert_string_equal(rec.host, host);
  ASSERT_RANGE(rec.started_ms, before, wall_ms());
  RC(dk_whois(c, rlock_client_id(c), &rec), 1); /* a bare id */
  assert_string_equal(rec.client_id, rlock_client_id(c));
  rlock_client *b = fx_client(srv, 0); /* another client reads it alike */
  rlock_client_record again;
  RC(rlock_client_whois(b, owner, &again), 1);
  assert_memory_equal(&again, &rec, sizeof rec);
  rlock_client_free(b);
  dk_free(c);
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
  DK_FREE((l), (c));
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
  rlock_client_record rec;
  RC(dk_whois(on, rlock_client_id(off), &rec), 0);
  assert_string_equal(rec.host, "");
  dk_free(on);
  DK_FREE((l), (off));
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
  DK_FREE((l), (c));
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

/* A lock held as Redisson holds it (its own client id, thread 1): its
 * holder has no record, and whois says so (0, the record zeroed). */
static void test_redisson_owner(void **state) {
  (void)state;
  const char *field = "8f14e45f-ceea-467f-a0e6-6b4f1e2b6c11:1";
  rt_cmd_int(srv, "HSET registry:redisson %s 1", field);
  rt_cmd_int(srv, "PEXPIRE registry:redisson 30000");
  rlock_client *c = reg_client(PERIOD, NULL, rt_server_url(srv), NULL, NULL);
  rlock_lock *l = fx_lock(c, "registry:redisson");
  rlock_lock_info *info;
  OK(dk_inspect(&info, l));
  assert_int_equal(rlock_lock_info_holder_count(info), 1);
  assert_string_equal(rlock_lock_info_holder_owner(info, 0), field);
  rlock_client_record rec;
  memset(&rec, 'x', sizeof rec);
  RC(dk_whois(c, rlock_lock_info_holder_owner(info, 0), &rec), 0);
  assert_string_equal(rec.client_id, "");
  assert_string_equal(rec.host, "");
  assert_int_equal(rec.pid, 0);
  rlock_lock_info_free(info);
  rt_cmd_int(srv, "DEL registry:redisson");
  DK_FREE((l), (c));
}

static void never_called(void *arg, int rc, const rlock_client_record *rec) {
  (void)rc, (void)rec;
  atomic_fetch_add((atomic_int *)arg, 1);
}

/* rlock_client_whois_async refuses what rlock_client_whois refuses, and a
 * blocking client, with no callback; a key that is not a record is the
 * callback's RLOCK_EWRONGTYPE; a fork()ed child is refused. */
static void test_args_async(void **state) {
  (void)state;
  rlock_client *c = reg_client(0, NULL, rt_server_url(srv), NULL, NULL);
  rlock_client *b = fx_client(srv, 0);
  const char *id = "11111111-2222-3333-4444-555555555555";
  atomic_int calls = 0;
  RC(rlock_client_whois_async(NULL, id, never_called, &calls), RLOCK_EINVAL);
  RC(rlock_client_whois_async(c, NULL, never_called, &calls), RLOCK_EINVAL);
  RC(rlock_client_whois_async(c, id, NULL, &calls), RLOCK_EINVAL);
  RC(rlock_client_whois_async(c, "", never_called, &calls), RLOCK_EINVAL);
  RC(rlock_client_whois_async(c, "not-a-uuid:1", never_called, &calls),
     RLOCK_EINVAL);
  RC(rlock_client_whois_async(c, "0123456789abcdef0123456789abcdef0123:1",
                              never_called, &calls),
     RLOCK_EINVAL); /* 36 characters, no dashes */
  RC(rlock_client_whois_async(b, id, never_called, &calls), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "rlock_client_whois"));
  rlock_client_record rec;
  RC(rlock_client_whois(c, id, &rec), RLOCK_EINVAL); /* and the converse */
  RC(dk_whois(c, id, &rec), 0);
  rt_cmd_ok(srv, "SET " RLOCK_REGISTRY_PREFIX "%s garbage", id);
  RC(dk_whois(c, "11111111-2222-3333-4444-555555555555:7", &rec),
     RLOCK_EWRONGTYPE);
  assert_non_null(strstr(rlock_error_last()->message, "not a registry"));
  rt_cmd_int(srv, "DEL " RLOCK_REGISTRY_PREFIX "%s", id);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) { /* a fork()ed child's client is refused */
    rt_forked_child();
    _exit(rlock_client_whois_async(c, id, never_called, &calls) == RLOCK_ECLOSED
              ? 0
              : 1);
  }
  int st;
  waitpid(pid, &st, 0);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  dk_let_time_pass(50); /* a callback would have come by now */
  assert_int_equal(atomic_load(&calls), 0);
  rlock_client_free(b);
  dk_free(c);
}

typedef struct freed {
  rlock_client *c;
  dk_rec first;
  int again; /* what a whois asked from inside the first's callback gave */
} freed;

static void on_freed(void *arg, int rc, const rlock_client_record *rec) {
  freed *f = arg;
  f->again =
      rlock_client_whois_async(f->c, rlock_client_id(f->c), never_called, NULL);
  dk_on_record(&f->first, rc, rec);
}

/* Freeing the client completes a pending whois inside the free, with
 * RLOCK_ECLOSED and no record; a whois asked then is refused. */
static void test_whois_freed(void **state) {
  (void)state;
  rlock_client *c = reg_client(PERIOD, NULL, rt_server_url(srv), NULL, NULL);
  freed f = {.c = c};
  OK(rlock_client_whois_async(c, rlock_client_id(c), on_freed, &f));
  assert_int_equal(atomic_load(&f.first.done), 0); /* never from the call */
  dk_free(c);
  assert_int_equal(atomic_load(&f.first.done), 1);
  assert_int_equal(f.first.rc, RLOCK_ECLOSED);
  assert_int_equal(f.first.found, 0);
  assert_int_equal(f.again, RLOCK_ECLOSED);
}

typedef struct asker {
  rlock_client *c;
  char owner[RLOCK_OWNER_MAX];
  dk_rec got;
  int rc;
} asker;

static void *ask_off_loop(void *arg) {
  asker *a = arg;
  a->rc = rlock_client_whois_async(a->c, a->owner, dk_on_record, &a->got);
  return NULL;
}

/* Asked from another thread, it runs on the loop's: the callback comes
 * there with the record. */
static void test_whois_other_thread(void **state) {
  (void)state;
  rlock_client *c =
      reg_client(PERIOD, "asked from afar", rt_server_url(srv), NULL, NULL);
  wait_key(c);
  asker a = {.c = c};
  snprintf(a.owner, sizeof a.owner, "%s:9", rlock_client_id(c));
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, ask_off_loop, &a), 0);
  pthread_join(t, NULL);
  OK(a.rc);
  dk_wait(dk_pred_answered, &a.got.done, 10000, "the whois asked off the loop");
  OK(a.got.rc);
  assert_int_equal(a.got.found, 1);
  assert_string_equal(a.got.rec.program, "asked from afar");
  assert_int_equal(a.got.rec.pid, (long long)getpid());
  dk_free(c);
}

int main(void) {
  const dk_case cases[] = {
      DK_CASE(test_record, DK_ALL),
      DK_CASE(test_period, DK_ALL),
      DK_CASE(test_off, DK_ALL),
      DK_CASE(test_acl_refused, DK_ALL),
      DK_CASE(test_args, DK_BLOCK),
      DK_CASE(test_redisson_owner, DK_ALL),
      DK_CASE(test_args_async, DK_LOOPS),
      DK_CASE(test_whois_freed, DK_LOOPS),
      DK_CASE(test_whois_other_thread, DK_LOOPS),
  };
  return DK_RUN(cases, fx_srv_start, fx_srv_stop);
}
