/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lfollow.c - rlock_election_watch_new (rlock/election.h): the leader
 * read again (election_observe.lua, lops.c) whenever the election's
 * channel has a message (a resignation, a leader's release) and twice soon
 * after it (the standby it woke takes over within a round trip or so, and
 * taking publishes nothing), when a subscription lost comes back, when the
 * leader's lease is due to end, and every interval; the callback told each
 * time the leader (owner and term) differs from the last one told. All of
 * it on the client's loop thread: a watcher of the subscriber (lsub.c), a
 * timer, one observation in flight at a time. Joining and leaving go
 * through the loop's inbox from another thread, as lwatch.c's.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "common.h"
#include "election_int.h"
#include "lock_int.h"
#include "loop.h"

/* The reads after a message: this soon, then this much later. */
static const int64_t quick_ms[2] = {10, 50};

struct rlock_election_watch {
  rlock__ltimer timer; /* first: the next read */
  rlock_client *c;
  rlock_election *e;
  rlock_leader_change_fn fn;
  void *arg;
  int64_t interval_ms;
  /* loop thread */
  rlock__lwatcher lw;
  int reading;  /* an observation is in flight */
  int again;    /* a message came meanwhile: read again at once */
  int quick;    /* quick reads left */
  int told;     /* a leader was told: the last one's key below */
  int present;  /* ... */
  int64_t term; /* ... */
  char owner[RLOCK_OWNER_MAX];
  int failing;          /* a failed read was told, none has worked since */
  int started;          /* its join has run */
  int doomed;           /* freed meanwhile: whoever comes last frees it */
  rlock_op *leave;      /* made with it, so a free cannot fail */
  int leaving;          /* the leave waits for the read in flight: */
  rlock_op *leaving_op; /* ... this one */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int left;
};

static void destroy(rlock_election_watch *w) {
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  free(w->leave);
  free(w);
}

static void read_now(rlock_election_watch *w);

static void due(rlock_client *c, rlock__ltimer *t) {
  (void)c;
  read_now((rlock_election_watch *)t);
}

/* When to read next, after a read that saw `l` (NULL: failed). */
static void plan_next(rlock_election_watch *w, const rlock_leader *l) {
  if (w->again) {
    w->again = 0;
    read_now(w);
    return;
  }
  int64_t ms = w->interval_ms;
  if (w->quick > 0)
    ms = quick_ms[2 - w->quick--];
  if (l != NULL && l->present && l->ttl_ms >= 0 && l->ttl_ms + 1 < ms)
    ms = l->ttl_ms + 1;
  rlock__ltimer_at(w->c, &w->timer, rlock__deadline_after_ms(ms));
}

/* Whether `l` is another leadership than the last one told (and it is
 * kept as the last one). */
static int changed(rlock_election_watch *w, const rlock_leader *l) {
  const char *owner = l->present && l->owner != NULL ? l->owner : "";
  if (w->told && w->present == l->present && w->term == l->term &&
      strcmp(w->owner, owner) == 0)
    return 0;
  w->told = 1;
  w->present = l->present;
  w->term = l->term;
  snprintf(w->owner, sizeof w->owner, "%s", owner);
  return 1;
}

/* An observation's answer (the loop's completions). The watch may be
 * freed by its callback: nothing of it is touched after. */
static void observed(void *arg, int rc, rlock_leader *l) {
  rlock_election_watch *w = arg;
  w->reading = 0;
  if (w->doomed || w->leaving) {
    rlock_leader_free(l);
    if (w->doomed)
      destroy(w);
    else
      rlock__lop_finish(w->leaving_op, RLOCK_OK, 0);
    return;
  }
  plan_next(w, rc == RLOCK_OK ? l : NULL);
  if (rc != RLOCK_OK) {
    if (!w->failing) { /* told once until a read works again */
      w->failing = 1;
      w->fn(w->arg, rc, NULL);
    }
    return;
  }
  w->failing = 0;
  if (changed(w, l))
    w->fn(w->arg, RLOCK_OK, l);
  else
    rlock_leader_free(l);
}

static void read_now(rlock_election_watch *w) {
  if (w->reading) {
    w->again = 1;
    return;
  }
  rlock__ltimer_stop(w->c, &w->timer);
  rlock_op *op = rlock__lop_new(w->e->lock, RLOCK__LOP_OBSERVE);
  if (op == NULL) { /* out of memory: at the next interval */
    rlock__ltimer_at(w->c, &w->timer, rlock__deadline_after_ms(w->interval_ms));
    return;
  }
  op->leader_cb = observed;
  op->arg = w;
  w->reading = 1;
  rlock__lop_submit(op, rlock__lobserve_start);
}

static rlock_election_watch *of_watcher(rlock__lwatcher *lw) {
  return (rlock_election_watch *)((char *)lw -
                                  offsetof(rlock_election_watch, lw));
}

static void on_channel(rlock__lwatcher *lw, rlock__watch_event what,
                       const char *payload, size_t len) {
  (void)payload, (void)len;
  rlock_election_watch *w = of_watcher(lw);
  if (what == RLOCK__WATCH_FAILED) /* refused: the reads go on */
    rlock__lsub_unwatch(w->c, lw);
  if (what == RLOCK__WATCH_MESSAGE)
    w->quick = 2;
  if (what == RLOCK__WATCH_MESSAGE || what == RLOCK__WATCH_UP)
    read_now(w);
}

static void nothing(void *arg, int rc, int64_t value) {
  (void)arg, (void)rc, (void)value;
}

/* Loop thread: follow the channel (or, if it cannot be followed, read by
 * the interval only), and read the leader now. */
static void join_start(rlock_op *op) {
  rlock_election_watch *w = op->arg;
  w->started = 1;
  if (w->doomed) {
    destroy(w);
  } else {
    if (rlock__lsub_watch(w->c, &w->lw, w->e->lock->channel) != RLOCK_OK)
      w->lw.chan = NULL;
    read_now(w);
  }
  rlock__lop_finish(op, RLOCK_OK, 0);
}

/* Loop thread: stop; the leave completes once no read is in flight. */
static void stop(rlock_election_watch *w) {
  rlock__lsub_unwatch(w->c, &w->lw);
  rlock__ltimer_stop(w->c, &w->timer);
}

static void leave_start(rlock_op *op) {
  rlock_election_watch *w = op->arg;
  stop(w);
  if (w->reading) {
    w->leaving = 1; /* observed() finishes it */
    w->leaving_op = op;
  } else
    rlock__lop_finish(op, RLOCK_OK, 0);
}

static void leave_done(void *arg, int rc, int64_t value) {
  (void)rc, (void)value;
  rlock_election_watch *w = arg;
  pthread_mutex_lock(&w->mu);
  w->left = 1;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

static rlock_op *op_new(rlock_election_watch *w, rlock_async_fn done) {
  rlock_op *op = rlock__lop_new(w->e->lock, RLOCK__LOP_WATCH);
  if (op != NULL) {
    op->cb = done;
    op->arg = w;
  }
  return op;
}

static int check(rlock_election_watch **out, rlock_election *e,
                 int64_t interval_ms, rlock_leader_change_fn fn) {
  static const char *const fn_name = "rlock_election_watch_new";
  if (out != NULL)
    *out = NULL;
  if (out == NULL || e == NULL || fn == NULL)
    return rlock__err(RLOCK_EINVAL, "%s: %s is NULL", fn_name,
                      out == NULL ? "out"
                      : e == NULL ? "election"
                                  : "fn");
  if (interval_ms < 10 || interval_ms > RLOCK_ELECTION_WATCH_MAX_INTERVAL)
    return rlock__err(RLOCK_EINVAL,
                      "%s: interval_ms %lld is not between 10 and %lld",
                      fn_name, (long long)interval_ms,
                      (long long)RLOCK_ELECTION_WATCH_MAX_INTERVAL);
  rlock_client *c = e->lock->client;
  if (!rlock__origin_ok(&c->origin))
    return rlock__origin_refuse(&c->origin);
  if (c->loop == NULL || c->loop->closing)
    return rlock__err(RLOCK_ECLOSED, "%s: the client is being freed", fn_name);
  return RLOCK_OK;
}

int rlock_election_watch_new(rlock_election_watch **out, rlock_election *e,
                             int64_t interval_ms, rlock_leader_change_fn fn,
                             void *arg) {
  int rc = check(out, e, interval_ms, fn);
  if (rc != RLOCK_OK)
    return rc;
  rlock_election_watch *w = rlock__calloc(1, sizeof *w);
  if (w == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  w->c = e->lock->client;
  w->e = e;
  w->fn = fn;
  w->arg = arg;
  w->interval_ms = interval_ms;
  w->lw.event = on_channel;
  rlock__ltimer_init(&w->timer, due);
  pthread_mutex_init(&w->mu, NULL);
  rlock__cond_init(&w->cv);
  rlock_op *op = op_new(w, nothing);
  if (op == NULL || (w->leave = op_new(w, leave_done)) == NULL) {
    free(op);
    destroy(w);
    return RLOCK_ENOMEM;
  }
  atomic_fetch_add(&w->c->loop->watches, 1);
  *out = w;
  return rlock__lop_submit(op, join_start);
}

void rlock_election_watch_free(rlock_election_watch *w) {
  if (w == NULL)
    return;
  rlock_client *c = w->c;
  atomic_fetch_sub(&c->loop->watches, 1);
  int here = pthread_equal(pthread_self(), c->loop->thread);
  if (here && !c->loop->closing) {
    if (w->started)
      stop(w);
    if (!w->started || w->reading)
      w->doomed = 1; /* its join, or its read's answer, frees it */
    else
      destroy(w);
    return;
  }
  if (here || c->loop->closing || !rlock__origin_ok(&c->origin)) {
    destroy(w); /* a loop closed, or a fork()ed child's copy */
    return;
  }
  rlock_op *leave = w->leave;
  w->leave = NULL; /* the loop frees it once it has run */
  rlock__lop_submit(leave, leave_start);
  pthread_mutex_lock(&w->mu);
  while (!w->left)
    pthread_cond_wait(&w->cv, &w->mu);
  pthread_mutex_unlock(&w->mu);
  destroy(w);
}
