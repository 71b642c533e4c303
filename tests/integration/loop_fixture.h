/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loop_fixture.h - running the event loop under test (libuv's or
 * libevent's, each case once on both) and collecting completions, for the
 * event-loop suites (test_loop, test_loop_redlock). The adapters' sources
 * are compiled into those binaries.
 */
#ifndef RLOCK_TEST_LOOP_FIXTURE_H
#define RLOCK_TEST_LOOP_FIXTURE_H

#include "fixture.h"

#include <event2/event.h>
#include <uv.h>

#include "rlock/event.h"
#include "rlock/uv.h"

enum { UV, EV };

/* The loop under test: libuv's or libevent's. */
static int kind;
static uv_loop_t uvl;
static struct event_base *evb;

/* ---- running the loop until something has happened ------------------- */

static inline void uv_noop(uv_timer_t *t) { (void)t; }
static inline void ev_noop(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what, (void)arg;
}

/* Run one iteration of the loop, returning by `ms` at the latest. */
static inline void run_once(int64_t ms) {
  if (kind == UV) {
    uv_timer_t guard;
    uv_timer_init(&uvl, &guard);
    uv_timer_start(&guard, uv_noop, (uint64_t)ms, 0);
    uv_run(&uvl, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&guard, NULL);
    uv_run(&uvl, UV_RUN_NOWAIT); /* let the close finish */
  } else {
    struct event *guard = evtimer_new(evb, ev_noop, NULL);
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    evtimer_add(guard, &tv);
    event_base_loop(evb, EVLOOP_ONCE);
    event_free(guard);
  }
}

/* Run the loop until *flag is at least `want`, up to a scaled timeout. */
static inline void run_until(const int *flag, int want, int64_t timeout_ms,
                             const char *what) {
  int64_t end = rt_now_ms() + rt_scaled_ms(timeout_ms);
  while (*flag < want) {
    int64_t left = end - rt_now_ms();
    if (left <= 0)
      fail_msg("timed out waiting for %s (%d of %d)", what, *flag, want);
    run_once(left);
  }
}

static inline rlock_client *loop_client_cfg(rlock_config *cfg) {
  rlock_client *c;
  if (kind == UV)
    OK(rlock_client_new_uv(&c, cfg, &uvl));
  else
    OK(rlock_client_new_event(&c, cfg, evb));
  return c;
}

/* Free a client and let the loop release the adapter's handles. */
static inline void loop_free(rlock_client *c) {
  OK(rlock_client_free(c));
  if (kind == UV)
    uv_run(&uvl, UV_RUN_NOWAIT);
}

/* ---- completions -------------------------------------------------------- */

typedef struct result {
  int done; /* callbacks run (must end at 1) */
  int rc;
  int64_t value;
  int order; /* position among completions of a run */
  pthread_t thread;
  char msg[256];
} result;

static int completions;

static inline void on_done(void *arg, int rc, int64_t value) {
  result *r = arg;
  r->done++;
  r->rc = rc;
  r->value = value;
  r->order = completions++;
  r->thread = pthread_self();
  snprintf(r->msg, sizeof r->msg, "%s",
           rc == RLOCK_OK ? "" : rlock_error_last()->message);
}

static inline rlock_acquire_options opts(uint64_t owner, int64_t wait,
                                         int64_t lease) {
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.owner = owner;
  o.wait_ms = wait;
  o.lease_ms = lease;
  return o;
}

/* Start the loop under test (in a group's setup). */
static inline void loop_open(void) {
  if (kind == UV)
    uv_loop_init(&uvl);
  else
    evb = event_base_new();
}

/* Close it; every handle must be closed by then. */
static inline void loop_close(void) {
  if (kind == UV) {
    uv_run(&uvl, UV_RUN_NOWAIT);
    assert_int_equal(uv_loop_close(&uvl), 0);
  } else {
    event_base_free(evb);
  }
}

#endif /* RLOCK_TEST_LOOP_FIXTURE_H */
