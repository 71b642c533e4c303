/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: what a client tells its operators. The log hook
 * (rlock_config_set_log) hears lost locks, failed renewals and
 * connections lost and made again, only up to its level, on threads where
 * it may call back into the library; the counters (rlock_client_stats)
 * count acquisitions, waits, wake-ups, releases, renewals, lost holds and
 * connections as they happen. */
#include "fixture.h"

#include <stdatomic.h>

#define WD 600
#define MAX_LINES 256

/* What a hook heard, kept for the test to search. */
typedef struct heard {
  pthread_mutex_t mu;
  int n;
  int level[MAX_LINES];
  char line[MAX_LINES][256];
  /* asked for its counters from inside the hook; set once the client is
   * made, while its background thread may already log (its registry
   * record's connection) */
  _Atomic(rlock_client *) client;
  atomic_int reentered;
} heard;

static void hear(rlock_log_level level, const char *message, void *ud) {
  heard *h = ud;
  rlock_client *c = atomic_load(&h->client);
  if (c != NULL) { /* the hook may call the library */
    rlock_stats st;
    if (rlock_client_stats(c, &st, sizeof st) == RLOCK_OK)
      atomic_fetch_add(&h->reentered, 1);
  }
  pthread_mutex_lock(&h->mu);
  if (h->n < MAX_LINES) {
    h->level[h->n] = (int)level;
    snprintf(h->line[h->n], sizeof h->line[0], "%s", message);
    h->n++;
  }
  pthread_mutex_unlock(&h->mu);
}

/* The level of the first line containing `text`, or 0. */
static int heard_at(heard *h, const char *text) {
  int level = 0;
  pthread_mutex_lock(&h->mu);
  for (int i = 0; i < h->n && level == 0; i++)
    if (strstr(h->line[i], text) != NULL)
      level = h->level[i];
  pthread_mutex_unlock(&h->mu);
  return level;
}

static int max_level_heard(heard *h) {
  int max = 0;
  pthread_mutex_lock(&h->mu);
  for (int i = 0; i < h->n; i++)
    max = h->level[i] > max ? h->level[i] : max;
  pthread_mutex_unlock(&h->mu);
  return max;
}

static void heard_init(heard *h) {
  memset(h, 0, sizeof *h);
  pthread_mutex_init(&h->mu, NULL);
}

static rlock_client *logged_client(int64_t watchdog, rlock_log_level level,
                                   heard *h) {
  rlock_config *cfg;
  rlock_client *c;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, rt_server_url(srv)));
  OK(rlock_config_set_connect_timeout_ms(cfg, 500));
  OK(rlock_config_set_command_timeout_ms(cfg, 1000));
  OK(rlock_config_set_watchdog_timeout_ms(cfg, watchdog));
  OK(rlock_config_set_log(cfg, hear, level, h));
  OK(rlock_client_new(&c, cfg));
  rlock_config_free(cfg);
  return c;
}

static rlock_stats stats_of(rlock_client *c) {
  rlock_stats st;
  OK(rlock_client_stats(c, &st, sizeof st));
  return st;
}

typedef struct stat_wait {
  rlock_client *c;
  size_t offset; /* of the counter in rlock_stats */
  uint64_t at_least;
} stat_wait;

static bool pred_stat(void *arg, char *why, size_t cap) {
  stat_wait *w = arg;
  rlock_stats st = stats_of(w->c);
  uint64_t v;
  memcpy(&v, (const char *)&st + w->offset, sizeof v);
  snprintf(why, cap, "counter at %llu, want %llu", (unsigned long long)v,
           (unsigned long long)w->at_least);
  return v >= w->at_least;
}

#define WAIT_STAT(c, field, n)                                                 \
  do {                                                                         \
    stat_wait w_ = {(c), offsetof(rlock_stats, field), (n)};                   \
    rt_wait_until(pred_stat, &w_, rt_scaled_ms(10000), "stats." #field);       \
  } while (0)

typedef struct heard_wait {
  heard *h;
  const char *text;
} heard_wait;

static bool pred_heard(void *arg, char *why, size_t cap) {
  heard_wait *w = arg;
  snprintf(why, cap, "no log line with '%s' yet", w->text);
  return heard_at(w->h, w->text) != 0;
}

static void wait_heard(heard *h, const char *text) {
  heard_wait w = {h, text};
  rt_wait_until(pred_heard, &w, rt_scaled_ms(10000), text);
}

/* A client without a registry record, which is written when a client is
 * made (config.h): its connections are then the calls' alone. */
static rlock_client *unregistered_client(int64_t watchdog) {
  rlock_config *cfg;
  rlock_client *c;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, rt_server_url(srv)));
  OK(rlock_config_set_watchdog_timeout_ms(cfg, watchdog));
  OK(rlock_config_set_registry_period(cfg, 0));
  OK(rlock_client_new(&c, cfg));
  rlock_config_free(cfg);
  return c;
}

