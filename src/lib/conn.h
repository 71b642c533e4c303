/*
 * conn.h - one connection to one server: our own socket, hiredis's RESP
 * encoder and reader.
 *
 * We own the socket instead of using redisContext so that connect and
 * command timeouts, staleness checks and (later) TLS are under our
 * control; hiredis 0.14 has no TLS and no per-call timeouts.
 *
 * A connection is used by one thread at a time (the pool hands it out).
 * The socket is blocking with SO_RCVTIMEO/SO_SNDTIMEO set to the command
 * timeout: a command costs exactly one write() and usually one read().
 * Any I/O or protocol failure marks the connection broken; a broken
 * connection is never reused.
 */
#ifndef RLOCK_CONN_H
#define RLOCK_CONN_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "endpoint.h"

typedef struct rlock__conn {
  int fd;
  int broken;
  int64_t timeout_ms;     /* the command timeout */
  int owed;               /* replies still due to requests nobody awaits */
  int64_t io_deadline_us; /* end of the current command, or 0 */
  redisReader *reader;
  char where[128]; /* "host:port" for messages */
} rlock__conn;

/* Connect within `connect_ms`, set the command timeout, then AUTH and
 * SELECT as the endpoint asks. RLOCK_EIO, RLOCK_ETIMEOUT, RLOCK_EAUTH or
 * RLOCK_ENOMEM on failure. */
int rlock__conn_open(rlock__conn **out, const rlock__endpoint *ep,
                     int64_t connect_ms, int64_t command_ms);

/* Close and free. NULL is ignored. */
void rlock__conn_close(rlock__conn *c);

/* Encode a command into a malloc'ed RESP buffer (free with free()).
 * Returns its length, or -1 when out of memory. */
long rlock__conn_format(char **out, int argc, const char **argv,
                        const size_t *lens);

/* Write all of buf. */
int rlock__conn_send(rlock__conn *c, const char *buf, size_t len);

/* Block until one complete reply has arrived (bounded by the command
 * timeout) and hand it to the caller (free with freeReplyObject). */
int rlock__conn_recv(rlock__conn *c, redisReply **out);

/* Send one command and receive its reply. Error replies are returned as
 * replies (type REDIS_REPLY_ERROR); only transport failures fail. */
int rlock__conn_call(rlock__conn *c, int argc, const char **argv,
                     const size_t *lens, redisReply **out);

/* Read what the socket has (one recv) into the reader, for a caller that
 * polled the fd readable. RLOCK_EIO on EOF or error. */
int rlock__conn_read_some(rlock__conn *c);

/* Take one already-buffered reply, if any: *out is NULL when none. */
int rlock__conn_take_reply(rlock__conn *c, redisReply **out);

/* Read and discard the `owed` replies, waiting at most `max_ms` for them:
 * RLOCK_OK when the connection is ready for a new command, else an error
 * (the caller drops the connection). */
int rlock__conn_drain(rlock__conn *c, int64_t max_ms);

/* 1 when an idle connection can no longer be used: the server closed it
 * or sent something unsolicited. Costs one non-blocking recv(). */
int rlock__conn_stale(rlock__conn *c);

#endif /* RLOCK_CONN_H */
