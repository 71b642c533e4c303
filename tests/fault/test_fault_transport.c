/* SPDX-License-Identifier: BSD-3-Clause */
/* Transport faults played by the scripted fake server: a reply that
 * trickles in a byte at a time, replies that announce gigabytes, and host
 * names that do not resolve. The command timeout must bound a whole round
 * trip, what one reply may cost must stay bounded, and the messages must
 * say what happened. The memory cases run in a child process (this binary
 * again, started with --memory-case URL) whose address space is capped, so
 * a regression fails the test instead of exhausting the machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault.h"
#include "rlock.h"
#include "rt_fake.h"
#include "rt_util.h"

/* Sanitizers reserve terabytes of address space, so there RLIMIT_AS
 * cannot be used; peak RSS is checked in every build. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RT_SANITIZED 1
#endif
#endif
#ifndef RT_SANITIZED
#define RT_SANITIZED 0
#endif

#if defined(__SANITIZE_ADDRESS__)
/* ASan parks freed blocks in a 256 MB quarantine, which would count as
 * growth here (the reader's buffer is reallocated as it grows). */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "quarantine_size_mb=8"; }
#endif

#define ADDRESS_SPACE_CAP (1L << 30)
#define RSS_GROWTH_MAX_KB (200L * 1024)

/* Commands time out after 300 ms, connections after 2 s. */
static rlock_client *client_for(rt_fake *f) {
  return fake_client(f, 300, 2000);
}

static void expect_took(int64_t t0, int64_t min_ms, int64_t max_ms) {
  int64_t took = rt_now_ms() - t0;
  if (took < min_ms || took > rt_scaled_ms(max_ms))
    fail_msg("took %lld ms, expected %lld..%lld", (long long)took,
             (long long)min_ms, (long long)rt_scaled_ms(max_ms));
}

/* ---- the command timeout bounds a round trip ------------------------- */

static void test_trickled_ping_times_out(void **state) {
  (void)state;
  /* 7 bytes, 200 ms apart: complete after 1.2 s, far past 300 ms, but
   * never silent for as long as the timeout. */
  static const rt_fake_step s[] = {RT_STEP_ACCEPT(),
                                   RT_STEP_EXPECT("PING"),
                                   RT_STEP_TRICKLE("+PONG\r\n", 200),
                                   RT_STEP_ACCEPT(),
                                   RT_STEP_EXPECT("PING"),
                                   RT_STEP_SEND("+PONG\r\n"),
                                   RT_STEP_END()};
  rt_fake *f = rt_fake_start(s);
  rlock_client *c = client_for(f);
  int64_t t0 = rt_now_ms();
  expect_rc(rlock_client_ping(c, NULL), RLOCK_ETIMEOUT,
            "no answer in time (read)");
  expect_took(t0, 250, 1500);
  expect_rc(rlock_client_ping(c, NULL), RLOCK_OK, NULL); /* fresh conn */
  finish(f, c);
}

static void test_trickled_acquire_times_out(void **state) {
  (void)state;
  static const rt_fake_step s[] = {RT_STEP_ACCEPT(),
                                   RT_STEP_EXPECT("EVALSHA"),
                                   RT_STEP_TRICKLE("$-1\r\n", 200),
                                   RT_STEP_ACCEPT(),
                                   RT_STEP_EXPECT("PING"),
                                   RT_STEP_SEND("+PONG\r\n"),
                                   RT_STEP_END()};
  fake_lock k;
  fake_lock_start(&k, s, 300, 2000, "fault:trickle");
  int64_t t0 = rt_now_ms();
  expect_rc(rlock_lock_try_acquire(k.l, 0, 5000), RLOCK_ETIMEOUT, "in time");
  expect_took(t0, 250, 1500);
  /* Not re-sent (it may have run); the client works on a new conn. */
  expect_rc(rlock_client_ping(k.c, NULL), RLOCK_OK, NULL);
  fake_lock_end(&k);
}

