/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_sentinel.c - a real Redis Sentinel deployment for the tests. See
 * rt_sentinel.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "rt_sentinel.h"
#include "rt_tls.h"
#include "rt_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define RT_SENTINEL_MAX 16
#define RT_SENTINEL_MAX_SERVERS 16
/* Bound of the start-up waits, before rt_scaled_ms(). */
#define RT_SENTINEL_START_TIMEOUT_MS 30000

struct rt_sentinel_group {
  char name[64];
  int nservers; /* data servers: [0] the first master */
  rt_server *servers[RT_SENTINEL_MAX_SERVERS];
  int master; /* index of the master as far as we know */
  int nsentinels;
  rt_server *sentinels[RT_SENTINEL_MAX];
  char url[64 + RT_SENTINEL_MAX * 24];
  int64_t switch_started_ms; /* kill or SENTINEL FAILOVER, 0: none */
  int64_t failover_ms;
  const struct rt_tls *tls; /* sentinels also on TLS ports, or NULL */
  int tls_port[RT_SENTINEL_MAX];
  char tls_url[1024 + RT_SENTINEL_MAX * 24];
  rt_sentinel_place place; /* all NULL unless rt_sentinel_start_placed() */
};

static bool running(const rt_server *s) { return rt_server_pid(s) > 0; }

/* ------------------------------------------------------------------------ */
/* Asking the sentinels                                                     */
/* ------------------------------------------------------------------------ */

/* SENTINEL get-master-addr-by-name on one sentinel: the port, or -1. */
static int reported_port(rt_sentinel_group *g, rt_server *sentinel) {
  redisReply *r =
      rt_cmd(sentinel, "SENTINEL get-master-addr-by-name %s", g->name);
  int port = -1;
  if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
      r->element[1]->type == REDIS_REPLY_STRING)
    port = atoi(r->element[1]->str);
  freeReplyObject(r);
  return port;
}

/* The value of `field` in a SENTINEL replicas / sentinels entry (a flat
   array of names and values), or "". */
static const char *entry_field(const redisReply *entry, const char *field) {
  if (entry->type != REDIS_REPLY_ARRAY)
    return "";
  for (size_t k = 0; k + 1 < entry->elements; k += 2)
    if (entry->element[k]->type == REDIS_REPLY_STRING &&
        strcmp(entry->element[k]->str, field) == 0 &&
        entry->element[k + 1]->type == REDIS_REPLY_STRING)
      return entry->element[k + 1]->str;
  return "";
}

static bool flags_healthy(const char *flags) {
  return !strstr(flags, "s_down") && !strstr(flags, "o_down") &&
         !strstr(flags, "disconnected");
}

/* SENTINEL <what> <name> on sentinel i lists `want` healthy instances. */
static bool knows_healthy(rt_sentinel_group *g, int i, const char *what,
                          int want, char *why, size_t cap) {
  redisReply *r = rt_cmd(g->sentinels[i], "SENTINEL %s %s", what, g->name);
  int healthy = 0;
  char bad[128] = "";
  if (r->type == REDIS_REPLY_ARRAY) {
    for (size_t k = 0; k < r->elements; k++) {
      const char *flags = entry_field(r->element[k], "flags");
      if (flags_healthy(flags))
        healthy++;
      else
        snprintf(bad, sizeof bad, " (one has flags %s)", flags);
    }
  }
  freeReplyObject(r);
  if (healthy == want)
    return true;
  snprintf(why, cap, "sentinel %d (port %d) knows %d healthy %s, not %d%s", i,
           rt_server_port(g->sentinels[i]), healthy, what, want, bad);
  return false;
}

/* Every sentinel reports the master and knows everyone. */
static bool pred_sentinels_ready(void *arg, char *why, size_t cap) {
  rt_sentinel_group *g = arg;
  int master_port = rt_server_port(g->servers[g->master]);
  for (int i = 0; i < g->nsentinels; i++) {
    int port = reported_port(g, g->sentinels[i]);
    if (port != master_port) {
      snprintf(why, cap, "sentinel %d (port %d) reports master port %d, not %d",
               i, rt_server_port(g->sentinels[i]), port, master_port);
      return false;
    }
    if (!knows_healthy(g, i, "replicas", g->nservers - 1, why, cap) ||
        !knows_healthy(g, i, "sentinels", g->nsentinels - 1, why, cap))
      return false;
  }
  return true;
}

