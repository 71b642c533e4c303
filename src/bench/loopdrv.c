/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loopdrv.c - the loop workload's libuv and libevent loops (loopdrv.h).
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "loopdrv.h"
#include "rlock/event.h"
#include "rlock/uv.h"

struct bench_loopdrv {
  int is_event;
  uv_loop_t uv;
  struct event_base *base;
  rlock_client *client;
};

struct bench_looptimer {
  bench_loopdrv *d;
  void (*fn)(void *);
  void *arg;
  uv_timer_t uv;
  struct event *ev;
};

static int make_loop(bench_loopdrv *d) {
  if (!d->is_event)
    return uv_loop_init(&d->uv) == 0 ? 0 : bench_fail("uv_loop_init failed");
  d->base = event_base_new(); /* event_base_new()'s defaults, as most
                                 programs make theirs */
  return d->base != NULL ? 0 : bench_fail("event_base_new failed");
}

bench_loopdrv *bench_loopdrv_new(const char *driver, const char *url) {
  bench_loopdrv *d = calloc(1, sizeof *d);
  if (d == NULL)
    return bench_fail("out of memory"), NULL;
  d->is_event = strcmp(driver, "event") == 0;
  if (make_loop(d) != 0) {
    free(d);
    return NULL;
  }
  rlock_config *cfg;
  int rc = rlock_config_new(&cfg);
  if (rc == RLOCK_OK && (rc = rlock_config_set_url(cfg, url)) == RLOCK_OK)
    rc = d->is_event ? rlock_client_new_event(&d->client, cfg, d->base)
                     : rlock_client_new_uv(&d->client, cfg, &d->uv);
  rlock_config_free(cfg);
  if (rc != RLOCK_OK) {
    bench_fail_rc(
        d->is_event ? "rlock_client_new_event" : "rlock_client_new_uv", rc);
    d->client = NULL;
    bench_loopdrv_free(d);
    return NULL;
  }
  return d;
}

rlock_client *bench_loopdrv_client(bench_loopdrv *d) { return d->client; }

void bench_loopdrv_run_once(bench_loopdrv *d) {
  if (d->is_event)
    event_base_loop(d->base, EVLOOP_ONCE);
  else
    uv_run(&d->uv, UV_RUN_ONCE);
}

static void on_uv_timer(uv_timer_t *h) {
  bench_looptimer *t = h->data;
  t->fn(t->arg);
}

static void on_ev_timer(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  bench_looptimer *t = arg;
  t->fn(t->arg);
}

bench_looptimer *bench_looptimer_new(bench_loopdrv *d, void (*fn)(void *),
                                     void *arg) {
  bench_looptimer *t = calloc(1, sizeof *t);
  if (t == NULL)
    return bench_fail("out of memory"), NULL;
  *t = (bench_looptimer){.d = d, .fn = fn, .arg = arg};
  if (d->is_event) {
    if ((t->ev = evtimer_new(d->base, on_ev_timer, t)) == NULL) {
      free(t);
      return bench_fail("evtimer_new failed"), NULL;
    }
  } else {
    uv_timer_init(&d->uv, &t->uv);
    t->uv.data = t;
  }
  return t;
}

void bench_looptimer_start(bench_looptimer *t, double ms) {
  if (t->d->is_event) {
    long us = (long)(ms * 1000);
    struct timeval tv = {us / 1000000, us % 1000000};
    evtimer_add(t->ev, &tv);
  } else {
    uv_update_time(&t->d->uv); /* from now, not from the turn's start */
    uv_timer_start(&t->uv, on_uv_timer, (uint64_t)(ms + 0.5), 0);
  }
}

static void uv_timer_closed(uv_handle_t *h) { free(h->data); }

void bench_looptimer_free(bench_looptimer *t) {
  if (t == NULL)
    return;
  if (t->d->is_event) {
    event_free(t->ev);
    free(t);
    return;
  }
  uv_close((uv_handle_t *)&t->uv, uv_timer_closed);
  uv_run(&t->d->uv, UV_RUN_NOWAIT); /* the close completes: t is freed */
}

void bench_loopdrv_free(bench_loopdrv *d) {
  if (d->client != NULL)
    rlock_client_free(d->client);
  if (d->is_event) {
    if (d->base != NULL)
      event_base_free(d->base);
  } else {
    uv_run(&d->uv, UV_RUN_NOWAIT);
    uv_loop_close(&d->uv);
  }
  free(d);
}
