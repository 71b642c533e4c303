/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * subconn.c - the background thread's side of pub/sub: subscriber
 * connections, reading pushes, and telling the servers what to
 * (un)subscribe.
 */
#include "subconn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "client_int.h"
#include "cmd.h"
#include "common.h"
#include "pubsub.h"
#include "reader.h"
#include "subproto.h"

#define BACKOFF_MIN_MS RLOCK__RESUB_MIN_MS
#define BACKOFF_MAX_MS RLOCK__RESUB_MAX_MS
/* An idle subscriber connection is PINGed this often, so one that died
 * silently (a NAT or proxy dropping the flow) is noticed. */
#define PING_IDLE_US RLOCK__SUB_PING_IDLE_US

void rlock__subconn_free(rlock__subconn *sc) {
  if (sc == NULL)
    return;
  rlock__conn_close(sc->conn);
  free(sc);
}

static rlock__subconn *subconn_new(rlock__node *node) {
  rlock__subconn *sc = rlock__calloc(1, sizeof *sc);
  if (sc != NULL) {
    sc->node = node;
    sc->backoff_ms = BACKOFF_MIN_MS;
    sc->pub_fd = -1;
  }
  return sc;
}

/* ---- assigning subscriptions to connections ----------------------------- */

/* The connection for `node` (NULL: the classic one), created if new. */
static rlock__subconn *conn_for(rlock__pubsub *ps, rlock__node *node) {
  for (size_t i = 0; i < ps->nconns; i++)
    if (ps->conns[i]->node == node)
      return ps->conns[i];
  rlock__subconn **v = rlock__realloc(ps->conns, (ps->nconns + 1) * sizeof *v);
  if (v == NULL)
    return NULL;
  ps->conns = v;
  rlock__subconn *sc = subconn_new(node);
  if (sc != NULL)
    ps->conns[ps->nconns++] = sc;
  return sc;
}

typedef struct assign {
  rlock_client *c;
  int unrouted; /* a channel's slot has no known owner yet */
} assign;

/* Called locked: something could not be done for lack of memory; the
 * background thread tries it again at its next pass (RESUB_MIN_MS on:
 * rlock__pubsub_service). */
static void again_later(rlock__pubsub *ps) {
  ps->dirty = 1;
  ps->short_of_memory = 1;
}

static void assign_entry(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl;
  rlock__sub *s = v;
  assign *a = arg;
  rlock__pubsub *ps = a->c->ps;
  if (s->on != NULL || s->refs == 0)
    return;
  rlock__node *node = NULL;
  if (ps->sharded &&
      (node = rlock__sub_node(&a->c->topo, 1, s->channel)) == NULL) {
    a->unrouted = 1;
    return;
  }
  s->on = conn_for(ps, node);
  if (s->on == NULL)
    again_later(ps);
}

/* Give every subscription that has users a connection. Returns 1 when a
 * channel's slot owner is unknown (the caller refreshes the map). */
static int assign_all(rlock_client *c) {
  assign a = {c, 0};
  pthread_mutex_lock(&c->ps->mu);
  rlock__map_each(&c->ps->subs, assign_entry, &a);
  pthread_mutex_unlock(&c->ps->mu);
  return a.unrouted;
}

/* ---- connecting and dropping -------------------------------------------- */

static void back_off(rlock__subconn *sc) {
  sc->reconnect_at_us = rlock__now_us() + sc->backoff_ms * 1000;
  sc->backoff_ms =
      sc->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : sc->backoff_ms * 2;
}

/* The connection broke (or must be redone), `why` (NULL: the last
 * error): every subscription on it is redone after the back-off; sharded
 * ones where their channel now lives. */
/* How long a quiet connection may go unread (rlock__subconn.polled): what
 * piles up meanwhile is bounded by this much of the channels' traffic. */
#define LAZY_READ_US 100000
/* How often a connection left to a direct waiter is looked at again. */
#define SKIPPED_RECHECK_US 1000000

