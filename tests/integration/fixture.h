/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fixture.h - helpers shared by the integration tests: clients pointed at
 * a harness server, status assertions that print the library's message,
 * and small raw-Redis checks.
 */
#ifndef RLOCK_TEST_FIXTURE_H
#define RLOCK_TEST_FIXTURE_H

#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include "rt_select.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rlock.h"
#include "rt_server.h"
#include "rt_util.h"

/* Fail unless `expr` returns `code`; print the library's last message. */
static inline void fx_check(int rc, int code, const char *expr,
                            const char *file, int line) {
  if (rc != code)
    fail_msg("%s:%d: %s returned %d (%s: %s), expected %d", file, line, expr,
             rc, rlock_strerror(rc), rlock_error_last()->message, code);
}
#define RC(expr, code) fx_check((expr), (code), #expr, __FILE__, __LINE__)
#define OK(expr) RC(expr, RLOCK_OK)

/* Assert a value lies in [lo, hi]. */
#define ASSERT_RANGE(v, lo, hi)                                                \
  do {                                                                         \
    long long v_ = (long long)(v);                                             \
    if (v_ < (long long)(lo) || v_ > (long long)(hi))                          \
      fail_msg("%s = %lld, expected between %lld and %lld", #v, v_,            \
               (long long)(lo), (long long)(hi));                              \
  } while (0)

/* Assert an elapsed time in ms lies in [lo, hi]; the upper bound stretches
 * by $RLOCK_TEST_TIME_SCALE for instrumented builds, the lower never. */
#define ASSERT_BETWEEN(v, lo, hi) ASSERT_RANGE(v, lo, rt_scaled_ms(hi))

/* Fail the test unless `rc`, what `what` returned with the Nth allocation
 * failing, is RLOCK_OK or RLOCK_ENOMEM with a message; 1 for RLOCK_OK. */
static inline int fx_ok_or_nomem(int rc, const char *what, uint64_t n) {
  if (rc == RLOCK_OK)
    return 1;
  if (rc != RLOCK_ENOMEM)
    fail_msg("N=%llu: %s returned %d (%s), not RLOCK_OK or RLOCK_ENOMEM",
             (unsigned long long)n, what, rc, rlock_error_last()->message);
  if (rlock_error_last()->message[0] == '\0')
    fail_msg("N=%llu: %s: RLOCK_ENOMEM without a message",
             (unsigned long long)n, what);
  return 0;
}

/* The configuration the suites' clients start from (the caller frees
 * it): `url`, connect timeout 1 s, command timeout 2 s, the watchdog
 * timeout `watchdog` (0: the default) and the lost callback `lost` (NULL:
 * none). */
static inline rlock_config *fx_config(const char *url, int64_t watchdog,
                                      rlock_lost_fn lost, void *ud) {
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, url));
  OK(rlock_config_set_connect_timeout_ms(cfg, 1000));
  OK(rlock_config_set_command_timeout_ms(cfg, 2000));
  if (watchdog > 0)
    OK(rlock_config_set_watchdog_timeout_ms(cfg, watchdog));
  if (lost != NULL)
    OK(rlock_config_set_lost_callback(cfg, lost, ud));
  return cfg;
}

/* A blocking client of fx_config(url, watchdog, lost, ud). */
static inline rlock_client *fx_client_opts(const char *url, int64_t watchdog,
                                           rlock_lost_fn lost, void *ud) {
  rlock_config *cfg = fx_config(url, watchdog, lost, ud);
  rlock_client *c;
  OK(rlock_client_new(&c, cfg));
  rlock_config_free(cfg);
  return c;
}

static inline rlock_client *fx_client(rt_server *srv, int64_t watchdog) {
  return fx_client_opts(rt_server_url(srv), watchdog, NULL, NULL);
}

static inline rlock_lock *fx_lock(rlock_client *c, const char *name) {
  rlock_lock *l;
  OK(rlock_lock_new(&l, c, name));
  return l;
}

/* A client of `url` with the library's defaults, for a child process
 * (no cmocka there): its status. */
static inline int fx_child_client(rlock_client **c, const char *url) {
  rlock_config *cfg = NULL;
  int rc = rlock_config_new(&cfg);
  if (rc == RLOCK_OK)
    rc = rlock_config_set_url(cfg, url);
  if (rc == RLOCK_OK)
    rc = rlock_client_new(c, cfg);
  rlock_config_free(cfg);
  return rc;
}

