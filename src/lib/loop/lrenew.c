/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lrenew.c - the watchdog on the loop: renew.c's tick, its batches split
 * by the node that serves them (a lane per node), every lane sent at
 * once, each one batch in flight at a time and going on by itself. So a
 * node that does not answer (stopped, unreachable) delays the renewal of
 * its own holds only: the other lanes finish, and the next ticks come on
 * time, while its batch waits for the connection's command timeout.
 *
 * Ticks may overlap: a tick whose lane still waits on a node is kept
 * until that answer comes (its strings are the batch's), and a later
 * tick leaves that node's holds out (renewed at the next tick after the
 * answer), so no node ever has more than one renewal in flight.
 *
 * Releases go on the same command connection as that node's renewals,
 * so a renewal sent before a release is run before it (watchdog.c's
 * rlock__hold_pop need not wait for it); a renewal is never paused and
 * sent again later (rlock__lreq.no_pause), so none overtakes a release.
 */
#include <stddef.h>
#include <stdlib.h>

#include "client_int.h"
#include "common.h"
#include "loop.h"
#include "topo.h"
#include "watchdog.h"

typedef struct rlock__ltick ltick;

/* One node's share of a tick. */
typedef struct lane {
  rlock__lreq req; /* its batch in flight (first: found from the request) */
  ltick *tick;
  rlock__node *node;        /* where its batches route (NULL: none known) */
  rlock__renew_batch *todo; /* todo[next..n) not sent yet */
  size_t n, cap, next;
  rlock__renew_batch cur; /* the batch in flight */
  int busy;
} lane;

struct rlock__ltick {
  rlock__llink at; /* first: among the loop's ticks under way */
  rlock__renew_tick *t;
  lane **lanes;
  size_t nlanes, cap;
  size_t busy; /* lanes with a batch in flight */
  int held;    /* calls under way that use it: not ended from under them
                  (a request may end inside rlock__lreq_send) */
};

static void arm_at(rlock_client *c, int64_t at) {
  if (at != INT64_MAX)
    rlock__ltimer_at(c, &c->loop->renew, at);
}

void rlock__lrenew_arm(rlock_client *c) {
  if (c->loop->closing)
    return;
  pthread_mutex_lock(&c->wd->mu);
  int64_t at = c->wd->armed ? c->wd->next_tick_us : INT64_MAX;
  pthread_mutex_unlock(&c->wd->mu);
  arm_at(c, at);
}

/* Whether a batch to `node` is in flight, from any tick. */
static int node_busy(const rlock__loop *lp, const rlock__node *node) {
  for (const rlock__llink *e = lp->ticks.first; e != NULL; e = e->next) {
    const ltick *k = (const ltick *)e;
    for (size_t i = 0; i < k->nlanes; i++)
      if (k->lanes[i]->busy && k->lanes[i]->node == node)
        return 1;
  }
  return 0;
}

static lane *lane_of(ltick *k, rlock__node *node) {
  for (size_t i = 0; i < k->nlanes; i++)
    if (k->lanes[i]->node == node)
      return k->lanes[i];
  if (rlock__lgrow(&k->lanes, &k->cap, k->nlanes, sizeof *k->lanes, 4) !=
      RLOCK_OK)
    return NULL;
  lane *ln = rlock__calloc(1, sizeof *ln);
  if (ln != NULL) {
    ln->tick = k;
    ln->node = node;
    k->lanes[k->nlanes++] = ln;
  }
  return ln;
}

static int add_todo(lane *ln, const rlock__renew_batch *b) {
  int rc = rlock__lgrow(&ln->todo, &ln->cap, ln->n, sizeof *ln->todo, 4);
  if (rc == RLOCK_OK)
    ln->todo[ln->n++] = *b;
  return rc;
}

static void tick_end(rlock_client *c, ltick *k) {
  rlock__llist_del(&c->loop->ticks, &k->at);
  for (size_t i = 0; i < k->nlanes; i++) {
    free(k->lanes[i]->todo);
    free(k->lanes[i]);
  }
  free(k->lanes);
  rlock__renew_end(c, k->t);
  free(k);
}

