/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_harness.c - self-test of tests/support/rt_server: real redis-server
 * processes, their lifecycle, and the process hygiene (no server outlives
 * the test process, however it ends).
 *
 * The hygiene tests run this binary again as a helper process
 * ("--rt-helper=MODE", see helper_main()) that starts a server and is then
 * killed or exits; this process makes itself a child subreaper so that an
 * orphaned server is re-parented to it and its fate can be observed exactly.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "rt_server.h"
#include "rt_util.h"

static char g_self_exe[PATH_MAX];

/* ------------------------------------------------------------------------ */
/* Small assertions                                                         */
/* ------------------------------------------------------------------------ */

static bool process_exists(pid_t pid) {
  return kill(pid, 0) == 0 || errno != ESRCH;
}

static void assert_process_gone(pid_t pid) {
  assert_int_equal(kill(pid, 0), -1);
  assert_int_equal(errno, ESRCH);
}

static bool path_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static void assert_reply_status(redisReply *r, const char *want) {
  assert_non_null(r);
  assert_int_equal(r->type, REDIS_REPLY_STATUS);
  assert_string_equal(r->str, want);
  freeReplyObject(r);
}

static void assert_reply_string(redisReply *r, const char *want) {
  assert_non_null(r);
  assert_int_equal(r->type, REDIS_REPLY_STRING);
  assert_string_equal(r->str, want);
  freeReplyObject(r);
}

static void assert_reply_nil(redisReply *r) {
  assert_non_null(r);
  assert_int_equal(r->type, REDIS_REPLY_NIL);
  freeReplyObject(r);
}

/* The error reply starts with `prefix`. */
static void assert_reply_error(redisReply *r, const char *prefix) {
  assert_non_null(r);
  assert_int_equal(r->type, REDIS_REPLY_ERROR);
  assert_memory_equal(r->str, prefix, strlen(prefix));
  freeReplyObject(r);
}

/* CONFIG GET name, which must have one value: compared with want. */
static void assert_config(rt_server *s, const char *name, const char *want) {
  redisReply *r = rt_cmd(s, "CONFIG GET %s", name);
  assert_int_equal(r->type, REDIS_REPLY_ARRAY);
  assert_int_equal(r->elements, 2);
  assert_string_equal(r->element[1]->str, want);
  freeReplyObject(r);
}

static bool tcp_port_accepts(int port) {
  redisContext *c =
      redisConnectWithTimeout("127.0.0.1", port, (struct timeval){1, 0});
  bool ok = c && !c->err;
  redisFree(c);
  return ok;
}

/* ------------------------------------------------------------------------ */
/* rt_util                                                                  */
/* ------------------------------------------------------------------------ */

static void test_free_ports_are_distinct(void **state) {
  (void)state;
  int ports[64];
  for (int i = 0; i < 64; i++) {
    ports[i] = rt_free_port();
    assert_true(ports[i] > 0 && ports[i] < 65536);
    for (int j = 0; j < i; j++)
      assert_int_not_equal(ports[i], ports[j]);
  }
}

static void test_clock_and_sleep(void **state) {
  (void)state;
  int64_t t0 = rt_now_ms(), u0 = rt_now_us();
  rt_sleep_ms(50);
  assert_in_range(rt_now_ms() - t0, 50, rt_scaled_ms(1000));
  assert_in_range(rt_now_us() - u0, 50000, rt_scaled_ms(1000) * 1000);
}

/* ------------------------------------------------------------------------ */
/* One server                                                               */
/* ------------------------------------------------------------------------ */

static void test_set_get(void **state) {
  (void)state;
  rt_server *s = rt_server_start(NULL);
  pid_t pid = rt_server_pid(s);
  assert_true(pid > 0);
  assert_true(process_exists(pid));
  assert_int_equal(getpgid(pid), pid); /* out of reach of kill(0, sig) */

  char url[64];
  snprintf(url, sizeof url, "redis://127.0.0.1:%d", rt_server_port(s));
  assert_string_equal(rt_server_url(s), url);

  assert_reply_status(rt_cmd(s, "SET %s %s", "key", "value"), "OK");
  assert_reply_string(rt_cmd(s, "GET key"), "value");
  assert_int_equal(rt_cmd_int(s, "INCR counter"), 1);
  assert_int_equal(rt_cmd_int(s, "INCR counter"), 2);
  assert_reply_error(rt_cmd(s, "INCR key"), "ERR");

  /* Persistence off, loopback only. */
  assert_config(s, "save", "");
  assert_config(s, "appendonly", "no");
  assert_config(s, "bind", "127.0.0.1");

  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", rt_server_dir(s));
  assert_true(path_exists(dir));
  rt_server_free(s);
  assert_process_gone(pid);
  assert_false(path_exists(dir));
}

