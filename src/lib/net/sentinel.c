/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sentinel.c - asking Sentinel which server is the master.
 */
#include "sentinel.h"

#include <stdio.h>
#include <string.h>

#include "common.h"
#include "obs.h"
#include "conn.h"

/* The master `s` names, as "host:port" in addr; RLOCK_OK or a failure
 * (*unknown set when the sentinel answered that it knows no such master). */
static int ask_sentinel(rlock__topo *t, const rlock__endpoint *s, char *addr,
                        size_t size, int *unknown) {
  rlock__conn *conn;
  int rc = rlock__conn_open(&conn, s, t->connect_ms, t->command_ms);
  if (rc != RLOCK_OK)
    return rc;
  const char *argv[3] = {"SENTINEL", "get-master-addr-by-name",
                         t->target.master};
  rlock__reply *r;
  rc = rlock__conn_call(conn, 3, argv, NULL, &r);
  if (rc == RLOCK_OK) {
    if (r->type == RLOCK__R_ERROR) /* NOAUTH, WRONGPASS: RLOCK_EAUTH */
      rc = rlock__err(rlock__error_status(conn->where, r), "sentinel %s: %s",
                      conn->where, r->str);
    else if (r->type != RLOCK__R_ARRAY || r->n != 2 ||
             r->elem[0]->type != RLOCK__R_STR ||
             r->elem[1]->type != RLOCK__R_STR) {
      *unknown = 1;
      rc = rlock__err(RLOCK_EIO, "sentinel %s knows no master named '%s'",
                      conn->where, t->target.master);
    } else
      snprintf(addr, size, "%s:%s", r->elem[0]->str, r->elem[1]->str);
    rlock__reply_free(r);
  }
  rlock__conn_close(conn);
  return rc;
}

/* RLOCK_OK when `node` says ROLE master. */
static int check_role(rlock__node *node) {
  const char *argv[1] = {"ROLE"};
  rlock__reply *r;
  int rc = rlock__topo_node_call(node, 1, argv, &r);
  if (rc != RLOCK_OK)
    return rc;
  if (r->type == RLOCK__R_ERROR)
    rc = rlock__error_status(node->where, r);
  else if (r->type != RLOCK__R_ARRAY || r->n == 0 ||
           !rlock__reply_is(r->elem[0], "master"))
    rc = rlock__err(RLOCK_EIO,
                    "sentinel named %s as master, but it is not "
                    "one (yet)",
                    node->where);
  rlock__reply_free(r);
  return rc;
}

int rlock__sentinel_refresh(rlock__topo *t) {
  int rc = rlock__err(RLOCK_EIO, "sentinel: no sentinel configured");
  int answered = 0, unknown = 0;
  rlock__node *refused = NULL; /* named already, and not a master now */
  for (size_t i = 0; i < t->target.n; i++) {
    char addr[300];
    rlock__node *node;
    int u = 0;
    rc = ask_sentinel(t, &t->target.addrs[i], addr, sizeof addr, &u);
    answered += rc == RLOCK_OK || u;
    unknown += u;
    /* A name every sentinel that answered does not know is a mistake in
     * the URL, not an outage to ride out (cmd.c does not retry it). */
    atomic_store(&t->no_master, answered > 0 && unknown == answered);
    if (rc != RLOCK_OK)
      continue;
    if ((rc = rlock__topo_node_at(t, addr, &node)) != RLOCK_OK)
      continue;
    if (node == refused) /* a hung master costs one timeout, not one each */
      continue;
    if ((rc = check_role(node)) != RLOCK_OK) {
      refused = node;
      continue;
    }
    rlock__node *was = atomic_exchange(&t->primary, node);
    if (was != node && was != NULL) { /* no lock held here */
      rlock__obs_count(t->obs, RLOCK__STAT_TOPOLOGY_CHANGES);
      rlock__obs_log(t->obs, RLOCK_LOG_INFO,
                     "sentinel: master '%s' is now "
                     "%s (was %s)",
                     t->target.master, node->where, was->where);
    }
    if (was != node && t->on_change != NULL)
      t->on_change(t->on_change_arg);
    return RLOCK_OK;
  }
  return rc;
}

