/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_loop.c - an event-loop client (rlock/loop.h) on one libuv loop
 * thread.
 *
 * Throughput: N acquisitions are kept in flight at all times over L lock
 * names (each slot takes a random lock, waiting as long as it takes,
 * watchdog lease, releases it from the callback and starts again), for S
 * seconds after a warm-up; the figure is lock+unlock pairs per second.
 * Every pair is two scripts on the client's one pipelined connection, so
 * twice the figure is the script rate the server sees (scripts/
 * bench_loop.sh compares it with redis-benchmark's pipelined EVALSHA).
 *
 * Handoff: two owners take turns on one lock; the holder releases and the
 * other, already waiting (asleep on the unlock message), is called back
 * with the lock. A handoff is from just before the release call to the
 * waiter's callback, on the same thread and clock.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "rlock/uv.h"

#define WARMUP_S 0.5

typedef struct slot slot;

typedef struct run {
  uv_loop_t loop;
  rlock_client *client;
  rlock_lock **locks;
  int nlocks;
  uint64_t rng;
  int counting; /* 0 warm-up, 1 counting, 2 stopping, 3 stopped */
  long long pairs;
  int in_flight;
  int failed;
  /* handoff */
  rlock_lock *turn_lock;
  uint64_t owners[2];
  int holder; /* 0 or 1 */
  long handoffs_left;
  int64_t released_ns;
  bench_samples handoff;
} run;

struct slot {
  run *r;
  rlock_lock *lock;
  uint64_t owner;
};

static void start_pair(slot *s);

static void fail(run *r, const char *what, int rc) {
  if (!r->failed++)
    bench_fail_rc(what, rc);
  r->counting = 2;
}

static void released(void *arg, int rc, int64_t v) {
  (void)v;
  slot *s = arg;
  run *r = s->r;
  if (rc != RLOCK_OK)
    fail(r, "rlock_lock_release_async", rc);
  r->pairs += r->counting == 1;
  r->in_flight--;
  if (r->counting != 2)
    start_pair(s);
}

static void acquired(void *arg, int rc, int64_t v) {
  (void)v;
  slot *s = arg;
  if (rc != RLOCK_OK) {
    fail(s->r, "rlock_lock_acquire_async", rc);
    s->r->in_flight--;
    return;
  }
  rc = rlock_lock_release_async(s->lock, s->owner, released, s);
  if (rc != RLOCK_OK) {
    fail(s->r, "rlock_lock_release_async", rc);
    s->r->in_flight--;
  }
}

static void start_pair(slot *s) {
  run *r = s->r;
  s->lock = r->locks[bench_rand(&r->rng) % (uint64_t)r->nlocks];
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.owner = s->owner;
  r->in_flight++;
  int rc = rlock_lock_acquire_async(s->lock, &o, acquired, s, NULL);
  if (rc != RLOCK_OK) {
    r->in_flight--;
    fail(r, "rlock_lock_acquire_async", rc);
  }
}

/* Run the loop until `until_ns` (a uv timer ends the wait). */
static void on_deadline(uv_timer_t *t) { (void)t; }

static void run_for(run *r, double seconds) {
  uv_timer_t t;
  uv_timer_init(&r->loop, &t);
  uv_timer_start(&t, on_deadline, (uint64_t)(seconds * 1000), 0);
  int64_t end = bench_now_ns() + (int64_t)(seconds * 1e9);
  while (bench_now_ns() < end && !r->failed)
    uv_run(&r->loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(&r->loop, UV_RUN_NOWAIT); /* the close completes: t is ours */
}

static double throughput(run *r, const bench_args *a, int inflight) {
  slot *slots = calloc((size_t)inflight, sizeof *slots);
  if (slots == NULL)
    return bench_fail("out of memory"), -1;
  for (int i = 0; i < inflight; i++) {
    slots[i] = (slot){r, NULL, rlock_owner_new()};
    start_pair(&slots[i]);
  }
  run_for(r, WARMUP_S);
  r->counting = 1;
  int64_t t0 = bench_now_ns();
  run_for(r, a->seconds);
  long long pairs = r->pairs;
  double secs = (double)(bench_now_ns() - t0) / 1e9;
  r->counting = 2;
  while (r->in_flight > 0 && !r->failed) /* let every slot finish */
    uv_run(&r->loop, UV_RUN_ONCE);
  free(slots);
  return r->failed ? -1 : (double)pairs / secs;
}

/* ---- handoff to an async waiter --------------------------------------- */

static void turn_acquired(void *arg, int rc, int64_t v);

static void turn_released(void *arg, int rc, int64_t v) {
  (void)v;
  run *r = arg;
  if (rc != RLOCK_OK)
    fail(r, "rlock_lock_release_async", rc);
  if (r->counting == 2)
    r->counting = 3; /* the last release is in: done */
}

/* The holder has the lock: the other owner starts waiting, then the
 * holder releases once the waiter is asleep (its first attempt came back
 * "held": the timer below gives it a moment). */
static void on_release_time(uv_timer_t *t) {
  run *r = t->data;
  r->released_ns = bench_now_ns();
  int rc = rlock_lock_release_async(r->turn_lock, r->owners[r->holder],
                                    turn_released, r);
  if (rc != RLOCK_OK)
    fail(r, "rlock_lock_release_async", rc);
  r->holder ^= 1;
}

static uv_timer_t release_timer;

static void wait_turn(run *r, int who) {
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.owner = r->owners[who];
  o.lease_ms = 10000;
  int rc = rlock_lock_acquire_async(r->turn_lock, &o, turn_acquired, r, NULL);
  if (rc != RLOCK_OK)
    fail(r, "rlock_lock_acquire_async", rc);
}

static void turn_acquired(void *arg, int rc, int64_t v) {
  (void)v;
  run *r = arg;
  if (rc != RLOCK_OK) {
    fail(r, "rlock_lock_acquire_async", rc);
    return;
  }
  if (r->released_ns != 0)
    bench_samples_push(&r->handoff, bench_now_ns() - r->released_ns);
  if (--r->handoffs_left <= 0) {
    r->counting = 2;
    rlock_lock_release_async(r->turn_lock, r->owners[r->holder], turn_released,
                             r);
    return;
  }
  wait_turn(r, r->holder ^ 1);                           /* the waiter */
  uv_timer_start(&release_timer, on_release_time, 2, 0); /* asleep by then */
}

static int handoffs(run *r, long n) {
  if (bench_samples_init(&r->handoff, (size_t)n) != 0)
    return bench_fail("out of memory");
  if (rlock_lock_new(&r->turn_lock, r->client, "bench:loop:turn") != RLOCK_OK)
    return bench_fail_rc("rlock_lock_new", RLOCK_EINVAL);
  r->owners[0] = rlock_owner_new();
  r->owners[1] = rlock_owner_new();
  r->holder = 0;
  r->released_ns = 0;
  r->handoffs_left = n + 1; /* the first acquisition is no handoff */
  r->counting = 0;
  uv_timer_init(&r->loop, &release_timer);
  release_timer.data = r;
  wait_turn(r, 0);
  while (r->counting != 3 && !r->failed)
    uv_run(&r->loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&release_timer, NULL);
  uv_run(&r->loop, UV_RUN_NOWAIT);
  rlock_lock_free(r->turn_lock);
  return r->failed ? BENCH_EXIT_FAIL : 0;
}

int bench_loop(const bench_args *a) {
  run r = {.rng = 0x9e3779b97f4a7c15ULL, .nlocks = a->locks};
  uv_loop_init(&r.loop);
  rlock_config *cfg;
  if (rlock_config_new(&cfg) != RLOCK_OK ||
      rlock_config_set_url(cfg, a->url) != RLOCK_OK ||
      rlock_client_new_uv(&r.client, cfg, &r.loop) != RLOCK_OK)
    return bench_fail_rc("rlock_client_new_uv", rlock_error_last()->code);
  rlock_config_free(cfg);
  r.locks = calloc((size_t)a->locks, sizeof *r.locks);
  for (int i = 0; r.locks != NULL && i < a->locks; i++) {
    char name[64];
    snprintf(name, sizeof name, "bench:loop:%d", i);
    if (rlock_lock_new(&r.locks[i], r.client, name) != RLOCK_OK)
      return bench_fail_rc("rlock_lock_new", rlock_error_last()->code);
  }
  if (r.locks == NULL)
    return bench_fail("out of memory");
  double pps = throughput(&r, a, a->threads);
  int rc = pps < 0 ? BENCH_EXIT_FAIL : handoffs(&r, a->ops);
  if (rc == 0) {
    bench_report rep;
    bench_report_begin(&rep, a->json, "loop");
    bench_report_int(&rep, "inflight", a->threads);
    bench_report_int(&rep, "locks", a->locks);
    bench_report_num(&rep, "pairs_per_s", pps, 0);
    bench_report_int(&rep, "handoffs", (long long)r.handoff.n);
    bench_report_num(&rep, "handoff_p50_us", bench_samples_us(&r.handoff, 50),
                     1);
    bench_report_num(&rep, "handoff_p99_us", bench_samples_us(&r.handoff, 99),
                     1);
    bench_report_end(&rep);
  }
  bench_samples_free(&r.handoff);
  for (int i = 0; i < a->locks; i++)
    rlock_lock_free(r.locks[i]);
  free(r.locks);
  rlock_client_free(r.client);
  uv_run(&r.loop, UV_RUN_NOWAIT);
  uv_loop_close(&r.loop);
  return rc;
}
