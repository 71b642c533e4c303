/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * watchdog.c - local hold records and batched lease renewal.
 */
#include "watchdog.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "common.h"
#include "rlock/lock.h"

int rlock__watchdog_init(rlock__watchdog *wd, int64_t timeout_ms) {
  memset(wd, 0, sizeof *wd);
  wd->period_us = timeout_ms * 1000 / 3;
  /* After a failed renewal try again sooner, but not in a tight loop. */
  wd->retry_us = wd->period_us / 4 > 1000000 ? 1000000 : wd->period_us / 4;
  wd->timeout_us = timeout_ms * 1000;
  if (pthread_mutex_init(&wd->mu, NULL) != 0)
    return rlock__err(RLOCK_ENOMEM, "cannot create a mutex");
  if (pthread_cond_init(&wd->settled, NULL) != 0) {
    pthread_mutex_destroy(&wd->mu);
    return rlock__err(RLOCK_ENOMEM, "cannot create a condition variable");
  }
  return RLOCK_OK;
}

static void levels_inline(rlock__hold *h) {
  if (h->leases != h->leases_in) {
    free(h->leases);
    free(h->ends);
  }
  h->leases = h->leases_in;
  h->ends = h->ends_in;
  h->cap = RLOCK__HOLD_LEVELS;
}

static void hold_free(rlock__hold *h) {
  rlock__life_unref(h->life);
  levels_inline(h);
  free(h);
}

static void hold_release(rlock__watchdog *wd, rlock__hold *h);

/* A record leaves the map: out of the holds gauge, its hold time observed
 * when `held_us` >= 0 (a release, not a loss). Locked. */
static void hold_drop(rlock__watchdog *wd, rlock__hold *h, int64_t held_us) {
  rlock__obs_hold_end(h->ms, held_us);
  hold_release(wd, h);
}

/* A record is done with: kept as a spare when there is room. Locked. */
static void hold_release(rlock__watchdog *wd, rlock__hold *h) {
  if (wd->nspare >= RLOCK__HOLD_SPARES) {
    hold_free(h);
    return;
  }
  rlock__life_unref(h->life);
  h->life = NULL;
  levels_inline(h);
  h->next_spare = wd->spare;
  wd->spare = h;
  wd->nspare++;
}

static void free_entry(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl, (void)arg;
  hold_free(v);
}

void rlock__watchdog_destroy(rlock__watchdog *wd) {
  rlock__map_each(&wd->holds, free_entry, NULL);
  rlock__map_clear(&wd->holds);
  while (wd->spare != NULL) {
    rlock__hold *h = wd->spare;
    wd->spare = h->next_spare;
    hold_free(h);
  }
  pthread_cond_destroy(&wd->settled);
  pthread_mutex_destroy(&wd->mu);
}

/* Map key: name NUL owner. Returns its length; buf must hold both. */
static size_t make_key(char *buf, const char *name, size_t nlen,
                       const char *owner) {
  size_t olen = strlen(owner);
  memcpy(buf, name, nlen);
  buf[nlen] = '\0';
  memcpy(buf + nlen + 1, owner, olen);
  return nlen + 1 + olen;
}

/* Names are validated to RLOCK_MAX_NAME_LEN, so keys fit on the stack. */
#define KEYBUF_SIZE (RLOCK_MAX_NAME_LEN + RLOCK_OWNER_MAX + 16)

/* A record with room for `need` text bytes: a spare one when one fits. */
static rlock__hold *hold_take(rlock__watchdog *wd, size_t need) {
  for (rlock__hold **link = &wd->spare; *link != NULL;
       link = &(*link)->next_spare) {
    rlock__hold *h = *link;
    if (h->textcap >= need) {
      *link = h->next_spare;
      wd->nspare--;
      return h;
    }
  }
  /* Rounded up, so that a spare fits the next names of about that size. */
  size_t cap = (need + 63) & ~(size_t)63;
  rlock__hold *h = rlock__malloc(sizeof *h + cap);
  if (h != NULL)
    h->textcap = cap;
  return h;
}

static char *text_put(char **at, const char *s) {
  size_t n = strlen(s) + 1;
  char *p = memcpy(*at, s, n);
  *at += n;
  return p;
}

/* A fresh record for (name, owner, base): one allocation, or none when a
 * spare fits. Locked. */
