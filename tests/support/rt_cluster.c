/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_cluster.c - a real Redis Cluster for the tests. See rt_cluster.h.
 *
 *   1. hash slots
 *   2. reading the cluster: one node's view (CLUSTER NODES), convergence
 *   3. bounded waits
 *   4. start and free
 *   5. getters and queries
 *   6. slot migration
 *   7. failover
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "rt_cluster.h"
#include "rt_tls.h"
#include "rt_util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#define RT_CLUSTER_MAX_NODES 64
/* Bounds of the waits inside the harness, before rt_scaled_ms(). */
#define RT_CLUSTER_START_TIMEOUT_MS 30000
#define RT_CLUSTER_SWITCH_TIMEOUT_MS 20000
/* Keys per MIGRATE, and MIGRATE's own timeout. */
#define RT_CLUSTER_MIGRATE_BATCH 100
#define RT_CLUSTER_MIGRATE_TIMEOUT_MS 5000

struct rt_cluster {
  int n;        /* nodes */
  int masters;  /* at the start */
  int replicas; /* per master, at the start */
  rt_server **srv;
  char (*id)[RT_CLUSTER_ID_LEN + 1];
  char *url; /* rt_cluster_url()'s latest */
  int64_t last_failover_ms;
  const struct rt_tls *tls;         /* rt_cluster_start_tls(), or NULL */
  int *tls_port;                    /* per node, with tls */
  char (*host)[48];                 /* per node: where it listens */
  const char *const *const *prefix; /* during start: per node, or NULL */
};

/* ------------------------------------------------------------------------ */
/* 1. Hash slots                                                            */
/* ------------------------------------------------------------------------ */

/* CRC16-XMODEM (CCITT): polynomial 0x1021, initial value 0, no reflection,
   as in the cluster spec; CRC of "123456789" is 0x31C3. */
