/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lwatch.c - rlock/watch.h: a channel's messages told to a callback, for
 * both drivers. A watch is a watcher of the loop's subscriber (lsub.c)
 * on the client's loop thread (a blocking client's background thread, or
 * the thread that runs a loop client's loop); it joins and leaves there,
 * through the loop's inbox when asked from another thread (an operation
 * of type RLOCK__LOP_WATCH, whose completion tells a waiting free).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "common.h"
#include "election_int.h"
#include "lock_int.h"
#include "loop.h"
#include "rlock/watch.h"
#include "sync_int.h"

struct rlock_watch {
  rlock_client *c;
  char *channel;
  rlock_watch_fn fn;
  void *arg;
  /* loop thread */
  rlock__lwatcher lw;
  int up_once;     /* RLOCK_WATCH_SUBSCRIBED was told */
  int lost;        /* RLOCK_WATCH_LOST was told, not resumed since */
  int over;        /* failed, or leaving: nothing more is told */
  int started;     /* its join has run */
  int doomed;      /* freed on the loop's thread before its join ran: the
                      join frees it */
  rlock_op *leave; /* made with the watch, so a free cannot fail */
  /* a free from another thread waits for the loop to have left */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int left;
};

static rlock_watch *of_watcher(rlock__lwatcher *lw) {
  return (rlock_watch *)((char *)lw - offsetof(rlock_watch, lw));
}

/* What the channel tells the watch, as rlock/watch.h's events. Nothing of
 * the watch is touched after its callback: it may free the watch. */
static void on_event(rlock__lwatcher *lw, rlock__watch_event what,
                     const char *payload, size_t len) {
  rlock_watch *w = of_watcher(lw);
  if (w->over)
    return;
  rlock_watch_event ev;
  switch (what) {
  case RLOCK__WATCH_UP:
    ev = w->up_once ? RLOCK_WATCH_RESUMED : RLOCK_WATCH_SUBSCRIBED;
    w->up_once = 1;
    w->lost = 0;
    break;
  case RLOCK__WATCH_MESSAGE:
    ev = RLOCK_WATCH_MESSAGE;
    break;
  case RLOCK__WATCH_DOWN:
    if (w->lost)
      return; /* told once until it is back */
    w->lost = 1;
    ev = RLOCK_WATCH_LOST;
    break;
  default: /* RLOCK__WATCH_FAILED: the last error says why */
    w->over = 1;
    rlock__lsub_unwatch(w->c, lw);
    ev = RLOCK_WATCH_FAILED;
    break;
  }
  w->fn(w->arg, ev, ev == RLOCK_WATCH_MESSAGE ? payload : NULL,
        ev == RLOCK_WATCH_MESSAGE ? len : 0);
}

/* Loop thread: join the channel; a failure is told as RLOCK_WATCH_FAILED. */
static void watch_free(rlock_watch *w);

static void join_start(rlock_op *op) {
  rlock_watch *w = op->arg;
  w->started = 1;
  if (w->doomed) {
    free(w->leave);
    watch_free(w);
    op->arg = NULL;
  } else if (!w->over &&
             rlock__lsub_watch(op->c, &w->lw, w->channel) != RLOCK_OK)
    on_event(&w->lw, RLOCK__WATCH_FAILED, NULL, 0);
  rlock__lop_finish(op, RLOCK_OK, 0);
}

static void join_done(void *arg, int rc, int64_t value) {
  (void)arg, (void)rc, (void)value;
}

/* Loop thread: leave the channel; the completion tells the free. */
static void leave_start(rlock_op *op) {
  rlock_watch *w = op->arg;
  w->over = 1;
  rlock__lsub_unwatch(op->c, &w->lw);
  rlock__lop_finish(op, RLOCK_OK, 0);
}

/* The leave ran (or the loop closed without running it: RLOCK_ECLOSED,
 * and the channel is gone with the loop). */
