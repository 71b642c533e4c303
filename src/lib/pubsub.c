/*
 * pubsub.c - shared subscriptions, wake-up permits, and the subscriber
 * connection driven by the background thread.
 */
#include "pubsub.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "cmd.h"
#include "common.h"

#define BACKOFF_MIN_MS 25
#define BACKOFF_MAX_MS 1000
/* An idle subscriber connection is PINGed this often, so one that died
 * silently (a NAT or proxy dropping the flow) is noticed. */
#define PING_IDLE_US ((int64_t)30 * 1000 * 1000)

int rlock__pubsub_init(rlock__pubsub *ps) {
  memset(ps, 0, sizeof *ps);
  ps->backoff_ms = BACKOFF_MIN_MS;
  return pthread_mutex_init(&ps->mu, NULL) == 0
             ? RLOCK_OK
             : rlock__err(RLOCK_ENOMEM, "cannot create a mutex");
}

static void sub_free(rlock__sub *s) {
  pthread_cond_destroy(&s->cv);
  free(s->channel);
  free(s);
}

static void free_entry(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl, (void)arg;
  sub_free(v);
}

void rlock__pubsub_destroy(rlock__pubsub *ps) {
  rlock__map_each(&ps->subs, free_entry, NULL);
  rlock__map_clear(&ps->subs);
  rlock__conn_close(ps->conn);
  pthread_mutex_destroy(&ps->mu);
}

/* Find or create the subscription for `channel`. Called locked. */
static rlock__sub *sub_get(rlock__pubsub *ps, const char *channel) {
  size_t len = strlen(channel);
  rlock__sub *s = rlock__map_get(&ps->subs, channel, len);
  if (s != NULL)
    return s;
  s = calloc(1, sizeof *s);
  if (s == NULL || (s->channel = rlock__strndup(channel, len)) == NULL) {
    free(s);
    return NULL;
  }
  s->chlen = len;
  rlock__cond_init(&s->cv);
  if (rlock__map_put(&ps->subs, s->channel, len, s) != 0) {
    sub_free(s);
    return NULL;
  }
  return s;
}

/* Drop one reference; returns 1 when the background thread must act.
 * Called locked. */
static int sub_unref(rlock__pubsub *ps, rlock__sub *s) {
  if (--s->refs > 0)
    return 0;
  s->permits = 0;
  ps->dirty = 1;
  return 1;
}

/* Wait, locked, until `s` is confirmed. `gen` is the failure generation
 * seen before the background thread was asked to subscribe: a failure
 * recorded since then is this subscription's. */
static int wait_active(rlock_client *c, rlock__sub *s, int64_t deadline_us,
                       const rlock_cancel *cancel, uint64_t gen) {
  rlock__pubsub *ps = &c->ps;
  int64_t bound = rlock__deadline_after_ms(c->cfg.connect_timeout_ms +
                                           c->cfg.command_timeout_ms);
  int64_t until = deadline_us < bound ? deadline_us : bound;
  while (s->state != RLOCK__SUB_ACTIVE) {
    if (ps->fail_gen != gen)
      return rlock__err(ps->fail_code, "cannot subscribe to %s: %s",
                        s->channel, ps->fail_msg);
    if (rlock__canceled(cancel))
      return rlock__err(RLOCK_ECANCELED, "wait canceled");
    int64_t step = rlock__cancel_step(cancel, until);
    if (rlock__cond_wait_until(&s->cv, &ps->mu, step) != ETIMEDOUT ||
        step < until)
      continue;
    if (s->state == RLOCK__SUB_ACTIVE)
      break;
    if (until == deadline_us)
      return RLOCK__EDEADLINE;
    return rlock__err(RLOCK_ETIMEOUT, "subscription to %s not confirmed "
                      "within %lld ms", s->channel,
                      (long long)(c->cfg.connect_timeout_ms +
                                  c->cfg.command_timeout_ms));
  }
  return RLOCK_OK;
}