static rlock__hold *hold_new(rlock__watchdog *wd, const char *name,
                             const char *owner, const char *base) {
  size_t need = strlen(name) + 1 + strlen(owner) + 1 +
                (base != NULL ? strlen(base) + 1 : 0);
  rlock__hold *h = hold_take(wd, need);
  if (h == NULL)
    return NULL;
  size_t textcap = h->textcap;
  memset(h, 0, offsetof(rlock__hold, text));
  h->textcap = textcap;
  char *at = h->text;
  h->name = text_put(&at, name);
  h->owner = text_put(&at, owner);
  h->base = base != NULL ? text_put(&at, base) : NULL;
  h->leases = h->leases_in;
  h->ends = h->ends_in;
  h->cap = RLOCK__HOLD_LEVELS;
  return h;
}

/* Double the room for levels, moving them to the heap. 0 or -1. */
static int grow_levels(rlock__hold *h) {
  size_t cap = 2 * h->cap;
  int64_t *l = rlock__malloc(cap * sizeof *l);
  int64_t *e = rlock__malloc(cap * sizeof *e);
  if (l == NULL || e == NULL) {
    free(l);
    free(e);
    return -1;
  }
  memcpy(l, h->leases, h->depth * sizeof *l);
  memcpy(e, h->ends, h->depth * sizeof *e);
  levels_inline(h); /* frees the old heap arrays, if any */
  h->leases = l;
  h->ends = e;
  h->cap = cap;
  return 0;
}

static int push_level(rlock__hold *h, int64_t lease_ms, int64_t end_us) {
  if (h->depth == h->cap && grow_levels(h) != 0)
    return -1;
  h->ends[h->depth] = end_us;
  h->leases[h->depth++] = lease_ms;
  if (lease_ms == 0)
    h->wd_levels++;
  return 0;
}

/* Arm the renewal timer if it is idle; returns 1 when the background
 * thread must be told. Called locked. Keeping the timer armed between
 * holds means a lock/unlock loop does not wake the thread each time. */
static int arm(rlock__watchdog *wd) {
  if (wd->armed)
    return 0;
  wd->armed = 1;
  wd->next_tick_us = rlock__now_us() + wd->period_us;
  return 1;
}

int rlock__hold_push(rlock_client *c, const char *name, const char *owner,
                     int64_t lease_ms, int64_t sent_us, const char *base,
                     rlock__mset *ms) {
  return rlock__hold_push_owned(c, name, owner, lease_ms, sent_us, base,
                                RLOCK_OWNER_THREAD, ms);
}

/* A new record's liveness: the calling thread's when it owns the hold
 * (also when its number was passed explicitly: it is the same field). */
static void hold_adopt(rlock__hold *h, uint64_t owner_number) {
  if (owner_number == RLOCK_OWNER_THREAD ||
      owner_number == rlock__thread_owner())
    h->life = rlock__thread_life_ref();
}

static int orphaned(const char *k, size_t kl, void *v, void *arg);

/* A thread exited since the last look: drop the records of exited threads
 * now (their locks expire on their own), so a client that holds only
 * fixed leases, whose renewal tick never runs, frees them too. One walk
 * per exit, not per call. Called locked. */
static void reap_if_exited(rlock__watchdog *wd) {
  unsigned exits = rlock__thread_exits();
  if (exits == wd->exits_seen)
    return;
  wd->exits_seen = exits;
  rlock__map_drop_if(&wd->holds, orphaned, wd);
}

