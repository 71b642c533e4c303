/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_fake_selfcheck.c - self-test of tests/support/rt_fake, the scripted
 * fake server, driven by a raw hiredis client.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <hiredis/hiredis.h>

#include "rt_fake.h"
#include "rt_util.h"

static redisContext *connect_fake(const rt_fake *f) {
  redisContext *c = redisConnectWithTimeout("127.0.0.1", rt_fake_port(f),
                                            (struct timeval){2, 0});
  assert_non_null(c);
  assert_int_equal(c->err, 0);
  /* A hung fake must not hang the test. */
  assert_int_equal(redisSetTimeout(c, (struct timeval){5, 0}), REDIS_OK);
  return c;
}

static void assert_wait_ok(rt_fake *f) {
  if (rt_fake_wait(f, 5000) != 0)
    fail_msg("rt_fake_wait: %s", rt_fake_error(f));
}

/* PING on `c` is answered PONG (a status reply). */
static void expect_pong(redisContext *c) {
  redisReply *r = redisCommand(c, "PING");
  assert_non_null(r);
  assert_int_equal(r->type, REDIS_REPLY_STATUS);
  assert_string_equal(r->str, "PONG");
  freeReplyObject(r);
}

static void test_ping_pong(void **state) {
  (void)state;
  static const rt_fake_step script[] = {
      RT_STEP_ACCEPT(),
      RT_STEP_EXPECT("ping"), /* case-insensitive */
      RT_STEP_SEND("+PONG\r\n"),
      RT_STEP_END(),
  };
  rt_fake *f = rt_fake_start(script);
  char url[64];
  snprintf(url, sizeof url, "redis://127.0.0.1:%d", rt_fake_port(f));
  assert_string_equal(rt_fake_url(f), url);

  redisContext *c = connect_fake(f);
  expect_pong(c);
  assert_wait_ok(f);
  assert_string_equal(rt_fake_error(f), "");
  redisFree(c);
  rt_fake_free(f);
}

static void test_truncated_reply_then_close(void **state) {
  (void)state;
  static const rt_fake_step script[] = {
      RT_STEP_ACCEPT(), RT_STEP_EXPECT("GET"), RT_STEP_SEND("$10\r\nabc"),
      RT_STEP_CLOSE(),  RT_STEP_END(),
  };
  rt_fake *f = rt_fake_start(script);
  redisContext *c = connect_fake(f);
  redisReply *r = redisCommand(c, "GET %s", "key");
  assert_null(r);
  assert_int_equal(c->err, REDIS_ERR_EOF);
  assert_wait_ok(f);
  redisFree(c);
  rt_fake_free(f);
}

static void test_expect_mismatch_is_reported(void **state) {
  (void)state;
  static const rt_fake_step script[] = {
      RT_STEP_ACCEPT(),
      RT_STEP_EXPECT("EVALSHA"),
      RT_STEP_SEND(
          "+OK\r\n"), /* still sent: a mismatch does not stop the script */
      RT_STEP_END(),
  };
  rt_fake *f = rt_fake_start(script);
  redisContext *c = connect_fake(f);
  redisReply *r = redisCommand(c, "SET k v");
  assert_non_null(r);
  assert_string_equal(r->str, "OK");
  freeReplyObject(r);

  assert_int_equal(rt_fake_wait(f, 5000), -1);
  const char *err = rt_fake_error(f);
  if (!strstr(err, "step 1") || !strstr(err, "EVALSHA") ||
      !strstr(err, "\"SET\""))
    fail_msg("unexpected error text: %s", err);
  redisFree(c);
  rt_fake_free(f);
}

static void test_wildcard_sleep_and_reconnect(void **state) {
  (void)state;
  static const rt_fake_step script[] = {
      RT_STEP_ACCEPT(),        RT_STEP_EXPECT("*"),       RT_STEP_SLEEP(200),
      RT_STEP_SEND(":42\r\n"), RT_STEP_CLOSE(),           RT_STEP_ACCEPT(),
      RT_STEP_EXPECT("PING"),  RT_STEP_SEND("+PONG\r\n"), RT_STEP_END(),
  };
  rt_fake *f = rt_fake_start(script);

  redisContext *c = connect_fake(f);
  int64_t t0 = rt_now_ms();
  redisReply *r = redisCommand(c, "ANYTHING %s", "goes");
  assert_non_null(r);
  assert_int_equal(r->type, REDIS_REPLY_INTEGER);
  assert_int_equal(r->integer, 42);
  assert_true(rt_now_ms() - t0 >= 190);
  freeReplyObject(r);
  assert_null(redisCommand(c, "PING")); /* closed */
  redisFree(c);

  c = connect_fake(f);
  expect_pong(c);
  assert_wait_ok(f);
  redisFree(c);
  rt_fake_free(f);
}

