/*
 * conn.c - TCP and unix-socket connections with timeouts, and the login
 * handshake.
 */
#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common.h"

static int set_nonblock(int fd, int on) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0)
    return -1;
  flags = on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK;
  return fcntl(fd, F_SETFL, flags);
}

/* Finish a non-blocking connect within `ms`. Returns 0 or an errno. */
static int wait_connected(int fd, int64_t ms) {
  struct pollfd p = {.fd = fd, .events = POLLOUT};
  int64_t deadline = rlock__deadline_after_ms(ms);
  for (;;) {
    int rc = poll(&p, 1, (int)rlock__ms_left(deadline));
    if (rc > 0)
      break;
    if (rc == 0)
      return ETIMEDOUT;
    if (errno != EINTR)
      return errno;
  }
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
    return errno;
  return err;
}

/* Connect one address; returns the fd or -1 with *err set. */
static int connect_addr(const struct sockaddr *sa, socklen_t salen,
                        int family, int64_t ms, int *err) {
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = errno;
    return -1;
  }
  set_nonblock(fd, 1);
  int rc = connect(fd, sa, salen);
  *err = rc == 0 ? 0 : errno == EINPROGRESS ? wait_connected(fd, ms) : errno;
  if (*err != 0) {
    close(fd);
    return -1;
  }
  set_nonblock(fd, 0);
  return fd;
}

static int connect_tcp(const rlock__endpoint *ep, int64_t ms, int *err) {
  char port[16];
  snprintf(port, sizeof port, "%d", ep->port);
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
  int grc = getaddrinfo(ep->host, port, &hints, &res);
  if (grc != 0) {
    *err = grc == EAI_SYSTEM ? errno : EHOSTUNREACH;
    return -1;
  }
  int fd = -1;
  for (struct addrinfo *a = res; a != NULL && fd < 0; a = a->ai_next)
    fd = connect_addr(a->ai_addr, a->ai_addrlen, a->ai_family, ms, err);
  freeaddrinfo(res);
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  }
  return fd;
}

static int connect_unix(const rlock__endpoint *ep, int64_t ms, int *err) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", ep->unix_path);
  return connect_addr((struct sockaddr *)&sa, sizeof sa, AF_UNIX, ms, err);
}

static void set_io_timeout(int fd, int64_t ms) {
  struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static int io_error(rlock__conn *c, const char *what, int err) {
  c->broken = 1;
  if (err == EAGAIN || err == EWOULDBLOCK || err == ETIMEDOUT)
    return rlock__err(RLOCK_ETIMEOUT, "redis %s: no answer in time (%s)",
                      c->where, what);
  if (err == 0)
    return rlock__err(RLOCK_EIO, "redis %s: connection closed by server",
                      c->where);
  return rlock__err(RLOCK_EIO, "redis %s: %s failed: %s", c->where, what,
                    strerror(err));
}

/* A signal restarts SO_RCVTIMEO/SO_SNDTIMEO from zero; frequent signals
 * could otherwise keep a command waiting for ever. */
static int past_deadline(const rlock__conn *c) {
  return c->io_deadline_us != 0 && rlock__now_us() >= c->io_deadline_us;
}

long rlock__conn_format(char **out, int argc, const char **argv,
                        const size_t *lens) {
  int len = redisFormatCommandArgv(out, argc, argv, lens);
  return len < 0 ? -1 : (long)len;
}

int rlock__conn_send(rlock__conn *c, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR && !past_deadline(c))
        continue;
      return io_error(c, "write", errno == EINTR ? ETIMEDOUT : errno);
    }
    buf += n;
    len -= (size_t)n;
  }
  return RLOCK_OK;
}

int rlock__conn_take_reply(rlock__conn *c, redisReply **out) {
  void *reply = NULL;
  *out = NULL;
  if (redisReaderGetReply(c->reader, &reply) != REDIS_OK) {
    c->broken = 1;
    return rlock__err(RLOCK_EPROTO, "redis %s: bad reply: %s", c->where,
                      c->reader->errstr);
  }
  *out = reply;
  return RLOCK_OK;
}