static void test_unix_socket(void **state) {
  (void)state;
  rt_server *s = rt_server_start(NULL);
  struct stat st;
  assert_int_equal(stat(rt_server_unix_path(s), &st), 0);
  assert_true(S_ISSOCK(st.st_mode));

  redisContext *c = redisConnectUnix(rt_server_unix_path(s));
  assert_non_null(c);
  assert_int_equal(c->err, 0);
  assert_reply_status(redisCommand(c, "SET via unix"), "OK");
  redisFree(c);
  assert_reply_string(rt_cmd(s, "GET via"), "unix");
  rt_server_free(s);
}

static void test_restart_loses_data_keeps_port(void **state) {
  (void)state;
  rt_server *s = rt_server_start(NULL);
  int port = rt_server_port(s);
  pid_t old_pid = rt_server_pid(s);
  assert_reply_status(rt_cmd(s, "SET key value"), "OK");

  rt_server_restart(s);
  assert_int_equal(rt_server_port(s), port);
  assert_true(rt_server_pid(s) > 0);
  assert_int_not_equal(rt_server_pid(s), old_pid);
  assert_process_gone(old_pid);
  /* rt_cmd's cached connection went away with the old process. */
  assert_reply_nil(rt_cmd(s, "GET key"));

  redisContext *c = rt_server_connect(s);
  assert_reply_status(redisCommand(c, "PING"), "PONG");
  redisFree(c);
  rt_server_free(s);
}

static void test_stop_and_kill(void **state) {
  (void)state;
  rt_server *s = rt_server_start(NULL);
  int port = rt_server_port(s);
  pid_t pid = rt_server_pid(s);

  rt_server_stop(s);
  assert_int_equal(rt_server_pid(s), 0);
  assert_process_gone(pid);
  assert_false(tcp_port_accepts(port));
  rt_server_stop(s); /* idempotent */
  rt_server_kill(s);

  rt_server_start_again(s);
  assert_int_equal(rt_server_port(s), port);
  pid = rt_server_pid(s);
  assert_true(pid > 0);
  assert_reply_status(rt_cmd(s, "PING"), "PONG");

  rt_server_kill(s); /* a crash */
  assert_int_equal(rt_server_pid(s), 0);
  assert_process_gone(pid);
  assert_false(tcp_port_accepts(port));
  rt_server_kill(s); /* idempotent */

  rt_server_start_again(s);
  assert_reply_status(rt_cmd(s, "PING"), "PONG");
  rt_server_free(s);
  rt_server_free(NULL);
}

static void test_freeze_and_thaw(void **state) {
  (void)state;
  rt_server *s = rt_server_start(NULL);
  assert_reply_status(rt_cmd(s, "SET key value"), "OK");
  redisContext *c = rt_server_connect(s);
  assert_int_equal(redisSetTimeout(c, (struct timeval){0, 300000}), REDIS_OK);

  rt_server_freeze(s);
  assert_null(redisCommand(c, "PING")); /* times out */
  assert_int_equal(c->err, REDIS_ERR_IO);
  redisFree(c);

  rt_server_thaw(s);
  assert_reply_string(rt_cmd(s, "GET key"), "value");

  /* Stopping a frozen server does not wait for the SIGKILL fallback. */
  rt_server_freeze(s);
  int64_t t0 = rt_now_ms();
  rt_server_stop(s);
  assert_true(rt_now_ms() - t0 < rt_scaled_ms(3000));
  rt_server_free(s);
}

static void test_two_servers(void **state) {
  (void)state;
  rt_server *a = rt_server_start(NULL);
  rt_server *b = rt_server_start(NULL);
  assert_int_not_equal(rt_server_port(a), rt_server_port(b));
  assert_int_not_equal(rt_server_pid(a), rt_server_pid(b));
  assert_string_not_equal(rt_server_dir(a), rt_server_dir(b));

  assert_reply_status(rt_cmd(a, "SET only-in a"), "OK");
  assert_reply_nil(rt_cmd(b, "GET only-in"));
  assert_int_equal(rt_cmd_int(b, "DBSIZE"), 0);
  assert_int_equal(rt_cmd_int(a, "DBSIZE"), 1);

  /* Stopping one leaves the other alone. */
  rt_server_stop(a);
  assert_reply_status(rt_cmd(b, "PING"), "PONG");
  rt_server_free(a);
  rt_server_free(b);
}