int rlock__hold_push_owned(rlock_client *c, const char *name, const char *owner,
                           int64_t lease_ms, int64_t sent_us, const char *base,
                           uint64_t owner_number, rlock__mset *ms) {
  rlock__watchdog *wd = c->wd;
  char key[KEYBUF_SIZE];
  size_t klen = make_key(key, name, strlen(name), owner);
  int wake = 0, rc = RLOCK_OK;
  pthread_mutex_lock(&wd->mu);
  reap_if_exited(wd);
  rlock__hold *h = rlock__map_get(&wd->holds, key, klen);
  if (h == NULL && (h = hold_new(wd, name, owner, base)) != NULL) {
    hold_adopt(h, owner_number);
    if (rlock__map_put(&wd->holds, key, klen, h) != 0) {
      hold_release(wd, h);
      h = NULL;
    } else {
      h->ms = ms;
      h->since_us = sent_us;
      rlock__obs_hold_begin(ms);
    }
  }
  if (h != NULL && h->lost) { /* a new hold: the lost levels are gone */
    h->since_us = sent_us;
    h->depth = 0;
    h->wd_levels = 0;
    h->lost = 0;
    h->untold = 0; /* not told of a hold it has taken again */
  }
  int64_t end = lease_ms > 0 ? sent_us + lease_ms * 1000 : INT64_MAX;
  if (h == NULL || push_level(h, lease_ms, end) != 0) {
    rc = rlock__err(RLOCK_ENOMEM, "out of memory");
  } else {
    h->gen = ++wd->next_gen;
    /* Every acquisition resets the key's TTL to its own lease. */
    h->expires_us = end;
    h->vouched_us = sent_us + (lease_ms > 0 ? lease_ms * 1000 : wd->timeout_us);
    wake = h->wd_levels > 0 && arm(wd);
  }
  pthread_mutex_unlock(&wd->mu);
  if (rc == RLOCK_OK)
    rlock__obs_count(&c->obs, RLOCK__STAT_ACQUISITIONS);
  if (wake)
    c->drv->renew_arm(c);
  return rc;
}

/* Look up under the mutex with a temporary key. */
static rlock__hold *find(rlock__watchdog *wd, const char *name,
                         const char *owner, char *key, size_t *klen) {
  *klen = make_key(key, name, strlen(name), owner);
  return rlock__map_get(&wd->holds, key, *klen);
}

void rlock__hold_pop(rlock_client *c, const char *name, const char *owner,
                     int *state, int64_t *keep_lease_ms) {
  rlock__watchdog *wd = c->wd;
  char key[KEYBUF_SIZE];
  size_t klen;
  *state = RLOCK__HOLD_NONE;
  *keep_lease_ms = c->cfg.watchdog_timeout_ms;
  pthread_mutex_lock(&wd->mu);
  rlock__hold *h = find(wd, name, owner, key, &klen);
  /* Popping the last watchdog level while a renewal naming it is in
   * flight: let that renewal land first, so that the release script's
   * PEXPIRE (or DEL) is the last word on the key's TTL. A loop client
   * needs no wait (and could not: the renewal's answer comes on this
   * thread): its renewals and releases share each node's one connection,
   * so the server runs them in the order they were sent. */
  while (c->drv->release_waits_renewal && h != NULL && h->inflight &&
         h->depth > 0 && h->leases[h->depth - 1] == 0 && h->wd_levels == 1) {
    pthread_cond_wait(&wd->settled, &wd->mu);
    h = find(wd, name, owner, key, &klen);
  }
  if (h != NULL) {
    rlock__obs_count(&c->obs, RLOCK__STAT_RELEASES);
    *state = h->lost ? RLOCK__HOLD_LOST : RLOCK__HOLD_HELD;
    int64_t top = h->leases[--h->depth], now = rlock__now_us();
    if (top == 0)
      h->wd_levels--;
    if (h->depth > 0 && h->leases[h->depth - 1] > 0)
      *keep_lease_ms = h->leases[h->depth - 1];
    h->expires_us = now + *keep_lease_ms * 1000;
    h->gen = ++wd->next_gen;
    if (h->depth == 0 || h->lost) {
      *keep_lease_ms = RLOCK__KEEP_NONE; /* no level left here */
      rlock__map_del(&wd->holds, key, klen);
      hold_drop(wd, h, h->lost ? -1 : now - h->since_us);
    }
  }
  pthread_mutex_unlock(&wd->mu);
}

void rlock__hold_relet(rlock_client *c, const char *name, const char *owner,
                       int64_t lease_ms, int64_t sent_us) {
  char key[KEYBUF_SIZE];
  size_t klen;
  int64_t end = sent_us + lease_ms * 1000;
  pthread_mutex_lock(&c->wd->mu);
  rlock__hold *h = find(c->wd, name, owner, key, &klen);
  if (h != NULL && !h->lost) {
    for (size_t i = 0; i < h->depth; i++)
      if (h->leases[i] > 0)
        h->ends[i] = end;
    h->expires_us = end;
    h->gen = ++c->wd->next_gen;
  }
  pthread_mutex_unlock(&c->wd->mu);
}

void rlock__hold_forget(rlock_client *c, const char *name, const char *owner) {
  rlock__watchdog *wd = c->wd;
  char key[KEYBUF_SIZE];
  size_t klen;
  pthread_mutex_lock(&wd->mu);
  rlock__hold *h = find(wd, name, owner, key, &klen);
  if (h != NULL) {
    rlock__map_del(&wd->holds, key, klen);
    hold_drop(wd, h, -1);
  }
  pthread_mutex_unlock(&wd->mu);
}

