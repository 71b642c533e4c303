/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * release.c - a release bounded in time.
 *
 * Against a server that accepts connections but never answers, a release
 * would take the library's whole retry schedule, and rlock would hang on
 * after COMMAND is done. The release runs on a thread of its own instead,
 * and rlock waits for it at most a given time: past that, rlock goes on
 * without it (the lock then expires by itself, within its lease) and the
 * thread is left to finish or be ended by rlock's exit. Its objects (the
 * lock, the client) must then not be freed: rlock is about to exit. A
 * release done in time is joined: the thread has then ended, and the
 * libraries' per-thread state (OpenSSL's error queue) was freed with it,
 * not left to a process exiting under it.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include "cli.h"

/* One release at a time; static, so that an abandoned thread's memory
 * stays valid until the process exits. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done, rc;
  int abandoned;
  cli_release_fn fn;
  void *arg;
  uint64_t owner;
  pthread_t thread;
  char message[512]; /* the thread's */
  char shown[512];   /* the caller's copy, taken under mu */
  int cv_ready;
} rel = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void *release_main(void *unused) {
  (void)unused;
  int rc = rel.fn(rel.arg, rel.owner);
  pthread_mutex_lock(&rel.mu);
  snprintf(rel.message, sizeof rel.message, "%s", rlock_error_last()->message);
  rel.rc = rc;
  rel.done = 1;
  pthread_cond_signal(&rel.cv);
  pthread_mutex_unlock(&rel.mu);
  return NULL;
}

/* The absolute CLOCK_MONOTONIC time `ms` from now. */
static struct timespec after_ms(int64_t ms) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += (time_t)(ms / 1000);
  ts.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

/* Start the thread with every signal blocked: they are the main
 * thread's. Returns 0 or an errno value. */
static int start(void) {
  if (!rel.cv_ready) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&rel.cv, &ca);
    pthread_condattr_destroy(&ca);
    rel.cv_ready = 1;
  }
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int err = pthread_create(&rel.thread, NULL, release_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return err;
}

int cli_release_bounded(cli_release_fn fn, void *arg, int64_t bound_ms,
                        const char **message) {
  rel.fn = fn;
  rel.arg = arg;
  rel.owner = rlock_owner_thread(); /* the holds are this thread's */
  rel.done = 0;
  rel.message[0] = '\0';
  *message = rel.shown;
  if (start() != 0) { /* no thread: release here, unbounded */
    int rc = fn(arg, rel.owner);
    snprintf(rel.shown, sizeof rel.shown, "%s", rlock_error_last()->message);
    return rc;
  }
  struct timespec until = after_ms(bound_ms);
  pthread_mutex_lock(&rel.mu);
  while (!rel.done &&
         pthread_cond_timedwait(&rel.cv, &rel.mu, &until) != ETIMEDOUT)
    ;
  int rc = rel.done ? rel.rc : CLI_RELEASE_TIMEOUT;
  if (rel.done)
    snprintf(rel.shown, sizeof rel.shown, "%s", rel.message);
  else
    snprintf(rel.shown, sizeof rel.shown, "no answer within %lld ms",
             (long long)bound_ms);
  rel.abandoned = !rel.done;
  pthread_mutex_unlock(&rel.mu);
  if (rel.abandoned)
    pthread_detach(rel.thread);
  else
    pthread_join(rel.thread, NULL); /* past its signal: ends at once */
  return rc;
}

int cli_release_abandoned(void) {
  pthread_mutex_lock(&rel.mu);
  int a = rel.abandoned;
  pthread_mutex_unlock(&rel.mu);
  return a;
}
