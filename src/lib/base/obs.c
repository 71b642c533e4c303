/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * obs.c - the log hook and the counters (obs.h).
 */
#include "obs.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "rlock/lock.h"

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

/* ---- metrics ------------------------------------------------------------ */

static const char *const kind_names[RLOCK__MK_COUNT] = {
    "reentrant", "nonreentrant", "fair", "nonreentrant_fair", "read",
    "write",     "fenced",       "spin", "multilock",         "redlock",
    "semaphore", "psemaphore",   "latch"};

static const int64_t bound_us[RLOCK__HIST_BOUNDS] = {100,
                                                     250,
                                                     500,
                                                     1000,
                                                     2500,
                                                     5000,
                                                     10000,
                                                     25000,
                                                     50000,
                                                     100000,
                                                     250000,
                                                     500000,
                                                     1000000,
                                                     2500000,
                                                     5000000,
                                                     1000000 * 10LL,
                                                     1000000 * 30LL,
                                                     1000000 * 60LL,
                                                     1000000 * 300LL};

static const char *const bound_text[RLOCK__HIST_BOUNDS] = {
    "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01",
    "0.025",  "0.05",    "0.1",    "0.25",  "0.5",    "1",     "2.5",
    "5",      "10",      "30",     "60",    "300"};

int rlock__obs_init(rlock__obs *o, size_t names_max) {
  for (int k = 0; k < RLOCK__MK_COUNT; k++)
    o->kinds[k].kind = k;
  if (names_max == 0)
    return RLOCK_OK;
  o->names = rlock__calloc(names_max, sizeof *o->names);
  if (o->names == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  if (pthread_mutex_init(&o->names_mu, NULL) != 0) {
    free(o->names);
    o->names = NULL;
    return rlock__err(RLOCK_ENOMEM, "cannot create a mutex");
  }
  o->names_max = names_max;
  return RLOCK_OK;
}

void rlock__obs_destroy(rlock__obs *o) {
  if (o->names == NULL)
    return;
  size_t n = atomic_load(&o->names_n);
  for (size_t i = 0; i < n; i++)
    free((char *)o->names[i].name);
  free(o->names);
  o->names = NULL;
  rlock__map_clear(&o->names_map);
  pthread_mutex_destroy(&o->names_mu);
}

/* The slot of (kind, name) in use, or a new one; NULL when none is left
 * (or no memory for the name). Locked. */
static rlock__mset *name_slot(rlock__obs *o, int kind, const char *name) {
  char key[RLOCK__OBS_KEY_MAX];
  size_t nlen = strlen(name);
  if (nlen + 1 > sizeof key)
    return NULL;
  key[0] = (char)('a' + kind);
  memcpy(key + 1, name, nlen);
  rlock__mset *m = rlock__map_get(&o->names_map, key, nlen + 1);
  size_t n = atomic_load_explicit(&o->names_n, memory_order_relaxed);
  if (m != NULL || n == o->names_max)
    return m;
  m = &o->names[n];
  char *copy = rlock__strdup(name);
  if (copy == NULL || rlock__map_put(&o->names_map, key, nlen + 1, m) != 0) {
    free(copy);
    return NULL;
  }
  m->kind = kind;
  m->name = copy;
  atomic_store_explicit(&o->names_n, n + 1, memory_order_release);
  return m;
}

rlock__mset *rlock__obs_mset(rlock__obs *o, int kind, const char *name) {
  if (o->names == NULL || name == NULL)
    return &o->kinds[kind];
  rlock__saved_error saved; /* a lock made without a slot is no failure */
  rlock__error_save(&saved);
  pthread_mutex_lock(&o->names_mu);
  rlock__mset *m = name_slot(o, kind, name);
  pthread_mutex_unlock(&o->names_mu);
  rlock__error_restore(&saved);
  if (m != NULL)
    return m;
  atomic_fetch_add_explicit(&o->names_refused, 1, memory_order_relaxed);
  return &o->kinds[kind];
}

#define ADD(field, by)                                                         \
  atomic_fetch_add_explicit(&(field), by, memory_order_relaxed)

static void observe(rlock__hist *h, int64_t us) {
  if (us < 0)
    us = 0;
  int i = 0;
  while (i < RLOCK__HIST_BOUNDS && us > bound_us[i])
    i++;
  ADD(h->bucket[i], 1);
  ADD(h->sum_us, (uint64_t)us);
}

void rlock__obs_wait_begin(rlock__mset *m) {
  if (m != NULL)
    ADD(m->waiters, 1);
}

void rlock__obs_acquire_end(rlock__mset *m, int rc, int waited,
                            int64_t start_us, int64_t woke_us) {
  if (m == NULL)
    return;
  if (waited)
    ADD(m->waiters, -1);
  if (rc == RLOCK_ELOCKED) {
    ADD(m->timeouts, 1);
    return;
  }
  if (rc != RLOCK_OK) {
    ADD(m->failures, 1);
    return;
  }
  int64_t now = rlock__now_us();
  ADD(m->acquisitions, 1);
  observe(&m->wait, now - start_us);
  if (waited && woke_us != 0)
    observe(&m->handoff, now - woke_us);
}

void rlock__obs_hold_begin(rlock__mset *m) {
  if (m != NULL)
    ADD(m->holds, 1);
}

void rlock__obs_hold_end(rlock__mset *m, int64_t held_us) {
  if (m == NULL)
    return;
  ADD(m->holds, -1);
  if (held_us >= 0)
    observe(&m->hold, held_us);
}

void rlock__obs_lost(rlock__mset *m) {
  if (m != NULL)
    ADD(m->lost, 1);
}

/* ---- the text format ---------------------------------------------------- */

/* Writes what fits, counts it all. */
typedef struct text {
  char *buf;
  size_t size, len;
  int om; /* OpenMetrics */
} text;

static void put(text *t, const char *fmt, ...) RLOCK_PRINTF(2, 3);

static void put(text *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = t->len < t->size
              ? vsnprintf(t->buf + t->len, t->size - t->len, fmt, ap)
              : vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n > 0)
    t->len += (size_t)n;
}