/* A parenthesised list, e.g. (a, b), as a compound literal of `type`
 * pointers and its length. */
#define FX_UNPAREN(...) __VA_ARGS__
#define FX_LIST(type, items)                                                   \
  (type *[]){FX_UNPAREN items},                                                \
      sizeof((type *[]){FX_UNPAREN items}) / sizeof(type *)

/* The end of a case: free its `nl` locks, then its `nc` blocking clients. */
static inline void fx_free_all(rlock_lock *const *locks, size_t nl,
                               rlock_client *const *clients, size_t nc) {
  for (size_t i = 0; i < nl; i++)
    rlock_lock_free(locks[i]);
  for (size_t i = 0; i < nc; i++)
    rlock_client_free(clients[i]);
}

/* FX_FREE((l1, l2), (c1, c2)): fx_free_all of those locks and clients. */
#define FX_FREE(locks, clients)                                                \
  fx_free_all(FX_LIST(rlock_lock, locks), FX_LIST(rlock_client, clients))

/* The owner field this thread writes through client `c`. */
static inline void fx_owner(rlock_client *c, char *buf) {
  OK(rlock_client_owner(buf, RLOCK_OWNER_MAX, c));
}

/* Wait up to `ms` for EXISTS key to become `want`; returns elapsed ms or
 * fails the test. */
static inline int64_t fx_wait_exists(rt_server *s, const char *key, int want,
                                     int64_t ms) {
  int64_t t0 = rt_now_ms();
  while (rt_cmd_int(s, "EXISTS %s", key) != want) {
    if (rt_now_ms() - t0 > ms)
      fail_msg("key '%s' still %s after %lld ms", key,
               want ? "absent" : "present", (long long)ms);
    rt_sleep_ms(10);
  }
  return rt_now_ms() - t0;
}

/* HGET key field as an integer; -1 when the field is absent. */
static inline long long fx_hget(rt_server *s, const char *key,
                                const char *field) {
  redisReply *r = rt_cmd(s, "HGET %s %s", key, field);
  long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
  freeReplyObject(r);
  return v;
}

/* The server most suites share: started once per test binary. */
static rt_server *srv;

static inline int fx_setup(void **state) {
  (void)state;
  srv = rt_server_start(NULL);
  return 0;
}

static inline int fx_teardown(void **state) {
  (void)state;
  rt_server_free(srv);
  return 0;
}

/* The same for a file whose groups DK_RUN runs (drivers.h): srv started
 * (nonzero when it cannot be), and stopped. */
static inline int fx_srv_start(void) {
  srv = rt_server_start(NULL);
  return srv == NULL;
}

static inline void fx_srv_stop(void) {
  rt_server_free(srv);
  srv = NULL;
}

/* How many calls of command `cmd` (as INFO commandstats names it, e.g.
 * "evalsha", "script|load") `s` has served since its last CONFIG
 * RESETSTAT; 0 when none. */
static inline long long fx_calls(rt_server *s, const char *cmd) {
  redisReply *r = rt_cmd(s, "INFO commandstats");
  char key[64];
  snprintf(key, sizeof key, "cmdstat_%s:calls=", cmd);
  const char *p = strstr(r->str, key);
  long long n = p ? atoll(p + strlen(key)) : 0;
  freeReplyObject(r);
  return n;
}

static inline long long fx_evalsha_calls(rt_server *s) {
  return fx_calls(s, "evalsha");
}

/* Connections `s` has taken so far. The PING first: the server takes what
 * waits in its listen queue (connections made while it was stopped or
 * frozen) no later than in the turn that reads the PING, so the INFO
 * after it counts them all. */
static inline long long fx_connections_taken(rt_server *s) {
  freeReplyObject(rt_cmd(s, "PING"));
  char v[32];
  assert_true(rt_server_info_field(s, "stats", "total_connections_received", v,
                                   sizeof v));
  return atoll(v);
}

