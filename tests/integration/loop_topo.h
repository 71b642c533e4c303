/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loop_topo.h - what the suites on topologies share for their loop clients
 * on top of loop_fixture.h (drivers.h builds on it):
 *
 *  - running the loop on the test's thread until a server-side
 *    condition holds;
 *  - a loop run by a thread of its own ("lt"), for the cases where the
 *    test's thread must block in the harness (a failover, a migration)
 *    while the loop keeps running: the loop thread runs the test's
 *    commands (posted with lt_do: making and freeing clients, say) from a
 *    10 ms repeating timer, and measures how late that timer ever fires,
 *    which is how the suites check that nothing in the library blocks the
 *    loop's thread.
 *
 * Nothing on the loop thread uses cmocka's assertions (they longjmp to
 * the test's thread): what fails there is handed back to the test's
 * thread, which reports it.
 */
#ifndef RLOCK_TEST_LOOP_TOPO_H
#define RLOCK_TEST_LOOP_TOPO_H

#include "loop_fixture.h"

#include <time.h>

/* With $RLOCK_TEST_LOG set, the clients' log lines go to stderr (for
 * finding out why a case failed). */
static inline void lt_log(rlock_log_level level, const char *message,
                          void *ud) {
  fprintf(stderr, "[%lld] client %d, level %d: %s\n", (long long)rt_now_ms(),
          (int)(intptr_t)ud, (int)level, message);
}

static int lt_clients; /* made so far: their number in log lines */

/* ---- on the test's thread: run the loop until ... ---------------------- */

/* The owner field of `owner` on `c`, as the server stores it. */
static inline void field_of(rlock_client *c, uint64_t owner, char *buf) {
  snprintf(buf, RLOCK_OWNER_MAX, "%s:%llu", rlock_client_id(c),
           (unsigned long long)owner);
}

/* Run the loop (in 20 ms turns) until pred holds, up to `ms` (scaled);
 * fails naming `what` and pred's reason. */
static inline void run_until_pred(rt_wait_pred pred, void *arg, int64_t ms,
                                  const char *what) {
  int64_t end = rt_now_ms() + rt_scaled_ms(ms);
  char why[768] = "";
  while (!pred(arg, why, sizeof why)) {
    if (rt_now_ms() > end)
      fail_msg("%s: not done after %lld ms: %s", what,
               (long long)rt_scaled_ms(ms), why);
    run_once(20);
  }
}

/* ---- a loop on a thread of its own ------------------------------------- */

enum { LT_INIT = 1, LT_STOP = 1000 };

typedef struct lt lt;
/* Runs on the loop thread for each command the test posts (LT_INIT first,
 * from lt_start; LT_STOP last, from lt_stop, which must free every
 * client). */
typedef void (*lt_fn)(lt *x, int cmd);

struct lt {
  lt_fn fn;
  void *ud;
  pthread_t thread;
  atomic_int posted; /* the command the test thread posted */
  atomic_int acked;  /* the last one the loop thread ran */
  int handled;       /* loop thread */
  int64_t last_us;   /* loop thread: the previous tick */
  /* The 10 ms timer's worst lateness, less the time the loop thread
   * waited for a CPU meanwhile (the machine's load, not the library's);
   * when it came, how late it was in all, and the thread's CPU time and
   * run-queue wait in that interval. */
  _Atomic int64_t max_late_us, worst_at_us, worst_raw_us, worst_cpu_us,
      worst_queued_us;
  int64_t last_cpu_us, last_queued_us; /* loop thread */
  _Atomic int64_t from_us;             /* measuring since */
  atomic_long ticks;
  atomic_int failed;
  char err[512]; /* the first failure; read once `failed` is seen */
  uv_timer_t uvt;
  struct event *evt;
};

/* On the loop thread: record a failure (the first one's message kept);
 * lt_stop fails the test with it (test_topo_stalls). */
static inline void lt_fail(lt *x, const char *fmt, ...) {
  if (atomic_load(&x->failed) == 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->err, sizeof x->err, fmt, ap);
    va_end(ap);
  }
  atomic_fetch_add(&x->failed, 1);
}

/* fx_config's configuration for a loop client (the caller frees it):
 * with $RLOCK_TEST_LOG set, its log lines go to stderr. */
static inline rlock_config *lt_config(const char *url, int64_t watchdog,
                                      rlock_lost_fn lost, void *ud) {
  rlock_config *cfg = fx_config(url, watchdog, lost, ud);
  if (getenv("RLOCK_TEST_LOG") != NULL)
    OK(rlock_config_set_log(cfg, lt_log, RLOCK_LOG_DEBUG,
                            (void *)(intptr_t)++lt_clients));
  return cfg;
}

