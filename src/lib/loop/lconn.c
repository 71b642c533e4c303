/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lconn.c - one non-blocking connection of a loop client.
 *
 * Requests are pipelined: each is encoded into the connection's write
 * buffer when made, and the buffer is written once at the end of the loop
 * turn (core.c), so a thousand acquisitions started in one turn leave in
 * a few writes. Replies come back in order, so the FIFO's head owns the
 * next one; a request that must be sent again (EVAL after NOSCRIPT) goes
 * to the tail.
 *
 * Time: connecting is bounded by the connect timeout; once connected, the
 * connection fails with RLOCK_ETIMEOUT when answers are due and none came
 * for a whole command timeout (a reply, or a subscription's confirmation;
 * unlock messages do not count).
 *
 * A failure closes the socket and tells every request: RLOCK_EIO (or
 * RLOCK_ETIMEOUT...) with call.in_flight set when its bytes may have
 * reached the server, and call.transient when nothing was sent at all. The
 * next request opens a new connection.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <poll.h>

#include "client_int.h"
#include "common.h"
#include "loop.h"
#include "tls.h"

#define READ_CHUNK 65536

static rlock__lconn *conn_of_timer(rlock_client *c, rlock__ltimer *t) {
  return t == &c->loop->cmd.io_timer ? &c->loop->cmd : &c->loop->sub;
}

static int64_t command_us(const rlock_client *c) {
  return c->cfg.command_timeout_ms * 1000;
}

static void set_watch(rlock_client *c, rlock__lconn *k, int events) {
  if (k->fd < 0 || events == k->watching)
    return;
  k->watching = events;
  if (c->loop->ad.watch(c->loop->ad.data, k->fd, events) != 0 && events != 0) {
    rlock__err(RLOCK_EIO,
               "redis %s: the event loop refused to watch the "
               "connection",
               k->where);
    rlock__lconn_fail(c, k, RLOCK_EIO);
  }
}

/* Answers are due: keep the timer on the oldest wait. */
void rlock__lconn_expect(rlock_client *c, rlock__lconn *k, int n) {
  if (k->due == 0 && n > 0) {
    k->due_since_us = rlock__now_us();
    if (k->state == RLOCK__LCONN_READY)
      rlock__ltimer_at(c, &k->io_timer, k->due_since_us + command_us(c));
  }
  k->due += n;
}

static void answered(rlock__lconn *k) {
  if (k->due > 0)
    k->due--;
  k->due_since_us = rlock__now_us();
}

static void on_timer(rlock_client *c, rlock__ltimer *t) {
  rlock__lconn *k = conn_of_timer(c, t);
  int64_t now = rlock__now_us();
  if (k->state == RLOCK__LCONN_CONNECTING ||
      k->state == RLOCK__LCONN_HANDSHAKING) {
    if (now < k->connect_until_us) {
      rlock__ltimer_at(c, t, k->connect_until_us);
      return;
    }
    if (k->state == RLOCK__LCONN_HANDSHAKING)
      rlock__tls_timed_out(k->tls, k->where);
    else
      rlock__err(RLOCK_ETIMEOUT, "redis %s: connect timed out after %lld ms",
                 k->where, (long long)c->cfg.connect_timeout_ms);
    rlock__lconn_fail(c, k, rlock_error_last()->code);
    return;
  }
  if (k->state != RLOCK__LCONN_READY || k->due == 0)
    return;
  if (now < k->due_since_us + command_us(c)) {
    rlock__ltimer_at(c, t, k->due_since_us + command_us(c));
    return;
  }
  rlock__err(RLOCK_ETIMEOUT, "redis %s: no answer in time (%lld ms)", k->where,
             (long long)c->cfg.command_timeout_ms);
  rlock__lconn_fail(c, k, RLOCK_ETIMEOUT);
}

/* ---- bytes out --------------------------------------------------------- */

