/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * event.c - rlock_loop on libevent: a persistent event per socket, a
 * timerfd of the adapter's own for the client's one timer, and an eventfd
 * of its own for wake-ups from other threads (event_active() is only
 * thread-safe on a base made with threading support; an eventfd needs
 * none).
 *
 * Why a timerfd and not an evtimer: a base made without
 * EVENT_BASE_FLAG_PRECISE_TIMER (event_base_new()'s default) keeps time
 * on Linux with CLOCK_MONOTONIC_COARSE, one kernel tick (4 ms at HZ=250):
 * an evtimer of 2 ms fires after 2 to 8 ms, and one added in a callback
 * counts from the turn's cached time, so it can fire early too. A
 * timerfd counts on CLOCK_MONOTONIC, the library's clock, from the
 * moment it is armed, whatever the base's flags: it fires no earlier
 * than asked, and late only by the loop's own delays.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "rlock/errors.h"
#include "rlock/event.h"

typedef struct watched {
  int fd;
  struct event *ev;
} watched;

typedef struct evad {
  struct event_base *base;
  rlock_client *client;
  struct event *timer; /* reads timer_fd */
  struct event *waker;
  int timer_fd;
  int wake_fd;
  /* A loop client has two connections per server it meets (a cluster's
   nodes, Sentinel's masters) and two to sentinels: as many as needed. */
  watched *fds;
  int nfds;
} evad;

static void on_io(evutil_socket_t fd, short what, void *arg) {
  evad *a = arg;
  int ev = ((what & EV_READ) ? RLOCK_LOOP_READ : 0) |
           ((what & EV_WRITE) ? RLOCK_LOOP_WRITE : 0);
  rlock_loop_io(a->client, (int)fd, ev);
}

static watched *find(evad *a, int fd) {
  for (int i = 0; i < a->nfds; i++)
    if (a->fds[i].ev != NULL && a->fds[i].fd == fd)
      return &a->fds[i];
  return NULL;
}

/* An unused entry, the array grown when full; NULL when out of memory. */
static watched *free_entry(evad *a) {
  for (int i = 0; i < a->nfds; i++)
    if (a->fds[i].ev == NULL)
      return &a->fds[i];
  int was = a->nfds, n = was ? was * 2 : 4;
  watched *v = realloc(a->fds, (size_t)n * sizeof *v);
  if (v == NULL)
    return NULL;
  for (int i = was; i < n; i++)
    v[i] = (watched){-1, NULL};
  a->fds = v;
  a->nfds = n;
  return &a->fds[was];
}

static void unwatch(watched *w) {
  event_free(w->ev); /* deletes it first */
  w->ev = NULL;
}

static int ad_watch(void *data, int fd, int events) {
  evad *a = data;
  watched *w = find(a, fd);
  if (w != NULL)
    unwatch(w);
  if (events == 0)
    return 0;
  if ((w = free_entry(a)) == NULL)
    return -1;
  short what = EV_PERSIST | ((events & RLOCK_LOOP_READ) ? EV_READ : 0) |
               ((events & RLOCK_LOOP_WRITE) ? EV_WRITE : 0);
  w->ev = event_new(a->base, fd, what, on_io, a);
  if (w->ev == NULL || event_add(w->ev, NULL) != 0) {
    if (w->ev != NULL)
      unwatch(w);
    return -1;
  }
  w->fd = fd;
  return 0;
}

static void on_timer(evutil_socket_t fd, short what, void *arg) {
  (void)what;
  evad *a = arg;
  uint64_t expirations;
  if (read((int)fd, &expirations, sizeof expirations) < 0)
    return; /* EAGAIN: disarmed or re-armed since it was seen readable */
  rlock_loop_timer(a->client);
}

/* Arm the timerfd `after_ms` from now (relative, CLOCK_MONOTONIC), or
 * disarm it when negative. A zero it_value disarms a timerfd, so "now" is
 * 1 ns. Re-arming discards an expiration not yet read. */
static void ad_timer(void *data, int64_t after_ms) {
  evad *a = data;
  struct itimerspec its = {{0, 0}, {0, 0}};
  if (after_ms == 0)
    its.it_value.tv_nsec = 1;
  else if (after_ms > 0)
    its.it_value = (struct timespec){(time_t)(after_ms / 1000),
                                     (long)(after_ms % 1000) * 1000000L};
  timerfd_settime(a->timer_fd, 0, &its, NULL);
}

static void on_wake(evutil_socket_t fd, short what, void *arg) {
  (void)what;
  evad *a = arg;
  uint64_t n;
  while (read((int)fd, &n, sizeof n) > 0)
    ;
  rlock_loop_wake(a->client);
}

static void ad_wake(void *data) {
  evad *a = data;
  uint64_t one = 1;
  ssize_t n = write(a->wake_fd, &one, sizeof one);
  (void)n; /* EAGAIN: the counter is full, a wake-up is due anyway */
}

static void ad_free(evad *a) {
  for (int i = 0; i < a->nfds; i++)
    if (a->fds[i].ev != NULL)
      unwatch(&a->fds[i]);
  free(a->fds);
  if (a->timer != NULL)
    event_free(a->timer);
  if (a->waker != NULL)
    event_free(a->waker);
  if (a->wake_fd >= 0)
    close(a->wake_fd);
  if (a->timer_fd >= 0)
    close(a->timer_fd);
  free(a);
}

static void ad_detach(void *data) { ad_free(data); }

/* The persistent read events of the timerfd and the eventfd: 0 or -1
 * (either fd missing, or libevent refused an event). */
static int add_fd_events(evad *a) {
  if (a->timer_fd < 0 || a->wake_fd < 0)
    return -1;
  a->timer = event_new(a->base, a->timer_fd, EV_READ | EV_PERSIST, on_timer, a);
  a->waker = event_new(a->base, a->wake_fd, EV_READ | EV_PERSIST, on_wake, a);
  if (a->timer == NULL || a->waker == NULL)
    return -1;
  return event_add(a->timer, NULL) == 0 && event_add(a->waker, NULL) == 0 ? 0
                                                                          : -1;
}

int rlock_client_new_event(rlock_client **out, const rlock_config *cfg,
                           struct event_base *base) {
  if (out == NULL || base == NULL)
    return rlock_loop_error(RLOCK_EINVAL, "rlock_client_new_event: out or "
                                          "base is NULL");
  *out = NULL;
  evad *a = calloc(1, sizeof *a);
  if (a == NULL)
    return rlock_loop_error(RLOCK_ENOMEM, "out of memory");
  a->base = base;
  a->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  a->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (add_fd_events(a) != 0) {
    ad_free(a);
    return rlock_loop_error(RLOCK_EIO, "libevent: no eventfd or timerfd, or "
                                       "an event could not be added");
  }
  rlock_loop table = {.version = RLOCK_LOOP_VERSION,
                      .data = a,
                      .watch = ad_watch,
                      .timer = ad_timer,
                      .wake = ad_wake,
                      .detach = ad_detach};
  int rc = rlock_client_new_loop(&a->client, cfg, &table);
  if (rc != RLOCK_OK) {
    ad_free(a);
    return rc;
  }
  *out = a->client;
  return RLOCK_OK;
}

int rlock_event_client_new(rlock_client **out, const rlock_config *cfg,
                           struct event_base *base) {
  return rlock_client_new_event(out, cfg, base);
}