/* Counters follow the calls: holds taken and given back, a wait and its
 * wake-up, the watchdog's renewals, the connections opened. */
static void test_counters(void **state) {
  (void)state;
  rlock_client *c = unregistered_client(WD), *other = fx_client(srv, 0);
  rlock_stats st = stats_of(c);
  assert_int_equal(st.acquisitions, 0);
  assert_int_equal(st.connects, 0); /* nothing opened before use */
  rlock_lock *l = fx_lock(c, "observe:count");
  OK(rlock_lock_acquire(l));
  OK(rlock_lock_acquire(l)); /* a re-entry is a hold taken */
  WAIT_STAT(c, renewals, 1);
  OK(rlock_lock_release(l));
  OK(rlock_lock_release(l));
  st = stats_of(c);
  assert_int_equal(st.acquisitions, 2);
  assert_int_equal(st.releases, 2);
  assert_int_equal(st.waits, 0);
  assert_int_equal(st.lost, 0);
  assert_int_equal(st.renewal_failures, 0);
  assert_true(st.connects >= 1);
  assert_int_equal(st.disconnects, 0);
  assert_int_equal(st.topology_changes, 0);

  /* A wait, woken by the holder's unlock message. */
  rlock_lock *held = fx_lock(other, "observe:count");
  OK(rlock_lock_acquire_lease(held, 60000));
  rlock_stats before = stats_of(c);
  freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
  fx_waiter w;
  fx_waiter_start(&w, fx_lock(c, "observe:count"));
  /* Its attempt before subscribing and the one after: then it sleeps, so
   * the release's message is what wakes it (and is counted). */
  fx_wait_evalsha(srv, 2, "the waiter's two attempts");
  OK(rlock_lock_release(held));
  fx_waiter_join(&w);
  OK(w.rc);
  st = stats_of(c);
  assert_int_equal(st.waits, before.waits + 1);
  assert_true(st.wakeups >= before.wakeups + 1);
  assert_int_equal(st.acquisitions, before.acquisitions + 1);
  assert_int_equal(st.releases, before.releases + 1);

  /* Sizes: a smaller struct gets its first fields; bad arguments fail. */
  uint64_t first2[2] = {0, 0};
  OK(rlock_client_stats(c, (rlock_stats *)(void *)first2, sizeof first2));
  assert_int_equal(first2[0], stats_of(c).acquisitions);
  assert_int_equal(first2[1], stats_of(c).waits);
  RC(rlock_client_stats(NULL, &st, sizeof st), RLOCK_EINVAL);
  RC(rlock_client_stats(c, NULL, sizeof st), RLOCK_EINVAL);
  RC(rlock_client_stats(c, &st, 0), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "size"));

  FX_FREE((w.l, held, l), (other, c));
}

/* A restart without persistence: the held lock is reported lost (ERROR),
 * the subscriber's connection dropped (WARN) and made again (INFO), the
 * pooled connection found closed (WARN); connections opened at DEBUG. The
 * hook calls back into the library from every thread it runs on. */
