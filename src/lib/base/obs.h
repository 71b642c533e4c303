/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * obs.h - what a client tells its operators: the log hook
 * (rlock_config_set_log), the counters (rlock_client_stats) and the
 * metrics (rlock_client_metrics_text): per kind of lock, or per lock name
 * where the configuration asks (rlock_config_set_metrics_names), counters,
 * gauges and fixed-bucket histograms of wait, hold and handoff times.
 *
 * Every client owns one rlock__obs; its topology, pools and background
 * work get a pointer to it. Counting is a relaxed atomic add, safe
 * anywhere, locks held or not. Logging calls the user's hook, so it must
 * never happen with a library mutex held (the hook may call back into
 * the library); each call site says why it is outside its lock.
 * A NULL rlock__obs is accepted everywhere and does nothing.
 */
#ifndef RLOCK_OBS_H
#define RLOCK_OBS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "map.h"
#include "rlock/client.h"
#include "rlock/config.h"

/* In rlock_stats's field order. */
typedef enum rlock__stat {
  RLOCK__STAT_ACQUISITIONS,
  RLOCK__STAT_WAITS,
  RLOCK__STAT_WAKEUPS,
  RLOCK__STAT_RELEASES,
  RLOCK__STAT_RENEWALS,
  RLOCK__STAT_RENEWAL_FAILURES,
  RLOCK__STAT_LOST,
  RLOCK__STAT_CONNECTS,
  RLOCK__STAT_CONNECT_FAILURES,
  RLOCK__STAT_DISCONNECTS,
  RLOCK__STAT_TOPOLOGY_CHANGES,
  RLOCK__STAT_REDIRECTIONS,
  RLOCK__STAT_RECONNECTS,
  RLOCK__STAT_COUNT
} rlock__stat;

/* The kinds metrics are kept for (rlock__kind.metric; MultiLock and
 * RedLock acquisitions as a whole), named in the metrics' `kind` label. */
typedef enum rlock__mkind {
  RLOCK__MK_REENTRANT,
  RLOCK__MK_NONREENTRANT,
  RLOCK__MK_FAIR,
  RLOCK__MK_NONREENTRANT_FAIR,
  RLOCK__MK_READ,
  RLOCK__MK_WRITE,
  RLOCK__MK_FENCED,
  RLOCK__MK_SPIN,
  RLOCK__MK_MULTILOCK,
  RLOCK__MK_REDLOCK,
  RLOCK__MK_SEMAPHORE,
  RLOCK__MK_PSEMAPHORE,
  RLOCK__MK_LATCH,
  RLOCK__MK_COUNT
} rlock__mkind;

/* A per-name slot's map key: a letter for the kind, then the name. */
#define RLOCK__OBS_KEY_MAX (RLOCK_MAX_NAME_LEN + 2)

/* Histogram bucket bounds (upper, inclusive), in microseconds: 100 us to
 * 5 minutes; one more bucket counts what lies beyond (+Inf). */
#define RLOCK__HIST_BOUNDS 19

/* A histogram: per-bucket counts (not cumulative) and the sum, relaxed
 * atomics, fixed size: observing never allocates. */
typedef struct rlock__hist {
  atomic_uint_fast64_t bucket[RLOCK__HIST_BOUNDS + 1];
  atomic_uint_fast64_t sum_us;
} rlock__hist;

/* The metrics of one kind, or of one lock name of one kind. A lock object
 * records into exactly one set (rlock_lock.ms), so a name's set and its
 * kind's set never count the same event twice. */
typedef struct rlock__mset {
  int kind;         /* rlock__mkind */
  const char *name; /* NULL: every lock of the kind without a set of its own */
  atomic_uint_fast64_t acquisitions; /* acquisitions that took the lock */
  atomic_uint_fast64_t timeouts;     /* ended RLOCK_ELOCKED */
  atomic_uint_fast64_t failures;     /* ended with any other error */
  atomic_uint_fast64_t lost;         /* holds found lost */
  atomic_int_fast64_t holds;         /* hold records (gauge) */
  atomic_int_fast64_t waiters;       /* acquisitions waiting (gauge) */
  rlock__hist wait;                  /* start of the call to the hold */
  rlock__hist hold;                  /* first level taken to last released */
  rlock__hist handoff;               /* last wake-up of a wait to the hold */
} rlock__mset;