/* ---- +switch-master --------------------------------------------------- */

#define WATCH_BACKOFF_MIN_MS 100
#define WATCH_BACKOFF_MAX_MS 5000

int rlock__sentinel_watch_fd(const rlock__sentinel_watch *w) {
  return w->conn ? w->conn->fd : -1;
}

void rlock__sentinel_watch_close(rlock__sentinel_watch *w) {
  rlock__conn_close(w->conn);
  w->conn = NULL;
}

static void watch_failed(rlock__sentinel_watch *w) {
  rlock__sentinel_watch_close(w);
  if (w->backoff_ms < WATCH_BACKOFF_MIN_MS)
    w->backoff_ms = WATCH_BACKOFF_MIN_MS;
  w->reconnect_at_us = rlock__now_us() + w->backoff_ms * 1000;
  w->backoff_ms *= 2;
  if (w->backoff_ms > WATCH_BACKOFF_MAX_MS)
    w->backoff_ms = WATCH_BACKOFF_MAX_MS;
}

/* Subscribe on the first sentinel that takes it. */
static void watch_connect(rlock__topo *t, rlock__sentinel_watch *w) {
  static const char *argv[2] = {"SUBSCRIBE", "+switch-master"};
  rlock__saved_error saved;
  rlock__error_save(&saved);
  for (size_t i = 0; i < t->target.n && w->conn == NULL; i++) {
    if (rlock__conn_open(&w->conn, &t->target.addrs[i], t->connect_ms,
                         t->command_ms) != RLOCK_OK)
      continue;
    /* Only a confirmed subscription counts: a hung sentinel accepts the
     * connection and would never tell of a switch. */
    rlock__reply *r = NULL;
    if (rlock__conn_call(w->conn, 2, argv, NULL, &r) != RLOCK_OK ||
        r->type != RLOCK__R_ARRAY || r->n < 1 ||
        !rlock__reply_is(r->elem[0], "subscribe"))
      rlock__sentinel_watch_close(w);
    rlock__reply_free(r);
  }
  rlock__error_restore(&saved);
  if (w->conn == NULL)
    watch_failed(w);
  else
    w->backoff_ms = WATCH_BACKOFF_MIN_MS;
}

/* "+switch-master" messages read "<name> <old ip> <old port> <new ip>
 * <new port>". */
static int names_our_master(const rlock__topo *t, const rlock__reply *r) {
  if (r->type != RLOCK__R_ARRAY || r->n != 3 ||
      !rlock__reply_is(r->elem[0], "message") ||
      r->elem[2]->type != RLOCK__R_STR)
    return 0;
  size_t n = strlen(t->target.master);
  return strncmp(r->elem[2]->str, t->target.master, n) == 0 &&
         r->elem[2]->str[n] == ' ';
}

int64_t rlock__sentinel_watch_service(rlock__topo *t, rlock__sentinel_watch *w,
                                      int readable) {
  if (w->conn == NULL) {
    if (rlock__now_us() < w->reconnect_at_us)
      return w->reconnect_at_us;
    watch_connect(t, w);
    return w->conn ? INT64_MAX : w->reconnect_at_us;
  }
  if (!readable)
    return INT64_MAX;
  int switched = 0;
  if (rlock__conn_read_some(w->conn) != RLOCK_OK) {
    watch_failed(w);
    return w->reconnect_at_us;
  }
  for (;;) {
    rlock__reply *r;
    if (rlock__conn_take_reply(w->conn, &r) != RLOCK_OK) {
      watch_failed(w);
      return w->reconnect_at_us;
    }
    if (r == NULL)
      break;
    switched |= names_our_master(t, r);
    rlock__reply_free(r);
  }
  if (switched)
    rlock__topo_refresh_now(t);
  return INT64_MAX;
}
