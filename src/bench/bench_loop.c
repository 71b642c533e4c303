/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_loop.c - an event-loop client (rlock/loop.h) on one loop thread,
 * libuv or libevent (--driver, loopdrv.h).
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
 * waiter's callback, on the same thread and clock. Two phases: K handoffs
 * to a waiter that started waiting 2 ms before the release, then
 * max(20, K/200) to one asleep 5-105 ms (a random time each turn, as
 * bench_handoff.c's --hold-us 5000 --hold-max-us 105000), whose loop has
 * been idle that long.
 *
 * Bounded waits: with the lock held by one owner, the other asks for it
 * with a 2 ms bound, max(20, K/100) times one after the other; each ends
 * RLOCK_ELOCKED when the client's timer (the adapter's) fires. A figure
 * is from the call to the callback: the bound plus the timer's lateness.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "loopdrv.h"

#define WARMUP_S 0.5

typedef struct slot slot;

typedef struct run {
  bench_loopdrv *drv;
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
  long hold_us, hold_max_us; /* the waiter's sleep before each release */
  bench_looptimer *release_timer;
  bench_samples *handoff; /* the phase's series */
  bench_samples fresh, asleep, bounded;
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

/* Run the loop for `seconds` (a timer ends the last turn's wait). */
static void on_deadline(void *arg) { (void)arg; }

static int run_for(run *r, double seconds) {
  bench_looptimer *t = bench_looptimer_new(r->drv, on_deadline, NULL);
  if (t == NULL)
    return -1;
  bench_looptimer_start(t, seconds * 1000);
  int64_t end = bench_now_ns() + (int64_t)(seconds * 1e9);
  while (bench_now_ns() < end && !r->failed)
    bench_loopdrv_run_once(r->drv);
  bench_looptimer_free(t);
  return 0;
}

static double throughput(run *r, const bench_args *a, int inflight) {
  slot *slots = calloc((size_t)inflight, sizeof *slots);
  if (slots == NULL)
    return bench_fail("out of memory"), -1;
  for (int i = 0; i < inflight; i++) {
    slots[i] = (slot){r, NULL, rlock_owner_new()};
    start_pair(&slots[i]);
  }
  r->failed += run_for(r, WARMUP_S) != 0;
  r->counting = 1;
  int64_t t0 = bench_now_ns();
  r->failed += run_for(r, a->seconds) != 0;
  long long pairs = r->pairs;
  double secs = (double)(bench_now_ns() - t0) / 1e9;
  r->counting = 2;
  while (r->in_flight > 0 && !r->failed) /* let every slot finish */
    bench_loopdrv_run_once(r->drv);
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
static void on_release_time(void *arg) {
  run *r = arg;
  r->released_ns = bench_now_ns();
  int rc = rlock_lock_release_async(r->turn_lock, r->owners[r->holder],
                                    turn_released, r);
  if (rc != RLOCK_OK)
    fail(r, "rlock_lock_release_async", rc);
  r->holder ^= 1;
}

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
    bench_samples_push(r->handoff, bench_now_ns() - r->released_ns);
  if (--r->handoffs_left <= 0) {
    r->counting = 2;
    rlock_lock_release_async(r->turn_lock, r->owners[r->holder], turn_released,
                             r);
    return;
  }
  wait_turn(r, r->holder ^ 1); /* the waiter */
  long us = r->hold_us;        /* asleep by then */
  if (r->hold_max_us > us)
    us += (long)(bench_rand(&r->rng) % (uint64_t)(r->hold_max_us - us + 1));
  bench_looptimer_start(r->release_timer, (double)us / 1000);
}

/* n handoffs into `into`, the waiter asleep hold_us to hold_max_us. */
static int handoffs(run *r, long n, bench_samples *into, long hold_us,
                    long hold_max_us) {
  if (bench_samples_init(into, (size_t)n) != 0)
    return bench_fail("out of memory");
  if (rlock_lock_new(&r->turn_lock, r->client, "bench:loop:turn") != RLOCK_OK)
    return bench_fail_rc("rlock_lock_new", rlock_error_last()->code);
  r->owners[0] = rlock_owner_new();
  r->owners[1] = rlock_owner_new();
  r->holder = 0;
  r->released_ns = 0;
  r->handoffs_left = n + 1; /* the first acquisition is no handoff */
  r->counting = 0;
  r->handoff = into;
  r->hold_us = hold_us;
  r->hold_max_us = hold_max_us;
  r->release_timer = bench_looptimer_new(r->drv, on_release_time, r);
  if (r->release_timer == NULL)
    r->failed++;
  else
    wait_turn(r, 0);
  while (r->counting != 3 && !r->failed)
    bench_loopdrv_run_once(r->drv);
  bench_looptimer_free(r->release_timer);
  rlock_lock_free(r->turn_lock);
  return r->failed ? BENCH_EXIT_FAIL : 0;
}

/* ---- bounded waits: the client's timer -------------------------------- */

#define BOUNDED_WAIT_MS 2

static void bounded_next(run *r);

static void bounded_done(void *arg, int rc, int64_t v) {
  (void)v;
  run *r = arg;
  if (rc != RLOCK_ELOCKED) {
    if (rc == RLOCK_OK)
      bench_fail("a bounded wait got a lock held elsewhere");
    fail(r, "rlock_lock_acquire_async (bounded wait)", rc);
    return;
  }
  bench_samples_push(&r->bounded, bench_now_ns() - r->released_ns);
  bounded_next(r);
}

/* The next bounded wait by owners[1], or the holder's release when all
 * are done. */
static void bounded_next(run *r) {
  int rc;
  if (r->bounded.n >= r->bounded.cap) {
    r->counting = 2;
    rc = rlock_lock_release_async(r->turn_lock, r->owners[0], turn_released, r);
  } else {
    rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
    o.owner = r->owners[1];
    o.wait_ms = BOUNDED_WAIT_MS;
    r->released_ns = bench_now_ns(); /* the wait's start */
    rc = rlock_lock_acquire_async(r->turn_lock, &o, bounded_done, r, NULL);
  }
  if (rc != RLOCK_OK)
    fail(r, "rlock_lock_*_async (bounded wait)", rc);
}

static void holder_in(void *arg, int rc, int64_t v) {
  (void)v;
  run *r = arg;
  if (rc != RLOCK_OK)
    fail(r, "rlock_lock_acquire_async (holder)", rc);
  else
    bounded_next(r);
}

static int bounded_waits(run *r, long n) {
  if (bench_samples_init(&r->bounded, (size_t)n) != 0)
    return bench_fail("out of memory");
  if (rlock_lock_new(&r->turn_lock, r->client, "bench:loop:bounded") !=
      RLOCK_OK)
    return bench_fail_rc("rlock_lock_new", rlock_error_last()->code);
  r->counting = 0;
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.owner = r->owners[0];
  o.lease_ms = 10000;
  int rc = rlock_lock_acquire_async(r->turn_lock, &o, holder_in, r, NULL);
  if (rc != RLOCK_OK)
    fail(r, "rlock_lock_acquire_async (holder)", rc);
  while (r->counting != 3 && !r->failed)
    bench_loopdrv_run_once(r->drv);
  rlock_lock_free(r->turn_lock);
  return r->failed ? BENCH_EXIT_FAIL : 0;
}

static void report_series(bench_report *rep, const char *name,
                          bench_samples *s) {
  char key[64];
  static const struct {
    const char *suffix;
    double p;
  } ps[] = {{"p50_us", 50}, {"p99_us", 99}, {"max_us", 100}};
  snprintf(key, sizeof key, "%s", name);
  bench_report_int(rep, key, (long long)s->n);
  for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
    snprintf(key, sizeof key, "%s_%s", name, ps[i].suffix);
    bench_report_num(rep, key, bench_samples_us(s, ps[i].p), 1);
  }
}

