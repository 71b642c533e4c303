/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo.c - the topology's state: its nodes (each with its pool and the
 * replica count's cache), a cluster's slot map or Sentinel's master, and
 * what reads them without I/O. Asking nodes, refreshing and routing with
 * a refresh on a miss, on the calling thread, are route.c's; the loop
 * carries refresh.c's steps itself (loop/ltopo.c).
 */
#include "topo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "common.h"
#include "obs.h"
#include "sentinel.h"

/* ---- nodes ------------------------------------------------------------- */

static void node_free(rlock__node *n) {
  rlock__pool_destroy(&n->pool);
  rlock__endpoint_clear(&n->ep);
  free(n);
}

/* A new node for `ep` (taken over: cleared on failure too). */
static int node_new(rlock__topo *t, rlock__endpoint *ep, rlock__node **out) {
  rlock__node *n = rlock__calloc(1, sizeof *n);
  if (n == NULL) {
    rlock__endpoint_clear(ep);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  n->ep = *ep;
  memset(ep, 0, sizeof *ep);
  atomic_init(&n->replicas, -1);
  atomic_init(&n->replicas_us, 0);
  rlock__endpoint_str(&n->ep, n->where, sizeof n->where);
  int rc = rlock__pool_init(&n->pool, &n->ep, t->pool_size, t->connect_ms,
                            t->command_ms);
  if (rc != RLOCK_OK) {
    rlock__endpoint_clear(&n->ep);
    free(n);
    return rc;
  }
  n->pool.origin = t->origin;
  n->pool.obs = t->obs;
  n->pool.refuse = t->refuse;
  *out = n;
  return RLOCK_OK;
}

/* Append, locked. */
static int node_add(rlock__topo *t, rlock__node *n) {
  if (t->nnodes == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 8;
    rlock__node **v = rlock__realloc(t->nodes, cap * sizeof *v);
    if (v == NULL)
      return rlock__err(RLOCK_ENOMEM, "out of memory");
    t->nodes = v;
    t->cap = cap;
  }
  t->nodes[t->nnodes++] = n;
  return RLOCK_OK;
}

/* Split "host:port" (the last ':' separates; "[v6]:port" too). */
static int split_addr(const char *addr, char *host, size_t size, int *port) {
  const char *colon = strrchr(addr, ':');
  if (colon == NULL || colon == addr)
    return -1;
  const char *h = addr, *he = colon;
  if (*h == '[' && he[-1] == ']')
    h++, he--;
  char *end;
  long p = strtol(colon + 1, &end, 10);
  if (*end != '\0' || p < 1 || p > 65535 || (size_t)(he - h) >= size)
    return -1;
  memcpy(host, h, (size_t)(he - h));
  host[he - h] = '\0';
  *port = (int)p;
  return 0;
}

int rlock__topo_node_at(rlock__topo *t, const char *addr, rlock__node **out) {
  char host[256];
  int port;
  if (split_addr(addr, host, sizeof host, &port) != 0)
    return rlock__err(RLOCK_EPROTO, "bad node address '%.64s'", addr);
  return rlock__topo_node(t, host, port, out);
}

int rlock__topo_node(rlock__topo *t, const char *host, int port,
                     rlock__node **out) {
  pthread_mutex_lock(&t->mu);
  for (size_t i = 0; i < t->nnodes; i++)
    if (t->nodes[i]->ep.port == port && t->nodes[i]->ep.host != NULL &&
        strcmp(t->nodes[i]->ep.host, host) == 0) {
      *out = t->nodes[i];
      pthread_mutex_unlock(&t->mu);
      return RLOCK_OK;
    }
  rlock__endpoint ep;
  int rc = rlock__target_node(&t->target, host, port, &ep);
  if (rc == RLOCK_OK)
    rc = node_new(t, &ep, out);
  if (rc == RLOCK_OK && (rc = node_add(t, *out)) != RLOCK_OK)
    node_free(*out);
  pthread_mutex_unlock(&t->mu);
  return rc;
}

/* connected_slaves:N in an INFO reply, or -1. */
static int parse_replicas(const rlock__reply *r) {
  const char *p =
      r->type == RLOCK__R_STR ? strstr(r->str, "connected_slaves:") : NULL;
  return p ? atoi(p + strlen("connected_slaves:")) : -1;
}

int rlock__node_replicas_known(rlock__node *node) {
  int n = atomic_load(&node->replicas);
  /* No replica yet is asked again soon: right after a failover the new
   * master's replicas are still attaching, and writes it does not wait
   * for then are lost at the next switch. */
  int64_t ttl_ms =
      n == 0 ? RLOCK__REPLICAS_NONE_TTL_MS : RLOCK__REPLICAS_TTL_MS;
  if (n >= 0 &&
      rlock__now_us() - atomic_load(&node->replicas_us) < ttl_ms * 1000)
    return n;
  return -1;
}

int rlock__node_replicas_learned(rlock__node *node, const rlock__reply *r) {
  int n = r != NULL ? parse_replicas(r) : -1;
  n = n < 0 ? 0 : n;
  atomic_store(&node->replicas, n);
  atomic_store(&node->replicas_us, rlock__now_us());
  return n;
}

void rlock__node_replicas_stale(rlock__node *node) {
  atomic_store(&node->replicas_us, 0);
}

/* ---- lifecycle --------------------------------------------------------- */

void rlock__topo_refuse(rlock__topo *t, const char *why) {
  pthread_mutex_lock(&t->mu);
  t->refuse = why;
  for (size_t i = 0; i < t->nnodes; i++)
    t->nodes[i]->pool.refuse = why;
  pthread_mutex_unlock(&t->mu);
}

int rlock__topo_init(rlock__topo *t, const rlock__target *target, int pool_size,
                     int64_t connect_ms, int64_t command_ms,
                     struct rlock__obs *obs) {
  memset(t, 0, sizeof *t);
  t->obs = obs;
  rlock__origin_here(&t->origin);
  t->pool_size = pool_size;
  t->connect_ms = connect_ms;
  t->command_ms = command_ms;
  int rc = rlock__target_copy(&t->target, target);
  if (rc != RLOCK_OK)
    return rc;
  pthread_mutex_init(&t->mu, NULL);
  pthread_cond_init(&t->refreshed, NULL);
  atomic_init(&t->no_master, 0);
  atomic_init(&t->sharded, target->kind != RLOCK__TOPO_CLUSTER ? 0
                           : target->pubsub == RLOCK__PUBSUB_AUTO
                               ? -1
                               : target->pubsub == RLOCK__PUBSUB_SHARDED);
  if (target->kind == RLOCK__TOPO_CLUSTER &&
      (t->slots = rlock__calloc(RLOCK__SLOTS, sizeof *t->slots)) == NULL)
    rc = rlock__err(RLOCK_ENOMEM, "out of memory");
  if (rc == RLOCK_OK && target->kind == RLOCK__TOPO_SINGLE) {
    rlock__endpoint ep;
    rlock__node *n;
    rc = rlock__endpoint_copy(&ep, &target->addrs[0]);
    if (rc == RLOCK_OK && (rc = node_new(t, &ep, &n)) == RLOCK_OK &&
        (rc = node_add(t, n)) != RLOCK_OK)
      node_free(n);
    if (rc == RLOCK_OK)
      atomic_store(&t->primary, n);
  }
  if (rc != RLOCK_OK)
    rlock__topo_destroy(t);
  return rc;
}

void rlock__topo_destroy(rlock__topo *t) {
  for (size_t i = 0; i < t->nnodes; i++)
    node_free(t->nodes[i]);
  free(t->nodes);
  free((void *)t->slots);
  rlock__target_clear(&t->target);
  pthread_mutex_destroy(&t->mu);
  pthread_cond_destroy(&t->refreshed);
  memset(t, 0, sizeof *t);
}

void rlock__topo_set_slot(rlock__topo *t, unsigned slot, rlock__node *node) {
  if (t->slots != NULL && slot < RLOCK__SLOTS &&
      atomic_exchange(&t->slots[slot], node) != node) {
    rlock__obs_count(t->obs, RLOCK__STAT_TOPOLOGY_CHANGES);
    rlock__obs_log(t->obs, RLOCK_LOG_INFO, "cluster: slot %u moved to %s", slot,
                   node->where);
  }
}

/* ---- routing without I/O (route.c routes and refreshes) ---------------- */

rlock__node *rlock__topo_lookup(rlock__topo *t, const char *key) {
  if (key == NULL || t->slots == NULL)
    return atomic_load(&t->primary);
  return atomic_load(&t->slots[rlock__slot(key, strlen(key))]);
}