/* ---- waiting for conditions, not for time ------------------------------
 * A test that needs another thread or process to have got somewhere waits
 * for what shows it (a subscription, a key, a file, a call count, a flag),
 * up to a scaled deadline. A fixed sleep is too short on a loaded machine
 * or under valgrind, and wasted time everywhere else; one is left only
 * where the passage of time is itself the behaviour under test (a lease
 * that must run out, renewals that must keep a lock past its lease, a
 * wake-up that must not come), with a comment saying so. */

/* How many clients listen on `channel` at `s`: PUBSUB NUMSUB (SUBSCRIBE),
 * or with `sharded` PUBSUB SHARDNUMSUB (SSUBSCRIBE). */
static inline long long fx_subscribers_of(rt_server *s, int sharded,
                                          const char *channel) {
  const char *kind = sharded ? "SHARDNUMSUB" : "NUMSUB";
  redisReply *r = rt_cmd(s, "PUBSUB %s %s", kind, channel);
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      r->element[1]->type != REDIS_REPLY_INTEGER)
    fail_msg("PUBSUB %s %s on port %d: unexpected reply (type %d)", kind,
             channel, rt_server_port(s), r->type);
  long long n = r->element[1]->integer;
  freeReplyObject(r);
  return n;
}

static inline long long fx_subscribers(rt_server *s, const char *channel) {
  return fx_subscribers_of(s, 0, channel);
}

typedef struct fx_count_want {
  rt_server *s;
  const char *channel; /* NULL: count EVALSHA calls */
  long long n;
} fx_count_want;

static inline bool fx_pred_subscribers(void *arg, char *why, size_t cap) {
  const fx_count_want *w = arg;
  long long n = fx_subscribers(w->s, w->channel);
  snprintf(why, cap, "%lld subscribers of %s, want %lld", n, w->channel, w->n);
  return n == w->n;
}

/* Wait until `channel` at `s` has exactly `n` subscribers: 1 once a waiter
 * listens for the release (from then on a release reaches it: it tries
 * again only after the server confirmed the subscription), 0 once the last
 * one has left. Fails the test naming `what` after 5 s (scaled). */
static inline void fx_wait_subscribers(rt_server *s, const char *channel,
                                       long long n, const char *what) {
  fx_count_want w = {s, channel, n};
  rt_wait_until(fx_pred_subscribers, &w, rt_scaled_ms(5000), what);
}

/* Wait until the head of fair lock `name`'s queue (a plain name, without
 * braces) listens on its own channel, redisson_lock__channel:{name}:<its
 * owner>: it is then waiting, and a release from now on reaches it. */
static inline void fx_wait_fair_head_subscribed(rt_server *s,
                                                const char *name) {
  char channel[512];
  redisReply *r = rt_cmd(s, "LINDEX redisson_lock_queue:{%s} 0", name);
  if (r->type != REDIS_REPLY_STRING)
    fail_msg("the queue of fair lock '%s' is empty", name);
  snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}:%s", name,
           r->str);
  freeReplyObject(r);
  fx_wait_subscribers(s, channel, 1, "the fair queue head's subscription");
}

static inline bool fx_pred_evalsha(void *arg, char *why, size_t cap) {
  const fx_count_want *w = arg;
  long long n = fx_evalsha_calls(w->s);
  snprintf(why, cap, "%lld EVALSHA calls since CONFIG RESETSTAT, want %lld", n,
           w->n);
  return n >= w->n;
}

/* Wait until `s` has served at least `n` EVALSHA calls since its last
 * CONFIG RESETSTAT: attempts, renewals. A waiter makes one attempt before
 * it subscribes and one once subscribed, then sleeps: 2 per waiter since
 * the holder took the lock means every waiter is asleep. Fails the test
 * naming `what` after 5 s (scaled). */
static inline void fx_wait_evalsha(rt_server *s, long long n,
                                   const char *what) {
  fx_count_want w = {s, NULL, n};
  rt_wait_until(fx_pred_evalsha, &w, rt_scaled_ms(5000), what);
}

/* MONITOR on a server: when (server clock) each command of interest ran,
 * for counting and spacing attempts without timing them on the client. */
typedef struct fx_monitor {
  redisContext *c;
} fx_monitor;

