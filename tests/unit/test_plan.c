/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: the decisions of one acquisition (kinds/plan.h), which both
 * drivers carry out: the reads that settle an attempt lost in flight and
 * the outage's pauses after them, what a read's answer says, and a spin
 * lock's pauses. No server: each step only returns when to act next. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "cmd.h"
#include "common.h"
#include "lock_int.h"
#include "plan.h"

/* A client as far as the plan reads one: its timeouts and retry bound. */
static void client_cfg(rlock_client *c) {
  memset(c, 0, sizeof *c);
  c->cfg.connect_timeout_ms = 1000;
  c->cfg.command_timeout_ms = 1000;
  c->cfg.unreachable_retry_ms = RLOCK_RETRY_FOREVER;
}

/* `until` is `ms` from `from` (monotonic us), within a scheduling slack. */
static void expect_pause(int64_t from, int64_t until, int64_t ms) {
  int64_t got = until - from;
  if (got < ms * 1000 || got > ms * 1000 + 50000)
    fail_msg("pause of %lld us, expected %lld ms", (long long)got,
             (long long)ms);
}

/* A wait of a minute on client `c` settling an attempt lost in flight;
 * `read` a settling read, zeroed. */
static void settling(rlock_client *c, rlock__plan *p, rlock__call *read) {
  client_cfg(c);
  rlock__plan_init(p, 60000);
  rlock__plan_settle_begin(p, c);
  memset(read, 0, sizeof *read);
}

/* After the reads that settle a lost attempt have backed off, a wait
 * rides out its outage from the first pause (25 ms, doubling), not from
 * where the reads' pauses had got to: the two back-offs are kept apart. */
static void test_ride_out_after_settle_starts_at_first_pause(void **state) {
  (void)state;
  rlock_client c;
  rlock__plan p;
  rlock__call read;
  settling(&c, &p, &read);
  read.transient = 1; /* a read that may pass: read again */
  int64_t want = 25;
  for (int i = 0; i < 5; i++, want *= 2) {
    int64_t now = rlock__now_us();
    expect_pause(now, rlock__plan_settle_again(&p, &read, RLOCK_EIO), want);
  }
  int64_t now = rlock__now_us();
  expect_pause(now, rlock__plan_ride_out(&p, &c, 1), RLOCK__OUTAGE_FIRST_MS);
  now = rlock__now_us();
  expect_pause(now, rlock__plan_ride_out(&p, &c, 1),
               2 * RLOCK__OUTAGE_FIRST_MS);
}

/* A read that cannot pass (a refusal) ends the settling at once. */
static void test_settle_stops_on_a_refused_read(void **state) {
  (void)state;
  rlock_client c;
  rlock__plan p;
  rlock__call read;
  settling(&c, &p, &read); /* the read: not transient, not in flight */
  assert_int_equal(rlock__plan_settle_again(&p, &read, RLOCK_EPROTO), 0);
}

/* One more level than recorded: taken; as many: not; anything else
 * cannot be told, and the failure stands. */
static void test_settled(void **state) {
  (void)state;
  assert_int_equal(rlock__plan_settled(0, 1), RLOCK__SETTLED_TAKEN);
  assert_int_equal(rlock__plan_settled(2, 3), RLOCK__SETTLED_TAKEN);
  assert_int_equal(rlock__plan_settled(0, 0), RLOCK__SETTLED_UNTAKEN);
  assert_int_equal(rlock__plan_settled(2, 2), RLOCK__SETTLED_UNTAKEN);
  assert_int_equal(rlock__plan_settled(0, 2), RLOCK__SETTLED_UNKNOWN);
  assert_int_equal(rlock__plan_settled(1, 0), RLOCK__SETTLED_UNKNOWN);
}

/* A spin lock's pauses: its first, then each grown from the last
 * (exponential, no jitter here: 1, 2, 4, 8, then 8 ms). */
static void test_spin_pauses(void **state) {
  (void)state;
  rlock__spin s = {.backoff = RLOCK_SPIN_EXPONENTIAL,
                   .initial_ms = 1,
                   .max_ms = 8,
                   .multiplier = 2.0,
                   .jitter = 0};
  rlock__plan p;
  rlock__plan_init(&p, 60000);
  const int64_t want[] = {1, 2, 4, 8, 8};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    int64_t now = rlock__now_us();
    expect_pause(now, rlock__plan_spin(&p, &s), want[i]);
  }
}

/* A spin pause never goes past the wait. */
static void test_spin_within_the_wait(void **state) {
  (void)state;
  rlock__spin s = {.backoff = RLOCK_SPIN_CONSTANT, .delay_ms = 5000};
  rlock__plan p;
  rlock__plan_init(&p, 10);
  assert_true(rlock__plan_spin(&p, &s) <= p.deadline_us);
}

/* A wait past its end gives up without attempting, for a kind whose
 * attempt writes; a latch still looks (it only reads), and neither a
 * single try nor a wait for ever has an end to pass. */
static void test_wait_ended(void **state) {
  (void)state;
  rlock__kind writes = {.label = "lock"},
              reads = {.label = "latch", .reads = 1};
  char x[] = "x";
  rlock_lock l = {.kind = &writes, .name = x};
  rlock__plan p;
  rlock__plan_init(&p, 60000);
  assert_false(rlock__plan_wait_ended(&p, &l));
  p.deadline_us = rlock__now_us(); /* the wait's end has come */
  assert_true(rlock__plan_wait_ended(&p, &l));
  l.kind = &reads;
  assert_false(rlock__plan_wait_ended(&p, &l));
  l.kind = &writes;
  rlock__plan_init(&p, 0);
  assert_false(rlock__plan_wait_ended(&p, &l));
  rlock__plan_init(&p, RLOCK_WAIT_FOREVER);
  assert_false(rlock__plan_wait_ended(&p, &l));
}

/* A MultiLock whose wait has ended takes no further member (not even one
 * try with no wait left): RLOCK_ELOCKED naming it. Within the wait, with
 * wait 0 (one try each) or for ever, it goes on. */
static void test_multi_in_time(void **state) {
  (void)state;
  rlock__kind k = {.label = "lock"};
  char na[] = "a", nb[] = "b";
  rlock_lock a = {.kind = &k, .name = na}, b = {.kind = &k, .name = nb};
  rlock_multilock *m = malloc(sizeof *m + 2 * sizeof m->members[0]);
  assert_non_null(m);
  m->n = 2;
  m->members[0] = &a;
  m->members[1] = &b;
  int64_t now = rlock__now_us();
  assert_int_equal(rlock__multi_in_time(m, 1, 300, now + 100000), RLOCK_OK);
  assert_int_equal(rlock__multi_in_time(m, 1, 300, now), RLOCK_ELOCKED);
  assert_non_null(strstr(rlock_error_last()->message, "member 1 (lock 'b')"));
  assert_int_equal(rlock__multi_in_time(m, 1, 0, now), RLOCK_OK);
  assert_int_equal(rlock__multi_in_time(m, 1, RLOCK_WAIT_FOREVER, INT64_MAX),
                   RLOCK_OK);
  free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ride_out_after_settle_starts_at_first_pause),
      cmocka_unit_test(test_settle_stops_on_a_refused_read),
      cmocka_unit_test(test_settled),
      cmocka_unit_test(test_spin_pauses),
      cmocka_unit_test(test_spin_within_the_wait),
      cmocka_unit_test(test_wait_ended),
      cmocka_unit_test(test_multi_in_time)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
