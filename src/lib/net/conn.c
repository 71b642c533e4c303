/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn.c - TCP and unix-socket connections with deadlines, TLS where the
 * endpoint asks for it (tls.c), and the login handshake.
 *
 * All I/O goes through a few small functions, stream_read, stream_write,
 * stream_wait and stream_read_wait: "move some bytes now, or say which
 * readiness to wait for", "wait for it until a deadline", and "read,
 * waiting at most until a deadline". TLS sits under them (a TLS read may
 * want the socket writable, hence the `want` they report); everything
 * above them only deals in deadlines.
 *
 * The socket itself is in blocking mode with SO_RCVTIMEO: operations that
 * must not wait say MSG_DONTWAIT, and a command waiting for its reply does
 * one blocking recv() bounded by the time left (SO_RCVTIMEO is lowered
 * when less is left), which costs one system call where poll() + recv()
 * would cost two, on every command.
 */
#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cancel.h"
#include "common.h"
#include "dial.h"
#include "resolve.h"

/* ---- waiting ---------------------------------------------------------- */

/* Wait until `fd` has `events` or `deadline_us` passes. Returns 0 when
 * ready (or failed: the next read or write says how), ETIMEDOUT, or an
 * errno; ECANCELED when the calling thread's blocking call was canceled
 * (rlock__bound: its bound also clips the deadline). Signals neither end
 * the wait early nor stretch it. */
int rlock__wait_fd(int fd, short events, int64_t deadline_us) {
  struct pollfd p = {.fd = fd, .events = events};
  deadline_us = rlock__bound_clip(deadline_us);
  for (;;) {
    int64_t step = rlock__bound_step(deadline_us);
    int64_t left = rlock__ms_left(step);
    int ms = step == INT64_MAX ? -1 : left > INT_MAX ? INT_MAX : (int)left;
    int rc = poll(&p, 1, ms);
    if (rc > 0)
      return 0;
    if (rc < 0 && errno != EINTR)
      return errno;
    if (rlock__bound_reached() == RLOCK_ECANCELED)
      return ECANCELED;
    if (rc == 0 && rlock__now_us() >= deadline_us)
      return ETIMEDOUT;
  }
}

/* ---- the byte stream (TLS sits under it: tls.h) ----------------------- */

/* Read up to len bytes without waiting: > 0 bytes read, 0 end of stream,
 * -1 with errno (EAGAIN: nothing yet; wait for *want). */
static ssize_t stream_read(rlock__conn *c, char *buf, size_t len, short *want) {
  if (c->tls != NULL)
    return rlock__tls_read(c->tls, buf, len, 0, want);
  ssize_t n;
  do
    n = recv(c->fd, buf, len, MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  *want = POLLIN;
  return n;
}

/* Set the socket's receive timeout to `ms` (at least 1) unless it is. */
static void set_rcvtimeo(rlock__conn *c, int64_t ms) {
  ms = ms < 1 ? 1 : ms;
  if (c->rcvtimeo_ms == ms)
    return;
  struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
  if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0)
    c->rcvtimeo_ms = ms;
}

/* Read up to len bytes, waiting for some until `deadline_us`: > 0 bytes
 * read, 0 end of stream, -1 with errno (ETIMEDOUT once the deadline has
 * passed). A receive timeout left higher than the time left is lowered
 * first; one left lower (an earlier command's) only costs a retry. */
static ssize_t stream_read_wait(rlock__conn *c, char *buf, size_t len,
                                int64_t deadline_us) {
  deadline_us = rlock__bound_clip(deadline_us);
  int64_t grace_until = INT64_MAX; /* once canceled: see below */
  for (;;) {
    int64_t step = rlock__bound_step(deadline_us);
    if (grace_until == INT64_MAX && rlock__bound_reached() == RLOCK_ECANCELED) {
      /* The reply due may be a grant: read it if it comes soon, so a
       * canceled acquisition can give back what it was given. */
      grace_until = rlock__deadline_after_ms(RLOCK__CANCEL_GRACE_MS);
    }
    if (grace_until != INT64_MAX) {
      if (rlock__now_us() >= grace_until) {
        errno = ECANCELED;
        return -1;
      }
      step = grace_until < deadline_us ? grace_until : deadline_us;
    }
    int64_t left = rlock__ms_left(step);
    if (left <= 0 || rlock__now_us() >= deadline_us) {
      /* A reply that came while this thread did not run is still read. */
      short want = POLLIN;
      ssize_t n = stream_read(c, buf, len, &want);
      if (n >= 0)
        return n;
      errno = ETIMEDOUT;
      return -1;
    }
    if (c->rcvtimeo_ms > left || c->rcvtimeo_ms == 0)
      set_rcvtimeo(c, left);
    short want = POLLIN;
    ssize_t n = c->tls != NULL ? rlock__tls_read(c->tls, buf, len, 1, &want)
                               : recv(c->fd, buf, len, 0);
    if (n >= 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK))
      return n;
    if (want == POLLOUT) { /* TLS wants to write first */
      int err = rlock__wait_fd(c->fd, POLLOUT, deadline_us);
      if (err != 0) {
        errno = err;
        return -1;
      }
      continue;
    }
    if (errno != EINTR && grace_until == INT64_MAX)
      set_rcvtimeo(c, rlock__ms_left(rlock__bound_step(deadline_us)));
  }
}

