/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_handoff.c - handoff to a sleeping waiter: the library's waiter
 * next to the fastest waiter a client can be, in the same run.
 *
 * N processes (default 2) take turns on a lock in a strict ping-pong
 * (turns.h, spec.alternate): each round a process acquires, does the
 * contended workload's non-atomic counter increment, holds the lock for
 * H us more, releases, then sleeps until another process has acquired
 * before it tries again. So it never barges, it finds the lock held, and
 * it is asleep in its wait when the next release comes, H us later
 * (minus its attempts). The handoff is the contended workload's: from
 * just before the holder's release call to the waiter's acquire
 * returning, CLOCK_MONOTONIC across processes, counted only when the
 * waiter started waiting before that release.
 *
 * Two waiter implementations, same server, same sizes, same holder
 * behaviour, each on its own lock name (names of equal length), so that
 * neither's messages reach the other's subscriptions:
 *   rlock  the library: rlock_lock_acquire() (wait forever, watchdog
 *          lease) and rlock_lock_release(), one client per process
 *          (public API only);
 *   bare   a bare single-threaded hiredis client with two connections:
 *          one SUBSCRIBEd to the lock's channel
 *          (redisson_lock__channel:{NAME}) from before the start to the
 *          end, and one for the library's own lock_acquire and
 *          lock_release scripts by EVALSHA (raw.c, byte-for-byte the
 *          library's commands; the release script publishes the unlock
 *          message). A wait: drop what the subscriber has received since
 *          the last one (non-blocking), attempt, and while the lock is
 *          held block in read() on the subscriber socket (redisGetReply)
 *          until a message arrives, then attempt again.
 * The same processes play both (turns.h, spec.phases), in phases of K
 * acquisitions per process with a barrier between phases: rounds of two
 * phases, ABBA (rlock, bare; bare, rlock; ...). A phase lasts about
 * K * N * (H + 0.25 ms), a tenth of a second by default, so the load of
 * a shared machine, which changes within seconds, meets both waiters
 * alike. The first WARMUP rounds of each waiter's first phase record
 * nothing (the library's client subscribes at its first wait; the bare
 * waiter before the start). Reported: each waiter's handoff p50 and p99
 * over all rounds, the PING round trip before and after the run
 * (turns.c), each round's two p50s and their ratio rlock / bare, and the
 * median of those ratios.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "turns.h"

/* Rounds of each waiter's first phase that record nothing (see above). */
#define WARMUP 2

enum { RLOCK, BARE, NIMPL };
static const char *const IMPL_NAME[NIMPL] = {"rlock", "bare"};

static const turns_role ROLES[NIMPL] = {
    [RLOCK] = {rlock_lock_new, "rlock_lock_new", 1, NULL},
    [BARE] = {NULL, "bare", 1, &bench_bare_impl},
};

/* ---- the rounds --------------------------------------------------------- */

/* What the run leaves, per waiter implementation. */
typedef struct results {
  bench_samples all[NIMPL]; /* every handoff of every round, ns */
  double *p50[NIMPL];       /* [rounds] each round's median, us */
  double ping;              /* median PING, us */
  long long lost;
} results;

static int results_init(results *g, const bench_args *a) {
  size_t total = (size_t)a->procs * (size_t)a->ops * (size_t)a->rounds;
  int ok = 1;
  for (int i = 0; i < NIMPL; i++) {
    ok = ok && bench_samples_init(&g->all[i], total) == 0;
    ok = ok && (g->p50[i] = calloc((size_t)a->rounds, sizeof(double))) != NULL;
  }
  return ok ? 0 : -1;
}

static void results_free(results *g) {
  for (int i = 0; i < NIMPL; i++) {
    bench_samples_free(&g->all[i]);
    free(g->p50[i]);
  }
}

/* Split the run's handoffs by phase: pool them per waiter and take each
 * phase's median. `h` and `ph` are parallel (turns_gather). */
static int split_phases(const turns_spec *sp, results *g, const int64_t *h,
                        const int64_t *ph, size_t n) {
  bench_samples one;
  if (bench_samples_init(&one, n) != 0)
    return -1;
  for (long p = 0; p < sp->phases; p++) {
    int impl = turns_phase_role(p); /* roles[RLOCK], roles[BARE] */
    one.n = 0;
    for (size_t i = 0; i < n; i++)
      if (ph[i] == p) {
        bench_samples_push(&one, h[i]);
        bench_samples_push(&g->all[impl], h[i]);
      }
    g->p50[impl][p / 2] = bench_samples_us(&one, 50);
  }
  bench_samples_free(&one);
  return 0;
}

