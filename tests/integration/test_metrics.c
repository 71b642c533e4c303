/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: the metrics (rlock_client_metrics_text) equal what the test
 * did, on a blocking client and on loop clients (drivers.h): several
 * owners contending for one lock (acquisitions, waiters, timeouts, wait,
 * hold and handoff times), a hold lost by deleting its key, per-name
 * series within their bound, the OpenMetrics variant and the arguments'
 * refusals.
 */
#include "drivers.h"

#include <stdlib.h>
#include <string.h>

#define WAITERS 4

static char text[1 << 17];

/* The value of one series (its name and labels, exactly as written), or
 * -1 when the text has no such series. */
static double series(rlock_client *c, const char *name) {
  size_t needed = 0;
  OK(rlock_client_metrics_text(c, text, sizeof text, &needed, 0));
  assert_int_equal(needed, strlen(text) + 1);
  size_t n = strlen(name);
  for (const char *p = text; *p != '\0';) {
    if (strncmp(p, name, n) == 0 && p[n] == ' ')
      return strtod(p + n + 1, NULL);
    const char *nl = strchr(p, '\n');
    p = nl != NULL ? nl + 1 : p + strlen(p);
  }
  return -1;
}

#define KIND "{kind=\"reentrant\"}"
#define SERIES_EQ(c, name, want) assert_true(series(c, name) == (double)(want))

typedef struct until_series {
  rlock_client *c;
  const char *name;
  double want;
} until_series;

static bool pred_series(void *arg, char *why, size_t cap) {
  until_series *u = arg;
  double got = series(u->c, u->name);
  snprintf(why, cap, "%s is %g, not %g", u->name, got, u->want);
  return got == u->want;
}

static void wait_series(rlock_client *c, const char *name, double want) {
  until_series u = {c, name, want};
  dk_wait(pred_series, &u, 10000, "a metric");
}

typedef struct any_done {
  dk_op *ops;
  bool *seen;
  int found;
} any_done;

static bool pred_any_done(void *arg, char *why, size_t cap) {
  any_done *a = arg;
  snprintf(why, cap, "no waiter took the lock");
  for (int i = 0; i < WAITERS; i++)
    if (!a->seen[i] && dk_op_done(&a->ops[i])) {
      a->found = i;
      return true;
    }
  return false;
}

/* Hand the lock from `holder` down the waiters, one release at a time;
 * returns the last holder. */
static uint64_t hand_down(rlock_lock *l, uint64_t holder, dk_op *ops,
                          const uint64_t *owners) {
  bool seen[WAITERS] = {0};
  for (int k = 0; k < WAITERS; k++) {
    OK(dk_release(l, holder));
    any_done a = {ops, seen, -1};
    dk_wait(pred_any_done, &a, 10000, "a waiter's acquisition");
    seen[a.found] = true;
    OK(dk_op_wait(&ops[a.found], 1000, "a waiter"));
    holder = owners[a.found];
  }
  return holder;
}