static int reserve(rlock__lconn *k, size_t more) {
  if (k->off > 0 && k->off == k->len)
    k->off = k->len = 0;
  if (k->len + more <= k->cap)
    return RLOCK_OK;
  if (k->off > 0) { /* slide what is left to the front first */
    memmove(k->out, k->out + k->off, k->len - k->off);
    k->len -= k->off;
    k->off = 0;
    if (k->len + more <= k->cap)
      return RLOCK_OK;
  }
  size_t cap = k->cap ? k->cap : 16384;
  while (cap < k->len + more)
    cap *= 2;
  char *out = rlock__realloc(k->out, cap);
  if (out == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  k->out = out;
  k->cap = cap;
  return RLOCK_OK;
}

int rlock__lconn_queue(rlock__lconn *k, const char *buf, size_t len) {
  int rc = reserve(k, len);
  if (rc != RLOCK_OK)
    return rc;
  memcpy(k->out + k->len, buf, len);
  k->len += len;
  k->queued += len;
  return RLOCK_OK;
}

static size_t put_len(char *p, char tag, size_t n) {
  char digits[24];
  size_t d = (size_t)rlock__decimal(digits, (int64_t)n);
  p[0] = tag;
  memcpy(p + 1, digits, d);
  p[d + 1] = '\r';
  p[d + 2] = '\n';
  return d + 3;
}

int rlock__lconn_command(rlock__lconn *k, int argc, const char **argv,
                         const size_t *lens) {
  size_t need = 32;
  for (int i = 0; i < argc; i++)
    need += 32 + (lens ? lens[i] : strlen(argv[i]));
  int rc = reserve(k, need);
  if (rc != RLOCK_OK)
    return rc;
  char *p = k->out + k->len;
  p += put_len(p, '*', (size_t)argc);
  for (int i = 0; i < argc; i++) {
    size_t n = lens ? lens[i] : strlen(argv[i]);
    p += put_len(p, '$', n);
    memcpy(p, argv[i], n);
    p += n;
    *p++ = '\r';
    *p++ = '\n';
  }
  size_t wrote = (size_t)(p - (k->out + k->len));
  k->len += wrote;
  k->queued += wrote;
  return RLOCK_OK;
}

void rlock__lconn_flush(rlock_client *c, rlock__lconn *k) {
  if (k->state != RLOCK__LCONN_READY)
    return;
  while (k->off < k->len) {
    short want;
    ssize_t n = k->tls != NULL ? rlock__tls_write(k->tls, k->out + k->off,
                                                  k->len - k->off, &want)
                               : send(k->fd, k->out + k->off, k->len - k->off,
                                      MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      k->off += (size_t)n;
      k->written += (uint64_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      break;
    rlock__err(RLOCK_EIO, "redis %s: write failed: %s", k->where,
               strerror(errno));
    rlock__lconn_fail(c, k, RLOCK_EIO);
    return;
  }
  set_watch(c, k, RLOCK_LOOP_READ | (k->off < k->len ? RLOCK_LOOP_WRITE : 0));
}

/* ---- opening ----------------------------------------------------------- */

/* AUTH and SELECT go first on a new connection. */
static int queue_login(rlock_client *c, rlock__lconn *k) {
  const rlock__endpoint *ep = &c->cfg.target.addrs[0];
  int rc = RLOCK_OK;
  if (ep->password != NULL) {
    const char *argv[3] = {"AUTH", ep->user ? ep->user : ep->password,
                           ep->password};
    rc = rlock__lconn_command(k, ep->user ? 3 : 2, argv, NULL);
    k->login_due++;
  }
  if (rc == RLOCK_OK && ep->db != 0) {
    char db[24];
    rlock__decimal(db, ep->db);
    const char *argv[2] = {"SELECT", db};
    rc = rlock__lconn_command(k, 2, argv, NULL);
    k->login_due++;
  }
  rlock__lconn_expect(c, k, k->login_due);
  return rc;
}

static void connected(rlock_client *c, rlock__lconn *k) {
  k->state = RLOCK__LCONN_READY;
  rlock__obs_count(&c->obs, RLOCK__STAT_CONNECTS);
  rlock__obs_log(&c->obs, RLOCK_LOG_DEBUG, "loop: connected to %s", k->where);
  rlock__ltimer_stop(c, &k->io_timer);
  if (k->due > 0)
    rlock__ltimer_at(c, &k->io_timer, rlock__now_us() + command_us(c));
  k->due_since_us = rlock__now_us();
}

/* One step of the TLS handshake; READY when it is through. */
static void handshake(rlock_client *c, rlock__lconn *k) {
  short want = 0;
  int r = rlock__tls_step(k->tls, k->where, &want);
  if (r < 0) {
    rlock__lconn_fail(c, k, r);
    return;
  }
  if (r == 0) {
    set_watch(c, k, want == POLLIN ? RLOCK_LOOP_READ : RLOCK_LOOP_WRITE);
    return;
  }
  connected(c, k);
  rlock__lconn_flush(c, k); /* what was queued meanwhile */
}

/* The socket is connected: TLS first where the endpoint speaks it. */
static void socket_up(rlock_client *c, rlock__lconn *k) {
  const rlock__endpoint *ep = &c->cfg.target.addrs[0];
  if (!ep->tls) {
    connected(c, k);
    return;
  }
  int rc = rlock__tls_start(&k->tls, ep->tls_ctx, k->fd, ep->host);
  if (rc != RLOCK_OK) {
    rlock__lconn_fail(c, k, rc);
    return;
  }
  k->state = RLOCK__LCONN_HANDSHAKING;
  if (k->io_timer.idx == RLOCK__LTIMER_OFF)
    rlock__ltimer_at(c, &k->io_timer, k->connect_until_us);
  handshake(c, k);
}

int rlock__lconn_open(rlock_client *c, rlock__lconn *k) {
  rlock__loop *lp = c->loop;
  if (k->state != RLOCK__LCONN_CLOSED)
    return RLOCK_OK;
  if (lp->closing)
    return rlock__err(RLOCK_ECLOSED, "client freed");
  if (k->rd == NULL && (k->rd = rlock__reader_new()) == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  rlock__ltimer_init(&k->io_timer, on_timer);
  int fd =
      socket(lp->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return rlock__err(RLOCK_EIO, "redis %s: socket: %s", k->where,
                      strerror(errno));
  if (lp->addr.ss_family != AF_UNIX) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  int r;
  do
    r = connect(fd, (const struct sockaddr *)&lp->addr, lp->addrlen);
  while (r < 0 && errno == EINTR);
  if (r < 0 && errno != EINPROGRESS) {
    int e = errno;
    close(fd);
    rlock__obs_count(&c->obs, RLOCK__STAT_CONNECT_FAILURES);
    return rlock__err(RLOCK_EIO, "redis %s: cannot connect: %s", k->where,
                      strerror(e));
  }
  k->fd = fd;
  k->watching = 0;
  k->off = k->len = 0;
  k->queued = k->written = 0;
  k->due = 0;
  k->login_due = 0;
  k->nevald = 0; /* a new connection may meet a new server */
  k->state = RLOCK__LCONN_CONNECTING;
  k->connect_until_us = rlock__deadline_after_ms(c->cfg.connect_timeout_ms);
  int rc = queue_login(c, k);
  if (rc != RLOCK_OK) {
    rlock__lconn_fail(c, k, rc);
    return rc;
  }
  if (r == 0) {
    socket_up(c, k);
  } else {
    rlock__ltimer_at(c, &k->io_timer, k->connect_until_us);
    set_watch(c, k, RLOCK_LOOP_WRITE);
  }
  return k->fd >= 0 ? RLOCK_OK : rlock_error_last()->code;
}

/* ---- failure ----------------------------------------------------------- */

void rlock__lconn_fail(rlock_client *c, rlock__lconn *k, int rc) {
  rlock__saved_error why;
  rlock__error_save(&why);
  if (k->fd >= 0) {
    if (k->watching != 0)
      c->loop->ad.watch(c->loop->ad.data, k->fd, 0);
    close(k->fd);
    k->fd = -1;
    if (k->state == RLOCK__LCONN_READY)
      rlock__obs_count(&c->obs, RLOCK__STAT_DISCONNECTS);
    else
      rlock__obs_count(&c->obs, RLOCK__STAT_CONNECT_FAILURES);
  }
  int was = k->state;
  k->state = RLOCK__LCONN_CLOSED;
  k->watching = 0;
  k->off = k->len = 0;
  k->due = 0;
  k->login_due = 0;
  rlock__ltimer_stop(c, &k->io_timer);
  rlock__reader_free(k->rd);
  k->rd = NULL;
  rlock__tls_close(k->tls);
  k->tls = NULL;
  rlock__obs_log(&c->obs, RLOCK_LOG_WARN, "loop: %s", why.message);
  uint64_t written = k->written;
  rlock__lreq *r = k->head;
  k->head = k->tail = NULL;
  while (r != NULL) {
    rlock__lreq *next = r->next;
    r->q.rc = rc;
    r->q.reply = NULL;
    r->call.in_flight = written > r->start;
    r->call.transient = was != RLOCK__LCONN_READY || written <= r->start;
    rlock__error_restore(&why);
    r->done(c, r);
    r = next;
  }
  if (k->on_down != NULL) {
    rlock__error_restore(&why);
    k->on_down(c, rc);
  }
  rlock__error_restore(&why);
}

void rlock__lconn_destroy(rlock__lconn *k) {
  rlock__tls_close(k->tls);
  k->tls = NULL;
  if (k->fd >= 0)
    close(k->fd);
  k->fd = -1;
  rlock__reader_free(k->rd);
  k->rd = NULL;
  free(k->out);
  k->out = NULL;
}

/* ---- replies ----------------------------------------------------------- */

/* The request at the head takes a reply; done, resent or kept. */
static void feed_head(rlock_client *c, rlock__lconn *k, rlock__reply *reply) {
  rlock__lreq *r = k->head;
  r->replies--;
  rlock__step step = rlock__req_feed(&r->q, k->where, reply);
  if (step == RLOCK__STEP_MORE && r->replies > 0)
    return;
  k->head = r->next;
  if (k->head == NULL)
    k->tail = NULL;
  r->next = NULL;
  if (step == RLOCK__STEP_RESEND) {
    rlock__lreq_send(c, r); /* EVAL after NOSCRIPT: to the tail */
    return;
  }
  if (step != RLOCK__STEP_DONE) {
    rlock__reply_free(r->q.reply);
    r->q.reply = NULL;
    if (step == RLOCK__STEP_MOVED || step == RLOCK__STEP_ASK ||
        step == RLOCK__STEP_MORE)
      r->q.rc = rlock__err(RLOCK_EPROTO,
                           "redis %s: unexpected redirection or reply "
                           "for a single server",
                           k->where);
    /* RETRY (LOADING, ...) keeps the server's status and message */
    r->call.transient = step == RLOCK__STEP_RETRY;
  }
  r->call.served_by = k->where;
  r->done(c, r);
}

static void dispatch(rlock_client *c, rlock__lconn *k, rlock__reply *reply) {
  if (k->login_due > 0) {
    k->login_due--;
    answered(k);
    if (reply->type == RLOCK__R_ERROR) {
      int rc = rlock__error_status(k->where, reply);
      rlock__reply_free(reply);
      rlock__lconn_fail(c, k, rc);
      return;
    }
    rlock__reply_free(reply);
    return;
  }
  if (k->on_reply != NULL) {
    k->on_reply(c, reply);
    return;
  }
  if (k->head == NULL) {
    rlock__reply_free(reply);
    rlock__err(RLOCK_EPROTO, "redis %s: a reply nobody asked for", k->where);
    rlock__lconn_fail(c, k, RLOCK_EPROTO);
    return;
  }
  answered(k);
  feed_head(c, k, reply);
}

static int read_error(rlock__lconn *k, rlock__read_status st) {
  if (st == RLOCK__READ_NOMEM)
    return rlock__err(RLOCK_ENOMEM, "out of memory reading a reply");
  if (st == RLOCK__READ_TOO_LARGE)
    return rlock__err(RLOCK_EPROTO, "redis %s: reply too large (%s)", k->where,
                      rlock__reader_error(k->rd));
  return rlock__err(RLOCK_EPROTO, "redis %s: bad reply: %s", k->where,
                    rlock__reader_error(k->rd));
}

/* Hand every complete reply over; stop when the connection closes. */
static void take_replies(rlock_client *c, rlock__lconn *k) {
  while (k->rd != NULL && !c->loop->doomed) {
    rlock__reply *r = NULL;
    rlock__read_status st = rlock__reader_get(k->rd, &r);
    if (st != RLOCK__READ_OK) {
      rlock__lconn_fail(c, k, read_error(k, st));
      return;
    }
    if (r == NULL)
      return;
    dispatch(c, k, r);
  }
}

/* Bytes in, never waiting: recv, or TLS records decrypted. */
static ssize_t read_some(rlock__lconn *k, char *buf, size_t len) {
  short want;
  if (k->tls != NULL)
    return rlock__tls_read(k->tls, buf, len, 0, &want);
  return recv(k->fd, buf, len, MSG_DONTWAIT);
}

static void on_readable(rlock_client *c, rlock__lconn *k) {
  char buf[READ_CHUNK];
  /* With TLS, decrypted bytes can wait in the session with the socket
   * drained: read while it has some. */
  for (int i = 0;
       k->fd >= 0 && (i < 4 || (k->tls && rlock__tls_pending(k->tls))); i++) {
    ssize_t n = read_some(k, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    if (n <= 0) {
      rlock__err(RLOCK_EIO, "redis %s: %s", k->where,
                 n == 0 ? "connection closed by the server" : strerror(errno));
      rlock__lconn_fail(c, k, RLOCK_EIO);
      return;
    }
    rlock__read_status st = rlock__reader_feed(k->rd, buf, (size_t)n);
    if (st != RLOCK__READ_OK) {
      rlock__lconn_fail(c, k, read_error(k, st));
      return;
    }
    take_replies(c, k);
    if ((size_t)n < sizeof buf && !(k->tls && rlock__tls_pending(k->tls)))
      return;
  }
}

static void on_connect_done(rlock_client *c, rlock__lconn *k) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
    err = errno;
  if (err != 0) {
    rlock__err(RLOCK_EIO, "redis %s: cannot connect: %s", k->where,
               strerror(err));
    rlock__lconn_fail(c, k, RLOCK_EIO);
    return;
  }
  socket_up(c, k);
}

void rlock__lconn_io(rlock_client *c, rlock__lconn *k, int events) {
  if (k->state == RLOCK__LCONN_CONNECTING) {
    if (events == 0)
      return;
    on_connect_done(c, k);
    return; /* flushed at the end of the turn once READY */
  }
  if (k->state == RLOCK__LCONN_HANDSHAKING) {
    if (events != 0)
      handshake(c, k);
    return;
  }
  if ((events & RLOCK_LOOP_READ) && k->fd >= 0)
    on_readable(c, k);
  /* Writable: the end of the loop turn flushes. */
}

/* ---- requests ---------------------------------------------------------- */

/* Send a script's text the first time this connection uses it. */
static void first_use(rlock__lconn *k, rlock__req *q) {
  const rlock__script *s = q->call->script;
  if (s == NULL || q->eval)
    return;
  for (int i = 0; i < k->nevald; i++)
    if (k->evald[i] == s)
      return;
  q->eval = 1;
  if (k->nevald < (int)(sizeof k->evald / sizeof k->evald[0]))
    k->evald[k->nevald++] = s;
}

void rlock__lreq_send(rlock_client *c, rlock__lreq *r) {
  rlock__lconn *k = &c->loop->cmd;
  r->next = NULL;
  r->call.in_flight = 0;
  r->call.transient = 0;
  if (c->loop->closing) {
    r->q.rc = rlock__err(RLOCK_ECLOSED, "client freed");
    r->done(c, r);
    return;
  }
  int rc = rlock__lconn_open(c, k);
  if (rc == RLOCK_OK)
    first_use(k, &r->q);
  char *buf = NULL;
  long len = rc == RLOCK_OK ? rlock__req_encode(&r->q, &buf) : -1;
  if (rc == RLOCK_OK && len < 0)
    rc = rlock_error_last()->code;
  if (rc == RLOCK_OK)
    rc = rlock__lconn_queue(k, buf, (size_t)len);
  free(buf);
  if (rc != RLOCK_OK) {
    r->q.rc = rc;
    r->call.transient = k->state == RLOCK__LCONN_CLOSED;
    r->done(c, r);
    return;
  }
  r->start = k->queued - (uint64_t)len;
  r->sent_us = rlock__now_us();
  r->replies = 1 + r->q.asking_reply + (r->q.wait_due ? 1 : 0);
  rlock__lconn_expect(c, k, r->replies);
  if (k->tail != NULL)
    k->tail->next = r;
  else
    k->head = r;
  k->tail = r;
}