typedef struct mark_ctx {
  rlock__watchdog *wd;
  const char *name;
} mark_ctx;

static void mark_if_named(const char *k, size_t kl, void *v, void *arg) {
  (void)kl;
  rlock__hold *h = v;
  mark_ctx *m = arg;
  if (strcmp(k, m->name) == 0) { /* the key starts with name NUL */
    if (!h->lost)
      rlock__obs_lost(h->ms);
    h->lost = 1;
    /* From the shared counter: a record's generations never repeat. */
    h->gen = ++m->wd->next_gen;
  }
}

void rlock__hold_mark_lost(rlock_client *c, const char *name) {
  mark_ctx m = {c->wd, name};
  pthread_mutex_lock(&c->wd->mu);
  rlock__map_each(&c->wd->holds, mark_if_named, &m);
  pthread_mutex_unlock(&c->wd->mu);
}

static int orphaned(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl;
  rlock__hold *h = v;
  if (!rlock__life_gone(h->life) || h->inflight)
    return 0;
  hold_drop(arg, h, -1);
  return 1;
}

void rlock__watchdog_reap(rlock__watchdog *wd) {
  rlock__map_drop_if(&wd->holds, orphaned, wd);
}

/* When a hold without watchdog levels runs out: a read hold lives while any
 * of its own keys does (each level has its own lease); other locks carry
 * the lease of their last acquisition or partial release. */
static int64_t hold_end(const rlock__hold *h) {
  if (h->base == NULL)
    return h->expires_us;
  int64_t end = 0;
  for (size_t i = 0; i < h->depth; i++)
    end = h->ends[i] > end ? h->ends[i] : end;
  return end;
}

size_t rlock__hold_depth(rlock_client *c, const char *name, const char *owner) {
  char key[KEYBUF_SIZE];
  size_t klen;
  pthread_mutex_lock(&c->wd->mu);
  rlock__hold *h = find(c->wd, name, owner, key, &klen);
  size_t depth = h != NULL && !h->lost ? h->depth : 0;
  pthread_mutex_unlock(&c->wd->mu);
  return depth;
}

size_t rlock__hold_fixed_levels(rlock_client *c, const char *name,
                                const char *owner) {
  char key[KEYBUF_SIZE];
  size_t klen, n = 0;
  pthread_mutex_lock(&c->wd->mu);
  rlock__hold *h = find(c->wd, name, owner, key, &klen);
  for (size_t i = 0; h != NULL && !h->lost && i < h->depth; i++)
    n += h->leases[i] > 0;
  pthread_mutex_unlock(&c->wd->mu);
  return n;
}

/* rlock__hold_check's answer for the record `h` (NULL: none), locked,
 * without a message. */
static int hold_state(rlock__hold *h) {
  return h == NULL                                              ? RLOCK_ENOTHELD
         : h->lost                                              ? RLOCK_ELOST
         : h->wd_levels == 0 && rlock__now_us() >= hold_end(h)  ? RLOCK_ELOST
         : h->wd_levels > 0 && rlock__now_us() >= h->vouched_us ? RLOCK_ELOST
                                                                : RLOCK_OK;
}

/* hold_state of (name, owner)'s record, looked up under the lock. */
static int hold_state_of(rlock_client *c, const char *name, const char *owner) {
  char key[KEYBUF_SIZE];
  size_t klen;
  pthread_mutex_lock(&c->wd->mu);
  int rc = hold_state(find(c->wd, name, owner, key, &klen));
  pthread_mutex_unlock(&c->wd->mu);
  return rc;
}

int rlock__hold_live(rlock_client *c, const char *name, const char *owner) {
  return hold_state_of(c, name, owner) == RLOCK_OK;
}

int rlock__hold_check(rlock_client *c, const char *name, const char *owner) {
  int rc = hold_state_of(c, name, owner);
  if (rc == RLOCK_ENOTHELD)
    return rlock__err(rc, "lock '%s' is not held by this owner (%s)", name,
                      owner);
  if (rc == RLOCK_ELOST)
    return rlock__err(rc,
                      "lock '%s' was lost: it expired or was deleted "
                      "while held",
                      name);
  return rc;
}