static void test_log_restart(void **state) {
  (void)state;
  heard h;
  heard_init(&h);
  rlock_client *c = logged_client(WD, RLOCK_LOG_DEBUG, &h);
  atomic_store(&h.client, c);
  rlock_client *other = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "observe:lost");
  OK(rlock_lock_acquire(l));
  rlock_lock *held = fx_lock(other, "observe:sub");
  OK(rlock_lock_acquire_lease(held, 60000));
  fx_waiter w;
  fx_waiter_start(&w, fx_lock(c, "observe:sub"));
  fx_wait_subscribers(srv, "redisson_lock__channel:{observe:sub}", 1,
                      "the waiter's subscription");
  assert_int_equal(heard_at(&h, "connected to"), RLOCK_LOG_DEBUG);

  rt_server_restart(srv); /* every lock is gone with the data */
  wait_heard(&h, "lock 'observe:lost' lost");
  assert_int_equal(heard_at(&h, "lock 'observe:lost' lost"), RLOCK_LOG_ERROR);
  fx_waiter_join(&w); /* the waiter takes the lock that is gone */
  OK(w.rc);
  /* It may have taken it before its channel was subscribed again: a
   * second wait makes the subscriber reconnect either way. */
  rlock_client *third = fx_client(srv, 0);
  rlock_lock *again = fx_lock(third, "observe:sub");
  OK(rlock_lock_acquire_lease(again, 60000));
  fx_waiter w2;
  fx_waiter_start(&w2, fx_lock(c, "observe:sub"));
  fx_wait_subscribers(srv, "redisson_lock__channel:{observe:sub}", 1,
                      "the second waiter's subscription");
  wait_heard(&h, "subscriber reconnected to");
  OK(rlock_lock_release(again));
  OK(fx_waiter_join(&w2));
  FX_FREE((w2.l, again), (third));
  assert_int_equal(heard_at(&h, "subscriber connection to"), RLOCK_LOG_WARN);
  assert_int_equal(heard_at(&h, "subscriber reconnected"), RLOCK_LOG_INFO);
  rlock_stats st = stats_of(c);
  assert_int_equal(st.lost, 1);
  assert_true(st.disconnects >= 2); /* the subscriber's and a pooled one */
  assert_true(st.connects >= 3);
  assert_true(atomic_load(&h.reentered) > 0);
  RC(rlock_lock_release(l), RLOCK_ELOST);
  FX_FREE((w.l, held, l), (other, c));
  pthread_mutex_destroy(&h.mu);
}

/* The server gone: renewals fail (WARN, counted), then the hold is lost
 * once a whole lease passed unconfirmed (ERROR). A hook at WARN hears
 * nothing below it. */
static void test_log_outage_levels(void **state) {
  (void)state;
  heard h;
  heard_init(&h);
  rlock_client *c = logged_client(WD, RLOCK_LOG_WARN, &h);
  rlock_lock *l = fx_lock(c, "observe:outage");
  OK(rlock_lock_acquire(l));
  OK(rlock_lock_release(l));
  assert_int_equal(h.n, 0); /* nothing went wrong: nothing to say */
  OK(rlock_lock_acquire(l));
  rt_server_stop(srv);
  wait_heard(&h, "watchdog: renewing 1 hold failed");
  wait_heard(&h, "lock 'observe:outage' lost");
  assert_int_equal(heard_at(&h, "watchdog: renewing"), RLOCK_LOG_WARN);
  assert_true(stats_of(c).renewal_failures >= 1);
  assert_int_equal(stats_of(c).lost, 1);
  assert_true(max_level_heard(&h) <= RLOCK_LOG_WARN);
  rt_server_start_again(srv);
  RC(rlock_lock_release(l), RLOCK_ELOST);
  FX_FREE((l), (c));
  pthread_mutex_destroy(&h.mu);
}

static void no_log(rlock_log_level level, const char *message, void *ud) {
  (void)level, (void)message, (void)ud;
}

static void test_log_arguments(void **state) {
  (void)state;
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  RC(rlock_config_set_log(cfg, no_log, (rlock_log_level)0, NULL), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "log level"));
  RC(rlock_config_set_log(cfg, no_log, (rlock_log_level)5, NULL), RLOCK_EINVAL);
  RC(rlock_config_set_log(NULL, no_log, RLOCK_LOG_INFO, NULL), RLOCK_EINVAL);
  OK(rlock_config_set_log(cfg, no_log, RLOCK_LOG_DEBUG, NULL));
  OK(rlock_config_set_log(cfg, NULL, RLOCK_LOG_DEBUG, NULL)); /* removed */
  /* Removing takes no level: any value, 0 included, is ignored. */
  OK(rlock_config_set_log(cfg, NULL, (rlock_log_level)0, NULL));
  rlock_config_free(cfg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_counters),
      cmocka_unit_test(test_log_restart),
      cmocka_unit_test(test_log_outage_levels),
      cmocka_unit_test(test_log_arguments),
  };
  return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