static void test_requirepass(void **state) {
  (void)state;
  rt_server *s =
      rt_server_start((const char *const[]){"--requirepass", "secret", NULL});

  redisContext *c = rt_server_connect(s);
  assert_reply_error(redisCommand(c, "PING"), "NOAUTH");
  assert_reply_error(redisCommand(c, "AUTH %s", "wrong"), "WRONGPASS");
  assert_reply_status(redisCommand(c, "AUTH %s", "secret"), "OK");
  assert_reply_status(redisCommand(c, "PING"), "PONG");
  redisFree(c);

  /* rt_cmd authenticates by itself, also after a restart. */
  assert_reply_status(rt_cmd(s, "SET a 1"), "OK");
  rt_server_restart(s);
  assert_reply_nil(rt_cmd(s, "GET a"));
  rt_server_free(s);
}

static void test_cmd_survives_client_kill(void **state) {
  (void)state;
  rt_server *s = rt_server_start(NULL);
  assert_reply_status(rt_cmd(s, "PING"), "PONG");

  /* Kill every other client, rt_cmd's cached connection included. */
  redisContext *c = rt_server_connect(s);
  redisReply *r = redisCommand(c, "CLIENT KILL TYPE normal");
  assert_non_null(r);
  assert_int_equal(r->type, REDIS_REPLY_INTEGER);
  assert_true(r->integer >= 1);
  freeReplyObject(r);
  redisFree(c);

  assert_reply_status(rt_cmd(s, "PING"), "PONG");
  rt_server_free(s);
}

/* ------------------------------------------------------------------------ */
/* Threads                                                                  */
/* ------------------------------------------------------------------------ */

enum { N_THREADS = 4, N_INCR = 250 };

static void *incr_many(void *arg) {
  rt_server *s = arg;
  for (int i = 0; i < N_INCR; i++)
    freeReplyObject(rt_cmd(s, "INCR shared"));
  return NULL;
}

static void test_cmd_from_threads(void **state) {
  (void)state;
  rt_server *s = rt_server_start(NULL);
  pthread_t t[N_THREADS];
  for (int i = 0; i < N_THREADS; i++)
    assert_int_equal(pthread_create(&t[i], NULL, incr_many, s), 0);
  for (int i = 0; i < N_THREADS; i++)
    pthread_join(t[i], NULL);
  assert_reply_string(rt_cmd(s, "GET shared"), "1000");
  rt_server_free(s);
}

static void *start_server(void *arg) {
  *(rt_server **)arg = rt_server_start(NULL);
  return NULL;
}

/* PR_SET_PDEATHSIG is tied to the forking thread: a server started from a
   thread that has since exited must still be alive. */
static void test_server_outlives_starting_thread(void **state) {
  (void)state;
  rt_server *s = NULL;
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, start_server, &s), 0);
  pthread_join(t, NULL);
  assert_non_null(s);
  /* Time is the point: a death signal sent at the thread's exit would
     have killed the server by now; nothing shows that it was not sent. */
  rt_sleep_ms(200);
  assert_true(process_exists(rt_server_pid(s)));
  assert_reply_status(rt_cmd(s, "PING"), "PONG");
  rt_server_free(s);
}

/* ------------------------------------------------------------------------ */
/* Forked children                                                          */
/* ------------------------------------------------------------------------ */

/* Fork; the child runs fn (no cmocka asserts in there: a failure would
   longjmp into the child's copy of the test runner) and exits with its
   result through exit(), i.e. running the atexit handlers. Returns the
   child's wait status. */
static int run_in_child(int (*fn)(rt_server *), rt_server *s) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0)
    exit(fn(s));
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return status;
}

/* Exits through exit() on purpose, to show that the parent's atexit cleanup
   does nothing in the child. (Under ASan, LeakSanitizer then notes "Running
   thread ... was not suspended": the parent's threads are not in the child.) */
static int child_uses_server_then_exits(rt_server *s) {
  rt_forked_child();
  redisReply *r = rt_cmd(s, "SET from-child 1");
  int ok = r && r->type == REDIS_REPLY_STATUS;
  freeReplyObject(r);
  /* Frees the child's copy only (and its connection): valgrind checks the
     child for leaks too. */
  rt_server_free(s);
  return ok ? 0 : 1;
}

