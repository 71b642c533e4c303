/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * renew.c - the watchdog's renewal tick, as steps the loop engine runs
 * (loop/lrenew.c: every node's batches at once, one in flight per node,
 * each batch settled on its own), for a loop client on its loop's thread
 * and for a blocking client on its background thread.
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
#include "cmd.h"
#include "slot.h"
#include "common.h"
#include "rlock/lock.h"
#include "sync_int.h"
#include "watchdog.h"

typedef struct snap {
  char *name;
  char *owner;
  char *base;    /* read holds only */
  unsigned slot; /* the name's cluster slot */
  uint64_t gen;
} snap;

typedef struct snap_list {
  snap *items;
  size_t n;
  size_t cap;
} snap_list;

/* The lists of a tick, by the script that renews them (the batches'
 * `list`, watchdog.h): renew.lua, renew_read.lua, and psem_renew.lua for
 * permits (their base: the mark, then the timeout key). */
enum { STD, READ, PERMIT, LISTS };

/* Holds to renew, split by the script that renews them. */
typedef struct snaps {
  snap_list lists[LISTS];
  size_t missed; /* holds due that could not be copied (no memory) */
  size_t lost;   /* holds marked lost by time (to be told) */
  int64_t now_us;
  rlock__watchdog *wd;
} snaps;

static int snap_take(snap *s, const rlock__hold *h) {
  s->name = rlock__strdup(h->name);
  s->owner = rlock__strdup(h->owner);
  s->base = h->base ? rlock__strdup(h->base) : NULL;
  s->gen = h->gen;
  s->slot = s->name ? rlock__slot(s->name, strlen(s->name)) : 0;
  if (s->name != NULL && s->owner != NULL && (h->base == NULL || s->base))
    return 0;
  free(s->name);
  free(s->owner);
  free(s->base);
  return -1; /* out of memory: renewed next tick */
}

static void collect(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl;
  rlock__hold *h = v;
  snaps *all = arg;
  snap_list *l = &all->lists[h->base == NULL                         ? STD
                             : h->base[0] == RLOCK__PERMIT_BASE_MARK ? PERMIT
                                                                     : READ];
  if (h->wd_levels == 0 || h->lost)
    return;
  if (all->now_us >= h->vouched_us) {
    /* A whole lease without a confirmed renewal: the server may have let
     * it go, and another client may hold it now. Never renewed again; the
     * holder is told by tell_lost, which needs no memory. */
    h->lost = 1;
    h->untold = 1;
    rlock__obs_lost(h->ms);
    all->lost++;
    h->gen = ++all->wd->next_gen;
    return;
  }
  if (l->n < l->cap && snap_take(&l->items[l->n], h) == 0) {
    l->n++;
    h->inflight = 1;
  } else {
    all->missed++; /* out of memory: the tick is tried again soon */
  }
}

/* Tell the operators and the holder's callback that a hold is lost.
 * Never with a lock held: both call out of the library. */
static void report_lost(rlock_client *c, const char *name, const char *owner,
                        const char *why) {
  rlock__obs_count(&c->obs, RLOCK__STAT_LOST);
  /* A permit's owner is its id: 32 hex digits, never "<uuid>:<n>". */
  int permit =
      strlen(owner) == RLOCK_PERMIT_ID_LEN && strchr(owner, ':') == NULL;
  rlock__obs_log(&c->obs, RLOCK_LOG_ERROR, "%s '%s' lost%s%s: %s",
                 permit ? "semaphore" : "lock", name,
                 permit ? ": permit " : " by ", owner, why);
  if (c->cfg.lost_fn != NULL)
    c->cfg.lost_fn(name, owner, c->cfg.lost_userdata);
}

/* Holds marked lost by time and not told yet, copied out a few at a
 * time (on the stack: telling must not need memory). */
#define UNTOLD_BATCH 8

typedef struct untold {
  size_t n;
  struct {
    char name[RLOCK_MAX_NAME_LEN + 1];
    char owner[RLOCK_OWNER_MAX + 16];
  } h[UNTOLD_BATCH];
} untold;

static void take_untold(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl;
  rlock__hold *h = v;
  untold *u = arg;
  if (u->n == UNTOLD_BATCH || !h->untold)
    return;
  h->untold = 0;
  snprintf(u->h[u->n].name, sizeof u->h[u->n].name, "%s", h->name);
  snprintf(u->h[u->n].owner, sizeof u->h[u->n].owner, "%s", h->owner);
  u->n++;
}

