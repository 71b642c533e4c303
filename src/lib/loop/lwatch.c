/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lwatch.c - rlock/watch.h: a channel's messages told to a callback, for
 * both drivers. A watch is a watcher of the loop's subscriber (lsub.c)
 * on the client's loop thread (a blocking client's background thread, or
 * the thread that runs a loop client's loop); it joins and leaves there
 * (lparty.c).
 */
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
  rlock__lparty p; /* p.doomed: freed before its join ran */
  char *channel;
  rlock_watch_fn fn;
  void *arg;
  /* loop thread */
  rlock__lwatcher lw;
  int up_once; /* RLOCK_WATCH_SUBSCRIBED was told */
  int lost;    /* RLOCK_WATCH_LOST was told, not resumed since */
  int over;    /* failed, or leaving: nothing more is told */
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
    rlock__lsub_unwatch(w->p.c, lw);
    ev = RLOCK_WATCH_FAILED;
    break;
  }
  w->fn(w->arg, ev, ev == RLOCK_WATCH_MESSAGE ? payload : NULL,
        ev == RLOCK_WATCH_MESSAGE ? len : 0);
}

/* Loop thread: join the channel; a failure is told as RLOCK_WATCH_FAILED. */
static void watch_free(rlock_watch *w);

static void join_start(rlock_op *op) {
  rlock_watch *w = rlock__lparty_owner(op);
  w->p.started = 1;
  if (w->p.doomed)
    watch_free(w);
  else if (!w->over && rlock__lsub_watch(op->c, &w->lw, w->channel) != RLOCK_OK)
    on_event(&w->lw, RLOCK__WATCH_FAILED, NULL, 0);
  rlock__lop_finish(op, RLOCK_OK, 0);
}

/* Loop thread: leave the channel; the completion tells the free. */
static void leave_start(rlock_op *op) {
  rlock_watch *w = rlock__lparty_owner(op);
  w->over = 1;
  rlock__lsub_unwatch(op->c, &w->lw);
  rlock__lop_finish(op, RLOCK_OK, 0);
}

static void watch_free(rlock_watch *w) {
  rlock__lparty_destroy(&w->p);
  free(w->channel);
  free(w);
}

/* A watch of the lock `l` of `obj` (the lock itself, or the semaphore,
 * latch or election it belongs to; `what` names it), checked first. */
static int watch_new(rlock_watch **out, const void *obj, rlock_lock *l,
                     const char *what, rlock_watch_fn fn, void *arg,
                     const char *fn_name) {
  if (out != NULL)
    *out = NULL;
  if (out == NULL || obj == NULL || fn == NULL)
    return rlock__err(RLOCK_EINVAL, "%s: %s is NULL", fn_name,
                      out == NULL   ? "out"
                      : obj == NULL ? what
                                    : "fn");
  int rc = rlock__lparty_check(l->client, fn_name);
  if (rc != RLOCK_OK)
    return rc;
  rlock_watch *w = rlock__calloc(1, sizeof *w);
  if (w == NULL || (w->channel = rlock__strdup(l->channel)) == NULL) {
    free(w);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  w->fn = fn;
  w->arg = arg;
  w->lw.event = on_event;
  if (rlock__lparty_init(&w->p, l->client, w) != RLOCK_OK) {
    free(w->channel);
    free(w);
    return RLOCK_ENOMEM;
  }
  *out = w;
  return rlock__lparty_join(&w->p, join_start);
}

int rlock_watch_lock(rlock_watch **out, rlock_lock *lock, rlock_watch_fn fn,
                     void *arg) {
  return watch_new(out, lock, lock, "lock", fn, arg, "rlock_watch_lock");
}

int rlock_watch_semaphore(rlock_watch **out, rlock_semaphore *semaphore,
                          rlock_watch_fn fn, void *arg) {
  return watch_new(out, semaphore, semaphore ? semaphore->l : NULL, "semaphore",
                   fn, arg, "rlock_watch_semaphore");
}

int rlock_watch_psemaphore(rlock_watch **out, rlock_psemaphore *semaphore,
                           rlock_watch_fn fn, void *arg) {
  return watch_new(out, semaphore, semaphore ? semaphore->l : NULL, "semaphore",
                   fn, arg, "rlock_watch_psemaphore");
}

int rlock_watch_latch(rlock_watch **out, rlock_latch *latch, rlock_watch_fn fn,
                      void *arg) {
  return watch_new(out, latch, latch ? latch->l : NULL, "latch", fn, arg,
                   "rlock_watch_latch");
}

int rlock_watch_election(rlock_watch **out, rlock_election *election,
                         rlock_watch_fn fn, void *arg) {
  return watch_new(out, election, election ? election->lock : NULL, "election",
                   fn, arg, "rlock_watch_election");
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
  rlock_client *c = w->p.c;
  int here = rlock__lparty_here(&w->p);
  if (here && !w->p.started && !c->loop->closing) {
    w->p.doomed = 1; /* its join, still in the inbox, frees it */
    return;
  }
  if (here) /* a callback, or a loop client's own code: at once */
    rlock__lsub_unwatch(c, &w->lw);
  else
    rlock__lparty_leave(&w->p, leave_start);
  watch_free(w);
}
