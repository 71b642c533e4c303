/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * listsync.c - rlock_client_list_syncs: the semaphores, latches and
 * permit-expirable semaphores that can be told from any other counter
 * without reading every string under a pattern.
 *
 * A semaphore's or a latch's key is a plain string of digits, as any
 * application counter is; what marks one is what is around it:
 *  - a client waiting on it is subscribed to its kind's channel
 *    (redisson_sc:{NAME}, redisson_countdownlatch__channel__{NAME}): each
 *    server is asked once for the channels subscribed there that start
 *    "redisson_s" or "redisson_c" (PUBSUB CHANNELS, and on a cluster
 *    PUBSUB SHARDCHANNELS, sharded subscriptions being per shard), then
 *    how many clients each has (PUBSUB [SHARD]NUMSUB, 100 channels a call);
 *  - a permit-expirable semaphore with permits leased has its lease set,
 *    a sorted set {NAME}:timeout: found by SCAN ... TYPE zset in the small
 *    steps rlock_client_list_locks walks with (list.c).
 * The names are filtered by the pattern here (rlock__glob: channels and
 * lease sets do not start with the name), and their counts read per
 * cluster slot by list_syncs.lua, which also says which of the two names
 * a braced channel may stand for holds the count.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "cmd.h"
#include "list.h"
#include "lock_int.h"
#include "map.h"
#include "names.h"
#include "script.h"
#include "slot.h"

#define SEM_CHANNEL "redisson_sc:"
#define LATCH_CHANNEL "redisson_countdownlatch__channel__{"
#define LEASE_SUFFIX ":timeout"
#define NUMSUB_BATCH 100 /* channels per PUBSUB NUMSUB */
#define READ_BATCH 50    /* candidates per list_syncs.lua call */

/* One semaphore or latch found: by its channel, its lease set, or both. */
typedef struct found {
  char *name; /* the name the channel or the lease set gives */
  char *alt;  /* the other name it may stand for, or NULL */
  int latch;  /* a latch's channel (else a semaphore's, or a lease set) */
  int by_channel, by_lease;
  int64_t subscribers;
  unsigned slot;
} found;

typedef struct syncs {
  rlock_client *c;
  const char *pattern;
  int cluster, stopped;
  rlock_sync_list_fn fn;
  void *arg;
  found *v;
  size_t n, cap;
  rlock__map index; /* "s" or "l" + name -> position + 1 */
} syncs;

/* ---- what was found ------------------------------------------------------ */

/* Room for one more entry: 0, or -1 when out of memory. */
static int grow(syncs *S) {
  if (S->n < S->cap)
    return 0;
  size_t cap = S->cap * 2 + 16;
  found *v = rlock__realloc(S->v, cap * sizeof *v);
  if (v == NULL)
    return -1;
  S->v = v;
  S->cap = cap;
  return 0;
}

/* A new entry for name[0..len) and `alt` (may be NULL), indexed by `key`
 * (klen bytes): NULL when out of memory. */
static found *add(syncs *S, const char *name, size_t len, const char *alt,
                  int latch, const char *key, size_t klen) {
  if (grow(S) != 0)
    return NULL;
  found *f = &S->v[S->n];
  *f = (found){.latch = latch, .slot = rlock__slot(name, len)};
  f->name = rlock__strndup(name, len);
  f->alt = alt != NULL ? rlock__strdup(alt) : NULL;
  if (f->name == NULL || (alt != NULL && f->alt == NULL) ||
      rlock__map_put(&S->index, key, klen, (void *)(uintptr_t)(S->n + 1)) !=
          0) {
    free(f->name);
    free(f->alt);
    return NULL;
  }
  S->n++;
  return f;
}

/* The entry of name[0..len) (alt: its other reading, NUL-terminated, or
 * NULL) in family `latch`, added when new. NULL with *skip when the
 * pattern matches neither reading; NULL (last error set) when out of
 * memory. */
