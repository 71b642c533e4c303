/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * refresh.h - learning the topology (a cluster's slot map, Sentinel's
 * master) as steps that either driver runs.
 *
 * A refresh is a short conversation: ask a node for the cluster's map
 * (CLUSTER SHARDS, CLUSTER SLOTS before Redis 7), then probe for sharded
 * pub/sub; or ask each sentinel for the master and check it with ROLE.
 * What to ask, whom, and what the answers mean is decided here, once; a
 * driver only carries the questions: the blocking driver on the calling
 * thread (topo.c, over pooled connections), the loop driver on its own
 * non-blocking connections (loop/ltopo.c). Nothing here does I/O.
 *
 *   rlock__refresh_start(t, &f);
 *   while (rlock__refresh_next(t, &f))      // ask f.argv of f.node or f.ep
 *     rlock__refresh_feed(t, &f, rc, reply);
 *   // f.rc: RLOCK_OK, or why no map or master could be learned
 */
#ifndef RLOCK_REFRESH_H
#define RLOCK_REFRESH_H

#include <stddef.h>

#include "reply.h"
#include "topo.h"

typedef struct rlock__refresh {
  int stage;             /* internal */
  size_t next;           /* the next known node, seed or sentinel to ask */
  size_t seed;           /* cluster: seeds tried once known nodes ran out */
  int answered, unknown; /* sentinel: sentinels that answered / knew no
                            such master */
  rlock__node *refused;  /* sentinel: named already, and not a master */
  char addr[300];        /* sentinel: the master it named */
  /* The question, valid after rlock__refresh_next() returned 1: ask
   * `argv` of `node`, or (when node is NULL) of the sentinel `ep`. */
  rlock__node *node;
  const rlock__endpoint *ep;
  int argc;
  const char *argv[3];
  int rc; /* the outcome, once rlock__refresh_next() returned 0 */
} rlock__refresh;

/* Begin a refresh of `t` (a cluster or Sentinel topology). */
void rlock__refresh_start(rlock__topo *t, rlock__refresh *f);

/* 1 when there is a question to ask (f->node or f->ep, f->argv); 0 when
 * the refresh is over, with f->rc RLOCK_OK (the map or the master is
 * installed) or a status with the last error set. */
int rlock__refresh_next(rlock__topo *t, rlock__refresh *f);

/* The answer to the last question: rc RLOCK_OK with `r` the reply (taken,
 * may be an error reply), or a transport failure (r NULL, the last error
 * set). */
void rlock__refresh_feed(rlock__topo *t, rlock__refresh *f, int rc,
                         rlock__reply *r);

#endif /* RLOCK_REFRESH_H */
