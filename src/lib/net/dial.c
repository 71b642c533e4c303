/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dial.c - a connection opened in steps (dial.h).
 */
#include "dial.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common.h"

enum { ST_NEXT, ST_CONNECTING, ST_TLS, ST_UP, ST_OVER };

void rlock__dial_begin(rlock__dial *d, const rlock__endpoint *ep,
                       struct addrinfo *res, const char *where) {
  memset(d, 0, sizeof *d);
  d->ep = ep;
  d->res = res;
  d->cur = NULL;
  d->fd = -1;
  d->err = EHOSTUNREACH; /* an empty list */
  d->where = where;
  d->stage = ST_NEXT;
}

static void close_fd(rlock__dial *d) {
  rlock__tls_close(d->tls);
  d->tls = NULL;
  if (d->fd >= 0)
    close(d->fd);
  d->fd = -1;
}

/* Start a non-blocking connect to one address: 1 connected at once, 0 in
 * progress, -1 failed (d->err set). */
static int connect_one(rlock__dial *d, const struct sockaddr *sa,
                       socklen_t salen, int family) {
  d->fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (d->fd < 0) {
    d->err = errno;
    return -1;
  }
  if (family != AF_UNIX) {
    int one = 1;
    setsockopt(d->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(d->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  }
  int rc;
  do
    rc = connect(d->fd, sa, salen);
  while (rc < 0 && errno == EINTR);
  if (rc == 0)
    return 1;
  if (errno == EINPROGRESS)
    return 0;
  d->err = errno;
  close_fd(d);
  return -1;
}

/* Connect the next address: 1 connected, 0 in progress, -1 none left. */
static int next_address(rlock__dial *d) {
  for (;;) {
    if (d->ep->unix_path != NULL) {
      if (d->cur != NULL || d->stage == ST_OVER)
        return -1;
      struct sockaddr_un sa = {.sun_family = AF_UNIX};
      snprintf(sa.sun_path, sizeof sa.sun_path, "%s", d->ep->unix_path);
      d->stage = ST_OVER; /* one address only */
      return connect_one(d, (struct sockaddr *)&sa, sizeof sa, AF_UNIX);
    }
    d->cur = d->cur == NULL ? d->res : d->cur->ai_next;
    if (d->cur == NULL)
      return -1;
    int r =
        connect_one(d, d->cur->ai_addr, d->cur->ai_addrlen, d->cur->ai_family);
    if (r >= 0)
      return r;
  }
}

static int failed(rlock__dial *d) {
  int err = d->err;
  rlock__dial_end(d);
  return rlock__err(err == ETIMEDOUT ? RLOCK_ETIMEOUT : RLOCK_EIO,
                    "cannot connect to redis %s: %s", d->where, strerror(err));
}

/* The socket is connected: TLS where the endpoint speaks it. */
static int socket_up(rlock__dial *d, short *want) {
  if (d->ep->tls_ctx == NULL) {
    d->stage = ST_UP;
    return RLOCK__DIAL_UP;
  }
  int rc = rlock__tls_start(&d->tls, d->ep->tls_ctx, d->fd, d->ep->host);
  if (rc != RLOCK_OK) {
    rlock__dial_end(d);
    return rc;
  }
  d->stage = ST_TLS;
  return rlock__dial_step(d, want);
}

static int connect_done(rlock__dial *d, short *want) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(d->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
    err = errno;
  if (err == 0)
    return socket_up(d, want);
  d->err = err;
  close_fd(d);
  d->stage = d->ep->unix_path != NULL ? ST_OVER : ST_NEXT;
  return rlock__dial_step(d, want);
}

int rlock__dial_step(rlock__dial *d, short *want) {
  int r;
  switch (d->stage) {
  case ST_NEXT:
    r = next_address(d);
    if (r < 0)
      return failed(d);
    d->stage = ST_CONNECTING;
    if (r == 1)
      return socket_up(d, want);
    *want = POLLOUT;
    return RLOCK__DIAL_WAIT;
  case ST_CONNECTING:
    return connect_done(d, want);
  case ST_TLS:
    r = rlock__tls_step(d->tls, d->where, want);
    if (r < 0) {
      rlock__dial_end(d);
      return r;
    }
    if (r == 0)
      return RLOCK__DIAL_WAIT;
    d->stage = ST_UP;
    return RLOCK__DIAL_UP;
  case ST_UP:
    return RLOCK__DIAL_UP;
  default:
    return failed(d);
  }
}

int rlock__dial_timed_out(rlock__dial *d, int64_t connect_ms) {
  int rc;
  if (d->stage == ST_TLS && d->tls != NULL)
    rc = rlock__tls_timed_out(d->tls, d->where);
  else
    rc = rlock__err(RLOCK_ETIMEOUT,
                    "cannot connect to redis %s: timed out after %lld ms",
                    d->where, (long long)connect_ms);
  rlock__dial_end(d);
  return rc;
}

void rlock__dial_take(rlock__dial *d, int *fd, rlock__tls_conn **tls) {
  *fd = d->fd;
  *tls = d->tls;
  d->fd = -1;
  d->tls = NULL;
  rlock__dial_end(d);
}

void rlock__dial_end(rlock__dial *d) {
  close_fd(d);
  if (d->res != NULL)
    freeaddrinfo(d->res);
  d->res = NULL;
  d->cur = NULL;
  d->stage = ST_OVER;
}

/* ---- login --------------------------------------------------------------- */

int rlock__login_command(const rlock__endpoint *ep, int i, const char **argv,
                         char db[24]) {
  if (ep->password != NULL && i-- == 0) {
    argv[0] = "AUTH";
    argv[1] = ep->user ? ep->user : ep->password;
    argv[2] = ep->password;
    return ep->user ? 3 : 2;
  }
  if (ep->db != 0 && i == 0) {
    rlock__decimal(db, ep->db);
    argv[0] = "SELECT";
    argv[1] = db;
    return 2;
  }
  return 0;
}

int rlock__login_check(const char *where, const char *word,
                       const rlock__reply *r) {
  if (r->type != RLOCK__R_ERROR)
    return RLOCK_OK;
  return rlock__err(RLOCK_EAUTH, "redis %s: %s refused: %s", where, word,
                    r->str);
}
