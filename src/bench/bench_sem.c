/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_sem.c - the semaphore workload: one permit at a time, of either
 * kind, the figures bench/peers compares with redis-semaphore's Semaphore.
 *
 * --kind plain      rlock_semaphore (Redisson's RSemaphore; permits never
 *                   expire);
 * --kind expirable  rlock_psemaphore (RPermitExpirableSemaphore), every
 *                   permit taken with the watchdog (RLOCK_LEASE_WATCHDOG),
 *                   which renews it as a lock's watchdog renews a lock.
 *
 * Without --procs (uncontended): one thread, one client, a semaphore of 1
 * permit; 100 warm-up pairs, then K acquire + release pairs of one permit
 * in a row: p50/p99 of a pair and pairs/s over the loop's time.
 *
 * With --procs N: N processes (turns.h, spec.permits) on a semaphore of P
 * permits (--permits, default 1), K acquisitions each, waiting as long as
 * it takes; each holder counts itself in (INCR of a holders key), holds H
 * us, counts itself out (DECR) and releases, then thinks T us. Reported:
 * acquisitions/s, every acquisition's wait p50/p99 (from the call to its
 * return, waits or not), the handoffs (turns.h: from the latest release
 * to an acquisition that started before it, so with permits to spare one
 * that did not need that release counts too) and the overlaps (more
 * than P holders counted at once: a broken semaphore; the run then exits
 * 1). With --ping-pong the processes take turns strictly (turns.h,
 * spec.alternate): with 2 processes and 1 permit, the handoff to a
 * sleeping waiter.
 *
 * Each process makes its own client after fork, and sets the permits with
 * try_set_permits (the first one sets them, as `rlock exec --permits`).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "turns.h"

#define WARMUP_PAIRS 100

/* One object of either kind, holding at most one permit at a time. */
typedef struct sem_obj {
  int expirable;
  rlock_semaphore *plain;
  rlock_psemaphore *exp;
  char id[RLOCK_PERMIT_ID_LEN + 1]; /* the permit held (expirable) */
} sem_obj;

static int sem_obj_new(sem_obj *o, rlock_client *c, const char *name,
                       int expirable, long permits) {
  memset(o, 0, sizeof *o);
  o->expirable = expirable;
  int rc = expirable ? rlock_psemaphore_new(&o->exp, c, name)
                     : rlock_semaphore_new(&o->plain, c, name);
  if (rc != RLOCK_OK)
    return bench_fail_rc("semaphore_new", rc);
  rc = expirable ? rlock_psemaphore_try_set_permits(NULL, o->exp, permits)
                 : rlock_semaphore_try_set_permits(NULL, o->plain, permits);
  return rc == RLOCK_OK ? 0 : bench_fail_rc("try_set_permits", rc);
}

static void sem_obj_free(sem_obj *o) {
  rlock_semaphore_free(o->plain);
  rlock_psemaphore_free(o->exp);
}

/* Take one permit, waiting as long as it takes: 0, or -1 (printed). */
static int sem_obj_acquire(sem_obj *o) {
  int rc = o->expirable
               ? rlock_psemaphore_acquire(o->id, o->exp, RLOCK_WAIT_FOREVER,
                                          RLOCK_LEASE_WATCHDOG, NULL)
               : rlock_semaphore_acquire(o->plain, 1, RLOCK_WAIT_FOREVER, NULL);
  return rc == RLOCK_OK ? 0 : (bench_fail_rc("acquire", rc), -1);
}

static int sem_obj_release(sem_obj *o) {
  int rc = o->expirable ? rlock_psemaphore_release(o->exp, o->id)
                        : rlock_semaphore_release(o->plain, 1);
  return rc == RLOCK_OK ? 0 : (bench_fail_rc("release", rc), -1);
}

/* The keys a semaphore NAME uses (deleted before and after). */
typedef struct names {
  char sem[64];
  char timeout[80]; /* "{NAME}:timeout" (expirable) */
  char holders[64];
} names;

static void names_init(names *nm) {
  long pid = (long)getpid();
  bench_key(nm->sem, sizeof nm->sem, "rlock-bench:sem", pid);
  snprintf(nm->timeout, sizeof nm->timeout, "{%s}:timeout", nm->sem);
  bench_key(nm->holders, sizeof nm->holders, "rlock-bench:holders", pid);
}

/* ---- uncontended ----------------------------------------------------------
 */

static int del_keys(const char *url, const names *nm) {
  redisContext *raw = bench_raw_connect(url);
  if (raw == NULL)
    return -1;
  const char *del[3] = {"DEL", nm->sem, nm->timeout};
  redisReply *r = bench_raw_cmd(raw, 3, del, NULL);
  freeReplyObject(r);
  redisFree(raw);
  return r != NULL ? 0 : -1;
}

static int pairs(sem_obj *o, long n, bench_samples *s) {
  for (long i = 0; i < n; i++) {
    int64_t t0 = bench_now_ns();
    if (sem_obj_acquire(o) != 0 || sem_obj_release(o) != 0)
      return -1;
    if (s != NULL)
      bench_samples_push(s, bench_now_ns() - t0);
  }
  return 0;
}