static int child_forgets_and_dies_by_sigterm(rt_server *s) {
  (void)s;
  /* No rt_forked_child(): the registry check must protect the parent. */
  raise(SIGTERM);
  return 2;
}

static void test_forked_child(void **state) {
  (void)state;
  rt_server *s = rt_server_start(NULL);
  pid_t pid = rt_server_pid(s);
  assert_reply_status(rt_cmd(s, "PING"),
                      "PONG"); /* a cached connection to inherit */

  int status = run_in_child(child_uses_server_then_exits, s);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);

  status = run_in_child(child_forgets_and_dies_by_sigterm, s);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGTERM);

  assert_int_equal(rt_server_pid(s), pid);
  assert_true(process_exists(pid));
  assert_true(path_exists(rt_server_dir(s)));
  assert_reply_string(rt_cmd(s, "GET from-child"), "1");
  rt_server_free(s);
}

/* ------------------------------------------------------------------------ */
/* Hygiene, via a helper process                                            */
/* ------------------------------------------------------------------------ */

static rt_server *g_helper_server; /* a global, so it stays reachable */

/* MODE: "hold" - start a server, print "PID DIR", wait to be killed;
   "exit" - the same, then return without freeing it (atexit must clean);
   "badargs" - start a server with an unknown option (must fail). */
static int helper_main(const char *mode) {
  if (strcmp(mode, "badargs") == 0) {
    rt_server_start((const char *const[]){"--no-such-directive", "1", NULL});
    return 0; /* not reached: the failed start exits */
  }
  g_helper_server = rt_server_start(NULL);
  printf("%d %s\n", (int)rt_server_pid(g_helper_server),
         rt_server_dir(g_helper_server));
  fflush(stdout);
  if (strcmp(mode, "exit") == 0)
    return 0;
  for (;;)
    pause();
}

struct helper {
  pid_t pid;
  int out_fd; /* the helper's stdout */
  int err_fd; /* its stderr, or -1 when it shares ours */
  pid_t server_pid;
  char server_dir[PATH_MAX];
};

static void helper_spawn(struct helper *h, const char *mode,
                         bool capture_stderr) {
  int out[2], err[2] = {-1, -1};
  char arg[64];
  snprintf(arg, sizeof arg, "--rt-helper=%s", mode);
  assert_int_equal(pipe(out), 0);
  if (capture_stderr)
    assert_int_equal(pipe(err), 0);
  fflush(NULL);
  h->pid = fork();
  assert_true(h->pid >= 0);
  if (h->pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    if (capture_stderr)
      dup2(err[1], STDERR_FILENO);
    execl(g_self_exe, g_self_exe, arg, (char *)NULL);
    _exit(127);
  }
  close(out[1]);
  h->out_fd = out[0];
  h->err_fd = err[0];
  if (capture_stderr)
    close(err[1]);
}

/* Read fd to EOF (or until timeout_ms), NUL-terminated, into buf. */
static void read_all(int fd, char *buf, size_t cap, int timeout_ms) {
  size_t len = 0;
  int64_t deadline = rt_now_ms() + timeout_ms;
  while (len + 1 < cap) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int left = (int)(deadline - rt_now_ms());
    if (left <= 0 || poll(&p, 1, left) <= 0)
      break;
    ssize_t n = read(fd, buf + len, cap - 1 - len);
    if (n <= 0)
      break;
    len += (size_t)n;
  }
  buf[len] = '\0';
}

/* Read the helper's "PID DIR" line. */
static void helper_read_server(struct helper *h) {
  char line[PATH_MAX + 32];
  size_t len = 0;
  int64_t deadline = rt_now_ms() + 20000;
  while (len + 1 < sizeof line && !memchr(line, '\n', len)) {
    struct pollfd p = {.fd = h->out_fd, .events = POLLIN};
    int left = (int)(deadline - rt_now_ms());
    assert_true(left > 0 && poll(&p, 1, left) == 1);
    ssize_t n = read(h->out_fd, line + len, sizeof line - 1 - len);
    assert_true(n > 0);
    len += (size_t)n;
  }
  line[len] = '\0';
  int pid;
  assert_int_equal(sscanf(line, "%d %4095s", &pid, h->server_dir), 2);
  h->server_pid = pid;
  assert_true(pid > 0);
}