/* Tell the `marked` holds the snapshot found lost by time, copied under
 * the mutex: a holder is told even when no memory is left for the tick,
 * and a record released meanwhile is not told (its release returned
 * RLOCK_ELOST). */
static void tell_lost(rlock_client *c, size_t marked) {
  untold u;
  for (u.n = UNTOLD_BATCH; marked > 0 && u.n == UNTOLD_BATCH;) {
    u.n = 0;
    pthread_mutex_lock(&c->wd->mu);
    rlock__map_each(&c->wd->holds, take_untold, &u);
    pthread_mutex_unlock(&c->wd->mu);
    for (size_t i = 0; i < u.n; i++)
      report_lost(c, u.h[i].name, u.h[i].owner,
                  "no renewal was confirmed for a whole lease");
  }
}

static void snap_free(snap_list *l) {
  for (size_t i = 0; i < l->n; i++) {
    free(l->items[i].name);
    free(l->items[i].owner);
    free(l->items[i].base);
  }
  free(l->items);
}

/* Build the call renewing n permits (Redisson's updateLeaseTime, batched):
 * KEYS their semaphores' timeout keys (the base past its mark: the name's
 * slot); ARGV now and the new deadline, by this client's wall clock as
 * Redisson stamps them, then the permit ids. */
static void build_permits(rlock_client *c, const snap *items, size_t n,
                          rlock__call *call) {
  rlock__call_script(call, &rlock__script_psem_renew);
  for (size_t i = 0; i < n; i++)
    rlock__call_key(call, items[i].base + 1);
  int64_t now = rlock__epoch_ms();
  rlock__call_num(call, now);
  rlock__call_num(call, now + c->cfg.watchdog_timeout_ms);
  for (size_t i = 0; i < n; i++)
    rlock__call_arg(call, items[i].owner);
}

/* Build the call renewing n holds: KEYS the names; ARGV the lease, the
 * owners, and for read holds then their timeout-key bases. */
static void build_batch(rlock_client *c, const snap *items, size_t n, int read,
                        rlock__call *call) {
  rlock__call_script(call,
                     read ? &rlock__script_renew_read : &rlock__script_renew);
  for (size_t i = 0; i < n; i++)
    rlock__call_key(call, items[i].name);
  rlock__call_num(call, c->cfg.watchdog_timeout_ms);
  for (size_t i = 0; i < n; i++)
    rlock__call_arg(call, items[i].owner);
  for (size_t i = 0; read && i < n; i++)
    rlock__call_arg(call, items[i].base);
  /* No WAIT: renewal must not stall on a lagging replica (a loop
   * client's next batch for the node waits for this one's answer, and a
   * blocking client's tick holds up its next tick); a renewal the replica
   * misses is made again next tick. */
}

/* Read a batch's answer into alive[] (1 renewed, 0 gone). */
static int parse_batch(const rlock__reply *r, size_t n, int *alive) {
  if (r->type != RLOCK__R_ARRAY || r->n != n)
    return rlock__err(RLOCK_EPROTO, "renewal returned an unexpected reply");
  for (size_t i = 0; i < n; i++)
    alive[i] = r->elem[i]->type != RLOCK__R_INT || r->elem[i]->integer != 0;
  return RLOCK_OK;
}

/* Apply one renewal answer (alive: 1 renewed, 0 gone, -1 no answer) to
 * the record, if it is still the one that was renewed: a record whose
 * generation changed meanwhile (a release popped a level, or it was
 * re-acquired) takes nothing from it, neither "confirmed" nor "gone".
 * Clears the in-flight mark either way. Called locked. Returns 1 when the
 * record was marked lost (the holder must be told). */
static int apply_one(rlock__watchdog *wd, const snap *s, int alive,
                     int64_t sent_us) {
  char key[RLOCK_MAX_NAME_LEN + RLOCK_OWNER_MAX + 16];
  size_t nlen = strlen(s->name), olen = strlen(s->owner);
  if (nlen + olen + 2 > sizeof key)
    return 0; /* cannot be: names and owners are bounded */
  memcpy(key, s->name, nlen + 1);
  memcpy(key + nlen + 1, s->owner, olen);
  rlock__hold *h = rlock__map_get(&wd->holds, key, nlen + 1 + olen);
  if (h == NULL)
    return 0;
  h->inflight = 0;
  if (h->gen != s->gen || h->lost || h->wd_levels == 0 || alive < 0)
    return 0;
  /* Too late: the lease ran out before the answer came, and the holder
   * may have been told RLOCK_ELOST already; "lost" must not flip back. */
  if (alive && rlock__now_us() < h->vouched_us) {
    int64_t end = sent_us + wd->timeout_us;
    if (end > h->vouched_us)
      h->vouched_us = end;
    return 0;
  }
  h->lost = 1;
  rlock__obs_lost(h->ms);
  h->gen = ++wd->next_gen;
  return 1;
}

