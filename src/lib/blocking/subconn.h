/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * subconn.h - one subscriber connection, driven by the background thread.
 *
 * Classic pub/sub uses one, on whatever node the topology names for
 * keyless commands (a cluster forwards PUBLISH everywhere). Sharded
 * pub/sub uses one per node that owns a waited-for channel's slot, and
 * closes it when no subscription needs it any more.
 *
 * Each reconnects with back-off (25 ms doubling to 1 s, reset only by a
 * confirmed subscription, so a server that accepts and closes is not
 * hammered) and is checked for silent death: an (UN)SUBSCRIBE not
 * confirmed, or a PING (sent after 30 s of silence) not answered, within
 * the command timeout makes it be dropped and redone.
 */
#ifndef RLOCK_SUBCONN_H
#define RLOCK_SUBCONN_H

#include <stdint.h>

#include "conn.h"
#include "pubsub.h"
#include "topo.h"

struct rlock__subconn {
  rlock__node *node; /* sharded: the node it serves; classic: NULL */
  rlock__conn *conn; /* NULL while disconnected */
  rlock__node *at;   /* the node conn is connected to */
  int64_t reconnect_at_us;
  int64_t backoff_ms;
  int64_t last_rx_us;   /* last time the connection said anything */
  int64_t ping_sent_us; /* an unanswered PING, or 0 */
  int used;   /* subscriptions are assigned to it (as of the last change) */
  int wanted; /* ... and some of them have users */
  int lost;   /* dropped since it last connected: the next connect is a
                 reconnection (logged at INFO) */
  /* Under ps.mu: conn's fd while connected, else -1 (what a direct waiter
   * polls), and a count of the reads of pushes so far. */
  int pub_fd;
  uint64_t read_gen;
  /* Under ps.mu: in the background thread's poll() now (rlock__pubsub
   * _pollfds); a user that needs it read wakes the thread when it is not.
   * While no thread of the client waits (rlock__pubsub.users == 0) a
   * connection is quiet: left out and read lazily, by lazy_due_us, so the
   * unlock this client publishes itself, which its lingering subscription
   * receives, wakes no thread at the moment of the handoff. */
  int polled;
  int64_t lazy_due_us;
  /* Under ps.mu: a lingering subscription taken again asks for what the
   * quiet connection holds unread to be read and its unlock messages
   * dropped (they are older than the attempt that follows), and waits
   * until drained_gen moves. */
  int drain;
  uint64_t drained_gen;
  int dropping; /* background thread: the read in progress is a drain */
};

/* Called locked (ps.mu) by a thread about to wait on sc, the client's
 * only user, while the background thread leaves sc unread (not polled, no
 * drain asked, nothing buffered in its reader): read and drop the whole
 * (s)message pushes at the head of the socket, which are older than the
 * attempt that follows, without waking the background thread. 1 when the
 * socket was left with nothing (so nothing is stale), 0 when anything
 * else is there (a confirmation, a PONG, the end, an error) for the
 * background thread to read; the messages before it are gone either way.
 * Plain-text connections only (pub_fd). */
int rlock__subconn_drop_stale(rlock__subconn *sc);

/* Close and free. NULL is ignored. */
void rlock__subconn_free(rlock__subconn *sc);

#endif /* RLOCK_SUBCONN_H */