static inline void fx_monitor_start(fx_monitor *m, rt_server *s) {
  m->c = rt_server_connect(s);
  struct timeval tv = {10, 0}; /* a missing line fails, never hangs */
  redisSetTimeout(m->c, tv);
  redisReply *r = redisCommand(m->c, "MONITOR");
  if (r == NULL || r->type != REDIS_REPLY_STATUS)
    fail_msg("MONITOR refused");
  freeReplyObject(r);
}

/* End the monitor: mark the end (ECHO through `s`), read every line up to
 * it, and keep the times (µs, server clock) of those that quote the
 * command `cmd` or `cmd2` (NULL: none) and `word` (e.g. a key). Returns
 * how many, at most `cap`. */
static inline size_t fx_monitor_end(fx_monitor *m, rt_server *s,
                                    const char *cmd, const char *cmd2,
                                    const char *word, int64_t *us, size_t cap) {
  freeReplyObject(rt_cmd(s, "ECHO fx-monitor-end"));
  char qc[64], qc2[64], qw[256];
  snprintf(qc, sizeof qc, "\"%s\"", cmd);
  snprintf(qc2, sizeof qc2, "\"%s\"", cmd2 ? cmd2 : "");
  snprintf(qw, sizeof qw, "\"%s\"", word);
  size_t n = 0;
  for (;;) {
    redisReply *r = NULL;
    if (redisGetReply(m->c, (void **)&r) != REDIS_OK || r == NULL)
      fail_msg("MONITOR: the end marker did not come: %s", m->c->errstr);
    int end = strstr(r->str, "\"fx-monitor-end\"") != NULL;
    if (!end && strstr(r->str, qw) != NULL &&
        (strstr(r->str, qc) != NULL || (cmd2 && strstr(r->str, qc2)))) {
      if (n == cap)
        fail_msg("MONITOR: more than %zu lines match", cap);
      char *dot;
      long long sec = strtoll(r->str, &dot, 10);
      us[n++] = sec * 1000000 + strtoll(dot + 1, NULL, 10);
    }
    freeReplyObject(r);
    if (end)
      break;
  }
  redisFree(m->c);
  m->c = NULL;
  return n;
}

static inline bool fx_pred_file(void *arg, char *why, size_t cap) {
  snprintf(why, cap, "no file %s", (const char *)arg);
  return access((const char *)arg, F_OK) == 0;
}

/* Wait up to `ms` (scaled by the caller as needed) for a file another
 * process creates, e.g. the mark a COMMAND leaves once it runs. */
static inline void fx_wait_file(const char *path, int64_t ms) {
  rt_wait_until(fx_pred_file, (void *)path, ms, "a file to appear");
}

/* Create `path` (empty): e.g. the "go" file a COMMAND waits for, so that it
 * runs exactly as long as the test needs. */
static inline void fx_touch(const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL)
    fail_msg("cannot create %s: %s", path, strerror(errno));
  fclose(f);
}

/* In a worker thread: wait until the test sets *gate (NULL: not at all), so
 * that the worker holds a lock as long as the test needs, not for a fixed
 * time the test might overrun. Gives up after a minute (scaled), so that a
 * test that failed meanwhile does not leave the thread behind for ever. */
static inline void fx_wait_gate(atomic_int *gate) {
  int64_t give_up = rt_now_ms() + rt_scaled_ms(60000);
  while (gate != NULL && atomic_load(gate) == 0 && rt_now_ms() < give_up)
    rt_sleep_ms(1);
}

/* Child processes re-execute the test binary (saved from argv[0] by
 * fx_main) with "--child ROLE ARGS...", so they start as fresh single-
 * threaded processes: forking a multi-threaded test and creating threads
 * in the child is unsupported under ThreadSanitizer. */
static const char *fx_argv0;

/* Start `argv0 --child args...`; when `out_fd` is not NULL the child's
 * stdout is a pipe whose read end is returned there. */
static inline pid_t fx_spawn_child(const char *const *args, int *out_fd) {
  int fds[2] = {-1, -1};
  if (out_fd != NULL && pipe(fds) != 0)
    fail_msg("pipe failed");
  pid_t pid = fork();
  if (pid < 0)
    fail_msg("fork failed");
  if (pid == 0) {
    rt_forked_child();
    const char *argv[16] = {fx_argv0, "--child"};
    int n = 2;
    for (int i = 0; args[i] != NULL && n < 15; i++)
      argv[n++] = args[i];
    argv[n] = NULL;
    if (out_fd != NULL) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
    }
    execv(fx_argv0, (char *const *)argv);
    _exit(127);
  }
  if (out_fd != NULL) {
    close(fds[1]);
    *out_fd = fds[0];
  }
  return pid;
}

