/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_many.c - throughput of one client shared by many threads.
 *
 * T threads share one client and L lock objects made up front; each
 * thread repeatedly picks a random lock, takes it (waiting as long as it
 * takes, watchdog lease) and releases it. The figure is completed
 * lock+unlock pairs per second over the measured interval. Every pair is
 * two scripts, so twice this is the script rate the server sees, which
 * scripts/bench.sh compares with redis-benchmark's EVALSHA ceiling.
 *
 * Each thread first does a few pairs so the pool has opened its
 * connections, then all start together at a barrier.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define WARMUP_PAIRS 20

typedef struct shared {
  const bench_args *a;
  rlock_lock **locks;
  pthread_barrier_t start;
  atomic_int stop; /* main: time is up; any thread: a failure */
  atomic_int failed;
} shared;

typedef struct worker {
  shared *sh;
  pthread_t thread;
  uint64_t rng; /* xorshift64 state, never 0 */
  long long pairs;
} worker;

/* One lock+unlock pair on a random lock. On failure only the first
 * failing thread prints (the last error is thread-local, so it must be
 * printed here), and every thread is told to stop. */
static int pair(worker *w) {
  shared *sh = w->sh;
  rlock_lock *l = sh->locks[bench_rand(&w->rng) % (uint64_t)sh->a->locks];
  const char *what = "rlock_lock_try_acquire";
  int rc = rlock_lock_try_acquire(l, RLOCK_WAIT_FOREVER, RLOCK_LEASE_WATCHDOG);
  if (rc == RLOCK_OK) {
    what = "rlock_lock_release";
    rc = rlock_lock_release(l);
  }
  if (rc == RLOCK_OK)
    return 0;
  if (!atomic_exchange(&sh->failed, 1))
    bench_fail_rc(what, rc);
  atomic_store(&sh->stop, 1);
  return -1;
}

static void *worker_main(void *arg) {
  worker *w = arg;
  shared *sh = w->sh;
  for (int i = 0; i < WARMUP_PAIRS && !atomic_load(&sh->stop); i++)
    pair(w);
  pthread_barrier_wait(&sh->start);
  while (!atomic_load_explicit(&sh->stop, memory_order_relaxed) && pair(w) == 0)
    w->pairs++;
  return NULL;
}

static int make_locks(shared *sh, rlock_client *c) {
  char name[96];
  for (int i = 0; i < sh->a->locks; i++) {
    snprintf(name, sizeof name, "rlock-bench:many:%ld:%d", (long)getpid(), i);
    int rc = rlock_lock_new(&sh->locks[i], c, name);
    if (rc != RLOCK_OK)
      return bench_fail_rc("rlock_lock_new", rc), -1;
  }
  return 0;
}

/* Start the workers, let them run for the configured time, join them.
 * Returns the measured interval in ns, or -1. */
static int64_t run_workers(shared *sh, worker *w) {
  int n = sh->a->threads, started = 0;
  for (; started < n; started++) {
    uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(started + 1);
    w[started] = (worker){.sh = sh, .rng = seed};
    if (pthread_create(&w[started].thread, NULL, worker_main, &w[started]))
      break;
  }
  if (started < n) { /* only under resource exhaustion */
    bench_fail("cannot start thread %d", started);
    _exit(BENCH_EXIT_FAIL); /* the barrier would never open */
  }
  pthread_barrier_wait(&sh->start);
  int64_t t0 = bench_now_ns();
  int64_t until = t0 + (int64_t)(sh->a->seconds * 1e9);
  while (!atomic_load(&sh->stop) && bench_now_ns() < until)
    bench_sleep_us(10000);
  atomic_store(&sh->stop, 1);
  for (int i = 0; i < n; i++)
    pthread_join(w[i].thread, NULL);
  /* Includes each thread's last pair in flight: at most one pair per
   * thread, i.e. well under a millisecond of a multi-second run. */
  int64_t elapsed = bench_now_ns() - t0;
  return atomic_load(&sh->failed) ? -1 : elapsed;
}

static void report(const bench_args *a, const worker *w, int64_t elapsed) {
  long long pairs = 0;
  for (int i = 0; i < a->threads; i++)
    pairs += w[i].pairs;
  bench_report r;
  bench_report_begin(&r, a->json, "many");
  bench_report_int(&r, "threads", a->threads);
  bench_report_int(&r, "locks", a->locks);
  bench_report_num(&r, "seconds", elapsed / 1e9, 2);
  bench_report_int(&r, "pairs", pairs);
  bench_report_num(&r, "ops_per_s", (double)pairs / (elapsed / 1e9), 0);
  bench_report_end(&r);
}

int bench_many(const bench_args *a) {
  shared sh = {.a = a};
  atomic_init(&sh.stop, 0);
  atomic_init(&sh.failed, 0);
  sh.locks = calloc((size_t)a->locks, sizeof *sh.locks);
  worker *w = calloc((size_t)a->threads, sizeof *w);
  rlock_client *c = NULL;
  int rc = BENCH_EXIT_FAIL;
  if (sh.locks == NULL || w == NULL) {
    bench_fail("out of memory");
  } else if ((c = bench_client_new(a->url)) != NULL &&
             make_locks(&sh, c) == 0) {
    pthread_barrier_init(&sh.start, NULL, (unsigned)a->threads + 1);
    int64_t elapsed = run_workers(&sh, w);
    pthread_barrier_destroy(&sh.start);
    if (elapsed > 0) {
      report(a, w, elapsed);
      rc = 0;
    }
  }
  for (int i = 0; sh.locks != NULL && i < a->locks; i++)
    rlock_lock_free(sh.locks[i]);
  rlock_client_free(c);
  free(sh.locks);
  free(w);
  return rc;
}