static void test_contention(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 0, NULL, NULL);
  rlock_lock *l = fx_lock(c, "metrics:contended");
  uint64_t first = rlock_owner_new(), other = rlock_owner_new();
  uint64_t owners[WAITERS];
  dk_op ops[WAITERS];
  OK(dk_acquire(l, first, 0, 0));
  SERIES_EQ(c, "rlock_holds" KIND, 1);
  for (int i = 0; i < WAITERS; i++) {
    owners[i] = rlock_owner_new();
    dk_acquire_start(&ops[i], l, owners[i], 30000, 0);
  }
  wait_series(c, "rlock_waiters" KIND, WAITERS);
  /* Two that give up: a wait that runs out, a single try. */
  RC(dk_acquire(l, other, 50, 0), RLOCK_ELOCKED);
  RC(dk_acquire(l, other, 0, 0), RLOCK_ELOCKED);
  uint64_t last = hand_down(l, first, ops, owners);
  OK(dk_release(l, last));
  SERIES_EQ(c, "rlock_acquisitions_total" KIND, 1 + WAITERS);
  SERIES_EQ(c, "rlock_acquire_timeouts_total" KIND, 2);
  SERIES_EQ(c, "rlock_acquire_failures_total" KIND, 0);
  SERIES_EQ(c, "rlock_waiters" KIND, 0);
  SERIES_EQ(c, "rlock_holds" KIND, 0);
  SERIES_EQ(c, "rlock_wait_seconds_count" KIND, 1 + WAITERS);
  SERIES_EQ(c, "rlock_wait_seconds_bucket{kind=\"reentrant\",le=\"+Inf\"}",
            1 + WAITERS);
  SERIES_EQ(c, "rlock_handoff_seconds_count" KIND, WAITERS);
  SERIES_EQ(c, "rlock_hold_seconds_count" KIND, 1 + WAITERS);
  SERIES_EQ(c, "rlock_lost_total" KIND, 0);
  SERIES_EQ(c, "rlock_waits_total", WAITERS + 1); /* and the 50 ms one */
  /* The waiters each waited at least for one hold and its release. */
  assert_true(series(c, "rlock_wait_seconds_sum" KIND) > 0);

  /* A hold lost under its holder: the key deleted. */
  OK(dk_acquire(l, first, 0, 0));
  freeReplyObject(rt_cmd(srv, "DEL metrics:contended"));
  RC(dk_release(l, first), RLOCK_ELOST);
  SERIES_EQ(c, "rlock_lost_total" KIND, 1);
  SERIES_EQ(c, "rlock_holds" KIND, 0);
  SERIES_EQ(c, "rlock_acquisitions_total" KIND, 2 + WAITERS);
  /* Kinds never used show nothing. */
  SERIES_EQ(c, "rlock_acquisitions_total{kind=\"fair\"}", -1);
  DK_FREE((l), (c));
}

/* Per-name series, within their bound; label values escaped. */
static void test_names(void **state) {
  (void)state;
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, rt_server_url(srv)));
  OK(rlock_config_set_metrics_names(cfg, 2));
  rlock_client *c = dk_client_cfg(cfg);
  rlock_config_free(cfg);
  rlock_lock *a = fx_lock(c, "metrics:a"), *a2 = fx_lock(c, "metrics:a");
  rlock_lock *q = fx_lock(c, "metrics:\"q\\"), *b = fx_lock(c, "metrics:b");
  uint64_t me = dk_me();
  rlock_lock *both[] = {a, a2, q, b};
  for (int i = 0; i < 4; i++) {
    OK(dk_acquire(both[i], me, 0, 0));
    OK(dk_release(both[i], me));
  }
  SERIES_EQ(
      c, "rlock_acquisitions_total{kind=\"reentrant\",name=\"metrics:a\"}", 2);
  SERIES_EQ(c,
            "rlock_acquisitions_total{kind=\"reentrant\",name="
            "\"metrics:\\\"q\\\\\"}",
            1);
  SERIES_EQ(c, "rlock_acquisitions_total" KIND, 1); /* metrics:b */
  SERIES_EQ(c, "rlock_metric_names_refused_total", 1);
  DK_FREE((a, a2, q, b), (c));
}

/* A MultiLock's and a RedLock's acquisitions count as wholes under their
 * own kinds; a MultiLock's members count under theirs too. */