/* The lane's batches not sent yet fail with `rc` (the last error saying
 * why): given up for this tick, the next one brought forward. */
static void lane_fail_rest(rlock_client *c, lane *ln, int rc) {
  rlock__saved_error why;
  rlock__error_save(&why);
  for (; ln->next < ln->n; ln->next++) {
    rlock__error_restore(&why);
    rlock__renew_settle(c, ln->tick->t, &ln->todo[ln->next], rc, NULL, 0);
  }
  rlock__error_restore(&why);
}

static void lane_send(rlock_client *c, lane *ln);

static void lane_done(rlock_client *c, rlock__lreq *r) {
  lane *ln = (lane *)r; /* req is its first member */
  ltick *k = ln->tick;
  rlock__reply *reply;
  int rc = rlock__lreq_take(r, &reply);
  ln->busy = 0;
  k->busy--;
  k->held++;
  if (!c->loop->closing) {
    rlock__renew_settle(c, k->t, &ln->cur, rc, reply, r->sent_us);
    if (rc != RLOCK_OK)
      lane_fail_rest(c, ln, rc); /* the node failed: not one by one */
    else
      lane_send(c, ln);
  }
  rlock__reply_free(reply);
  if (--k->held == 0 && k->busy == 0)
    tick_end(c, k);
  rlock__lrenew_arm(c); /* a failure brought the next tick forward */
}

/* Send the lane's next batch, if any. */
static void lane_send(rlock_client *c, lane *ln) {
  if (ln->next >= ln->n)
    return;
  ln->cur = ln->todo[ln->next++];
  rlock__renew_build(c, ln->tick->t, &ln->cur, &ln->req.call);
  ln->req.no_pause = 1; /* the tick retries: see rlock__lreq */
  ln->busy = 1;
  ln->tick->busy++;
  rlock__lreq_send(c, &ln->req, lane_done); /* may end at once */
}

/* Split the tick's batches into lanes by the node that serves each now;
 * a node with a batch still in flight sits this tick out. */
static void route_all(rlock_client *c, ltick *k) {
  rlock__renew_batch b;
  while (rlock__renew_take(c, k->t, &b)) {
    rlock__node *node =
        rlock__topo_lookup(&c->topo, rlock__renew_key(k->t, &b));
    if (node_busy(c->loop, node)) {
      rlock__renew_skip(c, k->t, &b);
      continue;
    }
    lane *ln = lane_of(k, node);
    if (ln == NULL || add_todo(ln, &b) != RLOCK_OK)
      rlock__renew_settle(c, k->t, &b,
                          rlock__err(RLOCK_ENOMEM, "out of memory"), NULL, 0);
  }
}

void rlock__lrenew_tick(rlock_client *c, rlock__ltimer *timer) {
  (void)timer;
  rlock__loop *lp = c->loop;
  if (lp->closing)
    return;
  rlock__renew_tick *t;
  int64_t next = INT64_MAX;
  if (rlock__renew_begin(c, &t, &next) != RLOCK_OK || t == NULL) {
    arm_at(c, next);
    return;
  }
  ltick *k = rlock__calloc(1, sizeof *k);
  if (k == NULL) { /* every batch fails: tried again sooner */
    rlock__renew_batch b;
    while (rlock__renew_take(c, t, &b))
      rlock__renew_settle(c, t, &b, rlock__err(RLOCK_ENOMEM, "out of memory"),
                          NULL, 0);
    rlock__renew_end(c, t);
    rlock__lrenew_arm(c);
    return;
  }
  k->t = t;
  route_all(c, k);
  rlock__llist_add(&lp->ticks, &k->at);
  k->held = 1;
  for (size_t i = 0; i < k->nlanes; i++)
    lane_send(c, k->lanes[i]);
  if (--k->held == 0 && k->busy == 0)
    tick_end(c, k);
  rlock__lrenew_arm(c);
}
