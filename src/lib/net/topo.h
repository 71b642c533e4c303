/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo.h - the servers a client talks to and which one serves a key.
 *
 * A topology owns one node (address, connection pool) per server it has
 * met. Nodes are only ever added, never freed before the topology, so a
 * node pointer stays valid for the client's life and routing takes no
 * lock: the single server (or Sentinel's current master) and the cluster
 * slot map are atomic pointers to nodes.
 *
 *  - single: one node, the configured server.
 *  - cluster: a slot map (16384 slots -> node) read from CLUSTER SHARDS
 *    (CLUSTER SLOTS on servers without it) through any node that answers,
 *    seeds first. A MOVED redirection updates its slot at once and asks
 *    for a refresh of the whole map, which runs at most once per
 *    RLOCK__TOPO_REFRESH_MS: the map is refreshed after a failure, never
 *    on every call.
 *  - sentinel: the master the sentinels name, checked with ROLE; asked
 *    again after a failure or a +switch-master (sentinel.c, or the loop's
 *    loop/lsub.c).
 *
 * What to ask and what the answers mean is refresh.h's, for both drivers.
 * The blocking driver carries a refresh here (rlock__topo_route,
 * rlock__topo_refresh) over the nodes' pools; an event-loop client's
 * topology is never refreshed here (its pools refuse: rlock__topo_refuse):
 * the loop reads it with rlock__topo_lookup and carries refresh.h's steps
 * on its own connections (loop/ltopo.c).
 *
 * Thread-safety: every function may be called from any thread. A refresh
 * runs on the thread that asked for it, one at a time; others go on with
 * the map they have.
 */
#ifndef RLOCK_TOPO_H
#define RLOCK_TOPO_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "pool.h"
#include "reply.h"
#include "slot.h"
#include "target.h"

#define RLOCK__TOPO_REFRESH_MS 100

typedef struct rlock__node {
  rlock__endpoint ep;
  char where[128]; /* "host:port", for messages */
  rlock__pool pool;
  atomic_int replicas;         /* connected replicas (INFO), -1: not asked */
  _Atomic int64_t replicas_us; /* when it was asked (monotonic) */
} rlock__node;

/* How long a node's replica count is trusted before it is asked again:
 * a count of 0 for less (replicas may be attaching, as after a failover). */
#define RLOCK__REPLICAS_TTL_MS 30000
#define RLOCK__REPLICAS_NONE_TTL_MS 1000

typedef struct rlock__topo {
  rlock__target target;
  int64_t connect_ms, command_ms;
  int pool_size;
  pthread_mutex_t mu;       /* guards the node list and refresh bookkeeping */
  pthread_cond_t refreshed; /* broadcast when a refresh ends */
  rlock__node **nodes;
  size_t nnodes, cap;
  rlock__node *_Atomic primary; /* single server, Sentinel's master, or a
                                   cluster node for keyless commands */
  rlock__node *_Atomic *slots;  /* cluster: RLOCK__SLOTS owners, or NULL */
  int refreshing;
  int64_t refreshed_us; /* last refresh attempt (monotonic) */
  /* Called (any thread, no lock held) when Sentinel's master changes, so
   * the subscriber can follow it; set once before use. */
  void (*on_change)(void *arg);
  void *on_change_arg;
  atomic_int no_master;   /* Sentinel: every sentinel that answered the last
                             refresh knows no master of that name */
  atomic_int sharded;     /* SSUBSCRIBE/SPUBLISH: 1, classic: 0, -1 until a
                             cluster in auto mode has been probed */
  struct rlock__obs *obs; /* the client's counters and log, or NULL */
  const char *refuse;     /* every node's pool refuses blocking use with
                             this message (an event-loop client), or NULL */
  rlock__origin origin;   /* the process the topology belongs to: every
                             node's pool carries it, even one first met in a
                             fork()ed child (which must not use it) */
} rlock__topo;

/* Set up from `target` (copied). Does no I/O for a single server; a
 * cluster or Sentinel topology learns its map or master on first use. */
int rlock__topo_init(rlock__topo *t, const rlock__target *target, int pool_size,
                     int64_t connect_ms, int64_t command_ms,
                     struct rlock__obs *obs);

/* Close every node's connections and free. No connection may be
 * borrowed. */
void rlock__topo_destroy(rlock__topo *t);

/* Refuse blocking use of every node, met now or later, with `why` (a
 * static string): an event-loop client's topology. Before first use. */
void rlock__topo_refuse(rlock__topo *t, const char *why);

/* The node serving `key` (NULL: any node, for keyless commands). Learns
 * the map or master first when it has none. RLOCK_OK, or the error of the
 * discovery that failed (RLOCK_EIO when no node answered, ...). */
int rlock__topo_route(rlock__topo *t, const char *key, rlock__node **out);

/* The node serving `key` as the map stands, without I/O or waiting: NULL
 * when not known yet. (NULL key: the node for keyless commands.) */
rlock__node *rlock__topo_lookup(rlock__topo *t, const char *key);

/* The node at host:port, added if new (with the target's data
 * credentials). */
int rlock__topo_node(rlock__topo *t, const char *host, int port,
                     rlock__node **out);

/* The node at "host:port" (as a MOVED or ASK error names it), added if
 * new. */
int rlock__topo_node_at(rlock__topo *t, const char *addr, rlock__node **out);

/* MOVED: `slot` is now served by `node`. Also refreshes the whole map
 * when no refresh ran within RLOCK__TOPO_REFRESH_MS. */
void rlock__topo_moved(rlock__topo *t, unsigned slot, rlock__node *node);

/* The slot-map part of rlock__topo_moved, without the refresh (no I/O):
 * for a driver that refreshes in its own way. */
void rlock__topo_set_slot(rlock__topo *t, unsigned slot, rlock__node *node);

/* After a failure that may mean the topology changed (a node unreachable,
 * CLUSTERDOWN, READONLY): refresh unless one ran within
 * RLOCK__TOPO_REFRESH_MS or is running. */
void rlock__topo_refresh(rlock__topo *t);

/* Whether lock channels use sharded pub/sub (SSUBSCRIBE, SPUBLISH): a
 * cluster whose servers have it (PUBSUB SHARDNUMSUB answers), unless the
 * URL says pubsub=classic or pubsub=sharded; never for a single server or
 * Sentinel. In auto mode, learns the map first when it has not yet (a
 * failure then counts as classic, and the call that needed it fails on
 * routing anyway). */
int rlock__topo_sharded(rlock__topo *t);

/* How many replicas `node` has connected (its INFO replication's
 * connected_slaves), asked at most every RLOCK__REPLICAS_TTL_MS or after
 * rlock__node_replicas_stale(); 0 when it cannot be asked (the call that
 * needed it will find the node's trouble itself), but -1 with the last
 * error set when why is final (rlock__error_final: a TLS handshake a
 * plain-text port never answers), which the call would only meet again,
 * or when the node did not answer in time (RLOCK_ETIMEOUT: a hung server
 * would keep the call's own answer as long; never retried as an outage,
 * like a call that timed out after it was sent). A connect that timed out
 * (or was canceled) sent nothing: -1 with that error, not made final, so
 * the call fails as unsent and a waiting acquisition rides it out. */
int rlock__node_replicas(rlock__node *node);

/* The count as last asked, without I/O: -1 when it must be asked again
 * (never asked, or older than its TTL). */
int rlock__node_replicas_known(rlock__node *node);

/* Record the answer to INFO replication (NULL: it failed, taken as no
 * replica, asked again within RLOCK__REPLICAS_NONE_TTL_MS); returns the
 * count recorded. */
int rlock__node_replicas_learned(rlock__node *node, const rlock__reply *r);

/* A WAIT answered other than the count expected: ask again next time. */
void rlock__node_replicas_stale(rlock__node *node);

/* Run one command on `node` over a pooled connection: RLOCK_OK with *out
 * any reply (error replies included; caller frees), or a transport
 * failure. For discovery and probes, not for lock scripts. */
int rlock__topo_node_call(rlock__node *node, int argc, const char **argv,
                          rlock__reply **out);

#endif /* RLOCK_TOPO_H */
