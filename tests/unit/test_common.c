/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: common.c's small helpers, and names.c's glob. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "names.h"

/* rlock__decimal agrees with snprintf("%" PRId64) on the edges and on a
 * spread of values. */
static void test_decimal(void **state) {
  (void)state;
  int64_t cases[] = {0,         1,         -1,        9,         10,
                     -10,       99,        100,       30000,     -30000,
                     INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, INT64_MIN + 1};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char got[24], want[24];
    size_t n = rlock__decimal(got, cases[i]);
    snprintf(want, sizeof want, "%" PRId64, cases[i]);
    assert_string_equal(got, want);
    assert_int_equal(n, strlen(want));
  }
  for (int64_t v = -100000; v <= 100000; v += 7) {
    char got[24], want[24];
    int64_t x = v * (int64_t)92233720368;
    rlock__decimal(got, x);
    snprintf(want, sizeof want, "%" PRId64, x);
    assert_string_equal(got, want);
  }
}

/* rlock__glob matches as Redis's SCAN MATCH does (the cases were checked
 * against redis-server 7: SCAN 0 MATCH pattern on a key named s). */
static void test_glob(void **state) {
  (void)state;
  static const struct {
    const char *pattern, *s;
    int want;
  } cases[] = {
      {"*", "", 1},           {"*", "abc", 1},      {"a*", "abc", 1},
      {"a*", "bac", 0},       {"*c", "abc", 1},     {"*b*", "abc", 1},
      {"a*b*c", "aXbYc", 1},  {"a*b*c", "aXbY", 0}, {"?", "a", 1},
      {"?", "", 0},           {"a?c", "abc", 1},    {"a?c", "ac", 0},
      {"[abc]", "b", 1},      {"[abc]", "d", 0},    {"[^abc]", "d", 1},
      {"[^abc]", "a", 0},     {"[a-c]x", "bx", 1},  {"[c-a]x", "bx", 1},
      {"[a-c]x", "dx", 0},    {"\\*", "*", 1},      {"\\*", "a", 0},
      {"[\\]]", "]", 1},      {"a\\", "a\\", 1},    {"jobs:*", "jobs:1", 1},
      {"jobs:*", "job:1", 0}, {"**a", "bba", 1},    {"*a*a*a", "aaa", 1},
      {"*a*a*a", "aa", 0},    {"{x}*", "{x}y", 1},  {"[ab", "a", 1},
      {"abc", "abcd", 0},     {"abc", "ab", 0},     {"", "", 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (rlock__glob(cases[i].pattern, cases[i].s) != cases[i].want)
      fail_msg("'%s' on '%s': want %d", cases[i].pattern, cases[i].s,
               cases[i].want);
}

/* Hex both ways: random ids are lowercase hex of the asked length, and
 * rlock__hex_bytes reads either case and refuses anything else. */
static void test_hex(void **state) {
  (void)state;
  char id[33];
  assert_int_equal(rlock__random_hex(id, 16), RLOCK_OK);
  assert_int_equal(strlen(id), 32);
  assert_int_equal(strspn(id, "0123456789abcdef"), 32);
  unsigned char raw[16];
  assert_int_equal(rlock__hex_bytes(id, raw, sizeof raw), 0);
  for (size_t i = 0; i < sizeof raw; i++) {
    char two[3];
    snprintf(two, sizeof two, "%02x", raw[i]);
    assert_memory_equal(two, id + 2 * i, 2);
  }
  unsigned char b[4];
  assert_int_equal(rlock__hex_bytes("00fF7a9B", b, 4), 0);
  assert_int_equal(b[0], 0x00);
  assert_int_equal(b[1], 0xff);
  assert_int_equal(b[2], 0x7a);
  assert_int_equal(b[3], 0x9b);
  const char *bad[] = {"0g",
                       "g0",
                       " 0",
                       "0 ",
                       "0",
                       "\xff"
                       "0",
                       "-1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(rlock__hex_bytes(bad[i], b, 1), -1);
  for (int c = 0; c < 256; c++)
    assert_int_equal(rlock__is_hex((char)c), (c >= '0' && c <= '9') ||
                                                 (c >= 'a' && c <= 'f') ||
                                                 (c >= 'A' && c <= 'F'));
}

/* Ids drawn after fork() in the child are not the parent's next ones:
 * the child drops the pool of random bytes it inherited. */
static void test_random_after_fork(void **state) {
  (void)state;
  char first[33], mine[33], theirs[33] = "";
  assert_int_equal(rlock__random_hex(first, 16), RLOCK_OK); /* pool filled */
  int fd[2];
  assert_int_equal(pipe(fd), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char id[33];
    int ok = rlock__random_hex(id, 16) == RLOCK_OK &&
             write(fd[1], id, sizeof id) == (ssize_t)sizeof id;
    _exit(ok ? 0 : 1);
  }
  close(fd[1]);
  assert_int_equal(read(fd[0], theirs, sizeof theirs), (ssize_t)sizeof theirs);
  close(fd[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_int_equal(rlock__random_hex(mine, 16), RLOCK_OK);
  assert_string_not_equal(mine, theirs);
  assert_string_not_equal(first, theirs);
  assert_string_not_equal(first, mine);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decimal), cmocka_unit_test(test_glob),
      cmocka_unit_test(test_hex), cmocka_unit_test(test_random_after_fork)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
