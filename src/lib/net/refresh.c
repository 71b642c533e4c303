/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * refresh.c - the questions a topology refresh asks, and what their
 * answers do to the topology (refresh.h). No I/O here.
 */
#include "refresh.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "common.h"
#include "obs.h"

enum {
  ST_SHARDS, /* asked a node CLUSTER SHARDS */
  ST_SLOTS,  /* asked it CLUSTER SLOTS (SHARDS unknown: before Redis 7) */
  ST_PROBE,  /* asked it PUBSUB SHARDNUMSUB (Redisson's AUTO rule) */
  ST_ASK,    /* asked a sentinel for the master */
  ST_ROLE,   /* asked the master it named for its ROLE */
  ST_DONE
};

static void ask(rlock__refresh *f, int stage, int argc, const char *a0,
                const char *a1, const char *a2) {
  f->stage = stage;
  f->argc = argc;
  f->argv[0] = a0;
  f->argv[1] = a1;
  f->argv[2] = a2;
}

static void finish(rlock__refresh *f, int rc) {
  f->stage = ST_DONE;
  f->rc = rc;
  f->node = NULL;
  f->ep = NULL;
}

/* ---- a cluster's map ---------------------------------------------------- */

/* Install a map read from the cluster: every slot it names points at its
 * master's node; slots it does not name keep their owner. */
static int apply_map(rlock__topo *t, const rlock__range *rs, size_t n) {
  rlock__node *first = NULL;
  unsigned moved = 0; /* slots that had another owner (not: none yet) */
  for (size_t i = 0; i < n; i++) {
    rlock__node *node;
    int rc = rlock__topo_node(t, rs[i].host, rs[i].port, &node);
    if (rc != RLOCK_OK)
      return rc;
    for (unsigned s = rs[i].from; s <= rs[i].to; s++) {
      rlock__node *was = atomic_exchange(&t->slots[s], node);
      moved += was != NULL && was != node;
    }
    if (first == NULL)
      first = node;
  }
  if (first != NULL)
    atomic_store(&t->primary, first);
  if (moved > 0) {
    rlock__obs_count(t->obs, RLOCK__STAT_TOPOLOGY_CHANGES);
    rlock__obs_log(t->obs, RLOCK_LOG_INFO,
                   "cluster: %u slot%s now served by another node", moved,
                   moved == 1 ? " is" : "s are");
  }
  return RLOCK_OK;
}

/* Ask the next node for the map: known nodes first (they are the live
 * cluster), then the seeds. */
static void next_node(rlock__topo *t, rlock__refresh *f) {
  rlock__node *node = NULL;
  pthread_mutex_lock(&t->mu);
  if (f->next < t->nnodes)
    node = t->nodes[f->next];
  pthread_mutex_unlock(&t->mu);
  f->next++;
  if (node == NULL) {
    if (f->seed == t->target.n) {
      finish(f, f->rc);
      return;
    }
    const rlock__endpoint *ep = &t->target.addrs[f->seed++];
    int rc = rlock__topo_node(t, ep->host, ep->port, &node);
    if (rc != RLOCK_OK) {
      finish(f, rc);
      return;
    }
  }
  f->node = node;
  ask(f, ST_SHARDS, 2, "CLUSTER", "SHARDS", NULL);
}

static void fed_map(rlock__topo *t, rlock__refresh *f, const rlock__reply *r) {
  rlock__range *rs;
  size_t n;
  int rc = rlock__cluster_parse(f->node, f->stage == ST_SHARDS, r, &rs, &n);
  if (rc == RLOCK_OK) {
    rc = apply_map(t, rs, n);
    free(rs);
    if (rc == RLOCK_OK && atomic_load(&t->sharded) < 0) {
      ask(f, ST_PROBE, 2, "PUBSUB", "SHARDNUMSUB", NULL);
      return;
    }
    finish(f, rc);
    return;
  }
  f->rc = rc;
  if (rc == RLOCK_ESERVER || rc == RLOCK_EAUTH || rc == RLOCK_ENOMEM)
    finish(f, rc); /* another node would say the same */
  else
    next_node(t, f);
}

static void feed_cluster(rlock__topo *t, rlock__refresh *f, int rc,
                         const rlock__reply *r) {
  if (f->stage == ST_PROBE) {
    /* Not answered: -1, asked again at the next refresh. */
    atomic_store(&t->sharded, rc != RLOCK_OK ? -1 : r->type != RLOCK__R_ERROR);
    finish(f, RLOCK_OK);
    return;
  }
  if (rc != RLOCK_OK) {
    f->rc = rc;
    if (rc == RLOCK_EAUTH || rc == RLOCK_ENOMEM)
      finish(f, rc);
    else
      next_node(t, f);
    return;
  }
  if (f->stage == ST_SHARDS && r->type == RLOCK__R_ERROR) {
    ask(f, ST_SLOTS, 2, "CLUSTER", "SLOTS", NULL); /* before Redis 7 */
    return;
  }
  fed_map(t, f, r);
}

