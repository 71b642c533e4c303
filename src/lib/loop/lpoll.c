/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lpoll.c - the loop engine on poll(): an rlock_loop adapter table the
 * library implements itself, so a blocking client's background thread
 * (blocking/bg.c) runs the same engine as a loop client.
 *
 * The table keeps what the engine asks for (the descriptors it watches,
 * its one timer) and an eventfd for wake(). Its runner builds a pollfd
 * array from it (rlock__lpoll_fds), with room after the engine's entries
 * for its own, polls, and hands what came back to the engine
 * (rlock__lpoll_dispatch). Everything but wake() runs on the runner's
 * thread.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "client_int.h"
#include "common.h"
#include "loop.h"

/* Index of fd's entry in the watch table, or -1. */
static int find(const rlock__lpoll *p, int fd) {
  for (size_t i = 0; i < p->nw; i++)
    if (p->w[i].fd == fd)
      return (int)i;
  return -1;
}

/* Room for one more watched descriptor, in the table and in the pollfd
 * array (the wake-up entry, the table, the runner's `extra`). */
static int grow(rlock__lpoll *p) {
  if (p->nw < p->capw)
    return 0;
  size_t cap = p->capw ? p->capw * 2 : 8;
  struct rlock__lwatch *w = rlock__realloc(p->w, cap * sizeof *w);
  if (w == NULL)
    return -1;
  p->w = w;
  struct pollfd *pfd =
      rlock__realloc(p->pfd, (1 + cap + p->extra) * sizeof *pfd);
  if (pfd == NULL)
    return -1; /* p->w is bigger: harmless, capw stays */
  p->pfd = pfd;
  p->capw = cap;
  return 0;
}

static int lp_watch(void *data, int fd, int events) {
  rlock__lpoll *p = data;
  int i = find(p, fd);
  if (events == 0) {
    if (i >= 0)
      p->w[i] = p->w[--p->nw];
    if (i >= 0 && p->unwatch != NULL)
      p->unwatch(p->unwatch_arg, fd);
    return 0;
  }
  if (i < 0) {
    if (grow(p) != 0)
      return -1;
    i = (int)p->nw++;
    p->w[i].fd = fd;
    p->w[i].serial = ++p->serial;
    p->w[i].polled = 0;
  }
  p->w[i].events = events;
  return 0;
}

static void lp_timer(void *data, int64_t after_ms) {
  rlock__lpoll *p = data;
  p->timer_us = after_ms < 0 ? INT64_MAX : rlock__deadline_after_ms(after_ms);
}

static void lp_wake(void *data) { rlock__lpoll_wake(data); }

int rlock__lpoll_init(rlock__lpoll *p, rlock_client *c, int extra,
                      rlock_loop *table) {
  memset(p, 0, sizeof *p);
  p->c = c;
  p->extra = extra;
  p->timer_us = INT64_MAX;
  p->pfd = rlock__calloc((size_t)(1 + extra), sizeof *p->pfd);
  if (p->pfd == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (p->wake_fd < 0) {
    free(p->pfd);
    p->pfd = NULL;
    return rlock__err(RLOCK_EIO, "eventfd failed: %s", strerror(errno));
  }
  *table = (rlock_loop){.version = RLOCK_LOOP_VERSION,
                        .data = p,
                        .watch = lp_watch,
                        .timer = lp_timer,
                        .wake = lp_wake};
  return RLOCK_OK;
}

void rlock__lpoll_destroy(rlock__lpoll *p) {
  if (p->wake_fd >= 0)
    close(p->wake_fd);
  p->wake_fd = -1;
  free(p->w);
  free(p->pfd);
  p->w = NULL;
  p->pfd = NULL;
}

void rlock__lpoll_wake(rlock__lpoll *p) {
  /* A fork()ed child has no runner, and the eventfd is shared with the
   * parent's: a write would wake the parent's thread. */
  if (!rlock__origin_ok(&p->c->origin))
    return;
  uint64_t one = 1;
  ssize_t n;
  do
    n = write(p->wake_fd, &one, sizeof one);
  while (n < 0 && errno == EINTR);
}

struct pollfd *rlock__lpoll_fds(rlock__lpoll *p, int *n, int64_t *next) {
  p->pfd[0] = (struct pollfd){.fd = p->wake_fd, .events = POLLIN};
  for (size_t i = 0; i < p->nw; i++) {
    short ev = 0;
    if (p->w[i].events & RLOCK_LOOP_READ)
      ev |= POLLIN;
    if (p->w[i].events & RLOCK_LOOP_WRITE)
      ev |= POLLOUT;
    p->pfd[1 + i] = (struct pollfd){.fd = p->w[i].fd, .events = ev};
    p->w[i].polled = p->w[i].serial;
  }
  p->npfd = 1 + (int)p->nw;
  if (p->timer_us < *next)
    *next = p->timer_us;
  *n = p->npfd;
  return p->pfd;
}

/* The engine's events of a pollfd entry: an error or a hang-up is both
 * (the connection's read or write then finds out what happened). */
static int events_of(short revents) {
  int ev = 0;
  if (revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL))
    ev |= RLOCK_LOOP_READ;
  if (revents & (POLLOUT | POLLERR | POLLHUP))
    ev |= RLOCK_LOOP_WRITE;
  return ev;
}

/* Hand entry k of the last poll to the engine, unless its descriptor was
 * unwatched meanwhile (or closed, and the number reused). */
static void dispatch_one(rlock__lpoll *p, int k) {
  int fd = p->pfd[k].fd;
  int ev = events_of(p->pfd[k].revents);
  int i = find(p, fd);
  if (ev == 0 || i < 0 || p->w[i].serial != p->w[i].polled)
    return;
  ev &= p->w[i].events;
  if (ev != 0)
    rlock__loop_io(p->c, fd, ev);
}

void rlock__lpoll_dispatch(rlock__lpoll *p, int polled) {
  if (polled) {
    if (p->pfd[0].revents & POLLIN) {
      uint64_t v;
      ssize_t r;
      do
        r = read(p->wake_fd, &v, sizeof v);
      while (r < 0 && errno == EINTR);
      rlock__loop_wake(p->c);
    }
    /* Entries are read from p->pfd each time: the engine may watch more
     * descriptors meanwhile, which may move the array (not its entries). */
    int n = p->npfd;
    for (int k = 1; k < n; k++)
      dispatch_one(p, k);
  }
  p->npfd = 0;
  if (p->timer_us != INT64_MAX && rlock__now_us() >= p->timer_us) {
    p->timer_us = INT64_MAX;
    rlock__loop_timer(p->c);
  }
}
