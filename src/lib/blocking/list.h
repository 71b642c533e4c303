/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * list.h - what the listings share (list.c: locks and counts; listsync.c:
 * semaphores and latches by their channels and lease sets): the servers
 * to walk and one server's SCAN walk in small steps.
 */
#ifndef RLOCK_LIST_H
#define RLOCK_LIST_H

#include <stddef.h>

#include "client_int.h"
#include "cmd.h"
#include "reply.h"
#include "topo.h"

/* The checks every listing makes (`what` names it): client and callback
 * (no_fn) given, the pattern (NULL becomes "*") not empty nor over
 * RLOCK_MAX_NAME_LEN, not a loop client. RLOCK_OK or RLOCK_EINVAL. */
int rlock__list_args(const char *what, rlock_client *c, int no_fn,
                     const char **pattern);

/* The servers that hold keys: a cluster's every master (every slot must
 * have one that is up), else the one server or Sentinel's master. *out is
 * malloc'ed (*n of them). */
int rlock__list_nodes(rlock_client *c, rlock__node ***out, size_t *n);

/* Walk `node`'s keys with SCAN cursor MATCH `match` COUNT 100 TYPE
 * `type`, handing each step's keys to step() (its status ends the walk),
 * until the cursor is back at 0 or *stopped. */
int rlock__list_scan(rlock__node *node, const char *match, const char *type,
                     int (*step)(void *arg, const rlock__reply *keys),
                     void *arg, const int *stopped);

/* Run a listing script over one slot's batch of n names: `call` (a
 * script call) has its keys; each name's lease set, Redisson's
 * "{name}:timeout" (name_at(items, i) gives name i), is appended as an
 * argument, the call run and its reply checked to be an array of n.
 * RLOCK_OK with *out set (the caller frees it), else a status with *out
 * NULL and the call cleared. `script` names it in messages. */
int rlock__list_batch(rlock_client *c, rlock__call *call, const void *items,
                      size_t n, const char *(*name_at)(const void *, size_t),
                      const char *script, rlock__reply **out);

#endif /* RLOCK_LIST_H */
