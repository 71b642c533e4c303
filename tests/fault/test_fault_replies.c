/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault cases a real server does not produce on demand, played by the
 * scripted fake server: truncated, late, garbage and unexpected replies,
 * NOSCRIPT, and connections the server closed while idle. Each must give
 * a clear status, never a crash or a hang, and the client must recover. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "fault.h"
#include "rlock.h"
#include "rt_fake.h"
#include "rt_util.h"

/* Commands time out after 300 ms. */
static rlock_client *client_for(rt_fake *f) { return fake_client(f, 300, 0); }

static void test_truncated_reply_then_close(void **state) {
  (void)state;
  static const rt_fake_step s[] = {
      {RT_ACCEPT}, {RT_EXPECT, "PING"}, {RT_SEND, "$10\r\nabc"}, {RT_CLOSE},
      {RT_ACCEPT}, {RT_EXPECT, "PING"}, {RT_SEND, "+PONG\r\n"},  {RT_END}};
  rt_fake *f = rt_fake_start(s);
  rlock_client *c = client_for(f);
  expect_rc(rlock_client_ping(c, NULL), RLOCK_EIO, "closed");
  expect_rc(rlock_client_ping(c, NULL), RLOCK_OK, NULL); /* fresh conn */
  finish(f, c);
}

static void test_late_reply_times_out(void **state) {
  (void)state;
  static const rt_fake_step s[] = {{RT_ACCEPT},
                                   {RT_EXPECT, "PING"},
                                   {RT_SLEEP, NULL, 800},
                                   {RT_SEND, "+PONG\r\n"},
                                   {RT_ACCEPT},
                                   {RT_EXPECT, "PING"},
                                   {RT_SEND, "+PONG\r\n"},
                                   {RT_END}};
  rt_fake *f = rt_fake_start(s);
  rlock_client *c = client_for(f);
  int64_t t0 = rt_now_ms();
  expect_rc(rlock_client_ping(c, NULL), RLOCK_ETIMEOUT, "in time");
  int64_t took = rt_now_ms() - t0;
  if (took < 250 || took > 1500)
    fail_msg("timeout after %lld ms, expected about 300", (long long)took);
  /* The late PONG (sent now: the fake has come to its next ACCEPT) must
   * not be read as the next command's answer: the timed-out connection was
   * discarded. */
  wait_step(f, 4);
  expect_rc(rlock_client_ping(c, NULL), RLOCK_OK, NULL);
  finish(f, c);
}

static void test_garbage_reply(void **state) {
  (void)state;
  static const rt_fake_step s[] = {
      {RT_ACCEPT}, {RT_EXPECT, "PING"}, {RT_SEND, "!bogus\r\n"}, {RT_END}};
  rt_fake *f = rt_fake_start(s);
  rlock_client *c = client_for(f);
  expect_rc(rlock_client_ping(c, NULL), RLOCK_EPROTO, "bad reply");
  finish(f, c);
}

static void test_noscript_falls_back_to_eval(void **state) {
  (void)state;
  static const rt_fake_step s[] = {
      {RT_ACCEPT},
      {RT_EXPECT, "EVALSHA"},
      {RT_SEND, "-NOSCRIPT No matching script.\r\n"},
      {RT_EXPECT, "EVAL"},
      {RT_SEND, "$-1\r\n"}, /* nil: acquired */
      {RT_EXPECT, "EVALSHA"},
      {RT_SEND, ":1\r\n"}, /* released */
      {RT_END}};
  fake_lock k;
  fake_lock_start(&k, s, 300, 0, "fault:noscript");
  expect_rc(rlock_lock_try_acquire(k.l, 0, 5000), RLOCK_OK, NULL);
  expect_rc(rlock_lock_release(k.l), RLOCK_OK, NULL);
  fake_lock_end(&k);
}

static void test_error_replies_are_mapped(void **state) {
  (void)state;
  static const rt_fake_step s[] = {
      {RT_ACCEPT},
      {RT_EXPECT, "EVALSHA"},
      {RT_SEND, "-READONLY You can't write against a read only replica.\r\n"},
      {RT_EXPECT, "EVALSHA"},
      {RT_SEND, "-NOAUTH Authentication required.\r\n"},
      {RT_EXPECT, "EVALSHA"},
      {RT_SEND, "+OK\r\n"}, /* not nil, not int */
      {RT_END}};
  fake_lock k;
  fake_lock_start(&k, s, 300, 0, "fault:errors");
  expect_rc(rlock_lock_try_acquire(k.l, 0, 5000), RLOCK_ESERVER, "READONLY");
  expect_rc(rlock_lock_try_acquire(k.l, 0, 5000), RLOCK_EAUTH, "NOAUTH");
  expect_rc(rlock_lock_try_acquire(k.l, 0, 5000), RLOCK_EPROTO, "reply type");
  fake_lock_end(&k);
}

