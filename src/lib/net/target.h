/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target.h - what a client connects to, parsed from its URL: one server,
 * a Redis Cluster (seed nodes), or a master found through Sentinel.
 *
 *   redis://[[user]:password@]host[:port][/db][?TLS]
 *   unix://[[user]:password@]/path[?db=N]
 *   redis-cluster://[[user]:password@]host:port[,host:port...][?pubsub=MODE]
 *   redis-sentinel://[[user]:password@]host[:port][,host[:port]...][/db]
 *       [?sentinel_user=U&sentinel_password=P]#MASTER
 *
 * rediss://, rediss-cluster:// and rediss-sentinel:// speak TLS to the
 * data nodes (and, unless sentinel_tls=no, to the sentinels); their TLS
 * parameters: tls_ca, tls_ca_dir, tls_cert, tls_key, tls_server_name,
 * tls_insecure=yes|no, and sentinel_tls=yes|no (Sentinel only).
 *
 * Credentials before '@' are the data nodes' (every cluster node; the
 * master and replicas behind Sentinel); the sentinels' own come as URL
 * parameters. Sentinels default to port 26379, other servers to 6379.
 * pubsub (cluster only) is auto (sharded pub/sub where the servers have
 * it, as Redisson's AUTO), classic or sharded.
 */
#ifndef RLOCK_TARGET_H
#define RLOCK_TARGET_H

#include <stddef.h>

#include "endpoint.h"
#include "tls.h"

typedef enum rlock__topo_kind {
  RLOCK__TOPO_SINGLE,
  RLOCK__TOPO_CLUSTER,
  RLOCK__TOPO_SENTINEL
} rlock__topo_kind;

typedef enum rlock__pubsub_mode {
  RLOCK__PUBSUB_AUTO,
  RLOCK__PUBSUB_CLASSIC,
  RLOCK__PUBSUB_SHARDED
} rlock__pubsub_mode;

/* At most this many hosts in one URL. */
#define RLOCK__TARGET_MAX_HOSTS 64

typedef struct rlock__target {
  rlock__topo_kind kind;
  size_t n;
  /* single: the server; cluster: the seed nodes; sentinel: the sentinels.
   * Each carries the credentials to log in to it. */
  rlock__endpoint *addrs;
  /* The data nodes' credentials and database (host unset): what a node
   * found by discovery (a cluster node, Sentinel's master) logs in with. */
  rlock__endpoint data;
  char *master; /* sentinel: the master's name, else NULL */
  rlock__pubsub_mode pubsub;
  rlock__tls_opts tls; /* the URL's tls_* parameters */
} rlock__target;

/* Parse `url` into zeroed `t`. RLOCK_EINVAL with a message naming what is
 * wrong (t left empty), or RLOCK_ENOMEM. */
int rlock__target_parse(rlock__target *t, const char *url);

/* Deep copy into `dst`; RLOCK_ENOMEM on failure (dst left empty). */
int rlock__target_copy(rlock__target *dst, const rlock__target *src);

/* Free what `t` owns and zero it. */
void rlock__target_clear(rlock__target *t);

/* An endpoint for the data node host:port, with the target's data
 * credentials, into zeroed `out` (rlock__endpoint_clear frees it). */
int rlock__target_node(const rlock__target *t, const char *host, int port,
                       rlock__endpoint *out);

/* "cluster", "sentinel" or "single". */
const char *rlock__target_kind_name(const rlock__target *t);

#endif /* RLOCK_TARGET_H */
