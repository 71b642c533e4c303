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

/* Read the answer `r` that `node` gave to CLUSTER SHARDS (shards = 1) or
 * CLUSTER SLOTS (0) into *out (n ranges; free() it). An error reply is
 * RLOCK_ESERVER (saying so where the node is no cluster node), a
 * malformed map RLOCK_EPROTO. No I/O: refresh.c asks the question. */
int rlock__cluster_parse(const rlock__node *node, int shards,
                         const rlock__reply *r, rlock__range **out, size_t *n);

#endif /* RLOCK_CLUSTER_H */
