/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: why fencing tokens matter, with real processes. A holder
 * (`rlock exec --fenced` and its COMMAND) is paused with SIGSTOP past its
 * lease; another client takes the lock with a larger token and writes to
 * a resource that remembers the highest token it has seen; when the
 * holder resumes, its write with the stale token is refused, and rlock
 * tells it the lock was lost (COMMAND terminated, exit 76).
 * (examples/fenced_resource.c, the same story in one process, is run,
 * and its refused stale write checked, by test_examples.)
 *
 * The resource is a file guarded by flock(2), written by this binary
 * itself: COMMAND runs `<this test> --child write FILE TOKEN DATA`. */
#include "fixture.h"
#include "rt_proc.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/stat.h>

/* rlock exec's status when the lock was lost and COMMAND terminated. */
#define EXIT_LOST 76

/* srv: the binary's shared server (fixture.h) */
static char cli[PATH_MAX];  /* $RLOCK_TEST_BINDIR/rlock */
static char self[PATH_MAX]; /* this test binary, for COMMAND's writes */

/* ---- the resource ------------------------------------------------------- */

/* Append one line to `path` (the resource's log). */
static void log_line(const char *path, const char *line) {
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) {
    ssize_t n = write(fd, line, strlen(line));
    (void)n;
    close(fd);
  }
}

/*
 * The guarded resource: the file `path` holds "<token> <data>\n" of the
 * last write it accepted, and accepts a write only with a token at least
 * that high. The check and the write happen under an exclusive flock of
 * the file, so writers in several processes cannot interleave them. Every
 * attempt is logged to "<path>.log" ("accepted T DATA" or "refused T DATA
 * (highest H)"), under the same lock. Returns 1 accepted, 0 refused, -1
 * on a system error.
 */
static int store_write(const char *path, long long token, const char *data) {
  char log[PATH_MAX + 8], buf[256], line[512];
  snprintf(log, sizeof log, "%s.log", path);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return -1;
  if (flock(fd, LOCK_EX) != 0) {
    close(fd);
    return -1;
  }
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  buf[n > 0 ? n : 0] = '\0';
  long long highest = atoll(buf); /* 0 for a new, empty file */
  int ok = token >= highest;
  if (ok) {
    int len = snprintf(buf, sizeof buf, "%lld %s\n", token, data);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)len, 0) != len)
      ok = -1;
    snprintf(line, sizeof line, "accepted %lld %s\n", token, data);
  } else {
    snprintf(line, sizeof line, "refused %lld %s (highest %lld)\n", token, data,
             highest);
  }
  if (ok >= 0)
    log_line(log, line);
  close(fd); /* releases the flock */
  return ok;
}

/* `--child write FILE TOKEN DATA`: exit 0 accepted, 1 refused, 2 error. */
static int child_main(int argc, char **argv) {
  if (argc != 4 || strcmp(argv[0], "write") != 0)
    return 2;
  int ok = store_write(argv[1], atoll(argv[2]), argv[3]);
  return ok == 1 ? 0 : ok == 0 ? 1 : 2;
}

/* ---- helpers ------------------------------------------------------------ */

/* GET redisson_lock_token:{name}; -1 when absent. */
static long long token_key(const char *name) {
  redisReply *r = rt_cmd(srv, "GET redisson_lock_token:{%s}", name);
  long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
  freeReplyObject(r);
  return v;
}

/* Wait until our child `pid` is stopped (by a SIGSTOP sent meanwhile). */
static void wait_stopped(pid_t pid, int64_t ms) {
  int64_t t0 = rt_now_ms();
  for (;;) {
    int st;
    pid_t got = waitpid(pid, &st, WUNTRACED | WNOHANG);
    if (got == pid && WIFSTOPPED(st))
      return;
    if (got == pid)
      fail_msg("process %d ended instead of stopping (status %d)", (int)pid,
               st);
    if (rt_now_ms() - t0 > ms)
      fail_msg("process %d did not stop within %lld ms", (int)pid,
               (long long)ms);
    rt_sleep_ms(5);
  }
}

/* ---- fixture ------------------------------------------------------------ */

static int setup(void **state) {
  const char *dir = getenv("RLOCK_TEST_BINDIR");
  snprintf(cli, sizeof cli, "%s/rlock", dir != NULL ? dir : ".");
  if (access(cli, X_OK) != 0) {
    fprintf(stderr, "no rlock binary at %s (set RLOCK_TEST_BINDIR)\n", cli);
    return -1;
  }
  if (realpath(fx_argv0, self) == NULL) {
    fprintf(stderr, "cannot resolve %s\n", fx_argv0);
    return -1;
  }
  return fx_setup(state);
}

static int teardown(void **state) { return fx_teardown(state); }

/* ---- tests -------------------------------------------------------------- */

/* The store itself: equal tokens pass, lower ones are refused. */
static void test_store_checks_tokens(void **state) {
  (void)state;
  char store[512], log[600];
  fx_tmp_path(store, sizeof store, "unit.store");
  snprintf(log, sizeof log, "%s.log", store);
  assert_int_equal(store_write(store, 3, "x"), 1);
  assert_int_equal(store_write(store, 3, "y"), 1);
  assert_int_equal(store_write(store, 2, "z"), 0);
  assert_int_equal(store_write(store, 4, "w"), 1);
  assert_string_equal(fx_slurp(store), "4 w\n");
  assert_string_equal(fx_slurp(log), "accepted 3 x\naccepted 3 y\n"
                                     "refused 2 z (highest 3)\naccepted 4 w\n");
}