static void leave_done(void *arg, int rc, int64_t value) {
  (void)rc, (void)value;
  rlock_watch *w = arg;
  pthread_mutex_lock(&w->mu);
  w->left = 1;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

static rlock_op *op_new(rlock_watch *w, rlock_async_fn done) {
  rlock_op *op = rlock__lop_new_on(w->c, RLOCK__LOP_WATCH);
  if (op != NULL) {
    op->cb = done;
    op->arg = w;
  }
  return op;
}

static void watch_free(rlock_watch *w) {
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  free(w->channel);
  free(w);
}

/* Checks every constructor shares. */
static int check(rlock_watch **out, const void *obj, const char *what,
                 rlock_watch_fn fn, const char *fn_name) {
  if (out != NULL)
    *out = NULL;
  if (out == NULL || obj == NULL || fn == NULL)
    return rlock__err(RLOCK_EINVAL, "%s: %s is NULL", fn_name,
                      out == NULL   ? "out"
                      : obj == NULL ? what
                                    : "fn");
  return RLOCK_OK;
}

static int watch_new(rlock_watch **out, rlock_lock *l, rlock_watch_fn fn,
                     void *arg, const char *fn_name) {
  rlock_client *c = l->client;
  if (!rlock__origin_ok(&c->origin))
    return rlock__origin_refuse(&c->origin);
  if (c->loop == NULL || c->loop->closing)
    return rlock__err(RLOCK_ECLOSED, "%s: the client is being freed", fn_name);
  rlock_watch *w = rlock__calloc(1, sizeof *w);
  if (w == NULL || (w->channel = rlock__strdup(l->channel)) == NULL) {
    free(w);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  w->c = c;
  w->fn = fn;
  w->arg = arg;
  w->lw.event = on_event;
  pthread_mutex_init(&w->mu, NULL);
  rlock__cond_init(&w->cv);
  rlock_op *op = op_new(w, join_done);
  if (op == NULL || (w->leave = op_new(w, leave_done)) == NULL) {
    free(op);
    watch_free(w);
    return RLOCK_ENOMEM;
  }
  atomic_fetch_add(&c->loop->watches, 1);
  *out = w;
  return rlock__lop_submit(op, join_start);
}

int rlock_watch_lock(rlock_watch **out, rlock_lock *lock, rlock_watch_fn fn,
                     void *arg) {
  int rc = check(out, lock, "lock", fn, "rlock_watch_lock");
  return rc != RLOCK_OK ? rc
                        : watch_new(out, lock, fn, arg, "rlock_watch_lock");
}

int rlock_watch_semaphore(rlock_watch **out, rlock_semaphore *semaphore,
                          rlock_watch_fn fn, void *arg) {
  int rc = check(out, semaphore, "semaphore", fn, "rlock_watch_semaphore");
  return rc != RLOCK_OK
             ? rc
             : watch_new(out, semaphore->l, fn, arg, "rlock_watch_semaphore");
}

int rlock_watch_psemaphore(rlock_watch **out, rlock_psemaphore *semaphore,
                           rlock_watch_fn fn, void *arg) {
  int rc = check(out, semaphore, "semaphore", fn, "rlock_watch_psemaphore");
  return rc != RLOCK_OK
             ? rc
             : watch_new(out, semaphore->l, fn, arg, "rlock_watch_psemaphore");
}

int rlock_watch_latch(rlock_watch **out, rlock_latch *latch, rlock_watch_fn fn,
                      void *arg) {
  int rc = check(out, latch, "latch", fn, "rlock_watch_latch");
  return rc != RLOCK_OK
             ? rc
             : watch_new(out, latch->l, fn, arg, "rlock_watch_latch");
}

int rlock_watch_election(rlock_watch **out, rlock_election *election,
                         rlock_watch_fn fn, void *arg) {
  int rc = check(out, election, "election", fn, "rlock_watch_election");
  return rc != RLOCK_OK
             ? rc
             : watch_new(out, election->lock, fn, arg, "rlock_watch_election");
}

const char *rlock_watch_channel(const rlock_watch *w) {
  if (w == NULL) {
    rlock__err(RLOCK_EINVAL, "rlock_watch_channel: watch is NULL");
    return NULL;
  }
  return w->channel;
}

void rlock_watch_free(rlock_watch *w) {
  if (w == NULL)
    return;
  rlock_client *c = w->c;
  atomic_fetch_sub(&c->loop->watches, 1);
  int here = pthread_equal(pthread_self(), c->loop->thread);
  if (here && !w->started && !c->loop->closing) {
    w->doomed = 1; /* its join, still in the inbox, frees it */
    return;
  }
  if (here || c->loop->closing || !rlock__origin_ok(&c->origin)) {
    /* On the loop's thread (a callback, or a loop client's own code): at
     * once. A loop closed, or a fork()ed child's copy: nothing runs it. */
    if (here)
      rlock__lsub_unwatch(c, &w->lw);
    free(w->leave);
    watch_free(w);
    return;
  }
  rlock__lop_submit(w->leave, leave_start);
  pthread_mutex_lock(&w->mu);
  while (!w->left)
    pthread_cond_wait(&w->cv, &w->mu);
  pthread_mutex_unlock(&w->mu);
  watch_free(w);
}