int rlock__sub_acquire(rlock_client *c, const char *channel,
                       int64_t deadline_us, const rlock_cancel *cancel,
                       rlock__sub **out) {
  rlock__pubsub *ps = &c->ps;
  pthread_mutex_lock(&ps->mu);
  rlock__sub *s = sub_get(ps, channel);
  if (s == NULL) {
    pthread_mutex_unlock(&ps->mu);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  s->refs++;
  uint64_t gen = ps->fail_gen;
  if (s->state != RLOCK__SUB_ACTIVE) {
    ps->dirty = 1;
    pthread_mutex_unlock(&ps->mu);
    rlock__bg_wake(c);
    pthread_mutex_lock(&ps->mu);
  }
  int rc = wait_active(c, s, deadline_us, cancel, gen);
  int wake = rc != RLOCK_OK && sub_unref(ps, s);
  pthread_mutex_unlock(&ps->mu);
  if (wake)
    rlock__bg_wake(c);
  *out = rc == RLOCK_OK ? s : NULL;
  return rc;
}

int rlock__sub_wait(rlock_client *c, rlock__sub *s, int64_t until_us,
                    const rlock_cancel *cancel) {
  rlock__pubsub *ps = &c->ps;
  pthread_mutex_lock(&ps->mu);
  s->waiting++;
  while (s->permits == 0 && !rlock__canceled(cancel)) {
    int64_t step = rlock__cancel_step(cancel, until_us);
    if (rlock__cond_wait_until(&s->cv, &ps->mu, step) == ETIMEDOUT &&
        step == until_us)
      break;
  }
  /* A canceled waiter will not attempt: leave the wake-up to another. */
  int got = s->permits > 0 && !rlock__canceled(cancel);
  if (got)
    s->permits--;
  else if (s->permits > 0)
    pthread_cond_signal(&s->cv);
  s->waiting--;
  pthread_mutex_unlock(&ps->mu);
  return got;
}

void rlock__sub_release(rlock_client *c, rlock__sub *s) {
  pthread_mutex_lock(&c->ps.mu);
  int wake = sub_unref(&c->ps, s);
  pthread_mutex_unlock(&c->ps.mu);
  if (wake)
    rlock__bg_wake(c);
}

int rlock__pubsub_fd(rlock_client *c) {
  return c->ps.conn ? c->ps.conn->fd : -1; /* conn: background thread only */
}

/* ---- background-thread side ------------------------------------------ */

static void record_failure(rlock__pubsub *ps, int code, const char *msg);

/* Release wake-ups for a message: "1" wakes every waiting thread, anything
 * else one (Redisson's UNLOCK_MESSAGE "0"). Permits never exceed the
 * number of local users, so a burst of messages cannot pile up. */
static void deliver(rlock__sub *s, const char *payload) {
  if (strcmp(payload, "1") == 0) {
    s->permits += s->refs; /* also those between an attempt and a sleep */
    pthread_cond_broadcast(&s->cv);
  } else {
    s->permits++;
    pthread_cond_signal(&s->cv);
  }
  if (s->permits > s->refs)
    s->permits = s->refs;
}

static void on_confirm(rlock__pubsub *ps, rlock__sub *s, int subscribed) {
  if (!subscribed) {
    s->state = RLOCK__SUB_NONE;
    ps->dirty = 1;
    return;
  }
  if (s->state == RLOCK__SUB_PENDING)
    s->state = RLOCK__SUB_ACTIVE;
  ps->backoff_ms = BACKOFF_MIN_MS; /* the connection works: reset */
  if (s->resub) { /* we may have missed unlocks while disconnected */
    s->resub = 0;
    s->permits += s->refs;
    if (s->permits > s->refs)
      s->permits = s->refs;
  }
  if (s->refs == 0)
    ps->dirty = 1;
  pthread_cond_broadcast(&s->cv);
}

/* Handle one reply on the subscriber connection. */
static void on_push(rlock__pubsub *ps, const rlock__reply *r) {
  if (r->type != RLOCK__R_ARRAY || r->n < 3 ||
      r->elem[0]->type != RLOCK__R_STR || r->elem[1]->type != RLOCK__R_STR)
    return;
  const rlock__reply *kind = r->elem[0], *ch = r->elem[1];
  pthread_mutex_lock(&ps->mu);
  rlock__sub *s = rlock__map_get(&ps->subs, ch->str, ch->len);
  if (s != NULL) {
    if (rlock__reply_is(kind, "message") && r->elem[2]->type == RLOCK__R_STR)
      deliver(s, r->elem[2]->str);
    else if (rlock__reply_is(kind, "subscribe"))
      on_confirm(ps, s, 1);
    else if (rlock__reply_is(kind, "unsubscribe"))
      on_confirm(ps, s, 0);
  }
  pthread_mutex_unlock(&ps->mu);
}

static void mark_lost(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl, (void)arg;
  rlock__sub *s = v;
  if (s->state != RLOCK__SUB_NONE && s->refs > 0)
    s->resub = 1;
  s->state = RLOCK__SUB_NONE;
}

/* The subscriber connection broke: every subscription must be redone. */
static void drop_conn(rlock_client *c) {
  rlock__pubsub *ps = &c->ps;
  pthread_mutex_lock(&ps->mu);
  rlock__conn *conn = ps->conn;
  ps->conn = NULL;
  rlock__map_each(&ps->subs, mark_lost, NULL);
  ps->dirty = 1;
  /* Back off even after a connection that opened fine: a server that
   * accepts and then closes (maxclients) must not be hammered. */
  ps->reconnect_at_us = rlock__now_us() + ps->backoff_ms * 1000;
  ps->backoff_ms = ps->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                                       : ps->backoff_ms * 2;
  ps->ping_sent_us = 0;
  pthread_mutex_unlock(&ps->mu);
  rlock__conn_close(conn);
}

/* An error reply on the subscriber connection (an ACL refusing a
 * channel, ...): waiters for a confirmation fail with the status the one
 * error rule gives (cmd.h), and the connection is redone after the
 * back-off. */
static void on_error_reply(rlock_client *c, const rlock__reply *r) {
  int code = rlock__error_status(c->ps.conn->where, r);
  pthread_mutex_lock(&c->ps.mu);
  record_failure(&c->ps, code, rlock_error_last()->message);
  pthread_mutex_unlock(&c->ps.mu);
}

static void read_pushes(rlock_client *c) {
  if (rlock__conn_read_some(c->ps.conn) != RLOCK_OK) {
    drop_conn(c);
    return;
  }
  c->ps.last_rx_us = rlock__now_us(); /* background thread only */
  c->ps.ping_sent_us = 0;
  for (;;) {
    rlock__reply *r;
    if (rlock__conn_take(c->ps.conn, &r) != RLOCK_OK) {
      drop_conn(c);
      return;
    }
    if (r == NULL)
      return;
    int failed = r->type == RLOCK__R_ERROR;
    if (failed)
      on_error_reply(c, r);
    else
      on_push(&c->ps, r);
    rlock__reply_free(r);
    if (failed) {
      drop_conn(c);
      return;
    }
  }
}

typedef struct plan {
  const char **sub;
  const char **unsub;
  size_t *sublen;
  size_t *unsublen;
  int nsub;
  int nunsub;
  rlock__sub **dead;
  int ndead;
  int wanted; /* some subscription has local users */
  int64_t now;
} plan;

static void plan_entry(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl;
  plan *p = arg;
  rlock__sub *s = v;
  if (s->refs > 0)
    p->wanted = 1;
  if (s->refs > 0 && s->state == RLOCK__SUB_NONE) {
    s->state = RLOCK__SUB_PENDING;
    s->sent_us = p->now;
    p->sublen[p->nsub] = s->chlen;
    p->sub[p->nsub++] = s->channel;
  } else if (s->refs == 0 && s->state == RLOCK__SUB_ACTIVE) {
    s->state = RLOCK__SUB_UNSUB_PENDING;
    s->sent_us = p->now;
    p->unsublen[p->nunsub] = s->chlen;
    p->unsub[p->nunsub++] = s->channel;
  } else if (s->refs == 0 && s->state == RLOCK__SUB_NONE) {
    p->dead[p->ndead++] = s;
  }
}

static int plan_alloc(plan *p, size_t n) {
  memset(p, 0, sizeof *p);
  p->now = rlock__now_us();
  n += 1; /* room for the command word */
  p->sub = malloc(n * sizeof *p->sub);
  p->unsub = malloc(n * sizeof *p->unsub);
  p->sublen = malloc(n * sizeof *p->sublen);
  p->unsublen = malloc(n * sizeof *p->unsublen);
  p->dead = malloc(n * sizeof *p->dead);
  return p->sub && p->unsub && p->sublen && p->unsublen && p->dead ? 0 : -1;
}

static void plan_free(plan *p) {
  free(p->sub);
  free(p->unsub);
  free(p->sublen);
  free(p->unsublen);
  free(p->dead);
}

/* Send one (UN)SUBSCRIBE naming every channel in `chans` (whose slot 0 is
 * reserved for the command word). Channel names are copied into the
 * command buffer while the mutex is held, as entries may go away. */
static int format_cmd(char **buf, const char *word, const char **chans,
                      size_t *lens, int n) {
  if (n == 0)
    return 0;
  memmove(chans + 1, chans, (size_t)n * sizeof *chans);
  memmove(lens + 1, lens, (size_t)n * sizeof *lens);
  chans[0] = word;
  lens[0] = strlen(word);
  long len = rlock__conn_format(buf, n + 1, chans, lens);
  return len < 0 ? -1 : (int)len;
}

/* Work out and encode what the server must be told. Returns 0, or -1 when
 * out of memory (retried on the next pass). */
static int reconcile(rlock__pubsub *ps, char **subcmd, int *sublen,
                     char **unsubcmd, int *unsublen, int *wanted) {
  plan p;
  pthread_mutex_lock(&ps->mu);
  *wanted = 0;
  if (!ps->dirty) {
    *wanted = ps->subs.count > 0;
    pthread_mutex_unlock(&ps->mu);
    return 0;
  }
  if (plan_alloc(&p, ps->subs.count) != 0) {
    pthread_mutex_unlock(&ps->mu);
    plan_free(&p);
    return -1;
  }
  rlock__map_each(&ps->subs, plan_entry, &p);
  if (ps->conn == NULL) { /* nothing sent: undo the state changes */
    for (int i = 0; i < p.nsub; i++)
      ((rlock__sub *)rlock__map_get(&ps->subs, p.sub[i], p.sublen[i]))->state =
          RLOCK__SUB_NONE;
    p.nsub = p.nunsub = 0;
  } else {
    ps->dirty = 0;
  }
  *sublen = format_cmd(subcmd, "SUBSCRIBE", p.sub, p.sublen, p.nsub);
  *unsublen = format_cmd(unsubcmd, "UNSUBSCRIBE", p.unsub, p.unsublen, p.nunsub);
  for (int i = 0; i < p.ndead; i++) {
    rlock__map_del(&ps->subs, p.dead[i]->channel, p.dead[i]->chlen);
    sub_free(p.dead[i]);
  }
  *wanted = p.wanted || p.nunsub > 0;
  pthread_mutex_unlock(&ps->mu);
  plan_free(&p);
  return *sublen < 0 || *unsublen < 0 ? -1 : 0;
}

static void broadcast(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl, (void)arg;
  pthread_cond_broadcast(&((rlock__sub *)v)->cv);
}

/* Tell the threads waiting for a confirmation why none will come.
 * Called locked. */
static void record_failure(rlock__pubsub *ps, int code, const char *msg) {
  ps->fail_gen++;
  ps->fail_code = code;
  snprintf(ps->fail_msg, sizeof ps->fail_msg, "%s", msg);
  rlock__map_each(&ps->subs, broadcast, NULL);
}

/* Connect the subscriber when someone needs it; on failure tell the
 * threads waiting for a confirmation and back off. */
static int64_t ensure_conn(rlock_client *c) {
  rlock__pubsub *ps = &c->ps;
  int64_t now = rlock__now_us();
  if (now < ps->reconnect_at_us)
    return ps->reconnect_at_us;
  rlock__conn *conn;
  int rc = rlock__conn_open(&conn, &c->cfg.endpoint, c->cfg.connect_timeout_ms,
                            c->cfg.command_timeout_ms);
  pthread_mutex_lock(&ps->mu);
  if (rc == RLOCK_OK) {
    ps->conn = conn;
    ps->dirty = 1;
    ps->last_rx_us = rlock__now_us();
    ps->ping_sent_us = 0;
  } else {
    record_failure(ps, rc, rlock_error_last()->message);
    ps->reconnect_at_us = rlock__now_us() + ps->backoff_ms * 1000;
    ps->backoff_ms = ps->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                                         : ps->backoff_ms * 2;
  }
  pthread_mutex_unlock(&ps->mu);
  return rc == RLOCK_OK ? INT64_MAX : ps->reconnect_at_us;
}

typedef struct health {
  int64_t now;
  int64_t timeout_us;
  int64_t next; /* earliest pending confirmation's deadline */
  int stale;    /* one is overdue */
} health;

static void check_pending(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl;
  const rlock__sub *s = v;
  health *h = arg;
  if (s->state != RLOCK__SUB_PENDING && s->state != RLOCK__SUB_UNSUB_PENDING)
    return;
  int64_t due = s->sent_us + h->timeout_us;
  if (h->now >= due)
    h->stale = 1;
  else if (due < h->next)
    h->next = due;
}

/* The subscriber connection must keep answering: an (UN)SUBSCRIBE not
 * confirmed, or a PING not answered, within the command timeout means it
 * died silently (a NAT or proxy dropped it), and it is redone. An idle one
 * is PINGed every PING_IDLE_US. Returns when to look again. */
static int64_t check_health(rlock_client *c) {
  rlock__pubsub *ps = &c->ps;
  health h = {rlock__now_us(), c->cfg.command_timeout_ms * 1000, INT64_MAX, 0};
  pthread_mutex_lock(&ps->mu);
  rlock__map_each(&ps->subs, check_pending, &h);
  pthread_mutex_unlock(&ps->mu);
  if (ps->ping_sent_us != 0 && h.now >= ps->ping_sent_us + h.timeout_us)
    h.stale = 1;
  if (h.stale) {
    drop_conn(c);
    return h.now;
  }
  if (ps->ping_sent_us == 0 && h.now >= ps->last_rx_us + PING_IDLE_US) {
    static const char ping[] = "*1\r\n$4\r\nPING\r\n";
    if (rlock__conn_send(ps->conn, ping, sizeof ping - 1) != RLOCK_OK) {
      drop_conn(c);
      return h.now;
    }
    ps->ping_sent_us = h.now;
  }
  int64_t ping_due = ps->ping_sent_us ? ps->ping_sent_us + h.timeout_us
                                      : ps->last_rx_us + PING_IDLE_US;
  return ping_due < h.next ? ping_due : h.next;
}

int64_t rlock__pubsub_service(rlock_client *c, int readable) {
  rlock__pubsub *ps = &c->ps;
  if (ps->conn != NULL && readable)
    read_pushes(c);
  char *subcmd = NULL, *unsubcmd = NULL;
  int sublen = 0, unsublen = 0, wanted = 0;
  if (reconcile(ps, &subcmd, &sublen, &unsubcmd, &unsublen, &wanted) != 0) {
    free(subcmd);
    free(unsubcmd);
    return rlock__now_us() + BACKOFF_MAX_MS * 1000; /* out of memory */
  }
  if (ps->conn == NULL) {
    free(subcmd);
    free(unsubcmd);
    if (!wanted)
      return INT64_MAX;
    int64_t next = ensure_conn(c);
    return ps->conn != NULL ? rlock__pubsub_service(c, 0) : next;
  }
  int rc = RLOCK_OK;
  if (sublen > 0)
    rc = rlock__conn_send(ps->conn, subcmd, (size_t)sublen);
  if (rc == RLOCK_OK && unsublen > 0)
    rc = rlock__conn_send(ps->conn, unsubcmd, (size_t)unsublen);
  free(subcmd);
  free(unsubcmd);
  if (rc != RLOCK_OK) {
    drop_conn(c);
    return rlock__now_us();
  }
  return check_health(c);
}