/* Read one line (without its '\n') from `fd`, a child's stdout pipe,
 * waiting at most `ms` in all. Fails the test on timeout, EOF or an
 * overlong line. Reads byte by byte, so nothing after the line is taken. */
static inline void fx_read_line(int fd, char *buf, size_t size, int64_t ms) {
  int64_t deadline = rt_now_ms() + ms;
  size_t n = 0;
  for (;;) {
    int64_t left = deadline - rt_now_ms();
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (left <= 0 || poll(&p, 1, (int)left) == 0)
      fail_msg("no line from the child within %lld ms (got '%.*s')",
               (long long)ms, (int)n, buf);
    char ch;
    ssize_t got = read(fd, &ch, 1);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      fail_msg("the child closed its output before a full line ('%.*s')",
               (int)n, buf);
    if (ch == '\n')
      break;
    if (n + 1 >= size)
      fail_msg("a line from the child is longer than %zu bytes", size);
    buf[n++] = ch;
  }
  buf[n] = '\0';
}

/* Wait at most `ms` for child `pid` to exit and return its exit status
 * (128 + signal when killed). On timeout the child is SIGKILLed by pid,
 * reaped, and the test fails. */
static inline int fx_wait_child(pid_t pid, int64_t ms) {
  int64_t deadline = rt_now_ms() + ms;
  int status;
  for (;;) {
    pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid)
      break;
    if (got < 0 && errno != EINTR)
      fail_msg("waitpid(%d) failed", (int)pid);
    if (rt_now_ms() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      fail_msg("child %d still running after %lld ms: killed", (int)pid,
               (long long)ms);
    }
    rt_sleep_ms(5);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Run the tests, or the child role when started by fx_spawn_child.
 * $RLOCK_TEST_FILTER and $RLOCK_TEST_SKIP choose the cases (rt_select.h),
 * e.g. RLOCK_TEST_FILTER='test_wake_*'. */
#define FX_MAIN(tests, setup, teardown, child_fn)                              \
  int main(int argc, char **argv) {                                            \
    fx_argv0 = argv[0];                                                        \
    if (argc > 2 && strcmp(argv[1], "--child") == 0)                           \
      return child_fn(argc - 2, argv + 2);                                     \
    return RT_RUN_GROUP(#tests, tests, setup, teardown);                       \
  }

/* A path in the shared server's temporary directory (removed with the
 * server). */
static inline const char *fx_tmp_path(char *buf, size_t size,
                                      const char *file) {
  snprintf(buf, size, "%s/%s", rt_server_dir(srv), file);
  return buf;
}

/* The whole file, NUL-terminated, in a static buffer ("" if absent). */
static inline const char *fx_slurp(const char *path) {
  static char buf[8192];
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (f != NULL) {
    buf[fread(buf, 1, sizeof buf - 1, f)] = '\0';
    fclose(f);
  }
  return buf;
}

/* A thread that takes a lock (waiting as long as it takes) and gives it
 * back: fx_waiter_start(), then join it and read rc. */
typedef struct fx_waiter {
  rlock_lock *l;
  int rc;
  pthread_t thread;
} fx_waiter;

static inline void *fx_waiter_main(void *arg) {
  fx_waiter *w = (fx_waiter *)arg;
  w->rc = rlock_lock_acquire(w->l);
  if (w->rc == RLOCK_OK)
    w->rc = rlock_lock_release(w->l);
  return NULL;
}

static inline void fx_waiter_start(fx_waiter *w, rlock_lock *l) {
  w->l = l;
  w->rc = -100;
  if (pthread_create(&w->thread, NULL, fx_waiter_main, w) != 0)
    fail_msg("cannot start a thread");
}

/* Join the waiter; its status. */
static inline int fx_waiter_join(fx_waiter *w) {
  pthread_join(w->thread, NULL);
  return w->rc;
}

#endif /* RLOCK_TEST_FIXTURE_H */