/* The port a majority of all the sentinels report, or -1; what each said
   in why. */
static int majority_port(rt_sentinel_group *g, char *why, size_t cap) {
  int ports[RT_SENTINEL_MAX];
  size_t len = (size_t)snprintf(why, cap, "sentinels report master ports:");
  for (int i = 0; i < g->nsentinels; i++) {
    ports[i] =
        running(g->sentinels[i]) ? reported_port(g, g->sentinels[i]) : -1;
    if (len < cap)
      len += (size_t)snprintf(why + len, cap - len, " %d", ports[i]);
  }
  for (int i = 0; i < g->nsentinels; i++) {
    int votes = 0;
    for (int j = 0; j < g->nsentinels; j++)
      votes += ports[j] == ports[i];
    if (ports[i] > 0 && votes > g->nsentinels / 2)
      return ports[i];
  }
  return -1;
}

static int server_by_port(const rt_sentinel_group *g, int port) {
  for (int i = 0; i < g->nservers; i++)
    if (rt_server_port(g->servers[i]) == port)
      return i;
  return -1;
}

/* ------------------------------------------------------------------------ */
/* Replication                                                              */
/* ------------------------------------------------------------------------ */

/* Server i is a replica of the group's master, with the link up. */
static bool replica_in_sync(rt_sentinel_group *g, int i, char *why,
                            size_t cap) {
  char role[16], link[32], port[16];
  rt_server_role(g->servers[i], role, sizeof role);
  rt_server_info_field(g->servers[i], "replication", "master_link_status", link,
                       sizeof link);
  rt_server_info_field(g->servers[i], "replication", "master_port", port,
                       sizeof port);
  int want = rt_server_port(g->servers[g->master]);
  if (strcmp(role, "slave") == 0 && strcmp(link, "up") == 0 &&
      atoi(port) == want)
    return true;
  snprintf(why, cap,
           "server %d (port %d) has role %s, master_port:%s, "
           "master_link_status:%s; the master is on port %d",
           i, rt_server_port(g->servers[i]), role, port, link, want);
  return false;
}

/* The master's `want` replicas receive its command stream: a write on
 * the harness's connection (PUBLISH, which replicas get but which changes
 * no key) acknowledged by all of them (WAIT). A replica can report
 * master_link_status:up while its master still holds the stream back:
 * after a diskless full sync a Redis 7.0 master streams to the replica only
 * once it has the replica's REPLCONF ACK, and one that comes before the
 * master has seen its RDB child end is not counted, so the stream waits
 * for the replica's next once-a-second ACK. WAIT asks for an ACK at once
 * (REPLCONF GETACK). A failover in that window would promote a replica
 * without the master's latest writes. */
static bool replicas_streaming(rt_sentinel_group *g, int want, char *why,
                               size_t cap) {
  rt_server *m = g->servers[g->master];
  freeReplyObject(rt_cmd(m, "PUBLISH rt-sentinel:streaming 1"));
  long long acked = rt_cmd_int(m, "WAIT %d 100", want);
  snprintf(why, cap, "%lld of %d replicas acknowledged the master's write",
           acked, want);
  return acked >= want;
}

static bool pred_replicas_in_sync(void *arg, char *why, size_t cap) {
  rt_sentinel_group *g = arg;
  int want = 0;
  for (int i = 0; i < g->nservers; i++) {
    if (i == g->master || !running(g->servers[i]))
      continue;
    if (!replica_in_sync(g, i, why, cap))
      return false;
    want++;
  }
  return want == 0 || replicas_streaming(g, want, why, cap);
}

void rt_sentinel_wait_replicas(rt_sentinel_group *g, int64_t timeout_ms) {
  rt_wait_until(pred_replicas_in_sync, g, timeout_ms,
                "rt_sentinel_wait_replicas");
}

/* ------------------------------------------------------------------------ */
/* Start and free                                                           */
/* ------------------------------------------------------------------------ */

static bool valid_name(const char *name) {
  size_t len = strlen(name);
  return len > 0 && len < sizeof((rt_sentinel_group *)0)->name &&
         strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789-_.") == len;
}

