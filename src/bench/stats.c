/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stats.c - monotonic time, sample series and percentiles.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"

int64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void bench_sleep_us(long us) {
  if (us <= 0)
    return;
  struct timespec ts = {.tv_sec = us / 1000000,
                        .tv_nsec = (us % 1000000) * 1000};
  /* Relative sleep, resumed with the remaining time after a signal. */
  while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
    ;
}

int bench_samples_init(bench_samples *s, size_t cap) {
  s->n = 0;
  s->cap = cap;
  s->v = malloc((cap > 0 ? cap : 1) * sizeof *s->v);
  return s->v != NULL ? 0 : -1;
}

void bench_samples_push(bench_samples *s, int64_t ns) {
  if (s->n < s->cap)
    s->v[s->n++] = ns;
}

void bench_samples_free(bench_samples *s) {
  free(s->v);
  s->v = NULL;
  s->n = s->cap = 0;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

double bench_percentile(int64_t *v, size_t n, double p) {
  if (n == 0)
    return NAN;
  qsort(v, n, sizeof *v, cmp_i64);
  double pos = p / 100.0 * (double)(n - 1);
  size_t lo = (size_t)floor(pos);
  size_t hi = lo + 1 < n ? lo + 1 : lo;
  double frac = pos - (double)lo;
  return (double)v[lo] + frac * (double)(v[hi] - v[lo]);
}

double bench_percentile_us(int64_t *v, size_t n, double p) {
  return bench_percentile(v, n, p) / 1000.0;
}

double bench_samples_us(bench_samples *s, double p) {
  return bench_percentile_us(s->v, s->n, p);
}