/* turns_run's report function: keep the run's figures for report(). */
static int collect(const turns_spec *sp, turns_out *o) {
  results *g = sp->arg;
  size_t n, m;
  int64_t *h = turns_gather(sp, o, o->samples, 0, sp->procs, &n);
  int64_t *ph = turns_gather(sp, o, o->phase_of, 0, sp->procs, &m);
  int rc =
      h != NULL && ph != NULL && n == m ? split_phases(sp, g, h, ph, n) : -1;
  free(h);
  free(ph);
  if (rc != 0)
    return bench_fail("out of memory"), -1;
  g->ping = turns_ping_us(o);
  g->lost = turns_lost_updates(sp, o);
  return 0;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* The median of v[0..n) (sorts it); NaN when n is 0. */
static double median(double *v, size_t n) {
  if (n == 0)
    return NAN;
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void report(const bench_args *a, results *g) {
  size_t rounds = (size_t)a->rounds;
  double p50[NIMPL];
  double *ratios = calloc(rounds, sizeof *ratios);
  bench_report r;
  bench_report_begin(&r, a->json, "handoff");
  bench_report_int(&r, "procs", a->procs);
  bench_report_int(&r, "ops", a->ops);
  bench_report_int(&r, "rounds", a->rounds);
  bench_report_int(&r, "hold_us", a->hold_us);
  bench_report_int(&r, "hold_max_us", a->hold_max_us);
  bench_report_num(&r, "ping_rtt_us", g->ping, 1);
  for (int i = 0; i < NIMPL; i++) {
    char key[64];
    p50[i] = bench_samples_us(&g->all[i], 50);
    snprintf(key, sizeof key, "%s_handoffs", IMPL_NAME[i]);
    bench_report_int(&r, key, (long long)g->all[i].n);
    snprintf(key, sizeof key, "%s_handoff_p50_us", IMPL_NAME[i]);
    bench_report_num(&r, key, p50[i], 1);
    snprintf(key, sizeof key, "%s_handoff_p99_us", IMPL_NAME[i]);
    bench_report_num(&r, key, bench_samples_us(&g->all[i], 99), 1);
    snprintf(key, sizeof key, "%s_handoff_rtts", IMPL_NAME[i]);
    bench_report_num(&r, key, p50[i] / g->ping, 2);
  }
  bench_report_int(&r, "lost_updates", g->lost);
  for (int i = 0; i < NIMPL; i++) {
    char key[64];
    snprintf(key, sizeof key, "%s_p50_us_rounds", IMPL_NAME[i]);
    bench_report_nums(&r, key, g->p50[i], rounds, 1);
  }
  for (size_t i = 0; ratios != NULL && i < rounds; i++)
    ratios[i] = g->p50[RLOCK][i] / g->p50[BARE][i];
  bench_report_nums(&r, "ratio_rounds", ratios, ratios ? rounds : 0, 3);
  bench_report_num(&r, "ratio", ratios ? median(ratios, rounds) : NAN, 3);
  bench_report_num(&r, "ratio_pooled", p50[RLOCK] / p50[BARE], 3);
  bench_report_end(&r);
  free(ratios);
}

int bench_handoff(const bench_args *a) {
  char lock[64], lock2[64], counter[64];
  long pid = (long)getpid();
  bench_key(lock, sizeof lock, "rlock-bench:handoff-r", pid);
  bench_key(lock2, sizeof lock2, "rlock-bench:handoff-b", pid);
  bench_key(counter, sizeof counter, "rlock-bench:counter", pid);
  results g;
  memset(&g, 0, sizeof g);
  if (results_init(&g, a) != 0) {
    results_free(&g);
    return bench_fail("out of memory");
  }
  turns_spec sp = {.a = a,
                   .procs = a->procs,
                   .roles = {&ROLES[RLOCK], &ROLES[BARE]},
                   .lock = lock,
                   .lock2 = lock2,
                   .counter = counter,
                   .keys = {lock, lock2, counter},
                   .alternate = 1,
                   .hold_us = a->hold_us,
                   .hold_max_us = a->hold_max_us,
                   .phases = 2L * a->rounds,
                   .warmup = WARMUP,
                   .arg = &g};
  int rc = bench_load_lock_scripts(a->url) == 0 ? turns_run(&sp, collect)
                                                : BENCH_EXIT_FAIL;
  if (rc == 0)
    report(a, &g);
  results_free(&g);
  return rc;
}
