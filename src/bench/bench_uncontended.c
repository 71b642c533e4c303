/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_uncontended.c - what one lock+unlock pair costs over the wire
 * minimum.
 *
 * Three series, measured in one run and interleaved step by step so that
 * noise on a shared machine hits all of them alike:
 *   rlock  rlock_lock_acquire() (watchdog lease) + rlock_lock_release();
 *   floor  the same two scripts (the library's embedded lock_acquire and
 *          lock_release, by EVALSHA) from a bare hiredis loop on one
 *          connection, same key, same lease, an owner of the same shape;
 *          it is what any client must pay: two round trips plus the
 *          scripts' run time on the server;
 *   ping   PING round trips on the floor's connection: one round trip with
 *          (almost) no server work.
 * Each sample is one pair (or one PING), timed on CLOCK_MONOTONIC. A step
 * is one rlock pair and one floor pair, in alternating order; a PING
 * follows every PING_EVERY-th step. The steps run in blocks of
 * BENCH_BLOCK, each on fresh connections (below).
 *
 * Why step by step rather than in blocks of a thousand: on the 2-vCPU VM
 * these figures were first taken on, loopback latency switches between
 * two levels (a PING takes ~21 or ~31 us), sometimes for stretches of
 * milliseconds to minutes, sometimes per connection for the connection's
 * whole life. Alternating blocks of ~60 ms, or two connections on
 * different levels, made the two series land on different levels and
 * report a 1.4x "overhead" that was not the library's. Hence:
 *  - step-by-step interleaving, against the stretches;
 *  - connection matching, against the per-connection levels: every block
 *    gets a fresh client and a fresh bare connection, and the bare one is
 *    re-opened (up to MATCH_TRIES times) until its PING time is within
 *    MATCH_TOLERANCE of the client's (rlock_client_ping() goes over the
 *    pool's one connection, the one the pairs use). Blocks that could not
 *    be matched are counted and reported as "unmatched_blocks".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define PING_EVERY 5    /* steps per PING */
#define WARMUP_PAIRS 50 /* per block, per series: opens, warms caches */
#define MATCH_PINGS 60  /* PINGs to find a connection's level */
#define MATCH_TRIES 10
#define MATCH_TOLERANCE 0.12
/* The floor's connection and its two commands, prebuilt. */
typedef struct floor_cmds {
  redisContext *c;
  bench_lock_cmds cmd;
} floor_cmds;

/* What one block runs on: a fresh client and a matched bare connection. */
typedef struct block {
  rlock_client *client;
  rlock_lock *lock;
  floor_cmds floor;
} block;

typedef struct series {
  bench_samples rlock, floor, ping;
  int unmatched;
} series;

static void floor_init(floor_cmds *f, redisContext *c, const char *name) {
  f->c = c;
  bench_lock_cmds_init(&f->cmd, name);
}

/* ---- the timed operations ------------------------------------------------ */

/* One floor pair; checks the answers so the floor cannot be cheating by
 * e.g. failing fast. */
static int floor_pair(floor_cmds *f) {
  redisReply *a = redisCommandArgv(f->c, 6, f->cmd.acq, NULL);
  int ok = a != NULL && a->type == REDIS_REPLY_NIL;
  freeReplyObject(a);
  redisReply *r = ok ? redisCommandArgv(f->c, 11, f->cmd.rel, NULL) : NULL;
  ok = r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
  freeReplyObject(r);
  if (!ok)
    return bench_fail("floor: unexpected reply or I/O error (%s)",
                      f->c->err ? f->c->errstr : "bad reply"),
           -1;
  return 0;
}

static int rlock_pair(rlock_lock *l) {
  int rc = rlock_lock_acquire(l);
  if (rc != RLOCK_OK)
    return bench_fail_rc("rlock_lock_acquire", rc), -1;
  if ((rc = rlock_lock_release(l)) != RLOCK_OK)
    return bench_fail_rc("rlock_lock_release", rc), -1;
  return 0;
}

static int run_rlock(rlock_lock *l, long n, bench_samples *out) {
  for (long i = 0; i < n; i++) {
    int64_t t0 = bench_now_ns();
    if (rlock_pair(l) != 0)
      return -1;
    bench_samples_push(out, bench_now_ns() - t0);
  }
  return 0;
}

static int run_floor(floor_cmds *f, long n, bench_samples *out) {
  for (long i = 0; i < n; i++) {
    int64_t t0 = bench_now_ns();
    if (floor_pair(f) != 0)
      return -1;
    bench_samples_push(out, bench_now_ns() - t0);
  }
  return 0;
}

/* ---- per-block connections ----------------------------------------------- */

/* Median PING time over the client's pool connection, in us. */
static double client_ping_us(rlock_client *c) {
  int64_t v[MATCH_PINGS];
  for (int i = 0; i < MATCH_PINGS; i++) {
    int64_t t0 = bench_now_ns();
    if (rlock_client_ping(c, NULL) != RLOCK_OK)
      return NAN;
    v[i] = bench_now_ns() - t0;
  }
  return bench_percentile_us(v, MATCH_PINGS, 50);
}

static double raw_ping_us(redisContext *c) {
  int64_t v[MATCH_PINGS];
  bench_samples s = {v, 0, MATCH_PINGS};
  return bench_raw_ping(c, &s, MATCH_PINGS) == 0
             ? bench_percentile_us(v, MATCH_PINGS, 50)
             : NAN;
}

/* Open bare connections until one's PING time matches `want_us`; keeps
 * the last one tried when none does (*matched = 0). */
