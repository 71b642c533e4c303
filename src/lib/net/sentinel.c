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
  if (w->conn == NULL) {
    watch_failed(w);
  } else {
    w->backoff_ms = WATCH_BACKOFF_MIN_MS;
    w->heard_us = rlock__now_us();
    w->ping_sent_us = 0;
  }
}

/* "+switch-master" messages read "<name> <old ip> <old port> <new ip>
 * <new port>". */
int rlock__sentinel_names_master(const rlock__topo *t, const rlock__reply *r) {
  if (r->type != RLOCK__R_ARRAY || r->n != 3 ||
      !rlock__reply_is(r->elem[0], "message") ||
      r->elem[2]->type != RLOCK__R_STR)
    return 0;
  size_t n = strlen(t->target.master);
  return strncmp(r->elem[2]->str, t->target.master, n) == 0 &&
         r->elem[2]->str[n] == ' ';
}

/* The health check: a watch silent for RLOCK__WATCH_PING_IDLE_US is sent
 * a PING, and one whose PING went unanswered for the command timeout is
 * dropped (the next connect tries the sentinels again). Returns when to
 * look again. */
static int64_t watch_health(rlock__topo *t, rlock__sentinel_watch *w) {
  int64_t now = rlock__now_us();
  if (w->ping_sent_us != 0) {
    int64_t due = w->ping_sent_us + t->command_ms * 1000;
    if (now < due)
      return due;
    rlock__obs_log(t->obs, RLOCK_LOG_WARN,
                   "sentinel %s: no answer to PING within %lld ms; watching "
                   "+switch-master elsewhere",
                   w->conn->where, (long long)t->command_ms);
    watch_failed(w);
    return w->reconnect_at_us;
  }
  int64_t idle = w->heard_us + RLOCK__WATCH_PING_IDLE_US;
  if (now < idle)
    return idle;
  static const char ping[] = "*1\r\n$4\r\nPING\r\n";
  if (rlock__conn_send(w->conn, ping, sizeof ping - 1) != RLOCK_OK) {
    watch_failed(w);
    return w->reconnect_at_us;
  }
  w->ping_sent_us = now;
  return now + t->command_ms * 1000;
}

int64_t rlock__sentinel_watch_service(rlock__topo *t, rlock__sentinel_watch *w,
                                      int readable) {
  if (w->conn == NULL) {
    if (rlock__now_us() < w->reconnect_at_us)
      return w->reconnect_at_us;
    watch_connect(t, w);
    return w->conn ? watch_health(t, w) : w->reconnect_at_us;
  }
  if (!readable)
    return watch_health(t, w);
  int switched = 0;
  if (rlock__conn_read_some(w->conn) != RLOCK_OK) {
    watch_failed(w);
    return w->reconnect_at_us;
  }
  w->heard_us = rlock__now_us(); /* a PONG, a message: it is alive */
  w->ping_sent_us = 0;
  for (;;) {
    rlock__reply *r;
    if (rlock__conn_take_reply(w->conn, &r) != RLOCK_OK) {
      watch_failed(w);
      return w->reconnect_at_us;
    }
    if (r == NULL)
      break;
    switched |= rlock__sentinel_names_master(t, r);
    rlock__reply_free(r);
  }
  if (switched)
    rlock__topo_refresh_now(t);
  return w->conn != NULL ? watch_health(t, w) : w->reconnect_at_us;
}
