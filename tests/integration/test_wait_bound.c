/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: a caller's wait bounds the whole blocking call, whatever
 * the server does. Against a server that takes connections and never
 * answers (SIGSTOP), an acquisition returns by its wait plus a small
 * margin (not after one command timeout per command it sent), a single
 * try within one command timeout, and a fired cancel token ends the call
 * within ~100 ms even while it waits for a reply. A hung server's bound
 * runs on every driver (drivers.h): a loop client's callback comes by
 * the wait plus the margin too. */
#include "drivers.h"

#include <stdatomic.h>

/* Generous for a loaded machine; the library's margin is 100 ms. */
#define MARGIN_MS 400

/* Bytes waiting in the receive queues of connections to local port `port`
 * (the server's side): > 0 once a command reached a frozen server. */
static long queued_at_port(int port) {
  FILE *f = fopen("/proc/net/tcp", "r");
  if (f == NULL)
    fail_msg("cannot read /proc/net/tcp");
  char line[512];
  long total = 0;
  fgets(line, sizeof line, f); /* the header */
  while (fgets(line, sizeof line, f) != NULL) {
    unsigned local_port, tx, rx;
    if (sscanf(line, " %*d: %*x:%x %*x:%*x %*x %x:%x", &local_port, &tx, &rx) ==
            3 &&
        (int)local_port == port)
      total += rx;
  }
  fclose(f);
  return total;
}

static bool pred_queued(void *arg, char *why, size_t cap) {
  int port = *(int *)arg;
  long n = queued_at_port(port);
  snprintf(why, cap, "%ld bytes queued at port %d", n, port);
  return n > 0;
}

static int64_t timed_acquire(rlock_lock *l, int64_t wait_ms, int *rc) {
  int64_t t0 = rt_now_ms();
  *rc = rlock_lock_try_acquire(l, wait_ms, 5000);
  return rt_now_ms() - t0;
}

/* A fresh client (it must connect and ask the server's replicas first)
 * and a warm one (a pooled connection), each waiting 400 ms. */
static void test_wait_bounds_a_hung_server(void **state) {
  (void)state;
  const char *url = rt_server_url(srv);
  uint64_t me = dk_me();
  rlock_client *warm = dk_client(url, 0, NULL, NULL);
  rlock_lock *lw = fx_lock(warm, "bound:hung");
  OK(dk_acquire(lw, me, 0, 5000));
  OK(dk_release(lw, me));
  rlock_client *cold = dk_client(url, 0, NULL, NULL);
  rlock_lock *lc = fx_lock(cold, "bound:hung");
  rt_server_freeze(srv);
  rlock_lock *locks[2] = {lc, lw};
  for (int i = 0; i < 2; i++) {
    int64_t t0 = rt_now_ms();
    RC(dk_acquire(locks[i], me, 400, 5000), RLOCK_ETIMEOUT);
    int64_t ms = rt_now_ms() - t0;
    assert_non_null(
        strstr(rlock_error_last()->message, "within the time the caller gave"));
    ASSERT_BETWEEN(ms, 390, 400 + MARGIN_MS);
  }
  rt_server_thaw(srv);
  DK_FREE((lc, lw), (cold, warm));
}

/* An acquisition of `l` waiting `wait_ms` on the frozen server ends with
 * RLOCK_ETIMEOUT saying no answer came (never "cannot connect": the
 * kernel still takes connections), within `bound_ms` and the margin. */
static void expect_no_answer(rlock_lock *l, int64_t wait_ms, int64_t bound_ms,
                             const char *what) {
  int64_t t0 = rt_now_ms();
  result r;
  RC(dk_acquire_r(l, rlock_owner_new(), wait_ms, 5000, &r), RLOCK_ETIMEOUT);
  int64_t ms = rt_now_ms() - t0;
  if (strstr(r.msg, "no answer") == NULL || strstr(r.msg, "connect") != NULL)
    fail_msg("%s: '%s', wanted no answer in time", what, r.msg);
  ASSERT_BETWEEN(ms, bound_ms - 10, bound_ms + MARGIN_MS);
}

/* A server that stops answering (SIGSTOP) once a client is connected:
 * each call says no answer came in time, ends by its own bound (one
 * command timeout for a try, 2 s here, not one per command it needs) and
 * opens at most one connection (a loop client used to open a second one
 * for the attempt after the replica count, INFO, went unanswered on the
 * first, then said it could not connect). The second and third calls
 * start on a new connection, where the count is asked first (a count of
 * none is asked again after 1 s). */
