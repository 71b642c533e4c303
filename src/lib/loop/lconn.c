/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lconn.c - one non-blocking connection of a loop client.
 *
 * Opening is net/dial.c's steps (every resolved address in turn,
 * TCP_NODELAY, SO_KEEPALIVE, the TLS handshake), driven by the loop's
 * readiness events, after a name lookup on a thread of its own that wakes
 * the loop (net/resolve.c); the login (AUTH, SELECT, refused as
 * RLOCK_EAUTH) is dial.c's list, queued ahead of everything else.
 *
 * Requests are pipelined: each is encoded into the connection's write
 * buffer when made, and the buffer is written once at the end of the loop
 * turn (core.c), so a thousand acquisitions started in one turn leave in
 * a few writes. Replies come back in order, so the FIFO's head owns the
 * next one. Where a request goes, and where it goes after a redirection
 * or a refusal, is lroute.c's.
 *
 * Time: connecting is bounded by the connect timeout; once connected, the
 * connection fails with RLOCK_ETIMEOUT when answers are due and none came
 * for a whole command timeout (a reply, or a subscription's confirmation;
 * unlock messages do not count).
 *
 * A failure closes the socket and tells every request: RLOCK_EIO (or
 * RLOCK_ETIMEOUT...) with call.in_flight set when its bytes may have
 * reached the server, and call.transient when nothing was sent at all;
 * except a lock write answered but for its WAIT, which is done and
 * unconfirmed (rlock__req_wait_reply_lost, as the blocking runner). The
 * next request opens a new connection.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_int.h"
#include "common.h"
#include "loop.h"
#include "resolve.h"
#include "tls.h"

#define READ_CHUNK 65536