/* Data server i's address (rt_sentinel_place, else 127.0.0.1). */
static const char *server_host(const rt_sentinel_group *g, int i) {
  return i < RT_SENTINEL_PLACE_MAX && g->place.server_host[i]
             ? g->place.server_host[i]
             : "127.0.0.1";
}

static const char *sentinel_host(const rt_sentinel_group *g, int i) {
  return i < RT_SENTINEL_PLACE_MAX && g->place.sentinel_host[i]
             ? g->place.sentinel_host[i]
             : "127.0.0.1";
}

static rt_server *start_data_server(rt_sentinel_group *g, int i,
                                    const char *const *args) {
  bool placed = i < RT_SENTINEL_PLACE_MAX;
  return rt_server_start_opts(
      &(rt_server_opts){.extra_args = args,
                        .host = placed ? g->place.server_host[i] : NULL,
                        .prefix = placed ? g->place.server_prefix[i] : NULL});
}

static void start_data_servers(rt_sentinel_group *g, int replicas) {
  /* No 5 s wait before a replica's first full sync. */
  const char *const master_args[] = {"--repl-diskless-sync-delay", "0", NULL};
  g->servers[0] = start_data_server(g, 0, master_args);
  g->nservers = 1;
  char port[16];
  snprintf(port, sizeof port, "%d", rt_server_port(g->servers[0]));
  const char *const replica_args[] = {
      "--repl-diskless-sync-delay",
      "0",
      "--replicaof",
      server_host(g, 0),
      port,
      NULL,
  };
  for (int i = 1; i <= replicas; i++) {
    g->servers[i] = start_data_server(g, i, replica_args);
    g->nservers = i + 1;
  }
}

static void start_sentinels(rt_sentinel_group *g, int sentinels) {
  char config[512];
  snprintf(config, sizeof config,
           "sentinel monitor %s %s %d %d\n"
           "sentinel down-after-milliseconds %s %d\n"
           "sentinel failover-timeout %s %d\n"
           "sentinel parallel-syncs %s 1\n",
           g->name, server_host(g, 0), rt_server_port(g->servers[0]),
           sentinels / 2 + 1, g->name, RT_SENTINEL_DOWN_AFTER_MS, g->name,
           RT_SENTINEL_FAILOVER_TIMEOUT_MS, g->name);
  size_t len = (size_t)snprintf(g->url, sizeof g->url, "redis-sentinel://");
  size_t tlen =
      (size_t)snprintf(g->tls_url, sizeof g->tls_url, "redis-sentinel://");
  for (int i = 0; i < sentinels; i++) {
    char port[16];
    const char *tls_args[RT_TLS_ARGS];
    const char *const *args = NULL;
    if (g->tls) {
      rt_tls_args(g->tls, &g->tls_port[i], port, "no", tls_args);
      args = tls_args;
      tlen +=
          (size_t)snprintf(g->tls_url + tlen, sizeof g->tls_url - tlen,
                           "%s127.0.0.1:%d", i > 0 ? "," : "", g->tls_port[i]);
    }
    bool placed = i < RT_SENTINEL_PLACE_MAX;
    g->sentinels[i] = rt_server_start_opts(&(rt_server_opts){
        .config = config,
        .extra_args = args,
        .sentinel = true,
        .host = placed ? g->place.sentinel_host[i] : NULL,
        .prefix = placed ? g->place.sentinel_prefix[i] : NULL});
    g->nsentinels = i + 1;
    len += (size_t)snprintf(g->url + len, sizeof g->url - len, "%s%s:%d",
                            i > 0 ? "," : "", sentinel_host(g, i),
                            rt_server_port(g->sentinels[i]));
  }
  snprintf(g->url + len, sizeof g->url - len, "#%s", g->name);
  if (g->tls)
    snprintf(g->tls_url + tlen, sizeof g->tls_url - tlen,
             "?sentinel_tls=yes&tls_ca=%s#%s", g->tls->ca, g->name);
}

static rt_sentinel_group *start(const char *master_name, int replicas,
                                int sentinels, const struct rt_tls *tls,
                                const rt_sentinel_place *place);

rt_sentinel_group *rt_sentinel_start(const char *master_name, int replicas,
                                     int sentinels) {
  return start(master_name, replicas, sentinels, NULL, NULL);
}