static int helper_wait(struct helper *h) {
  int status;
  assert_int_equal(waitpid(h->pid, &status, 0), h->pid);
  close(h->out_fd);
  if (h->err_fd >= 0)
    close(h->err_fd);
  return status;
}

/* Wait for a server that was re-parented to us (we are a subreaper). */
static int reap_orphan(pid_t pid) {
  int status;
  int64_t deadline = rt_now_ms() + 10000;
  pid_t r;
  while ((r = waitpid(pid, &status, WNOHANG)) == 0 && rt_now_ms() < deadline)
    rt_sleep_ms(10);
  assert_int_equal(r, pid);
  return status;
}

static int remove_entry(const char *path, const struct stat *st, int type,
                        struct FTW *ftw) {
  (void)st;
  (void)type;
  (void)ftw;
  return remove(path);
}

static void test_sigkilled_process_takes_its_server(void **state) {
  (void)state;
  struct helper h;
  helper_spawn(&h, "hold", false);
  helper_read_server(&h);
  assert_true(process_exists(h.server_pid));

  kill(h.pid, SIGKILL);
  int status = helper_wait(&h);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGKILL);

  /* PR_SET_PDEATHSIG: the server got SIGKILL the moment the helper died. */
  status = reap_orphan(h.server_pid);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGKILL);

  /* Nothing in a SIGKILLed process can remove its directory. */
  assert_true(path_exists(h.server_dir));
  assert_int_equal(nftw(h.server_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS),
                   0);
}

static void test_sigterm_cleans_up(void **state) {
  (void)state;
  struct helper h;
  helper_spawn(&h, "hold", false);
  helper_read_server(&h);

  kill(h.pid, SIGTERM);
  int status = helper_wait(&h);
  /* The handler cleaned up and re-raised SIGTERM with the default action. */
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGTERM);
  /* The helper killed and reaped its server before dying. */
  assert_process_gone(h.server_pid);
  assert_false(path_exists(h.server_dir));
}

static void test_exit_cleans_up(void **state) {
  (void)state;
  struct helper h;
  helper_spawn(&h, "exit", false);
  helper_read_server(&h);
  int status = helper_wait(&h);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_process_gone(h.server_pid);
  assert_false(path_exists(h.server_dir));
}

static void test_failed_start_reports_log(void **state) {
  (void)state;
  struct helper h;
  char err[16384];
  helper_spawn(&h, "badargs", true);
  read_all(h.err_fd, err, sizeof err, 20000);
  int status = helper_wait(&h);
  assert_true(WIFEXITED(status));
  assert_int_not_equal(WEXITSTATUS(status), 0);
  /* The log tail shows redis-server's own complaint. */
  if (!strstr(err, "tail of") || !strstr(err, "no-such-directive"))
    fail_msg("unexpected helper stderr:\n%s", err);
}

/* ------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  if (argc == 2 && strncmp(argv[1], "--rt-helper=", 12) == 0)
    return helper_main(argv[1] + 12);

  ssize_t n = readlink("/proc/self/exe", g_self_exe, sizeof g_self_exe - 1);
  if (n <= 0) {
    fprintf(stderr, "readlink(/proc/self/exe) failed\n");
    return 1;
  }
  g_self_exe[n] = '\0';
  /* Orphaned servers of helper processes are re-parented to us. */
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    perror("PR_SET_CHILD_SUBREAPER");
    return 1;
  }

  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_free_ports_are_distinct),
      cmocka_unit_test(test_clock_and_sleep),
      cmocka_unit_test(test_set_get),
      cmocka_unit_test(test_unix_socket),
      cmocka_unit_test(test_restart_loses_data_keeps_port),
      cmocka_unit_test(test_stop_and_kill),
      cmocka_unit_test(test_freeze_and_thaw),
      cmocka_unit_test(test_two_servers),
      cmocka_unit_test(test_requirepass),
      cmocka_unit_test(test_cmd_survives_client_kill),
      cmocka_unit_test(test_cmd_from_threads),
      cmocka_unit_test(test_server_outlives_starting_thread),
      cmocka_unit_test(test_forked_child),
      cmocka_unit_test(test_sigkilled_process_takes_its_server),
      cmocka_unit_test(test_sigterm_cleans_up),
      cmocka_unit_test(test_exit_cleans_up),
      cmocka_unit_test(test_failed_start_reports_log),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