static void report(run *r, const bench_args *a, double pps) {
  bench_report rep;
  bench_report_begin(&rep, a->json, "loop");
  bench_report_int(&rep, "driver_event", a->driver_event); /* 0: libuv */
  bench_report_int(&rep, "inflight", a->threads);
  bench_report_int(&rep, "locks", a->locks);
  bench_report_num(&rep, "pairs_per_s", pps, 0);
  report_series(&rep, "handoff", &r->fresh);
  report_series(&rep, "handoff_asleep", &r->asleep);
  report_series(&rep, "bounded_2ms", &r->bounded);
  bench_report_end(&rep);
}

static int make_locks(run *r, int n) {
  r->locks = calloc((size_t)n, sizeof *r->locks);
  if (r->locks == NULL)
    return bench_fail("out of memory");
  for (int i = 0; i < n; i++) {
    char name[64];
    snprintf(name, sizeof name, "bench:loop:%d", i);
    if (rlock_lock_new(&r->locks[i], r->client, name) != RLOCK_OK)
      return bench_fail_rc("rlock_lock_new", rlock_error_last()->code);
  }
  return 0;
}

int bench_loop(const bench_args *a) {
  run r = {.rng = 0x9e3779b97f4a7c15ULL, .nlocks = a->locks};
  r.drv = bench_loopdrv_new(a->driver_event ? "event" : "uv", a->url);
  if (r.drv == NULL)
    return BENCH_EXIT_FAIL;
  r.client = bench_loopdrv_client(r.drv);
  int rc = make_locks(&r, a->locks);
  double pps = rc != 0 ? -1 : throughput(&r, a, a->threads);
  long asleep_n = a->ops / 200 > 20 ? a->ops / 200 : 20;
  rc = pps < 0 ? BENCH_EXIT_FAIL : handoffs(&r, a->ops, &r.fresh, 2000, 2000);
  if (rc == 0)
    rc = handoffs(&r, asleep_n, &r.asleep, 5000, 105000);
  if (rc == 0)
    rc = bounded_waits(&r, a->ops / 100 > 20 ? a->ops / 100 : 20);
  if (rc == 0)
    report(&r, a, pps);
  bench_samples_free(&r.fresh);
  bench_samples_free(&r.asleep);
  bench_samples_free(&r.bounded);
  for (int i = 0; r.locks != NULL && i < a->locks; i++)
    if (r.locks[i] != NULL)
      rlock_lock_free(r.locks[i]);
  free(r.locks);
  bench_loopdrv_free(r.drv);
  return rc;
}