static unsigned crc16_xmodem(const unsigned char *p, size_t n) {
  unsigned crc = 0;
  for (size_t i = 0; i < n; i++) {
    crc ^= (unsigned)p[i] << 8;
    for (int bit = 0; bit < 8; bit++)
      crc =
          (crc & 0x8000) ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

int rt_cluster_slot_of_len(const char *key, size_t len) {
  const char *open = memchr(key, '{', len);
  if (open) {
    const char *from = open + 1;
    const char *close = memchr(from, '}', len - (size_t)(from - key));
    if (close && close > from) {
      key = from;
      len = (size_t)(close - from);
    }
  }
  return (int)(crc16_xmodem((const unsigned char *)key, len) %
               RT_CLUSTER_SLOTS);
}

int rt_cluster_slot_of(const char *key) {
  return rt_cluster_slot_of_len(key, strlen(key));
}

/* ------------------------------------------------------------------------ */
/* 2. Reading the cluster                                                   */
/* ------------------------------------------------------------------------ */

enum { ROLE_UNKNOWN, ROLE_MASTER, ROLE_REPLICA };

/* What one node's CLUSTER NODES says about node j. */
struct view_node {
  bool known;
  bool bad; /* fail?, fail, handshake, noaddr or link disconnected */
  int role;
  int master; /* index of its master, or -1 */
};

/* One node's CLUSTER NODES, with ids mapped to node indexes. */
struct view {
  int self;                      /* the node's own line, -1 if missing */
  int unknown;                   /* lines whose id is not one of ours */
  int open_migrations;           /* [slot->-id] / [slot-<-id] on its line */
  short owner[RT_CLUSTER_SLOTS]; /* node index, -1 unassigned */
  struct view_node *node;        /* c->n of them */
};

static void fail_with(const char *msg) { fail_msg("%s", msg); }

static bool running(const rt_cluster *c, int i) {
  return rt_server_pid(c->srv[i]) > 0;
}

static int first_running(const rt_cluster *c) {
  for (int i = 0; i < c->n; i++)
    if (running(c, i))
      return i;
  fail_with("rt_cluster: no node is running");
  return -1;
}

static int index_of_id(const rt_cluster *c, const char *id, size_t len) {
  if (len != RT_CLUSTER_ID_LEN)
    return -1;
  for (int i = 0; i < c->n; i++)
    if (memcmp(c->id[i], id, len) == 0)
      return i;
  return -1;
}

static bool has_flag(const char *flags, const char *flag) {
  size_t n = strlen(flag);
  for (const char *p = flags; *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && strncmp(p, flag, n) == 0)
      return true;
    p += len + (p[len] == ',');
  }
  return false;
}

/* The slot fields of a CLUSTER NODES line: "N", "A-B", or an open
   migration "[N->-id]" / "[N-<-id]" (only on the node's own line). */
static void parse_slot(struct view *v, int owner, const char *word) {
  if (word[0] == '[') {
    v->open_migrations++;
    return;
  }
  char *end;
  long a = strtol(word, &end, 10), b = a;
  if (*end == '-')
    b = strtol(end + 1, &end, 10);
  if (a < 0 || b >= RT_CLUSTER_SLOTS || a > b)
    return;
  for (long s = a; s <= b; s++)
    v->owner[s] = (short)owner;
}

/* One line (modified in place): <id> <ip:port@cport> <flags> <master>
   <ping> <pong> <epoch> <link> <slot>... */
static void parse_node_line(const rt_cluster *c, struct view *v, char *line) {
  char *w[8], *save = NULL;
  int n = 0;
  for (char *word = strtok_r(line, " ", &save); word;
       word = strtok_r(NULL, " ", &save)) {
    w[n++] = word;
    if (n == 8)
      break;
  }
  if (n < 8)
    return;
  int j = index_of_id(c, w[0], strlen(w[0]));
  if (j < 0) {
    v->unknown++;
    return;
  }
  struct view_node *vn = &v->node[j];
  vn->known = true;
  vn->bad = has_flag(w[2], "fail?") || has_flag(w[2], "fail") ||
            has_flag(w[2], "handshake") || has_flag(w[2], "noaddr") ||
            (!has_flag(w[2], "myself") && strcmp(w[7], "connected") != 0);
  vn->role = has_flag(w[2], "master")  ? ROLE_MASTER
             : has_flag(w[2], "slave") ? ROLE_REPLICA
                                       : ROLE_UNKNOWN;
  vn->master = strcmp(w[3], "-") == 0 ? -1 : index_of_id(c, w[3], strlen(w[3]));
  if (has_flag(w[2], "myself"))
    v->self = j;
  for (char *word = strtok_r(NULL, " ", &save); word;
       word = strtok_r(NULL, " ", &save))
    parse_slot(v, j, word);
}

static void view_free(struct view *v) {
  if (v) {
    free(v->node);
    free(v);
  }
}

/* Node i's CLUSTER NODES. Fails the test on I/O errors or a reply that is
   not a string. */
static struct view *view_of(rt_cluster *c, int i) {
  struct view *v = calloc(1, sizeof *v);
  if (v)
    v->node = calloc((size_t)c->n, sizeof *v->node);
  if (!v || !v->node) {
    view_free(v);
    fail_with("rt_cluster: out of memory");
    return NULL;
  }
  v->self = -1;
  for (int s = 0; s < RT_CLUSTER_SLOTS; s++)
    v->owner[s] = -1;
  redisReply *r = rt_cmd(c->srv[i], "CLUSTER NODES");
  if (r->type != REDIS_REPLY_STRING) {
    char msg[256];
    snprintf(msg, sizeof msg,
             "rt_cluster: CLUSTER NODES on node %d (port %d): %s", i,
             rt_server_port(c->srv[i]),
             r->type == REDIS_REPLY_ERROR ? r->str : "not a string");
    freeReplyObject(r);
    view_free(v);
    fail_with(msg);
    return NULL;
  }
  for (char *save = NULL, *line = strtok_r(r->str, "\r\n", &save); line;
       line = strtok_r(NULL, "\r\n", &save))
    parse_node_line(c, v, line);
  freeReplyObject(r);
  return v;
}

/* A running node's view. */
static struct view *any_view(rt_cluster *c) {
  return view_of(c, first_running(c));
}

/* cluster_state:ok, all slots ok, every node known (CLUSTER INFO). */
static bool info_ok(rt_cluster *c, int i, char *why, size_t cap) {
  redisReply *r = rt_cmd(c->srv[i], "CLUSTER INFO");
  char state[32] = "", slots_ok[16] = "", known[16] = "";
  if (r->type == REDIS_REPLY_STRING) {
    rt_info_value(r->str, "cluster_state", state, sizeof state);
    rt_info_value(r->str, "cluster_slots_ok", slots_ok, sizeof slots_ok);
    rt_info_value(r->str, "cluster_known_nodes", known, sizeof known);
  }
  freeReplyObject(r);
  if (strcmp(state, "ok") == 0 && atoi(slots_ok) == RT_CLUSTER_SLOTS &&
      atoi(known) == c->n)
    return true;
  snprintf(why, cap,
           "node %d (port %d) has cluster_state:%s cluster_slots_ok:%s "
           "cluster_known_nodes:%s (of %d)",
           i, rt_server_port(c->srv[i]), state, slots_ok, known, c->n);
  return false;
}

/* What node i's view says about the others, on its own. */
static bool view_complete(const rt_cluster *c, int i, const struct view *v,
                          char *why, size_t cap) {
  int port = rt_server_port(c->srv[i]);
  if (v->self != i) {
    snprintf(why, cap, "node %d (port %d) does not list itself under its id", i,
             port);
    return false;
  }
  if (v->unknown > 0) {
    snprintf(why, cap,
             "node %d (port %d) lists %d node(s) not (yet) known by id "
             "(handshake)",
             i, port, v->unknown);
    return false;
  }
  for (int j = 0; j < c->n; j++) {
    if (!v->node[j].known) {
      snprintf(why, cap, "node %d (port %d) does not know node %d", i, port, j);
      return false;
    }
    if (running(c, j) && v->node[j].bad) {
      snprintf(why, cap,
               "node %d (port %d) sees node %d as failing or "
               "disconnected",
               i, port, j);
      return false;
    }
  }
  return true;
}

/* Node i's view agrees with the nodes' own (roles) and with ref (slots). */
static bool view_agrees(const rt_cluster *c, int i, struct view *const *views,
                        const struct view *ref, char *why, size_t cap) {
  const struct view *v = views[i];
  int port = rt_server_port(c->srv[i]);
  for (int j = 0; j < c->n; j++) {
    if (!views[j])
      continue;
    const struct view_node *own = &views[j]->node[j], *seen = &v->node[j];
    if (seen->role != own->role || seen->master != own->master) {
      snprintf(why, cap,
               "node %d (port %d) does not yet see node %d's role "
               "(%s of %d)",
               i, port, j, own->role == ROLE_MASTER ? "master" : "replica",
               own->master);
      return false;
    }
  }
  for (int s = 0; s < RT_CLUSTER_SLOTS; s++) {
    int o = v->owner[s];
    if (o != ref->owner[s]) {
      snprintf(why, cap,
               "node %d (port %d) gives slot %d to node %d, node %d to "
               "node %d",
               i, port, s, o, ref->self, ref->owner[s]);
      return false;
    }
    if (o < 0 || !running(c, o)) {
      snprintf(why, cap, "slot %d is %s", s,
               o < 0 ? "unassigned" : "on a node that is down");
      return false;
    }
  }
  return true;
}

/* A running replica whose master runs is in sync with that master. */
static bool replica_linked(rt_cluster *c, int i, const struct view *v,
                           char *why, size_t cap) {
  const struct view_node *self = &v->node[i];
  if (self->role != ROLE_REPLICA || self->master < 0 ||
      !running(c, self->master))
    return true;
  char link[32], port[16];
  rt_server_info_field(c->srv[i], "replication", "master_link_status", link,
                       sizeof link);
  rt_server_info_field(c->srv[i], "replication", "master_port", port,
                       sizeof port);
  if (strcmp(link, "up") == 0 &&
      atoi(port) == rt_server_port(c->srv[self->master]))
    return true;
  snprintf(why, cap,
           "replica %d (port %d) has master_link_status:%s to port %s, "
           "its master %d is on port %d",
           i, rt_server_port(c->srv[i]), link, port, self->master,
           rt_server_port(c->srv[self->master]));
  return false;
}

static void views_free(const rt_cluster *c, struct view **views) {
  for (int i = 0; i < c->n; i++)
    view_free(views[i]);
  free(views);
}

/* Every running node's view, NULL for the others; NULL if out of memory. */
static struct view **all_views(rt_cluster *c) {
  struct view **views = calloc((size_t)c->n, sizeof *views);
  if (!views) {
    fail_with("rt_cluster: out of memory");
    return NULL;
  }
  for (int i = 0; i < c->n; i++)
    if (running(c, i))
      views[i] = view_of(c, i);
  return views;
}

/* The conditions of rt_cluster_wait_ok(); the first that fails in why. */
static bool converged(rt_cluster *c, char *why, size_t cap) {
  for (int i = 0; i < c->n; i++)
    if (running(c, i) && !info_ok(c, i, why, cap))
      return false;
  struct view **views = all_views(c);
  const struct view *ref = NULL;
  bool ok = true;
  for (int i = 0; ok && i < c->n; i++) {
    if (!views[i])
      continue;
    ok = view_complete(c, i, views[i], why, cap);
    if (!ref)
      ref = views[i];
  }
  for (int i = 0; ok && i < c->n; i++)
    if (views[i])
      ok = view_agrees(c, i, views, ref, why, cap) &&
           replica_linked(c, i, views[i], why, cap);
  views_free(c, views);
  return ok;
}

/* ------------------------------------------------------------------------ */
/* 3. Bounded waits                                                         */
/* ------------------------------------------------------------------------ */

static bool pred_converged(void *arg, char *why, size_t cap) {
  return converged(arg, why, cap);
}

void rt_cluster_wait_ok(rt_cluster *c, int64_t timeout_ms) {
  rt_wait_until(pred_converged, c, timeout_ms, "rt_cluster_wait_ok");
}

/* ------------------------------------------------------------------------ */
/* 4. Start and free                                                        */
/* ------------------------------------------------------------------------ */

static void start_node(rt_cluster *c, int i) {
  char timeout[16];
  snprintf(timeout, sizeof timeout, "%d", RT_CLUSTER_NODE_TIMEOUT_MS);
  const char *args[4 + RT_TLS_ARGS + 4] = {
      "--cluster-node-timeout",
      timeout,
      /* No 5 s wait before a replica's first full sync. */
      "--repl-diskless-sync-delay",
      "0",
      NULL,
  };
  char port[16];
  if (c->tls) { /* the cluster bus and replication on TLS too */
    const char *const more[] = {"--tls-cluster", "yes", "--tls-replication",
                                "yes", NULL};
    rt_tls_args(c->tls, &c->tls_port[i], port, "no", args + 4);
    memcpy(args + 4 + RT_TLS_ARGS - 1, more, sizeof more);
  }
  c->srv[i] = rt_server_start_opts(
      &(rt_server_opts){.extra_args = args,
                        .cluster = true,
                        .host = c->host[i],
                        .prefix = c->prefix ? c->prefix[i] : NULL});
  redisReply *r = rt_cmd(c->srv[i], "CLUSTER MYID");
  if (r->type != REDIS_REPLY_STRING || r->len != RT_CLUSTER_ID_LEN) {
    freeReplyObject(r);
    fail_with("rt_cluster: CLUSTER MYID did not return a node id");
    return;
  }
  memcpy(c->id[i], r->str, RT_CLUSTER_ID_LEN + 1);
  freeReplyObject(r);
  /* Distinct epochs from the start, as redis-cli does: no collisions for
     the cluster to resolve. */
  rt_cmd_ok(c->srv[i], "CLUSTER SET-CONFIG-EPOCH %d", i + 1);
}

/* Every running node knows every other by id. */
static bool pred_all_known(void *arg, char *why, size_t cap) {
  rt_cluster *c = arg;
  bool ok = true;
  for (int i = 0; ok && i < c->n; i++) {
    struct view *v = view_of(c, i);
    ok = view_complete(c, i, v, why, cap);
    view_free(v);
  }
  return ok;
}

static rt_cluster *start(int masters, int replicas_per_master,
                         const struct rt_tls *tls, const char *const *host,
                         const char *const *const *prefix);

rt_cluster *rt_cluster_start(int masters, int replicas_per_master) {
  return start(masters, replicas_per_master, NULL, NULL, NULL);
}

rt_cluster *rt_cluster_start_tls(int masters, int replicas_per_master,
                                 const struct rt_tls *tls) {
  return start(masters, replicas_per_master, tls, NULL, NULL);
}

rt_cluster *rt_cluster_start_placed(int masters, int replicas_per_master,
                                    const char *const *host,
                                    const char *const *const *prefix) {
  return start(masters, replicas_per_master, NULL, host, prefix);
}

int rt_cluster_tls_port(const rt_cluster *c, int i) {
  return c->tls && i >= 0 && i < c->n ? c->tls_port[i] : 0;
}

static rt_cluster *start(int masters, int replicas_per_master,
                         const struct rt_tls *tls, const char *const *host,
                         const char *const *const *prefix) {
  if (masters < 1 || replicas_per_master < 0 ||
      masters * (1 + replicas_per_master) > RT_CLUSTER_MAX_NODES) {
    fail_msg("rt_cluster_start(%d, %d): 1 to %d nodes, please", masters,
             replicas_per_master, RT_CLUSTER_MAX_NODES);
    return NULL;
  }
  rt_cluster *c = calloc(1, sizeof *c);
  int n = masters * (1 + replicas_per_master);
  if (c) {
    c->srv = calloc((size_t)n, sizeof *c->srv);
    c->id = calloc((size_t)n, sizeof *c->id);
    c->tls_port = calloc((size_t)n, sizeof *c->tls_port);
    c->host = calloc((size_t)n, sizeof *c->host);
    c->tls = tls;
  }
  if (!c || !c->srv || !c->id || !c->tls_port || !c->host) {
    if (c) {
      free(c->srv);
      free(c->id);
      free(c->tls_port);
      free(c->host);
    }
    free(c);
    fail_with("rt_cluster_start: out of memory");
    return NULL;
  }
  c->masters = masters;
  c->replicas = replicas_per_master;
  for (int i = 0; i < n; i++)
    snprintf(c->host[i], sizeof c->host[i], "%s",
             host && host[i] ? host[i] : "127.0.0.1");
  c->prefix = prefix;
  /* Count the nodes as they come up, so that rt_cluster_free() sees only
     started ones. */
  for (int i = 0; i < n; i++) {
    start_node(c, i);
    c->n = i + 1;
  }

  for (int i = 1; i < n; i++)
    rt_cmd_ok(c->srv[0], "CLUSTER MEET %s %d %d", c->host[i],
              rt_server_port(c->srv[i]), rt_server_cluster_port(c->srv[i]));
  for (int m = 0; m < masters; m++)
    rt_cmd_ok(c->srv[m], "CLUSTER ADDSLOTSRANGE %d %d",
              m * RT_CLUSTER_SLOTS / masters,
              (m + 1) * RT_CLUSTER_SLOTS / masters - 1);
  /* CLUSTER REPLICATE needs the replica to know its master. */
  rt_wait_until(pred_all_known, c, rt_scaled_ms(RT_CLUSTER_START_TIMEOUT_MS),
                "rt_cluster_start: nodes meeting");
  for (int m = 0; m < masters; m++)
    for (int r = 0; r < replicas_per_master; r++) {
      int i = masters + m * replicas_per_master + r;
      rt_cmd_ok(c->srv[i], "CLUSTER REPLICATE %s", c->id[m]);
    }
  rt_wait_until(pred_converged, c, rt_scaled_ms(RT_CLUSTER_START_TIMEOUT_MS),
                "rt_cluster_start: cluster_state ok everywhere");
  c->prefix = NULL; /* the caller's, read only during the start */
  return c;
}

void rt_cluster_free(rt_cluster *c) {
  if (!c)
    return;
  for (int i = 0; i < c->n; i++)
    rt_server_free(c->srv[i]);
  free(c->srv);
  free(c->id);
  free(c->tls_port);
  free(c->host);
  free(c->url);
  free(c);
}

/* ------------------------------------------------------------------------ */
/* 5. Getters and queries                                                   */
/* ------------------------------------------------------------------------ */

int rt_cluster_size(const rt_cluster *c) { return c->n; }
int rt_cluster_masters(const rt_cluster *c) { return c->masters; }
int64_t rt_cluster_last_failover_ms(const rt_cluster *c) {
  return c->last_failover_ms;
}

/* Fails the test unless 0 <= i < n. */
static bool check_index(const rt_cluster *c, int i, const char *fn) {
  if (i >= 0 && i < c->n)
    return true;
  fail_msg("%s: no node %d (the cluster has %d)", fn, i, c->n);
  return false;
}

rt_server *rt_cluster_node(const rt_cluster *c, int i) {
  return i >= 0 && i < c->n ? c->srv[i] : NULL;
}

int rt_cluster_port(const rt_cluster *c, int i) {
  return i >= 0 && i < c->n ? rt_server_port(c->srv[i]) : -1;
}

const char *rt_cluster_node_id(const rt_cluster *c, int i) {
  return i >= 0 && i < c->n ? c->id[i] : NULL;
}

int rt_cluster_node_by_port(const rt_cluster *c, int port) {
  for (int i = 0; i < c->n; i++)
    if (rt_server_port(c->srv[i]) == port)
      return i;
  return -1;
}

bool rt_cluster_is_master(rt_cluster *c, int i) {
  if (!check_index(c, i, "rt_cluster_is_master") || !running(c, i))
    return false;
  char role[16];
  rt_server_role(c->srv[i], role, sizeof role);
  return strcmp(role, "master") == 0;
}

int rt_cluster_replica_of(rt_cluster *c, int master) {
  if (!check_index(c, master, "rt_cluster_replica_of"))
    return -1;
  struct view *v = running(c, master) ? view_of(c, master) : any_view(c);
  int found = -1;
  for (int j = 0; found < 0 && j < c->n; j++)
    if (v->node[j].role == ROLE_REPLICA && v->node[j].master == master &&
        running(c, j))
      found = j;
  view_free(v);
  return found;
}

int rt_cluster_slot_owner(rt_cluster *c, int slot) {
  if (slot < 0 || slot >= RT_CLUSTER_SLOTS) {
    fail_msg("rt_cluster_slot_owner: no slot %d", slot);
    return -1;
  }
  struct view *v = any_view(c);
  int owner = v->owner[slot];
  view_free(v);
  return owner;
}

const char *rt_cluster_url(rt_cluster *c) {
  size_t cap =
      sizeof "redis-cluster://" + (size_t)c->n * (sizeof c->host[0] + 8);
  char *url = malloc(cap);
  if (!url) {
    fail_with("rt_cluster_url: out of memory");
    return NULL;
  }
  size_t len = (size_t)snprintf(url, cap, "redis-cluster://");
  const char *sep = "";
  for (int i = 0; i < c->n; i++) {
    if (!rt_cluster_is_master(c, i))
      continue;
    len += (size_t)snprintf(url + len, cap - len, "%s%s:%d", sep, c->host[i],
                            rt_server_port(c->srv[i]));
    sep = ",";
  }
  free(c->url);
  c->url = url;
  return url;
}

/* Write prefix + a number into buf such that slot_ok(slot) holds; the
   number of tries is bounded. False if none was found or buf is too small
   (with the reason in why). */
static bool find_key(const char *prefix, char *buf, size_t size,
                     bool (*slot_ok)(int slot, const void *arg),
                     const void *arg, char *why, size_t cap) {
  /* A slot that owns 1/16384 of the space is found within ~16384 tries
     on average; a million leaves no real chance of missing it. */
  for (long k = 0; k < 1000000; k++) {
    int len = snprintf(buf, size, "%s%ld", prefix, k);
    if (len < 0 || (size_t)len >= size) {
      snprintf(why, cap, "buffer of %zu bytes too small for \"%s%ld\"", size,
               prefix, k);
      return false;
    }
    if (slot_ok(rt_cluster_slot_of_len(buf, (size_t)len), arg))
      return true;
  }
  snprintf(why, cap, "no key \"%s<number>\" found (a hash tag in the prefix?)",
           prefix);
  return false;
}

struct owned_by {
  const struct view *v;
  int node;
};

static bool slot_owned_by(int slot, const void *arg) {
  const struct owned_by *o = arg;
  return o->v->owner[slot] == o->node;
}

static bool slot_is(int slot, const void *arg) {
  return slot == *(const int *)arg;
}

void rt_cluster_key_on(rt_cluster *c, int node, const char *prefix, char *buf,
                       size_t size) {
  if (!check_index(c, node, "rt_cluster_key_on"))
    return;
  struct view *v = any_view(c);
  struct owned_by o = {v, node};
  int nslots = 0;
  for (int s = 0; s < RT_CLUSTER_SLOTS; s++)
    nslots += v->owner[s] == node;
  char why[256] = "node owns no slot";
  bool ok = nslots > 0 &&
            find_key(prefix, buf, size, slot_owned_by, &o, why, sizeof why);
  view_free(v);
  if (!ok)
    fail_msg("rt_cluster_key_on(node %d, \"%s\"): %s", node, prefix, why);
}

void rt_cluster_key_in_slot(int slot, const char *prefix, char *buf,
                            size_t size) {
  char why[256] = "no such slot";
  if (slot < 0 || slot >= RT_CLUSTER_SLOTS ||
      !find_key(prefix, buf, size, slot_is, &slot, why, sizeof why))
    fail_msg("rt_cluster_key_in_slot(%d, \"%s\"): %s", slot, prefix, why);
}

/* ------------------------------------------------------------------------ */
/* 6. Slot migration                                                        */
/* ------------------------------------------------------------------------ */

static bool check_migration(const rt_cluster *c, int slot, int from, int to,
                            const char *fn) {
  if (!check_index(c, from, fn) || !check_index(c, to, fn))
    return false;
  if (slot < 0 || slot >= RT_CLUSTER_SLOTS || from == to) {
    fail_msg("%s: slot %d from node %d to node %d?", fn, slot, from, to);
    return false;
  }
  return true;
}

void rt_cluster_migrate_begin(rt_cluster *c, int slot, int from, int to) {
  if (!check_migration(c, slot, from, to, "rt_cluster_migrate_begin"))
    return;
  rt_cmd_ok(c->srv[to], "CLUSTER SETSLOT %d IMPORTING %s", slot, c->id[from]);
  rt_cmd_ok(c->srv[from], "CLUSTER SETSLOT %d MIGRATING %s", slot, c->id[to]);
}

/* One MIGRATE ... KEYS of the keys in r (an array of strings); fails the
   test unless it answers OK or NOKEY (the keys expired meanwhile). */
static void migrate_batch(rt_cluster *c, int from, int to,
                          const redisReply *keys) {
  size_t argc = 7 + keys->elements;
  const char **argv = calloc(argc, sizeof *argv);
  size_t *argvlen = calloc(argc, sizeof *argvlen);
  if (!argv || !argvlen) {
    free(argv);
    free(argvlen);
    fail_with("rt_cluster_migrate_keys: out of memory");
    return;
  }
  char port[16], timeout[16];
  snprintf(port, sizeof port, "%d", rt_server_port(c->srv[to]));
  snprintf(timeout, sizeof timeout, "%d", RT_CLUSTER_MIGRATE_TIMEOUT_MS);
  const char *head[] = {"MIGRATE", c->host[to], port, "", "0", timeout, "KEYS"};
  for (size_t k = 0; k < 7; k++) {
    argv[k] = head[k];
    argvlen[k] = strlen(head[k]);
  }
  for (size_t k = 0; k < keys->elements; k++) {
    argv[7 + k] = keys->element[k]->str;
    argvlen[7 + k] = keys->element[k]->len;
  }
  redisReply *r = rt_cmd_argv(c->srv[from], (int)argc, argv, argvlen);
  free(argv);
  free(argvlen);
  if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "NOKEY") == 0)
    r->str[0] = '\0';
  bool ok = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
  if (!ok)
    fail_msg("rt_cluster_migrate_keys: MIGRATE on node %d (port %d): %s", from,
             rt_server_port(c->srv[from]),
             r->type == REDIS_REPLY_ERROR ? r->str : "not OK");
  freeReplyObject(r);
}