static rlock__lconn *of_timer(rlock__ltimer *t) {
  return (rlock__lconn *)((char *)t - offsetof(rlock__lconn, io_timer));
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
               "redis %s: the event loop refused to watch the connection",
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

void rlock__lconn_answered(rlock__lconn *k) {
  if (k->due > 0)
    k->due--;
  k->due_since_us = rlock__now_us();
}

/* The earliest bound a caller set on a request queued here, or
 * INT64_MAX (rlock__lreq.bound_us). */
static int64_t earliest_bound(const rlock__lconn *k) {
  int64_t at = INT64_MAX;
  for (rlock__llink *e = k->reqs.first; e != NULL; e = e->next) {
    int64_t bound = rlock__lreq_at(e)->bound_us;
    if (bound != 0 && bound < at)
      at = bound;
  }
  return at;
}

static void on_readable(rlock_client *c, rlock__lconn *k);

/* Before a ready connection is failed for want of an answer, the
 * answers that did come are read: a loop thread that ran late (kept off
 * a CPU, or a loop whose driver runs its timers before it polls, as
 * libuv does) must not cut a connection whose replies wait in its
 * socket. 1 when the connection is no longer the timer's to look after:
 * failed or closed meanwhile, or every answer in. */
static int read_first(rlock_client *c, rlock__lconn *k) {
  on_readable(c, k);
  if (k->fd < 0 || k->state != RLOCK__LCONN_READY || c->loop->doomed)
    return 1;
  return k->due == 0; /* all answered: expect() arms the timer again */
}

/* A caller's bound passed before its answer came: the connection fails
 * as at its own timeout (the server may still run what it was sent), its
 * answers read first (read_first). 1 when the connection is no longer
 * this timer's to look after. */
static int cut_short(rlock_client *c, rlock__lconn *k, int64_t now,
                     int64_t *next) {
  if (k->state == RLOCK__LCONN_READY && earliest_bound(k) <= now &&
      read_first(c, k))
    return 1;
  int64_t bound = earliest_bound(k);
  if (now < bound) {
    *next = *next < bound ? *next : bound;
    return 0;
  }
  if (k->state == RLOCK__LCONN_READY)
    rlock__err(RLOCK_ETIMEOUT,
               "redis %s: no answer within the time the caller gave", k->where);
  else
    rlock__err(RLOCK_ETIMEOUT,
               "cannot connect to redis %s within the time the caller gave",
               k->where);
  rlock__lconn_fail(c, k, RLOCK_ETIMEOUT);
  return 1;
}

/* When the connection's own timeout ends: its connect timeout while it
 * opens, else the command timeout after the last answer due. */
static int64_t own_until(const rlock_client *c, const rlock__lconn *k) {
  return k->state == RLOCK__LCONN_READY ? k->due_since_us + command_us(c)
                                        : k->connect_until_us;
}

static void on_timer(rlock_client *c, rlock__ltimer *t) {
  rlock__lconn *k = of_timer(t);
  int64_t now = rlock__now_us();
  if (k->state == RLOCK__LCONN_CLOSED ||
      (k->state == RLOCK__LCONN_READY && k->due == 0))
    return;
  int64_t next = own_until(c, k);
  if (cut_short(c, k, now, &next))
    return;
  if (now >= own_until(c, k) && k->state == RLOCK__LCONN_READY &&
      read_first(c, k))
    return;
  if (now < own_until(c, k)) { /* answers may have come meanwhile */
    int64_t bound = earliest_bound(k), at = own_until(c, k);
    rlock__ltimer_at(c, t, bound < at ? bound : at);
    return;
  }
  if (k->state == RLOCK__LCONN_CONNECTING)
    rlock__dial_timed_out(&k->dial, c->cfg.connect_timeout_ms);
  else if (k->state == RLOCK__LCONN_RESOLVING)
    rlock__err(RLOCK_ETIMEOUT,
               "cannot connect to redis %s: name lookup did not finish in "
               "time",
               k->where);
  else
    rlock__err(RLOCK_ETIMEOUT, "redis %s: no answer in time (%lld ms)",
               k->where, (long long)c->cfg.command_timeout_ms);
  rlock__lconn_fail(c, k, rlock_error_last()->code);
}

/* ---- bytes out --------------------------------------------------------- */

/* Drop what was written, so the buffer does not grow without end. */
static void compact(rlock__lconn *k) {
  if (k->off == 0)
    return;
  memmove(k->out.p, k->out.p + k->off, k->out.len - k->off);
  k->out.len -= k->off;
  k->off = 0;
}

int rlock__lconn_command(rlock__lconn *k, int argc, const char **argv,
                         const size_t *lens) {
  size_t was = k->out.len;
  if (k->off > 0 && k->off == k->out.len)
    k->off = k->out.len = was = 0;
  if (rlock__resp_command(&k->out, argc, argv, lens) != 0)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  k->queued += k->out.len - was;
  return RLOCK_OK;
}

void rlock__lconn_flush(rlock_client *c, rlock__lconn *k) {
  if (k->state != RLOCK__LCONN_READY)
    return;
  while (k->off < k->out.len) {
    short want;
    size_t left = k->out.len - k->off;
    ssize_t n =
        k->tls != NULL
            ? rlock__tls_write(k->tls, k->out.p + k->off, left, &want)
            : send(k->fd, k->out.p + k->off, left, MSG_DONTWAIT | MSG_NOSIGNAL);
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
  if (k->off == k->out.len)
    k->off = k->out.len = 0;
  else if (k->off > (64 << 10))
    compact(k);
  set_watch(c, k,
            RLOCK_LOOP_READ | (k->off < k->out.len ? RLOCK_LOOP_WRITE : 0));
}

/* ---- opening ----------------------------------------------------------- */

/* AUTH and SELECT go first on a new connection. */
static int queue_login(rlock_client *c, rlock__lconn *k) {
  int rc = RLOCK_OK;
  for (int i = 0; rc == RLOCK_OK && i < 2; i++) {
    const char *argv[3];
    char db[24];
    int argc = rlock__login_command(k->ep, i, argv, db);
    if (argc == 0)
      break;
    rc = rlock__lconn_command(k, argc, argv, NULL);
    k->login[k->login_due++] = argv[0]; /* a string constant */
  }
  rlock__lconn_expect(c, k, k->login_due);
  return rc;
}

static void connected(rlock_client *c, rlock__lconn *k) {
  k->state = RLOCK__LCONN_READY;
  rlock__obs_count(&c->obs, RLOCK__STAT_CONNECTS);
  rlock__obs_add(&c->obs, RLOCK__STAT_RECONNECTS, k->dropped != 0);
  k->dropped = 0;
  rlock__obs_log(&c->obs, RLOCK_LOG_DEBUG, "loop: connected to %s", k->where);
  rlock__ltimer_stop(c, &k->io_timer);
  if (k->due > 0) {
    int64_t at = rlock__now_us() + command_us(c), bound = earliest_bound(k);
    rlock__ltimer_at(c, &k->io_timer, bound < at ? bound : at);
  }
  k->due_since_us = k->rx_us = rlock__now_us();
  rlock__lconn_flush(c, k); /* what was queued meanwhile */
}

/* One step of dial.c's; READY when it is through. */
static void dial_step(rlock_client *c, rlock__lconn *k) {
  short want = 0;
  /* The adapter lets go of the socket first: a step may close it (an
   * address refused) before trying the next. */
  set_watch(c, k, 0);
  int r = rlock__dial_step(&k->dial, &want);
  if (r < 0) {
    k->fd = -1; /* closed by the dial */
    rlock__lconn_fail(c, k, r);
    return;
  }
  k->fd = k->dial.fd;
  if (r == RLOCK__DIAL_WAIT) {
    set_watch(c, k, want == POLLIN ? RLOCK_LOOP_READ : RLOCK_LOOP_WRITE);
    return;
  }
  rlock__dial_take(&k->dial, &k->fd, &k->tls);
  connected(c, k);
}

static void dial(rlock_client *c, rlock__lconn *k, struct addrinfo *res) {
  k->state = RLOCK__LCONN_CONNECTING;
  rlock__dial_begin(&k->dial, k->ep, res, k->where);
  dial_step(c, k);
}

static void wake_loop(void *arg) {
  rlock_client *c = arg;
  atomic_store(&c->loop->lookups_done, 1);
  c->loop->ad.wake(c->loop->ad.data);
}

/* Start the lookup (numeric addresses at once) and the dial after it. */
static int resolve(rlock_client *c, rlock__lconn *k) {
  struct addrinfo *res = NULL;
  if (k->ep->unix_path != NULL) {
    dial(c, k, NULL);
    return RLOCK_OK;
  }
  char why[160];
  int rc = rlock__resolve_start(k->ep->host, k->ep->port, &res, &k->lookup,
                                wake_loop, c, why, sizeof why);
  if (rc != RLOCK_OK) {
    rlock__err(rc, "cannot connect to redis %s: %s", k->where, why);
    if (rc == RLOCK_EIO)
      rlock__error_final();
    return rc;
  }
  if (k->lookup != NULL) {
    k->state = RLOCK__LCONN_RESOLVING;
    return RLOCK_OK;
  }
  dial(c, k, res);
  return RLOCK_OK;
}

void rlock__lconn_lookups(rlock_client *c, rlock__lconn *k) {
  if (k->state != RLOCK__LCONN_RESOLVING || k->lookup == NULL)
    return;
  struct addrinfo *res = NULL;
  char why[160];
  int rc;
  if (!rlock__resolve_take(k->lookup, &rc, &res, why, sizeof why))
    return;
  k->lookup = NULL;
  if (rc != RLOCK_OK) {
    rlock__err(rc, "cannot connect to redis %s: %s", k->where, why);
    rlock__error_final(); /* the resolver's "no": waiting will not mend it */
    rlock__lconn_fail(c, k, rc);
    return;
  }
  dial(c, k, res);
}

void rlock__lconn_init(rlock__lconn *k, const rlock__endpoint *ep,
                       rlock__lnode *ln) {
  memset(k, 0, sizeof *k);
  k->fd = -1;
  k->ep = ep;
  k->ln = ln;
  rlock__dial_begin(&k->dial, ep, NULL, k->where);
  rlock__dial_end(&k->dial);
  rlock__ltimer_init(&k->io_timer, on_timer);
  rlock__endpoint_str(ep, k->where, sizeof k->where);
}

int rlock__lconn_open(rlock_client *c, rlock__lconn *k) {
  if (k->state != RLOCK__LCONN_CLOSED)
    return RLOCK_OK;
  if (c->loop->closing)
    return rlock__err(RLOCK_ECLOSED, "client freed");
  if (k->rd == NULL && (k->rd = rlock__reader_new()) == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  k->watching = 0;
  k->off = k->out.len = 0;
  k->queued = k->written = 0;
  k->due = 0;
  k->login_due = 0;
  k->nevald = 0; /* a new connection may meet a new server */
  k->noload = 0;
  k->connect_until_us = rlock__deadline_after_ms(c->cfg.connect_timeout_ms);
  k->state = RLOCK__LCONN_RESOLVING;
  int rc = queue_login(c, k);
  if (rc == RLOCK_OK)
    rc = rlock__ltimer_at(c, &k->io_timer, k->connect_until_us);
  if (rc == RLOCK_OK)
    rc = resolve(c, k);
  if (rc != RLOCK_OK) {
    rlock__lconn_fail(c, k, rc);
    return rc;
  }
  return k->state != RLOCK__LCONN_CLOSED ? RLOCK_OK : rlock_error_last()->code;
}

/* ---- failure ----------------------------------------------------------- */

/* Close the socket and forget what was queued; the requests are told by
 * the caller. */
/* Let go of the socket and of what reads it (the buffers stay). */
static void drop_io(rlock__lconn *k) {
  if (k->fd >= 0 && k->fd != k->dial.fd)
    close(k->fd);
  k->fd = -1;
  rlock__dial_end(&k->dial);
  rlock__resolve_drop(k->lookup);
  k->lookup = NULL;
  rlock__reader_free(k->rd);
  k->rd = NULL;
  rlock__tls_close(k->tls); /* its BIO never touches the socket */
  k->tls = NULL;
}

static int shut(rlock_client *c, rlock__lconn *k) {
  int was = k->state;
  if (k->fd >= 0 && k->watching != 0)
    c->loop->ad.watch(c->loop->ad.data, k->fd, 0);
  drop_io(k);
  k->dropped |= was == RLOCK__LCONN_READY;
  if (was == RLOCK__LCONN_READY)
    rlock__obs_count(&c->obs, RLOCK__STAT_DISCONNECTS);
  else if (was != RLOCK__LCONN_CLOSED)
    rlock__obs_count(&c->obs, RLOCK__STAT_CONNECT_FAILURES);
  k->state = RLOCK__LCONN_CLOSED;
  k->watching = 0;
  k->off = k->out.len = 0;
  k->due = 0;
  k->login_due = 0;
  rlock__ltimer_stop(c, &k->io_timer);
  return was;
}

/* Whether every request on the connection is quiet (rlock__lreq.quiet):
 * its failure then concerns no caller, so it is no warning. */
static int only_quiet(const rlock__lconn *k) {
  for (rlock__llink *e = k->reqs.first; e != NULL; e = e->next)
    if (!rlock__lreq_at(e)->quiet)
      return 0;
  return k->reqs.first != NULL;
}

void rlock__lconn_fail(rlock_client *c, rlock__lconn *k, int rc) {
  rlock__saved_error why;
  rlock__error_save(&why);
  int quiet = only_quiet(k);
  int was = shut(c, k);
  if (was != RLOCK__LCONN_CLOSED)
    rlock__obs_log(&c->obs, quiet ? RLOCK_LOG_DEBUG : RLOCK_LOG_WARN,
                   "loop: %s", why.message);
  uint64_t written = k->written;
  rlock__llist reqs = k->reqs; /* its links are its requests' own */
  k->reqs = (rlock__llist){0};
  rlock__lreq *r;
  while ((r = rlock__lreq_at(reqs.first)) != NULL) {
    rlock__llist_del(&reqs, &r->at);
    if (rlock__req_wait_reply_lost(&r->q)) { /* answered but for WAIT's */
      r->call.served_by = k->where;
      rlock__error_restore(&why);
      rlock__lreq_answered(c, k, r, RLOCK__STEP_DONE);
      continue;
    }
    r->q.rc = rc;
    r->q.reply = NULL;
    r->call.in_flight = written > r->start;
    r->call.transient = was != RLOCK__LCONN_READY || written <= r->start;
    rlock__error_restore(&why);
    rlock__lreq_failed(c, r);
  }
  if (k->on_down != NULL && was != RLOCK__LCONN_CLOSED) {
    rlock__error_restore(&why);
    k->on_down(c, k, rc);
  }
  rlock__error_restore(&why);
}

void rlock__lconn_destroy(rlock__lconn *k) {
  drop_io(k);
  free(k->out.p);
  k->out = (rlock__buf){0};
  free(k->sent);
  k->sent = NULL;
}

/* ---- replies ----------------------------------------------------------- */

/* SCRIPT LOAD's reply, ahead of the request's own: an error (an ACL
 * without script|load) makes later first uses go as EVAL; this request's
 * EVALSHA then meets NOSCRIPT and is sent again as EVAL. */
static void load_answered(rlock__lconn *k, rlock__reply *reply) {
  if (reply->type == RLOCK__R_ERROR)
    k->noload = 1;
  rlock__reply_free(reply);
}

/* The request at the head takes a reply; done, resent or kept. */
static void feed_head(rlock_client *c, rlock__lconn *k, rlock__reply *reply) {
  rlock__lreq *r = rlock__lreq_at(k->reqs.first);
  r->replies--;
  if (r->load_due) {
    r->load_due = 0;
    load_answered(k, reply);
    return;
  }
  rlock__step step = rlock__req_feed(&r->q, k->where, reply);
  if (step == RLOCK__STEP_MORE && r->replies > 0)
    return;
  rlock__llist_del(&k->reqs, &r->at);
  r->call.served_by = k->where;
  if (step == RLOCK__STEP_RESEND)
    k->nevald = 0; /* NOSCRIPT: the server's scripts were flushed */
  rlock__lreq_answered(c, k, r, step);
}

static void dispatch(rlock_client *c, rlock__lconn *k, rlock__reply *reply) {
  if (k->login_due > 0) {
    const char *word = k->login[0];
    k->login[0] = k->login[1];
    k->login_due--;
    rlock__lconn_answered(k);
    int rc = rlock__login_check(k->where, word, reply);
    rlock__reply_free(reply);
    if (rc != RLOCK_OK)
      rlock__lconn_fail(c, k, rc);
    return;
  }
  if (k->on_reply != NULL) {
    k->on_reply(c, k, reply);
    return;
  }
  if (k->reqs.first == NULL) {
    rlock__reply_free(reply);
    rlock__err(RLOCK_EPROTO, "redis %s: a reply nobody asked for", k->where);
    rlock__lconn_fail(c, k, RLOCK_EPROTO);
    return;
  }
  rlock__lconn_answered(k);
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
    k->rx_us = rlock__now_us();
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

void rlock__lconn_io(rlock_client *c, rlock__lconn *k, int events) {
  if (k->state == RLOCK__LCONN_CONNECTING) {
    if (events != 0)
      dial_step(c, k);
    return;
  }
  if ((events & RLOCK_LOOP_READ) && k->fd >= 0 &&
      k->state == RLOCK__LCONN_READY)
    on_readable(c, k);
  /* Writable: the end of the loop turn flushes. */
}

/* ---- requests ---------------------------------------------------------- */

/* The first use of a script on this connection: SCRIPT LOAD it first
 * (1, queued), or send it as EVAL where SCRIPT LOAD was refused. */
static int first_use(rlock__lconn *k, rlock__req *q) {
  const rlock__script *s = q->call->script;
  if (s == NULL || q->eval)
    return 0;
  for (int i = 0; i < k->nevald; i++)
    if (k->evald[i] == s)
      return 0;
  if (k->nevald < (int)(sizeof k->evald / sizeof k->evald[0]))
    k->evald[k->nevald++] = s;
  if (k->noload) {
    q->eval = 1;
    return 0;
  }
  const char *argv[3] = {"SCRIPT", "LOAD", s->text};
  size_t lens[3] = {6, 4, s->len};
  if (rlock__resp_command(&k->out, 3, argv, lens) != 0) {
    q->eval = 1; /* no room: the request's own encoding will say */
    return 0;
  }
  return 1;
}

void rlock__lreq_queue(rlock_client *c, rlock__lconn *k, rlock__lreq *r) {
  int rc = rlock__lconn_open(c, k);
  if (k->off > 0 && k->off == k->out.len)
    k->off = k->out.len = 0;
  size_t was = k->out.len;
  r->load_due = rc == RLOCK_OK && first_use(k, &r->q);
  if (rc == RLOCK_OK && rlock__req_encode_to(&r->q, &k->out) < 0) {
    rc = rlock_error_last()->code;
    if (r->load_due) { /* nothing of it goes out */
      k->out.len = was;
      k->nevald--;
    }
  }
  if (rc != RLOCK_OK) {
    r->q.rc = rc;
    r->call.in_flight = 0;
    r->call.transient = k->state == RLOCK__LCONN_CLOSED;
    rlock__lreq_failed(c, r);
    return;
  }
  r->start = k->queued;
  k->queued += k->out.len - was;
  r->sent_us = rlock__now_us();
  r->replies = 1 + r->load_due + r->q.asking_reply + (r->q.wait_due ? 1 : 0);
  rlock__lconn_expect(c, k, r->replies);
  rlock__llist_add(&k->reqs, &r->at);
  rlock__lconn_watch_bound(c, k, r->bound_us);
}

void rlock__lconn_watch_bound(rlock_client *c, rlock__lconn *k,
                              int64_t bound_us) {
  if (bound_us != 0 &&
      (k->io_timer.idx == RLOCK__LTIMER_OFF || bound_us < k->io_timer.at_us))
    rlock__ltimer_at(c, &k->io_timer, bound_us); /* on_timer decides */
}

void rlock__lconn_close(rlock_client *c, rlock__lconn *k) {
  shut(c, k);
  k->reqs = (rlock__llist){0};
}
