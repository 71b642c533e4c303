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
 * timer, one observation in flight at a time. It joins and leaves there
 * as lwatch.c's watches do (lparty.c).
 */
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
  rlock__lparty p;     /* p.doomed: freed meanwhile, whoever comes last
                          (its join, its read's answer) frees it */
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
  int leaving;          /* the leave waits for the read in flight: */
  rlock_op *leaving_op; /* ... this one */
};

static void destroy(rlock_election_watch *w) {
  rlock__lparty_destroy(&w->p);
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
  rlock__ltimer_at(w->p.c, &w->timer, rlock__deadline_after_ms(ms));
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
  if (w->p.doomed || w->leaving) {
    rlock_leader_free(l);
    if (w->p.doomed)
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
  rlock__ltimer_stop(w->p.c, &w->timer);
  rlock_op *op = rlock__lop_new(w->e->lock, RLOCK__LOP_OBSERVE);
  if (op == NULL) { /* out of memory: at the next interval */
    rlock__ltimer_at(w->p.c, &w->timer,
                     rlock__deadline_after_ms(w->interval_ms));
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
    rlock__lsub_unwatch(w->p.c, lw);
  if (what == RLOCK__WATCH_MESSAGE)
    w->quick = 2;
  if (what == RLOCK__WATCH_MESSAGE || what == RLOCK__WATCH_UP)
    read_now(w);
}

/* Loop thread: follow the channel (or, if it cannot be followed, read by
 * the interval only), and read the leader now. */
static void join_start(rlock_op *op) {
  rlock_election_watch *w = rlock__lparty_owner(op);
  w->p.started = 1;
  if (w->p.doomed) {
    destroy(w);
  } else {
    if (rlock__lsub_watch(w->p.c, &w->lw, w->e->lock->channel) != RLOCK_OK)
      w->lw.chan = NULL;
    read_now(w);
  }
  rlock__lop_finish(op, RLOCK_OK, 0);
}

/* Loop thread: stop; the leave completes once no read is in flight. */
static void stop(rlock_election_watch *w) {
  rlock__lsub_unwatch(w->p.c, &w->lw);
  rlock__ltimer_stop(w->p.c, &w->timer);
}

static void leave_start(rlock_op *op) {
  rlock_election_watch *w = rlock__lparty_owner(op);
  stop(w);
  if (w->reading) {
    w->leaving = 1; /* observed() finishes it */
    w->leaving_op = op;
  } else
    rlock__lop_finish(op, RLOCK_OK, 0);
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
  return rlock__lparty_check(e->lock->client, fn_name);
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
  w->e = e;
  w->fn = fn;
  w->arg = arg;
  w->interval_ms = interval_ms;
  w->lw.event = on_channel;
  rlock__ltimer_init(&w->timer, due);
  if (rlock__lparty_init(&w->p, e->lock->client, w) != RLOCK_OK) {
    free(w);
    return RLOCK_ENOMEM;
  }
  *out = w;
  return rlock__lparty_join(&w->p, join_start);
}

void rlock_election_watch_free(rlock_election_watch *w) {
  if (w == NULL)
    return;
  int here = rlock__lparty_here(&w->p);
  if (here && !w->p.c->loop->closing) {
    if (w->p.started)
      stop(w);
    if (!w->p.started || w->reading) {
      w->p.doomed = 1; /* its join, or its read's answer, frees it */
      return;
    }
  } else if (!here) {
    rlock__lparty_leave(&w->p, leave_start);
  }
  destroy(w); /* also: a loop closed, or a fork()ed child's copy */
}