rt_sentinel_group *rt_sentinel_start_placed(const char *master_name,
                                            int replicas, int sentinels,
                                            const rt_sentinel_place *place) {
  if (replicas + 1 > RT_SENTINEL_PLACE_MAX ||
      sentinels > RT_SENTINEL_PLACE_MAX) {
    fail_msg("rt_sentinel_start_placed: at most %d of each, please",
             RT_SENTINEL_PLACE_MAX);
    return NULL;
  }
  return start(master_name, replicas, sentinels, NULL, place);
}

rt_sentinel_group *rt_sentinel_start_tls(const char *master_name, int replicas,
                                         int sentinels,
                                         const struct rt_tls *tls) {
  return start(master_name, replicas, sentinels, tls, NULL);
}

const char *rt_sentinel_tls_url(const rt_sentinel_group *g) {
  return g->tls ? g->tls_url : NULL;
}

static rt_sentinel_group *start(const char *master_name, int replicas,
                                int sentinels, const struct rt_tls *tls,
                                const rt_sentinel_place *place) {
  if (!valid_name(master_name) || replicas < 0 ||
      replicas >= RT_SENTINEL_MAX_SERVERS || sentinels < 1 ||
      sentinels > RT_SENTINEL_MAX) {
    fail_msg(
        "rt_sentinel_start(\"%s\", %d, %d): a plain name, 0 to %d replicas, "
        "1 to %d sentinels, please",
        master_name, replicas, sentinels, RT_SENTINEL_MAX_SERVERS - 1,
        RT_SENTINEL_MAX);
    return NULL;
  }
  rt_sentinel_group *g = calloc(1, sizeof *g);
  if (!g) {
    fail_msg("rt_sentinel_start: out of memory");
    return NULL;
  }
  snprintf(g->name, sizeof g->name, "%s", master_name);
  g->tls = tls;
  if (place)
    g->place = *place;
  start_data_servers(g, replicas);
  /* Sentinels learn the replicas from the master's INFO, which they ask
     at once on connecting, but then only every 10 s: in sync first. */
  rt_wait_until(pred_replicas_in_sync, g,
                rt_scaled_ms(RT_SENTINEL_START_TIMEOUT_MS),
                "rt_sentinel_start: replicas in sync");
  start_sentinels(g, sentinels);
  rt_wait_until(pred_sentinels_ready, g,
                rt_scaled_ms(RT_SENTINEL_START_TIMEOUT_MS),
                "rt_sentinel_start: sentinels ready");
  return g;
}

void rt_sentinel_free(rt_sentinel_group *g) {
  if (!g)
    return;
  /* Sentinels first: they would otherwise react to the servers going. */
  for (int i = 0; i < g->nsentinels; i++)
    rt_server_free(g->sentinels[i]);
  for (int i = 0; i < g->nservers; i++)
    rt_server_free(g->servers[i]);
  free(g);
}

/* ------------------------------------------------------------------------ */
/* Getters                                                                  */
/* ------------------------------------------------------------------------ */

const char *rt_sentinel_name(const rt_sentinel_group *g) { return g->name; }
int rt_sentinel_nservers(const rt_sentinel_group *g) { return g->nservers; }
rt_server *rt_sentinel_master(const rt_sentinel_group *g) {
  return g->servers[g->master];
}
int rt_sentinel_master_index(const rt_sentinel_group *g) { return g->master; }
int rt_sentinel_nreplicas(const rt_sentinel_group *g) {
  return g->nservers - 1;
}
int rt_sentinel_nsentinels(const rt_sentinel_group *g) { return g->nsentinels; }
const char *rt_sentinel_url(const rt_sentinel_group *g) { return g->url; }
int64_t rt_sentinel_failover_ms(const rt_sentinel_group *g) {
  return g->failover_ms;
}

rt_server *rt_sentinel_server(const rt_sentinel_group *g, int i) {
  return i >= 0 && i < g->nservers ? g->servers[i] : NULL;
}

rt_server *rt_sentinel_replica(const rt_sentinel_group *g, int i) {
  if (i < 0 || i >= g->nservers - 1)
    return NULL;
  return g->servers[i < g->master ? i : i + 1];
}

rt_server *rt_sentinel_sentinel(const rt_sentinel_group *g, int i) {
  return i >= 0 && i < g->nsentinels ? g->sentinels[i] : NULL;
}

