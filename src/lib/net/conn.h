/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn.h - the blocking driver's connection to one server (a loop client's
 * are loop/lconn.c's, over the same dial.h steps): our own socket, our own RESP
 * encoder writing into a buffer the connection keeps (so a warm
 * connection encodes without allocating), and a reader that bounds what
 * a reply may cost (reader.h).
 *
 * We own the socket instead of using redisContext so that connect and
 * command timeouts, staleness checks and TLS (tls.h) are under our
 * control; hiredis 0.14 has no TLS and no per-call timeouts.
 *
 * Every wait is bounded by an absolute monotonic deadline, so a timeout
 * bounds the whole of what it covers, however the server dribbles its
 * bytes:
 *   - connect timeout: name lookup, connect and the TLS handshake;
 *   - command timeout: one command's round trip, i.e. every send and
 *     receive of it together (c->io_deadline_us).
 * The socket is in blocking mode, but nothing but a command's wait for its
 * reply ever blocks on it: sends, rlock__conn_read_some() and the
 * staleness probe never wait (MSG_DONTWAIT, poll), so a poll loop (the
 * fan-out, the background thread) may drive a connection with
 * rlock__conn_read_some() and its own poll. The
 * reply wait is one recv() under an SO_RCVTIMEO no longer than the time
 * left (one system call per command, where poll() + recv() take two).
 *
 * A connection is used by one thread at a time (the pool hands it out).
 * Any I/O or protocol failure marks the connection broken; a broken
 * connection is never reused. A timeout is RLOCK_ETIMEOUT ("redis H:P: no
 * answer in time (read)"), a closed or failed socket RLOCK_EIO, a reply
 * over the reader's limits RLOCK_EPROTO ("redis H:P: reply too large
 * (array of 2147483647 elements)"), unparsable bytes RLOCK_EPROTO ("bad
 * reply: ...").
 */
#ifndef RLOCK_CONN_H
#define RLOCK_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "endpoint.h"
#include "reader.h"
#include "resp.h"
#include "tls.h"

/* The most a connection's output buffer keeps between commands; a larger
 * one (a long renewal batch) is freed once sent. */
#define RLOCK__CONN_OUT_KEEP (64 << 10)

typedef struct rlock__conn {
  int fd;              /* callers may poll it; see above for blocking */
  int64_t rcvtimeo_ms; /* the socket's SO_RCVTIMEO, 0 until set */
  int broken;
  int64_t timeout_ms; /* the command timeout */
  int skip;           /* replies still due to commands sent without
                         waiting (rlock__conn_send_skip), which precede
                         any other reply: every read discards them first */
  /* End of the command under way (monotonic us), shared by all its sends
   * and receives; 0 outside a command. rlock__conn_call() sets it; a
   * caller driving a command itself (fan-out) sets it before sending and
   * clears it when done. */
  int64_t io_deadline_us;
  rlock__reader *reader;
  rlock__tls_conn *tls; /* NULL: plain text */
  int heard;            /* the server has sent something */
  rlock__buf out;       /* what to send next, encoded (rlock__conn_send_out);
                           empty between commands, its memory kept */
  char where[128];      /* "host:port" for messages */
} rlock__conn;

/* Resolve, connect and (where the endpoint has a TLS context) finish the
 * TLS handshake within `connect_ms` in all, set the command timeout, then
 * AUTH and SELECT as the endpoint asks (one command timeout each).
 * RLOCK_EIO (unreachable, refused, "name did not resolve (...)", a TLS
 * handshake that failed and why), RLOCK_ETIMEOUT (connect, handshake or
 * "name lookup did not finish in time"), RLOCK_EAUTH or RLOCK_ENOMEM on
 * failure, with the last error set. */
int rlock__conn_open(rlock__conn **out, const rlock__endpoint *ep,
                     int64_t connect_ms, int64_t command_ms);

/* Close and free. NULL is ignored. */
void rlock__conn_close(rlock__conn *c);

/* Write all of buf, waiting for the socket as needed until
 * c->io_deadline_us, or for one command timeout from now when no command
 * is under way (the subscriber's SUBSCRIBE and PING). RLOCK_ETIMEOUT
 * "(write)" or RLOCK_EIO on failure. */
int rlock__conn_send(rlock__conn *c, const char *buf, size_t len);

/* Send what was encoded into c->out like rlock__conn_send(), then empty
 * it (also on failure), keeping its memory up to RLOCK__CONN_OUT_KEEP. */
int rlock__conn_send_out(rlock__conn *c);

/* Wait until one complete reply has arrived and hand it to the caller
 * (free with rlock__reply_free()). Bounded like rlock__conn_send(). */
int rlock__conn_recv(rlock__conn *c, rlock__reply **out);

/* Send one command and receive its reply, all within one command
 * timeout. Error replies are returned as replies (type
 * RLOCK__R_ERROR); only transport and protocol failures fail. */
int rlock__conn_call(rlock__conn *c, int argc, const char **argv,
                     const size_t *lens, rlock__reply **out);

/* Read what the socket has now (at most one buffer's worth) into the
 * reader, never waiting: for a caller that polled c->fd readable. Returns
 * RLOCK_OK also when nothing was there (a spurious wake-up: poll again);
 * RLOCK_EIO on end of stream or a socket error, RLOCK_EPROTO when the
 * bytes push the reply past the reader's limits. Checks no deadline: the
 * caller's poll owns the time. Call rlock__conn_take_reply() until it has
 * no reply before reading again. */
int rlock__conn_read_some(rlock__conn *c);

/* Take one already-buffered reply, if any: *out is NULL when none.
 * The `skip` replies come out of it first, discarded. RLOCK_EPROTO or
 * RLOCK_ENOMEM (connection broken) when the buffered bytes are not a
 * reply or too large. Never touches the socket. */
int rlock__conn_take_reply(rlock__conn *c, rlock__reply **out);

/* Send what was encoded into c->out (`n` commands) without waiting for
 * their replies: the next reads on the connection discard them (`skip`),
 * so a follow-up costs no round trip, and its reply is read with the next
 * command's. Bounded like rlock__conn_send(); RLOCK_OK, or a failure
 * (the connection broken). */
int rlock__conn_send_skip(rlock__conn *c, int n);

/* Whether an idle connection may be lent (the pool's check, never
 * waiting): with `skip` replies due, those that have come are read and
 * discarded (one non-waiting read), and a connection still waiting for
 * some is lent as is (the server took its commands a moment ago; the
 * borrower's reads skip them); with none due, it is not stale
 * (rlock__conn_stale). 0 when it must be dropped. */
int rlock__conn_lendable(rlock__conn *c);

/* Wait until `fd` has `events` or `deadline_us` passes: 0 when ready (or
 * failed: the next read or write says how), ETIMEDOUT, or an errno. */
int rlock__wait_fd(int fd, short events, int64_t deadline_us);

/* 1 when an idle connection can no longer be used: the server closed it,
 * the socket failed, or bytes arrived that nobody asked for. Never waits
 * (one poll() with a zero timeout). */
int rlock__conn_stale(rlock__conn *c);

#endif /* RLOCK_CONN_H */