/* Write up to len bytes without waiting: bytes written, or -1 with errno
 * (EAGAIN: no room; wait for *want). */
static ssize_t stream_write(rlock__conn *c, const char *buf, size_t len,
                            short *want) {
  if (c->tls != NULL)
    return rlock__tls_write(c->tls, buf, len, want);
  ssize_t n;
  do
    n = send(c->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  *want = POLLOUT;
  return n;
}

/* Whether the stream holds received bytes a read would return without the
 * socket being readable (never for a plain socket; TLS buffers records). */
static int stream_pending(const rlock__conn *c) {
  return c->tls != NULL && rlock__tls_pending(c->tls);
}

/* Wait until the stream can move in the direction `want` asked for. */
static int stream_wait(rlock__conn *c, short want, int64_t deadline_us) {
  return rlock__wait_fd(c->fd, want, deadline_us);
}

/* ---- connecting ------------------------------------------------------- */

/* Resolve and connect c->fd (dial.c's steps, waited for with poll()) by
 * `deadline`: the lookup gets what it needs of the time, the connect the
 * rest. The socket is left in blocking mode (see above). */
static int open_socket(rlock__conn *c, const rlock__endpoint *ep,
                       int64_t deadline, int64_t connect_ms) {
  struct addrinfo *res = NULL;
  if (ep->unix_path == NULL) {
    char why[160];
    int rc = rlock__resolve(ep->host, ep->port, rlock__bound_clip(deadline),
                            &res, why, sizeof why);
    if (rc != RLOCK_OK) {
      rlock__err(rc, "cannot connect to redis %s: %s", c->where, why);
      if (rc == RLOCK_EIO) /* the resolver's "no": no answer in time is not */
        rlock__error_final();
      return rc;
    }
  }
  rlock__dial d;
  rlock__dial_begin(&d, ep, res, c->where);
  for (;;) {
    short want = 0;
    int r = rlock__dial_step(&d, &want);
    if (r < 0)
      return r;
    if (r == RLOCK__DIAL_UP)
      break;
    int err = rlock__wait_fd(d.fd, want, deadline);
    if (err == ECANCELED || (err == ETIMEDOUT && rlock__bound_reached())) {
      rlock__dial_end(&d);
      return err == ECANCELED
                 ? rlock__err(RLOCK_ECANCELED,
                              "wait canceled (connecting to redis %s)",
                              c->where)
                 : rlock__err(RLOCK_ETIMEOUT,
                              "cannot connect to redis %s before the wait "
                              "ran out",
                              c->where);
    }
    if (err == ETIMEDOUT)
      return rlock__dial_timed_out(&d, connect_ms);
  }
  rlock__dial_take(&d, &c->fd, &c->tls);
  int flags = fcntl(c->fd, F_GETFL);
  if (flags < 0 || fcntl(c->fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
    return rlock__err(RLOCK_EIO, "cannot connect to redis %s: %s", c->where,
                      strerror(errno));
  return RLOCK_OK;
}

/* ---- commands --------------------------------------------------------- */

static int io_error(rlock__conn *c, const char *what, int err) {
  c->broken = 1;
  if (err == ECANCELED)
    return rlock__err(RLOCK_ECANCELED, "wait canceled (redis %s: %s)", c->where,
                      what);
  if ((err == EAGAIN || err == EWOULDBLOCK || err == ETIMEDOUT) &&
      rlock__bound_reached() == RLOCK_ETIMEOUT)
    return rlock__err(
        RLOCK_ETIMEOUT,
        "redis %s: no answer within the time the caller gave (%s)", c->where,
        what);
  if (err == EAGAIN || err == EWOULDBLOCK || err == ETIMEDOUT)
    return rlock__err(RLOCK_ETIMEOUT, "redis %s: no answer in time (%s)",
                      c->where, what);
  /* A plain-text client at a TLS port is dropped (or reset) before any
   * reply. */
  const char *hint = c->heard ? ""
                     : c->tls == NULL
                         ? " (a TLS port? then use rediss://)"
                         /* TLS 1.3: refused client certificates show
                          * only after the handshake */
                         : " (the server ended the TLS session before any "
                           "reply: does it require a client certificate?)";
  if (err == 0)
    return rlock__err(RLOCK_EIO, "redis %s: connection closed by server%s",
                      c->where, hint);
  if (err == ECONNRESET || err == EPIPE)
    return rlock__err(RLOCK_EIO, "redis %s: %s failed: %s%s", c->where, what,
                      strerror(err), hint);
  if (err == EPROTO && c->tls != NULL) /* tls.c recorded the alert */
    return rlock__err(RLOCK_EIO, "redis %s: TLS %s failed: %s", c->where, what,
                      rlock_error_last()->message);
  return rlock__err(RLOCK_EIO, "redis %s: %s failed: %s", c->where, what,
                    strerror(err));
}

static int reader_error(rlock__conn *c, rlock__read_status st) {
  c->broken = 1;
  const char *why = rlock__reader_error(c->reader);
  switch (st) {
  case RLOCK__READ_TOO_LARGE:
    return rlock__err(RLOCK_EPROTO, "redis %s: reply too large (%s)", c->where,
                      why);
  case RLOCK__READ_BAD:
    return rlock__err(RLOCK_EPROTO, "redis %s: bad reply: %s", c->where, why);
  default:
    return rlock__err(RLOCK_ENOMEM, "out of memory reading a reply");
  }
}

/* The deadline of the command under way, or one command timeout from now
 * for I/O outside a command. */
static int64_t io_deadline(const rlock__conn *c) {
  return c->io_deadline_us != 0 ? c->io_deadline_us
                                : rlock__deadline_after_ms(c->timeout_ms);
}

int rlock__conn_send(rlock__conn *c, const char *buf, size_t len) {
  int64_t deadline = io_deadline(c);
  while (len > 0) {
    short want;
    ssize_t n = stream_write(c, buf, len, &want);
    if (n > 0) {
      buf += n;
      len -= (size_t)n;
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
      return io_error(c, "write", n == 0 ? 0 : errno);
    int err = stream_wait(c, want, deadline);
    if (err != 0)
      return io_error(c, "write", err);
  }
  return RLOCK_OK;
}

int rlock__conn_send_out(rlock__conn *c) {
  int rc = rlock__conn_send(c, c->out.p, c->out.len);
  c->out.len = 0;
  if (c->out.cap > RLOCK__CONN_OUT_KEEP) {
    free(c->out.p);
    c->out = (rlock__buf){0};
  }
  return rc;
}

/* One buffered reply, the skipped ones included. */
static int take_any(rlock__conn *c, rlock__reply **out) {
  rlock__read_status st = rlock__reader_get(c->reader, out);
  return st == RLOCK__READ_OK ? RLOCK_OK : reader_error(c, st);
}

int rlock__conn_take_reply(rlock__conn *c, rlock__reply **out) {
  for (;;) {
    int rc = take_any(c, out);
    if (rc != RLOCK_OK || *out == NULL || c->skip == 0)
      return rc;
    rlock__reply_free(*out); /* a command sent without waiting: its reply */
    c->skip--;
  }
}

/* Feed n bytes read into the reader, or report the read's failure. */
static int fed(rlock__conn *c, const char *buf, ssize_t n) {
  if (n <= 0)
    return io_error(c, "read", n == 0 ? 0 : errno);
  c->heard = 1;
  rlock__read_status st = rlock__reader_feed(c->reader, buf, (size_t)n);
  return st == RLOCK__READ_OK ? RLOCK_OK : reader_error(c, st);
}

/* One read into the reader. RLOCK_OK with *want 0 when bytes arrived, or
 * with *want the readiness to wait for when none had; else an error. */
static int fill(rlock__conn *c, short *want) {
  char buf[16384];
  ssize_t n = stream_read(c, buf, sizeof buf, want);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    return RLOCK_OK;
  *want = 0;
  return fed(c, buf, n);
}

int rlock__conn_read_some(rlock__conn *c) {
  short want;
  int rc = fill(c, &want);
  /* TLS may hold decrypted bytes that poll() will not announce. */
  while (rc == RLOCK_OK && want == 0 && stream_pending(c))
    rc = fill(c, &want);
  return rc;
}

/* Take one reply, reading and waiting for it until `deadline_us`. */
static int recv_until(rlock__conn *c, rlock__reply **out, int64_t deadline_us) {
  char buf[16384];
  for (;;) {
    int rc = rlock__conn_take_reply(c, out);
    if (rc != RLOCK_OK || *out != NULL)
      return rc;
    short want;
    ssize_t n = stream_pending(c)
                    ? stream_read(c, buf, sizeof buf, &want)
                    : stream_read_wait(c, buf, sizeof buf, deadline_us);
    if ((rc = fed(c, buf, n)) != RLOCK_OK)
      return rc;
  }
}

int rlock__conn_recv(rlock__conn *c, rlock__reply **out) {
  return recv_until(c, out, io_deadline(c));
}

int rlock__conn_call(rlock__conn *c, int argc, const char **argv,
                     const size_t *lens, rlock__reply **out) {
  if (rlock__resp_command(&c->out, argc, argv, lens) != 0)
    return rlock__err(RLOCK_ENOMEM, "out of memory formatting a command");
  c->io_deadline_us = rlock__deadline_after_ms(c->timeout_ms);
  int rc = rlock__conn_send_out(c);
  if (rc == RLOCK_OK)
    rc = rlock__conn_recv(c, out);
  c->io_deadline_us = 0;
  return rc;
}

int rlock__conn_send_skip(rlock__conn *c, int n) {
  int64_t was = c->io_deadline_us;
  c->io_deadline_us = rlock__deadline_after_ms(c->timeout_ms);
  int rc = rlock__conn_send_out(c);
  c->io_deadline_us = was;
  if (rc == RLOCK_OK)
    c->skip += n;
  return rc;
}

int rlock__conn_lendable(rlock__conn *c) {
  if (c->skip > 0) {
    rlock__reply *r = NULL;
    if (rlock__conn_read_some(c) != RLOCK_OK ||
        rlock__conn_take_reply(c, &r) != RLOCK_OK)
      return 0;
    if (r != NULL) { /* a reply nobody asked for */
      rlock__reply_free(r);
      return 0;
    }
    if (c->skip > 0)
      return 1; /* still due: the borrower's reads skip them */
  }
  return !rlock__conn_stale(c);
}

int rlock__conn_stale(rlock__conn *c) {
  if (rlock__reader_buffered(c->reader) > 0 || stream_pending(c))
    return 1; /* unsolicited bytes, already read */
  /* Readable while idle: end of stream, an error, or unsolicited bytes. */
  if (stream_wait(c, POLLIN, rlock__now_us()) == ETIMEDOUT)
    return 0;
  if (c->tls == NULL)
    return 1;
  /* TLS 1.3 servers send session tickets after the handshake: records
   * for OpenSSL alone, which leave nothing to read. */
  char buf[64];
  short want;
  ssize_t n = stream_read(c, buf, sizeof buf, &want);
  return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) ||
         stream_pending(c);
}

/* ---- opening ---------------------------------------------------------- */

/* AUTH and SELECT (dial.c's list), each refusal RLOCK_EAUTH. */
static int handshake(rlock__conn *c, const rlock__endpoint *ep) {
  int rc = RLOCK_OK;
  for (int i = 0; rc == RLOCK_OK; i++) {
    const char *argv[3];
    char db[24];
    int argc = rlock__login_command(ep, i, argv, db);
    if (argc == 0)
      break;
    rlock__reply *r = NULL;
    rc = rlock__conn_call(c, argc, argv, NULL, &r);
    if (rc == RLOCK_OK)
      rc = rlock__login_check(c->where, argv[0], r);
    rlock__reply_free(r);
  }
  return rc;
}

int rlock__conn_open(rlock__conn **out, const rlock__endpoint *ep,
                     int64_t connect_ms, int64_t command_ms) {
  *out = NULL;
  rlock__conn *c = rlock__calloc(1, sizeof *c);
  if (c == NULL || (c->reader = rlock__reader_new()) == NULL) {
    free(c);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  c->fd = -1;
  c->timeout_ms = command_ms;
  rlock__endpoint_str(ep, c->where, sizeof c->where);
  int64_t deadline = rlock__deadline_after_ms(connect_ms);
  int rc = open_socket(c, ep, deadline, connect_ms);
  if (rc == RLOCK_OK)
    rc = handshake(c, ep);
  if (rc != RLOCK_OK) {
    rlock__conn_close(c);
    return rc;
  }
  *out = c;
  return RLOCK_OK;
}

void rlock__conn_close(rlock__conn *c) {
  if (c == NULL)
    return;
  rlock__tls_close(c->tls);
  if (c->fd >= 0)
    close(c->fd);
  rlock__reader_free(c->reader);
  free(c->out.p);
  free(c);
}