/* A loop client of lt_config(url, watchdog, lost, ud). */
static inline rlock_client *lt_client(const char *url, int64_t watchdog,
                                      rlock_lost_fn lost, void *ud) {
  rlock_config *cfg = lt_config(url, watchdog, lost, ud);
  rlock_client *c = loop_client_cfg(cfg);
  rlock_config_free(cfg);
  return c;
}

/* A completion seen from another thread: written on the loop thread,
 * `done` stored last (test_topo_stalls). */
typedef struct lt_res {
  int rc;
  int64_t value;
  int64_t at_us; /* when the callback ran */
  char msg[256];
  atomic_int done;
} lt_res;

static inline void lt_done(void *arg, int rc, int64_t value) {
  lt_res *r = arg;
  r->rc = rc;
  r->value = value;
  r->at_us = rt_now_us();
  snprintf(r->msg, sizeof r->msg, "%s",
           rc == RLOCK_OK ? "" : rlock_error_last()->message);
  atomic_fetch_add(&r->done, 1);
}

static inline void lt_res_reset(lt_res *r) {
  r->rc = -100;
  r->msg[0] = '\0';
  atomic_store(&r->done, 0);
}

static inline bool lt_pred_done(void *arg, char *why, size_t cap) {
  snprintf(why, cap, "no answer yet");
  return atomic_load(&((lt_res *)arg)->done) > 0;
}

/* Test thread: wait (polling) for a completion, up to `ms` (scaled
 * here), and fail unless it succeeded. */
static inline void lt_wait_ok(lt_res *r, int64_t ms, const char *what) {
  rt_wait_until(lt_pred_done, r, rt_scaled_ms(ms), what);
  if (r->rc != RLOCK_OK)
    fail_msg("%s: %d (%s)", what, r->rc, r->msg);
}

/* CPU time of the calling thread, in µs. */
static inline int64_t lt_cpu_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* How long the calling thread has waited, runnable, for a CPU (µs; the
 * second field of /proc/thread-self/schedstat), or 0 where Linux does not
 * say. A thread blocked in a system call is not waiting for a CPU. */
static inline int64_t lt_queued_us(void) {
  FILE *f = fopen("/proc/thread-self/schedstat", "r");
  unsigned long long run = 0, wait = 0;
  if (f == NULL)
    return 0;
  if (fscanf(f, "%llu %llu", &run, &wait) != 2)
    wait = 0;
  fclose(f);
  return (int64_t)(wait / 1000);
}

static inline void lt_tick(lt *x) {
  int64_t now = rt_now_us(), cpu = lt_cpu_us(), queued = lt_queued_us();
  if (x->last_us != 0) {
    int64_t raw = now - x->last_us - 10000;
    int64_t late = raw - (queued - x->last_queued_us);
    if (late > atomic_load(&x->max_late_us)) {
      atomic_store(&x->max_late_us, late);
      atomic_store(&x->worst_at_us, now);
      atomic_store(&x->worst_raw_us, raw);
      atomic_store(&x->worst_cpu_us, cpu - x->last_cpu_us);
      atomic_store(&x->worst_queued_us, queued - x->last_queued_us);
    }
  }
  x->last_us = now;
  x->last_cpu_us = cpu;
  x->last_queued_us = queued;
  atomic_fetch_add(&x->ticks, 1);
  int p = atomic_load(&x->posted);
  if (p == x->handled)
    return;
  x->handled = p;
  x->fn(x, p);
  if (p == LT_STOP) {
    if (kind == UV) {
      uv_timer_stop(&x->uvt);
      uv_close((uv_handle_t *)&x->uvt, NULL);
    } else {
      event_del(x->evt);
      event_base_loopbreak(evb);
    }
  }
  /* What fn did may have taken a while: not the library's lateness. */
  x->last_us = rt_now_us();
  x->last_cpu_us = lt_cpu_us();
  x->last_queued_us = lt_queued_us();
  atomic_store(&x->acked, p);
}

static inline void lt_uv_tick(uv_timer_t *t) { lt_tick(t->data); }

static inline void lt_ev_tick(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  lt_tick(arg);
}

static inline void *lt_main(void *arg) {
  lt *x = arg;
  if (kind == UV) {
    uv_timer_init(&uvl, &x->uvt);
    x->uvt.data = x;
    uv_timer_start(&x->uvt, lt_uv_tick, 10, 10);
    uv_run(&uvl, UV_RUN_DEFAULT); /* until the timer and clients are gone */
  } else {
    x->evt = event_new(evb, -1, EV_PERSIST, lt_ev_tick, x);
    struct timeval tv = {0, 10000};
    event_add(x->evt, &tv); /* (activated at once, the next would come
                               20 ms later: libevent keeps to its grid) */
    event_base_dispatch(evb);
    event_free(x->evt);
  }
  return NULL;
}