/* Apply answers to items[0..n) (alive NULL: no answers, just clear their
 * in-flight marks), wake releases waiting for them, and tell the callback
 * of the holds found gone. */
static void apply_batch(rlock_client *c, const snap *items, size_t n,
                        const int *alive, int64_t sent_us) {
  int gone[RLOCK__RENEW_BATCH] = {0};
  pthread_mutex_lock(&c->wd->mu);
  for (size_t i = 0; i < n; i++)
    gone[i % RLOCK__RENEW_BATCH] =
        apply_one(c->wd, &items[i], alive ? alive[i] : -1, sent_us);
  pthread_cond_broadcast(&c->wd->settled);
  pthread_mutex_unlock(&c->wd->mu);
  uint64_t renewed = 0;
  for (size_t i = 0; alive != NULL && i < n; i++) {
    renewed += alive[i] && !gone[i];
    if (gone[i])
      report_lost(c, items[i].name, items[i].owner,
                  "a renewal found it expired, deleted or "
                  "held by another owner");
  }
  rlock__obs_add(&c->obs, RLOCK__STAT_RENEWALS, renewed);
}

static int by_slot(const void *a, const void *b) {
  unsigned x = ((const snap *)a)->slot, y = ((const snap *)b)->slot;
  return (x > y) - (x < y);
}

/* How many holds from `from` go in one call: at most RLOCK__RENEW_BATCH,
 * and in a cluster only holds of one slot (a script naming keys of two
 * slots is refused with CROSSSLOT). */
static size_t batch_size(const rlock_client *c, const snap_list *l,
                         size_t from) {
  int cluster = c->topo.target.kind == RLOCK__TOPO_CLUSTER;
  size_t n = 1;
  while (from + n < l->n && n < RLOCK__RENEW_BATCH &&
         (!cluster || l->items[from + n].slot == l->items[from].slot))
    n++;
  return n;
}

/* After a failed call: its `n` holds from `from` are given up for this
 * tick (their in-flight marks cleared) and the next tick is brought
 * forward, rather than paying another timeout now. */
static void batch_failed(rlock_client *c, const snap_list *l, size_t from,
                         size_t n) {
  rlock__obs_count(&c->obs, RLOCK__STAT_RENEWAL_FAILURES);
  rlock__obs_log(&c->obs, RLOCK_LOG_WARN,
                 "watchdog: renewing %zu "
                 "hold%s failed: %s; trying again in %lld ms",
                 n, n == 1 ? "" : "s", rlock_error_last()->message,
                 (long long)(c->wd->retry_us / 1000));
  apply_batch(c, l->items + from, n, NULL, 0);
  pthread_mutex_lock(&c->wd->mu);
  int64_t retry = rlock__now_us() + c->wd->retry_us;
  if (retry < c->wd->next_tick_us)
    c->wd->next_tick_us = retry;
  pthread_mutex_unlock(&c->wd->mu);
}

/* Allocate every list for up to `n` holds. Returns 0, or -1 with no
 * room in any (every hold due is then counted missed). */
static int snaps_alloc(snaps *all, size_t n) {
  for (int i = 0; i < LISTS && n > 0; i++)
    if ((all->lists[i].items =
             rlock__malloc(n * sizeof *all->lists[i].items)) == NULL)
      return -1;
  for (int i = 0; i < LISTS; i++)
    all->lists[i].cap = n;
  return 0;
}

struct rlock__renew_tick {
  snaps all;
  rlock__renew_batch cur; /* the next batch to take: its list (LISTS once
                             done) and its first item in that list */
};

static snap_list *list_of(rlock__renew_tick *t, int list) {
  return &t->all.lists[list];
}

/* Take the tick's snapshot, locked: the holds due copied into `all` (as
 * many as memory allows), those past their vouched-for lease marked lost.
 * Schedules the next tick: a period on, or at the retry interval when a
 * hold due could not be copied (it is renewed then, never dropped: its
 * lease is still running); idle when nothing is left to renew. */
