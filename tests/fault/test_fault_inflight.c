/* SPDX-License-Identifier: BSD-3-Clause */
/* An acquisition attempt lost in flight: the server read it, then the
 * connection broke before the answer (a server killed, or failing over).
 * The attempt may have taken the lock; the client settles which by
 * reading its own owner's field, so it neither reports a lock it holds as
 * failed (it would stay held until its lease ran out, unrenewed) nor takes
 * one more level than it records. */
#include "fault.h"
#include "rt_util.h"

#include <poll.h>
#include <stdio.h>

/* The scripts' parts. The acquisition's attempt lost in flight: the
 * server reads it and closes without answering (a loop connection loads
 * its script first, SCRIPT LOAD pipelined before the EVALSHA). */
#define LOST_ATTEMPT                                                           \
  RT_STEP_ACCEPT(), RT_STEP_EXPECT("EVALSHA"), RT_STEP_CLOSE()
#define LOOP_LOST_ATTEMPT                                                      \
  RT_STEP_ACCEPT(), RT_STEP_EXPECT("SCRIPT"), RT_STEP_EXPECT("EVALSHA"),       \
      RT_STEP_CLOSE()
/* The read of the owner's field, on a new connection: lost in flight too,
 * or answered `reply` (ONE_LEVEL: the attempt's hold). */
#define READ_LOST RT_STEP_ACCEPT(), RT_STEP_EXPECT("HGET"), RT_STEP_CLOSE()
#define READ_ANSWERED(reply)                                                   \
  RT_STEP_ACCEPT(), RT_STEP_EXPECT("HGET"), RT_STEP_SEND(reply)
#define ONE_LEVEL "$1\r\n1\r\n"

/* Commands time out after 2 s. */
static rlock_client *client_for(rt_fake *f) { return fake_client(f, 2000, 0); }

/* A try-once acquisition plays `s` and ends with the lock taken and
 * recorded: one level, which its check confirms. */
static void expect_taken(const rt_fake_step *s) {
  fake_lock k;
  fake_lock_start(&k, s, 2000, 0, "inflight");
  expect_rc(rlock_lock_try_acquire(k.l, 0, 10000), RLOCK_OK, NULL);
  expect_rc(rlock_lock_check(k.l), RLOCK_OK, NULL);
  fake_lock_end(&k);
}

/* The read finds the field: the attempt took the lock. */
static void test_taken(void **state) {
  (void)state;
  static const rt_fake_step s[] = {LOST_ATTEMPT, READ_ANSWERED(ONE_LEVEL),
                                   RT_STEP_END()};
  expect_taken(s);
}

/* The read itself is lost in flight too (a second pooled connection the
 * dead master had reset): a read runs nothing, so it is read again, and
 * the answer settles it. */
static void test_read_lost_too(void **state) {
  (void)state;
  static const rt_fake_step s[] = {LOST_ATTEMPT, READ_LOST,
                                   READ_ANSWERED(ONE_LEVEL), RT_STEP_END()};
  expect_taken(s);
}

/* A waiting acquisition whose attempt is lost and whose reads find no
 * answer until its wait ends: the failure says how long it tried. */
static void test_unsettled_wait_says_how_long(void **state) {
  (void)state;
  static const rt_fake_step s[] = {LOST_ATTEMPT, RT_STEP_ACCEPT(),
                                   RT_STEP_EXPECT("HGET"), RT_STEP_END()};
  fake_lock k;
  fake_lock_start(&k, s, 2000, 0, "inflight");
  int rc = rlock_lock_try_acquire(k.l, 500, 10000);
  if (rc != RLOCK_EIO && rc != RLOCK_ETIMEOUT)
    fail_msg("got %d (%s)", rc, rlock_error_last()->message);
  expect_rc(RLOCK_EIO, RLOCK_EIO, "tried again for");
  fake_lock_end(&k);
}

