/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lsub.c - a loop client's subscriber: one connection, channels shared by
 * the acquisitions waiting on them.
 *
 * Redisson's messages: "0" (an unlock) wakes one waiter, the one that has
 * waited longest and is asleep, or is kept as a permit for the next one
 * to fall asleep; "1" (a read unlock) wakes every waiter. A channel whose
 * last waiter left stays subscribed for the configured linger (at most
 * the configured number of such channels), so the next wait on it needs
 * no SUBSCRIBE. Confirmations come back in the order the commands went
 * out (the `sent` queue), which is how an error reply finds its channel.
 *
 * When the connection fails, every waiter is woken (an unlock may have
 * been missed) and the channels that still have waiters are subscribed
 * again after a back-off (25 ms doubling to 1 s).
 */
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "common.h"
#include "loop.h"

#define RESUB_FIRST_MS 25
#define RESUB_MAX_MS 1000

static void chan_free(rlock_client *c, rlock__lchan *ch) {
  rlock__ltimer_stop(c, &ch->linger);
  free(ch->name);
  free(ch);
}

static void chan_drop(rlock_client *c, rlock__lchan *ch) {
  rlock__loop *lp = c->loop;
  for (size_t i = 0; i < lp->nsent; i++) /* confirmations still due */
    if (lp->sent[i] == ch)
      lp->sent[i] = NULL;
  rlock__map_del(&lp->chans, ch->name, ch->len);
  chan_free(c, ch);
}

static int queue_word(rlock_client *c, rlock__lchan *ch, const char *word) {
  rlock__loop *lp = c->loop;
  int rc = rlock__lconn_open(c, &lp->sub);
  if (rc != RLOCK_OK)
    return rc;
  if (lp->nsent == lp->capsent) {
    size_t cap = lp->capsent ? lp->capsent * 2 : 16;
    rlock__lchan **sent = rlock__realloc(lp->sent, cap * sizeof *sent);
    if (sent == NULL)
      return rlock__err(RLOCK_ENOMEM, "out of memory");
    lp->sent = sent;
    lp->capsent = cap;
  }
  const char *argv[2] = {word, ch->name};
  size_t lens[2] = {strlen(word), ch->len};
  if ((rc = rlock__lconn_command(&lp->sub, 2, argv, lens)) != RLOCK_OK)
    return rc;
  lp->sent[lp->nsent++] = ch;
  rlock__lconn_expect(c, &lp->sub, 1);
  return RLOCK_OK;
}

static int subscribe(rlock_client *c, rlock__lchan *ch) {
  int rc = queue_word(c, ch, "SUBSCRIBE");
  if (rc == RLOCK_OK)
    ch->state = RLOCK__LCHAN_PENDING;
  return rc;
}

static void unsubscribe(rlock_client *c, rlock__lchan *ch) {
  if (queue_word(c, ch, "UNSUBSCRIBE") == RLOCK_OK)
    ch->state = RLOCK__LCHAN_UNSUB_PENDING;
  else
    ch->state = RLOCK__LCHAN_NONE; /* the connection is gone: so is it */
  if (ch->state == RLOCK__LCHAN_NONE)
    chan_drop(c, ch);
}

