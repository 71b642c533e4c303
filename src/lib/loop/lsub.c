/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lsub.c - a loop client's subscribers: channels shared by the
 * acquisitions waiting on them, each on the subscriber connection of the
 * node that serves it: one connection for classic pub/sub (the primary:
 * a single server, Sentinel's master, or any node of a cluster, which
 * forwards PUBLISH everywhere), or one per node that owns a waited-for
 * channel's slot for sharded pub/sub (SSUBSCRIBE, Redisson's AUTO rule on
 * Redis 7, decided by the topology's probe).
 *
 * Redisson's messages: "0" (an unlock) wakes one waiter, the one that has
 * waited longest and is asleep, or is kept as a permit for the next one
 * to fall asleep; "1" (a read unlock) wakes every waiter. A channel whose
 * last waiter left stays subscribed for the configured linger (at most
 * the configured number of such channels), so the next wait on it needs
 * no SUBSCRIBE. Confirmations come back in the order the commands went
 * out (the `sent` queue), which is how an error reply finds its channel.
 *
 * When a connection fails, when the server drops a sharded subscription by
 * itself (its slot moved), or when Sentinel names a new master, its
 * channels' waiters are woken (an unlock may have been missed) and the
 * channels that still have waiters are subscribed again where they now
 * live: at once, then after a back-off (25 ms doubling to 1 s) until a
 * subscription is confirmed again. A subscriber silent for 30 s is sent a
 * PING, and one that does not answer within the command timeout is
 * dropped and redone (lconn.c's no-answer timeout).
 *
 * With Sentinel, one connection also listens for +switch-master on a
 * sentinel (the "swatch"), so a failover is followed at once.
 *
 * A channel also has watchers (rlock/watch.h, lwatch.c), which keep it
 * subscribed but are not waiters: a message wakes the waiters it wakes
 * first (their attempts flushed to the server), then is told to every
 * watcher; a lost subscription is told to them at each retry, and its
 * confirmation again.
 */
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "common.h"
#include "loop.h"
#include "sentinel.h"
#include "subproto.h"

#define RESUB_FIRST_MS RLOCK__RESUB_MIN_MS
#define RESUB_MAX_MS RLOCK__RESUB_MAX_MS
#define PING_IDLE_US RLOCK__SUB_PING_IDLE_US
#define SWATCH_BACKOFF_MIN_MS 100
#define SWATCH_BACKOFF_MAX_MS 5000

static void chan_free(rlock_client *c, rlock__lchan *ch) {
  rlock__ltimer_stop(c, &ch->linger);
  free(ch->name);
  free(ch);
}

/* No waiter and no watcher: nothing keeps the channel. */
static int unused(const rlock__lchan *ch) {
  return ch->waiters.n == 0 && ch->watchers.n == 0;
}

static void chan_drop(rlock_client *c, rlock__lchan *ch) {
  rlock__lconn *k = ch->k;
  for (size_t i = 0; k != NULL && i < k->nsent; i++) /* confirmations due */
    if (k->sent[i] == ch)
      k->sent[i] = NULL;
  rlock__map_del(&c->loop->chans, ch->name, ch->len);
  chan_free(c, ch);
}

/* The subscriber connection that serves `ch` now: the node of its slot
 * (sharded) or the primary (classic). NULL while the topology does not
 * know (a refresh is then under way): also while a cluster in auto mode
 * has not been probed for sharded pub/sub, which a refresh does just
 * after applying its slot map (another thread may route by that map
 * meanwhile), so a channel is never subscribed classic by mistake. */
static rlock__lconn *conn_for(rlock_client *c, const rlock__lchan *ch) {
  int s = atomic_load(&c->topo.sharded);
  if (s < 0)
    return NULL;
  int sharded = s > 0;
  rlock__node *node = rlock__sub_node(&c->topo, sharded, ch->name);
  rlock__lnode *ln = node != NULL ? rlock__lnode_of(c, node) : NULL;
  if (ln == NULL)
    return NULL;
  if (ln->sub.state == RLOCK__LCONN_CLOSED)
    ln->sub.sharded = sharded;
  return &ln->sub;
}

void rlock__lsub_health_arm(rlock_client *c);

static int queue_word(rlock_client *c, rlock__lchan *ch, rlock__lconn *k,
                      const char *word) {
  int rc = rlock__lconn_open(c, k);
  if (rc != RLOCK_OK)
    return rc;
  if ((rc = rlock__lgrow(&k->sent, &k->capsent, k->nsent, sizeof *k->sent,
                         16)) != RLOCK_OK)
    return rc;
  const char *argv[2] = {word, ch->name};
  size_t lens[2] = {strlen(word), ch->len};
  if ((rc = rlock__lconn_command(k, 2, argv, lens)) != RLOCK_OK)
    return rc;
  k->sent[k->nsent++] = ch;
  rlock__lconn_expect(c, k, 1);
  return RLOCK_OK;
}

/* Subscribe where the channel lives; when the topology does not know yet,
 * the retry timer subscribes once a refresh has told. */
static int subscribe(rlock_client *c, rlock__lchan *ch) {
  rlock__lconn *k = conn_for(c, ch);
  if (k == NULL) {
    ch->state = RLOCK__LCHAN_NONE;
    ch->k = NULL;
    rlock__ltopo_refresh(c, 1);
    if (c->loop->sub_retry.idx == RLOCK__LTIMER_OFF)
      rlock__ltimer_at(c, &c->loop->sub_retry,
                       rlock__deadline_after_ms(RESUB_FIRST_MS));
    return RLOCK_OK;
  }
  int rc = queue_word(c, ch, k, rlock__sub_word(k->sharded, 0));
  if (rc == RLOCK_OK) {
    rlock__lsub_health_arm(c);
    ch->state = RLOCK__LCHAN_PENDING;
    ch->k = k;
  }
  return rc;
}

static void unsubscribe(rlock_client *c, rlock__lchan *ch) {
  rlock__lconn *k = ch->k;
  if (k != NULL && k->state != RLOCK__LCONN_CLOSED &&
      queue_word(c, ch, k, rlock__sub_word(k->sharded, 1)) == RLOCK_OK)
    ch->state = RLOCK__LCHAN_UNSUB_PENDING;
  else
    ch->state = RLOCK__LCHAN_NONE; /* the connection is gone: so is it */
  if (ch->state == RLOCK__LCHAN_NONE)
    chan_drop(c, ch);
}

/* No waiter left: linger (when `linger` and configured), or go. */
static void idle(rlock_client *c, rlock__lchan *ch, int linger) {
  rlock__loop *lp = c->loop;
  ch->permits = 0;
  if (ch->state == RLOCK__LCHAN_PENDING)
    return; /* decided when the confirmation comes */
  if (ch->state != RLOCK__LCHAN_ACTIVE) {
    if (ch->state == RLOCK__LCHAN_NONE)
      chan_drop(c, ch);
    return;
  }
  if (linger && c->cfg.linger_ms > 0 && lp->idle_chans < c->cfg.max_idle_subs &&
      rlock__ltimer_at(c, &ch->linger,
                       rlock__deadline_after_ms(c->cfg.linger_ms)) ==
          RLOCK_OK) {
    lp->idle_chans++;
    return;
  }
  unsubscribe(c, ch);
}

static void linger_over(rlock_client *c, rlock__ltimer *t) {
  rlock__lchan *ch = (rlock__lchan *)t; /* the timer is its first member */
  c->loop->idle_chans--;
  unsubscribe(c, ch);
}

int rlock__lsub_active(const rlock__lwaiter *w) {
  return w->chan != NULL && w->chan->state == RLOCK__LCHAN_ACTIVE;
}

static rlock__lchan *chan_get(rlock_client *c, const char *channel);

/* Join `channel`, subscribed or being subscribed: `at` goes at the end
 * of its waiters (or, `watcher`, of its watchers) and *chan names it.
 * RLOCK_OK, or the failure (nothing kept). */
static int join_list(rlock_client *c, const char *channel, int watcher,
                     rlock__llink *at, rlock__lchan **chan) {
  rlock__lchan *ch = chan_get(c, channel);
  if (ch == NULL)
    return RLOCK_ENOMEM;
  if (ch->state == RLOCK__LCHAN_NONE ||
      ch->state == RLOCK__LCHAN_UNSUB_PENDING) {
    int rc = subscribe(c, ch);
    if (rc != RLOCK_OK) {
      if (unused(ch) && ch->state == RLOCK__LCHAN_NONE)
        chan_drop(c, ch);
      return rc;
    }
  }
  *chan = ch;
  rlock__llist_add(watcher ? &ch->watchers : &ch->waiters, at);
  return RLOCK_OK;
}

int rlock__lsub_join(rlock_client *c, rlock__lwaiter *w, const char *channel) {
  int rc = join_list(c, channel, 0, &w->at, &w->chan);
  return rc != RLOCK_OK ? rc : w->chan->state == RLOCK__LCHAN_ACTIVE;
}

static void part(rlock_client *c, rlock__lwaiter *w, int linger) {
  rlock__lchan *ch = w->chan;
  if (ch == NULL)
    return;
  rlock__llist_del(&ch->waiters, &w->at);
  w->chan = NULL;
  if (unused(ch) && !ch->walking)
    idle(c, ch, linger);
}

void rlock__lsub_leave(rlock_client *c, rlock__lwaiter *w) { part(c, w, 1); }

void rlock__lsub_leave_now(rlock_client *c, rlock__lwaiter *w) {
  part(c, w, 0);
}

int rlock__lsub_fd(const rlock__lwaiter *w) {
  const rlock__lconn *k = w->chan != NULL ? w->chan->k : NULL;
  if (k == NULL || k->state != RLOCK__LCONN_READY || k->tls != NULL)
    return -1;
  return k->fd;
}

int rlock__lsub_take_permit(rlock__lwaiter *w) {
  if (w->chan == NULL || w->chan->permits == 0)
    return 0;
  w->chan->permits--;
  return 1;
}

/* The channel `channel`, made when there is none. Its subscription is
 * the caller's to ask for (subscribe() when NONE or UNSUB_PENDING). */
static rlock__lchan *chan_get(rlock_client *c, const char *channel) {
  rlock__loop *lp = c->loop;
  size_t len = strlen(channel);
  rlock__lchan *ch = rlock__map_get(&lp->chans, channel, len);
  if (ch == NULL) {
    ch = rlock__calloc(1, sizeof *ch);
    if (ch == NULL || (ch->name = rlock__strdup(channel)) == NULL ||
        rlock__map_put(&lp->chans, channel, len, ch) != 0) {
      if (ch != NULL)
        free(ch->name);
      free(ch);
      rlock__err(RLOCK_ENOMEM, "out of memory");
      return NULL;
    }
    ch->len = len;
    rlock__ltimer_init(&ch->linger, linger_over);
  }
  if (ch->linger.idx != RLOCK__LTIMER_OFF) { /* lingering: in use again */
    rlock__ltimer_stop(c, &ch->linger);
    lp->idle_chans--;
  }
  return ch;
}

int rlock__lsub_watch(rlock_client *c, rlock__lwatcher *w,
                      const char *channel) {
  int rc = join_list(c, channel, 1, &w->at, &w->chan);
  if (rc == RLOCK_OK && w->chan->state == RLOCK__LCHAN_ACTIVE)
    w->event(w, RLOCK__WATCH_UP, NULL, 0);
  return rc;
}

void rlock__lsub_unwatch(rlock_client *c, rlock__lwatcher *w) {
  rlock__lchan *ch = w->chan;
  if (ch == NULL)
    return;
  rlock__llist_del(&ch->watchers, &w->at);
  w->chan = NULL;
  if (unused(ch) && !ch->walking)
    idle(c, ch, 1);
}

/* Tell every waiter of `ch` (those that join meanwhile too), safe against
 * waiters leaving on the way. */
static void walk(rlock_client *c, rlock__lchan *ch, rlock__chan_event what) {
  ch->walking = 1;
  for (rlock__llink *e = ch->waiters.first; e != NULL && !c->loop->doomed;
       e = ch->waiters.cursor) {
    ch->waiters.cursor = e->next;
    rlock__lwaiter *w = (rlock__lwaiter *)e;
    w->event(w, what);
  }
  ch->waiters.cursor = NULL;
  ch->walking = 0;
  if (unused(ch) && !c->loop->doomed)
    idle(c, ch, 1);
}

/* Tell every watcher of `ch`, safe against watchers leaving on the way;
 * the channel is kept meanwhile (walking). */
static void tell(rlock_client *c, rlock__lchan *ch, rlock__watch_event what,
                 const char *payload, size_t len) {
  int walking = ch->walking;
  ch->walking = 1;
  for (rlock__llink *e = ch->watchers.first; e != NULL && !c->loop->doomed;
       e = ch->watchers.cursor) {
    ch->watchers.cursor = e->next;
    rlock__lwatcher *w = (rlock__lwatcher *)e;
    w->event(w, what, payload, len);
  }
  ch->watchers.cursor = NULL;
  ch->walking = walking;
  if (!walking && unused(ch) && !c->loop->doomed)
    idle(c, ch, 1);
}

/* As many as the message wakes (rlock__message_wakes: a lock's "0" one,
 * "1" all): the longest sleepers, then a permit each for those between
 * an attempt and a sleep. A waiter reads the count in ch->wakes (a
 * blocking client's front stands for several threads). */
static void wake_waiters(rlock_client *c, rlock__lchan *ch, const char *payload,
                         size_t chlen) {
  int64_t n = rlock__message_wakes(ch->name, chlen, payload);
  ch->wakes = n;
  if (n >= (int64_t)ch->waiters.n) {
    walk(c, ch, RLOCK__CHAN_WOKEN);
    return;
  }
  ch->walking = 1; /* as walk(): the cursor survives waiters leaving */
  for (rlock__llink *e = ch->waiters.first;
       e != NULL && n > 0 && !c->loop->doomed; e = ch->waiters.cursor) {
    ch->waiters.cursor = e->next;
    rlock__lwaiter *w = (rlock__lwaiter *)e;
    if (w->asleep(w)) {
      w->event(w, RLOCK__CHAN_WOKEN);
      n--;
    }
  }
  ch->waiters.cursor = NULL;
  ch->walking = 0;
  for (; n > 0 && ch->permits < ch->waiters.n; n--)
    ch->permits++;
  if (unused(ch) && !c->loop->doomed)
    idle(c, ch, 1);
}

/* A message: its waiters first, then its watchers, whose callbacks may
 * take their time: what the waiters woke sent first, so a watcher never
 * delays a waiter's attempt (a blocking client's waiters are threads,
 * woken already). */
static void deliver(rlock_client *c, rlock__lchan *ch, const rlock__push *p) {
  rlock__obs_count(&c->obs, RLOCK__STAT_WAKEUPS);
  if (ch->watchers.n == 0) {
    wake_waiters(c, ch, p->payload, p->chlen);
    return;
  }
  /* Its watchers keep it, whatever the waiters do (none leaves meanwhile:
   * a waiter's event runs no user code). */
  int woke = ch->waiters.n > 0;
  if (woke)
    wake_waiters(c, ch, p->payload, p->chlen);
  if (woke && !c->loop->doomed)
    rlock__lconn_each(c, rlock__lconn_flush);
  if (!c->loop->doomed)
    tell(c, ch, RLOCK__WATCH_MESSAGE, p->payload, p->paylen);
}

static rlock__lchan *pop_sent(rlock__lconn *k) {
  if (k->nsent == 0)
    return NULL;
  rlock__lchan *ch = k->sent[0];
  memmove(k->sent, k->sent + 1, --k->nsent * sizeof *k->sent);
  rlock__lconn_answered(k);
  return ch;
}

static void confirmed(rlock_client *c, rlock__lchan *ch, int subscribed) {
  if (subscribed && ch->state == RLOCK__LCHAN_PENDING) {
    ch->state = RLOCK__LCHAN_ACTIVE;
    c->loop->sub_backoff_ms = 0; /* the subscriber works */
    if (ch->k != NULL && ch->k->sub_lost) {
      ch->k->sub_lost = 0;
      rlock__obs_log(&c->obs, RLOCK_LOG_INFO, "subscriber reconnected to %s",
                     ch->k->where);
    }
    if (unused(ch)) {
      idle(c, ch, 1);
      return;
    }
    int watched = ch->watchers.n > 0; /* then it outlives the walk */
    walk(c, ch, RLOCK__CHAN_CONFIRMED);
    if (watched && !c->loop->doomed)
      tell(c, ch, RLOCK__WATCH_UP, NULL, 0);
  } else if (!subscribed && ch->state == RLOCK__LCHAN_UNSUB_PENDING) {
    ch->state = RLOCK__LCHAN_NONE;
    if (unused(ch))
      chan_drop(c, ch);
  }
}

/* Subscribe again after the back-off (at once since the last confirmed
 * subscription), unless the retry timer is armed already. */
static void retry_soon(rlock_client *c) {
  rlock__loop *lp = c->loop;
  if (lp->sub_retry.idx == RLOCK__LTIMER_OFF)
    rlock__ltimer_at(c, &lp->sub_retry,
                     rlock__deadline_after_ms(lp->sub_backoff_ms));
}

/* The server dropped a sharded subscription by itself: its slot moved.
 * Subscribed again where it lives now, its waiters woken meanwhile. */
static void dropped(rlock_client *c, rlock__lchan *ch) {
  if (ch->linger.idx != RLOCK__LTIMER_OFF) {
    rlock__ltimer_stop(c, &ch->linger);
    c->loop->idle_chans--;
  }
  ch->state = RLOCK__LCHAN_NONE;
  ch->k = NULL;
  rlock__ltopo_refresh(c, 1);
  retry_soon(c);
}

/* An error reply to (UN)SUBSCRIBE: MOVED (a sharded channel's slot is
 * served elsewhere) redoes it where it lives after a refresh; anything
 * else (an ACL refusing the channel) fails its waiters. */
static void refused(rlock_client *c, rlock__lconn *k, rlock__reply *r) {
  rlock__lchan *ch = pop_sent(k);
  if (ch != NULL && rlock__sub_error_moved(r)) {
    dropped(c, ch);
    return;
  }
  rlock__error_status(k->where, r); /* sets the last error */
  if (ch == NULL)
    return;
  ch->state = RLOCK__LCHAN_NONE;
  int watched = ch->watchers.n > 0; /* then it outlives the walk */
  walk(c, ch, RLOCK__CHAN_FAILED);
  /* Its watchers leave it as they are told (the last error is set). */
  if (watched && !c->loop->doomed)
    tell(c, ch, RLOCK__WATCH_FAILED, NULL, 0);
}

static void on_push(rlock_client *c, rlock__lconn *k, const rlock__push *p) {
  rlock__lchan *ch = rlock__map_get(&c->loop->chans, p->channel, p->chlen);
  if (p->kind == RLOCK__PUSH_MESSAGE) {
    if (ch != NULL && ch->k == k)
      deliver(c, ch, p);
  } else if (p->kind == RLOCK__PUSH_UNSUBSCRIBED && ch != NULL && ch->k == k &&
             ch->state == RLOCK__LCHAN_ACTIVE) {
    dropped(c, ch); /* not asked for */
  } else if (p->kind != RLOCK__PUSH_OTHER) {
    rlock__lchan *head = pop_sent(k);
    if (head != NULL && head == ch)
      confirmed(c, ch, p->kind == RLOCK__PUSH_SUBSCRIBED);
  }
}

static void on_reply(rlock_client *c, rlock__lconn *k, rlock__reply *r) {
  rlock__push p;
  if (r->type == RLOCK__R_ERROR) {
    refused(c, k, r);
  } else {
    rlock__push_read(r, &p);
    if (p.pong)
      rlock__lconn_answered(k); /* the health check's */
    else
      on_push(c, k, &p);
  }
  rlock__reply_free(r);
}

typedef struct chan_list {
  rlock__lchan **items;
  size_t n;
  rlock__lconn *k; /* collect: only channels on k (NULL: all) */
} chan_list;

static void collect(const char *key, size_t kl, void *v, void *arg) {
  (void)key, (void)kl;
  chan_list *l = arg;
  rlock__lchan *ch = v;
  if (l->k == NULL || ch->k == l->k)
    l->items[l->n++] = ch;
}

/* The channels on `k` (NULL: all), in a list that stays valid while
 * channels come and go. NULL items when out of memory. */
static chan_list list_chans(rlock_client *c, rlock__lconn *k) {
  rlock__loop *lp = c->loop;
  chan_list l = {rlock__calloc(lp->chans.count + 1, sizeof *l.items), 0, k};
  if (l.items != NULL)
    rlock__map_each(&lp->chans, collect, &l);
  return l;
}

static void on_down(rlock_client *c, rlock__lconn *k, int rc) {
  (void)rc;
  chan_list l = list_chans(c, k);
  if (k->dropped && l.n > 0 && !k->sub_lost) {
    k->sub_lost = 1;
    rlock__obs_log(&c->obs, RLOCK_LOG_WARN,
                   "subscriber connection to %s dropped: %s; subscribing "
                   "again",
                   k->where, rlock_error_last()->message);
  }
  for (size_t i = 0; i < l.n; i++) {
    rlock__lchan *ch = l.items[i];
    if (ch->linger.idx != RLOCK__LTIMER_OFF) {
      rlock__ltimer_stop(c, &ch->linger);
      c->loop->idle_chans--;
    }
    ch->state = RLOCK__LCHAN_NONE;
    ch->k = NULL;
  }
  free(l.items);
  k->nsent = 0;
  /* A node gone may be a failover: its channels may live elsewhere now
   * (the blocking subscriber's drop() refreshes too). */
  rlock__ltopo_refresh(c, 0);
  /* Not walked here: this may run inside a walk (a waiter's leaving
   * unsubscribes, which can fail). The retry timer does it. */
  retry_soon(c);
}

void rlock__lsub_conn_init(rlock__lconn *k) {
  k->on_reply = on_reply;
  k->on_down = on_down;
}

void rlock__lsub_retry(rlock_client *c, rlock__ltimer *t) {
  (void)t;
  rlock__loop *lp = c->loop;
  chan_list l = list_chans(c, NULL);
  if (l.items == NULL) {
    rlock__ltimer_at(c, &lp->sub_retry, rlock__now_us() + 1000 * RESUB_MAX_MS);
    return;
  }
  int failed = 0, tried = 0;
  for (size_t i = 0; i < l.n && !lp->doomed; i++) {
    rlock__lchan *ch = l.items[i];
    if (ch->state != RLOCK__LCHAN_NONE)
      continue;       /* on a connection that is up */
    if (unused(ch)) { /* lingering: the server dropped it */
      chan_drop(c, ch);
      continue;
    }
    tried = 1;
    if (subscribe(c, ch) != RLOCK_OK || ch->state == RLOCK__LCHAN_NONE)
      failed = 1;
    /* An unlock may have been missed: every waiter attempts again, and
     * every watcher hears that its messages may have been. */
    int watched = ch->watchers.n > 0; /* then it outlives the walk */
    walk(c, ch, RLOCK__CHAN_WOKEN_ALL);
    if (watched && !lp->doomed)
      tell(c, ch, RLOCK__WATCH_DOWN, NULL, 0);
  }
  free(l.items);
  /* The back-off grows with every try and is reset only by a confirmed
   * subscription (confirmed()), so that a node that refuses or closes
   * every connection (killed, a failover under way) is not tried again
   * on every turn of the loop. */
  if (tried)
    lp->sub_backoff_ms = lp->sub_backoff_ms == 0
                             ? RESUB_FIRST_MS
                             : rlock__doubled(lp->sub_backoff_ms, RESUB_MAX_MS);
  if (failed) /* also over an arming at once by a connection that failed */
    rlock__ltimer_at(c, &lp->sub_retry,
                     rlock__deadline_after_ms(lp->sub_backoff_ms));
}

void rlock__lsub_master_changed(rlock_client *c) {
  rlock__loop *lp = c->loop;
  rlock__node *primary = rlock__topo_lookup(&c->topo, NULL);
  for (size_t i = 0; i < lp->nnodes && !lp->doomed; i++) {
    rlock__lconn *k = &lp->nodes[i]->sub;
    if (lp->nodes[i]->node != primary && k->state != RLOCK__LCONN_CLOSED) {
      rlock__err(RLOCK_EIO, "sentinel: %s is no longer the master", k->where);
      rlock__lconn_fail(c, k, RLOCK_EIO);
    }
  }
}

static void free_one(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl;
  chan_free(arg, v);
}

void rlock__lsub_destroy(rlock_client *c) {
  rlock__map_each(&c->loop->chans, free_one, c);
}

/* ---- health checks ------------------------------------------------------- */

static void ping_if_silent(rlock_client *c, rlock__lconn *k, int64_t now) {
  if (k->on_reply == NULL || k->state != RLOCK__LCONN_READY || k->due > 0 ||
      now - k->rx_us < PING_IDLE_US)
    return;
  static const char *const argv[1] = {"PING"};
  if (rlock__lconn_command(k, 1, (const char **)argv, NULL) == RLOCK_OK)
    rlock__lconn_expect(c, k, 1); /* unanswered: the connection fails */
}

static void health_due(rlock_client *c, rlock__ltimer *t) {
  rlock__loop *lp = c->loop;
  int64_t now = rlock__now_us();
  int up = 0;
  for (size_t i = 0; i < lp->nnodes && !lp->doomed; i++) {
    ping_if_silent(c, &lp->nodes[i]->sub, now);
    up |= lp->nodes[i]->sub.state != RLOCK__LCONN_CLOSED;
  }
  if (!lp->doomed)
    ping_if_silent(c, &lp->swatch, now);
  up |= lp->swatch.state != RLOCK__LCONN_CLOSED;
  if (up && !lp->doomed)
    rlock__ltimer_at(c, t, now + PING_IDLE_US / 3);
}

void rlock__lsub_health_arm(rlock_client *c) {
  rlock__loop *lp = c->loop;
  if (lp->health.fn == NULL)
    rlock__ltimer_init(&lp->health, health_due);
  if (lp->health.idx == RLOCK__LTIMER_OFF)
    rlock__ltimer_at(c, &lp->health, rlock__now_us() + PING_IDLE_US / 3);
}

/* ---- Sentinel's +switch-master --------------------------------------------
 */

static void swatch_reply(rlock_client *c, rlock__lconn *k, rlock__reply *r) {
  rlock__loop *lp = c->loop;
  if (r->type == RLOCK__R_ARRAY && r->n >= 1 &&
      (rlock__reply_is(r->elem[0], "subscribe") ||
       rlock__reply_is(r->elem[0], "pong"))) {
    rlock__lconn_answered(k);
    lp->swatch_backoff_ms = 0; /* a confirmed subscription */
  } else if (rlock__sentinel_names_master(&c->topo, r)) {
    rlock__ltopo_refresh(c, 1);
  } else if (r->type == RLOCK__R_ERROR) {
    rlock__reply_free(r);
    rlock__err(RLOCK_EIO, "sentinel %s refused +switch-master", k->where);
    rlock__lconn_fail(c, k, RLOCK_EIO);
    return;
  }
  rlock__reply_free(r);
}

static void swatch_down(rlock_client *c, rlock__lconn *k, int rc) {
  (void)k, (void)rc;
  rlock__loop *lp = c->loop;
  lp->swatch_next++; /* the next sentinel, after a pause */
  if (lp->swatch_backoff_ms < SWATCH_BACKOFF_MIN_MS)
    lp->swatch_backoff_ms = SWATCH_BACKOFF_MIN_MS;
  rlock__ltimer_at(c, &lp->swatch_retry,
                   rlock__deadline_after_ms(lp->swatch_backoff_ms));
  lp->swatch_backoff_ms =
      rlock__doubled(lp->swatch_backoff_ms, SWATCH_BACKOFF_MAX_MS);
}

void rlock__lswatch_start(rlock_client *c) {
  rlock__loop *lp = c->loop;
  const rlock__target *t = &c->topo.target;
  if (t->kind != RLOCK__TOPO_SENTINEL || t->n == 0 || lp->closing ||
      lp->swatch.state != RLOCK__LCONN_CLOSED)
    return;
  rlock__lconn *k = &lp->swatch;
  rlock__lconn_destroy(k);
  rlock__lconn_init(k, &t->addrs[lp->swatch_next % t->n], NULL);
  k->on_reply = swatch_reply;
  k->on_down = swatch_down;
  static const char *const argv[2] = {"SUBSCRIBE", "+switch-master"};
  if (rlock__lconn_open(c, k) != RLOCK_OK)
    return; /* swatch_down arms the retry */
  if (rlock__lconn_command(k, 2, (const char **)argv, NULL) != RLOCK_OK) {
    rlock__lconn_fail(c, k, RLOCK_ENOMEM);
    return;
  }
  rlock__lconn_expect(c, k, 1);
  rlock__lsub_health_arm(c);
}

void rlock__lswatch_retry(rlock_client *c, rlock__ltimer *t) {
  (void)t;
  rlock__lswatch_start(c);
}