static void test_client_close_while_expecting(void **state) {
  (void)state;
  static const rt_fake_step script[] = {
      RT_STEP_ACCEPT(),
      RT_STEP_EXPECT("PING"),
      RT_STEP_END(),
  };
  rt_fake *f = rt_fake_start(script);
  redisFree(connect_fake(f));
  assert_int_equal(rt_fake_wait(f, 5000), -1);
  assert_non_null(strstr(rt_fake_error(f), "closed"));
  rt_fake_free(f);
}

static void test_timeout_is_not_sticky(void **state) {
  (void)state;
  static const rt_fake_step script[] = {
      RT_STEP_ACCEPT(),
      RT_STEP_END(),
  };
  rt_fake *f = rt_fake_start(script);
  assert_int_equal(rt_fake_wait(f, 50), -1);
  assert_non_null(strstr(rt_fake_error(f), "timed out"));
  redisContext *c = connect_fake(f);
  assert_wait_ok(f);
  redisFree(c);
  rt_fake_free(f);
}

/* rt_fake_wait_step() returns once the steps before the one named ran, and
   says so when the script ended first. */
static void test_wait_step(void **state) {
  (void)state;
  static const rt_fake_step script[] = {
      RT_STEP_ACCEPT(), RT_STEP_EXPECT("PING"), RT_STEP_SEND("+PONG\r\n"),
      RT_STEP_CLOSE(),  RT_STEP_ACCEPT(),       RT_STEP_END(),
  };
  rt_fake *f = rt_fake_start(script);
  assert_int_equal(rt_fake_wait_step(f, 0, 5000), 0); /* at the start */
  assert_int_equal(rt_fake_wait_step(f, 1, 50), -1);  /* nobody connected */
  assert_non_null(strstr(rt_fake_error(f), "timed out after 50 ms in step 0"));
  redisContext *c = connect_fake(f);
  redisReply *r = redisCommand(c, "PING");
  assert_non_null(r);
  freeReplyObject(r);
  assert_int_equal(rt_fake_wait_step(f, 4, 5000), 0); /* closed, accepting */
  redisContext *c2 = connect_fake(f);
  assert_wait_ok(f);
  assert_int_equal(rt_fake_wait_step(f, 5, 5000), -1);
  assert_non_null(strstr(rt_fake_error(f), "script ended"));
  redisFree(c);
  redisFree(c2);
  rt_fake_free(f);
}

/* 50 ms after `f` started (time for its thread to block), rt_fake_free()
 * returns within a second. */
static void free_promptly(rt_fake *f) {
  rt_sleep_ms(50);
  int64_t t0 = rt_now_ms();
  rt_fake_free(f);
  assert_true(rt_now_ms() - t0 < rt_scaled_ms(1000));
}

/* rt_fake_free() must not hang whatever the script thread waits for. */
static void test_free_is_prompt(void **state) {
  (void)state;
  static const rt_fake_step in_accept[] = {RT_STEP_ACCEPT(), RT_STEP_END()};
  static const rt_fake_step in_read[] = {RT_STEP_ACCEPT(),
                                         RT_STEP_EXPECT("PING"), RT_STEP_END()};
  static const rt_fake_step in_sleep[] = {RT_STEP_SLEEP(60000), RT_STEP_END()};

  /* The pauses (free_promptly) give the script thread time to get into its
     blocking call. No synchronisation: rt_fake_free() must be prompt
     wherever the thread is, so the outcome cannot depend on them; they
     only make the blocked case the likely one. */
  free_promptly(rt_fake_start(in_accept));
  rt_fake *f = rt_fake_start(in_read);
  redisContext *c = connect_fake(f); /* connected, sends nothing */
  free_promptly(f);
  redisFree(c);
  free_promptly(rt_fake_start(in_sleep));

  rt_fake_free(NULL);
}

/* The script is copied: the caller's array may go away. */
static void test_steps_are_copied(void **state) {
  (void)state;
  char pong[16];
  rt_fake_step script[] = {
      RT_STEP_ACCEPT(),
      RT_STEP_EXPECT("PING"),
      RT_STEP_SEND(pong),
      RT_STEP_END(),
  };
  snprintf(pong, sizeof pong, "+PONG\r\n");
  rt_fake *f = rt_fake_start(script);
  memset(pong, 'x', sizeof pong - 1);
  script[1].arg = "GET";

  redisContext *c = connect_fake(f);
  expect_pong(c);
  assert_wait_ok(f);
  redisFree(c);
  rt_fake_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ping_pong),
      cmocka_unit_test(test_truncated_reply_then_close),
      cmocka_unit_test(test_expect_mismatch_is_reported),
      cmocka_unit_test(test_wildcard_sleep_and_reconnect),
      cmocka_unit_test(test_client_close_while_expecting),
      cmocka_unit_test(test_timeout_is_not_sticky),
      cmocka_unit_test(test_wait_step),
      cmocka_unit_test(test_free_is_prompt),
      cmocka_unit_test(test_steps_are_copied),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
