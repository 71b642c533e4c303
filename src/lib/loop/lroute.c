/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lroute.c - where a loop client's request goes.
 *
 * To the node that serves the call's key, as the topology (net/topo.c)
 * knows it; when it does not know yet (a cluster's map not read, Sentinel
 * not asked), the request waits for a refresh (ltopo.c). After a reply
 * that leaves the connection (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, ...) or
 * a failure before anything was sent, rlock__req_next decides what
 * follows, as it does for the blocking driver; this file carries that out
 * with the loop's connections and timers instead of a sleeping thread.
 * A request that failed after being sent is never sent again.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "common.h"
#include "loop.h"

static rlock__lreq *of_retry(rlock__ltimer *t) {
  return (rlock__lreq *)((char *)t - offsetof(rlock__lreq, retry));
}

static void finish(rlock_client *c, rlock__lreq *r) {
  rlock__ltimer_stop(c, &r->retry);
  r->done(c, r);
}

static void fail_now(rlock_client *c, rlock__lreq *r, int rc) {
  r->q.rc = rc;
  r->q.reply = NULL;
  finish(c, r);
}

/* ---- the loop's nodes -------------------------------------------------- */

rlock__lnode *rlock__lnode_of(rlock_client *c, rlock__node *node) {
  rlock__loop *lp = c->loop;
  for (size_t i = 0; i < lp->nnodes; i++)
    if (lp->nodes[i]->node == node)
      return lp->nodes[i];
  rlock__lnode *ln = NULL;
  if (rlock__lgrow(&lp->nodes, &lp->capnodes, lp->nnodes, sizeof *lp->nodes,
                   4) != RLOCK_OK ||
      (ln = rlock__calloc(1, sizeof *ln)) == NULL) {
    rlock__err(RLOCK_ENOMEM, "out of memory");
    return NULL;
  }
  ln->node = node;
  rlock__lconn_init(&ln->cmd, &node->ep, ln);
  rlock__lconn_init(&ln->sub, &node->ep, ln);
  rlock__lsub_conn_init(&ln->sub);
  rlock__ltimer_init(&ln->info.retry, NULL);
  ln->info.direct = 1;
  lp->nodes[lp->nnodes++] = ln;
  return ln;
}

void rlock__lconn_each(rlock_client *c,
                       void (*fn)(rlock_client *c, rlock__lconn *k)) {
  rlock__loop *lp = c->loop;
  for (size_t i = 0; i < lp->nnodes && !lp->doomed; i++) {
    fn(c, &lp->nodes[i]->cmd);
    fn(c, &lp->nodes[i]->sub);
  }
  if (!lp->doomed)
    fn(c, &lp->sentinel);
  if (!lp->doomed)
    fn(c, &lp->swatch);
}

/* ---- routing ------------------------------------------------------------- */

static void route(rlock_client *c, rlock__lreq *r);

static void retry_due(rlock_client *c, rlock__ltimer *t) {
  route(c, of_retry(t));
}

/* Carry out rlock__req_next's decision. */
static void follow(rlock_client *c, rlock__lreq *r) {
  rlock__node *node;
  int64_t pause_ms;
  switch (rlock__req_next(&c->topo, &r->q, r->until_us, &r->attempt, &node,
                          &pause_ms)) {
  case RLOCK__NEXT_FAIL:
    /* a refusal, or a redirection not followed, ran nothing */
    r->call.transient = r->q.step == RLOCK__STEP_RETRY;
    if (r->q.step == RLOCK__STEP_RETRY && r->why[0] != '\0')
      rlock__err(r->q.rc, "%s", r->why);
    fail_now(c, r, r->q.rc);
    return;
  case RLOCK__NEXT_MOVED:
    rlock__ltopo_refresh(c, 0);
    /* fall through */
  case RLOCK__NEXT_GO:
    r->to = node;
    route(c, r);
    return;
  case RLOCK__NEXT_PAUSE:
    if (r->no_pause) { /* its caller tries again, in order, */
      r->call.transient = 1;
      rlock__ltopo_refresh(c, 0); /* on the map as it is by then */
      fail_now(c, r, r->q.rc);
      return;
    }
    snprintf(r->why, sizeof r->why, "%s", rlock_error_last()->message);
    rlock__ltopo_refresh(c, 0);
    if (rlock__ltimer_at(c, &r->retry, rlock__deadline_after_ms(pause_ms)) !=
        RLOCK_OK)
      fail_now(c, r, RLOCK_ENOMEM);
    return;
  default:
    route(c, r);
  }
}

