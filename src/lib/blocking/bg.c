/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bg.c - the background thread: one poll() loop driving the loop engine
 * (on loop/lpoll.c's adapter: renewals, timers, the subscriber, the
 * Sentinel watch) for the waiting threads' channel fronts (pubsub.c); and
 * the blocking driver's table.
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
#include "setup.h"
#include "watchdog.h"
#include "pubsub.h"

void rlock__bg_wake(rlock_client *c) { rlock__lpoll_wake(&c->bg->lp); }

static int poll_timeout_ms(int64_t next_us) {
  if (next_us == INT64_MAX)
    return -1;
  int64_t ms = rlock__ms_left(next_us);
  return ms > 60000 ? 60000 : (int)ms;
}

static void *bg_main(void *arg) {
  rlock_client *c = arg;
  rlock__bg *bg = c->bg;
  rlock__loop_begin(c);
  while (!atomic_load(&bg->stop)) {
    int64_t next = INT64_MAX;
    int n;
    struct pollfd *fds = rlock__lpoll_fds(&bg->lp, &n, &next);
    /* A subscriber socket a direct waiter watches (or that is quiet) is
     * left out: an unlock message then wakes that thread alone. */
    rlock__pubsub_mute(c, fds, n, &next);
    int rc = poll(fds, (nfds_t)n, poll_timeout_ms(next));
    int subs = rc > 0 && rlock__pubsub_any_ready(c, fds, n);
    rlock__lpoll_dispatch(&bg->lp, rc > 0);
    if (subs) /* a direct waiter parked on what was read looks again */
      rlock__pubsub_read_done(c->ps);
  }
  rlock__loop_shut(c);
  return NULL;
}

int rlock__bg_start(rlock_client *c) {
  rlock_loop table;
  int rc = rlock__lpoll_init(&c->bg->lp, c, 0, &table);
  if (rc != RLOCK_OK)
    return rc;
  if ((rc = rlock__loop_attach(c, &table)) != RLOCK_OK) {
    rlock__lpoll_destroy(&c->bg->lp);
    return rc;
  }
  /* The waiting threads' channel fronts ride on the loop's subscriber. */
  c->bg->lp.unwatch = rlock__pubsub_closing;
  c->bg->lp.unwatch_arg = c;
  c->loop->on_wake = rlock__pubsub_turn;
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
