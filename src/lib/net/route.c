/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * route.c - the topology's blocking carrier: questions to a node asked on
 * the calling thread over its pool (the replica count, the cluster map),
 * a refresh run to its end there (refresh.c's steps carried out), and
 * routing by key that refreshes on a miss. topo.c keeps the node table
 * and slot map and what reads them without I/O (rlock__topo_lookup); the
 * loop carries refresh.c's steps itself (loop/ltopo.c).
 */
#include "topo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "common.h"
#include "obs.h"
#include "refresh.h"

int rlock__topo_node_call(rlock__node *node, int argc, const char **argv,
                          rlock__reply **out) {
  rlock__conn *conn;
  int rc = rlock__pool_get(&node->pool, &conn);
  if (rc != RLOCK_OK)
    return rc;
  rc = rlock__conn_call(conn, argc, argv, NULL, out);
  rlock__pool_put(&node->pool, conn);
  return rc;
}

int rlock__node_replicas(rlock__node *node) {
  int n = rlock__node_replicas_known(node);
  if (n >= 0)
    return n;
  const char *argv[2] = {"INFO", "replication"};
  rlock__reply *r = NULL;
  rlock__saved_error saved;
  rlock__error_save(&saved);
  rlock__conn *conn;
  int rc = rlock__pool_get(&node->pool, &conn);
  if (rc == RLOCK_ETIMEOUT || rc == RLOCK_ECANCELED)
    return -1; /* not connected in time: nothing was sent, so the call
                  fails as unsent, an outage its caller may ride out */
  if (rc == RLOCK_OK) {
    rc = rlock__conn_call(conn, 2, argv, NULL, &r);
    rlock__pool_put(&node->pool, conn);
  }
  if (rc == RLOCK_ETIMEOUT || rc == RLOCK_ECANCELED) {
    /* No answer: the call's own would not come either, a command timeout
     * later (or its caller gave up). Not an outage to ride out, as a
     * call that timed out once sent is not. */
    if (rc == RLOCK_ETIMEOUT)
      rlock__error_final();
    return -1;
  }
  if (rc != RLOCK_OK) {
    if (rlock__error_is_final())
      return -1; /* the call would meet it again, a connect timeout later */
    r = NULL;
  }
  rlock__error_restore(&saved);
  n = rlock__node_replicas_learned(node, r);
  rlock__reply_free(r);
  return n;
}

/* ---- the cluster map --------------------------------------------------- */

int rlock__cluster_map(rlock__node *node, rlock__range **out, size_t *n) {
  const char *argv[2] = {"CLUSTER", "SHARDS"};
  rlock__reply *r;
  int shards = 1, rc = rlock__topo_node_call(node, 2, argv, &r);
  if (rc == RLOCK_OK && r->type == RLOCK__R_ERROR) { /* before Redis 7 */
    rlock__reply_free(r);
    shards = 0;
    argv[1] = "SLOTS";
    rc = rlock__topo_node_call(node, 2, argv, &r);
  }
  if (rc != RLOCK_OK)
    return rc;
  rc = rlock__cluster_parse(node, shards, r, out, n);
  rlock__reply_free(r);
  return rc;
}

/* Carry one question of a refresh on the calling thread: over the node's
 * pool, or a connection of its own to a sentinel. */
static int carry(rlock__topo *t, const rlock__refresh *f, rlock__reply **r) {
  const char *argv[3] = {f->argv[0], f->argv[1], f->argv[2]};
  if (f->node != NULL)
    return rlock__topo_node_call(f->node, f->argc, argv, r);
  rlock__conn *conn;
  int rc = rlock__conn_open(&conn, f->ep, t->connect_ms, t->command_ms);
  if (rc == RLOCK_OK) {
    rc = rlock__conn_call(conn, f->argc, argv, NULL, r);
    rlock__conn_close(conn);
  }
  return rc;
}

/* A refresh (refresh.c's steps) run to its end on the calling thread. */
static int run_refresh(rlock__topo *t) {
  rlock__refresh f;
  rlock__refresh_start(t, &f);
  while (rlock__refresh_next(t, &f)) {
    rlock__reply *r = NULL;
    int rc = carry(t, &f, &r);
    rlock__refresh_feed(t, &f, rc, rc == RLOCK_OK ? r : NULL);
  }
  return f.rc;
}

/* Refresh now unless another thread is at it (then, with `wait`, wait for
 * it) or, without `force`, one ran within RLOCK__TOPO_REFRESH_MS. */
static int refresh(rlock__topo *t, int force, int wait) {
  if (!rlock__origin_ok(&t->origin)) /* a refresh may be stuck mid-way */
    return rlock__origin_refuse(&t->origin);
  pthread_mutex_lock(&t->mu);
  int64_t now = rlock__now_us();
  if (t->refreshing ||
      (!force && now - t->refreshed_us < RLOCK__TOPO_REFRESH_MS * 1000)) {
    while (wait && t->refreshing)
      pthread_cond_wait(&t->refreshed, &t->mu);
    pthread_mutex_unlock(&t->mu);
    return RLOCK_OK;
  }
  t->refreshing = 1;
  t->refreshed_us = now;
  pthread_mutex_unlock(&t->mu);
  rlock__saved_error saved;
  rlock__error_save(&saved);
  int rc = run_refresh(t);
  if (rc == RLOCK_OK)
    rlock__error_restore(&saved);
  pthread_mutex_lock(&t->mu);
  t->refreshing = 0;
  pthread_cond_broadcast(&t->refreshed);
  pthread_mutex_unlock(&t->mu);
  return rc;
}

void rlock__topo_refresh(rlock__topo *t) {
  if (t->target.kind != RLOCK__TOPO_SINGLE)
    refresh(t, 0, 0);
}

void rlock__topo_moved(rlock__topo *t, unsigned slot, rlock__node *node) {
  rlock__topo_set_slot(t, slot, node);
  rlock__topo_refresh(t);
}

int rlock__topo_sharded(rlock__topo *t) {
  int s = atomic_load(&t->sharded);
  if (s < 0 && t->refuse == NULL) { /* an event loop refreshes its own */
    rlock__node *any;
    rlock__saved_error saved;
    rlock__error_save(&saved);
    if (rlock__topo_route(t, NULL, &any) == RLOCK_OK &&
        atomic_load(&t->sharded) < 0)
      refresh(t, 0, 1); /* the probe failed: try again (rate-limited) */
    rlock__error_restore(&saved);
    s = atomic_load(&t->sharded);
  }
  return s > 0;
}

/* ---- routing ----------------------------------------------------------- */

int rlock__topo_route(rlock__topo *t, const char *key, rlock__node **out) {
  if ((*out = rlock__topo_lookup(t, key)) != NULL)
    return RLOCK_OK;
  int rc = refresh(t, 1, 1);
  if ((*out = rlock__topo_lookup(t, key)) != NULL)
    return RLOCK_OK;
  if (rc != RLOCK_OK)
    return rc;
  if (t->target.kind == RLOCK__TOPO_SENTINEL)
    return rlock__err(RLOCK_EIO, "sentinel: no master known for '%s'",
                      t->target.master);
  return rlock__err(RLOCK_EIO,
                    "cluster: no node serves slot %u of '%.64s' "
                    "(the cluster is down or resharding)",
                    rlock__slot(key, strlen(key)), key);
}