/* Send on the connection of the node that serves it (or r->to). */
static void route(rlock_client *c, rlock__lreq *r) {
  if (c->loop->closing) {
    fail_now(c, r, rlock__err(RLOCK_ECLOSED, "client freed"));
    return;
  }
  rlock__node *node = r->to;
  r->to = NULL;
  if (node == NULL)
    node = rlock__topo_lookup(&c->topo, rlock__call_route_key(&r->call));
  if (node == NULL) {
    rlock__ltopo_park(c, r);
    return;
  }
  rlock__lnode *ln = rlock__lnode_of(c, node);
  if (ln == NULL) {
    fail_now(c, r, RLOCK_ENOMEM);
    return;
  }
  r->node = node;
  r->q.asking_reply = 0;
  r->q.wait_due = 0;
  rlock__lreplicas_send(c, ln, r);
}

void rlock__lreq_send(rlock_client *c, rlock__lreq *r,
                      void (*done)(rlock_client *c, rlock__lreq *r)) {
  rlock__req_init(&r->q, &r->call);
  r->done = done;
  int64_t floor = rlock__deadline_after_ms(c->cfg.connect_timeout_ms +
                                           c->cfg.command_timeout_ms);
  r->until_us = r->deadline_us > floor ? r->deadline_us : floor;
  r->deadline_us = 0;
  r->to = NULL;
  r->node = NULL;
  r->attempt = 0;
  r->why[0] = '\0';
  r->call.in_flight = 0;
  r->call.transient = 0;
  rlock__ltimer_init(&r->retry, retry_due);
  route(c, r);
}

void rlock__lreq_answered(rlock_client *c, rlock__lconn *k, rlock__lreq *r,
                          rlock__step step) {
  switch (step) {
  case RLOCK__STEP_DONE:
    r->call.replicas = r->q.wait_n;
    r->call.acked = r->q.acked;
    if (r->q.wait_n > 0 && r->q.acked != r->q.wait_n && r->node != NULL)
      rlock__node_replicas_stale(r->node); /* one left or came: ask again */
    finish(c, r);
    return;
  case RLOCK__STEP_RESEND: /* EVAL after NOSCRIPT: to the tail */
    rlock__lreq_queue(c, k, r);
    return;
  case RLOCK__STEP_MORE:
    rlock__reply_free(r->q.reply);
    r->q.reply = NULL;
    fail_now(c, r,
             rlock__err(RLOCK_EPROTO, "redis %s: more replies than asked for",
                        k->where));
    return;
  default: /* MOVED, ASK, RETRY */
    if (r->direct)
      finish(c, r); /* asked of this connection: q.rc says what it got */
    else
      follow(c, r);
  }
}

void rlock__lreq_failed(rlock_client *c, rlock__lreq *r) {
  /* A renewal batch is not retried here, but its caller's next try must
   * not meet the same dead node: a failover may be why (without this a
   * client doing nothing but renew never learned of one, and lost every
   * hold on the failed master once a lease went by unconfirmed). */
  if (r->no_pause && !c->loop->closing)
    rlock__ltopo_refresh(c, 0);
  if (!r->direct && !r->no_pause && !r->call.in_flight && !c->loop->closing &&
      rlock__req_retry_unsent(&c->topo, &r->q, r->q.rc, r->until_us)) {
    follow(c, r);
    return;
  }
  rlock__req_final_if_unknown_master(&c->topo, r->q.rc);
  finish(c, r);
}

void rlock__lreq_unparked(rlock_client *c, rlock__lreq *r, int rc) {
  const char *key = rlock__call_route_key(&r->call);
  if (rc == RLOCK_OK && rlock__topo_lookup(&c->topo, key) != NULL) {
    route(c, r);
    return;
  }
  if (rc == RLOCK_OK && c->topo.target.kind == RLOCK__TOPO_SENTINEL)
    rc = rlock__err(RLOCK_EIO, "sentinel: no master known for '%s'",
                    c->topo.target.master);
  else if (rc == RLOCK_OK && key == NULL)
    rc = rlock__err(RLOCK_EIO, "cluster: no node known");
  else if (rc == RLOCK_OK)
    rc = rlock__err(RLOCK_EIO,
                    "cluster: no node serves slot %u of '%.64s' (the cluster "
                    "is down or resharding)",
                    rlock__slot(key, strlen(key)), key);
  r->q.rc = rc;
  r->call.in_flight = 0;
  r->call.transient = 1; /* nothing ran */
  rlock__lreq_failed(c, r);
}