static void test_multilock_redlock(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 0, NULL, NULL);
  rlock_lock *l[3] = {fx_lock(c, "metrics:m1"), fx_lock(c, "metrics:m2"),
                      fx_lock(c, "metrics:m3")};
  /* A RedLock's members need servers of their own; its acquisitions
   * count in its first member's client. */
  rt_server *s2 = rt_server_start(NULL), *s3 = rt_server_start(NULL);
  rlock_client *c2 = dk_client(rt_server_url(s2), 0, NULL, NULL);
  rlock_client *c3 = dk_client(rt_server_url(s3), 0, NULL, NULL);
  rlock_lock *rl[3] = {l[0], fx_lock(c2, "metrics:r2"),
                       fx_lock(c3, "metrics:r3")};
  rlock_multilock *m;
  rlock_redlock *r;
  OK(rlock_multilock_new(&m, l, 2));
  OK(rlock_redlock_new(&r, rl, 3));
  OK(rlock_multilock_try_acquire(m, 0, 0));
  OK(rlock_multilock_release(m));
  uint64_t other = rlock_owner_new();
  OK(dk_acquire(l[1], other, 0, 0));
  RC(rlock_multilock_try_acquire(m, 0, 0), RLOCK_ELOCKED);
  OK(dk_release(l[1], other));
  rlock_redlock_result *res = NULL;
  OK(rlock_redlock_try_acquire(&res, r, 0, 0));
  rlock_redlock_result_free(res);
  OK(rlock_redlock_release(r));
  SERIES_EQ(c, "rlock_acquisitions_total{kind=\"multilock\"}", 1);
  SERIES_EQ(c, "rlock_acquire_timeouts_total{kind=\"multilock\"}", 1);
  SERIES_EQ(c, "rlock_wait_seconds_count{kind=\"multilock\"}", 1);
  SERIES_EQ(c, "rlock_acquisitions_total{kind=\"redlock\"}", 1);
  /* The members: 2, then 1 before the refusal, then `other`'s. */
  SERIES_EQ(c, "rlock_acquisitions_total" KIND, 4);
  SERIES_EQ(c, "rlock_acquire_timeouts_total" KIND, 1);
  /* Every hold went, the RedLock's member's too (one of its members'
   * holds counts in each of its clients). */
  SERIES_EQ(c, "rlock_holds" KIND, 0);
  SERIES_EQ(c, "rlock_hold_seconds_count" KIND, 5);
  SERIES_EQ(c2, "rlock_hold_seconds_count" KIND, 1);
  SERIES_EQ(c2, "rlock_acquisitions_total{kind=\"redlock\"}", -1);
  rlock_redlock_free(r);
  rlock_multilock_free(m);
  for (int i = 0; i < 3; i++)
    rlock_lock_free(l[i]);
  rlock_lock_free(rl[1]);
  DK_FREE((rl[2]), (c3));
  dk_free(c2);
  dk_free(c);
  rt_server_free(s3);
  rt_server_free(s2);
}

/* A connection killed by the server is replaced: one disconnect, one
 * reconnect. */
static void test_reconnect(void **state) {
  (void)state;
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, rt_server_url(srv)));
  /* No registry: a blocking client's write would open its background
   * loop's connection beside the lock calls' (one more to count). */
  OK(rlock_config_set_registry_period(cfg, 0));
  rlock_client *c = dk_client_cfg(cfg);
  rlock_config_free(cfg);
  rlock_lock *l = fx_lock(c, "metrics:reconnect");
  uint64_t me = dk_me();
  OK(dk_acquire(l, me, 0, 0));
  OK(dk_release(l, me));
  SERIES_EQ(c, "rlock_reconnects_total", 0);
  freeReplyObject(rt_cmd(srv, "CLIENT KILL TYPE normal"));
  OK(dk_acquire(l, me, 5000, 0)); /* rides out a connection lost idle */
  OK(dk_release(l, me));
  SERIES_EQ(c, "rlock_disconnects_total", 1);
  SERIES_EQ(c, "rlock_reconnects_total", 1);
  SERIES_EQ(c, "rlock_connects_total", 2);
  DK_FREE((l), (c));
}

/* Semaphores, permit-expirable semaphores and latches count under kinds
 * of their own, never as reentrant locks; only permits are holds. */