static int open_floor(const char *url, const char *name, double want_us,
                      floor_cmds *f, int *matched) {
  bench_samples scratch = {NULL, 0, 0};
  *matched = 0;
  for (int t = 0; t < MATCH_TRIES && !*matched; t++) {
    if (f->c != NULL)
      redisFree(f->c);
    f->c = NULL;
    redisContext *c = bench_raw_connect(url);
    if (c == NULL)
      return -1;
    floor_init(f, c, name);
    if (run_floor(f, WARMUP_PAIRS, &scratch) != 0)
      return -1;
    *matched = fabs(raw_ping_us(c) - want_us) <= MATCH_TOLERANCE * want_us;
  }
  return 0;
}

static void close_block(block *b) {
  rlock_lock_free(b->lock);
  rlock_client_free(b->client);
  if (b->floor.c != NULL)
    redisFree(b->floor.c);
  memset(b, 0, sizeof *b);
}

/* A fresh client (warmed up) and a bare connection matched to it. */
static int open_block(const char *url, const char *name, block *b,
                      int *matched) {
  bench_samples scratch = {NULL, 0, 0};
  memset(b, 0, sizeof *b);
  if ((b->client = bench_client_new(url)) == NULL)
    return -1;
  int rc = rlock_lock_new(&b->lock, b->client, name);
  if (rc != RLOCK_OK)
    return bench_fail_rc("rlock_lock_new", rc), -1;
  if (run_rlock(b->lock, WARMUP_PAIRS, &scratch) != 0)
    return -1;
  double want = client_ping_us(b->client);
  if (isnan(want))
    return bench_fail_rc("rlock_client_ping", rlock_error_last()->code), -1;
  return open_floor(url, name, want, &b->floor, matched);
}

/* ---- the run ------------------------------------------------------------- */

/* One timed rlock pair and one timed floor pair, in an order that
 * alternates from step to step so that neither always runs first. */
static int step(block *b, long i, series *s) {
  int64_t t0 = bench_now_ns();
  int rc = i & 1 ? floor_pair(&b->floor) : rlock_pair(b->lock);
  int64_t t1 = bench_now_ns();
  if (rc == 0)
    rc = i & 1 ? rlock_pair(b->lock) : floor_pair(&b->floor);
  int64_t t2 = bench_now_ns();
  if (rc != 0)
    return -1;
  bench_samples_push(&s->rlock, i & 1 ? t2 - t1 : t1 - t0);
  bench_samples_push(&s->floor, i & 1 ? t1 - t0 : t2 - t1);
  return 0;
}

/* What every block of a run needs. */
typedef struct run {
  const char *url, *name;
  series *s;
} run;

/* One block on fresh connections: n steps, with a PING on the floor's
 * connection after every PING_EVERY-th. */
static int run_block(void *arg, long n) {
  const run *r = arg;
  series *s = r->s;
  block b;
  int matched = 0;
  int rc = open_block(r->url, r->name, &b, &matched);
  s->unmatched += rc == 0 && !matched;
  for (long i = 0; i < n && rc == 0; i++) {
    rc = step(&b, i, s);
    if (rc == 0 && i % PING_EVERY == PING_EVERY - 1)
      rc = bench_raw_ping(b.floor.c, &s->ping, 1);
  }
  close_block(&b);
  return rc;
}

static int measure(const char *url, const char *name, long ops, series *s) {
  if (bench_samples_init(&s->rlock, (size_t)ops) != 0 ||
      bench_samples_init(&s->floor, (size_t)ops) != 0 ||
      bench_samples_init(&s->ping, (size_t)(ops / PING_EVERY + 1)) != 0)
    return bench_fail("out of memory"), -1;
  run r = {url, name, s};
  return bench_run_blocks(ops, run_block, &r);
}

static void report(const bench_args *a, series *s) {
  long blocks = bench_block_count(a->ops);
  double ping = bench_percentile_us(s->ping.v, s->ping.n, 50);
  double p50 = bench_percentile_us(s->rlock.v, s->rlock.n, 50);
  double p99 = bench_percentile_us(s->rlock.v, s->rlock.n, 99);
  double f50 = bench_percentile_us(s->floor.v, s->floor.n, 50);
  double f99 = bench_percentile_us(s->floor.v, s->floor.n, 99);
  bench_report r;
  bench_report_begin(&r, a->json, "uncontended");
  bench_report_int(&r, "ops", a->ops);
  bench_report_int(&r, "blocks", blocks);
  bench_report_int(&r, "unmatched_blocks", s->unmatched);
  bench_report_num(&r, "ping_rtt_us", ping, 1);
  bench_report_num(&r, "lock_unlock_p50_us", p50, 1);
  bench_report_num(&r, "lock_unlock_p99_us", p99, 1);
  bench_report_num(&r, "floor_p50_us", f50, 1);
  bench_report_num(&r, "floor_p99_us", f99, 1);
  bench_report_num(&r, "lock_unlock_vs_floor", p50 / f50, 3);
  bench_report_end(&r);
}

int bench_uncontended(const bench_args *a) {
  char name[64];
  bench_key(name, sizeof name, "rlock-bench:uncontended", (long)getpid());
  series s;
  memset(&s, 0, sizeof s);
  int rc = bench_load_lock_scripts(a->url) == 0 &&
                   measure(a->url, name, a->ops, &s) == 0
               ? 0
               : BENCH_EXIT_FAIL;
  if (rc == 0)
    report(a, &s);
  bench_samples_free(&s.rlock);
  bench_samples_free(&s.floor);
  bench_samples_free(&s.ping);
  return rc;
}
