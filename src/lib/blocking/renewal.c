/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * renewal.c - the background thread's renewal tick (kinds/renew.c's
 * steps), pipelined per node.
 *
 * Every batch of the tick is routed first. Each node then gets its
 * batches written on one of its connections, up to RENEW_WINDOW in
 * flight, before any reply is read, and one poll() over all the nodes
 * takes the replies as they come, each batch applied at once (so a
 * release waiting for a renewal in flight waits for its own node's only).
 * Each node has its own deadline, counted from its last sign of life: the
 * command timeout, but never more than two renewal periods (an answer
 * later than that is overtaken by the next tick, and the thread must get
 * back to the other nodes' renewals before their leases run out). So a
 * node that does not answer (stopped, unreachable) delays the renewal of
 * its own holds only: its batches fail, its connection is dropped, and the
 * next tick comes sooner. A node with no idle connection gets one opened
 * on a thread of its own (rlock__pool_open_async), as the fan-out does.
 * Batches redirected (MOVED, ASK) or refused for now (TRYAGAIN,
 * CLUSTERDOWN, ...), and those of a node no connection could be had to,
 * are finished through the blocking runner once the poll is over, as lone
 * calls were before (retried, the topology refreshed, while the connect
 * plus the command timeout lasts: how a failover's new master is found).
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

/* A batch sent (or to finish on the blocking path). */
typedef struct flight {
  rlock__renew_batch b;
  rlock__call call;
  rlock__req q;
  int64_t sent_us;
  int used;
} flight;

/* One node's share of the tick. */
typedef struct pnode {
  rlock__node *node;
  rlock__conn *conn;
  rlock__opening *opening;
  rlock__renew_batch *todo; /* routed here, not sent yet: todo[next..] */
  size_t ntodo, captodo, next;
  flight slot[RENEW_WINDOW];
  int ring[RENEW_WINDOW]; /* slots in flight, oldest first */
  int head, count;
  int later[RENEW_WINDOW]; /* slots to finish on the blocking path */
  int nlater;
  int64_t deadline_us; /* while something is due from it */
} pnode;

typedef struct ticker {
  rlock_client *c;
  rlock__renew_tick *t;
  pnode **nodes;
  size_t n, cap;
  int64_t wait_cap_ms; /* two renewal periods */
} ticker;

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

static int add_todo(pnode *p, const rlock__renew_batch *b) {
  if (p->ntodo == p->captodo) {
    size_t cap = p->captodo ? p->captodo * 2 : 8;
    rlock__renew_batch *v = rlock__realloc(p->todo, cap * sizeof *v);
    if (v == NULL)
      return -1;
    p->todo = v;
    p->captodo = cap;
  }
  p->todo[p->ntodo++] = *b;
  return 0;
}

/* Take every batch of the tick and route it (a cluster's map is learned
 * first when unknown, as the blocking runner does). A batch that cannot
 * be routed fails now. */
static void route_all(ticker *k) {
  rlock__renew_batch b;
  while (rlock__renew_take(k->c, k->t, &b)) {
    rlock__node *node;
    int rc = rlock__topo_route(&k->c->topo, rlock__renew_key(k->t, &b), &node);
    pnode *p = rc == RLOCK_OK ? share_of(k, node) : NULL;
    if (rc == RLOCK_OK && (p == NULL || add_todo(p, &b) != 0))
      rc = rlock__err(RLOCK_ENOMEM, "out of memory");
    if (rc != RLOCK_OK)
      rlock__renew_settle(k->c, k->t, &b, rc, NULL, 0);
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
 * saying why); its connection is dropped, an opening abandoned. */
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
    rlock__renew_settle(k->c, k->t, &p->todo[p->next], rc, NULL, 0);
  }
  if (p->conn != NULL)
    p->conn->broken = 1;
  if (p->opening != NULL)
    rlock__pool_open_abandon(p->opening); /* a late connection is kept */
  p->opening = NULL;
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

/* Encode batches into p's connection while its window has room, then
 * write them in one go. */
static void fill(ticker *k, pnode *p) {
  int added = 0, i;
  while (p->next < p->ntodo && (i = free_slot(p)) >= 0) {
    flight *f = &p->slot[i];
    f->b = p->todo[p->next++];
    rlock__renew_build(k->c, k->t, &f->b, &f->call);
    rlock__req_init(&f->q, &f->call);
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
  p->conn->io_deadline_us = rlock__deadline_after_ms(p->conn->timeout_ms);
  int rc = rlock__conn_send_out(p->conn);
  p->conn->io_deadline_us = 0;
  if (rc != RLOCK_OK)
    fail_node(k, p, rc);
}

/* Life from p: its deadline moves on. */
static void alive(ticker *k, pnode *p) {
  int64_t ms = k->c->cfg.command_timeout_ms;
  p->deadline_us =
      rlock__deadline_after_ms(ms < k->wait_cap_ms ? ms : k->wait_cap_ms);
}

/* No connection to p could be had (refused, unreachable, not in time):
 * nothing of it was sent, so its batches go to the blocking path after
 * the poll, which tries again and refreshes the topology while the
 * connect plus the command timeout lasts, as a lone call does (a failover
 * may be why, and only a refresh finds the new master). */
static void no_conn(pnode *p) {
  if (p->opening != NULL)
    rlock__pool_open_abandon(p->opening); /* a late connection is kept */
  p->opening = NULL;
}

/* Borrow p's connection (or start opening one) and send its first
 * batches. */
static void node_start(ticker *k, pnode *p) {
  int rc = rlock__pool_get_idle(&p->node->pool, &p->conn);
  if (rc == RLOCK_OK && p->conn == NULL)
    rc = rlock__pool_open_async(&p->node->pool, &p->opening);
  if (rc != RLOCK_OK) {
    no_conn(p);
    return;
  }
  if (p->opening != NULL) {
    int64_t ms = k->c->cfg.connect_timeout_ms;
    p->deadline_us =
        rlock__deadline_after_ms(ms < k->wait_cap_ms ? ms : k->wait_cap_ms);
    return;
  }
  fill(k, p);
  alive(k, p);
}

/* The oldest batch in flight takes reply r. */
static void on_reply(ticker *k, pnode *p, rlock__reply *r) {
  int i = p->ring[p->head];
  flight *f = &p->slot[i];
  rlock__step step = rlock__req_feed(&f->q, p->conn->where, r);
  if (step == RLOCK__STEP_MORE)
    return;
  p->head = (p->head + 1) % RENEW_WINDOW;
  p->count--;
  if (step == RLOCK__STEP_DONE) {
    if (f->q.rc != RLOCK_OK) /* the error rule set the last error */
      rlock__renew_settle(k->c, k->t, &f->b, f->q.rc, NULL, 0);
    else
      rlock__renew_settle(k->c, k->t, &f->b, RLOCK_OK, f->q.reply, f->sent_us);
    slot_done(f);
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
  } else { /* MOVED, ASK, a refusal: after the poll, on the blocking path */
    p->later[p->nlater++] = i;
  }
}

/* p's descriptor polled readable. */
static void on_ready(ticker *k, pnode *p) {
  if (p->opening != NULL) {
    int rc;
    char msg[256];
    if (!rlock__pool_open_take(p->opening, &rc, &p->conn, msg, sizeof msg))
      return; /* not yet */
    p->opening = NULL;
    if (rc != RLOCK_OK) {
      no_conn(p);
      return;
    }
    fill(k, p);
    alive(k, p);
    return;
  }
  rlock__reply *r = NULL;
  int rc = rlock__conn_read_some(p->conn);
  while (rc == RLOCK_OK && p->count > 0 &&
         (rc = rlock__conn_take_reply(p->conn, &r)) == RLOCK_OK && r != NULL)
    on_reply(k, p, r);
  if (rc != RLOCK_OK) {
    fail_node(k, p, rc);
    return;
  }
  alive(k, p);
  fill(k, p);
}

/* ---- the tick ------------------------------------------------------------ */

static int due(const pnode *p) { return p->opening != NULL || p->count > 0; }

/* One poll over the nodes something is due from; then fail those whose
 * deadline passed. Returns 0 when nothing is due any more. */
static int poll_round(ticker *k, struct pollfd *fds, size_t *idx) {
  size_t m = 0;
  int64_t first = INT64_MAX;
  for (size_t i = 0; i < k->n; i++)
    if (due(k->nodes[i])) {
      pnode *p = k->nodes[i];
      int fd = p->opening ? rlock__pool_open_fd(p->opening) : p->conn->fd;
      fds[m] = (struct pollfd){.fd = fd, .events = POLLIN};
      idx[m++] = i;
      first = p->deadline_us < first ? p->deadline_us : first;
    }
  if (m == 0)
    return 0;
  int64_t left = rlock__ms_left(first);
  if (poll(fds, (nfds_t)m, left > 60000 ? 60000 : (int)left) > 0)
    for (size_t j = 0; j < m; j++)
      if (fds[j].revents != 0)
        on_ready(k, k->nodes[idx[j]]);
  int64_t now = rlock__now_us();
  for (size_t i = 0; i < k->n; i++) {
    pnode *p = k->nodes[i];
    if (p->opening != NULL && now >= p->deadline_us)
      no_conn(p);
    else if (due(p) && now >= p->deadline_us)
      fail_node(k, p,
                rlock__err(RLOCK_ETIMEOUT,
                           "redis %s: no answer in time (renewal)",
                           p->node->where));
  }
  return 1;
}

/* After the poll, on the blocking path: p's redirected batches (the
 * request goes on from its step), then any it never sent (no connection
 * could be had, or its window was held by the redirected ones). */
static void finish_node(ticker *k, pnode *p) {
  int64_t until = rlock__deadline_after_ms(k->c->cfg.connect_timeout_ms +
                                           k->c->cfg.command_timeout_ms);
  for (int j = 0; j < p->nlater; j++) {
    flight *f = &p->slot[p->later[j]];
    int rc = rlock__req_run(k->c, &f->q, until);
    rlock__renew_settle(k->c, k->t, &f->b, rc, f->q.reply, f->sent_us);
    slot_done(f);
  }
  for (; p->next < p->ntodo; p->next++) {
    rlock__call call;
    rlock__reply *r = NULL;
    rlock__renew_build(k->c, k->t, &p->todo[p->next], &call);
    int64_t sent_us = rlock__now_us();
    int rc = rlock__call_run(k->c, &call, &r);
    rlock__renew_settle(k->c, k->t, &p->todo[p->next], rc, r, sent_us);
    rlock__reply_free(r);
  }
}

/* Give the connections back, finish what the poll left, free the
 * shares. */
static void settle_all(ticker *k) {
  for (size_t i = 0; i < k->n; i++) {
    pnode *p = k->nodes[i];
    if (p->conn != NULL)
      rlock__pool_put(&p->node->pool, p->conn);
    p->conn = NULL;
  }
  for (size_t i = 0; i < k->n; i++) {
    finish_node(k, k->nodes[i]);
    free(k->nodes[i]->todo);
    free(k->nodes[i]);
  }
  free(k->nodes);
}

int64_t rlock__bg_renew(rlock_client *c) {
  rlock__renew_tick *t;
  int64_t next;
  if (rlock__renew_begin(c, &t, &next) != RLOCK_OK || t == NULL)
    return next;
  ticker k = {.c = c, .t = t, .wait_cap_ms = 2 * c->wd->period_us / 1000};
  route_all(&k);
  struct pollfd *fds = rlock__calloc(k.n ? k.n : 1, sizeof *fds);
  size_t *idx = rlock__calloc(k.n ? k.n : 1, sizeof *idx);
  for (size_t i = 0; i < k.n; i++) {
    if (fds == NULL || idx == NULL)
      fail_node(&k, k.nodes[i], rlock__err(RLOCK_ENOMEM, "out of memory"));
    else
      node_start(&k, k.nodes[i]);
  }
  while (fds != NULL && idx != NULL && poll_round(&k, fds, idx))
    ;
  free(fds);
  free(idx);
  settle_all(&k);
  rlock__renew_end(c, t);
  pthread_mutex_lock(&c->wd->mu);
  next = c->wd->armed ? c->wd->next_tick_us : INT64_MAX;
  pthread_mutex_unlock(&c->wd->mu);
  return next;
}