static void test_server_closed_idle_connection(void **state) {
  (void)state;
  static const rt_fake_step s[] = {
      {RT_ACCEPT}, {RT_EXPECT, "PING"}, {RT_SEND, "+PONG\r\n"}, {RT_CLOSE},
      {RT_ACCEPT}, {RT_EXPECT, "PING"}, {RT_SEND, "+PONG\r\n"}, {RT_END}};
  rt_fake *f = rt_fake_start(s);
  rlock_client *c = client_for(f);
  expect_rc(rlock_client_ping(c, NULL), RLOCK_OK, NULL);
  wait_step(f, 4); /* closed (the fake waits for the next connection): the
                      close reaches us while the connection idles */
  /* Detected at checkout: nothing is sent into the dead socket. */
  expect_rc(rlock_client_ping(c, NULL), RLOCK_OK, NULL);
  finish(f, c);
}

/* RESP for a SUBSCRIBE confirmation of `channel`. */
static const char *confirm(char *buf, size_t size, const char *channel) {
  snprintf(buf, size, "*3\r\n$9\r\nsubscribe\r\n$%zu\r\n%s\r\n:1\r\n",
           strlen(channel), channel);
  return buf;
}

static void test_silent_subscriber_is_replaced(void **state) {
  (void)state;
  char ok[128];
  confirm(ok, sizeof ok, "redisson_lock__channel:{fault:silent}");
  /* The fake talks on its newest connection only, so the first command
   * connection is closed: the retry comes on a new one. */
  const rt_fake_step s[] = {{RT_ACCEPT},
                            {RT_EXPECT, "EVALSHA"},
                            {RT_SEND, ":60000\r\n"},
                            {RT_CLOSE},
                            {RT_ACCEPT},
                            {RT_EXPECT, "SUBSCRIBE"}, /* ... and silence */
                            {RT_ACCEPT},
                            {RT_EXPECT, "SUBSCRIBE"},
                            {RT_SEND, ok},
                            {RT_ACCEPT},
                            {RT_EXPECT, "EVALSHA"},
                            {RT_SEND, "$-1\r\n"}, /* got it */
                            {RT_END}};
  fake_lock k;
  fake_lock_start(&k, s, 300, 500, "fault:silent");
  int64_t t0 = rt_now_ms();
  expect_rc(rlock_lock_try_acquire(k.l, 5000, 10000), RLOCK_OK, NULL);
  int64_t took = rt_now_ms() - t0;
  if (took < 250 || took > rt_scaled_ms(2000))
    fail_msg("acquired after %lld ms; the silent subscriber should have "
             "been replaced after about 300",
             (long long)took);
  fake_lock_end(&k);
}

static void test_subscribe_refused(void **state) {
  (void)state;
  static const rt_fake_step s[] = {
      {RT_ACCEPT},
      {RT_EXPECT, "EVALSHA"},
      {RT_SEND, ":60000\r\n"},
      {RT_ACCEPT},
      {RT_EXPECT, "SUBSCRIBE"},
      {RT_SEND, "-NOPERM this user has no permissions to access one of the "
                "channels used as arguments\r\n"},
      {RT_END}};
  fake_lock k;
  fake_lock_start(&k, s, 300, 0, "fault:acl");
  expect_rc(rlock_lock_try_acquire(k.l, 3000, 0), RLOCK_EAUTH, "NOPERM");
  fake_lock_end(&k);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_truncated_reply_then_close),
      cmocka_unit_test(test_late_reply_times_out),
      cmocka_unit_test(test_garbage_reply),
      cmocka_unit_test(test_noscript_falls_back_to_eval),
      cmocka_unit_test(test_error_replies_are_mapped),
      cmocka_unit_test(test_server_closed_idle_connection),
      cmocka_unit_test(test_silent_subscriber_is_replaced),
      cmocka_unit_test(test_subscribe_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