static int uncontended(const bench_args *a, rlock_client *c, const names *nm) {
  sem_obj o;
  bench_samples s;
  if (bench_samples_init(&s, (size_t)a->ops) != 0)
    return bench_fail("out of memory");
  int rc = sem_obj_new(&o, c, nm->sem, a->expirable, 1);
  if (rc == 0)
    rc = pairs(&o, WARMUP_PAIRS, NULL) == 0 ? 0 : BENCH_EXIT_FAIL;
  int64_t t0 = bench_now_ns();
  if (rc == 0)
    rc = pairs(&o, a->ops, &s) == 0 ? 0 : BENCH_EXIT_FAIL;
  double seconds = (double)(bench_now_ns() - t0) / 1e9;
  if (rc == 0) {
    bench_report r;
    bench_report_begin(&r, a->json, "semaphore");
    bench_report_int(&r, "expirable", a->expirable);
    bench_report_int(&r, "ops", a->ops);
    bench_report_num(&r, "pair_p50_us", bench_samples_us(&s, 50), 1);
    bench_report_num(&r, "pair_p99_us", bench_samples_us(&s, 99), 1);
    bench_report_num(&r, "pairs_per_s", (double)a->ops / seconds, 0);
    bench_report_end(&r);
  }
  sem_obj_free(&o);
  bench_samples_free(&s);
  return rc;
}

/* ---- processes (turns.h) --------------------------------------------------
 */

typedef struct sem_state {
  rlock_client *client;
  sem_obj obj;
} sem_state;

static int sem_open(void **state, const turns_spec *sp, const char *lock) {
  sem_state *st = calloc(1, sizeof *st);
  *state = st;
  if (st == NULL)
    return bench_fail("out of memory"), -1;
  if ((st->client = bench_client_new(sp->a->url)) == NULL)
    return -1;
  int64_t rtt;
  int rc = rlock_client_ping(st->client, &rtt); /* connect before the start */
  if (rc != RLOCK_OK)
    return bench_fail_rc("rlock_client_ping", rc), -1;
  return sem_obj_new(&st->obj, st->client, lock, sp->a->expirable,
                     sp->permits) == 0
             ? 0
             : -1;
}

static int sem_acquire(void *state) {
  return sem_obj_acquire(&((sem_state *)state)->obj);
}

static int sem_release(void *state) {
  return sem_obj_release(&((sem_state *)state)->obj);
}

static void sem_close(void *state) {
  sem_state *st = state;
  if (st == NULL)
    return;
  sem_obj_free(&st->obj);
  rlock_client_free(st->client);
  free(st);
}

static const turns_impl SEM_IMPL = {sem_open, sem_acquire, sem_release,
                                    sem_close};
static const turns_role SEM_ROLE = {NULL, "semaphore", 1, &SEM_IMPL};

static long overlaps(const turns_spec *sp, const turns_out *o) {
  long n = 0;
  for (int i = 0; i < sp->procs; i++)
    n += o->slots[i].overlaps;
  return n;
}

static int report(const turns_spec *sp, turns_out *o) {
  const bench_args *a = sp->a;
  double p50;
  size_t n;
  int64_t *w = turns_gather_waits(sp, o, 0, sp->procs, &n);
  if (w == NULL)
    return bench_fail("out of memory"), -1;
  bench_report r;
  bench_report_begin(&r, a->json, "semaphore");
  bench_report_int(&r, "expirable", a->expirable);
  bench_report_int(&r, "procs", a->procs);
  bench_report_int(&r, "permits", a->permits);
  bench_report_int(&r, "ops", a->ops);
  bench_report_int(&r, "hold_us", a->hold_us);
  bench_report_int(&r, "think_us", a->think_us);
  bench_report_int(&r, "ping_pong", a->ping_pong);
  bench_report_num(&r, "acquisitions_per_s", turns_rate(sp, o, 0, a->procs), 0);
  bench_report_num(&r, "acquire_p50_us", bench_percentile_us(w, n, 50), 1);
  bench_report_num(&r, "acquire_p99_us", bench_percentile_us(w, n, 99), 1);
  int rc = turns_report_handoffs(&r, sp, o, 0, a->procs, "", &p50);
  bench_report_num(&r, "ping_rtt_us", turns_ping_us(o), 1);
  long over = overlaps(sp, o);
  bench_report_int(&r, "overlaps", over);
  bench_report_end(&r);
  free(w);
  if (over > 0)
    return bench_fail("%ld overlaps: more than %d holders at once", over,
                      a->permits),
           -1;
  return rc;
}

int bench_semaphore(const bench_args *a) {
  names nm;
  names_init(&nm);
  if (a->procs == 0) {
    rlock_client *c = bench_client_new(a->url);
    if (c == NULL)
      return BENCH_EXIT_FAIL;
    int rc = uncontended(a, c, &nm);
    rlock_client_free(c);
    if (del_keys(a->url, &nm) != 0 && rc == 0)
      rc = BENCH_EXIT_FAIL;
    return rc;
  }
  turns_spec sp = {
      .a = a,
      .procs = a->procs,
      .roles = {&SEM_ROLE},
      .split = a->procs,
      .lock = nm.sem,
      .counter = nm.holders,
      .keys = {nm.sem, nm.timeout, nm.holders},
      .alternate = a->ping_pong,
      .hold_us = a->hold_us,
      .hold_max_us = a->hold_us,
      .permits = a->permits,
  };
  return turns_run(&sp, report);
}
