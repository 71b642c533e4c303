/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: common.c's small helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

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

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_decimal)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