static void snapshot(rlock__watchdog *wd, snaps *all) {
  rlock__watchdog_reap(wd);
  all->now_us = rlock__now_us();
  all->wd = wd;
  rlock__map_each(&wd->holds, collect, all);
  wd->next_tick_us =
      rlock__now_us() + (all->missed > 0 ? wd->retry_us : wd->period_us);
  size_t due = all->missed;
  for (int i = 0; i < LISTS; i++)
    due += all->lists[i].n;
  if (due == 0)
    wd->armed = 0; /* nothing to renew: idle until the next watchdog hold */
}

int rlock__renew_begin(rlock_client *c, rlock__renew_tick **out,
                       int64_t *next_us) {
  rlock__watchdog *wd = c->wd;
  *out = NULL;
  pthread_mutex_lock(&wd->mu);
  if (!wd->armed || rlock__now_us() < wd->next_tick_us) {
    *next_us = wd->armed ? wd->next_tick_us : INT64_MAX;
    pthread_mutex_unlock(&wd->mu);
    return RLOCK_OK;
  }
  rlock__renew_tick *t = rlock__calloc(1, sizeof *t);
  snaps none = {0}; /* without a tick: only the holds lost are marked */
  snaps *all = t != NULL ? &t->all : &none;
  int ok = t != NULL && snaps_alloc(all, wd->holds.count) == 0;
  snapshot(wd, all);
  *next_us = wd->armed ? wd->next_tick_us : INT64_MAX;
  pthread_mutex_unlock(&wd->mu);
  tell_lost(c, all->lost);
  if (all->missed > 0)
    rlock__obs_log(&c->obs, RLOCK_LOG_WARN,
                   "watchdog: out of memory taking %zu hold%s to renew; "
                   "trying again in %lld ms",
                   all->missed, all->missed == 1 ? "" : "s",
                   (long long)(wd->retry_us / 1000));
  if (!ok) {
    if (t != NULL)
      rlock__renew_end(c, t);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  for (int i = 0; i < LISTS; i++)
    if (c->topo.target.kind == RLOCK__TOPO_CLUSTER && all->lists[i].n > 1)
      qsort(all->lists[i].items, all->lists[i].n, sizeof *all->lists[i].items,
            by_slot);
  *out = t;
  return RLOCK_OK;
}

int rlock__renew_take(rlock_client *c, rlock__renew_tick *t,
                      rlock__renew_batch *b) {
  rlock__renew_batch *at = &t->cur;
  while (at->list < LISTS && at->from >= list_of(t, at->list)->n) {
    at->list++;
    at->from = 0;
  }
  if (at->list >= LISTS)
    return 0;
  *b = *at;
  b->n = batch_size(c, list_of(t, at->list), at->from);
  at->from += b->n;
  return 1;
}

const char *rlock__renew_key(rlock__renew_tick *t,
                             const rlock__renew_batch *b) {
  return list_of(t, b->list)->items[b->from].name;
}

void rlock__renew_build(rlock_client *c, rlock__renew_tick *t,
                        const rlock__renew_batch *b, rlock__call *call) {
  const snap *items = list_of(t, b->list)->items + b->from;
  if (b->list == PERMIT)
    build_permits(c, items, b->n, call);
  else
    build_batch(c, items, b->n, b->list == READ, call);
}

void rlock__renew_settle(rlock_client *c, rlock__renew_tick *t,
                         const rlock__renew_batch *b, int rc,
                         const rlock__reply *r, int64_t sent_us) {
  int alive[RLOCK__RENEW_BATCH];
  snap_list *l = list_of(t, b->list);
  if (rc == RLOCK_OK)
    rc = parse_batch(r, b->n, alive);
  /* A permit's new deadline was stamped when its batch was built, which
   * may be before it was sent: vouch from the tick's start instead, which
   * is earlier than any stamp, so the local view errs early. */
  if (b->list == PERMIT && t->all.now_us < sent_us)
    sent_us = t->all.now_us;
  if (rc != RLOCK_OK)
    batch_failed(c, l, b->from, b->n);
  else
    apply_batch(c, l->items + b->from, b->n, alive, sent_us);
}

void rlock__renew_skip(rlock_client *c, rlock__renew_tick *t,
                       const rlock__renew_batch *b) {
  apply_batch(c, list_of(t, b->list)->items + b->from, b->n, NULL, 0);
}

void rlock__renew_end(rlock_client *c, rlock__renew_tick *t) {
  (void)c;
  for (int i = 0; i < LISTS; i++)
    snap_free(&t->all.lists[i]);
  free(t);
}
