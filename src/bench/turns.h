/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * turns.h - the harness of the workloads in which processes take turns on
 * one lock name: contended, fair (bench_contended.c), rw (bench_rw.c) and
 * handoff (bench_handoff.c: a strict ping-pong, spec->alternate, in which
 * every process plays two roles in turn, spec->phases: the library's
 * waiter and a bare hiredis one, turns_role.impl).
 *
 * Each process (forked before any client exists, so none inherits a
 * client's background thread) makes its own client, its own lock object
 * and a bare connection for a shared counter, then does K rounds of:
 * acquire (wait forever, watchdog lease), work on the counter, release,
 * T us of "think time" outside the lock. What a process does is its
 * role: which lock object it makes, and whether its holds are exclusive.
 *   exclusive  a non-atomic GET + SET increment of the counter, so a lost
 *              update (final counter below the exclusive processes' K
 *              each) would mean two exclusive holders at once;
 *   shared     a GET only (a hold that costs a real round trip and never
 *              changes the counter).
 * Processes [0, split) play roles[0], the rest roles[1].
 *
 * Handoff latency: a MAP_SHARED page (mapped before fork) holds the
 * CLOCK_MONOTONIC time taken just before each release: the latest release
 * of any kind, and the latest exclusive release. Right after acquiring, a
 * process records now minus the release it had to wait for, but only if
 * that release came after it started waiting (a process that found the
 * lock free did not wait, so there was no handoff to measure):
 *   an exclusive holder waits until every holder has gone, so it counts
 *   from the latest release of any kind;
 *   a shared holder waits only for exclusive holders, so it counts from
 *   the latest exclusive release.
 * Shared holders release concurrently, so the "any kind" time is kept as
 * a maximum (a process descheduled between reading the clock and storing
 * it must not move it back). Exclusive releases are ordered by the lock
 * itself. CLOCK_MONOTONIC is system-wide, so times from different
 * processes compare.
 *
 * Start: children report ready on a pipe once connected, then block on a
 * second pipe until the parent closes it, so all start together and the
 * wall time excludes connection set-up.
 */
#ifndef RLOCK_BENCH_TURNS_H
#define RLOCK_BENCH_TURNS_H

#include <stdatomic.h>

#include "bench.h"

typedef struct turns_spec turns_spec;

/* A lock implemented without the library (handoff's bare hiredis waiter),
 * for an exclusive role: its own connections, made in each process after
 * fork. */
typedef struct turns_impl {
  /* Connect, for lock name `lock`; *state is passed to the others. 0, or
   * -1 after printing why (close() is called either way). */
  int (*open)(void **state, const turns_spec *sp, const char *lock);
  int (*acquire)(void *state); /* waits as long as it takes: 0 or -1 */
  int (*release)(void *state); /* 0 or -1 */
  void (*close)(void *state);
} turns_impl;

/* The floor's lock (bench_bare.c). */
extern const turns_impl bench_bare_impl;

/* What a process does with the lock. */
typedef struct turns_role {
  int (*make)(rlock_lock **out, rlock_client *client, const char *name);
  const char *make_name;  /* for error messages */
  int exclusive;          /* increments the counter; see above */
  const turns_impl *impl; /* NULL: the library's lock from make(), taken
                             with rlock_lock_acquire() */
} turns_role;

#define TURNS_MAX_KEYS 4

/* Phases: role k runs on lock name spec->lock when k is 0, spec->lock2
 * when 1; phase p is role turns_phase_role(p)'s (ABBA: 0, 1, 1, 0, ...,
 * so that neither always goes first). */
int turns_phase_role(long phase);

/* One run: who plays what, and on which keys. Strings are borrowed. */
struct turns_spec {
  const bench_args *a; /* url, ops (per process; with phases, per process
                          and phase), think_us */
  int procs;
  const turns_role *roles[2];
  int split; /* processes [0, split) play roles[0], the others roles[1] */
  const char *lock;
  const char *counter;
  /* fair: each exclusive holder reads this list's length (LLEN, pipelined
   * with its SET) just before its release, and the next holder records
   * it with its handoff sample; NULL for no such series. */
  const char *queue;
  const char *keys[TURNS_MAX_KEYS]; /* DEL'ed before and after; NULL-ended
                                       when fewer */
  /* Ping-pong (handoff): after each release but a phase's last, a
   * process waits (on a futex in the shared page, no CPU spent) until
   * another process has acquired, or every other process has finished the
   * phase, before it thinks and tries again; so it never barges, and with
   * hold_us it is asleep in its wait well before the next release. */
  int alternate;
  long hold_us;     /* a pause while holding, after the counter's work, */
  long hold_max_us; /* or a random one from hold_us to this (0: none) */
  /* Phases (handoff): every process plays both roles (both exclusive), in
   * `phases` phases of `ops` rounds each, all processes in the same role
   * (turns_phase_role) on its lock name, with a barrier between phases
   * (every process done with the phase, so the lock is free). 0: no
   * phases, a process plays one role throughout (split). Each handoff's
   * phase is recorded in turns_out.phase_of. */
  long phases;
  const char *lock2; /* role 1's lock name in phases */
  long warmup;       /* phases: rounds at the start of each role's first
                        phase that record no handoff */
  /* Semaphores (bench_sem.c): the role's acquire takes one of `permits`
   * permits, so up to that many hold at once. A hold is then an INCR of
   * `counter` (a count of holders; an answer above `permits` is an
   * overlap, turns_slot.overlaps), the pause, and a DECR just before the
   * release: one round trip on each side, as the exclusive GET + SET.
   * Every acquisition's wait (from the call to its return) is recorded in
   * turns_out.waits. 0: a lock (the roles' exclusive/shared holds). */
  long permits;
  void *arg; /* for the report function */
};

/* The shared page(s): a header, then per-process slots, then samples. */
typedef struct turns_hdr {
  _Atomic int64_t last_release_ns;           /* any kind; 0 until one */
  _Atomic int64_t last_exclusive_release_ns; /* 0 until one */
  _Atomic int64_t last_release_queued;       /* LLEN before that release */
  atomic_int abort;                          /* parent: do not start */
  /* spec->alternate: acquisitions so far, phases finished (summed over
   * the processes; without phases, processes finished), and the futex
   * word bumped after either changes */
  _Atomic long acquired;
  _Atomic long finished;
  atomic_int turn;
} turns_hdr;

typedef struct turns_slot {
  int64_t end_ns;        /* when this process finished its last round */
  size_t nsamples;       /* handoffs recorded in its sample range */
  int64_t wait_total_ns; /* time spent in rlock_lock_acquire, in all */
  int64_t wait_max_ns;   /* and in its longest call */
  size_t nwaits;         /* spec->permits: waits recorded (every round) */
  long overlaps;         /* spec->permits: holders counted above permits */
} turns_slot;

/* Sample areas are [procs * R], R a process's rounds (turns_rounds):
 * process i owns [i*R, (i+1)*R), and the queue length or phase of sample
 * j sits at the same index as the handoff. */
typedef struct turns_out {
  turns_hdr *hdr;
  turns_slot *slots;   /* [procs] */
  int64_t *samples;    /* handoff latencies, ns */
  int64_t *queued;     /* only with spec->queue (else NULL) */
  int64_t *phase_of;   /* only with spec->phases (else NULL) */
  int64_t *waits;      /* only with spec->permits: every wait, ns, at
                          the round's index (else NULL) */
  size_t size;         /* of the mapping */
  bench_samples pings; /* before and after the run, see turns.c */
  int64_t t0;          /* when the start was given */
  long long counter;   /* final value */
} turns_out;

/* Prints a run's results; 0, or -1 after printing why. */
typedef int (*turns_report_fn)(const turns_spec *sp, turns_out *o);

/* Run the processes, then report; an exit status (failures printed). */
int turns_run(const turns_spec *sp, turns_report_fn report);

/* The rounds each process plays: ops, times phases when there are. */
long turns_rounds(const turns_spec *sp);

/* Seconds from the start to the last final release of processes
 * [from, to). */
double turns_seconds(const turns_out *o, int from, int to);

/* Acquisitions per second of processes [from, to): their rounds over
 * turns_seconds(). */
double turns_rate(const turns_spec *sp, const turns_out *o, int from, int to);

/* Exclusive rounds minus the final counter: anything but 0 means two
 * exclusive holders at once. */
long long turns_lost_updates(const turns_spec *sp, const turns_out *o);

/* The median PING round trip around the run, in us. */
double turns_ping_us(turns_out *o);

/* The samples of processes [from, to) from one area (o->samples,
 * o->queued or o->phase_of) in one malloc'ed array, in the same order
 * whatever the area; *n is their number. NULL when out of memory. */
int64_t *turns_gather(const turns_spec *sp, const turns_out *o,
                      const int64_t *area, int from, int to, size_t *n);

/* Every acquisition's wait of processes [from, to) (spec->permits), in
 * one malloc'ed array; *n is their number. NULL when out of memory. */
int64_t *turns_gather_waits(const turns_spec *sp, const turns_out *o, int from,
                            int to, size_t *n);

/* Report the handoffs of processes [from, to) as "<prefix>handoffs",
 * "<prefix>handoff_p50_us" and "<prefix>handoff_p99_us"; *p50 gets the
 * median in us. 0, or -1 when out of memory (printed; the figures are
 * then n/a, so the listing stays well-formed). */
int turns_report_handoffs(bench_report *r, const turns_spec *sp,
                          const turns_out *o, int from, int to,
                          const char *prefix, double *p50);

/* Report how long processes [from, to) spent acquiring, waits or not:
 * "<prefix>wait_mean_us" per acquisition and "<prefix>wait_max_ms", the
 * longest one. The handoff only covers the last step of a wait; these
 * show a process that was kept waiting through many releases. */
void turns_report_waits(bench_report *r, const turns_spec *sp,
                        const turns_out *o, int from, int to,
                        const char *prefix);

#endif /* RLOCK_BENCH_TURNS_H */
