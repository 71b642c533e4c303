/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_calls.c - what an acquisition costs the server, counted with
 * MONITOR, so the counts cannot grow back unnoticed (issue 23).
 *
 * Redisson's refused attempt is one EVAL running EXISTS, HEXISTS and PTTL
 * (4 calls); rlock's runs PTTL and HGETALL (3 calls with its EVALSHA),
 * with lockcheck's rules applied. A waiter's whole wait is Redisson's:
 * one attempt, SUBSCRIBE, one attempt, then (after the unlock message)
 * the attempt that takes it, for the library and for `rlock exec`.
 *
 * The holder is played by raw commands on their own connection (HSET and
 * PEXPIRE, then DEL and PUBLISH "0"), so every script call MONITOR shows
 * is the waiter's.
 */
#include "fixture.h"

static rt_server *srv;

#define MAX_LINES 256

typedef struct seen {
  char *line[MAX_LINES];
  size_t n;
} seen;

static void seen_free(seen *s) {
  for (size_t i = 0; i < s->n; i++)
    free(s->line[i]);
  s->n = 0;
}

/* End the monitor (an ECHO marks the end) and keep, in order, the lines
 * that quote `a` or `b` (NULL: none). */
static void monitor_collect(fx_monitor *m, const char *a, const char *b,
                            seen *out) {
  freeReplyObject(rt_cmd(srv, "ECHO calls-end"));
  char qa[256], qb[256];
  snprintf(qa, sizeof qa, "\"%s\"", a);
  snprintf(qb, sizeof qb, "\"%s\"", b ? b : "\x01");
  out->n = 0;
  for (;;) {
    redisReply *r = NULL;
    if (redisGetReply(m->c, (void **)&r) != REDIS_OK || r == NULL)
      fail_msg("MONITOR: the end marker did not come: %s", m->c->errstr);
    int end = r->str != NULL && strstr(r->str, "\"calls-end\"") != NULL;
    if (!end && r->str != NULL && out->n < MAX_LINES &&
        (strstr(r->str, qa) != NULL || strstr(r->str, qb) != NULL))
      out->line[out->n++] = strdup(r->str);
    freeReplyObject(r);
    if (end)
      break;
  }
  redisFree(m->c);
  m->c = NULL;
}

/* Whether a MONITOR line ran inside a script. */
static int in_script(const char *line) { return strstr(line, " lua]") != NULL; }

/* The command of a line: its first quoted word, upper-cased, in buf. */
static const char *command_of(const char *line, char *buf, size_t size) {
  const char *q = strchr(line, ']');
  q = q ? strchr(q, '"') : NULL;
  size_t n = 0;
  for (q = q ? q + 1 : ""; *q && *q != '"' && n + 1 < size; q++)
    buf[n++] = (char)(*q >= 'a' && *q <= 'z' ? *q - 32 : *q);
  buf[n] = '\0';
  return buf;
}

/* The top-level commands in order, joined by spaces, up to (not
 * including) `stop` (NULL: all); *script_calls counts the calls made
 * inside scripts on the way. */
static void top_level(const seen *s, const char *stop, char *out, size_t size,
                      int *script_calls) {
  out[0] = '\0';
  *script_calls = 0;
  for (size_t i = 0; i < s->n; i++) {
    char cmd[32];
    command_of(s->line[i], cmd, sizeof cmd);
    if (in_script(s->line[i])) {
      ++*script_calls;
      continue;
    }
    if (stop != NULL && strcmp(cmd, stop) == 0)
      return;
    if (strcmp(cmd, "PUBSUB") == 0)
      continue; /* the test's own polling (PUBSUB NUMSUB) */
    size_t used = strlen(out);
    snprintf(out + used, size - used, "%s%s", used ? " " : "", cmd);
  }
}

/* Another owner holds `key`, as a Redisson client leaves it. */
static void hold_elsewhere(const char *key) {
  freeReplyObject(rt_cmd(srv, "HSET %s other-client:1 1", key));
  freeReplyObject(rt_cmd(srv, "PEXPIRE %s 60000", key));
}

/* ... and lets it go, as Redisson's unlock does. */
static void release_elsewhere(const char *key) {
  freeReplyObject(rt_cmd(srv, "DEL %s", key));
  freeReplyObject(rt_cmd(srv, "PUBLISH redisson_lock__channel:{%s} 0", key));
}

/* A client whose connection and scripts are warm, so a measured call is
 * the call alone. */
static rlock_client *warm_client(void) {
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *w = fx_lock(c, "calls:warm");
  OK(rlock_lock_try_acquire(w, 0, 10000));
  OK(rlock_lock_release(w));
  rlock_lock_free(w);
  return c;
}

static void test_refused_attempt(void **state) {
  (void)state;
  rlock_client *c = warm_client();
  rlock_lock *l = fx_lock(c, "calls:refused");
  hold_elsewhere("calls:refused");
  fx_monitor m;
  fx_monitor_start(&m, srv);
  RC(rlock_lock_try_acquire(l, 0, 10000), RLOCK_ELOCKED);
  seen s;
  monitor_collect(&m, "calls:refused", NULL, &s);
  char top[256];
  int inner;
  top_level(&s, NULL, top, sizeof top, &inner);
  print_message("refused attempt: %s + %d calls in the script\n", top, inner);
  assert_string_equal(top, "EVALSHA");
  assert_true(inner <= 2); /* Redisson's: 3 (EXISTS, HEXISTS, PTTL) */
  seen_free(&s);
  FX_FREE((l), (c));
}