static found *entry(syncs *S, const char *name, size_t len, const char *alt,
                    int latch, int *skip) {
  *skip = 0;
  char *key = rlock__malloc(len + 2); /* family, name, NUL */
  if (key == NULL) {
    rlock__err(RLOCK_ENOMEM, "out of memory");
    return NULL;
  }
  key[0] = latch ? 'l' : 's';
  memcpy(key + 1, name, len);
  key[len + 1] = '\0';
  found *f = NULL;
  if (!rlock__glob(S->pattern, key + 1) &&
      (alt == NULL || !rlock__glob(S->pattern, alt)))
    *skip = 1;
  else {
    size_t at = (size_t)(uintptr_t)rlock__map_get(&S->index, key, len + 1);
    f = at != 0 ? &S->v[at - 1] : add(S, name, len, alt, latch, key, len + 1);
    if (f == NULL)
      rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  free(key);
  return f;
}

/* The name(s) a braced form "{inner}" may stand for: "inner" braced by
 * Redisson's suffixName/prefixed rule, or a name "{inner}" with a tag of
 * its own. Any other form is one name. *alt is set to `whole` when both
 * readings are possible, else NULL; *len is the first reading's length. */
static const char *readings(const char *whole, size_t wlen, size_t *len,
                            const char **alt) {
  *alt = NULL;
  *len = wlen;
  if (wlen >= 3 && whole[0] == '{' && whole[wlen - 1] == '}' &&
      memchr(whole + 1, '{', wlen - 2) == NULL &&
      memchr(whole + 1, '}', wlen - 2) == NULL) {
    *alt = whole;
    *len = wlen - 2;
    return whole + 1;
  }
  return whole;
}

/* A channel's entry, or NULL with *skip (not a semaphore's or a latch's,
 * or a name the pattern does not match). */
static found *by_channel(syncs *S, const char *ch, size_t len, int *skip) {
  size_t sl = strlen(SEM_CHANNEL), ll = strlen(LATCH_CHANNEL), n;
  const char *alt;
  *skip = 1;
  if (strlen(ch) != len)
    return NULL; /* a NUL: no rlock name */
  if (len > ll && strncmp(ch, LATCH_CHANNEL, ll) == 0 && ch[len - 1] == '}')
    return entry(S, ch + ll, len - ll - 1, NULL, 1, skip);
  if (len <= sl || strncmp(ch, SEM_CHANNEL, sl) != 0)
    return NULL;
  const char *name = readings(ch + sl, len - sl, &n, &alt);
  if (alt == NULL && memchr(name, '{', n) == NULL)
    return NULL; /* "redisson_sc:x": no name gives it */
  return entry(S, name, n, alt, 0, skip);
}

/* ---- channels ------------------------------------------------------------ */

/* Add the subscriber counts of chans[0..n) from PUBSUB [SHARD]NUMSUB on
 * `node` to their entries (at[i], NULL: none). */
static int numsub(rlock__node *node, int sharded, const rlock__reply **chans,
                  found **at, size_t n) {
  const char *argv[2 + NUMSUB_BATCH] = {"PUBSUB",
                                        sharded ? "SHARDNUMSUB" : "NUMSUB"};
  for (size_t i = 0; i < n; i++)
    argv[2 + i] = chans[i]->str; /* no NUL inside (by_channel) */
  rlock__reply *r;
  int rc = rlock__topo_node_call(node, (int)(2 + n), argv, &r);
  if (rc != RLOCK_OK)
    return rc;
  if (r->type == RLOCK__R_ERROR)
    rc = rlock__error_status(node->where, r);
  else if (r->type != RLOCK__R_ARRAY || r->n != 2 * n)
    rc = rlock__err(RLOCK_EPROTO,
                    "redis %s: PUBSUB %s returned an "
                    "unexpected reply",
                    node->where, argv[1]);
  for (size_t i = 0; rc == RLOCK_OK && i < n; i++)
    if (at[i] != NULL && r->elem[2 * i + 1]->type == RLOCK__R_INT)
      at[i]->subscribers += r->elem[2 * i + 1]->integer;
  rlock__reply_free(r);
  return rc;
}

/* The channels in one PUBSUB answer `r` from `node`: entries, then their
 * counts, NUMSUB_BATCH at a time. */
static int channels_of(syncs *S, rlock__node *node, int sharded,
                       const rlock__reply *r) {
  const rlock__reply *chans[NUMSUB_BATCH];
  found *at[NUMSUB_BATCH];
  size_t k = 0,
         n = r->n < RLOCK_LIST_CHANNELS_MAX ? r->n : RLOCK_LIST_CHANNELS_MAX;
  int rc = RLOCK_OK, skip;
  for (size_t i = 0; i < n && rc == RLOCK_OK; i++) {
    const rlock__reply *ch = r->elem[i];
    if (ch->type != RLOCK__R_STR)
      return rlock__err(RLOCK_EPROTO, "redis %s: PUBSUB returned a %s channel",
                        node->where, rlock__reply_type_name(ch));
    found *f = by_channel(S, ch->str, ch->len, &skip);
    if (f == NULL && !skip)
      return RLOCK_ENOMEM;
    if (f != NULL) {
      f->by_channel = 1;
      chans[k] = ch;
      at[k++] = f;
    }
    if (k == NUMSUB_BATCH || (i + 1 == n && k > 0)) {
      rc = numsub(node, sharded, chans, at, k);
      k = 0;
    }
  }
  return rc;
}

/* One server's channels of semaphores and latches, classic or sharded. A
 * server that knows no sharded pub/sub (before Redis 7) has none. */
static int channels(syncs *S, rlock__node *node, int sharded) {
  const char *argv[] = {"PUBSUB", sharded ? "SHARDCHANNELS" : "CHANNELS",
                        "redisson_[sc]*"};
  rlock__reply *r;
  int rc = rlock__topo_node_call(node, 3, argv, &r);
  if (rc != RLOCK_OK)
    return rc;
  if (r->type == RLOCK__R_ERROR && !sharded)
    rc = rlock__error_status(node->where, r);
  else if (r->type != RLOCK__R_ERROR && r->type != RLOCK__R_ARRAY)
    rc = rlock__err(RLOCK_EPROTO, "redis %s: PUBSUB %s returned a %s",
                    node->where, argv[1], rlock__reply_type_name(r));
  else if (r->type == RLOCK__R_ARRAY)
    rc = channels_of(S, node, sharded, r);
  rlock__reply_free(r);
  return rc;
}

/* ---- lease sets ---------------------------------------------------------- */

/* One SCAN step of sorted sets "...:timeout": the permit-expirable
 * semaphores they may belong to. */
static int lease_step(void *arg, const rlock__reply *keys) {
  syncs *S = arg;
  size_t sl = strlen(LEASE_SUFFIX), n;
  const char *alt;
  for (size_t i = 0; i < keys->n; i++) {
    int skip = 0;
    const rlock__reply *k = keys->elem[i];
    if (k->type != RLOCK__R_STR)
      return rlock__err(RLOCK_EPROTO, "SCAN returned a %s key",
                        rlock__reply_type_name(k));
    if (strlen(k->str) != k->len || k->len <= sl ||
        strcmp(k->str + k->len - sl, LEASE_SUFFIX) != 0)
      continue;
    const char *name = readings(k->str, k->len - sl, &n, &alt);
    if (alt == NULL && memchr(name, '{', n) == NULL)
      continue; /* "x:timeout": no name gives it */
    char *a = alt != NULL ? rlock__strndup(alt, n + 2) : NULL;
    found *f = alt == NULL || a != NULL ? entry(S, name, n, a, 0, &skip) : NULL;
    free(a);
    if (f == NULL && !skip)
      return rlock__err(RLOCK_ENOMEM, "out of memory");
    if (f != NULL)
      f->by_lease = 1;
  }
  return RLOCK_OK;
}

/* ---- the counts ------------------------------------------------------------
 */

/* Report entry `f` from its script answer `e` (0, or {which, count,
 * leased}) read on `node`. */
static int report(syncs *S, const found *f, const rlock__reply *e,
                  const char *node) {
  if (e->type == RLOCK__R_INT)
    return RLOCK_OK; /* neither name holds a count */
  if (e->type != RLOCK__R_ARRAY || e->n != 3 ||
      e->elem[0]->type != RLOCK__R_INT || e->elem[1]->type != RLOCK__R_STR ||
      e->elem[2]->type != RLOCK__R_INT)
    return rlock__err(RLOCK_EPROTO, "list_syncs returned a malformed entry");
  const char *name = e->elem[0]->integer == 2 && f->alt ? f->alt : f->name;
  int64_t leased = e->elem[2]->integer;
  int absent = e->elem[1]->len == 0;
  const char *kind = f->latch        ? "latch"
                     : leased > 0    ? "permit-expirable-semaphore"
                     : f->by_channel ? "semaphore"
                                     : NULL; /* its permits came back */
  if (kind == NULL || (absent && !f->by_channel) ||
      !rlock__glob(S->pattern, name))
    return RLOCK_OK;
  int64_t value = absent ? 0 : strtoll(e->elem[1]->str, NULL, 10);
  S->stopped =
      S->fn(name, kind, value, leased, f->subscribers, node, S->arg) != 0;
  return RLOCK_OK;
}

static const char *found_name(const void *items, size_t i) {
  return ((found *const *)items)[i]->name;
}

/* Read the counts of f[0..n) (one slot) with list_syncs.lua, and report
 * each. */
static int read_batch(syncs *S, found **f, size_t n) {
  rlock__call call;
  rlock__call_script(&call, &rlock__script_list_syncs);
  for (size_t i = 0; i < n; i++) {
    rlock__call_key(&call, f[i]->name);
    rlock__call_key(&call, f[i]->alt != NULL ? f[i]->alt : f[i]->name);
  }
  rlock__reply *r;
  int rc = rlock__list_batch(S->c, &call, f, n, found_name, "list_syncs", &r);
  for (size_t i = 0; rc == RLOCK_OK && i < n && !S->stopped; i++)
    rc = report(S, f[i], r->elem[i], call.served_by);
  rlock__reply_free(r);
  return rc;
}

static int by_slot(const void *a, const void *b) {
  const found *x = *(found *const *)a, *y = *(found *const *)b;
  return x->slot != y->slot ? (x->slot < y->slot ? -1 : 1)
                            : (x < y ? -1 : x > y);
}

/* Every entry's count, per slot, READ_BATCH at a time. */
static int read_all(syncs *S) {
  found **order = rlock__calloc(S->n ? S->n : 1, sizeof *order);
  if (order == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  for (size_t i = 0; i < S->n; i++)
    order[i] = &S->v[i];
  if (S->cluster)
    qsort(order, S->n, sizeof *order, by_slot);
  int rc = RLOCK_OK;
  for (size_t i = 0; i < S->n && rc == RLOCK_OK && !S->stopped;) {
    size_t j = i + 1;
    while (j < S->n && j - i < READ_BATCH &&
           (!S->cluster || order[j]->slot == order[i]->slot))
      j++;
    rc = read_batch(S, order + i, j - i);
    i = j;
  }
  free(order);
  return rc;
}

/* Every server's channels and lease sets, then the counts. */
static int gather(syncs *S) {
  rlock__node **nodes;
  size_t n;
  int rc = rlock__list_nodes(S->c, &nodes, &n);
  for (size_t i = 0; i < n && rc == RLOCK_OK; i++) {
    rc = channels(S, nodes[i], 0);
    if (rc == RLOCK_OK && S->cluster)
      rc = channels(S, nodes[i], 1);
    if (rc == RLOCK_OK)
      rc = rlock__list_scan(nodes[i], "*" LEASE_SUFFIX, "zset", lease_step, S,
                            &S->stopped);
  }
  free(nodes);
  return rc == RLOCK_OK ? read_all(S) : rc;
}

int rlock_client_list_syncs(rlock_client *c, const char *pattern,
                            rlock_sync_list_fn fn, void *arg) {
  int rc = rlock__list_args("rlock_client_list_syncs", c, fn == NULL, &pattern);
  if (rc != RLOCK_OK)
    return rc;
  syncs S = {.c = c,
             .pattern = pattern,
             .cluster = c->cfg.target.kind == RLOCK__TOPO_CLUSTER,
             .fn = fn,
             .arg = arg};
  rc = gather(&S);
  for (size_t i = 0; i < S.n; i++) {
    free(S.v[i].name);
    free(S.v[i].alt);
  }
  free(S.v);
  rlock__map_clear(&S.index);
  return rc;
}
