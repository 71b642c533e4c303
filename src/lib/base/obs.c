/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * obs.c - the log hook and the counters (obs.h).
 */
#include "obs.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

_Static_assert(sizeof(rlock_stats) == RLOCK__STAT_COUNT * sizeof(uint64_t),
               "rlock_stats and rlock__stat must list the same counters");

void rlock__obs_add(rlock__obs *o, rlock__stat s, uint64_t by) {
  if (o != NULL)
    atomic_fetch_add_explicit(&o->n[s], by, memory_order_relaxed);
}

int rlock__obs_logs(const rlock__obs *o, rlock_log_level level) {
  return o != NULL && o->fn != NULL && (int)level <= o->max_level;
}

void rlock__obs_log(rlock__obs *o, rlock_log_level level, const char *fmt,
                    ...) {
  if (!rlock__obs_logs(o, level))
    return;
  /* Messages are built from the last error's text, and the hook may call
   * into the library: the caller's last error survives either. */
  rlock__saved_error saved;
  rlock__error_save(&saved);
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  o->fn(level, msg, o->userdata);
  rlock__error_restore(&saved);
}

void rlock__obs_read(const rlock__obs *o, rlock_stats *out, size_t size) {
  uint64_t all[RLOCK__STAT_COUNT];
  for (int i = 0; i < RLOCK__STAT_COUNT; i++)
    all[i] = atomic_load_explicit(&o->n[i], memory_order_relaxed);
  memcpy(out, all, size < sizeof all ? size : sizeof all);
}