/* ---- a reply's cost is bounded --------------------------------------- */

/* kB of a "VmRSS:" / "VmHWM:" line of /proc/self/status, or -1. */
static long status_kb(const char *key) {
  FILE *fp = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  size_t n = strlen(key);
  while (fp && fgets(line, sizeof line, fp))
    if (strncmp(line, key, n) == 0)
      kb = atol(line + n);
  if (fp)
    fclose(fp);
  return kb;
}

/* Exit codes of a memory case's child, and what they mean. */
enum { CHILD_OK, CHILD_WRONG_RC, CHILD_SLOW, CHILD_RSS, CHILD_SETUP };
static const char *const child_failure[] = {
    "", "wrong status or message", "too slow", "peak RSS grew too much",
    "setup failed"};

static const char *self_path; /* argv[0] */

/* The child: PING the fake, expect RLOCK_EPROTO "reply too large"
 * quickly, with the peak RSS grown by less than RSS_GROWTH_MAX_KB. No
 * cmocka here: the result is the exit code (and a line on stderr). */
static int child_case(const char *url) {
  if (!RT_SANITIZED && !rt_on_valgrind()) {
    struct rlimit rl = {ADDRESS_SPACE_CAP, ADDRESS_SPACE_CAP};
    if (setrlimit(RLIMIT_AS, &rl) != 0)
      return CHILD_SETUP;
  }
  FILE *clear = fopen("/proc/self/clear_refs", "w"); /* reset the peak */
  if (clear) {
    fputs("5", clear);
    fclose(clear);
  }
  rlock_client *c = fault_client(url, rt_scaled_ms(20000), 2000);
  if (c == NULL)
    return CHILD_SETUP;
  long before = status_kb("VmRSS:");
  int64_t t0 = rt_now_ms();
  int rc = rlock_client_ping(c, NULL);
  int64_t took = rt_now_ms() - t0;
  long grown = status_kb("VmHWM:") - before;
  fprintf(stderr, "  child: rc %d (%s) after %lld ms, peak RSS +%ld kB\n", rc,
          rlock_error_last()->message, (long long)took, grown);
  int result = rc != RLOCK_EPROTO ||
                       !strstr(rlock_error_last()->message, "reply too large")
                   ? CHILD_WRONG_RC
               : took > rt_scaled_ms(5000)               ? CHILD_SLOW
               : before < 0 || grown > RSS_GROWTH_MAX_KB ? CHILD_RSS
                                                         : CHILD_OK;
  rlock_client_free(c);
  return result;
}

/* Wait for `pid` at most `ms`; its wait status, or -1 after killing it. */
static int wait_child(pid_t pid, int64_t ms) {
  int fd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int64_t deadline = rt_now_ms() + ms;
    int rc;
    do {
      int64_t left = deadline - rt_now_ms();
      rc = poll(&p, 1, left > 0 ? (int)left : 0);
    } while (rc < 0 && errno == EINTR);
    close(fd);
    if (rc == 0)
      kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    return rc == 0 ? -1 : status;
  }
  int status; /* no pidfd: the ctest timeout bounds this */
  waitpid(pid, &status, 0);
  return status;
}

/* Answer a child's PING with `header`, then `flood` (if not NULL) over and
 * over: the child must refuse the reply within its bounds. */
