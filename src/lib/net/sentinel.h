/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sentinel.h - finding the master through Redis Sentinel.
 */
#ifndef RLOCK_SENTINEL_H
#define RLOCK_SENTINEL_H

#include "conn.h"
#include "topo.h"

/* The background thread's subscription to +switch-master on one sentinel
 * (the first that answers, in order), so a failover is noticed as soon as
 * Sentinel announces it rather than at the next failed command. */
typedef struct rlock__sentinel_watch {
  rlock__conn *conn;
  int64_t reconnect_at_us;
  int64_t backoff_ms;
  int64_t heard_us;     /* when the sentinel last sent anything */
  int64_t ping_sent_us; /* a health-check PING unanswered since, or 0 */
} rlock__sentinel_watch;

/* A watch silent this long is sent a PING; no answer within the command
 * timeout drops it, and the next sentinel is tried (a hung sentinel keeps
 * its socket open and would never tell of a switch). */
#define RLOCK__WATCH_PING_IDLE_US ((int64_t)30 * 1000 * 1000)

/* The fd to poll, or -1. */
int rlock__sentinel_watch_fd(const rlock__sentinel_watch *w);

/* Connect and subscribe when needed, read what arrived when `readable`;
 * a +switch-master for our master refreshes the topology at once. Returns
 * when it next wants to run (monotonic us). Background thread only. */
int64_t rlock__sentinel_watch_service(rlock__topo *t, rlock__sentinel_watch *w,
                                      int readable);

/* Close. */
void rlock__sentinel_watch_close(rlock__sentinel_watch *w);

/* 1 when `r` is a +switch-master message about the target's master
 * ("<name> <old ip> <old port> <new ip> <new port>"). */
int rlock__sentinel_names_master(const rlock__topo *t, const rlock__reply *r);

#endif /* RLOCK_SENTINEL_H */