static void drop(rlock_client *c, rlock__subconn *sc, const char *why) {
  pthread_mutex_lock(&c->ps->mu);
  rlock__pubsub_lost(c->ps, sc, c->ps->sharded);
  sc->pub_fd = -1; /* before the close: a direct waiter stops polling it */
  rlock__pubsub_closing(c->ps, sc->conn != NULL ? sc->conn->fd : -1);
  pthread_mutex_unlock(&c->ps->mu);
  rlock__obs_count(&c->obs, RLOCK__STAT_DISCONNECTS);
  rlock__obs_log(&c->obs, RLOCK_LOG_WARN,
                 "subscriber connection to %s "
                 "dropped: %s; subscribing again in %lld ms",
                 sc->at != NULL ? sc->at->where : "?",
                 why ? why : rlock_error_last()->message,
                 (long long)sc->backoff_ms);
  sc->lost = 1;
  rlock__conn_close(sc->conn);
  sc->conn = NULL;
  sc->ping_sent_us = 0;
  /* Back off even after a connection that opened fine: a server that
   * accepts and then closes (maxclients) must not be hammered. */
  back_off(sc);
  if (c->topo.target.kind != RLOCK__TOPO_SINGLE)
    rlock__topo_refresh(&c->topo); /* a failover may be why */
}

/* Count and log a connection attempt (no lock held). */
static void log_connect(rlock_client *c, rlock__subconn *sc,
                        const rlock__node *node, int rc) {
  if (rc != RLOCK_OK) {
    rlock__obs_count(&c->obs, RLOCK__STAT_CONNECT_FAILURES);
    rlock__obs_log(&c->obs, RLOCK_LOG_WARN, "subscriber: %s",
                   rlock_error_last()->message);
    return;
  }
  rlock__obs_count(&c->obs, RLOCK__STAT_CONNECTS);
  rlock__obs_add(&c->obs, RLOCK__STAT_RECONNECTS, sc->lost != 0);
  rlock__obs_log(&c->obs, sc->lost ? RLOCK_LOG_INFO : RLOCK_LOG_DEBUG,
                 "subscriber %sconnected to %s", sc->lost ? "re" : "",
                 node->where);
  sc->lost = 0;
}

/* Connect; on failure tell the threads waiting for a confirmation. */
static void connect_sc(rlock_client *c, rlock__subconn *sc) {
  rlock__node *node = sc->node;
  int rc = node ? RLOCK_OK : rlock__topo_route(&c->topo, NULL, &node);
  if (rc == RLOCK_OK)
    rc = rlock__conn_open(&sc->conn, &node->ep, c->cfg.connect_timeout_ms,
                          c->cfg.command_timeout_ms);
  sc->at = node;
  pthread_mutex_lock(&c->ps->mu);
  if (rc == RLOCK_OK) {
    c->ps->dirty = 1;
    /* TLS bytes cannot be peeked at: its waiters wait for the
     * background thread. */
    sc->pub_fd = sc->conn->tls == NULL ? sc->conn->fd : -1;
    sc->last_rx_us = rlock__now_us();
    sc->ping_sent_us = 0;
  } else {
    sc->conn = NULL;
    /* One server that cannot be reached fails the threads waiting for a
     * confirmation. Behind Sentinel or a cluster a failover may be under
     * way: they keep waiting (within their own deadline) while the
     * subscriber tries again, a sharded one where its channels' owners
     * now are (the map is refreshed below). Out of memory is this
     * thread's trouble, not the server's: tried again after the back-off
     * while they wait (bounded by the holder's lease: acquire.c). */
    if (c->topo.target.kind == RLOCK__TOPO_SINGLE && rc != RLOCK_ENOMEM)
      rlock__pubsub_fail(c->ps, sc, rc, rlock_error_last()->message);
    else if (sc->node != NULL)
      rlock__pubsub_lost(c->ps, sc, 1);
    back_off(sc);
  }
  pthread_mutex_unlock(&c->ps->mu);
  log_connect(c, sc, node, rc);
  if (rc != RLOCK_OK && c->topo.target.kind != RLOCK__TOPO_SINGLE)
    rlock__topo_refresh(&c->topo);
}