int rt_cluster_migrate_keys(rt_cluster *c, int slot, int from, int to,
                            int max_keys) {
  if (!check_migration(c, slot, from, to, "rt_cluster_migrate_keys"))
    return 0;
  int moved = 0;
  while (max_keys < 0 || moved < max_keys) {
    int batch = RT_CLUSTER_MIGRATE_BATCH;
    if (max_keys >= 0 && max_keys - moved < batch)
      batch = max_keys - moved;
    redisReply *r =
        rt_cmd(c->srv[from], "CLUSTER GETKEYSINSLOT %d %d", slot, batch);
    if (r->type != REDIS_REPLY_ARRAY) {
      char msg[256];
      snprintf(msg, sizeof msg,
               "rt_cluster_migrate_keys: CLUSTER GETKEYSINSLOT on "
               "node %d: %s",
               from, r->type == REDIS_REPLY_ERROR ? r->str : "not an array");
      freeReplyObject(r);
      fail_with(msg);
      return moved;
    }
    size_t got = r->elements;
    if (got > 0)
      migrate_batch(c, from, to, r);
    freeReplyObject(r);
    if (got == 0)
      break;
    moved += (int)got;
  }
  return moved;
}

struct slot_move {
  rt_cluster *c;
  int slot, from, to;
};