/* ---- Sentinel's master -------------------------------------------------- */

static void next_sentinel(rlock__topo *t, rlock__refresh *f) {
  if (f->next >= t->target.n) {
    finish(f, f->rc);
    return;
  }
  f->node = NULL;
  f->ep = &t->target.addrs[f->next++];
  ask(f, ST_ASK, 3, "SENTINEL", "get-master-addr-by-name", t->target.master);
}

/* The sentinel's answer: the master's "host:port" into f->addr. */
static int parse_master(rlock__topo *t, rlock__refresh *f,
                        const rlock__reply *r, int *unknown) {
  char where[128];
  rlock__endpoint_str(f->ep, where, sizeof where);
  if (r->type == RLOCK__R_ERROR) /* NOAUTH, WRONGPASS: RLOCK_EAUTH */
    return rlock__err(rlock__error_status(where, r), "sentinel %s: %s", where,
                      r->str);
  if (r->type != RLOCK__R_ARRAY || r->n != 2 ||
      r->elem[0]->type != RLOCK__R_STR || r->elem[1]->type != RLOCK__R_STR) {
    *unknown = 1;
    return rlock__err(RLOCK_EIO, "sentinel %s knows no master named '%s'",
                      where, t->target.master);
  }
  snprintf(f->addr, sizeof f->addr, "%s:%s", r->elem[0]->str, r->elem[1]->str);
  return RLOCK_OK;
}

static void fed_master(rlock__topo *t, rlock__refresh *f, int rc,
                       const rlock__reply *r) {
  int unknown = 0;
  if (rc == RLOCK_OK)
    rc = parse_master(t, f, r, &unknown);
  f->answered += rc == RLOCK_OK || unknown;
  f->unknown += unknown;
  /* A name every sentinel that answered does not know is a mistake in
   * the URL, not an outage to ride out (cmd.c does not retry it). */
  atomic_store(&t->no_master, f->answered > 0 && f->unknown == f->answered);
  rlock__node *node = NULL;
  if (rc == RLOCK_OK)
    rc = rlock__topo_node_at(t, f->addr, &node);
  /* a hung master costs one timeout, not one per sentinel */
  if (rc != RLOCK_OK || node == f->refused) {
    f->rc = rc != RLOCK_OK ? rc : f->rc;
    next_sentinel(t, f);
    return;
  }
  f->node = node;
  f->ep = NULL;
  ask(f, ST_ROLE, 1, "ROLE", NULL, NULL);
}

/* The master is confirmed: route to it from now on. */
static void switch_master(rlock__topo *t, rlock__node *node) {
  rlock__node *was = atomic_exchange(&t->primary, node);
  if (was != node && was != NULL) {
    rlock__obs_count(t->obs, RLOCK__STAT_TOPOLOGY_CHANGES);
    rlock__obs_log(t->obs, RLOCK_LOG_INFO,
                   "sentinel: master '%s' is now %s (was %s)", t->target.master,
                   node->where, was->where);
  }
  if (was != node && t->on_change != NULL)
    t->on_change(t->on_change_arg);
}

static void fed_role(rlock__topo *t, rlock__refresh *f, int rc,
                     const rlock__reply *r) {
  if (rc == RLOCK_OK && r->type == RLOCK__R_ERROR)
    rc = rlock__error_status(f->node->where, r);
  else if (rc == RLOCK_OK && (r->type != RLOCK__R_ARRAY || r->n == 0 ||
                              !rlock__reply_is(r->elem[0], "master")))
    rc = rlock__err(RLOCK_EIO,
                    "sentinel named %s as master, but it is not one (yet)",
                    f->node->where);
  if (rc != RLOCK_OK) {
    f->refused = f->node;
    f->rc = rc;
    next_sentinel(t, f);
    return;
  }
  switch_master(t, f->node);
  finish(f, RLOCK_OK);
}

/* ---- the steps ------------------------------------------------------------
 */

void rlock__refresh_start(rlock__topo *t, rlock__refresh *f) {
  memset(f, 0, sizeof *f);
  int cluster = t->target.kind == RLOCK__TOPO_CLUSTER;
  f->rc = rlock__err(RLOCK_EIO, cluster ? "cluster: no seed node configured"
                                        : "sentinel: no sentinel configured");
  if (cluster)
    next_node(t, f);
  else
    next_sentinel(t, f);
}

int rlock__refresh_next(rlock__topo *t, rlock__refresh *f) {
  (void)t;
  return f->stage != ST_DONE;
}

void rlock__refresh_feed(rlock__topo *t, rlock__refresh *f, int rc,
                         rlock__reply *r) {
  if (f->stage == ST_ASK)
    fed_master(t, f, rc, r);
  else if (f->stage == ST_ROLE)
    fed_role(t, f, rc, r);
  else if (f->stage != ST_DONE)
    feed_cluster(t, f, rc, r);
  rlock__reply_free(r);
}