/* ---- reading ------------------------------------------------------------ */

static void on_push(rlock_client *c, rlock__subconn *sc,
                    const rlock__reply *r) {
  rlock__push push;
  rlock__push_read(r, &push);
  if (push.kind == RLOCK__PUSH_OTHER)
    return; /* ["pong", ""] and the like */
  if (sc->dropping && push.kind == RLOCK__PUSH_MESSAGE)
    return; /* older than the attempt its new user makes next */
  pthread_mutex_lock(&c->ps->mu);
  rlock__pubsub_push(c->ps, sc, &push);
  if (push.kind == RLOCK__PUSH_SUBSCRIBED)
    sc->backoff_ms = BACKOFF_MIN_MS; /* the connection works: reset */
  pthread_mutex_unlock(&c->ps->mu);
}

/* An error reply: MOVED (a sharded channel's slot is elsewhere) redoes the
 * connection's subscriptions where they now belong; anything else (an
 * ACL refusing a channel, ...) fails the waiters with the one error rule's
 * status, and the connection is redone after the back-off. */
static void on_error_reply(rlock_client *c, rlock__subconn *sc,
                           const rlock__reply *r) {
  if (rlock__sub_error_moved(r)) {
    rlock__topo_refresh(&c->topo);
    return;
  }
  int code = rlock__error_status(sc->conn->where, r);
  pthread_mutex_lock(&c->ps->mu);
  rlock__pubsub_fail(c->ps, sc, code, rlock_error_last()->message);
  pthread_mutex_unlock(&c->ps->mu);
}

static void read_replies(rlock_client *c, rlock__subconn *sc);

static void read_pushes(rlock_client *c, rlock__subconn *sc) {
  sc->lazy_due_us = rlock__now_us() + LAZY_READ_US;
  if (rlock__conn_read_some(sc->conn) != RLOCK_OK) {
    drop(c, sc, NULL);
    return;
  }
  read_replies(c, sc);
  pthread_mutex_lock(&c->ps->mu);
  rlock__pubsub_read_done(c->ps, sc);
  pthread_mutex_unlock(&c->ps->mu);
}

/* A drain asked for by a subscription taken from its linger: read what
 * the connection holds now, its unlock messages dropped. */
static void drain(rlock_client *c, rlock__subconn *sc) {
  struct pollfd p = {.fd = sc->conn != NULL ? sc->conn->fd : -1,
                     .events = POLLIN};
  if (p.fd >= 0 && poll(&p, 1, 0) > 0) {
    sc->dropping = 1;
    read_pushes(c, sc);
    sc->dropping = 0;
  }
  pthread_mutex_lock(&c->ps->mu);
  sc->drain = 0;
  sc->drained_gen++;
  rlock__pubsub_drained(c->ps);
  pthread_mutex_unlock(&c->ps->mu);
}

