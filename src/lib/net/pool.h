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

#include "conn.h"
#include "endpoint.h"

/* How long a borrower waits for replies owed to abandoned requests (on a
 * healthy server they are already there) before dropping the connection. */
#define RLOCK__DRAIN_MS 20

typedef struct rlock__pool {
  pthread_mutex_t mu;
  pthread_cond_t cv;  /* signalled when a connection is returned */
  rlock__conn **idle; /* stack of idle connections */
  int nidle;
  int total; /* idle + borrowed + being opened */
  int max;
  int closed;
  rlock__endpoint ep;
  int64_t connect_ms;
  int64_t command_ms;
} rlock__pool;

int rlock__pool_init(rlock__pool *p, const rlock__endpoint *ep, int max,
                     int64_t connect_ms, int64_t command_ms);

/* Close every idle connection and free the pool's memory. No connection
 * may be borrowed. */
void rlock__pool_destroy(rlock__pool *p);

/* Borrow a connection, opening one when none is idle and the pool is
 * below its size, else waiting for one up to the command timeout. */
int rlock__pool_get(rlock__pool *p, rlock__conn **out);

/* Give a connection back; a broken one is closed instead. */
void rlock__pool_put(rlock__pool *p, rlock__conn *c);

#endif /* RLOCK_POOL_H */
