/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_redlock.c - what a RedLock lock+unlock costs next to a plain lock
 * on one server: does contacting N servers cost one round trip or N?
 *
 * Four series, measured in one thread and interleaved step by step (as in
 * bench_uncontended.c, and for the same reason: this machine's loopback
 * latency changes level in stretches, which must hit all series alike):
 *   single   rlock_lock_try_acquire(lock, 0, LEASE_MS) +
 *            rlock_lock_release() on the first server;
 *   redlock  rlock_redlock_try_acquire(&result, r, 0, LEASE_MS) +
 *            rlock_redlock_release() over one member per server (-u), each
 *            a reentrant lock of the same name on its own client;
 * and, for what this machine allows whatever the client, from a bare
 * hiredis connection per server:
 *   ping         a PING round trip to the first server;
 *   ping fanout  a PING written to every server, then every reply read:
 *                what contacting the N servers at once costs with no
 *                library and no script.
 * Each sample is one pair (or one PING, one fan-out), timed on
 * CLOCK_MONOTONIC. A step is one pair of each kind, in an order that
 * alternates from step to step; every PING_EVERY-th step adds a PING and
 * a PING fan-out, also alternating. The steps run in blocks of
 * BENCH_BLOCK, each on fresh clients and connections, so that connections
 * stuck on one latency level for their whole life average out over the
 * blocks; each block warms up first (not recorded).
 *
 * Every RedLock acquisition asks for its result, whose validity feeds
 * validity_min_ms / validity_max_ms. That costs nothing measurable: the
 * library builds the result whether or not it is asked for (callgrind
 * counted the same instructions per pair with a result asked for on every
 * acquisition and on every 100th only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define WARMUP_PAIRS 50 /* steps per block: opens, warms caches */
#define LEASE_MS 10000  /* both locks, fixed: no watchdog renewals */
#define PING_EVERY 5    /* steps per PING and PING fan-out */

/* What one block runs on: fresh clients, their locks and the RedLock. */
typedef struct block {
  int n; /* servers */
  rlock_client *clients[BENCH_MAX_URLS];
  rlock_lock *members[BENCH_MAX_URLS];
  rlock_redlock *red;
  rlock_client *single_client;
  rlock_lock *single;
  redisContext *raw[BENCH_MAX_URLS]; /* bare, one per server */
} block;

typedef struct series {
  bench_samples single, red, ping, fanout;
  long validity_n; /* results looked at (warm-up included) */
  int64_t validity_min, validity_max;
} series;

/* ---- the timed operations ------------------------------------------------ */

static int single_pair(rlock_lock *l) {
  int rc = rlock_lock_try_acquire(l, 0, LEASE_MS);
  if (rc != RLOCK_OK)
    return bench_fail_rc("rlock_lock_try_acquire", rc), -1;
  if ((rc = rlock_lock_release(l)) != RLOCK_OK)
    return bench_fail_rc("rlock_lock_release", rc), -1;
  return 0;
}

/* Note a result's validity; it must be positive and within the lease. */
static int take_validity(series *s, const rlock_redlock_result *res) {
  int64_t v = rlock_redlock_result_validity_ms(res);
  if (v <= 0 || v > LEASE_MS)
    return bench_fail("RedLock validity %lld ms outside (0, %d]", (long long)v,
                      LEASE_MS),
           -1;
  s->validity_min =
      s->validity_n == 0 || v < s->validity_min ? v : s->validity_min;
  s->validity_max = v > s->validity_max ? v : s->validity_max;
  s->validity_n++;
  return 0;
}

static int red_pair(rlock_redlock *r, series *s) {
  rlock_redlock_result *res = NULL;
  int rc = rlock_redlock_try_acquire(&res, r, 0, LEASE_MS);
  if (rc != RLOCK_OK) {
    bench_fail_rc("rlock_redlock_try_acquire", rc);
    rlock_redlock_result_free(res);
    return -1;
  }
  int bad = take_validity(s, res) != 0;
  rlock_redlock_result_free(res);
  if (!bad && (rc = rlock_redlock_release(r)) != RLOCK_OK)
    return bench_fail_rc("rlock_redlock_release", rc), -1;
  return bad ? -1 : 0;
}

/* One timed pair of each kind, in an order that alternates from step to
 * step so that neither always runs first. */
static int step(block *b, long i, series *s, int record) {
  int64_t t0 = bench_now_ns();
  int rc = i & 1 ? red_pair(b->red, s) : single_pair(b->single);
  int64_t t1 = bench_now_ns();
  if (rc == 0)
    rc = i & 1 ? single_pair(b->single) : red_pair(b->red, s);
  int64_t t2 = bench_now_ns();
  if (rc != 0)
    return -1;
  if (record) {
    bench_samples_push(&s->single, i & 1 ? t2 - t1 : t1 - t0);
    bench_samples_push(&s->red, i & 1 ? t1 - t0 : t2 - t1);
  }
  return 0;
}

/* A PING to the first server and a PING fan-out to all, in an order that
 * alternates from one call to the next (i steps by PING_EVERY). */
static int ping_step(block *b, long i, series *s, int record) {
  bench_samples scratch = {NULL, 0, 0};
  bench_samples *ping = record ? &s->ping : &scratch;
  bench_samples *fan = record ? &s->fanout : &scratch;
  int ping_at = i / PING_EVERY & 1, rc = 0; /* 0: PING first */
  for (int k = 0; k < 2 && rc == 0; k++)
    rc = k == ping_at ? bench_raw_ping(b->raw[0], ping, 1)
                      : bench_raw_ping_fanout(b->raw, b->n, fan);
  return rc;
}

/* A step, with the PINGs every PING_EVERY-th. */
static int step_all(block *b, long i, series *s, int record) {
  int rc = step(b, i, s, record);
  if (rc == 0 && i % PING_EVERY == PING_EVERY - 1)
    rc = ping_step(b, i, s, record);
  return rc;
}

/* ---- per-block clients --------------------------------------------------- */

static void close_block(block *b) {
  rlock_redlock_free(b->red);
  for (int i = 0; i < b->n; i++) {
    rlock_lock_free(b->members[i]);
    rlock_client_free(b->clients[i]);
    if (b->raw[i] != NULL)
      redisFree(b->raw[i]);
  }
  rlock_lock_free(b->single);
  rlock_client_free(b->single_client);
  memset(b, 0, sizeof *b);
}

/* A client for `url` and a lock `name` on it. */
static int open_lock(const char *url, const char *name, rlock_client **c,
                     rlock_lock **l) {
  if ((*c = bench_client_new(url)) == NULL)
    return -1;
  int rc = rlock_lock_new(l, *c, name);
  return rc == RLOCK_OK ? 0 : (bench_fail_rc("rlock_lock_new", rc), -1);
}

/* Fresh clients: one per server with a member lock `name` and a bare
 * connection, and one on the first server with the plain lock `single`
 * (its own client, so that the RedLock's use of its first member's pool
 * cannot touch it). */
static int open_block(const bench_args *a, const char *name, const char *single,
                      block *b) {
  memset(b, 0, sizeof *b);
  for (int i = 0; i < a->nurls; i++) {
    b->n = i + 1; /* close_block() frees what is set */
    if (open_lock(a->urls[i], name, &b->clients[i], &b->members[i]) != 0 ||
        (b->raw[i] = bench_raw_connect(a->urls[i])) == NULL)
      return -1;
  }
  int rc = rlock_redlock_new(&b->red, b->members, (size_t)b->n);
  if (rc != RLOCK_OK)
    return bench_fail_rc("rlock_redlock_new", rc), -1;
  return open_lock(a->urls[0], single, &b->single_client, &b->single);
}

/* ---- the run ------------------------------------------------------------- */

/* What every block of a run needs. */
typedef struct run {
  const bench_args *a;
  const char *name, *single;
  series *s;
} run;

/* One block on fresh clients: warm-up steps, then n recorded ones. */
static int run_block(void *arg, long n) {
  const run *r = arg;
  block b;
  int rc = open_block(r->a, r->name, r->single, &b);
  for (long i = 0; i < WARMUP_PAIRS && rc == 0; i++)
    rc = step_all(&b, i, r->s, 0);
  for (long i = 0; i < n && rc == 0; i++)
    rc = step_all(&b, i, r->s, 1);
  close_block(&b);
  return rc;
}

static int measure(const bench_args *a, const char *name, const char *single,
                   series *s) {
  size_t pings = (size_t)(a->ops / PING_EVERY + 1);
  if (bench_samples_init(&s->single, (size_t)a->ops) != 0 ||
      bench_samples_init(&s->red, (size_t)a->ops) != 0 ||
      bench_samples_init(&s->ping, pings) != 0 ||
      bench_samples_init(&s->fanout, pings) != 0)
    return bench_fail("out of memory"), -1;
  run r = {a, name, single, s};
  return bench_run_blocks(a->ops, run_block, &r);
}

static void report(const bench_args *a, series *s) {
  double s50 = bench_samples_us(&s->single, 50);
  double r50 = bench_samples_us(&s->red, 50);
  double p50 = bench_samples_us(&s->ping, 50);
  double f50 = bench_samples_us(&s->fanout, 50);
  bench_report r;
  bench_report_begin(&r, a->json, "redlock");
  bench_report_int(&r, "servers", a->nurls);
  bench_report_int(&r, "ops", a->ops);
  bench_report_int(&r, "blocks", bench_block_count(a->ops));
  bench_report_int(&r, "lease_ms", LEASE_MS);
  bench_report_num(&r, "single_p50_us", s50, 1);
  bench_report_num(&r, "single_p99_us", bench_samples_us(&s->single, 99), 1);
  bench_report_num(&r, "redlock_p50_us", r50, 1);
  bench_report_num(&r, "redlock_p99_us", bench_samples_us(&s->red, 99), 1);
  bench_report_num(&r, "ratio", r50 / s50, 3);
  bench_report_num(&r, "sequential_estimate_us", a->nurls * s50, 1);
  bench_report_int(&r, "validity_samples", s->validity_n);
  bench_report_int(&r, "validity_min_ms", s->validity_min);
  bench_report_int(&r, "validity_max_ms", s->validity_max);
  bench_report_num(&r, "ping_p50_us", p50, 1);
  bench_report_num(&r, "ping_fanout_p50_us", f50, 1);
  bench_report_num(&r, "ping_fanout_ratio", f50 / p50, 3);
  bench_report_end(&r);
}

int bench_redlock(const bench_args *a) {
  char name[64], single[64];
  bench_key(name, sizeof name, "rlock-bench:redlock", (long)getpid());
  bench_key(single, sizeof single, "rlock-bench:redlock:single",
            (long)getpid());
  series s;
  memset(&s, 0, sizeof s);
  int rc = measure(a, name, single, &s) == 0 ? 0 : BENCH_EXIT_FAIL;
  if (rc == 0)
    report(a, &s);
  bench_samples_free(&s.single);
  bench_samples_free(&s.red);
  bench_samples_free(&s.ping);
  bench_samples_free(&s.fanout);
  return rc;
}
