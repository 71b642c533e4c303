/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cluster.h - a Redis Cluster's slot map, read from one node.
 */
#ifndef RLOCK_CLUSTER_H
#define RLOCK_CLUSTER_H

#include <stddef.h>

#include "topo.h"

/* Slots [from, to] are served by the master at host:port. */
typedef struct rlock__range {
  unsigned from, to;
  char host[256];
  int port;
} rlock__range;

/* Read the map through `node`: CLUSTER SHARDS, or CLUSTER SLOTS where the
 * server lacks it. Only masters that are online count (a shard whose
 * master failed is left out, so its slots stay unknown until its replica
 * takes over). *out (malloc'ed, *n ranges) on RLOCK_OK; RLOCK_ESERVER for
 * a server without cluster mode, RLOCK_EPROTO for a malformed map, or the
 * transport's error. */
int rlock__cluster_map(rlock__node *node, rlock__range **out, size_t *n);

#endif /* RLOCK_CLUSTER_H */