/* A fenced lock's token is then the counter's value. */
static void test_taken_fenced(void **state) {
  (void)state;
  static const rt_fake_step s[] = {LOST_ATTEMPT, READ_ANSWERED(ONE_LEVEL),
                                   RT_STEP_EXPECT("GET"),
                                   RT_STEP_SEND("$2\r\n42\r\n"), RT_STEP_END()};
  rt_fake *f = rt_fake_start(s);
  rlock_client *c = client_for(f);
  rlock_lock *l;
  assert_int_equal(rlock_lock_new_fenced(&l, c, "inflight"), RLOCK_OK);
  int64_t token = 0;
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = 0;
  o.lease_ms = 10000;
  o.token = &token;
  expect_rc(rlock_lock_acquire_opts(l, &o), RLOCK_OK, NULL);
  assert_int_equal(token, 42);
  rlock_lock_free(l);
  finish(f, c);
}

/* The attempt of an acquisition waiting `wait_ms` is lost, then the read
 * answers `count`: the original failure stands and nothing is recorded. */
static void expect_untaken(const char *count, int64_t wait_ms) {
  const rt_fake_step s[] = {LOST_ATTEMPT, READ_ANSWERED(count), RT_STEP_END()};
  fake_lock k;
  fake_lock_start(&k, s, 2000, 0, "inflight");
  expect_rc(rlock_lock_try_acquire(k.l, wait_ms, 10000), RLOCK_EIO, "closed");
  expect_rc(rlock_lock_check(k.l), RLOCK_ENOTHELD, NULL);
  fake_lock_end(&k);
}

/* The field is absent: not taken; a try-once acquisition reports the
 * broken connection, as before. */
static void test_not_taken(void **state) {
  (void)state;
  expect_untaken("$-1\r\n", 0);
}

/* Two levels where the client recorded none cannot come from this
 * attempt. */
static void test_unexplained(void **state) {
  (void)state;
  expect_untaken("$1\r\n2\r\n", 0);
}

/* A waiting acquisition whose read is refused (an error answer: nothing
 * tells whether the attempt took the lock): the failure stands at once.
 * Attempting again could take one more level than the client records. */
static void test_unsettled_read_refused(void **state) {
  (void)state;
  expect_untaken("-ERR refused for the test\r\n", 3000);
}

/* ---- the same on an event-loop client ------------------------------------
 * A minimal adapter of the test's own over poll(): the adapter table is
 * public, and this is a third loop besides libuv and libevent. */

typedef struct mini {
  rlock_client *c;
  int fd[4], ev[4];
  int64_t timer_at_ms; /* -1: disarmed */
} mini;

static int mini_watch(void *data, int fd, int events) {
  mini *m = data;
  int free_slot = -1;
  for (int i = 0; i < 4; i++) {
    if (m->fd[i] == fd) {
      m->ev[i] = events;
      if (events == 0)
        m->fd[i] = -1;
      return 0;
    }
    if (m->fd[i] < 0 && free_slot < 0)
      free_slot = i;
  }
  if (events != 0 && free_slot >= 0) {
    m->fd[free_slot] = fd;
    m->ev[free_slot] = events;
  }
  return events == 0 || free_slot >= 0 ? 0 : -1;
}

static void mini_timer(void *data, int64_t after_ms) {
  mini *m = data;
  m->timer_at_ms = after_ms < 0 ? -1 : rt_now_ms() + after_ms;
}

static void mini_wake(void *data) { (void)data; }

/* One turn: poll the watched descriptors until the timer is due. */
static void mini_turn(mini *m) {
  struct pollfd p[4];
  int n = 0, map[4];
  for (int i = 0; i < 4; i++)
    if (m->fd[i] >= 0) {
      p[n] = (struct pollfd){
          m->fd[i],
          (short)(((m->ev[i] & RLOCK_LOOP_READ) ? POLLIN : 0) |
                  ((m->ev[i] & RLOCK_LOOP_WRITE) ? POLLOUT : 0)),
          0};
      map[n++] = i;
    }
  int64_t wait = m->timer_at_ms < 0 ? 100 : m->timer_at_ms - rt_now_ms();
  poll(p, (nfds_t)n, wait < 0 ? 0 : (int)wait);
  for (int k = 0; k < n; k++)
    if (p[k].revents && m->fd[map[k]] == p[k].fd) {
      int ev = ((p[k].revents & (POLLIN | POLLHUP | POLLERR)) ? RLOCK_LOOP_READ
                                                              : 0) |
               ((p[k].revents & POLLOUT) ? RLOCK_LOOP_WRITE : 0);
      rlock_loop_io(m->c, p[k].fd, ev);
    }
  if (m->timer_at_ms >= 0 && rt_now_ms() >= m->timer_at_ms) {
    m->timer_at_ms = -1;
    rlock_loop_timer(m->c);
  }
}