int rt_sentinel_master_port(rt_sentinel_group *g) {
  char why[256];
  return majority_port(g, why, sizeof why);
}

/* ------------------------------------------------------------------------ */
/* Failover                                                                 */
/* ------------------------------------------------------------------------ */

void rt_sentinel_kill_master(rt_sentinel_group *g) {
  rt_server *m = g->servers[g->master];
  if (!running(m)) {
    fail_msg("rt_sentinel_kill_master: the master (port %d) is not running",
             rt_server_port(m));
    return;
  }
  g->switch_started_ms = rt_now_ms();
  rt_server_kill(m);
}

struct switch_wait {
  rt_sentinel_group *g;
  int new_master; /* out: server index */
};

/* A majority reports another of our servers, which says it is a master. */
static bool pred_switched(void *arg, char *why, size_t cap) {
  struct switch_wait *w = arg;
  rt_sentinel_group *g = w->g;
  int port = majority_port(g, why, cap);
  int i = port > 0 ? server_by_port(g, port) : -1;
  size_t len = strlen(why);
  if (i < 0 || i == g->master) {
    snprintf(why + len, cap - len, "; no majority for a new master of ours");
    return false;
  }
  char role[16] = "down";
  if (running(g->servers[i]))
    rt_server_role(g->servers[i], role, sizeof role);
  if (strcmp(role, "master") != 0) {
    snprintf(why + len, cap - len, "; server %d (port %d) has role %s", i, port,
             role);
    return false;
  }
  w->new_master = i;
  return true;
}

int rt_sentinel_wait_failover(rt_sentinel_group *g, int64_t timeout_ms) {
  int64_t start = g->switch_started_ms ? g->switch_started_ms : rt_now_ms();
  struct switch_wait w = {g, -1};
  rt_wait_until(pred_switched, &w, timeout_ms, "rt_sentinel_wait_failover");
  g->failover_ms = rt_now_ms() - start;
  g->switch_started_ms = 0;
  g->master = w.new_master;
  return rt_server_port(g->servers[g->master]);
}

/* SENTINEL FAILOVER was accepted by a running sentinel. */
static bool pred_failover_accepted(void *arg, char *why, size_t cap) {
  rt_sentinel_group *g = arg;
  for (int i = 0; i < g->nsentinels; i++) {
    if (!running(g->sentinels[i]))
      continue;
    redisReply *r = rt_cmd(g->sentinels[i], "SENTINEL FAILOVER %s", g->name);
    bool ok = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
    bool retry = r->type == REDIS_REPLY_ERROR &&
                 (strncmp(r->str, "NOGOODSLAVE", 11) == 0 ||
                  strncmp(r->str, "INPROG", 6) == 0);
    snprintf(why, cap, "sentinel %d (port %d) answers %s", i,
             rt_server_port(g->sentinels[i]), r->str ? r->str : "?");
    freeReplyObject(r);
    if (!ok && !retry)
      fail_msg("rt_sentinel_failover: %s", why);
    return ok;
  }
  snprintf(why, cap, "no sentinel is running");
  return false;
}

int rt_sentinel_failover(rt_sentinel_group *g, int64_t timeout_ms) {
  int64_t start = rt_now_ms();
  g->switch_started_ms = start;
  rt_wait_until(pred_failover_accepted, g, timeout_ms, "rt_sentinel_failover");
  int64_t left = timeout_ms - (rt_now_ms() - start);
  return rt_sentinel_wait_failover(g, left > 0 ? left : 0);
}

int rt_sentinel_failover_settled(rt_sentinel_group *g, int64_t timeout_ms) {
  int64_t start = rt_now_ms();
  int old = g->master;
  int port = rt_sentinel_failover(g, timeout_ms);
  rt_server *o = g->servers[old];
  char role[16] = "";
  if (running(o))
    rt_server_role(o, role, sizeof role);
  if (strcmp(role, "master") == 0) /* the sentinels' +convert-to-slave */
    rt_cmd_ok(o, "REPLICAOF %s %d", server_host(g, g->master), port);
  int64_t left = timeout_ms - (rt_now_ms() - start);
  rt_sentinel_wait_replicas(g, left > 0 ? left : 0);
  return port;
}