/* No waiter left: linger, or go. */
static void idle(rlock_client *c, rlock__lchan *ch) {
  rlock__loop *lp = c->loop;
  ch->permits = 0;
  if (ch->state == RLOCK__LCHAN_PENDING)
    return; /* decided when the confirmation comes */
  if (ch->state != RLOCK__LCHAN_ACTIVE) {
    if (ch->state == RLOCK__LCHAN_NONE)
      chan_drop(c, ch);
    return;
  }
  if (c->cfg.linger_ms > 0 && lp->idle_chans < c->cfg.max_idle_subs &&
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

int rlock__lsub_active(const rlock_op *op) {
  return op->chan != NULL && op->chan->state == RLOCK__LCHAN_ACTIVE;
}

int rlock__lsub_join(rlock_client *c, rlock_op *op, const char *channel) {
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
      return rlock__err(RLOCK_ENOMEM, "out of memory");
    }
    ch->len = len;
    rlock__ltimer_init(&ch->linger, linger_over);
  }
  if (ch->linger.idx != RLOCK__LTIMER_OFF) { /* lingering: in use again */
    rlock__ltimer_stop(c, &ch->linger);
    lp->idle_chans--;
  }
  if (ch->state == RLOCK__LCHAN_NONE ||
      ch->state == RLOCK__LCHAN_UNSUB_PENDING) {
    int rc = subscribe(c, ch);
    if (rc != RLOCK_OK) {
      if (ch->nwaiters == 0 && ch->state == RLOCK__LCHAN_NONE)
        chan_drop(c, ch);
      return rc;
    }
  }
  op->chan = ch;
  op->cnext = NULL;
  op->cprev = ch->last;
  if (ch->last != NULL)
    ch->last->cnext = op;
  else
    ch->first = op;
  ch->last = op;
  ch->nwaiters++;
  return ch->state == RLOCK__LCHAN_ACTIVE;
}

void rlock__lsub_leave(rlock_client *c, rlock_op *op) {
  rlock__lchan *ch = op->chan;
  if (ch == NULL)
    return;
  if (ch->cursor == op)
    ch->cursor = op->cnext;
  if (op->cprev != NULL)
    op->cprev->cnext = op->cnext;
  else
    ch->first = op->cnext;
  if (op->cnext != NULL)
    op->cnext->cprev = op->cprev;
  else
    ch->last = op->cprev;
  op->chan = NULL;
  op->cprev = op->cnext = NULL;
  if (--ch->nwaiters == 0 && !ch->walking)
    idle(c, ch);
}

int rlock__lsub_take_permit(rlock_op *op) {
  if (op->chan == NULL || op->chan->permits == 0)
    return 0;
  op->chan->permits--;
  return 1;
}

/* Tell every waiter of `ch` (those that join meanwhile too), safe against
 * waiters leaving on the way. */
static void walk(rlock_client *c, rlock__lchan *ch, int what) {
  ch->walking = 1;
  for (rlock_op *op = ch->first; op != NULL && !c->loop->doomed;
       op = ch->cursor) {
    ch->cursor = op->cnext;
    rlock__lacquire_event(op, what);
  }
  ch->cursor = NULL;
  ch->walking = 0;
  if (ch->nwaiters == 0 && !c->loop->doomed)
    idle(c, ch);
}

/* "0": the longest sleeper, else a permit. "1": everyone. */
static void deliver(rlock_client *c, rlock__lchan *ch, const rlock__reply *m) {
  rlock__obs_count(&c->obs, RLOCK__STAT_WAKEUPS);
  if (m->type == RLOCK__R_STR && m->len == 1 && m->str[0] == '1') {
    walk(c, ch, 2);
    return;
  }
  for (rlock_op *op = ch->first; op != NULL; op = op->cnext)
    if (op->state == RLOCK__LACQ_SLEEPING) {
      rlock__lacquire_event(op, 2);
      return;
    }
  if (ch->permits < ch->nwaiters)
    ch->permits++;
}

static rlock__lchan *pop_sent(rlock__loop *lp) {
  if (lp->nsent == 0)
    return NULL;
  rlock__lchan *ch = lp->sent[0];
  memmove(lp->sent, lp->sent + 1, --lp->nsent * sizeof *lp->sent);
  if (lp->sub.due > 0)
    lp->sub.due--;
  lp->sub.due_since_us = rlock__now_us();
  return ch;
}

static void confirmed(rlock_client *c, rlock__lchan *ch, int subscribed) {
  if (subscribed && ch->state == RLOCK__LCHAN_PENDING) {
    ch->state = RLOCK__LCHAN_ACTIVE;
    if (ch->nwaiters == 0)
      idle(c, ch);
    else
      walk(c, ch, 1);
  } else if (!subscribed && ch->state == RLOCK__LCHAN_UNSUB_PENDING) {
    ch->state = RLOCK__LCHAN_NONE;
    if (ch->nwaiters == 0)
      chan_drop(c, ch);
  }
}