/* The slot is `to`'s everywhere, no migration is open on either node, and
   the cluster has converged. */
static bool pred_slot_moved(void *arg, char *why, size_t cap) {
  const struct slot_move *m = arg;
  rt_cluster *c = m->c;
  for (int i = 0; i < c->n; i++) {
    if (!running(c, i))
      continue;
    struct view *v = view_of(c, i);
    int owner = v->owner[m->slot], open = v->open_migrations;
    view_free(v);
    if (owner != m->to) {
      snprintf(why, cap, "node %d gives slot %d to node %d", i, m->slot, owner);
      return false;
    }
    if ((i == m->from || i == m->to) && open > 0) {
      snprintf(why, cap, "node %d still has %d open migration(s)", i, open);
      return false;
    }
  }
  return converged(c, why, cap);
}

void rt_cluster_migrate_finish(rt_cluster *c, int slot, int from, int to) {
  if (!check_migration(c, slot, from, to, "rt_cluster_migrate_finish"))
    return;
  rt_cluster_migrate_keys(c, slot, from, to, -1);
  /* The importing node first: it takes the slot with a new config epoch,
     which then wins everywhere; then the source, then the others. */
  rt_cmd_ok(c->srv[to], "CLUSTER SETSLOT %d NODE %s", slot, c->id[to]);
  rt_cmd_ok(c->srv[from], "CLUSTER SETSLOT %d NODE %s", slot, c->id[to]);
  for (int i = 0; i < c->n; i++)
    if (i != from && i != to && rt_cluster_is_master(c, i))
      rt_cmd_ok(c->srv[i], "CLUSTER SETSLOT %d NODE %s", slot, c->id[to]);
  struct slot_move m = {c, slot, from, to};
  rt_wait_until(pred_slot_moved, &m, rt_scaled_ms(RT_CLUSTER_SWITCH_TIMEOUT_MS),
                "rt_cluster_migrate_finish");
}

