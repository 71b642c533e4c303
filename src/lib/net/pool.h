/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pool.h - the command connections to one server.
 *
 * A caller borrows a connection, runs its command(s) on it from its own
 * thread, and gives it back. Idle connections are reused most-recent
 * first; a connection found stale at checkout (the server closed it, e.g.
 * after a restart) is dropped before anything is sent on it, so a lock
 * script is never sent into a dead socket and never re-sent.
 */
#ifndef RLOCK_POOL_H
#define RLOCK_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "conn.h"
#include "origin.h"
#include "endpoint.h"

typedef struct rlock__pool {
  pthread_mutex_t mu;
  pthread_cond_t cv;  /* signalled when a connection is returned */
  rlock__conn **idle; /* stack of idle connections */
  int nidle;
  int total; /* idle + borrowed + being opened */
  int max;
  rlock__endpoint ep;
  int64_t connect_ms;
  int64_t command_ms;
  rlock__origin origin;   /* the process that opened it */
  struct rlock__obs *obs; /* the client's counters and log (obs.h), or
                             NULL; set once before first use */
  atomic_int dropped;     /* connections dropped and not yet replaced
                             (the reconnects counter) */
  const char *refuse;     /* why blocking use is refused (an event-loop
                             client), or NULL; set once before first use */
} rlock__pool;

int rlock__pool_init(rlock__pool *p, const rlock__endpoint *ep, int max,
                     int64_t connect_ms, int64_t command_ms);

/* Close every idle connection and free the pool's memory. No connection
 * may be borrowed. */
void rlock__pool_destroy(rlock__pool *p);

/* Borrow a connection, opening one when none is idle and the pool is
 * below its size, else waiting for one up to the command timeout. In a
 * fork()ed child of the process that made the pool: RLOCK_ECLOSED at once,
 * touching nothing (see rlock__origin). */
int rlock__pool_get(rlock__pool *p, rlock__conn **out);

/* Give a connection back; a broken one is closed instead. */
void rlock__pool_put(rlock__pool *p, rlock__conn *c);

#endif /* RLOCK_POOL_H */