/* An error reply to (UN)SUBSCRIBE: an ACL refusing the channel. */
static void refused(rlock_client *c, rlock__reply *r) {
  rlock__lchan *ch = pop_sent(c->loop);
  rlock__error_status(c->loop->sub.where, r); /* sets the last error */
  if (ch == NULL)
    return;
  ch->state = RLOCK__LCHAN_NONE;
  walk(c, ch, 0);
}

void rlock__lsub_reply(rlock_client *c, rlock__reply *r) {
  rlock__loop *lp = c->loop;
  if (r->type == RLOCK__R_ERROR) {
    refused(c, r);
    rlock__reply_free(r);
    return;
  }
  if (r->type != RLOCK__R_ARRAY || r->n != 3 ||
      r->elem[0]->type != RLOCK__R_STR || r->elem[1]->type != RLOCK__R_STR) {
    rlock__reply_free(r); /* PONG and the like: nothing to do */
    return;
  }
  const char *kind = r->elem[0]->str;
  rlock__lchan *ch =
      rlock__map_get(&lp->chans, r->elem[1]->str, r->elem[1]->len);
  if (strcmp(kind, "message") == 0) {
    if (ch != NULL)
      deliver(c, ch, r->elem[2]);
  } else if (strcmp(kind, "subscribe") == 0 ||
             strcmp(kind, "unsubscribe") == 0) {
    rlock__lchan *head = pop_sent(lp);
    if (head != NULL && head == ch)
      confirmed(c, ch, kind[0] == 's');
  }
  rlock__reply_free(r);
}

static void forget(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl, (void)arg;
  ((rlock__lchan *)v)->state = RLOCK__LCHAN_NONE;
}

void rlock__lsub_down(rlock_client *c, int rc) {
  (void)rc;
  rlock__loop *lp = c->loop;
  rlock__map_each(&lp->chans, forget, NULL);
  lp->nsent = 0;
  lp->idle_chans = 0;
  if (lp->sub_backoff_ms == 0)
    lp->sub_backoff_ms = RESUB_FIRST_MS;
  /* Not walked here: this may run inside a walk (a waiter's leaving
   * unsubscribes, which can fail). The retry timer does it. */
  rlock__ltimer_at(c, &lp->sub_retry, rlock__now_us());
}

typedef struct chan_list {
  rlock__lchan **items;
  size_t n;
} chan_list;

static void collect(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl;
  chan_list *l = arg;
  l->items[l->n++] = v;
}

void rlock__lsub_retry(rlock_client *c, rlock__ltimer *t) {
  (void)t;
  rlock__loop *lp = c->loop;
  chan_list l = {rlock__calloc(lp->chans.count + 1, sizeof *l.items), 0};
  if (l.items == NULL) {
    rlock__ltimer_at(c, &lp->sub_retry, rlock__now_us() + 1000 * RESUB_MAX_MS);
    return;
  }
  rlock__map_each(&lp->chans, collect, &l);
  int failed = 0;
  for (size_t i = 0; i < l.n && !lp->doomed; i++) {
    rlock__lchan *ch = l.items[i];
    rlock__ltimer_stop(c, &ch->linger);
    if (ch->nwaiters == 0) { /* lingering: the server dropped it */
      chan_drop(c, ch);
      continue;
    }
    if (ch->state != RLOCK__LCHAN_PENDING && subscribe(c, ch) != RLOCK_OK) {
      ch->state = RLOCK__LCHAN_NONE;
      failed = 1;
    }
    walk(c, ch, 2); /* an unlock may have been missed: attempt again */
  }
  free(l.items);
  if (failed) {
    rlock__ltimer_at(c, &lp->sub_retry,
                     rlock__deadline_after_ms(lp->sub_backoff_ms));
    lp->sub_backoff_ms = lp->sub_backoff_ms * 2 < RESUB_MAX_MS
                             ? lp->sub_backoff_ms * 2
                             : RESUB_MAX_MS;
  } else {
    lp->sub_backoff_ms = 0;
  }
}

static void free_one(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl;
  chan_free(arg, v);
}

void rlock__lsub_destroy(rlock_client *c) {
  rlock__map_each(&c->loop->chans, free_one, c);
}
