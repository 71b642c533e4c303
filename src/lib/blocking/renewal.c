/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * renewal.c - the background thread's renewal tick (kinds/renew.c's
 * steps), pipelined per node, carried by the thread's own poll() loop
 * (bg.c): the tick's sockets are polled with the subscriber sockets, so
 * no renewal ever keeps an unlock message waiting.
 *
 * Every batch of the tick is routed first. Each node then gets its
 * batches written on one of its connections, up to RENEW_WINDOW in
 * flight, and its replies are read as they come, each batch applied at
 * once (so a release waiting for a renewal in flight waits for its own
 * node's only). Each node has its own deadline, counted from its last
 * sign of life: the command timeout, but never more than two renewal
 * periods (an answer later than that is overtaken by the next tick,
 * which starts once every node is through). So a node that does not
 * answer (stopped, unreachable) delays the renewal of its own holds only:
 * its batches fail, its connection is dropped, and the next tick comes
 * sooner. A node with no idle connection gets one opened on a thread of
 * its own (rlock__pool_open_async), as the fan-out does; at most
 * RLOCK__BG_RENEW_FDS nodes are under way at once, the others start as
 * those finish.
 *
 * Nothing here waits on one node: a batch redirected (MOVED, ASK) goes on
 * to the node named, in this tick; one refused for now (TRYAGAIN,
 * CLUSTERDOWN, ...) or whose node no connection could be had to fails
 * for this tick (the next comes sooner), and the topology is refreshed
 * once the tick is through: a failover's new master is found so.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bg.h"
#include "client_int.h"
#include "cmd.h"
#include "common.h"
#include "conn.h"
#include "pool.h"
#include "topo.h"
#include "watchdog.h"

/* Batches in flight on one node's connection at a time. */
#define RENEW_WINDOW 8

/* A batch to send: where a redirection left its request. */
typedef struct todo {
  rlock__renew_batch b;
  int asking;    /* ASK: precede it with ASKING */
  int redirects; /* MOVED and ASK followed so far */
} todo;

/* A batch sent. */
typedef struct flight {
  rlock__renew_batch b;
  rlock__call call;
  rlock__req q;
  int64_t sent_us;
  int used;
} flight;

enum pstate {
  P_IDLE,    /* not started */
  P_OPENING, /* a connection being opened */
  P_CONN,    /* its connection borrowed */
  P_DEAD     /* failed: whatever comes for it fails too */
};

/* One node's share of the tick. */
typedef struct pnode {
  rlock__node *node;
  int state; /* enum pstate */
  rlock__conn *conn;
  rlock__opening *opening;
  todo *todo; /* routed here, not sent yet: todo[next..] */
  size_t ntodo, captodo, next;
  flight slot[RENEW_WINDOW];
  int ring[RENEW_WINDOW]; /* slots in flight, oldest first */
  int head, count;
  int64_t deadline_us; /* while something is due from it */
} pnode;

struct rlock__bg_ticker {
  rlock_client *c;
  rlock__renew_tick *t;
  pnode **nodes;
  size_t n, cap;
  int64_t wait_cap_ms;                /* two renewal periods */
  int refresh;                        /* refresh the topology when through */
  size_t polled[RLOCK__BG_RENEW_FDS]; /* the last poll's nodes, in order */
  int npolled;
};

typedef struct rlock__bg_ticker ticker;

/* ---- the nodes' shares ------------------------------------------------- */

static pnode *share_of(ticker *k, rlock__node *node) {
  for (size_t i = 0; i < k->n; i++)
    if (k->nodes[i]->node == node)
      return k->nodes[i];
  if (k->n == k->cap) {
    size_t cap = k->cap ? k->cap * 2 : 4;
    pnode **v = rlock__realloc(k->nodes, cap * sizeof *v);
    if (v == NULL)
      return NULL;
    k->nodes = v;
    k->cap = cap;
  }
  pnode *p = rlock__calloc(1, sizeof *p);
  if (p != NULL) {
    p->node = node;
    k->nodes[k->n++] = p;
  }
  return p;
}

static int add_todo(pnode *p, const todo *d) {
  if (p->ntodo == p->captodo) {
    size_t cap = p->captodo ? p->captodo * 2 : 8;
    todo *v = rlock__realloc(p->todo, cap * sizeof *v);
    if (v == NULL)
      return -1;
    p->todo = v;
    p->captodo = cap;
  }
  p->todo[p->ntodo++] = *d;
  return 0;
}

/* Route batch d to `node`'s share; a failure settles it at once. */
static void route_to(ticker *k, rlock__node *node, const todo *d) {
  pnode *p = share_of(k, node);
  int rc;
  if (p == NULL)
    rc = rlock__err(RLOCK_ENOMEM, "out of memory");
  else if (p->state == P_DEAD) /* its node failed in this tick already */
    rc = rlock__err(RLOCK_EIO, "redis %s: failed in this renewal tick",
                    node->where);
  else if (add_todo(p, d) != 0)
    rc = rlock__err(RLOCK_ENOMEM, "out of memory");
  else
    return;
  rlock__renew_settle(k->c, k->t, &d->b, rc, NULL, 0);
}

/* Take every batch of the tick and route it (a cluster's map is learned
 * first when unknown, as the blocking runner does). A batch that cannot
 * be routed fails now. */
static void route_all(ticker *k) {
  rlock__renew_batch b;
  while (rlock__renew_take(k->c, k->t, &b)) {
    rlock__node *node;
    int rc = rlock__topo_route(&k->c->topo, rlock__renew_key(k->t, &b), &node);
    if (rc != RLOCK_OK) {
      rlock__renew_settle(k->c, k->t, &b, rc, NULL, 0);
      k->refresh = 1;
      continue;
    }
    todo d = {.b = b};
    route_to(k, node, &d);
  }
}

/* ---- a node's batches ---------------------------------------------------- */

static void slot_done(flight *f) {
  rlock__reply_free(f->q.reply);
  f->q.reply = NULL;
  rlock__call_clear(&f->call);
  f->used = 0;
}

/* Everything of p still due or unsent fails with `rc` (the last error
 * saying why); its connection is dropped, an opening abandoned. A node
 * that could not be reached (not one that is slow to answer: a refresh
 * would ask it too, and wait as long) has the topology refreshed when the
 * tick is through: a failover may be why. */
static void fail_node(ticker *k, pnode *p, int rc) {
  rlock__saved_error why;
  rlock__error_save(&why);
  for (; p->count > 0; p->count--) {
    flight *f = &p->slot[p->ring[p->head]];
    p->head = (p->head + 1) % RENEW_WINDOW;
    rlock__error_restore(&why);
    rlock__renew_settle(k->c, k->t, &f->b, rc, NULL, 0);
    slot_done(f);
  }
  for (; p->next < p->ntodo; p->next++) {
    rlock__error_restore(&why);
    rlock__renew_settle(k->c, k->t, &p->todo[p->next].b, rc, NULL, 0);
  }
  if (p->conn != NULL)
    p->conn->broken = 1;
  if (p->opening != NULL)
    rlock__pool_open_abandon(p->opening); /* a late connection is kept */
  p->opening = NULL;
  k->refresh |=
      rc != RLOCK_ECLOSED && !(rc == RLOCK_ETIMEOUT && p->state == P_CONN);
  p->state = P_DEAD;
  rlock__error_restore(&why);
}

static int free_slot(const pnode *p) {
  for (int i = 0; i < RENEW_WINDOW; i++)
    if (!p->slot[i].used)
      return i;
  return -1;
}

static void push(pnode *p, int i) {
  p->ring[(p->head + p->count++) % RENEW_WINDOW] = i;
}

/* Life from p: its deadline moves on. */
static void alive(ticker *k, pnode *p) {
  int64_t ms = k->c->cfg.command_timeout_ms;
  p->deadline_us =
      rlock__deadline_after_ms(ms < k->wait_cap_ms ? ms : k->wait_cap_ms);
}

/* Encode batches into p's connection while its window has room, then
 * write them in one go. */
static void fill(ticker *k, pnode *p) {
  int added = 0, was = p->count, i;
  while (p->next < p->ntodo && (i = free_slot(p)) >= 0) {
    flight *f = &p->slot[i];
    const todo *d = &p->todo[p->next++];
    f->b = d->b;
    rlock__renew_build(k->c, k->t, &f->b, &f->call);
    rlock__req_init(&f->q, &f->call);
    f->q.asking = d->asking;
    f->q.redirects = d->redirects;
    if (rlock__req_encode_to(&f->q, &p->conn->out) < 0) {
      rlock__renew_settle(k->c, k->t, &f->b, rlock_error_last()->code, NULL, 0);
      rlock__call_clear(&f->call);
      continue;
    }
    f->used = 1;
    f->sent_us = rlock__now_us();
    push(p, i);
    added = 1;
  }
  if (!added)
    return;
  if (was == 0)
    alive(k, p); /* nothing was due: the wait starts now */
  p->conn->io_deadline_us = rlock__deadline_after_ms(p->conn->timeout_ms);
  int rc = rlock__conn_send_out(p->conn);
  p->conn->io_deadline_us = 0;
  if (rc != RLOCK_OK)
    fail_node(k, p, rc);
}

/* Borrow p's connection (or start opening one) and send its first
 * batches. */
static void node_start(ticker *k, pnode *p) {
  int rc = rlock__pool_get_idle(&p->node->pool, &p->conn);
  if (rc == RLOCK_OK && p->conn == NULL)
    rc = rlock__pool_open_async(&p->node->pool, &p->opening);
  if (rc != RLOCK_OK) {
    fail_node(k, p, rc);
    return;
  }
  if (p->opening != NULL) {
    int64_t ms = k->c->cfg.connect_timeout_ms;
    p->deadline_us =
        rlock__deadline_after_ms(ms < k->wait_cap_ms ? ms : k->wait_cap_ms);
    p->state = P_OPENING;
    return;
  }
  p->state = P_CONN;
  fill(k, p);
}

/* A redirected batch (MOVED, ASK) goes on to the node named, in this
 * tick; one refused for now (TRYAGAIN, CLUSTERDOWN, ...) or redirected
 * too often fails for this tick (the last error says why). */
static void redirected(ticker *k, flight *f) {
  rlock__node *to;
  int64_t pause_ms;
  int attempt = 0;
  rlock__next next =
      rlock__req_next(&k->c->topo, &f->q, 0, &attempt, &to, &pause_ms);
  if (next == RLOCK__NEXT_GO || next == RLOCK__NEXT_MOVED) {
    todo d = {.b = f->b, .asking = f->q.asking, .redirects = f->q.redirects};
    k->refresh |= next == RLOCK__NEXT_MOVED;
    route_to(k, to, &d);
    return;
  }
  k->refresh = 1;
  rlock__renew_settle(k->c, k->t, &f->b,
                      f->q.rc != RLOCK_OK ? f->q.rc : RLOCK_ESERVER, NULL, 0);
}

/* The oldest batch in flight takes reply r. */
static void on_reply(ticker *k, pnode *p, rlock__reply *r) {
  flight *f = &p->slot[p->ring[p->head]];
  rlock__step step = rlock__req_feed(&f->q, p->conn->where, r);
  if (step == RLOCK__STEP_MORE)
    return;
  int i = p->ring[p->head];
  p->head = (p->head + 1) % RENEW_WINDOW;
  p->count--;
  if (step == RLOCK__STEP_DONE) {
    if (f->q.rc != RLOCK_OK) /* the error rule set the last error */
      rlock__renew_settle(k->c, k->t, &f->b, f->q.rc, NULL, 0);
    else
      rlock__renew_settle(k->c, k->t, &f->b, RLOCK_OK, f->q.reply, f->sent_us);
  } else if (step == RLOCK__STEP_RESEND) { /* EVAL after NOSCRIPT: last */
    int rc = RLOCK_OK;
    if (rlock__req_encode_to(&f->q, &p->conn->out) < 0)
      rc = rlock_error_last()->code;
    push(p, i);
    p->conn->io_deadline_us = rlock__deadline_after_ms(p->conn->timeout_ms);
    if (rc == RLOCK_OK)
      rc = rlock__conn_send_out(p->conn);
    p->conn->io_deadline_us = 0;
    if (rc != RLOCK_OK)
      fail_node(k, p, rc);
    return;
  } else {
    redirected(k, f);
  }
  slot_done(f);
}

/* p's descriptor polled readable. */
static void on_ready(ticker *k, pnode *p) {
  if (p->state == P_OPENING) {
    int rc;
    char msg[256];
    if (!rlock__pool_open_take(p->opening, &rc, &p->conn, msg, sizeof msg))
      return; /* not yet */
    p->opening = NULL;
    if (rc != RLOCK_OK) {
      fail_node(k, p, rlock__err(rc, "%s", msg));
      return;
    }
    p->state = P_CONN;
    fill(k, p);
    return;
  }
  if (p->state != P_CONN)
    return;
  rlock__reply *r = NULL;
  int rc = rlock__conn_read_some(p->conn);
  while (rc == RLOCK_OK && p->state == P_CONN && p->count > 0 &&
         (rc = rlock__conn_take_reply(p->conn, &r)) == RLOCK_OK && r != NULL)
    on_reply(k, p, r);
  if (p->state != P_CONN)
    return;
  if (rc != RLOCK_OK) {
    fail_node(k, p, rc);
    return;
  }
  alive(k, p);
  fill(k, p);
}

/* ---- the tick, on the background thread's poll loop ---------------------- */

static int due(const pnode *p) {
  return p->state == P_OPENING || (p->state == P_CONN && p->count > 0);
}

/* Fail the nodes whose deadline passed; start or fill those with batches
 * to send (at most RLOCK__BG_RENEW_FDS due at once). Returns 1 while
 * anything is due. */
static int advance(ticker *k) {
  int64_t now = rlock__now_us();
  for (size_t i = 0; i < k->n; i++) {
    pnode *p = k->nodes[i];
    if (due(p) && now >= p->deadline_us)
      fail_node(
          k, p,
          rlock__err(RLOCK_ETIMEOUT, "redis %s: %s in time (renewal)",
                     p->node->where,
                     p->state == P_OPENING ? "no connection" : "no answer"));
  }
  size_t busy = 0;
  for (size_t i = 0; i < k->n; i++)
    busy += due(k->nodes[i]);
  for (size_t i = 0; i < k->n; i++) {
    pnode *p = k->nodes[i];
    if (p->next >= p->ntodo)
      continue;
    if (p->state == P_CONN)
      fill(k, p);
    else if (p->state == P_IDLE && busy < RLOCK__BG_RENEW_FDS) {
      node_start(k, p);
      busy += due(p);
    }
  }
  for (size_t i = 0; i < k->n; i++)
    if (due(k->nodes[i]))
      return 1;
  return 0;
}

/* The tick is through (or the thread stops): give the connections back,
 * refresh the topology if a node failed or moved, free it all. */
static void tick_end(ticker *k) {
  rlock_client *c = k->c;
  for (size_t i = 0; i < k->n; i++) {
    pnode *p = k->nodes[i];
    if (p->conn != NULL)
      rlock__pool_put(&p->node->pool, p->conn);
    free(p->todo);
    free(p);
  }
  free(k->nodes);
  rlock__renew_end(c, k->t);
  int refresh = k->refresh && c->topo.target.kind != RLOCK__TOPO_SINGLE;
  free(k);
  c->bg->renew = NULL;
  if (refresh)
    rlock__topo_refresh(&c->topo);
}

/* Start a tick when one is due. */
static void tick_begin(rlock_client *c) {
  rlock__renew_tick *t;
  int64_t next;
  if (rlock__renew_begin(c, &t, &next) != RLOCK_OK || t == NULL)
    return;
  ticker *k = rlock__calloc(1, sizeof *k);
  if (k == NULL) { /* every batch fails: tried again sooner */
    rlock__renew_batch b;
    while (rlock__renew_take(c, t, &b))
      rlock__renew_settle(c, t, &b, rlock__err(RLOCK_ENOMEM, "out of memory"),
                          NULL, 0);
    rlock__renew_end(c, t);
    return;
  }
  k->c = c;
  k->t = t;
  k->wait_cap_ms = 2 * c->wd->period_us / 1000;
  c->bg->renew = k;
  route_all(k);
  if (!advance(k))
    tick_end(k);
}

/* Read what the last poll found ready. */
static void serve_ready(ticker *k, const struct pollfd *fds, int n) {
  for (int j = 0; j < n && j < k->npolled; j++)
    if (fds[j].revents != 0 && k->polled[j] < k->n)
      on_ready(k, k->nodes[k->polled[j]]);
  k->npolled = 0;
}

int64_t rlock__bg_renew(rlock_client *c, const struct pollfd *fds, int n) {
  ticker *k = c->bg->renew;
  if (k != NULL) {
    serve_ready(k, fds, n);
    if (!advance(k))
      tick_end(k);
  }
  if (c->bg->renew == NULL)
    tick_begin(c);
  if ((k = c->bg->renew) != NULL) {
    int64_t first = INT64_MAX;
    for (size_t i = 0; i < k->n; i++)
      if (due(k->nodes[i]) && k->nodes[i]->deadline_us < first)
        first = k->nodes[i]->deadline_us;
    return first;
  }
  pthread_mutex_lock(&c->wd->mu);
  int64_t next = c->wd->armed ? c->wd->next_tick_us : INT64_MAX;
  pthread_mutex_unlock(&c->wd->mu);
  return next;
}

int rlock__bg_renew_pollfds(rlock_client *c, struct pollfd *fds, int max) {
  ticker *k = c->bg->renew;
  int m = 0;
  if (k == NULL)
    return 0;
  for (size_t i = 0; i < k->n && m < max && m < RLOCK__BG_RENEW_FDS; i++) {
    pnode *p = k->nodes[i];
    if (!due(p))
      continue;
    int fd =
        p->state == P_OPENING ? rlock__pool_open_fd(p->opening) : p->conn->fd;
    fds[m] = (struct pollfd){.fd = fd, .events = POLLIN};
    k->polled[m++] = i;
  }
  k->npolled = m;
  return m;
}

void rlock__bg_renew_stop(rlock_client *c) {
  ticker *k = c->bg->renew;
  if (k == NULL)
    return;
  for (size_t i = 0; i < k->n; i++) { /* given up quietly: not failures */
    pnode *p = k->nodes[i];
    for (; p->count > 0; p->count--) {
      flight *f = &p->slot[p->ring[p->head]];
      p->head = (p->head + 1) % RENEW_WINDOW;
      rlock__renew_skip(c, k->t, &f->b);
      slot_done(f);
    }
    for (; p->next < p->ntodo; p->next++)
      rlock__renew_skip(c, k->t, &p->todo[p->next].b);
    if (p->conn != NULL)
      p->conn->broken = 1; /* replies are still due on it */
    if (p->opening != NULL)
      rlock__pool_open_abandon(p->opening);
    p->opening = NULL;
  }
  k->refresh = 0;
  tick_end(k);
}
