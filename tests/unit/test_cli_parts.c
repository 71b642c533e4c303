/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit: parts of the rlock CLI compiled in here: durations
 * (src/cli/duration.c: plain and fractional seconds, the units, exact
 * rounding up of a fraction of a millisecond, which reason a refusal
 * gives), the URL shown in messages with its secrets hidden (client.c),
 * and the exit status for a library failure (util.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/cli/client.c"
#include "../../src/cli/duration.c"
#include "../../src/cli/notice.c"
#include "../../src/cli/util.c"

static int64_t ms_of(const char *s) {
  int64_t ms = -7;
  const char *why = NULL;
  if (cli_parse_duration(s, &ms, &why) != 0)
    fail_msg("'%s' refused: %s", s, why);
  return ms;
}

static const char *why_of(const char *s) {
  int64_t ms = -7;
  const char *why = NULL;
  assert_int_equal(cli_parse_duration(s, &ms, &why), -1);
  assert_int_equal(ms, -7);
  return why;
}

static void test_accepted(void **state) {
  (void)state;
  assert_int_equal(ms_of("0"), 0);
  assert_int_equal(ms_of("0.0"), 0);
  assert_int_equal(ms_of("5"), 5000); /* seconds, as flock -w */
  assert_int_equal(ms_of("1.5"), 1500);
  assert_int_equal(ms_of(".5m"), 30000);
  assert_int_equal(ms_of("1."), 1000);
  assert_int_equal(ms_of("250ms"), 250);
  assert_int_equal(ms_of("2d"), 2 * 86400000LL);
  assert_int_equal(ms_of("365d"), RLOCK_MAX_DURATION_MS);
  assert_int_equal(ms_of("8760h"), RLOCK_MAX_DURATION_MS);
}

/* A fraction of a millisecond rounds up, however far down it comes: only
 * 0 means 0. */
static void test_rounds_up_exactly(void **state) {
  (void)state;
  assert_int_equal(ms_of("0.0001"), 1);
  assert_int_equal(ms_of("1.0000000000000000000001s"), 1001);
  assert_int_equal(ms_of("0.00000000001d"), 1);
  assert_int_equal(ms_of("0.5ms"), 1);
  assert_int_equal(ms_of("1.000ms"), 1);
  /* Found by fuzz_duration: the digits past the ninth carry it over the
   * whole ms (0.2699444444994444...d is 23323200.0047... ms). */
  assert_int_equal(ms_of("131.269944444499444444444626944444444444d"),
                   131LL * 86400000 + 23323201);
}

static void test_refused(void **state) {
  (void)state;
  assert_non_null(strstr(why_of("-1s"), "negative"));
  assert_non_null(strstr(why_of("."), "expected a number"));
  assert_non_null(strstr(why_of(""), "expected a number"));
  assert_non_null(strstr(why_of("1.5.5"), "expected a number"));
  assert_non_null(strstr(why_of("1 s"), "expected a number"));
  /* The unit first: an unknown one is not "too long", however big. */
  assert_non_null(strstr(why_of("99999999999y"), "expected a number"));
  assert_non_null(strstr(why_of("99999999999d"), "at most 365 days"));
  assert_non_null(strstr(why_of("365.0000000001d"), "at most 365 days"));
  assert_non_null(strstr(why_of("8761h"), "at most 365 days"));
}

static const char *redacted(const char *url) {
  static char buf[512];
  return cli_redact_url(url, buf, sizeof buf);
}

/* Every secret hidden: the password before '@', any *password=
 * parameter (Sentinel's), whatever its case; the rest kept as typed. */
static void test_redact_url(void **state) {
  (void)state;
  assert_string_equal(redacted("redis://h:6379/2"), "redis://h:6379/2");
  assert_string_equal(redacted("redis://u:pw@h"), "redis://u:***@h");
  assert_string_equal(redacted("redis://:pw@h"), "redis://:***@h");
  assert_string_equal(
      redacted("redis-sentinel://u:p1@h:1,h:2?sentinel_user=s&"
               "sentinel_password=p2#m"),
      "redis-sentinel://u:***@h:1,h:2?sentinel_user=s&sentinel_password=***"
      "#m");
  assert_string_equal(redacted("rediss://h?tls_ca=/ca&Sentinel_PASSWORD=x"),
                      "rediss://h?tls_ca=/ca&Sentinel_PASSWORD=***");
  assert_string_equal(redacted("redis://h?password=&x=1"),
                      "redis://h?password=***&x=1");
  char small[12];
  cli_redact_url("redis://u:secret@host", small, sizeof small);
  assert_string_equal(small, "redis://u:*"); /* cut, never the secret */
}

/* The library reports a thread it could not start as RLOCK_EIO: that is
 * the system's failure (71), not the server's (69). */
static void test_exit_for_error(void **state) {
  (void)state;
  assert_int_equal(cli_exit_for_error(RLOCK_EIO, "cannot start background "
                                                 "thread: Resource "
                                                 "temporarily unavailable"),
                   EX_OSERR);
  assert_int_equal(cli_exit_for_error(RLOCK_EIO, "cannot start a thread: x"),
                   EX_OSERR);
  assert_int_equal(cli_exit_for_error(RLOCK_EIO, "cannot connect to redis "
                                                 "h:1: Connection refused"),
                   EX_UNAVAILABLE);
  assert_int_equal(cli_exit_for_error(RLOCK_ENOMEM, "out of memory"), EX_OSERR);
  assert_int_equal(cli_exit_for_error(RLOCK_ELOCKED, "held"), EX_TEMPFAIL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_accepted),
      cmocka_unit_test(test_rounds_up_exactly),
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_redact_url),
      cmocka_unit_test(test_exit_for_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