static void test_synchronisers(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 0, NULL, NULL);
  rlock_semaphore *s;
  rlock_psemaphore *p;
  rlock_latch *l;
  OK(rlock_semaphore_new(&s, c, "metrics:sem"));
  OK(rlock_psemaphore_new(&p, c, "metrics:psem"));
  OK(rlock_latch_new(&l, c, "metrics:latch"));
  OK(rlock_semaphore_set_permits(s, 1));
  OK(rlock_semaphore_acquire(s, 1, 0, NULL));
  RC(rlock_semaphore_acquire(s, 1, 0, NULL), RLOCK_ELOCKED);
  OK(rlock_semaphore_release(s, 1));
  OK(rlock_psemaphore_set_permits(p, 1));
  char id[RLOCK_PERMIT_ID_LEN + 1];
  OK(rlock_psemaphore_acquire(id, p, 0, 10000, NULL));
  SERIES_EQ(c, "rlock_holds{kind=\"psemaphore\"}", 1);
  OK(rlock_psemaphore_release(p, id));
  OK(rlock_latch_await(l, 0, NULL)); /* no count: already zero */
  SERIES_EQ(c, "rlock_acquisitions_total{kind=\"semaphore\"}", 1);
  SERIES_EQ(c, "rlock_acquire_timeouts_total{kind=\"semaphore\"}", 1);
  SERIES_EQ(c, "rlock_acquisitions_total{kind=\"psemaphore\"}", 1);
  SERIES_EQ(c, "rlock_holds{kind=\"psemaphore\"}", 0);
  SERIES_EQ(c, "rlock_acquisitions_total{kind=\"latch\"}", 1);
  SERIES_EQ(c, "rlock_acquisitions_total" KIND, -1); /* never shown */
  rlock_latch_free(l);
  rlock_psemaphore_free(p);
  rlock_semaphore_free(s);
  freeReplyObject(rt_cmd(srv, "DEL metrics:sem metrics:psem"));
  dk_free(c);
}

/* The OpenMetrics variant, the size asked for, and the refusals. */
static void test_format_and_args(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 0, NULL, NULL);
  size_t needed = 0;
  RC(rlock_client_metrics_text(c, NULL, 0, &needed, 0), RLOCK_EINVAL);
  assert_true(needed > 1000);
  char small[64];
  RC(rlock_client_metrics_text(c, small, sizeof small, &needed, 0),
     RLOCK_EINVAL);
  assert_int_equal(strlen(small), sizeof small - 1); /* as much as fits */
  OK(rlock_client_metrics_text(c, text, sizeof text, NULL,
                               RLOCK_METRICS_OPENMETRICS));
  assert_non_null(strstr(text, "# TYPE rlock_renewals counter\n"));
  assert_non_null(strstr(text, "\nrlock_renewals_total 0\n"));
  size_t n = strlen(text);
  assert_true(n > 6 && strcmp(text + n - 6, "# EOF\n") == 0);
  OK(rlock_client_metrics_text(c, text, sizeof text, NULL, 0));
  assert_non_null(strstr(text, "# TYPE rlock_renewals_total counter\n"));
  assert_null(strstr(text, "# EOF"));
  RC(rlock_client_metrics_text(NULL, text, sizeof text, NULL, 0), RLOCK_EINVAL);
  RC(rlock_client_metrics_text(c, NULL, 10, NULL, 0), RLOCK_EINVAL);
  RC(rlock_client_metrics_text(c, text, sizeof text, NULL, 2), RLOCK_EINVAL);
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  RC(rlock_config_set_metrics_names(cfg, -1), RLOCK_EINVAL);
  RC(rlock_config_set_metrics_names(cfg, RLOCK_METRICS_NAMES_MAX + 1),
     RLOCK_EINVAL);
  RC(rlock_config_set_metrics_names(NULL, 1), RLOCK_EINVAL);
  OK(rlock_config_set_metrics_names(cfg, RLOCK_METRICS_NAMES_MAX));
  rlock_config_free(cfg);
  dk_free(c);
}

int main(void) {
  const dk_case cases[] = {
      DK_CASE(test_contention, DK_ALL),
      DK_CASE(test_names, DK_ALL),
      DK_CASE(test_reconnect, DK_ALL),
      DK_CASE(test_multilock_redlock, DK_BLOCK),
      DK_CASE(test_format_and_args, DK_BLOCK),
      DK_CASE(test_synchronisers, DK_BLOCK),
  };
  return DK_RUN(cases, fx_srv_start, fx_srv_stop);
}
