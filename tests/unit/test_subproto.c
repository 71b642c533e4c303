/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: rlock__push_messages_len (subproto.h), which decides how many
 * bytes at a subscriber socket's head a waiting thread may drop unparsed.
 * It must count only whole (s)message pushes, and stop at anything else:
 * dropping a confirmation, a PONG or half a push would desynchronize the
 * background thread's reader. And rlock__message_wakes, what a message
 * wakes by its channel's kind, for both subscribers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "subproto.h"

static const char ONE[] = "*3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$1\r\n0\r\n";
static const char SHARDED[] =
    ">3\r\n$8\r\nsmessage\r\n$4\r\nchan\r\n$1\r\n1\r\n";
static const char SUBSCRIBED[] =
    "*3\r\n$9\r\nsubscribe\r\n$4\r\nchan\r\n:1\r\n";
static const char PONG[] = "*2\r\n$4\r\npong\r\n$0\r\n\r\n";

static size_t len_of(const char *s) {
  return rlock__push_messages_len(s, strlen(s));
}

static void whole_messages(void **state) {
  (void)state;
  char buf[256];
  assert_int_equal(len_of(ONE), strlen(ONE));
  assert_int_equal(len_of(SHARDED), strlen(SHARDED));
  snprintf(buf, sizeof buf, "%s%s%s", ONE, SHARDED, ONE);
  assert_int_equal(len_of(buf), 2 * strlen(ONE) + strlen(SHARDED));
  /* A payload may hold anything, CR LF and '*' included. */
  static const char odd[] =
      "*3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$5\r\n*3\r\n$\r\n";
  assert_int_equal(len_of(odd), strlen(odd));
}

static void stops_at_anything_else(void **state) {
  (void)state;
  char buf[256];
  assert_int_equal(len_of(""), 0);
  assert_int_equal(len_of(SUBSCRIBED), 0);
  assert_int_equal(len_of(PONG), 0);
  snprintf(buf, sizeof buf, "%s%s%s", ONE, SUBSCRIBED, ONE);
  assert_int_equal(len_of(buf), strlen(ONE));
  snprintf(buf, sizeof buf, "%s%s", ONE, PONG);
  assert_int_equal(len_of(buf), strlen(ONE));
  /* Four elements, a pattern message, a null payload, a bad length. */
  assert_int_equal(len_of("*4\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\n0\r\n"
                          "$1\r\n0\r\n"),
                   0);
  assert_int_equal(len_of("*3\r\n$8\r\npmessage\r\n$1\r\nc\r\n$1\r\n0\r\n"), 0);
  assert_int_equal(len_of("*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$-1\r\n"), 0);
  assert_int_equal(len_of("*3\r\n$7\r\nmessage\r\n$x\r\nc\r\n$1\r\n0\r\n"), 0);
  assert_int_equal(
      len_of("*3\r\n$7\r\nmessage\r\n$9999999999\r\nc\r\n$1\r\n0\r\n"), 0);
}

static void stops_at_a_cut(void **state) {
  (void)state;
  char buf[256];
  snprintf(buf, sizeof buf, "%s%s", ONE, ONE);
  size_t whole = strlen(buf);
  /* Every cut inside the second push keeps just the first. */
  for (size_t n = strlen(ONE); n < whole; n++)
    assert_int_equal(rlock__push_messages_len(buf, n), strlen(ONE));
  for (size_t n = 0; n < strlen(ONE); n++)
    assert_int_equal(rlock__push_messages_len(buf, n), 0);
  /* A bulk whose CR LF is not where its length says. */
  assert_int_equal(len_of("*3\r\n$7\r\nmessage\r\n$3\r\nchan\r\n$1\r\n0\r\n"),
                   0);
  static const char two[] = "*3\r\n$7\r\nmessage\r\n$2\r\nab\r\n$1\r\n0\r\n";
  assert_int_equal(len_of(two), strlen(two));
}

static int64_t wakes(const char *channel, const char *payload) {
  return rlock__message_wakes(channel, strlen(channel), payload);
}

/* Redisson's pub/sub classes: LockPubSub ("0" one, "1" all),
 * SemaphorePubSub (the number published), CountDownLatchPubSub (every
 * waiter looks again). */
static void message_wakes(void **state) {
  (void)state;
  assert_int_equal(wakes("redisson_lock__channel:{a}", "0"), 1);
  assert_int_equal(wakes("redisson_rwlock:{a}", "1"), RLOCK__WAKE_ALL);
  assert_int_equal(wakes("redisson_lock__channel:{a}:x:1", "0"), 1);
  assert_int_equal(wakes("redisson_sc:{a}", "3"), 3);
  assert_int_equal(wakes("redisson_sc:{a}", "0"), 0);
  assert_int_equal(wakes("redisson_sc:{a}", "-2"), 0);
  assert_int_equal(wakes("redisson_sc:{a}", "x"), 0);
  assert_int_equal(wakes("redisson_countdownlatch__channel__{a}", "0"),
                   RLOCK__WAKE_ALL);
  assert_int_equal(wakes("redisson_countdownlatch__channel__{a}", "1"),
                   RLOCK__WAKE_ALL);
  /* the channel's length is what counts, not a NUL */
  assert_int_equal(rlock__message_wakes("redisson_sc:{a}", 8, "5"), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(whole_messages),
      cmocka_unit_test(stops_at_anything_else),
      cmocka_unit_test(stops_at_a_cut),
      cmocka_unit_test(message_wakes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
