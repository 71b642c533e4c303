/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * notice.c - say once why a wait for a lock is not getting anywhere.
 *
 * While exec waits, the library rides out a server it cannot reach
 * (trying again within -w and --retry-for) and its wait returns nothing
 * until it ends. Without a word, a user who pointed rlock at the wrong
 * port (or rediss:// at a plain-text one) would face silence. The
 * client's log hook sees each failure as a WARN message; the first one is
 * printed, once, if the wait is still on NOTICE_GRACE_MS later (it is
 * trying again). A failure that ends the wait at once (a name that does
 * not resolve, a refused password) is told by the wait's own error line
 * instead, not twice. A small thread keeps that time.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include "cli.h"

#define NOTICE_GRACE_MS 300

/* The hook is called on any thread: everything under mu. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static int cv_ready;
static const char *waiting_for; /* the lock's name during a wait, else NULL */
static int quiet, seen;
static int64_t first_at; /* when the first failure came (monotonic ms) */
static char first[1024]; /* its message */
static pthread_t thread;
static int thread_on;

void cli_notice_log(rlock_log_level level, const char *message, void *ud) {
  (void)ud;
  if (level > RLOCK_LOG_WARN)
    return;
  pthread_mutex_lock(&mu);
  if (waiting_for != NULL && !quiet && !seen) {
    seen = 1;
    first_at = cli_now_ms();
    snprintf(first, sizeof first, "%s", message);
    pthread_cond_signal(&cv);
  }
  pthread_mutex_unlock(&mu);
}

/* Wait on cv until `until_ms` (monotonic) or a signal; called locked. */
static void pause_until(int64_t until_ms) {
  struct timespec ts = {.tv_sec = (time_t)(until_ms / 1000),
                        .tv_nsec = (long)(until_ms % 1000) * 1000000L};
  pthread_cond_timedwait(&cv, &mu, &ts);
}

static void *notice_main(void *unused) {
  (void)unused;
  pthread_mutex_lock(&mu);
  while (waiting_for != NULL) {
    if (!seen) {
      pthread_cond_wait(&cv, &mu);
    } else if (cli_now_ms() < first_at + NOTICE_GRACE_MS) {
      pause_until(first_at + NOTICE_GRACE_MS);
    } else {
      cli_fail(0, "waiting for '%s': %s; still trying", waiting_for, first);
      break;
    }
  }
  pthread_mutex_unlock(&mu);
  return NULL;
}

void cli_notice_begin(const char *name, int q) {
  pthread_mutex_lock(&mu);
  if (!cv_ready) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &ca);
    pthread_condattr_destroy(&ca);
    cv_ready = 1;
  }
  waiting_for = name;
  quiet = q;
  seen = 0;
  pthread_mutex_unlock(&mu);
  if (q)
    return;
  sigset_t all, old; /* signals are the main thread's */
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  /* Without the thread, the wait simply says nothing until it ends. */
  thread_on = pthread_create(&thread, NULL, notice_main, NULL) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void cli_notice_end(void) {
  pthread_mutex_lock(&mu);
  waiting_for = NULL;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
  if (thread_on)
    pthread_join(thread, NULL);
  thread_on = 0;
}