typedef struct outcome {
  int done, rc;
  char msg[512]; /* the callback's rlock_error_last() */
} outcome;

static void on_outcome(void *arg, int rc, int64_t v) {
  (void)v;
  outcome *o = arg;
  o->done++;
  o->rc = rc;
  snprintf(o->msg, sizeof o->msg, "%s", rlock_error_last()->message);
}

/* A loop client's attempt, waiting `wait_ms`, plays `s`; it must end
 * with `code` (its message holding `needle`), the lock then held or not
 * as that says. */
static void loop_expect(const rt_fake_step *s, int64_t wait_ms, int code,
                        const char *needle) {
  rt_fake *f = rt_fake_start(s);
  mini m = {.fd = {-1, -1, -1, -1}, .timer_at_ms = -1};
  rlock_loop table = {.version = RLOCK_LOOP_VERSION,
                      .data = &m,
                      .watch = mini_watch,
                      .timer = mini_timer,
                      .wake = mini_wake};
  rlock_config *cfg = fault_config(rt_fake_url(f), 0, 0);
  assert_non_null(cfg);
  assert_int_equal(rlock_client_new_loop(&m.c, cfg, &table), RLOCK_OK);
  rlock_config_free(cfg);
  rlock_lock *l;
  assert_int_equal(rlock_lock_new(&l, m.c, "inflight"), RLOCK_OK);
  uint64_t me = rlock_owner_new();
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.owner = me;
  o.wait_ms = wait_ms;
  o.lease_ms = 10000;
  outcome out = {0};
  assert_int_equal(rlock_lock_acquire_async(l, &o, on_outcome, &out, NULL),
                   RLOCK_OK);
  int64_t end = rt_now_ms() + rt_scaled_ms(5000);
  while (!out.done && rt_now_ms() < end)
    mini_turn(&m);
  assert_int_equal(out.done, 1);
  if (out.rc != code || (needle && strstr(out.msg, needle) == NULL))
    fail_msg("got %d (%s), expected %d with '%s'", out.rc, out.msg, code,
             needle ? needle : "");
  expect_rc(rlock_lock_check_owner(l, me),
            code == RLOCK_OK ? RLOCK_OK : RLOCK_ENOTHELD, NULL);
  rlock_lock_free(l);
  finish(f, m.c);
}

/* The loop client's attempt is lost; the read finds the field: taken. A
 * loop connection loads a script (SCRIPT LOAD, pipelined) before its
 * first EVALSHA; the server reads both and closes without answering. */
static void test_loop_taken(void **state) {
  (void)state;
  static const rt_fake_step s[] = {LOOP_LOST_ATTEMPT, READ_ANSWERED(ONE_LEVEL),
                                   RT_STEP_END()};
  loop_expect(s, 0, RLOCK_OK, NULL);
}

/* ... and its read is lost in flight too: read again (test_read_lost_too). */
static void test_loop_read_lost_too(void **state) {
  (void)state;
  static const rt_fake_step s[] = {LOOP_LOST_ATTEMPT, READ_LOST,
                                   READ_ANSWERED(ONE_LEVEL), RT_STEP_END()};
  loop_expect(s, 0, RLOCK_OK, NULL);
}

/* The loop's wait whose read is refused: the failure stands
 * (test_unsettled_read_refused). */
static void test_loop_unsettled_read_refused(void **state) {
  (void)state;
  static const rt_fake_step s[] = {
      LOOP_LOST_ATTEMPT, READ_ANSWERED("-ERR refused for the test\r\n"),
      RT_STEP_END()};
  loop_expect(s, 3000, RLOCK_EIO, "closed");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_taken),
      cmocka_unit_test(test_read_lost_too),
      cmocka_unit_test(test_unsettled_wait_says_how_long),
      cmocka_unit_test(test_taken_fenced),
      cmocka_unit_test(test_not_taken),
      cmocka_unit_test(test_unexplained),
      cmocka_unit_test(test_loop_taken),
      cmocka_unit_test(test_loop_read_lost_too),
      cmocka_unit_test(test_unsettled_read_refused),
      cmocka_unit_test(test_loop_unsettled_read_refused)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
