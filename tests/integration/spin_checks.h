/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spin_checks.h - the spin lock back-off policies test_spin (blocking
 * client) and test_loop (loop clients) try, and what a waiter's attempts,
 * as the server saw them (MONITOR: fx_monitor_*), must show.
 */
#ifndef RLOCK_TEST_SPIN_CHECKS_H
#define RLOCK_TEST_SPIN_CHECKS_H

#include "fixture.h"

/* How long the waiter spins against a lock held for a minute. */
#define SC_WAIT_MS 2500
#define SC_MAX_ATTEMPTS 64

/* Constant: every pause 100 ms. */
static inline rlock_spin_options sc_constant(void) {
  rlock_spin_options o = RLOCK_SPIN_OPTIONS_INIT;
  o.backoff = RLOCK_SPIN_CONSTANT;
  o.delay_ms = 100;
  return o;
}

/* Exponential without jitter: 10, 40, then 160 ms (capped) every time. */
static inline rlock_spin_options sc_exponential(void) {
  rlock_spin_options o = RLOCK_SPIN_OPTIONS_INIT;
  o.initial_ms = 10;
  o.multiplier = 4;
  o.max_ms = 160;
  o.jitter = 0;
  return o;
}

static inline void sc_print(const char *what, const int64_t *us, size_t n) {
  char line[1024];
  int len =
      snprintf(line, sizeof line, "%s: %zu attempts, gaps (ms):", what, n);
  for (size_t i = 1; i < n && len > 0 && (size_t)len < sizeof line - 16; i++)
    len += snprintf(line + len, sizeof line - (size_t)len, " %lld",
                    (long long)((us[i] - us[i - 1]) / 1000));
  print_message("%s\n", line);
}

/* Gap i (between attempts i-1 and i, on the server's clock) must be at
 * least `ms`; the last gap is exempt (the wait's end cuts its pause). */
static inline void sc_gap_at_least(const int64_t *us, size_t n, size_t i,
                                   int64_t ms) {
  if (i + 1 < n && us[i] - us[i - 1] < ms * 1000)
    fail_msg("gap %zu is %lld us, under the %lld ms pause", i,
             (long long)(us[i] - us[i - 1]), (long long)ms);
}

/* Attempts spaced by the delay: every gap at least 100 ms, and as many
 * attempts as the wait holds (a growing pause would give fewer, a shorter
 * one more). */
static inline void sc_check_constant(const int64_t *us, size_t n) {
  sc_print("constant 100 ms", us, n);
  ASSERT_RANGE(n, 5, SC_WAIT_MS / 100 + 2);
  for (size_t i = 1; i < n; i++)
    sc_gap_at_least(us, n, i, 100);
}

/* Pauses of 10, 40, 160, 160 ... ms: each gap at least its pause, the
 * first two shorter than the third (they grow), and more attempts than a
 * pause growing past 160 ms would leave room for (at most 6 in the wait:
 * 0, 10, 50, 210, 850 ms and one at its end). */
static inline void sc_check_exponential(const int64_t *us, size_t n) {
  static const int64_t pause[] = {10, 40, 160};
  sc_print("exponential 10 x4 up to 160 ms", us, n);
  ASSERT_RANGE(n, 9, 3 + (SC_WAIT_MS - 210) / 160 + 2);
  for (size_t i = 1; i < n; i++)
    sc_gap_at_least(us, n, i, pause[i - 1 < 2 ? i - 1 : 2]);
  int64_t g1 = us[1] - us[0], g2 = us[2] - us[1], g3 = us[3] - us[2];
  if (!(g1 < g3 && g2 < g3))
    fail_msg("the pauses did not grow: %lld, %lld, %lld us", (long long)g1,
             (long long)g2, (long long)g3);
}

#endif /* RLOCK_TEST_SPIN_CHECKS_H */
