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

/* How long a borrower waits for replies owed to abandoned requests (on a
 * healthy server they are already there) before dropping the connection. */
#define RLOCK__DRAIN_MS 20

typedef struct rlock__pool {
  pthread_mutex_t mu;
  pthread_cond_t cv;  /* signalled when a connection is returned */
  rlock__conn **idle; /* stack of idle connections */
  int nidle;
  int total;   /* idle + borrowed + being opened */
  int opening; /* rlock__pool_open_async() threads still running */
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

/* Close every idle connection and free the pool's memory, after waiting
 * for connections being opened in the background (each bounded by the
 * connect timeout). No connection may be borrowed. */
void rlock__pool_destroy(rlock__pool *p);

/* Borrow a connection, opening one when none is idle and the pool is
 * below its size, else waiting for one up to the command timeout. In a
 * fork()ed child of the process that made the pool: RLOCK_ECLOSED at once,
 * touching nothing (see rlock__origin). */
int rlock__pool_get(rlock__pool *p, rlock__conn **out);

/* Give a connection back; a broken one is closed instead. */
void rlock__pool_put(rlock__pool *p, rlock__conn *c);

/* Borrow an idle connection, never opening one or waiting: RLOCK_OK with
 * *out NULL when none is idle. RLOCK_ECLOSED in a fork()ed child. */
int rlock__pool_get_idle(rlock__pool *p, rlock__conn **out);

/* A connection being opened on a thread of its own, so that a caller
 * driving several servers (the RedLock fan-out) waits for none of them:
 * poll `fd` (readable once the outcome is known), then
 * rlock__pool_open_take(). */
typedef struct rlock__opening rlock__opening;

/* Start opening a connection of `p` (rlock__pool_get's rules: a free
 * slot, or the wait for one, then the connect) on a detached thread.
 * RLOCK_OK with *out set, RLOCK_ENOMEM, or RLOCK_EIO when no thread can
 * be started. */
int rlock__pool_open_async(rlock__pool *p, rlock__opening **out);

/* A descriptor that polls readable once the opening has an outcome. */
int rlock__pool_open_fd(const rlock__opening *o);

/* The outcome, once known: 1 with *rc (and *conn when RLOCK_OK; the
 * failure's message in `msg`), and the opening freed; 0 while it runs. */
int rlock__pool_open_take(rlock__opening *o, int *rc, rlock__conn **conn,
                          char *msg, size_t size);

/* Give up on an opening: a connection it makes goes back to the pool
 * (warm for the next user); it frees itself. */
void rlock__pool_open_abandon(rlock__opening *o);

#endif /* RLOCK_POOL_H */
