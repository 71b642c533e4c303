/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bg.c - the background thread: one poll() loop driving pub/sub, the
 * Sentinel watch and the watchdog's renewal ticks, whose connections it
 * polls with the subscribers' (a tick never polls on its own).
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

void rlock__bg_wake(rlock_client *c) {
  /* In a fork()ed child there is no background thread, and the eventfd is
   * shared with the parent's: a write would wake the parent's thread. */
  if (!rlock__origin_ok(&c->origin))
    return;
  uint64_t one = 1;
  ssize_t n;
  do
    n = write(c->bg->wake_fd, &one, sizeof one);
  while (n < 0 && errno == EINTR);
}

static void drain_wake(int fd) {
  uint64_t v;
  ssize_t n;
  do
    n = read(fd, &v, sizeof v);
  while (n < 0 && errno == EINTR);
}

static int poll_timeout_ms(int64_t next_us) {
  if (next_us == INT64_MAX)
    return -1;
  int64_t ms = rlock__ms_left(next_us);
  return ms > 60000 ? 60000 : (int)ms;
}

/* Room for the wake-up fd and this many subscriber connections (one per
 * cluster node with waiters); more are polled on later passes. */
#define POLL_MAX 128

/* The sentinel watch, when the client uses Sentinel. */
static int64_t watch_service(rlock_client *c, int readable) {
  if (c->topo.target.kind != RLOCK__TOPO_SENTINEL)
    return INT64_MAX;
  return rlock__sentinel_watch_service(&c->topo, &c->swatch, readable);
}

static void *bg_main(void *arg) {
  rlock_client *c = arg;
  struct pollfd fds[2 + RLOCK__BG_RENEW_FDS + POLL_MAX];
  int nr = 0;          /* renewal fds polled last time, from fds + 2 */
  int n = 0;           /* subscriber fds polled last time, after those */
  int watch_ready = 0; /* the sentinel watch's fd was readable */
  while (!atomic_load(&c->bg->stop)) {
    int64_t next = rlock__pubsub_service(c, fds + 2 + nr, n);
    /* A switch first: a renewal due now must go to the new master. */
    int64_t at = watch_service(c, watch_ready);
    next = at < next ? at : next;
    at = rlock__bg_renew(c, fds + 2, nr);
    next = at < next ? at : next;
    fds[0] = (struct pollfd){.fd = c->bg->wake_fd, .events = POLLIN};
    /* A negative fd is ignored by poll(). */
    fds[1] = (struct pollfd){.fd = rlock__sentinel_watch_fd(&c->swatch),
                             .events = POLLIN};
    nr = rlock__bg_renew_pollfds(c, fds + 2, RLOCK__BG_RENEW_FDS);
    n = rlock__pubsub_pollfds(c, fds + 2 + nr, POLL_MAX, &next);
    int rc = poll(fds, (nfds_t)(2 + nr + n), poll_timeout_ms(next));
    if (rc <= 0)
      n = nr = 0; /* nothing to read; revents are not set */
    watch_ready = rc > 0 && fds[1].fd >= 0 && fds[1].revents != 0;
    if (rc > 0 && (fds[0].revents & POLLIN))
      drain_wake(c->bg->wake_fd);
  }
  rlock__bg_renew_stop(c);
  return NULL;
}

int rlock__bg_start(rlock_client *c) {
  c->bg->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (c->bg->wake_fd < 0)
    return rlock__err(RLOCK_EIO, "eventfd failed: %s", strerror(errno));
  atomic_init(&c->bg->stop, 0);
  /* The thread inherits a fully blocked signal mask: signals meant for the
   * application (SIGINT, SIGTERM, ...) must never land on it. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int err = pthread_create(&c->bg->thread, NULL, bg_main, c);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err != 0) {
    close(c->bg->wake_fd);
    return rlock__err(RLOCK_EIO, "cannot start background thread: %s",
                      strerror(err));
  }
  c->bg->started = 1;
  return RLOCK_OK;
}

void rlock__bg_stop(rlock_client *c) {
  if (!c->bg->started)
    return;
  atomic_store(&c->bg->stop, 1);
  rlock__bg_wake(c);
  pthread_join(c->bg->thread, NULL);
  close(c->bg->wake_fd);
  c->bg->started = 0;
}

/* ---- the blocking driver ------------------------------------------------ */

static int bg_free(rlock_client *c) {
  rlock__bg_stop(c);
  rlock__sentinel_watch_close(&c->swatch);
  rlock__pubsub_destroy(c->ps);
  free(c->ps);
  free(c->bg);
  rlock__client_teardown(c);
  return RLOCK_OK;
}

const rlock__driver rlock__bg_driver = {
    .free = bg_free,
    .renew_arm = rlock__bg_wake,
    .release_waits_renewal = 1,
};