/* A label value, escaped as both formats ask: backslash, quote, newline. */
static void put_escaped(text *t, const char *s) {
  for (; *s != '\0'; s++) {
    if (*s == '\\' || *s == '"')
      put(t, "\\%c", *s);
    else if (*s == '\n')
      put(t, "\\n");
    else
      put(t, "%c", *s);
  }
}

/* {kind="...",name="..."} plus `extra` (le="..."), or nothing. */
static void put_labels(text *t, const rlock__mset *m, const char *le) {
  if (m == NULL && le == NULL)
    return;
  put(t, "{");
  if (m != NULL) {
    put(t, "kind=\"%s\"", kind_names[m->kind]);
    if (m->name != NULL) {
      put(t, ",name=\"");
      put_escaped(t, m->name);
      put(t, "\"");
    }
  }
  if (le != NULL)
    put(t, "%sle=\"%s\"", m != NULL ? "," : "", le);
  put(t, "}");
}

/* HELP and TYPE of a family; a counter's OpenMetrics family name has no
 * _total. */
static void put_head(text *t, const char *name, const char *type,
                     const char *help) {
  size_t n = strlen(name);
  int cut = t->om && strcmp(type, "counter") == 0 && n > 6 &&
            strcmp(name + n - 6, "_total") == 0;
  int len = (int)(cut ? n - 6 : n);
  put(t, "# HELP %.*s %s\n# TYPE %.*s %s\n", len, name, help, len, name, type);
}

static uint64_t ld(const atomic_uint_fast64_t *a) {
  return atomic_load_explicit(a, memory_order_relaxed);
}

static int64_t ld_signed(const atomic_int_fast64_t *a) {
  int64_t v = atomic_load_explicit(a, memory_order_relaxed);
  return v < 0 ? 0 : v; /* a begin and its end seen out of order */
}

static int hist_used(const rlock__hist *h) {
  for (int i = 0; i <= RLOCK__HIST_BOUNDS; i++)
    if (ld(&h->bucket[i]) != 0)
      return 1;
  return 0;
}

/* The sets to show: every kind that has seen anything, every name kept. */
static size_t nsets(const rlock__obs *o) {
  return RLOCK__MK_COUNT +
         atomic_load_explicit(&o->names_n, memory_order_acquire);
}

static const rlock__mset *set_at(const rlock__obs *o, size_t i) {
  const rlock__mset *m =
      i < RLOCK__MK_COUNT ? &o->kinds[i] : &o->names[i - RLOCK__MK_COUNT];
  if (m->name != NULL || ld(&m->acquisitions) || ld(&m->timeouts) ||
      ld(&m->failures) || ld(&m->lost) ||
      atomic_load_explicit(&m->holds, memory_order_relaxed) != 0 ||
      atomic_load_explicit(&m->waiters, memory_order_relaxed) != 0 ||
      hist_used(&m->hold)) /* a RedLock's member: holds, no acquisitions */
    return m;
  return NULL;
}

typedef struct family {
  const char *name, *type, *help;
  size_t offset; /* of the counter, gauge or histogram in rlock__mset */
} family;

#define FAM(n, t, f, h)                                                        \
  { n, t, h, offsetof(rlock__mset, f) }

static const family set_families[] = {
    FAM("rlock_acquisitions_total", "counter", acquisitions,
        "Acquisitions that took the lock (each re-entry counts)."),
    FAM("rlock_acquire_timeouts_total", "counter", timeouts,
        "Acquisitions that ended without the lock because it stayed held "
        "until their wait ran out (RLOCK_ELOCKED)."),
    FAM("rlock_acquire_failures_total", "counter", failures,
        "Acquisitions that ended with any other error (canceled, "
        "unreachable server, ...)."),
    FAM("rlock_lost_total", "counter", lost,
        "Holds found lost: expired or deleted while held."),
    FAM("rlock_holds", "gauge", holds,
        "Holds recorded now (re-entries once; a lost one until released)."),
    FAM("rlock_waiters", "gauge", waiters,
        "Acquisitions waiting now for a lock held elsewhere."),
    FAM("rlock_wait_seconds", "histogram", wait,
        "Time from an acquisition's start to the hold, acquisitions that "
        "took the lock."),
    FAM("rlock_hold_seconds", "histogram", hold,
        "Time from a hold's first level to the release of its last."),
    FAM("rlock_handoff_seconds", "histogram", handoff,
        "Time from a waiter's last wake-up (an unlock message, a confirmed "
        "subscription, the end of a sleep) to the hold."),
};