void rt_cluster_migrate_slot(rt_cluster *c, int slot, int from, int to) {
  rt_cluster_migrate_begin(c, slot, from, to);
  rt_cluster_migrate_finish(c, slot, from, to);
}

/* ------------------------------------------------------------------------ */
/* 7. Failover                                                              */
/* ------------------------------------------------------------------------ */

struct switch_roles {
  rt_cluster *c;
  int old_master;
  int candidates[RT_CLUSTER_MAX_NODES]; /* -1 terminated */
  int new_master;                       /* out */
};

/* A candidate says it is a master, the old master (if it runs) that it is
   its replica, and the cluster has converged. */
static bool pred_switched(void *arg, char *why, size_t cap) {
  struct switch_roles *sw = arg;
  rt_cluster *c = sw->c;
  sw->new_master = -1;
  for (int k = 0; sw->new_master < 0 && sw->candidates[k] >= 0; k++)
    if (rt_cluster_is_master(c, sw->candidates[k]))
      sw->new_master = sw->candidates[k];
  if (sw->new_master < 0) {
    snprintf(why, cap, "no replica of node %d has become a master",
             sw->old_master);
    return false;
  }
  if (running(c, sw->old_master)) {
    struct view *v = view_of(c, sw->old_master);
    struct view_node self = v->node[sw->old_master];
    view_free(v);
    if (self.role != ROLE_REPLICA || self.master != sw->new_master) {
      snprintf(why, cap, "node %d is not yet a replica of node %d",
               sw->old_master, sw->new_master);
      return false;
    }
  }
  return converged(c, why, cap);
}