static void run_memory_case(const char *header, const char *flood) {
  const rt_fake_step script[] = {
      RT_STEP_ACCEPT(), RT_STEP_EXPECT("PING"), RT_STEP_SEND(header),
      flood ? (rt_fake_step)RT_STEP_FLOOD(flood) : (rt_fake_step)RT_STEP_END(),
      RT_STEP_END()};
  rt_fake *f = rt_fake_start(script);
  /* A fresh process, not a fork: this one has the fake's thread, which a
   * forked child under TSan would trip over. */
  char *const argv[] = {(char *)self_path, (char *)"--memory-case",
                        (char *)rt_fake_url(f), NULL};
  extern char **environ;
  pid_t pid;
  int err = posix_spawn(&pid, self_path, NULL, NULL, argv, environ);
  if (err != 0)
    fail_msg("posix_spawn %s: %s", self_path, strerror(err));
  int status = wait_child(pid, rt_scaled_ms(60000));
  if (status == -1)
    fail_msg("the child did not finish in time");
  if (!WIFEXITED(status))
    fail_msg("the child died of signal %d", WTERMSIG(status));
  int code = WEXITSTATUS(status);
  if (code != CHILD_OK)
    fail_msg("the child failed (%d): %s", code,
             code <= CHILD_SETUP ? child_failure[code] : "?");
  if (rt_fake_wait(f, 5000) != 0)
    fail_msg("fake server script: %s", rt_fake_error(f));
  rt_fake_free(f);
}

static void test_huge_array_header(void **state) {
  (void)state;
  run_memory_case("*2147483647\r\n", NULL);
}

static void test_huge_array_then_flood(void **state) {
  (void)state;
  run_memory_case("*2147483647\r\n", ":1\r\n");
}

static void test_huge_bulk_then_flood(void **state) {
  (void)state;
  run_memory_case("$2147483647\r\n", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
}

/* An array within the limit whose elements are arrays too, endless: each
 * is small and allowed, and the reply is refused once its elements
 * together pass the limit. */
static void test_endless_nested_elements(void **state) {
  (void)state;
  run_memory_case("*1000000\r\n", "*1\r\n$1\r\nx\r\n");
}

/* ---- names that do not resolve --------------------------------------- */

static void test_unresolvable_host(void **state) {
  (void)state;
  /* .invalid never resolves (RFC 6761). Without a reachable DNS server
   * the lookup may instead run out of time: both name the cause. */
  rlock_client *c = fault_client("redis://nosuch.invalid:6379", 300, 1000);
  assert_non_null(c);
  int64_t t0 = rt_now_ms();
  int rc = rlock_client_ping(c, NULL);
  const char *msg = rlock_error_last()->message;
  if (rc == RLOCK_EIO)
    expect_rc(rc, RLOCK_EIO, "name did not resolve (");
  else
    expect_rc(rc, RLOCK_ETIMEOUT, "name lookup did not finish in time");
  assert_non_null(strstr(msg, "nosuch.invalid:6379"));
  assert_null(strstr(msg, "No route to host"));
  expect_took(t0, 0, 1000 + 1500);
  rlock_client_free(c);
}

static void test_name_that_resolves(void **state) {
  (void)state;
  static const rt_fake_step s[] = {RT_STEP_ACCEPT(), RT_STEP_EXPECT("PING"),
                                   RT_STEP_SEND("+PONG\r\n"), RT_STEP_END()};
  rt_fake *f = rt_fake_start(s);
  char url[64];
  snprintf(url, sizeof url, "redis://localhost:%d", rt_fake_port(f));
  rlock_client *c = fault_client(url, 1000, 2000);
  assert_non_null(c);
  expect_rc(rlock_client_ping(c, NULL), RLOCK_OK, NULL);
  finish(f, c);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--memory-case") == 0)
    return child_case(argv[2]);
  self_path = argv[0];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_trickled_ping_times_out),
      cmocka_unit_test(test_trickled_acquire_times_out),
      cmocka_unit_test(test_huge_array_header),
      cmocka_unit_test(test_huge_array_then_flood),
      cmocka_unit_test(test_huge_bulk_then_flood),
      cmocka_unit_test(test_endless_nested_elements),
      cmocka_unit_test(test_unresolvable_host),
      cmocka_unit_test(test_name_that_resolves),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  rt_lookups_drain(); /* a lookup of nosuch.invalid given up on runs on */
  return failed;
}
