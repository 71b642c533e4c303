/*
 * renew.c - the watchdog's renewal tick, run on the background thread.
 *
 * Each tick snapshots the records that need renewing, renews them in
 * batches of RLOCK__RENEW_BATCH with one script call each, then applies
 * the answers to records that did not change meanwhile. Errors never drop
 * a record (Redisson #2515): the tick is simply retried sooner.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "common.h"

typedef struct snap {
  char *name;
  char *owner;
  uint64_t gen;
} snap;

typedef struct snap_list {
  snap *items;
  size_t n;
  size_t cap;
} snap_list;

static void collect(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl;
  rlock__hold *h = v;
  snap_list *l = arg;
  if (h->wd_levels == 0 || h->lost || l->n == l->cap)
    return;
  snap *s = &l->items[l->n];
  s->name = rlock__strdup(h->name);
  s->owner = rlock__strdup(h->owner);
  s->gen = h->gen;
  if (s->name == NULL || s->owner == NULL) {
    free(s->name);
    free(s->owner);
    return; /* out of memory: renewed next tick */
  }
  l->n++;
}

static void snap_free(snap_list *l) {
  for (size_t i = 0; i < l->n; i++) {
    free(l->items[i].name);
    free(l->items[i].owner);
  }
  free(l->items);
}

/* Renew items [from, from + n): one script call. On success writes 1/0 per
 * item into alive[]. */
static int renew_batch(rlock_client *c, const snap *items, size_t n,
                       int *alive) {
  const char **kv = malloc((2 * n + 1) * sizeof *kv);
  if (kv == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  char lease[24];
  snprintf(lease, sizeof lease, "%" PRId64, c->cfg.watchdog_timeout_ms);
  for (size_t i = 0; i < n; i++) {
    kv[i] = items[i].name;
    kv[n + 1 + i] = items[i].owner;
  }
  kv[n] = lease;
  redisReply *r;
  int rc = rlock__cmd_script(c, &rlock__script_renew, (int)n, (int)n + 1, kv,
                             NULL, &r);
  free(kv);
  if (rc != RLOCK_OK)
    return rc;
  if (r->type != REDIS_REPLY_ARRAY || r->elements != n)
    rc = rlock__err(RLOCK_EPROTO, "renewal returned an unexpected reply");
  for (size_t i = 0; rc == RLOCK_OK && i < n; i++)
    alive[i] = r->element[i]->type != REDIS_REPLY_INTEGER ||
               r->element[i]->integer != 0;
  freeReplyObject(r);
  return rc;
}

/* Mark a record lost if it is still the one we renewed. Returns 1 when it
 * was marked (the holder must be told). */
static int apply_gone(rlock__watchdog *wd, const snap *s) {
  size_t nlen = strlen(s->name), olen = strlen(s->owner);
  char *key = malloc(nlen + olen + 2);
  if (key == NULL)
    return 0;
  memcpy(key, s->name, nlen + 1);
  memcpy(key + nlen + 1, s->owner, olen);
  pthread_mutex_lock(&wd->mu);
  rlock__hold *h = rlock__map_get(&wd->holds, key, nlen + 1 + olen);
  int marked = h != NULL && h->gen == s->gen && !h->lost && h->wd_levels > 0;
  if (marked)
    h->lost = 1;
  pthread_mutex_unlock(&wd->mu);
  free(key);
  return marked;
}

static void renew_all(rlock_client *c, snap_list *l) {
  int alive[RLOCK__RENEW_BATCH];
  for (size_t from = 0; from < l->n; from += RLOCK__RENEW_BATCH) {
    size_t n = l->n - from < RLOCK__RENEW_BATCH ? l->n - from
                                                 : RLOCK__RENEW_BATCH;
    if (renew_batch(c, l->items + from, n, alive) != RLOCK_OK) {
      pthread_mutex_lock(&c->wd.mu);
      int64_t retry = rlock__now_us() + c->wd.retry_us;
      if (retry < c->wd.next_tick_us)
        c->wd.next_tick_us = retry;
      pthread_mutex_unlock(&c->wd.mu);
      continue;
    }
    for (size_t i = 0; i < n; i++)
      if (!alive[i] && apply_gone(&c->wd, &l->items[from + i]) &&
          c->cfg.lost_fn != NULL)
        c->cfg.lost_fn(l->items[from + i].name, l->items[from + i].owner,
                       c->cfg.lost_userdata);
  }
}

int64_t rlock__watchdog_service(rlock_client *c) {
  rlock__watchdog *wd = &c->wd;
  snap_list l = {0};
  pthread_mutex_lock(&wd->mu);
  if (!wd->armed || rlock__now_us() < wd->next_tick_us) {
    int64_t next = wd->armed ? wd->next_tick_us : INT64_MAX;
    pthread_mutex_unlock(&wd->mu);
    return next;
  }
  l.cap = wd->holds.count;
  l.items = l.cap ? malloc(l.cap * sizeof *l.items) : NULL;
  if (l.items != NULL)
    rlock__map_each(&wd->holds, collect, &l);
  wd->next_tick_us = rlock__now_us() + wd->period_us;
  if (l.n == 0 && (l.items != NULL || l.cap == 0))
    wd->armed = 0; /* nothing to renew: idle until the next watchdog hold */
  pthread_mutex_unlock(&wd->mu);

  renew_all(c, &l);
  snap_free(&l);

  pthread_mutex_lock(&wd->mu);
  int64_t next = wd->armed ? wd->next_tick_us : INT64_MAX;
  pthread_mutex_unlock(&wd->mu);
  return next;
}