static inline bool lt_pred_acked(void *arg, char *why, size_t cap) {
  lt *x = arg;
  snprintf(why, cap, "the loop thread ran command %d, posted %d",
           atomic_load(&x->acked), atomic_load(&x->posted));
  return atomic_load(&x->acked) == atomic_load(&x->posted);
}

/* Test thread: post `cmd` (unlike the last) and wait until the loop
 * thread has run it. */
static inline void lt_do(lt *x, int cmd) {
  atomic_store(&x->posted, cmd);
  rt_wait_until(lt_pred_acked, x, rt_scaled_ms(10000), "a loop command");
}

/* The loop thread running, if any: a case that fails while it runs
 * leaves it to the group's teardown (lt_abandon). */
static lt *lt_running;

/* Start the loop thread on the group's loop (uvl or evb); it runs
 * fn(x, LT_INIT) first. */
static inline void lt_start(lt *x, lt_fn fn, void *ud) {
  x->fn = fn;
  x->ud = ud;
  x->handled = 0;
  x->last_us = 0;
  atomic_store(&x->posted, 0);
  atomic_store(&x->acked, 0);
  atomic_store(&x->max_late_us, 0);
  atomic_store(&x->worst_at_us, 0);
  atomic_store(&x->worst_raw_us, 0);
  atomic_store(&x->worst_cpu_us, 0);
  atomic_store(&x->worst_queued_us, 0);
  atomic_store(&x->from_us, rt_now_us());
  atomic_store(&x->ticks, 0);
  assert_int_equal(pthread_create(&x->thread, NULL, lt_main, x), 0);
  lt_running = x;
  lt_do(x, LT_INIT);
}

/* Forget the lateness seen so far (e.g. the clients' first connections). */
static inline void lt_measure_from_now(lt *x) {
  atomic_store(&x->max_late_us, 0);
  atomic_store(&x->from_us, rt_now_us());
}

/* Stop the loop thread (fn(x, LT_STOP) frees the clients) and join it.
 * Returns the worst lateness of the 10 ms timer, in µs. */
static inline int64_t lt_stop(lt *x) {
  lt_running = NULL;
  lt_do(x, LT_STOP);
  pthread_join(x->thread, NULL);
  if (kind == UV)
    uv_run(&uvl, UV_RUN_NOWAIT); /* the clients' closed handles */
  if (atomic_load(&x->failed))
    fail_msg("on the loop thread: %s", x->err);
  return atomic_load(&x->max_late_us);
}

/* In a group's teardown: stop a loop thread that a failed case left
 * running (its clients freed), so that the loop can be closed. */
static inline void lt_abandon(void) {
  lt *x = lt_running;
  lt_running = NULL;
  if (x == NULL)
    return;
  atomic_store(&x->posted, LT_STOP);
  pthread_join(x->thread, NULL);
  if (kind == UV)
    uv_run(&uvl, UV_RUN_NOWAIT);
}

/* The loop stayed responsive: a 10 ms timer was never more than 20 ms
 * late (scaled for instrumented builds; not checked under valgrind, which
 * runs every thread on one core at a fraction of the speed). Time the
 * loop thread spent runnable but waiting for a CPU (another process had
 * it: the tests share small machines) is not the loop's fault and is not
 * counted; time blocked in a system call or computing is. */
static inline void lt_check_responsive(lt *x, int64_t late_us,
                                       const char *what) {
  long ticks = atomic_load(&x->ticks);
  printf(
      "[   INFO   ] %s (%s): %ld ticks of a 10 ms timer, the latest "
      "%.1f ms late (%.1f ms in all, %.1f s in; the loop thread on a CPU "
      "%.1f ms and waiting for one %.1f ms of that interval)\n",
      what, kind == UV ? "libuv" : "libevent", ticks, (double)late_us / 1000.0,
      (double)atomic_load(&x->worst_raw_us) / 1000.0,
      (double)(atomic_load(&x->worst_at_us) - atomic_load(&x->from_us)) / 1e6,
      (double)atomic_load(&x->worst_cpu_us) / 1000.0,
      (double)atomic_load(&x->worst_queued_us) / 1000.0);
  fflush(stdout);
  if (rt_on_valgrind())
    return;
  if (late_us > rt_scaled_ms(20) * 1000)
    fail_msg("%s: the loop's 10 ms timer fired %.1f ms late (more than %lld "
             "ms): something blocked the loop's thread",
             what, (double)late_us / 1000.0, (long long)rt_scaled_ms(20));
}

#endif /* RLOCK_TEST_LOOP_TOPO_H */
