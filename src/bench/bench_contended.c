/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_contended.c - N processes taking turns on one lock; the contended
 * and fair workloads.
 *
 * Every process plays the same exclusive role (turns.h): acquire, a
 * non-atomic GET + SET increment of a counter, release, think. A lost
 * update (final counter below N*K) would mean two holders at once. The
 * handoff is measured from the previous holder's release, and only for a
 * process that started waiting before it.
 *
 * fair (bench_args.fair): the same rounds on a fair lock. A releasing
 * process cannot barge (it queues behind the waiters already there), so
 * nearly every acquisition is a handoff and, with no think time, about
 * N-1 waiters are queued at each one. The holder reads the queue's
 * length (LLEN of redisson_lock_queue:{name}) in the same write as its
 * counter SET, so it costs no extra round trip and is taken just before
 * the release timestamp; the next holder records it with its handoff
 * sample, so "queued" is the queue depth at exactly the handoffs
 * measured.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "turns.h"

static const turns_role PLAIN = {rlock_lock_new, "rlock_lock_new", 1};
static const turns_role FAIR = {rlock_lock_new_fair, "rlock_lock_new_fair", 1};

/* Names shared by the parent and every child. The queue and deadline
 * keys are the fair lock's (Redisson's layout, see rlock/lock.h); they
 * are only deleted, never used, by the contended workload. */
typedef struct names {
  char lock[64];
  char counter[64];
  char queue[128];
  char timeouts[128];
} names;

static void names_init(names *nm, int fair) {
  long pid = (long)getpid();
  bench_key(nm->lock, sizeof nm->lock,
            fair ? "rlock-bench:fair" : "rlock-bench:contended", pid);
  bench_key(nm->counter, sizeof nm->counter, "rlock-bench:counter", pid);
  snprintf(nm->queue, sizeof nm->queue, "redisson_lock_queue:{%s}", nm->lock);
  snprintf(nm->timeouts, sizeof nm->timeouts, "redisson_lock_timeout:{%s}",
           nm->lock);
}

/* fair: the median queue depth over the handoffs measured. */
static void report_queued(bench_report *r, const turns_spec *sp,
                          const turns_out *o) {
  size_t n;
  int64_t *q = turns_gather(sp, o, o->queued, 0, sp->procs, &n);
  bench_report_num(r, "queued", q ? bench_percentile(q, n, 50) : NAN, 1);
  free(q);
}

static int report(const turns_spec *sp, turns_out *o) {
  const bench_args *a = sp->a;
  double ping = turns_ping_us(o), p50;
  bench_report r;
  bench_report_begin(&r, a->json, a->workload);
  bench_report_int(&r, "procs", a->procs);
  bench_report_int(&r, "ops", a->ops);
  bench_report_int(&r, "think_us", a->think_us);
  bench_report_num(&r, "acquisitions_per_s", turns_rate(sp, o, 0, a->procs), 0);
  int rc = turns_report_handoffs(&r, sp, o, 0, a->procs, "", &p50);
  bench_report_num(&r, "ping_rtt_us", ping, 1);
  bench_report_num(&r, "handoff_rtts", p50 / ping, 2);
  bench_report_int(&r, "lost_updates", turns_lost_updates(sp, o));
  if (a->fair)
    report_queued(&r, sp, o);
  bench_report_end(&r);
  return rc;
}

int bench_contended(const bench_args *a) {
  names nm;
  names_init(&nm, a->fair);
  turns_spec sp = {
      .a = a,
      .procs = a->procs,
      .roles = {a->fair ? &FAIR : &PLAIN},
      .split = a->procs,
      .lock = nm.lock,
      .counter = nm.counter,
      .queue = a->fair ? nm.queue : NULL,
      .keys = {nm.lock, nm.counter, nm.queue, nm.timeouts},
  };
  return turns_run(&sp, report);
}