int rlock__conn_read_some(rlock__conn *c) {
  char buf[16384];
  for (;;) {
    ssize_t n = recv(c->fd, buf, sizeof buf, 0);
    if (n > 0) {
      if (redisReaderFeed(c->reader, buf, (size_t)n) != REDIS_OK) {
        c->broken = 1;
        return rlock__err(RLOCK_ENOMEM, "out of memory reading a reply");
      }
      return RLOCK_OK;
    }
    if (n < 0 && errno == EINTR && !past_deadline(c))
      continue;
    return io_error(c, "read", n == 0 ? 0 : errno == EINTR ? ETIMEDOUT : errno);
  }
}

int rlock__conn_recv(rlock__conn *c, redisReply **out) {
  for (;;) {
    int rc = rlock__conn_take_reply(c, out);
    if (rc != RLOCK_OK || *out != NULL)
      return rc;
    if ((rc = rlock__conn_read_some(c)) != RLOCK_OK)
      return rc;
  }
}

int rlock__conn_call(rlock__conn *c, int argc, const char **argv,
                     const size_t *lens, redisReply **out) {
  char *cmd;
  long len = rlock__conn_format(&cmd, argc, argv, lens);
  if (len < 0)
    return rlock__err(RLOCK_ENOMEM, "out of memory formatting a command");
  c->io_deadline_us = rlock__deadline_after_ms(c->timeout_ms);
  int rc = rlock__conn_send(c, cmd, (size_t)len);
  free(cmd);
  if (rc == RLOCK_OK)
    rc = rlock__conn_recv(c, out);
  c->io_deadline_us = 0;
  return rc;
}

int rlock__conn_drain(rlock__conn *c, int64_t max_ms) {
  int64_t deadline = rlock__deadline_after_ms(max_ms);
  while (c->owed > 0) {
    redisReply *r;
    int rc = rlock__conn_take_reply(c, &r);
    if (rc != RLOCK_OK)
      return rc;
    if (r != NULL) {
      freeReplyObject(r);
      c->owed--;
      continue;
    }
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    if (poll(&p, 1, (int)rlock__ms_left(deadline)) <= 0)
      return io_error(c, "read", ETIMEDOUT); /* a slow server: drop it */
    if ((rc = rlock__conn_read_some(c)) != RLOCK_OK)
      return rc;
  }
  return RLOCK_OK;
}

int rlock__conn_stale(rlock__conn *c) {
  char b;
  ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
}

/* Run one handshake command; an error reply becomes RLOCK_EAUTH. */
static int handshake_call(rlock__conn *c, int argc, const char **argv) {
  redisReply *r = NULL;
  int rc = rlock__conn_call(c, argc, argv, NULL, &r);
  if (rc != RLOCK_OK)
    return rc;
  if (r->type == REDIS_REPLY_ERROR)
    rc = rlock__err(RLOCK_EAUTH, "redis %s: %s refused: %s", c->where,
                    argv[0], r->str);
  freeReplyObject(r);
  return rc;
}

static int handshake(rlock__conn *c, const rlock__endpoint *ep) {
  int rc = RLOCK_OK;
  if (ep->password != NULL) {
    const char *argv[3] = {"AUTH", ep->user ? ep->user : ep->password,
                           ep->password};
    rc = handshake_call(c, ep->user ? 3 : 2, argv);
  }
  if (rc == RLOCK_OK && ep->db != 0) {
    char db[16];
    snprintf(db, sizeof db, "%d", ep->db);
    const char *argv[2] = {"SELECT", db};
    rc = handshake_call(c, 2, argv);
  }
  return rc;
}

int rlock__conn_open(rlock__conn **out, const rlock__endpoint *ep,
                     int64_t connect_ms, int64_t command_ms) {
  *out = NULL;
  rlock__conn *c = calloc(1, sizeof *c);
  if (c == NULL || (c->reader = redisReaderCreate()) == NULL) {
    free(c);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  rlock__endpoint_str(ep, c->where, sizeof c->where);
  int err = 0;
  c->fd = ep->unix_path ? connect_unix(ep, connect_ms, &err)
                        : connect_tcp(ep, connect_ms, &err);
  if (c->fd < 0) {
    int code = err == ETIMEDOUT ? RLOCK_ETIMEOUT : RLOCK_EIO;
    rlock__err(code, "cannot connect to redis %s: %s", c->where,
               strerror(err));
    redisReaderFree(c->reader);
    free(c);
    return code;
  }
  set_io_timeout(c->fd, command_ms);
  c->timeout_ms = command_ms;
  int rc = handshake(c, ep);
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
  if (c->fd >= 0)
    close(c->fd);
  redisReaderFree(c->reader);
  free(c);
}
