/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: every example program runs against a real server and
 * exits 0, which each does only when the behaviour it demonstrates
 * happened. The examples are found by listing $RLOCK_TEST_BINDIR
 * (example_*), so one added to examples/ later is covered without
 * touching this file; RLOCK_TEST_EXAMPLES, set by tests/CMakeLists.txt to
 * the example targets the build defines, makes a missing one an error
 * rather than a silent skip. Each runs with the server's URL as argv[1],
 * on a flushed server, one at a time; its run time is printed. A few
 * examples' telling output lines are checked too (the fenced one's
 * refused stale write, the fair one's order). */
#include "fixture.h"
#include "rt_proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#ifndef RLOCK_TEST_EXAMPLES
#define RLOCK_TEST_EXAMPLES "" /* built outside tests/CMakeLists.txt */
#endif

/* Upper bound for one example's run (each takes well under 5 s). */
#define EXAMPLE_TIMEOUT_MS 60000
#define MAX_EXAMPLES 64

/* srv: the binary's shared server (fixture.h) */
static const char *bindir;

/* Lines an example's stdout must contain, beyond exiting 0. */
static const struct {
  const char *example;
  const char *lines[4];
} expected_output[] = {
    {"example_basic", {"holding 'orders'\n", "holding 'orders' again"}},
    {"example_fenced_resource",
     {"B: writes with token 2: accepted\n",
      "A: wakes up, writes with token 1: REJECTED (storage has seen token 2)\n",
      "A: rlock_lock_check says RLOCK_ELOST"}},
    {"example_fair", {"served in order: 1 2 3 (the order they arrived in)\n"}},
    {"example_rwlock", {"readers shared the lock; the writer had it alone\n"}},
    {"example_multilock", {"all or none: done\n"}},
    {"example_metrics_http",
     {"another thread: gave up after 100 ms\n",
      ": 3 acquisitions and 1 timeout of a reentrant lock\n"}},
    {"example_cpp_basic",
     {"holding 'orders' and 'payments'\n",
      "in opposite orders: no deadlock, 0 overlaps\n",
      "a 200 ms wait: not acquired\n",
      "release without holding: rlock::errc::not_held"}},
};

static int cmp_name(const void *a, const void *b) { return strcmp(a, b); }

/* The executables named example_* in `dir`, sorted; returns how many. */
static size_t find_examples(const char *dir, char (*names)[NAME_MAX + 1],
                            size_t cap) {
  DIR *d = opendir(dir);
  if (d == NULL)
    fail_msg("cannot list %s (set RLOCK_TEST_BINDIR): %s", dir,
             strerror(errno));
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char path[PATH_MAX];
    struct stat st;
    if (strncmp(e->d_name, "example_", 8) != 0)
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || access(path, X_OK))
      continue;
    if (n == cap)
      fail_msg("more than %zu examples in %s", cap, dir);
    snprintf(names[n++], NAME_MAX + 1, "%s", e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, cmp_name);
  return n;
}

/* The whole file, NUL-terminated, in `buf` ("" if absent). */
static const char *slurp(const char *path, char *buf, size_t size) {
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (f != NULL) {
    buf[fread(buf, 1, size - 1, f)] = '\0';
    fclose(f);
  }
  return buf;
}

/* Run one example; on failure append why to `report` and return 0. */
static int run_example(const char *name, char *report, size_t cap) {
  char prog[PATH_MAX], out[PATH_MAX], err[PATH_MAX];
  static char text[16384], errs[8192];
  snprintf(prog, sizeof prog, "%s/%s", bindir, name);
  snprintf(out, sizeof out, "%s/%s.out", rt_server_dir(srv), name);
  snprintf(err, sizeof err, "%s/%s.err", rt_server_dir(srv), name);

  rt_cmd_ok(srv, "FLUSHALL"); /* each example starts from an empty server */
  const char *argv[] = {prog, rt_server_url(srv), NULL};
  int64_t t0 = rt_now_ms();
  pid_t pid = rt_proc_start_to_files(argv, out, err, false);
  assert_true(pid > 0);
  int status = fx_wait_child(pid, rt_scaled_ms(EXAMPLE_TIMEOUT_MS));
  int64_t ms = rt_now_ms() - t0;
  print_message("%-28s exit %d in %lld ms\n", name, status, (long long)ms);

  slurp(out, text, sizeof text);
  slurp(err, errs, sizeof errs);
  const char *why = NULL, *missing = NULL;
  if (status != 0)
    why = "exited non-zero";
  else if (errs[0] != '\0')
    why = "wrote to stderr";
  for (size_t i = 0;
       why == NULL && i < sizeof expected_output / sizeof *expected_output;
       i++) {
    if (strcmp(expected_output[i].example, name) != 0)
      continue;
    for (int j = 0; j < 4 && expected_output[i].lines[j] != NULL; j++)
      if (strstr(text, expected_output[i].lines[j]) == NULL) {
        why = "missing an expected line";
        missing = expected_output[i].lines[j];
        break;
      }
  }
  if (why == NULL)
    return 1;
  size_t used = strlen(report);
  snprintf(report + used, cap - used,
           "\n--- %s %s (exit %d, %lld ms)%s%s\n--- stdout:\n%s--- stderr:\n%s",
           name, why, status, (long long)ms, missing ? ": " : "",
           missing ? missing : "", text, errs);
  return 0;
}

static int setup(void **state) {
  bindir = getenv("RLOCK_TEST_BINDIR");
  if (bindir == NULL)
    bindir = ".";
  return fx_setup(state);
}

static int teardown(void **state) { return fx_teardown(state); }

/* Every example_* in the build directory runs and exits 0. */
static void test_every_example_runs(void **state) {
  (void)state;
  static char found[MAX_EXAMPLES][NAME_MAX + 1];
  size_t n = find_examples(bindir, found, MAX_EXAMPLES);

  /* Every example the build defines must be there: listing the directory
   * alone would pass with none at all. */
  char built[] = RLOCK_TEST_EXAMPLES, *save = NULL;
  size_t nbuilt = 0;
  for (char *t = strtok_r(built, " ", &save); t != NULL;
       t = strtok_r(NULL, " ", &save), nbuilt++) {
    int present = 0;
    for (size_t i = 0; i < n && !present; i++)
      present = strcmp(found[i], t) == 0;
    if (!present)
      fail_msg("%s is built by this tree but not in %s", t, bindir);
  }
  if (n == 0) {
    print_message("no example_* in %s (RLOCK_BUILD_EXAMPLES off): skipped\n",
                  bindir);
    skip();
  }
  if (n > nbuilt)
    print_message("%zu example_* in %s, %zu of them built by this tree\n", n,
                  bindir, nbuilt);

  static char report[65536];
  report[0] = '\0';
  size_t failed = 0;
  for (size_t i = 0; i < n; i++)
    failed += !run_example(found[i], report, sizeof report);
  if (failed > 0)
    fail_msg("%zu of %zu examples failed:%s", failed, n, report);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_example_runs),
};

static int no_child(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return 2;
}

FX_MAIN(tests, setup, teardown, no_child)