static void put_hist(text *t, const char *name, const rlock__mset *m,
                     const rlock__hist *h) {
  uint64_t cum = 0;
  for (int i = 0; i <= RLOCK__HIST_BOUNDS; i++) {
    cum += ld(&h->bucket[i]);
    put(t, "%s_bucket", name);
    put_labels(t, m, i < RLOCK__HIST_BOUNDS ? bound_text[i] : "+Inf");
    put(t, " %" PRIu64 "\n", cum);
  }
  uint64_t sum = ld(&h->sum_us);
  put(t, "%s_sum", name);
  put_labels(t, m, NULL);
  put(t, " %" PRIu64 ".%06" PRIu64 "\n", sum / 1000000, sum % 1000000);
  put(t, "%s_count", name);
  put_labels(t, m, NULL);
  put(t, " %" PRIu64 "\n", cum);
}

static void put_set_family(text *t, const rlock__obs *o, const family *f) {
  put_head(t, f->name, f->type, f->help);
  for (size_t i = 0, n = nsets(o); i < n; i++) {
    const rlock__mset *m = set_at(o, i);
    if (m == NULL)
      continue;
    const char *at = (const char *)m + f->offset;
    if (f->type[0] == 'h') {
      put_hist(t, f->name, m, (const rlock__hist *)at);
      continue;
    }
    put(t, "%s", f->name);
    put_labels(t, m, NULL);
    if (f->type[0] == 'g')
      put(t, " %" PRId64 "\n", ld_signed((const atomic_int_fast64_t *)at));
    else
      put(t, " %" PRIu64 "\n", ld((const atomic_uint_fast64_t *)at));
  }
}

typedef struct client_counter {
  const char *name;
  int stat; /* rlock__stat, or -1: the names refused */
  const char *help;
} client_counter;

static const client_counter client_counters[] = {
    {"rlock_waits_total", RLOCK__STAT_WAITS,
     "Acquisitions that found the lock held and waited."},
    {"rlock_wakeups_total", RLOCK__STAT_WAKEUPS,
     "Waits ended by an unlock message."},
    {"rlock_releases_total", RLOCK__STAT_RELEASES,
     "Holds given back by their owner."},
    {"rlock_renewals_total", RLOCK__STAT_RENEWALS,
     "Leases the watchdog extended."},
    {"rlock_renewal_failures_total", RLOCK__STAT_RENEWAL_FAILURES,
     "Watchdog renewal calls that failed (tried again sooner)."},
    {"rlock_lost_told_total", RLOCK__STAT_LOST,
     "Losses told to the lost-lock callback and the log."},
    {"rlock_connects_total", RLOCK__STAT_CONNECTS,
     "Connections opened to data nodes."},
    {"rlock_connect_failures_total", RLOCK__STAT_CONNECT_FAILURES,
     "Connections to data nodes that could not be opened."},
    {"rlock_disconnects_total", RLOCK__STAT_DISCONNECTS,
     "Connections dropped: broken in use, closed while idle, timed out."},
    {"rlock_topology_changes_total", RLOCK__STAT_TOPOLOGY_CHANGES,
     "Sentinel master switches and cluster slot moves followed."},
    {"rlock_redirections_total", RLOCK__STAT_REDIRECTIONS,
     "MOVED and ASK redirections followed."},
    {"rlock_reconnects_total", RLOCK__STAT_RECONNECTS,
     "Connections opened to replace one that was dropped."},
    {"rlock_metric_names_refused_total", -1,
     "Lock objects counted under their kind only: no per-name slot was "
     "left (rlock_config_set_metrics_names)."},
};

size_t rlock__obs_text(const rlock__obs *o, char *buf, size_t size,
                       int openmetrics) {
  text t = {buf, size, 0, openmetrics};
  if (size > 0)
    buf[0] = '\0';
  for (size_t i = 0; i < sizeof set_families / sizeof *set_families; i++)
    put_set_family(&t, o, &set_families[i]);
  for (size_t i = 0; i < sizeof client_counters / sizeof *client_counters;
       i++) {
    const client_counter *cc = &client_counters[i];
    put_head(&t, cc->name, "counter", cc->help);
    put(&t, "%s %" PRIu64 "\n", cc->name,
        ld(cc->stat < 0 ? &o->names_refused : &o->n[cc->stat]));
  }
  if (openmetrics)
    put(&t, "# EOF\n");
  return t.len;
}