int rlock__subconn_drop_stale(rlock__subconn *sc) {
  /* Replies counted to skip would count these pushes too (RESP2 cannot
   * tell them apart): a subscriber connection owes none, but if it did,
   * dropping pushes would shift what they skip. */
  if (sc->pub_fd < 0 || sc->polled || sc->drain || sc->conn->skip != 0 ||
      rlock__reader_buffered(sc->conn->reader) != 0)
    return 0;
  char buf[4096];
  for (;;) {
    ssize_t n = recv(sc->pub_fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return errno == EAGAIN || errno == EWOULDBLOCK;
    size_t len = rlock__push_messages_len(buf, (size_t)n);
    if (len == 0)
      return 0; /* the end, or not a message: the background thread's */
    ssize_t got;
    do /* what was peeked is there: nobody else reads the socket now */
      got = recv(sc->pub_fd, buf, len, MSG_DONTWAIT);
    while (got < 0 && errno == EINTR);
    if (got != (ssize_t)len)
      return 0;
    if ((size_t)n < sizeof buf) /* all there was, or something else after */
      return len == (size_t)n;
    /* A full buffer: what follows (maybe the rest of a push it cut) is
     * looked at afresh. */
  }
}

/* The drains asked for since the last pass. */
static void serve_drains(rlock_client *c) {
  for (size_t i = 0; i < c->ps->nconns; i++) {
    rlock__subconn *sc = c->ps->conns[i];
    pthread_mutex_lock(&c->ps->mu);
    int asked = sc->drain;
    pthread_mutex_unlock(&c->ps->mu);
    if (asked)
      drain(c, sc);
  }
}

/* Handle every reply read so far. */
static void read_replies(rlock_client *c, rlock__subconn *sc) {
  sc->last_rx_us = rlock__now_us();
  sc->ping_sent_us = 0;
  for (;;) {
    rlock__reply *r;
    if (rlock__conn_take_reply(sc->conn, &r) != RLOCK_OK) {
      drop(c, sc, NULL);
      return;
    }
    if (r == NULL)
      return;
    int failed = r->type == RLOCK__R_ERROR;
    if (failed)
      on_error_reply(c, sc, r);
    else
      on_push(c, sc, r);
    rlock__reply_free(r);
    if (failed) {
      drop(c, sc, NULL);
      return;
    }
  }
}

/* ---- telling the server -------------------------------------------------- */

/* The commands one connection must send, encoded while the mutex is held
 * (channel names may go away once it is released). */
typedef struct plan {
  rlock_client *c;
  rlock__subconn *sc;
  int64_t now;
  char *buf;
  size_t len;
  int failed;
  int used;   /* subscriptions on this connection (any state) */
  int wanted; /* ... of which some have users */
} plan;

/* Append one command; returns 0, or -1 (and p->failed) out of memory. */
static int append_cmd(plan *p, const char *word, const char *ch, size_t chlen) {
  const char *argv[2] = {word, ch};
  size_t lens[2] = {strlen(word), chlen};
  char *cmd;
  long n = rlock__resp_format(&cmd, 2, argv, lens);
  char *buf = n < 0 ? NULL : rlock__realloc(p->buf, p->len + (size_t)n);
  if (buf == NULL) {
    free(n < 0 ? NULL : cmd);
    p->failed = 1;
    return -1;
  }
  memcpy(buf + p->len, cmd, (size_t)n);
  free(cmd);
  p->buf = buf;
  p->len += (size_t)n;
  return 0;
}

static void plan_entry(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl;
  rlock__sub *s = v;
  plan *p = arg;
  if (s->on != p->sc)
    return;
  int sharded = p->c->ps->sharded;
  p->used = 1;
  if (s->refs > 0)
    p->wanted = 1;
  if (p->sc->conn == NULL)
    return;
  /* A command that could not be encoded leaves the state as it was, so
   * the next pass sends it. */
  if (s->refs > 0 && s->state == RLOCK__SUB_NONE) {
    if (append_cmd(p, rlock__sub_word(sharded, 0), s->channel, s->chlen) == 0)
      s->state = RLOCK__SUB_PENDING;
    s->sent_us = p->now;
  } else if (s->refs == 0 && s->state == RLOCK__SUB_ACTIVE &&
             !rlock__sub_lingers(p->c->ps, s, p->now)) {
    if (append_cmd(p, rlock__sub_word(sharded, 1), s->channel, s->chlen) == 0)
      s->state = RLOCK__SUB_UNSUB_PENDING;
    s->sent_us = p->now;
  }
}

/* Send what `sc` owes the server. Returns 0, or -1 when it must be
 * dropped. Sets *used / *wanted. */
static int reconcile(rlock_client *c, rlock__subconn *sc, int *used,
                     int *wanted) {
  plan p = {.c = c, .sc = sc, .now = rlock__now_us()};
  pthread_mutex_lock(&c->ps->mu);
  rlock__map_each(&c->ps->subs, plan_entry, &p);
  pthread_mutex_unlock(&c->ps->mu);
  *used = p.used;
  *wanted = p.wanted;
  int rc = RLOCK_OK;
  if (p.len > 0)
    rc = rlock__conn_send(sc->conn, p.buf, p.len);
  free(p.buf);
  if (p.failed) { /* out of memory: what was not sent is redone later */
    pthread_mutex_lock(&c->ps->mu);
    again_later(c->ps);
    pthread_mutex_unlock(&c->ps->mu);
  }
  return rc == RLOCK_OK ? 0 : -1;
}

/* ---- health ---------------------------------------------------------------
 */

typedef struct health {
  rlock__subconn *sc;
  int64_t now;
  int64_t timeout_us;
  int64_t next; /* earliest pending confirmation's deadline */
  int stale;    /* one is overdue */
} health;

static void check_pending(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl;
  const rlock__sub *s = v;
  health *h = arg;
  if (s->on != h->sc ||
      (s->state != RLOCK__SUB_PENDING && s->state != RLOCK__SUB_UNSUB_PENDING))
    return;
  int64_t due = s->sent_us + h->timeout_us;
  if (h->now >= due)
    h->stale = 1;
  else if (due < h->next)
    h->next = due;
}

/* Returns when to look again; drops a connection that stopped answering. */
static int64_t check_health(rlock_client *c, rlock__subconn *sc) {
  health h = {sc, rlock__now_us(), c->cfg.command_timeout_ms * 1000, INT64_MAX,
              0};
  pthread_mutex_lock(&c->ps->mu);
  rlock__map_each(&c->ps->subs, check_pending, &h);
  pthread_mutex_unlock(&c->ps->mu);
  if (sc->ping_sent_us != 0 && h.now >= sc->ping_sent_us + h.timeout_us)
    h.stale = 1;
  if (!h.stale && sc->ping_sent_us == 0 &&
      h.now >= sc->last_rx_us + PING_IDLE_US) {
    static const char ping[] = "*1\r\n$4\r\nPING\r\n";
    h.stale = rlock__conn_send(sc->conn, ping, sizeof ping - 1) != RLOCK_OK;
    sc->ping_sent_us = h.now;
  }
  if (h.stale) {
    drop(c, sc, "no answer to PING within the command timeout");
    return h.now;
  }
  int64_t ping_due = sc->ping_sent_us ? sc->ping_sent_us + h.timeout_us
                                      : sc->last_rx_us + PING_IDLE_US;
  return ping_due < h.next ? ping_due : h.next;
}

/* ---- the service ----------------------------------------------------------
 */

/* Whether sc is left out of the next poll; lowers *next to when it must
 * be read. Called locked. */
static int left_out(rlock__pubsub *ps, rlock__subconn *sc, int skip,
                    int64_t now, int64_t *next) {
  int64_t due = sc->lazy_due_us;
  if (sc->conn->fd == skip) {
    /* Its waiter reads or hands over what arrives, but once it is gone
     * (and nobody else waits) nobody wakes this thread for it. */
    due = now + SKIPPED_RECHECK_US;
  } else if (sc->pub_fd < 0 || ps->users > 0 || sc->ping_sent_us != 0 ||
             sc->drain || now >= due) {
    return 0;
  }
  if (due < *next)
    *next = due;
  return 1;
}

int rlock__pubsub_pollfds(rlock_client *c, struct pollfd *fds, int max,
                          int64_t *next) {
  rlock__pubsub *ps = c->ps;
  int64_t now = rlock__now_us();
  pthread_mutex_lock(&ps->mu);
  int skip = rlock__pubsub_direct_fd(ps);
  int n = 0;
  for (size_t i = 0; i < ps->nconns; i++) {
    rlock__subconn *sc = ps->conns[i];
    sc->polled = 0;
    if (sc->conn == NULL || n >= max)
      continue;
    /* A negative fd is ignored by poll(). */
    sc->polled = !left_out(ps, sc, skip, now, next);
    fds[n++] =
        (struct pollfd){.fd = sc->polled ? sc->conn->fd : -1, .events = POLLIN};
  }
  pthread_mutex_unlock(&ps->mu);
  return n;
}

static rlock__subconn *by_fd(rlock_client *c, int fd) {
  for (size_t i = 0; i < c->ps->nconns; i++)
    if (c->ps->conns[i]->conn != NULL && c->ps->conns[i]->conn->fd == fd)
      return c->ps->conns[i];
  return NULL;
}

/* Serve one connection (reconciling when something changed); returns when
 * it next wants to run, or -1 when it is unused and may be closed. */
static int64_t serve(rlock_client *c, rlock__subconn *sc, int dirty) {
  if (dirty && reconcile(c, sc, &sc->used, &sc->wanted) != 0) {
    drop(c, sc, NULL);
    return rlock__now_us();
  }
  if (sc->conn == NULL) {
    if (!sc->wanted)
      return sc->used || sc->node == NULL ? INT64_MAX : -1;
    if (rlock__now_us() < sc->reconnect_at_us)
      return sc->reconnect_at_us;
    connect_sc(c, sc);
    return rlock__now_us(); /* subscribe on the next pass */
  }
  if (!sc->used && sc->node != NULL) /* a sharded node nobody needs now */
    return -1;
  if (c->topo.target.kind == RLOCK__TOPO_SENTINEL &&
      sc->at != atomic_load(&c->topo.primary)) {
    /* Sentinel moved the master: the old one, even if alive, no longer
     * sees the unlocks published on the new one. */
    drop(c, sc, "Sentinel's master moved");
    return rlock__now_us();
  }
  return check_health(c, sc);
}

/* Whether a direct waiter watches sc's socket (and has not parked): what
 * arrived is left for it to peek at first, which it could not if this
 * thread, woken by the same bytes, read them before it ran; it wakes this
 * thread when the socket must be read (pubsub.c, need_reader). */
static int direct_watches(rlock__pubsub *ps, const rlock__subconn *sc) {
  pthread_mutex_lock(&ps->mu);
  int fd = rlock__pubsub_direct_fd(ps);
  int watching = fd >= 0 && sc->conn != NULL && sc->conn->fd == fd;
  pthread_mutex_unlock(&ps->mu);
  return watching;
}

int64_t rlock__pubsub_service(rlock_client *c, const struct pollfd *fds,
                              int n) {
  rlock__pubsub *ps = c->ps;
  for (int i = 0; i < n; i++) {
    rlock__subconn *sc = by_fd(c, fds[i].fd);
    if (sc != NULL && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
        !direct_watches(ps, sc))
      read_pushes(c, sc);
  }
  serve_drains(c);
  pthread_mutex_lock(&ps->mu);
  int64_t now = rlock__now_us();
  if (ps->next_idle_us != 0 && now >= ps->next_idle_us) {
    ps->dirty = 1; /* a linger ended: unsubscribe (planning re-arms) */
    ps->next_idle_us = 0;
  }
  int dirty = ps->dirty;
  ps->dirty = 0;
  ps->sharded = atomic_load(&c->topo.sharded) > 0;
  pthread_mutex_unlock(&ps->mu);
  int64_t next = INT64_MAX;
  if (dirty && assign_all(c)) {
    rlock__topo_refresh(&c->topo); /* learn who owns the new slots */
    next = rlock__now_us() + RLOCK__TOPO_REFRESH_MS * 1000;
    pthread_mutex_lock(&ps->mu);
    ps->dirty = 1;
    pthread_mutex_unlock(&ps->mu);
  }
  for (size_t i = 0; i < ps->nconns;) {
    int64_t at = serve(c, ps->conns[i], dirty);
    if (at < 0) { /* close an unused sharded connection */
      rlock__subconn_free(ps->conns[i]);
      ps->conns[i] = ps->conns[--ps->nconns];
      continue;
    }
    next = at < next ? at : next;
    i++;
  }
  pthread_mutex_lock(&ps->mu);
  if (dirty)
    rlock__pubsub_sweep(ps);
  if (ps->next_idle_us != 0 && ps->next_idle_us < next)
    next = ps->next_idle_us;
  if (ps->short_of_memory) { /* again soon, not in a tight loop */
    ps->short_of_memory = 0;
    int64_t soon = rlock__now_us() + BACKOFF_MIN_MS * 1000;
    next = soon < next ? soon : next;
  }
  pthread_mutex_unlock(&ps->mu);
  return next;
}
