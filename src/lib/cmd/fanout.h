/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fanout.h - one script on several servers at once, from one thread.
 *
 * Each request borrows an idle connection from its client's pool and
 * sends its call; a request whose pool has none opens one on a thread of
 * its own (rlock__pool_open_async), so connecting to one slow or
 * unreachable server (name lookup, connect, TLS, login) delays no other:
 * its call goes out when the connection is there. One poll() loop
 * collects the connections and the replies as they come and feeds
 * them to each call's request state machine (cmd.h: EVAL after NOSCRIPT,
 * the error rule), so N servers cost about one round trip, not N. After
 * every completed request a `decide` callback may end the round early (a
 * quorum reached, or no longer reachable): requests still pending are then
 * abandoned; each keeps its connection, marked as owing one reply, which
 * the pool drains before lending it again (a late reply is never read as
 * another command's). A request that timed out drops its connection.
 */
#ifndef RLOCK_FANOUT_H
#define RLOCK_FANOUT_H

#include <stdint.h>

#include "cmd.h"
#include "conn.h"
#include "pool.h"

typedef struct rlock_client rlock_client;

/* Most requests in one fan-out. */
#define RLOCK__FANOUT_MAX 64

/* Status of a request abandoned by `decide` before its reply came. */
#define RLOCK__EABANDONED (-1001)

typedef struct rlock__fan {
  /* in */
  rlock_client *client;
  rlock__call call; /* built by the caller (any kind's call builder) */
  /* out */
  int rc;              /* RLOCK_OK (reply set), an error, RLOCK__EABANDONED */
  rlock__reply *reply; /* on RLOCK_OK; the caller frees it */
  char error[256];     /* the message when rc is an error */
  /* private */
  rlock__req req;
  rlock__pool *pool;       /* of the node the request was sent to */
  rlock__opening *opening; /* its connection, being opened, or NULL */
  int64_t opened_us;       /* when that connection was ready, or 0 */
  rlock__conn *conn;
  int done;
} rlock__fan;

/* Run `n` requests concurrently until each is done, `deadline_us` passes
 * (pending ones fail with RLOCK_ETIMEOUT) or decide(arg) returns nonzero
 * after a completion (pending ones get RLOCK__EABANDONED). Clears every
 * request's call. */
void rlock__fanout(rlock__fan *reqs, size_t n, int64_t deadline_us,
                   int (*decide)(void *arg), void *arg);

#endif /* RLOCK_FANOUT_H */