static void test_frozen_server_no_answer(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 0, NULL, NULL);
  rlock_lock *l = fx_lock(c, "bound:frozen");
  uint64_t me = dk_me();
  OK(dk_acquire(l, me, 0, 5000)); /* connected, the script loaded */
  OK(dk_release(l, me));
  long long before = fx_connections_taken(srv);
  rt_server_freeze(srv);
  expect_no_answer(l, 0, 2000, "a try on the open connection");
  expect_no_answer(l, 1000, 1000, "a wait shorter than the command timeout");
  expect_no_answer(l, 0, 2000, "a try on a new connection");
  rt_server_thaw(srv);
  long long opened = fx_connections_taken(srv) - before;
  if (opened > 2)
    fail_msg("%lld connections for 2 calls after the first failed", opened);
  rlock_lock_free(l);
  dk_free(c);
}

/* Wait 0 tries once: within one command timeout (2 s in fx_client), not
 * one per command the try needs. */
static void test_try_once_bounded_by_command_timeout(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "bound:try");
  rt_server_freeze(srv);
  int rc;
  int64_t ms = timed_acquire(l, 0, &rc);
  RC(rc, RLOCK_ETIMEOUT);
  ASSERT_BETWEEN(ms, 1900, 2000 + MARGIN_MS);
  rt_server_thaw(srv);
  FX_FREE((l), (c));
}

typedef struct canceled_wait {
  rlock_lock *l;
  rlock_cancel *token;
  int rc;
  atomic_llong ended_ms;
} canceled_wait;

static void *wait_for_ever(void *arg) {
  canceled_wait *w = arg;
  w->rc =
      rlock_lock_try_acquire_cancel(w->l, RLOCK_WAIT_FOREVER, 5000, w->token);
  atomic_store(&w->ended_ms, rt_now_ms());
  return NULL;
}

/* A wait without a bound, stuck reading the answer of a hung server,
 * ends soon after its token fires. */
static void test_cancel_ends_a_read(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  canceled_wait w = {.l = fx_lock(c, "bound:cancel"), .rc = -1};
  OK(rlock_cancel_new(&w.token));
  OK(rlock_lock_try_acquire(w.l, 0, 5000)); /* connected, replicas known */
  OK(rlock_lock_release(w.l));
  rt_server_freeze(srv);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, wait_for_ever, &w), 0);
  int port = rt_server_port(srv);
  rt_wait_until(pred_queued, &port, rt_scaled_ms(5000),
                "the attempt queued at the frozen server");
  int64_t fired = rt_now_ms();
  rlock_cancel_fire(w.token);
  pthread_join(t, NULL);
  RC(w.rc, RLOCK_ECANCELED);
  ASSERT_BETWEEN(atomic_load(&w.ended_ms) - fired, 0, 150);
  rt_server_thaw(srv);
  rlock_cancel_free(w.token);
  FX_FREE((w.l), (c));
}

/* A MultiLock's wait bounds all its members' together. */
static void test_multilock_wait_bounded(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *m1 = fx_lock(c, "bound:m1"), *m2 = fx_lock(c, "bound:m2");
  rlock_lock *members[2] = {m1, m2};
  rlock_multilock *m;
  OK(rlock_multilock_new(&m, members, 2));
  rt_server_freeze(srv);
  int64_t t0 = rt_now_ms();
  int rc = rlock_multilock_try_acquire(m, 400, 5000);
  int64_t ms = rt_now_ms() - t0;
  assert_true(rc == RLOCK_ETIMEOUT);
  ASSERT_BETWEEN(ms, 390, 400 + 2 * MARGIN_MS);
  rt_server_thaw(srv);
  rlock_multilock_free(m);
  FX_FREE((m1, m2), (c));
}

static const dk_case cases[] = {
    DK_CASE(test_wait_bounds_a_hung_server, DK_ALL),
    DK_CASE(test_frozen_server_no_answer, DK_ALL),
    DK_CASE(test_try_once_bounded_by_command_timeout, DK_BLOCK),
    DK_CASE(test_cancel_ends_a_read, DK_BLOCK),
    DK_CASE(test_multilock_wait_bounded, DK_BLOCK),
};

DK_MAIN(cases, NULL)
