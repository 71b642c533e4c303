/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: topology URLs (redis-cluster://, redis-sentinel://) and the
 * Redis Cluster hash slot of a key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "rlock/errors.h"
#include "slot.h"
#include "target.h"

static rlock__target parse_ok(const char *url) {
  rlock__target t;
  int rc = rlock__target_parse(&t, url);
  if (rc != RLOCK_OK)
    fail_msg("parsing '%s' failed: %s", url, rlock_error_last()->message);
  return t;
}

static void expect_invalid(const char *url, const char *needle) {
  rlock__target t;
  int rc = rlock__target_parse(&t, url);
  if (rc != RLOCK_EINVAL)
    fail_msg("'%s' parsed (%d), expected RLOCK_EINVAL", url, rc);
  assert_int_equal(t.n, 0);
  assert_null(t.addrs);
  if (strstr(rlock_error_last()->message, needle) == NULL)
    fail_msg("message for '%s' is '%s', expected it to mention '%s'", url,
             rlock_error_last()->message, needle);
}

static void test_single_server(void **state) {
  (void)state;
  rlock__target t = parse_ok("redis://:pw@127.0.0.1:7000/2");
  assert_int_equal(t.kind, RLOCK__TOPO_SINGLE);
  assert_int_equal(t.n, 1);
  assert_string_equal(t.addrs[0].host, "127.0.0.1");
  assert_string_equal(t.addrs[0].password, "pw");
  assert_int_equal(t.addrs[0].db, 2);
  assert_string_equal(rlock__target_kind_name(&t), "single");
  rlock__target_clear(&t);
}

static void test_cluster(void **state) {
  (void)state;
  rlock__target t =
      parse_ok("redis-cluster://"
               "app:s%40cret@127.0.0.1:7000,[::1]:7001,h3?pubsub=classic");
  assert_int_equal(t.kind, RLOCK__TOPO_CLUSTER);
  assert_int_equal(t.n, 3);
  assert_int_equal(t.pubsub, RLOCK__PUBSUB_CLASSIC);
  assert_string_equal(t.addrs[1].host, "::1");
  assert_int_equal(t.addrs[1].port, 7001);
  assert_string_equal(t.addrs[2].host, "h3");
  assert_int_equal(t.addrs[2].port, 6379);
  for (size_t i = 0; i < t.n; i++) { /* every seed logs in as the user */
    assert_string_equal(t.addrs[i].user, "app");
    assert_string_equal(t.addrs[i].password, "s@cret");
  }
  rlock__endpoint node;
  assert_int_equal(rlock__target_node(&t, "10.0.0.9", 7005, &node), RLOCK_OK);
  assert_string_equal(node.host, "10.0.0.9");
  assert_int_equal(node.port, 7005);
  assert_string_equal(node.user, "app");
  assert_string_equal(node.password, "s@cret");
  rlock__endpoint_clear(&node);

  rlock__target copy;
  assert_int_equal(rlock__target_copy(&copy, &t), RLOCK_OK);
  rlock__target_clear(&t);
  assert_string_equal(copy.addrs[2].host, "h3");
  assert_string_equal(copy.data.password, "s@cret");
  rlock__target_clear(&copy);

  t = parse_ok("redis-cluster://127.0.0.1:7000");
  assert_int_equal(t.pubsub, RLOCK__PUBSUB_AUTO);
  assert_null(t.addrs[0].password);
  rlock__target_clear(&t);
  t = parse_ok("redis-cluster://h:1?pubsub=sharded");
  assert_int_equal(t.pubsub, RLOCK__PUBSUB_SHARDED);
  rlock__target_clear(&t);
}

static void test_sentinel(void **state) {
  (void)state;
  rlock__target t =
      parse_ok("redis-sentinel://:datapw@s1,s2:26380/3"
               "?sentinel_user=mon&sentinel_password=sp#my%20master");
  assert_int_equal(t.kind, RLOCK__TOPO_SENTINEL);
  assert_string_equal(t.master, "my master");
  assert_int_equal(t.n, 2);
  assert_int_equal(t.addrs[0].port, 26379); /* the sentinel default */
  assert_int_equal(t.addrs[1].port, 26380);
  /* Sentinels log in with their own credentials, data nodes with the
   * URL's. */
  assert_string_equal(t.addrs[0].user, "mon");
  assert_string_equal(t.addrs[0].password, "sp");
  assert_null(t.data.user);
  assert_string_equal(t.data.password, "datapw");
  assert_int_equal(t.data.db, 3);
  rlock__endpoint node;
  assert_int_equal(rlock__target_node(&t, "10.0.0.1", 6379, &node), RLOCK_OK);
  assert_string_equal(node.password, "datapw");
  assert_int_equal(node.db, 3);
  rlock__endpoint_clear(&node);
  rlock__target_clear(&t);

  t = parse_ok("redis-sentinel://127.0.0.1#mymaster");
  assert_null(t.addrs[0].password);
  assert_null(t.data.password);
  rlock__target_clear(&t);
}

/* TLS: the scheme says who speaks it; parameters carry the files. */
static void test_tls(void **state) {
  (void)state;
  rlock__target t = parse_ok("rediss://u:p@h:6380/2?tls_ca=%2Fca.pem&"
                             "tls_server_name=redis.internal&tls_insecure=no");
  assert_int_equal(t.kind, RLOCK__TOPO_SINGLE);
  assert_int_equal(t.addrs[0].tls, 1);
  assert_int_equal(t.addrs[0].port, 6380);
  assert_int_equal(t.addrs[0].db, 2);
  assert_string_equal(t.addrs[0].password, "p");
  assert_string_equal(t.tls.ca_file, "/ca.pem");
  assert_string_equal(t.tls.server_name, "redis.internal");
  assert_int_equal(t.tls.insecure, 0);
  rlock__target_clear(&t);
  t = parse_ok("redis://h:1");
  assert_int_equal(t.addrs[0].tls, 0);
  rlock__target_clear(&t);
  t = parse_ok("rediss-cluster://a:1,b:2?tls_cert=c.pem&tls_key=k.pem");
  assert_int_equal(t.addrs[0].tls && t.addrs[1].tls && t.data.tls, 1);
  assert_string_equal(t.tls.cert_file, "c.pem");
  rlock__target_clear(&t);
  /* Sentinels in plain text, the data nodes over TLS, and the reverse. */
  t = parse_ok("rediss-sentinel://s1,s2?sentinel_tls=no#m");
  assert_int_equal(t.addrs[0].tls + t.addrs[1].tls, 0);
  assert_int_equal(t.data.tls, 1);
  rlock__target_clear(&t);
  t = parse_ok("redis-sentinel://s1?sentinel_tls=yes&tls_insecure=1#m");
  assert_int_equal(t.addrs[0].tls, 1);
  assert_int_equal(t.data.tls, 0);
  assert_int_equal(t.tls.insecure, 1);
  rlock__target_clear(&t);
}

static void test_invalid(void **state) {
  (void)state;
  expect_invalid("redis-sentinel://s1,s2", "#MASTER");
  expect_invalid("redis-sentinel://s1#", "#MASTER");
  expect_invalid("redis-cluster://h:1#m", "fragment");
  expect_invalid("redis-cluster://h:1/2", "only database 0");
  expect_invalid("redis-cluster://h:1?pubsub=loud", "auto, classic or sharded");
  expect_invalid("redis-cluster://h:1?sentinel_password=x", "not known");
  expect_invalid("redis-sentinel://s?pubsub=classic#m", "not known");
  expect_invalid("redis-cluster://h:1?pubsub", "key=value");
  expect_invalid("redis-cluster://h:1,,h:2", "no host");
  expect_invalid("redis-cluster://h:99999", "port");
  expect_invalid("redis-cluster://", "no host");
  expect_invalid("redis-cluster://user@h:1", "missing ':'");
  /* Found by fuzz_url (fuzz/corpus/url/crash_sentinel_user_without_password):
   * a sentinel user without a password was accepted and then dropped
   * without a word (AUTH needs the password). A password alone is AUTH
   * with the password only. */
  expect_invalid("redis-sentinel://s1?sentinel_user=mon#m",
                 "sentinel_password");
  rlock__target t = parse_ok("redis-sentinel://s1?sentinel_password=sp#m");
  assert_null(t.addrs[0].user);
  assert_string_equal(t.addrs[0].password, "sp");
  rlock__target_clear(&t);
  expect_invalid("rediss:/h", "must start with");
  expect_invalid("redis://h?tls_ca=/x", "speaks no TLS");
  expect_invalid("redis-cluster://h:1?tls_insecure=yes", "speaks no TLS");
  expect_invalid("rediss://h?tls_insecure=maybe",
                 "must be yes, no, 1, 0, true or false (got 'maybe')");
  expect_invalid("rediss://h?tls_ca=", "tls_ca");
  expect_invalid("rediss://h?pubsub=classic", "not known");
  expect_invalid("rediss-cluster://h:1?sentinel_tls=no", "not known");
  char many[1024] = "redis-cluster://";
  for (int i = 0; i < RLOCK__TARGET_MAX_HOSTS + 1; i++)
    strcat(many, i ? ",h:1" : "h:1");
  expect_invalid(many, "more than");
}

/* Reference values from Redis's CLUSTER KEYSLOT. */
static void test_slots(void **state) {
  (void)state;
  static const struct {
    const char *key;
    unsigned slot;
  } cases[] = {
      {"foo", 12182},
      {"bar", 5061},
      {"", 0},
      {"{user1000}.following", 3443},
      {"{user1000}.followers", 3443},
      {"foo{}{bar}", 8363},
      {"foo{{bar}}zap", 4015},
      {"foo{bar}{zap}", 5061},
      {"{}", 15257},
      {"123456789", 12739},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    unsigned got = rlock__slot(cases[i].key, strlen(cases[i].key));
    if (got != cases[i].slot)
      fail_msg("slot of '%s' is %u, expected %u", cases[i].key, got,
               cases[i].slot);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_single_server), cmocka_unit_test(test_cluster),
      cmocka_unit_test(test_sentinel),      cmocka_unit_test(test_tls),
      cmocka_unit_test(test_invalid),       cmocka_unit_test(test_slots),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
