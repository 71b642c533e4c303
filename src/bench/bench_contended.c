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
#include <string.h>
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

/* ---- --floor ------------------------------------------------------------
 * R rounds, each a run of the workload with the library's lock and a run
 * with the floor (bench_bare.c), ABBA, each run its own processes: per
 * round the two rates and their ratio, and what an acquisition costs the
 * server: every command INFO commandstats counts (the calls inside the
 * scripts too, and the counter's GET and SET, the same for both) over
 * the run's acquisitions. */

static const turns_role BARE = {NULL, "bare", 1, &bench_bare_impl};

typedef struct floor_run {
  double rate;
  long long lost;
} floor_run;

static int keep_rate(const turns_spec *sp, turns_out *o) {
  floor_run *f = sp->arg;
  f->rate = turns_rate(sp, o, 0, sp->procs);
  f->lost = turns_lost_updates(sp, o);
  return 0;
}

/* The server's commands so far (INFO commandstats' calls summed), or -1. */
static long long server_calls(const char *url) {
  redisContext *c = bench_raw_connect(url);
  redisReply *r = c ? redisCommand(c, "INFO commandstats") : NULL;
  long long sum = r && r->type == REDIS_REPLY_STRING ? 0 : -1;
  for (const char *q = sum == 0 ? r->str : ""; (q = strstr(q, "calls="));)
    sum += strtoll(q += 6, NULL, 10);
  freeReplyObject(r);
  if (c != NULL)
    redisFree(c);
  return sum;
}

/* One run with `role`; its rate and calls per acquisition. */
static int floor_once(turns_spec sp, const turns_role *role, double *rate,
                      double *calls, long long *lost) {
  floor_run f = {0, 0};
  sp.roles[0] = role;
  sp.arg = &f;
  long long before = server_calls(sp.a->url);
  int rc = turns_run(&sp, keep_rate);
  long long after = server_calls(sp.a->url);
  *rate = f.rate;
  *calls = before < 0 || after < 0
               ? NAN
               : (double)(after - before) / (double)(sp.procs * sp.a->ops);
  *lost += f.lost;
  return rc;
}

static int by_value(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

static void report_floor(const bench_args *a, double *rl, double *bf,
                         double *ratio, double cl, double cb, long long lost) {
  bench_report r;
  bench_report_begin(&r, a->json, "contended");
  bench_report_int(&r, "procs", a->procs);
  bench_report_int(&r, "ops", a->ops);
  bench_report_int(&r, "think_us", a->think_us);
  bench_report_nums(&r, "rlock_acquisitions_per_s_rounds", rl, a->rounds, 0);
  bench_report_nums(&r, "bare_acquisitions_per_s_rounds", bf, a->rounds, 0);
  bench_report_nums(&r, "ratio_rounds", ratio, a->rounds, 3);
  double sorted[1000];
  memcpy(sorted, ratio, sizeof *ratio * (size_t)a->rounds);
  qsort(sorted, (size_t)a->rounds, sizeof *sorted, by_value);
  int n = a->rounds;
  bench_report_num(
      &r, "ratio",
      n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2, 3);
  double worst = ratio[0];
  for (int i = 1; i < a->rounds; i++)
    worst = ratio[i] < worst ? ratio[i] : worst;
  bench_report_num(&r, "ratio_worst", worst, 3);
  bench_report_num(&r, "rlock_server_calls_per_acquisition", cl, 1);
  bench_report_num(&r, "bare_server_calls_per_acquisition", cb, 1);
  bench_report_int(&r, "lost_updates", lost);
  bench_report_end(&r);
}

static int contended_floor(const turns_spec *sp) {
  const bench_args *a = sp->a;
  double rl[1000], bf[1000], ratio[1000], cl = 0, cb = 0, c;
  long long lost = 0;
  if (bench_load_lock_scripts(a->url) != 0)
    return BENCH_EXIT_FAIL;
  for (int i = 0; i < a->rounds; i++) {
    for (int k = 0; k < 2; k++) {
      int bare = i % 2 == 1 ? !k : k; /* ABBA */
      int rc = bare ? floor_once(*sp, &BARE, &bf[i], &c, &lost)
                    : floor_once(*sp, sp->roles[0], &rl[i], &c, &lost);
      if (rc != 0)
        return rc;
      *(bare ? &cb : &cl) += c / a->rounds;
    }
    ratio[i] = rl[i] / bf[i];
  }
  report_floor(a, rl, bf, ratio, cl, cb, lost);
  return lost == 0 ? 0 : BENCH_EXIT_FAIL;
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
  return a->floor ? contended_floor(&sp) : turns_run(&sp, report);
}
