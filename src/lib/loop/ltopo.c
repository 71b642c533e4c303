/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ltopo.c - the topology on the loop: refreshing it and counting a
 * master's replicas, never blocking the loop's thread.
 *
 * A refresh is net/refresh.c's conversation (the same questions and
 * answers as the blocking driver's), each question carried by a request
 * on the loop: to a node on its command connection, to a sentinel on a
 * connection of its own. One runs at a time; requests whose key no node
 * serves yet wait for it (parked) and are routed again when it ends.
 *
 * A lock write (call.sync) goes out with WAIT behind it where its master
 * has replicas (net/topo.c's count, asked with INFO replication at most
 * every 30 s per node); while the count is being asked, writes for that
 * node wait behind the INFO on the same connection's queue. An INFO sent
 * and not answered in time fails them with its error (net/route.c's
 * count ends its call so too).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "common.h"
#include "loop.h"
#include "refresh.h"

/* ---- refresh ------------------------------------------------------------ */

static void ask_next(rlock_client *c);

static void unpark_all(rlock_client *c, int rc) {
  rlock__loop *lp = c->loop;
  rlock__llist parked = lp->parked;
  lp->parked = (rlock__llist){0};
  rlock__saved_error why;
  rlock__error_save(&why);
  rlock__lreq *r;
  while (!lp->doomed && (r = rlock__lreq_at(parked.first)) != NULL) {
    rlock__llist_del(&parked, &r->at);
    rlock__error_restore(&why);
    rlock__lreq_unparked(c, r, rc);
  }
}

static void refresh_over(rlock_client *c) {
  rlock__loop *lp = c->loop;
  lp->refreshing = 0;
  int rc = lp->refresh.rc;
  if (rc != RLOCK_OK)
    rlock__obs_log(&c->obs, RLOCK_LOG_WARN, "loop: topology refresh: %s",
                   rlock_error_last()->message);
  if (lp->master_changed) {
    lp->master_changed = 0;
    rlock__lsub_master_changed(c);
  }
  unpark_all(c, rc);
}

static void answered(rlock_client *c, rlock__lreq *r) {
  rlock__loop *lp = c->loop;
  rlock__reply *reply;
  int rc = rlock__lreq_take(r, &reply);
  if (lp->closing) {
    rlock__reply_free(reply);
    lp->refreshing = 0;
    return;
  }
  rlock__refresh_feed(&c->topo, &lp->refresh, rc,
                      rc == RLOCK_OK ? reply : NULL);
  if (rc != RLOCK_OK)
    rlock__reply_free(reply);
  ask_next(c);
}

/* An error reply is an answer here (refresh.c reads it), not a failure. */
static void build_question(rlock__lreq *r, const rlock__refresh *f) {
  rlock__call_cmd(&r->call, f->argv[0]);
  for (int i = 1; i < f->argc; i++)
    rlock__call_arg(&r->call, f->argv[i]);
  rlock__req_init(&r->q, &r->call);
  r->done = answered;
}

static void ask_next(rlock_client *c) {
  rlock__loop *lp = c->loop;
  rlock__refresh *f = &lp->refresh;
  if (!rlock__refresh_next(&c->topo, f)) {
    refresh_over(c);
    return;
  }
  rlock__lreq *r = &lp->refresh_req;
  build_question(r, f);
  rlock__lconn *k;
  if (f->node != NULL) {
    rlock__lnode *ln = rlock__lnode_of(c, f->node);
    if (ln == NULL) {
      r->q.rc = RLOCK_ENOMEM;
      answered(c, r);
      return;
    }
    k = &ln->cmd;
  } else { /* a sentinel: a fresh connection to each one asked */
    k = &lp->sentinel;
    rlock__lconn_close(c, k); /* answered: nothing in flight on it */
    rlock__lconn_destroy(k);
    rlock__lconn_init(k, f->ep, NULL);
  }
  r->until_us = rlock__deadline_after_ms(c->cfg.connect_timeout_ms +
                                         c->cfg.command_timeout_ms);
  r->node = f->node;
  rlock__lreq_queue(c, k, r);
}

void rlock__ltopo_refresh(rlock_client *c, int force) {
  rlock__loop *lp = c->loop;
  if (c->topo.target.kind == RLOCK__TOPO_SINGLE || lp->refreshing ||
      lp->closing)
    return;
  int64_t now = rlock__now_us();
  if (!force && now - lp->refreshed_us < RLOCK__TOPO_REFRESH_MS * 1000)
    return;
  lp->refreshing = 1;
  lp->refreshed_us = now;
  rlock__saved_error saved;
  rlock__error_save(&saved);
  rlock__refresh_start(&c->topo, &lp->refresh);
  rlock__error_restore(&saved);
  ask_next(c);
}