typedef struct rlock__obs {
  rlock_log_fn fn; /* set before the client's threads start, then read */
  void *userdata;
  int max_level;
  atomic_uint_fast64_t n[RLOCK__STAT_COUNT];
  rlock__mset kinds[RLOCK__MK_COUNT];
  /* Per-name sets (rlock_config_set_metrics_names): `names_max` slots
   * allocated up front, the first `names_n` in use (published with
   * release order; a slot never changes once published). */
  rlock__mset *names;
  size_t names_max;
  rlock__map names_map; /* kind letter + name -> its slot */
  atomic_size_t names_n;
  atomic_uint_fast64_t names_refused; /* lock objects past the bound */
  pthread_mutex_t names_mu;           /* claiming a slot */
} rlock__obs;

/* Set up the metrics of a zeroed rlock__obs, with room for `names_max`
 * per-name sets (0: none). RLOCK_ENOMEM. rlock__obs_destroy frees. */
int rlock__obs_init(rlock__obs *o, size_t names_max);
void rlock__obs_destroy(rlock__obs *o);

/* The set a new lock object of `kind` named `name` records into: its
 * name's (claimed on first use while slots are left), else its kind's.
 * Called when a lock object is made, never on the lock path. */
rlock__mset *rlock__obs_mset(rlock__obs *o, int kind, const char *name);

/* ---- recording (the lock path: a few relaxed atomic adds, no lock, no
 * allocation; a NULL set does nothing) ---- */

/* An acquisition found the lock held and begins to wait. */
void rlock__obs_wait_begin(rlock__mset *m);

/* An acquisition ended with `rc`. `waited`: rlock__obs_wait_begin was
 * called for it. `start_us`: when it began; `woke_us`: its wait's last
 * wake-up (an unlock message, or the end of a sleep), 0 when none.
 * Monotonic microseconds. */
void rlock__obs_acquire_end(rlock__mset *m, int rc, int waited,
                            int64_t start_us, int64_t woke_us);

/* A hold record appeared (its first level taken), or went: `held_us` is
 * how long it was held, or -1 when that is not to be observed (it was
 * lost, or dropped without a release). */
void rlock__obs_hold_begin(rlock__mset *m);
void rlock__obs_hold_end(rlock__mset *m, int64_t held_us);

/* A hold was found lost. */
void rlock__obs_lost(rlock__mset *m);

/* Write the metrics in the Prometheus text format (OpenMetrics when
 * `openmetrics`) into buf (at most `size` bytes, NUL-terminated when
 * size > 0); returns the length the whole text needs, without its NUL.
 * Lock-free: each number is exact, but they are not one snapshot. */
size_t rlock__obs_text(const rlock__obs *o, char *buf, size_t size,
                       int openmetrics);

/* Add `by` to counter `s`. */
void rlock__obs_add(rlock__obs *o, rlock__stat s, uint64_t by);

static inline void rlock__obs_count(rlock__obs *o, rlock__stat s) {
  rlock__obs_add(o, s, 1);
}

/* Whether a message at `level` would reach the hook: test it before
 * building an expensive one. */
int rlock__obs_logs(const rlock__obs *o, rlock_log_level level);

/* Format and send one message to the hook (if any, and if `level` is
 * within its level). Never call with a library mutex held. Keeps the
 * calling thread's last error. */
void rlock__obs_log(rlock__obs *o, rlock_log_level level, const char *fmt, ...)
    RLOCK_PRINTF(3, 4);

/* Copy the counters into `out`, at most `size` bytes. */
void rlock__obs_read(const rlock__obs *o, rlock_stats *out, size_t size);

#endif /* RLOCK_OBS_H */
