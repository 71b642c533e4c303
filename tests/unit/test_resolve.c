/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: name lookup with a deadline (resolve.h). Nothing here needs
 * a DNS server: numeric addresses, "localhost" from /etc/hosts, and
 * ".invalid", which never resolves (RFC 6761). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "common.h"
#include "resolve.h"
#include "rt_util.h"

/* The port of the first address, checking every address has `family`
 * when it is not AF_UNSPEC. */
static int port_of(const struct addrinfo *res, int family) {
  assert_non_null(res);
  for (const struct addrinfo *a = res; a != NULL; a = a->ai_next) {
    assert_int_equal(a->ai_socktype, SOCK_STREAM);
    if (family != AF_UNSPEC)
      assert_int_equal(a->ai_family, family);
  }
  return res->ai_family == AF_INET
             ? ntohs(((struct sockaddr_in *)res->ai_addr)->sin_port)
             : ntohs(((struct sockaddr_in6 *)res->ai_addr)->sin6_port);
}

static void test_numeric_addresses(void **state) {
  (void)state;
  struct addrinfo *res;
  char why[128];
  /* No time at all is needed: numeric addresses take no lookup. */
  int64_t due = rlock__now_us();
  assert_int_equal(
      rlock__resolve("127.0.0.1", 6379, due, &res, why, sizeof why), RLOCK_OK);
  assert_int_equal(port_of(res, AF_INET), 6379);
  freeaddrinfo(res);
  assert_int_equal(rlock__resolve("::1", 7000, due, &res, why, sizeof why),
                   RLOCK_OK);
  assert_int_equal(port_of(res, AF_INET6), 7000);
  freeaddrinfo(res);
}

static void test_name(void **state) {
  (void)state;
  struct addrinfo *res;
  char why[128];
  int rc = rlock__resolve("localhost", 6380, rlock__deadline_after_ms(5000),
                          &res, why, sizeof why);
  if (rc != RLOCK_OK)
    fail_msg("localhost: %s", why);
  assert_int_equal(port_of(res, AF_UNSPEC), 6380);
  freeaddrinfo(res);
  rc = rlock__resolve("localhost", 6380, INT64_MAX, &res, why, sizeof why);
  assert_int_equal(rc, RLOCK_OK);
  freeaddrinfo(res);
}

static void test_name_that_does_not_resolve(void **state) {
  (void)state;
  struct addrinfo *res;
  char why[128];
  int64_t t0 = rlock__now_us();
  int rc =
      rlock__resolve("nosuch.invalid", 6379, rlock__deadline_after_ms(1000),
                     &res, why, sizeof why);
  assert_null(res);
  if (rc == RLOCK_EIO)
    assert_non_null(strstr(why, "name did not resolve ("));
  else if (rc == RLOCK_ETIMEOUT) /* no DNS server answering at all */
    assert_string_equal(why, "name lookup did not finish in time");
  else
    fail_msg("rc %d: %s", rc, why);
  assert_true(rlock__now_us() - t0 < 1000 * 1000 + 500 * 1000);
}

/* With the deadline already past, the caller gives up at once and the
 * lookup thread frees what it shares with the caller when it finishes
 * (ASan/valgrind check that nothing leaks or is touched after free). */
static void test_lookup_given_up(void **state) {
  (void)state;
  int timeouts = 0;
  for (int i = 0; i < 50; i++) {
    struct addrinfo *res;
    char why[128];
    int rc = rlock__resolve("localhost", 6379, rlock__now_us(), &res, why,
                            sizeof why);
    if (rc == RLOCK_OK) {
      freeaddrinfo(res);
      continue;
    }
    assert_int_equal(rc, RLOCK_ETIMEOUT);
    assert_null(res);
    assert_string_equal(why, "name lookup did not finish in time");
    timeouts++;
  }
  /* valgrind runs one thread at a time: the lookup thread may finish
   * before the caller looks at its deadline, every time. */
  if (!rt_on_valgrind())
    assert_true(timeouts > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_numeric_addresses),
      cmocka_unit_test(test_name),
      cmocka_unit_test(test_name_that_does_not_resolve),
      cmocka_unit_test(test_lookup_given_up),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  rt_lookups_drain(); /* lookups given up on run on */
  return failed;
}