/* Wait until the waiter has subscribed and attempted once more after its
 * subscription was confirmed (the second of its EVALSHA calls). */
static void wait_second_attempt(const char *key) {
  char channel[128];
  snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", key);
  fx_wait_subscribers(srv, channel, 1, "the waiter's subscription");
  fx_wait_evalsha(srv, 2, "the waiter's attempt once subscribed");
}

static void check_wait(const seen *s, const char *who) {
  char top[256];
  int inner;
  top_level(s, "DEL", top, sizeof top, &inner);
  print_message("%s before the unlock: %s + %d calls in scripts\n", who, top,
                inner);
  assert_string_equal(top, "EVALSHA SUBSCRIBE EVALSHA");
  assert_true(inner <= 4); /* two refused attempts */
}

static void test_library_wait(void **state) {
  (void)state;
  rlock_client *c = warm_client();
  rlock_lock *l = fx_lock(c, "calls:wait");
  hold_elsewhere("calls:wait");
  freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
  fx_monitor m;
  fx_monitor_start(&m, srv);
  fx_waiter w;
  fx_waiter_start(&w, l);
  wait_second_attempt("calls:wait");
  release_elsewhere("calls:wait");
  OK(fx_waiter_join(&w));
  seen s;
  monitor_collect(&m, "calls:wait", "redisson_lock__channel:{calls:wait}", &s);
  check_wait(&s, "library waiter");
  seen_free(&s);
  FX_FREE((l), (c));
}

/* A client whose subscription to the lock lingers (an hour here, so
 * that a slow build cannot see it end) and whose own releases have
 * published unlock messages since: its lingering subscription receives
 * them while nobody waits, and it reads such a quiet connection lazily.
 * Those messages are older than the next wait's attempt and must not wake
 * it: that wait is Redisson's without the SUBSCRIBE (two attempts, then
 * the one after the unlock), and only the real unlock wakes it. */
static void test_lingering_wait(void **state) {
  (void)state;
  rlock_config *cfg;
  rlock_client *c;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, rt_server_url(srv)));
  OK(rlock_config_set_subscription_linger(cfg, 3600000, 64));
  OK(rlock_client_new(&c, cfg));
  rlock_config_free(cfg);
  rlock_lock *l = fx_lock(c, "calls:linger");
  hold_elsewhere("calls:linger");
  freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
  fx_waiter w;
  fx_waiter_start(&w, l); /* subscribes; takes it and releases it */
  wait_second_attempt("calls:linger");
  release_elsewhere("calls:linger");
  OK(fx_waiter_join(&w));
  for (int i = 0; i < 3; i++) { /* three more unlocks of its own */
    OK(rlock_lock_try_acquire(l, 0, 10000));
    OK(rlock_lock_release(l));
  }
  rlock_stats before, after;
  OK(rlock_client_stats(c, &before, sizeof before));
  hold_elsewhere("calls:linger");
  freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
  fx_monitor m;
  fx_monitor_start(&m, srv);
  fx_waiter_start(&w, l);
  fx_wait_evalsha(srv, 2, "the lingering waiter's two attempts");
  release_elsewhere("calls:linger");
  OK(fx_waiter_join(&w));
  OK(rlock_client_stats(c, &after, sizeof after));
  seen s;
  monitor_collect(&m, "calls:linger", "redisson_lock__channel:{calls:linger}",
                  &s);
  char top[256];
  int inner;
  top_level(&s, "DEL", top, sizeof top, &inner);
  print_message("lingering waiter before the unlock: %s, %llu wake-ups\n", top,
                (unsigned long long)(after.wakeups - before.wakeups));
  assert_string_equal(top, "EVALSHA EVALSHA");
  assert_int_equal(after.wakeups - before.wakeups, 1);
  seen_free(&s);
  FX_FREE((l), (c));
}

static void test_cli_wait(void **state) {
  (void)state;
  const char *dir = getenv("RLOCK_TEST_BINDIR");
  char cli[1024];
  snprintf(cli, sizeof cli, "%s/rlock", dir ? dir : ".");
  if (access(cli, X_OK) != 0)
    fail_msg("no rlock binary at %s (set RLOCK_TEST_BINDIR)", cli);
  hold_elsewhere("calls:cli");
  freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
  fx_monitor m;
  fx_monitor_start(&m, srv);
  const char *args[] = {cli,    "-u",  rt_server_url(srv), "exec",
                        "-w",   "10s", "calls:cli",        "--",
                        "true", NULL};
  pid_t pid = fork();
  if (pid < 0)
    fail_msg("fork failed");
  if (pid == 0) {
    rt_forked_child();
    execv(cli, (char *const *)args);
    _exit(127);
  }
  wait_second_attempt("calls:cli");
  release_elsewhere("calls:cli");
  assert_int_equal(fx_wait_child(pid, 10000), 0);
  seen s;
  monitor_collect(&m, "calls:cli", "redisson_lock__channel:{calls:cli}", &s);
  check_wait(&s, "rlock exec");
  seen_free(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_refused_attempt),
                                     cmocka_unit_test(test_library_wait),
                                     cmocka_unit_test(test_lingering_wait),
                                     cmocka_unit_test(test_cli_wait)};
  return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
