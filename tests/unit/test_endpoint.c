/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: URL parsing into endpoints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "endpoint.h"
#include "rlock/errors.h"

static rlock__endpoint parse_ok(const char *url) {
  rlock__endpoint ep;
  int rc = rlock__endpoint_parse(&ep, url);
  if (rc != RLOCK_OK)
    fail_msg("parsing '%s' failed: %s", url, rlock_error_last()->message);
  return ep;
}

static void expect_invalid(const char *url, const char *needle) {
  rlock__endpoint ep;
  assert_int_equal(rlock__endpoint_parse(&ep, url), RLOCK_EINVAL);
  assert_null(ep.host);
  assert_null(ep.password);
  if (strstr(rlock_error_last()->message, needle) == NULL)
    fail_msg("message for '%s' is '%s', expected it to mention '%s'", url,
             rlock_error_last()->message, needle);
}

static void test_defaults(void **state) {
  (void)state;
  rlock__endpoint ep = parse_ok("redis://localhost");
  assert_string_equal(ep.host, "localhost");
  assert_int_equal(ep.port, 6379);
  assert_int_equal(ep.db, 0);
  assert_null(ep.user);
  assert_null(ep.password);
  assert_null(ep.unix_path);
  rlock__endpoint_clear(&ep);
}

static void test_full_form(void **state) {
  (void)state;
  rlock__endpoint ep = parse_ok("redis://alice:s%40cret@10.0.0.5:7001/3");
  assert_string_equal(ep.user, "alice");
  assert_string_equal(ep.password, "s@cret");
  assert_string_equal(ep.host, "10.0.0.5");
  assert_int_equal(ep.port, 7001);
  assert_int_equal(ep.db, 3);
  rlock__endpoint_clear(&ep);
}

static void test_password_only_and_ipv6(void **state) {
  (void)state;
  rlock__endpoint ep = parse_ok("redis://:pw@[::1]:6380");
  assert_null(ep.user);
  assert_string_equal(ep.password, "pw");
  assert_string_equal(ep.host, "::1");
  assert_int_equal(ep.port, 6380);
  char buf[64];
  assert_string_equal(rlock__endpoint_str(&ep, buf, sizeof buf), "[::1]:6380");
  rlock__endpoint_clear(&ep);
}

static void test_unix(void **state) {
  (void)state;
  rlock__endpoint ep = parse_ok("unix:///run/redis/redis.sock?db=2");
  assert_null(ep.host);
  assert_string_equal(ep.unix_path, "/run/redis/redis.sock");
  assert_int_equal(ep.db, 2);
  rlock__endpoint_clear(&ep);
  ep = parse_ok("unix://:pw@/tmp/r.sock");
  assert_string_equal(ep.password, "pw");
  assert_string_equal(ep.unix_path, "/tmp/r.sock");
  rlock__endpoint_clear(&ep);
}

static void test_invalid(void **state) {
  (void)state;
  expect_invalid("", "empty");
  expect_invalid("http://x", "redis://");
  expect_invalid("redis://", "no host");
  expect_invalid("redis://h:0", "port");
  expect_invalid("redis://h:65536", "port");
  expect_invalid("redis://h:12ab", "port");
  expect_invalid("redis://h/x", "database");
  expect_invalid("redis://user@h", "missing ':'");
  expect_invalid("redis://:p%4@h", "escape");
  expect_invalid("redis://[::1", "']'");
  expect_invalid("unix://relative.sock", "absolute");
  expect_invalid("unix:///s?x=1", "db=N");
  rlock__endpoint ep;
  assert_int_equal(rlock__endpoint_parse(&ep, NULL), RLOCK_EINVAL);
  char big[5000];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  memcpy(big, "redis://", 8);
  expect_invalid(big, "longer");
}

static void test_copy(void **state) {
  (void)state;
  rlock__endpoint a = parse_ok("redis://u:p@h:1/2"), b;
  assert_int_equal(rlock__endpoint_copy(&b, &a), RLOCK_OK);
  rlock__endpoint_clear(&a);
  assert_string_equal(b.user, "u");
  assert_string_equal(b.password, "p");
  assert_string_equal(b.host, "h");
  assert_int_equal(b.db, 2);
  rlock__endpoint_clear(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_full_form),
      cmocka_unit_test(test_password_only_and_ipv6),
      cmocka_unit_test(test_unix),
      cmocka_unit_test(test_invalid),
      cmocka_unit_test(test_copy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
