/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * obs.h - what a client tells its operators: the log hook
 * (rlock_config_set_log) and the counters (rlock_client_stats).
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

#include <stdatomic.h>
#include <stdint.h>

#include "common.h"
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
  RLOCK__STAT_COUNT
} rlock__stat;

typedef struct rlock__obs {
  rlock_log_fn fn; /* set before the client's threads start, then read */
  void *userdata;
  int max_level;
  atomic_uint_fast64_t n[RLOCK__STAT_COUNT];
} rlock__obs;

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
