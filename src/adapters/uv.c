/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uv.c - rlock_loop on libuv: uv_poll_t per socket, one uv_timer_t, a
 * uv_async_t for wake-ups from other threads. The adapter frees itself
 * once libuv has closed every handle (close callbacks), after detach.
 */
#include <stdlib.h>

#include "rlock/errors.h"
#include "rlock/uv.h"

typedef struct watched {
  int fd;
  uv_poll_t *poll;
} watched;

typedef struct uvad {
  uv_loop_t *loop;
  rlock_client *client;
  uv_timer_t timer;
  uv_async_t async;
  /* A loop client has two connections per server it meets (a cluster's
   nodes, Sentinel's masters) and two to sentinels: as many as needed. */
  watched *fds;
  int nfds;
  int open_handles; /* closed ones release the adapter when 0 */
} uvad;

static void handle_closed(uv_handle_t *h) {
  uvad *a = h->data;
  if (h->type == UV_POLL)
    free(h);
  if (--a->open_handles == 0) {
    free(a->fds);
    free(a);
  }
}

static void on_poll(uv_poll_t *p, int status, int events) {
  uvad *a = p->data;
  int ev = 0;
  /* An error (the peer reset, ...) is reported as readable: the read
   * that follows finds out and fails the connection. */
  if (status < 0 || (events & (UV_READABLE | UV_DISCONNECT)))
    ev |= RLOCK_LOOP_READ;
  if (events & UV_WRITABLE)
    ev |= RLOCK_LOOP_WRITE;
  for (int i = 0; i < a->nfds; i++)
    if (a->fds[i].poll == p) {
      rlock_loop_io(a->client, a->fds[i].fd, ev);
      return;
    }
}

static watched *find(uvad *a, int fd) {
  for (int i = 0; i < a->nfds; i++)
    if (a->fds[i].poll != NULL && a->fds[i].fd == fd)
      return &a->fds[i];
  return NULL;
}

/* An unused entry, the array grown when full; NULL when out of memory. */
static watched *free_entry(uvad *a) {
  for (int i = 0; i < a->nfds; i++)
    if (a->fds[i].poll == NULL)
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
  uv_poll_stop(w->poll);
  uv_close((uv_handle_t *)w->poll, handle_closed);
  w->poll = NULL;
}

static int ad_watch(void *data, int fd, int events) {
  uvad *a = data;
  watched *w = find(a, fd);
  if (events == 0) {
    if (w != NULL)
      unwatch(w);
    return 0;
  }
  if (w == NULL) {
    w = free_entry(a);
    uv_poll_t *p = w ? malloc(sizeof *p) : NULL;
    if (p == NULL || uv_poll_init_socket(a->loop, p, fd) != 0) {
      free(p);
      return -1;
    }
    p->data = a;
    a->open_handles++;
    w->fd = fd;
    w->poll = p;
  }
  int flags = ((events & RLOCK_LOOP_READ) ? UV_READABLE : 0) |
              ((events & RLOCK_LOOP_WRITE) ? UV_WRITABLE : 0);
  return uv_poll_start(w->poll, flags, on_poll) == 0 ? 0 : -1;
}

static void on_timer(uv_timer_t *t) {
  uvad *a = t->data;
  rlock_loop_timer(a->client);
}

static void ad_timer(void *data, int64_t after_ms) {
  uvad *a = data;
  if (after_ms < 0)
    uv_timer_stop(&a->timer);
  else
    uv_timer_start(&a->timer, on_timer, (uint64_t)after_ms, 0);
}

static void on_async(uv_async_t *h) {
  uvad *a = h->data;
  rlock_loop_wake(a->client);
}

static void ad_wake(void *data) {
  uvad *a = data;
  uv_async_send(&a->async);
}

static void ad_detach(void *data) {
  uvad *a = data;
  for (int i = 0; i < a->nfds; i++)
    if (a->fds[i].poll != NULL)
      unwatch(&a->fds[i]);
  uv_timer_stop(&a->timer);
  uv_close((uv_handle_t *)&a->timer, handle_closed);
  uv_close((uv_handle_t *)&a->async, handle_closed);
}

int rlock_client_new_uv(rlock_client **out, const rlock_config *cfg,
                        uv_loop_t *loop) {
  if (out == NULL || loop == NULL)
    return rlock_loop_error(RLOCK_EINVAL, "rlock_client_new_uv: out or "
                                          "loop is NULL");
  *out = NULL;
  uvad *a = calloc(1, sizeof *a);
  if (a == NULL)
    return rlock_loop_error(RLOCK_ENOMEM, "out of memory");
  a->loop = loop;
  if (uv_timer_init(loop, &a->timer) != 0) {
    free(a);
    return rlock_loop_error(RLOCK_EINVAL, "libuv refused a timer handle");
  }
  a->timer.data = a;
  a->open_handles = 1;
  if (uv_async_init(loop, &a->async, on_async) != 0) {
    uv_close((uv_handle_t *)&a->timer, handle_closed);
    return rlock_loop_error(RLOCK_EINVAL, "libuv refused an async handle");
  }
  a->async.data = a;
  a->open_handles++;
  uv_unref((uv_handle_t *)&a->async); /* wake-ups keep no loop alive */
  rlock_loop table = {.version = RLOCK_LOOP_VERSION,
                      .data = a,
                      .watch = ad_watch,
                      .timer = ad_timer,
                      .wake = ad_wake,
                      .detach = ad_detach};
  int rc = rlock_client_new_loop(&a->client, cfg, &table);
  if (rc != RLOCK_OK) {
    ad_detach(a);
    return rc;
  }
  *out = a->client;
  return RLOCK_OK;
}

int rlock_uv_client_new(rlock_client **out, const rlock_config *cfg,
                        uv_loop_t *loop) {
  return rlock_client_new_uv(out, cfg, loop);
}
