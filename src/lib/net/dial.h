/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dial.h - opening a connection in steps that never wait, shared by both
 * drivers: the blocking connection (conn.c) waits between the steps with
 * poll() until its deadline; a loop connection (loop/lconn.c) waits for
 * the event loop to say the socket is ready.
 *
 * A dial tries the resolved addresses in turn (a refused or unreachable
 * address moves on to the next), sets TCP_NODELAY and SO_KEEPALIVE, then
 * runs the TLS handshake where the endpoint speaks TLS. The login that
 * follows (AUTH, SELECT) is the same list of commands for both drivers
 * (rlock__login_*), and a refusal is RLOCK_EAUTH for both.
 */
#ifndef RLOCK_DIAL_H
#define RLOCK_DIAL_H

#include <netdb.h>
#include <stdint.h>

#include "endpoint.h"
#include "reply.h"
#include "tls.h"

typedef struct rlock__dial {
  const rlock__endpoint *ep; /* borrowed */
  struct addrinfo *res;      /* owned; NULL for a unix socket */
  struct addrinfo *cur;      /* the address being tried */
  int fd;                    /* the socket being connected, or -1 */
  int stage;                 /* internal */
  int err;                   /* the last connect's errno */
  rlock__tls_conn *tls;      /* after the handshake: the caller's */
  const char *where;         /* "host:port", for messages (borrowed) */
} rlock__dial;

/* Results of rlock__dial_step besides a negative status. */
#define RLOCK__DIAL_UP 1   /* connected (and TLS through): take fd, tls */
#define RLOCK__DIAL_WAIT 0 /* wait until fd is ready for *want, step again */

/* Begin dialing `ep` at the addresses `res` (taken over; NULL for a unix
 * socket). Does not connect yet: call rlock__dial_step(). */
void rlock__dial_begin(rlock__dial *d, const rlock__endpoint *ep,
                       struct addrinfo *res, const char *where);

/* Move on without waiting: RLOCK__DIAL_UP, RLOCK__DIAL_WAIT with *want
 * (POLLIN or POLLOUT) to wait for on d->fd, or a status with the last
 * error set once every address failed (the dial is then over). */
int rlock__dial_step(rlock__dial *d, short *want);

/* The time ran out while waiting: the status and message for it (the
 * dial is then over). */
int rlock__dial_timed_out(rlock__dial *d, int64_t connect_ms);

/* Take the connected socket (non-blocking) and its TLS session. */
void rlock__dial_take(rlock__dial *d, int *fd, rlock__tls_conn **tls);

/* Give up: close what is open, free the addresses. Safe after any step. */
void rlock__dial_end(rlock__dial *d);

/* The login command number `i` (0, 1, ...) for `ep`: AUTH when it has a
 * password, then SELECT when its database is not 0. Returns argc, or 0
 * when there are no more; `db` is room for the database number. */
int rlock__login_command(const rlock__endpoint *ep, int i, const char **argv,
                         char db[24]);

/* A login command's reply: RLOCK_OK, or RLOCK_EAUTH naming the command
 * and the server's words (an error reply). */
int rlock__login_check(const char *where, const char *word,
                       const rlock__reply *r);

#endif /* RLOCK_DIAL_H */