void rlock__ltopo_park(rlock_client *c, rlock__lreq *r) {
  rlock__loop *lp = c->loop;
  if (c->topo.target.kind == RLOCK__TOPO_SINGLE) { /* cannot happen */
    rlock__lreq_unparked(c, r, RLOCK_OK);
    return;
  }
  rlock__llist_add(&lp->parked, &r->at);
  rlock__ltopo_refresh(c, 1);
}

void rlock__ltopo_master_changed(void *arg) {
  rlock_client *c = arg;
  c->loop->master_changed = 1; /* acted on when the refresh is over */
}

void rlock__ltopo_destroy(rlock_client *c) {
  unpark_all(c, rlock__err(RLOCK_ECLOSED, "client freed"));
}

/* ---- replicas ----------------------------------------------------------- */

static rlock__lnode *of_info(rlock__lreq *r) {
  return (rlock__lnode *)((char *)r - offsetof(rlock__lnode, info));
}

static void queue_write(rlock_client *c, rlock__lnode *ln, rlock__lreq *r,
                        int replicas) {
  r->q.wait_n = replicas;
  r->q.wait_ms = replicas > 0 ? c->cfg.replica_sync_timeout_ms : 0;
  rlock__lreq_queue(c, &ln->cmd, r);
}

/* Whether the INFO's failure ends the writes behind it, as the blocking
 * driver's count (net/route.c) ends its call: sent and not answered in
 * time (the writes' own answers would not come either: sending them on a
 * new connection only costs a reconnect, and a "cannot connect" once
 * their bound passes on it), or a failure that is final. Any other
 * failure (the connection closed or refused, a connect timeout: a
 * failover may be under way) counts no replica and lets them go on. */
static int info_fails_writes(const rlock__lreq *r, int rc) {
  int unanswered =
      (rc == RLOCK_ETIMEOUT || rc == RLOCK_ECANCELED) && r->call.in_flight;
  if (unanswered && rc == RLOCK_ETIMEOUT)
    rlock__error_final();
  return unanswered || (rc != RLOCK_OK && rlock__error_is_final());
}

/* A write that waited for the INFO fails as it would have (nothing of it
 * was sent), with the INFO's error. */
static void fail_write(rlock_client *c, rlock__lreq *w, int rc,
                       const rlock__saved_error *why) {
  rlock__error_restore(why);
  w->q.rc = rc;
  w->q.reply = NULL;
  w->call.in_flight = 0;
  w->call.transient = 0;
  rlock__lreq_failed(c, w);
}

static void info_done(rlock_client *c, rlock__lreq *r) {
  rlock__lnode *ln = of_info(r);
  rlock__reply *reply;
  int rc = rlock__lreq_take(r, &reply);
  int stop = info_fails_writes(r, rc);
  rlock__saved_error why;
  rlock__error_save(&why);
  int n = stop ? 0
               : rlock__node_replicas_learned(ln->node,
                                              rc == RLOCK_OK ? reply : NULL);
  rlock__reply_free(reply);
  ln->info_busy = 0;
  rlock__llist await = ln->await;
  ln->await = (rlock__llist){0};
  rlock__lreq *w;
  while (!c->loop->doomed && (w = rlock__lreq_at(await.first)) != NULL) {
    rlock__llist_del(&await, &w->at);
    if (c->loop->closing) {
      w->q.rc = rlock__err(RLOCK_ECLOSED, "client freed");
      w->done(c, w);
    } else if (stop) {
      fail_write(c, w, rc, &why);
    } else {
      queue_write(c, ln, w, n);
    }
  }
}

void rlock__lreplicas_send(rlock_client *c, rlock__lnode *ln, rlock__lreq *r) {
  int n = r->call.sync && c->cfg.sync_replicas
              ? rlock__node_replicas_known(ln->node)
              : 0;
  if (n >= 0 && ln->await.first == NULL) {
    queue_write(c, ln, r, n);
    return;
  }
  rlock__llist_add(&ln->await, &r->at); /* behind the INFO under way */
  rlock__lreq *q = &ln->info;
  /* The INFO is answered no later than the earliest waiter needs. */
  if (!ln->info_busy)
    q->bound_us = r->bound_us;
  else if (r->bound_us != 0 && (q->bound_us == 0 || r->bound_us < q->bound_us))
    q->bound_us = r->bound_us;
  if (ln->info_busy) {
    rlock__lconn_watch_bound(c, &ln->cmd, q->bound_us);
    return;
  }
  ln->info_busy = 1;
  rlock__call_cmd(&q->call, "INFO");
  rlock__call_arg(&q->call, "replication");
  rlock__req_init(&q->q, &q->call);
  q->done = info_done;
  q->node = ln->node;
  rlock__ltimer_init(&q->retry, NULL);
  rlock__lreq_queue(c, &ln->cmd, q);
}
