/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * notice.c - say once why a wait for a lock is not getting anywhere.
 *
 * While exec waits, the library rides out a server it cannot reach
 * (trying again within -w and --retry-for) and its wait returns nothing
 * until it ends. Without a word, a user who pointed rlock at the wrong
 * port (or rediss:// at a plain-text one) would face silence. The
 * client's log hook sees each failure as a WARN message: the first one
 * met during a wait is printed, once; the rest of the wait stays quiet.
 */
#include <pthread.h>
#include <stdio.h>

#include "cli.h"

/* The hook is called on any thread: everything under mu. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const char *waiting_for; /* the lock's name during a wait, else NULL */
static int quiet, said;

void cli_notice_log(rlock_log_level level, const char *message, void *ud) {
  (void)ud;
  if (level > RLOCK_LOG_WARN)
    return;
  pthread_mutex_lock(&mu);
  if (waiting_for != NULL && !quiet && !said) {
    said = 1;
    cli_fail(0, "waiting for '%s': %s; still trying", waiting_for, message);
  }
  pthread_mutex_unlock(&mu);
}

void cli_notice_begin(const char *name, int q) {
  pthread_mutex_lock(&mu);
  waiting_for = name;
  quiet = q;
  said = 0;
  pthread_mutex_unlock(&mu);
}

void cli_notice_end(void) {
  pthread_mutex_lock(&mu);
  waiting_for = NULL;
  pthread_mutex_unlock(&mu);
}