/* The running replicas of master into sw; fails the test if there is none. */
static void find_candidates(rt_cluster *c, int master, struct switch_roles *sw,
                            const char *fn) {
  sw->c = c;
  sw->old_master = master;
  sw->new_master = -1;
  int n = 0;
  struct view *v = view_of(c, master);
  for (int j = 0; j < c->n; j++)
    if (v->node[j].role == ROLE_REPLICA && v->node[j].master == master &&
        running(c, j))
      sw->candidates[n++] = j;
  sw->candidates[n] = -1;
  view_free(v);
  if (n == 0)
    fail_msg("%s: node %d has no running replica", fn, master);
}

/* Redis gives a manual failover 5 s (CLUSTER_MF_TIMEOUT) to finish, then
   drops it without a word: it can lose the election when the masters have
   voted about this shard within two node timeouts, as back-to-back
   failovers under load do. One attempt's wait is longer than that, and the
   attempt is simply repeated; a refusal (the replica's link is down right
   after the last switch) is retried the same way. */
#define RT_CLUSTER_MF_ATTEMPT_MS 7000
#define RT_CLUSTER_MF_ATTEMPTS 4

static bool failover_attempt(rt_cluster *c, int replica,
                             struct switch_roles *sw, char *why, size_t cap) {
  redisReply *r = rt_cmd(c->srv[replica], "CLUSTER FAILOVER");
  bool sent = r && r->type == REDIS_REPLY_STATUS;
  if (!sent)
    snprintf(why, cap, "CLUSTER FAILOVER on node %d: %s", replica,
             r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
  freeReplyObject(r);
  /* Refused: the previous attempt may have completed after all. */
  int64_t wait = sent ? RT_CLUSTER_MF_ATTEMPT_MS : 1000;
  char last[512];
  bool done =
      rt_poll_until(pred_switched, sw, rt_scaled_ms(wait), last, sizeof last);
  if (sent)
    snprintf(why, cap, "%s", last);
  return done;
}

int rt_cluster_failover(rt_cluster *c, int master) {
  if (!check_index(c, master, "rt_cluster_failover"))
    return -1;
  struct switch_roles sw;
  find_candidates(c, master, &sw, "rt_cluster_failover");
  int replica = sw.candidates[0];
  sw.candidates[1] = -1;
  int64_t start = rt_now_ms();
  char why[512] = "";
  for (int a = 1; a <= RT_CLUSTER_MF_ATTEMPTS; a++) {
    if (failover_attempt(c, replica, &sw, why, sizeof why)) {
      c->last_failover_ms = rt_now_ms() - start;
      return sw.new_master;
    }
    fprintf(stderr, "rt_cluster_failover: attempt %d of %d: %s\n", a,
            RT_CLUSTER_MF_ATTEMPTS, why);
  }
  fail_msg("rt_cluster_failover: node %d did not take over from node %d in "
           "%d attempts: %s",
           replica, master, RT_CLUSTER_MF_ATTEMPTS, why);
  return -1;
}

int rt_cluster_kill_master(rt_cluster *c, int master, int64_t timeout_ms) {
  if (!check_index(c, master, "rt_cluster_kill_master"))
    return -1;
  if (!running(c, master)) {
    fail_msg("rt_cluster_kill_master: node %d is not running", master);
    return -1;
  }
  struct switch_roles sw;
  find_candidates(c, master, &sw, "rt_cluster_kill_master");
  int64_t start = rt_now_ms();
  rt_server_kill(c->srv[master]);
  rt_wait_until(pred_switched, &sw, timeout_ms, "rt_cluster_kill_master");
  c->last_failover_ms = rt_now_ms() - start;
  return sw.new_master;
}