/*
 * The holder, `rlock --watchdog 1s exec --fenced NAME -- sh -c SCRIPT`:
 * COMMAND writes once with its token (accepted), publishes the token in a
 * file, waits for "go", then writes again with the same token. The test
 * stops rlock and COMMAND (their process group) until the lock has
 * expired in Redis, takes it itself, gets a larger token and writes with
 * it; then creates "go" and resumes them. The stale write is refused by
 * the store; rlock finds the lock lost, terminates COMMAND (which notes
 * the SIGTERM and exits only after its write, so the order of the two
 * does not matter) and exits 76 with one line naming the lock.
 */
static void test_paused_holder_is_fenced_off(void **state) {
  (void)state;
  const char *name = "fence:paused";
  char store[512], log[600], tok[512], go[512], term[512], out[512], err[512],
      script[16384];
  fx_tmp_path(store, sizeof store, "paused.store");
  snprintf(log, sizeof log, "%s.log", store);
  fx_tmp_path(tok, sizeof tok, "paused.token");
  fx_tmp_path(go, sizeof go, "paused.go");
  fx_tmp_path(term, sizeof term, "paused.term");
  fx_tmp_path(out, sizeof out, "paused.out");
  fx_tmp_path(err, sizeof err, "paused.err");
  snprintf(script, sizeof script,
           "trap 'echo term >> %s; termed=1' TERM\n"
           "'%s' --child write '%s' \"$RLOCK_TOKEN\" A-before || exit 3\n"
           "echo \"$RLOCK_TOKEN\" > '%s.tmp' && mv '%s.tmp' '%s'\n"
           "while [ ! -e '%s' ]; do sleep 0.02; done\n"
           /* TERM ignored: rlock signals the whole job when it finds
            * the lock lost, and the stale write must still be made */
           "(trap '' TERM; exec '%s' --child write '%s' \"$RLOCK_TOKEN\" "
           "A-stale)\n"
           "while [ -z \"$termed\" ]; do sleep 0.02; done\n"
           "exit 0\n",
           term, self, store, tok, tok, tok, go, self, store);
  const char *argv[] = {cli,          "-u", rt_server_url(srv),
                        "--watchdog", "1s", "exec",
                        "--fenced",   name, "--",
                        "sh",         "-c", script,
                        NULL};
  pid_t pid = rt_proc_start_to_files(argv, out, err, true);
  assert_true(pid > 0);

  fx_wait_file(tok, rt_scaled_ms(10000));
  long long ta = atoll(fx_slurp(tok));
  assert_true(ta > 0);
  assert_int_equal(ta, token_key(name));

  /* Stop the holder (rlock: so its watchdog too) past its 1 s lease. */
  assert_int_equal(kill(-pid, SIGSTOP), 0);
  wait_stopped(pid, rt_scaled_ms(5000));
  int64_t stopped = rt_now_ms();
  fx_wait_exists(srv, name, 0, rt_scaled_ms(5000));
  print_message("paused holder: its lock expired %lld ms after SIGSTOP\n",
                (long long)(rt_now_ms() - stopped));

  /* Another owner takes the lock meanwhile: a larger token, which it
   * writes with. */
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l;
  int64_t tb = 0;
  OK(rlock_lock_new_fenced(&l, c, name));
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = 0;
  o.token = &tb;
  OK(rlock_lock_acquire_opts(l, &o));
  assert_int_equal(tb, ta + 1);
  assert_int_equal(store_write(store, tb, "B"), 1);

  /* The holder wakes up and carries on. */
  fx_touch(go);
  assert_int_equal(kill(-pid, SIGCONT), 0);
  int status = fx_wait_child(pid, rt_scaled_ms(15000));
  const char *errs = fx_slurp(err);
  if (status != EXIT_LOST)
    fail_msg("rlock exited %d, expected %d; stderr: %s", status, EXIT_LOST,
             errs);

  /* The stale holder was told: one line naming the lock. (The job's
   * whole process group got the SIGTERM: sh may add "Terminated" for its
   * `sleep`, after it.) */
  char want[256];
  snprintf(want, sizeof want,
           "rlock: lock '%s' was lost while 'sh' ran: "
           "terminating it\n",
           name);
  if (strncmp(errs, want, strlen(want)) != 0 ||
      strstr(errs + strlen(want), "rlock: ") != NULL)
    fail_msg("stderr: %s", errs);
  assert_string_equal(fx_slurp(term), "term\n");
  assert_string_equal(fx_slurp(out), "");

  /* The stale token was refused; the store kept B's write. */
  char want_log[512], want_store[64];
  snprintf(want_log, sizeof want_log,
           "accepted %lld A-before\naccepted %lld B\n"
           "refused %lld A-stale (highest %lld)\n",
           ta, (long long)tb, ta, (long long)tb);
  assert_string_equal(fx_slurp(log), want_log);
  snprintf(want_store, sizeof want_store, "%lld B\n", (long long)tb);
  assert_string_equal(fx_slurp(store), want_store);

  /* rlock's release did not touch the new owner's hold. */
  OK(rlock_lock_check(l));
  OK(rlock_lock_release(l));
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
  assert_int_equal(token_key(name), tb); /* tokens outlive the lock */
  FX_FREE((l), (c));
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_store_checks_tokens),
    cmocka_unit_test(test_paused_holder_is_fenced_off),
};

FX_MAIN(tests, setup, teardown, child_main)
