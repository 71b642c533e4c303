/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cluster.c - reading a Redis Cluster's slot map from one of its nodes:
 * CLUSTER SHARDS (Redis 7), or CLUSTER SLOTS where SHARDS is unknown.
 */
#include "cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* Growable list of ranges. */
typedef struct ranges {
  rlock__range *v;
  size_t n, cap;
} ranges;

static int add_range(ranges *rs, int64_t from, int64_t to, const char *host,
                     int64_t port) {
  if (from < 0 || to >= RLOCK__SLOTS || from > to || port < 1 || port > 65535)
    return rlock__err(RLOCK_EPROTO, "cluster map has a bad range");
  if (rs->n == rs->cap) {
    size_t cap = rs->cap ? rs->cap * 2 : 16;
    rlock__range *v = rlock__realloc(rs->v, cap * sizeof *v);
    if (v == NULL)
      return rlock__err(RLOCK_ENOMEM, "out of memory");
    rs->v = v;
    rs->cap = cap;
  }
  rlock__range *r = &rs->v[rs->n++];
  r->from = (unsigned)from;
  r->to = (unsigned)to;
  r->port = (int)port;
  snprintf(r->host, sizeof r->host, "%s", host);
  return RLOCK_OK;
}

/* A node's address in a map: its announced IP, or the address we asked
 * when it announces none ("" or "?"). */
static const char *node_host(const char *ip, const char *asked) {
  return ip[0] == '\0' || strcmp(ip, "?") == 0 ? asked : ip;
}

/* CLUSTER SLOTS: [[from, to, [ip, port, id, ...], replicas...], ...]. */
static int parse_slots(const rlock__reply *r, const char *asked, ranges *rs) {
  if (r->type != RLOCK__R_ARRAY)
    return rlock__err(RLOCK_EPROTO, "CLUSTER SLOTS returned a %s",
                      rlock__reply_type_name(r));
  for (size_t i = 0; i < r->n; i++) {
    const rlock__reply *e = r->elem[i];
    if (e->type != RLOCK__R_ARRAY || e->n < 3 ||
        e->elem[0]->type != RLOCK__R_INT || e->elem[1]->type != RLOCK__R_INT ||
        e->elem[2]->type != RLOCK__R_ARRAY || e->elem[2]->n < 2 ||
        e->elem[2]->elem[0]->type != RLOCK__R_STR ||
        e->elem[2]->elem[1]->type != RLOCK__R_INT)
      return rlock__err(RLOCK_EPROTO, "CLUSTER SLOTS entry is malformed");
    const rlock__reply *m = e->elem[2];
    int rc = add_range(rs, e->elem[0]->integer, e->elem[1]->integer,
                       node_host(m->elem[0]->str, asked), m->elem[1]->integer);
    if (rc != RLOCK_OK)
      return rc;
  }
  return RLOCK_OK;
}

/* The value after key `k` in a flat key/value array, or NULL. */
static const rlock__reply *field(const rlock__reply *map, const char *k) {
  if (map->type != RLOCK__R_ARRAY)
    return NULL;
  for (size_t i = 0; i + 1 < map->n; i += 2)
    if (rlock__reply_is(map->elem[i], k))
      return map->elem[i + 1];
  return NULL;
}

/* The shard's master that is online, or NULL. */
static const rlock__reply *shard_master(const rlock__reply *nodes) {
  for (size_t i = 0; nodes && nodes->type == RLOCK__R_ARRAY && i < nodes->n;
       i++) {
    const rlock__reply *n = nodes->elem[i];
    const rlock__reply *health = field(n, "health");
    if (rlock__reply_is(field(n, "role"), "master") &&
        (health == NULL || rlock__reply_is(health, "online")))
      return n;
  }
  return NULL;
}

/* CLUSTER SHARDS: [[ "slots", [from, to, ...], "nodes", [node...] ], ...]
 * with each node a flat map (id, port, tls-port, ip, endpoint, role...).
 * A TLS client connects to "tls-port" (CLUSTER SLOTS and MOVED already
 * name the port of the asking connection's kind). */
static int parse_shards(const rlock__reply *r, const char *asked, int tls,
                        ranges *rs) {
  if (r->type != RLOCK__R_ARRAY)
    return rlock__err(RLOCK_EPROTO, "CLUSTER SHARDS returned a %s",
                      rlock__reply_type_name(r));
  for (size_t i = 0; i < r->n; i++) {
    const rlock__reply *slots = field(r->elem[i], "slots");
    const rlock__reply *m = shard_master(field(r->elem[i], "nodes"));
    if (slots == NULL || slots->type != RLOCK__R_ARRAY || slots->n % 2 != 0)
      return rlock__err(RLOCK_EPROTO, "CLUSTER SHARDS entry is malformed");
    if (m == NULL || slots->n == 0)
      continue; /* a shard without slots, or whose master is down */
    const rlock__reply *ip = field(m, "ip"), *port = field(m, "port");
    if (tls && field(m, "tls-port") != NULL)
      port = field(m, "tls-port");
    if (ip == NULL || ip->type != RLOCK__R_STR || port == NULL ||
        port->type != RLOCK__R_INT)
      return rlock__err(RLOCK_EPROTO, "CLUSTER SHARDS node is malformed");
    for (size_t k = 0; k < slots->n; k += 2) {
      if (slots->elem[k]->type != RLOCK__R_INT ||
          slots->elem[k + 1]->type != RLOCK__R_INT)
        return rlock__err(RLOCK_EPROTO, "CLUSTER SHARDS slots are malformed");
      int rc =
          add_range(rs, slots->elem[k]->integer, slots->elem[k + 1]->integer,
                    node_host(ip->str, asked), port->integer);
      if (rc != RLOCK_OK)
        return rc;
    }
  }
  return RLOCK_OK;
}

int rlock__cluster_parse(const rlock__node *node, int shards,
                         const rlock__reply *r, rlock__range **out, size_t *n) {
  ranges rs = {0};
  *out = NULL;
  *n = 0;
  int rc;
  if (r->type == RLOCK__R_ERROR && strstr(r->str, "cluster support disabled"))
    rc = rlock__err(RLOCK_ESERVER,
                    "redis %s is not a cluster node (its "
                    "cluster support is disabled); use redis://",
                    node->where);
  else if (r->type == RLOCK__R_ERROR)
    rc = rlock__err(RLOCK_ESERVER, "redis %s: %s", node->where, r->str);
  else
    rc = shards ? parse_shards(r, node->ep.host, node->ep.tls, &rs)
                : parse_slots(r, node->ep.host, &rs);
  if (rc != RLOCK_OK) {
    free(rs.v);
    return rc;
  }
  *out = rs.v;
  *n = rs.n;
  return RLOCK_OK;
}
