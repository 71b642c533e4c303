/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bg.c - the background thread: one poll() loop driving the loop engine
 * (on loop/lpoll.c's adapter: renewals, timers), pub/sub and the Sentinel
 * watch; and the blocking driver's table.
 */
#include "bg.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <stdlib.h>

#include "client_int.h"
#include "common.h"
#include "watchdog.h"
#include "pubsub.h"

void rlock__bg_wake(rlock_client *c) { rlock__lpoll_wake(&c->bg->lp); }

static int poll_timeout_ms(int64_t next_us) {
  if (next_us == INT64_MAX)
    return -1;
  int64_t ms = rlock__ms_left(next_us);
  return ms > 60000 ? 60000 : (int)ms;
}

/* Room after the loop engine's pollfd entries for this many subscriber
 * connections (one per cluster node with waiters); more are polled on
 * later passes. */
#define POLL_MAX 128

static void *bg_main(void *arg) {
  rlock_client *c = arg;
  rlock__bg *bg = c->bg;
  struct pollfd *sub = NULL; /* the subscribers' entries, after the loop's */
  int n = 0;                 /* how many were polled last time */
  int polled = 0;            /* the last poll() returned events */
  rlock__loop_begin(c);
  while (!atomic_load(&bg->stop)) {
    /* What the last poll found is read before the engine runs: its events
     * may move the array. */
    int64_t next = rlock__pubsub_service(c, sub, n);
    rlock__lpoll_dispatch(&bg->lp, polled);
    int nl;
    struct pollfd *fds = rlock__lpoll_fds(&bg->lp, &nl, &next);
    sub = fds + nl;
    n = rlock__pubsub_pollfds(c, sub, POLL_MAX, &next);
    int rc = poll(fds, (nfds_t)(nl + n), poll_timeout_ms(next));
    polled = rc > 0;
    if (rc <= 0)
      n = 0; /* nothing to read; revents are not set */
  }
  rlock__loop_shut(c);
  return NULL;
}

int rlock__bg_start(rlock_client *c) {
  rlock_loop table;
  int rc = rlock__lpoll_init(&c->bg->lp, c, POLL_MAX, &table);
  if (rc != RLOCK_OK)
    return rc;
  if ((rc = rlock__loop_attach(c, &table)) != RLOCK_OK) {
    rlock__lpoll_destroy(&c->bg->lp);
    return rc;
  }
  atomic_init(&c->bg->stop, 0);
  /* The thread inherits a fully blocked signal mask: signals meant for the
   * application (SIGINT, SIGTERM, ...) must never land on it. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int err = pthread_create(&c->bg->thread, NULL, bg_main, c);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err != 0) {
    rlock__loop_detach(c);
    rlock__lpoll_destroy(&c->bg->lp);
    return rlock__err(RLOCK_EIO, "cannot start background thread: %s",
                      strerror(err));
  }
  /* Before the client is handed out: its callers hand the loop work
   * through the inbox from then on. */
  rlock__loop_bind(c, c->bg->thread);
  c->bg->started = 1;
  return RLOCK_OK;
}

/* Stop and join the thread (it shuts its loop down as it ends), then free
 * the loop's state and its adapter. */
void rlock__bg_stop(rlock_client *c) {
  if (c->bg->started) {
    atomic_store(&c->bg->stop, 1);
    rlock__bg_wake(c);
    pthread_join(c->bg->thread, NULL);
    c->bg->started = 0;
  }
  rlock__loop_detach(c);
  rlock__lpoll_destroy(&c->bg->lp);
}

/* ---- the blocking driver ------------------------------------------------ */

static int bg_free(rlock_client *c) {
  rlock__bg_stop(c);
  rlock__pubsub_destroy(c->ps);
  free(c->ps);
  free(c->bg);
  rlock__client_teardown(c);
  return RLOCK_OK;
}

const rlock__driver rlock__bg_driver = {
    .free = bg_free,
    .renew_arm = rlock__loop_ask_renew, /* the loop's lrenew.c renews */
    .release_waits_renewal = 1,
};
