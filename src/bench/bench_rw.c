/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_rw.c - R reader and W writer processes on one read-write lock.
 *
 * The turns harness (turns.h) with two roles on one lock name: readers
 * (processes [0, R)) take the read half (rlock_lock_new_read) and hold it
 * for a GET of the shared counter; writers (processes [R, R+W)) take the
 * write half (rlock_lock_new_write) and do the non-atomic GET + SET
 * increment. Readers never write, so the final counter must be W*K: a
 * lost update would mean a writer overlapped another writer (a reader
 * overlapping a writer cannot lose an update; tests/integration/
 * test_rwlock.c covers that exclusion).
 *
 * Handoffs, as turns.h defines them:
 *   write  a writer that waited, from the latest release of either kind
 *          before its acquisition (the read-write lock is free for a
 *          writer only once every holder has gone, and the latest
 *          release is the one that freed it);
 *   read   a reader that waited for a writer, from that writer's release
 *          (readers never wait for readers).
 *
 * Rates: each kind's acquisitions over the time from the start to the
 * last of its processes' final release ("<kind>_seconds"), so a kind
 * that finishes early is not diluted by the other's tail.
 *
 * Waits: the mean and longest time a kind spent in rlock_lock_acquire.
 * A handoff only times the last step of a wait, from the release that
 * let the waiter in; readers keep entering while a writer waits (there
 * is no writer preference, as in Redisson), so a writer can wait through
 * many read releases, and only its wait shows that.
 */
#include <stdio.h>
#include <unistd.h>

#include "turns.h"

static const turns_role READER = {rlock_lock_new_read, "rlock_lock_new_read",
                                  0};
static const turns_role WRITER = {rlock_lock_new_write, "rlock_lock_new_write",
                                  1};

/* One kind's figures: processes [from, to), keys "<kind>_...". */
static int report_kind(bench_report *r, const turns_spec *sp,
                       const turns_out *o, int from, int to, const char *kind) {
  char key[64], prefix[16];
  double p50;
  snprintf(key, sizeof key, "%s_acquisitions_per_s", kind);
  bench_report_num(r, key, turns_rate(sp, o, from, to), 0);
  snprintf(key, sizeof key, "%s_seconds", kind);
  bench_report_num(r, key, turns_seconds(o, from, to), 3);
  snprintf(prefix, sizeof prefix, "%s_", kind);
  int rc = turns_report_handoffs(r, sp, o, from, to, prefix, &p50);
  turns_report_waits(r, sp, o, from, to, prefix);
  return rc;
}

static int report(const turns_spec *sp, turns_out *o) {
  const bench_args *a = sp->a;
  bench_report r;
  bench_report_begin(&r, a->json, "rw");
  bench_report_int(&r, "readers", a->readers);
  bench_report_int(&r, "writers", a->writers);
  bench_report_int(&r, "ops", a->ops);
  bench_report_int(&r, "think_us", a->think_us);
  int rc = report_kind(&r, sp, o, 0, sp->split, "read");
  if (report_kind(&r, sp, o, sp->split, sp->procs, "write") != 0)
    rc = -1;
  bench_report_num(&r, "ping_rtt_us", turns_ping_us(o), 1);
  bench_report_int(&r, "lost_updates", turns_lost_updates(sp, o));
  bench_report_end(&r);
  return rc;
}

int bench_rw(const bench_args *a) {
  char lock[64], counter[64];
  long pid = (long)getpid();
  bench_key(lock, sizeof lock, "rlock-bench:rw", pid);
  bench_key(counter, sizeof counter, "rlock-bench:counter", pid);
  turns_spec sp = {
      .a = a,
      .procs = a->readers + a->writers,
      .roles = {&READER, &WRITER},
      .split = a->readers,
      .lock = lock,
      .counter = counter,
      .keys = {lock, counter},
  };
  return turns_run(&sp, report);
}
