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

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_decimal),
                                     cmocka_unit_test(test_glob)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
