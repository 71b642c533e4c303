/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * list.c - rlock_client_list_locks: the locks held now on every server of
 * a client's topology, for operators who do not know their names.
 *
 * Each server (a cluster's every master, Sentinel's master, the single
 * server) is walked with SCAN MATCH pattern COUNT 100 TYPE hash: the
 * server filters by type, so keys of other types, and with them every
 * lock's auxiliary keys (lists, sorted sets, strings), are never read. The
 * hashes of one SCAN step go, per cluster slot, to list_inspect.lua,
 * which applies lockcheck's rule and snapshots the locks without writing
 * anything; its field budget keeps each call short, and the keys it did
 * not reach are sent again. SCAN runs on a chosen node
 * (rlock__topo_node_call); the script goes through the command layer,
 * routed by its first key, which is on that node.
 */
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "client_int.h"
#include "cluster.h"
#include "list.h"
#include "cmd.h"
#include "lock_int.h"
#include "map.h"
#include "names.h"
#include "slot.h"

/* SCAN's COUNT: how many buckets one step visits, so how long it runs. */
#define SCAN_COUNT "100"
/* Hash fields one script call may read (list_inspect.lua's budget). */
#define FIELD_BUDGET 1000

/* A key from a SCAN step, with its cluster slot (0 elsewhere). */
typedef struct candidate {
  const char *key;
  size_t len;
  unsigned slot;
  size_t order; /* in the reply */
} candidate;

typedef struct lister lister;
struct lister {
  rlock_client *c;
  const char *pattern;
  const char *type; /* SCAN's TYPE: "hash" (locks) or "string" (counts) */
  /* A SCAN step's keys worth reading (NULL: all), and the run of the
   * listing's script over keys[0..n), one slot's: *done is how many it
   * reached (at least one when it succeeds). */
  int (*skip)(const candidate *k);
  int (*batch)(lister *L, const candidate *keys, size_t n, size_t *done);
  rlock_lock_list_fn fn;
  rlock_count_list_fn count_fn;
  void *arg;
  int cluster;
  rlock__map seen; /* names reported: SCAN may return a key twice */
  int stopped;     /* fn asked to stop */
};

/* ---- the servers ------------------------------------------------------- */

/* Add `node` to the set `nodes` (n of them) unless it is there. */
static void add_node(rlock__node **nodes, size_t *n, rlock__node *node) {
  for (size_t i = 0; i < *n; i++)
    if (nodes[i] == node)
      return;
  nodes[(*n)++] = node;
}

/* A cluster's masters, from the slot map read through `any`, into
 * *out (malloc'ed, *n of them); every slot must have one, or the list
 * would silently miss locks. */
static int cluster_masters(rlock_client *c, rlock__node *any,
                           rlock__node ***out, size_t *n) {
  rlock__range *ranges;
  size_t nr, covered = 0;
  int rc = rlock__cluster_map(any, &ranges, &nr);
  if (rc != RLOCK_OK)
    return rc;
  rlock__node **nodes = rlock__calloc(nr ? nr : 1, sizeof *nodes);
  if (nodes == NULL)
    rc = rlock__err(RLOCK_ENOMEM, "out of memory");
  for (size_t i = 0; i < nr && rc == RLOCK_OK; i++) {
    rlock__node *node;
    covered += ranges[i].to - ranges[i].from + 1;
    rc = rlock__topo_node(&c->topo, ranges[i].host, ranges[i].port, &node);
    if (rc == RLOCK_OK)
      add_node(nodes, n, node);
  }
  free(ranges);
  if (rc == RLOCK_OK && covered < RLOCK__SLOTS)
    rc = rlock__err(RLOCK_EIO,
                    "cluster: %zu of %d slots have no master that is up; a "
                    "list now would miss their locks",
                    RLOCK__SLOTS - covered, RLOCK__SLOTS);
  if (rc != RLOCK_OK) {
    free(nodes);
    *n = 0;
  } else {
    *out = nodes;
  }
  return rc;
}

int rlock__list_nodes(rlock_client *c, rlock__node ***out, size_t *n) {
  rlock__node *any;
  *out = NULL;
  *n = 0;
  int rc = rlock__topo_route(&c->topo, NULL, &any);
  if (rc != RLOCK_OK || c->cfg.target.kind == RLOCK__TOPO_CLUSTER)
    return rc != RLOCK_OK ? rc : cluster_masters(c, any, out, n);
  if ((*out = rlock__malloc(sizeof **out)) == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  (*out)[(*n)++] = any;
  return RLOCK_OK;
}

/* ---- one script call ---------------------------------------------------- */

/* "reentrant", "fair", "read-write" or "fenced" as a static string. */
static const char *kind_of(const rlock__reply *r) {
  static const char *const kinds[] = {"reentrant", "fair", "read-write",
                                      "fenced"};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (rlock__reply_is(r, kinds[i]))
      return kinds[i];
  return NULL;
}

/* Pass one lock, {kind, queue length, snapshot}, to the callback, unless
 * it was passed already. */
static int report(lister *L, const candidate *k, const rlock__reply *entry,
                  const char *node) {
  const char *kind = kind_of(entry->elem[0]);
  if (kind == NULL || entry->elem[1]->type != RLOCK__R_INT ||
      entry->elem[1]->integer < 0)
    return rlock__err(RLOCK_EPROTO, "list_inspect returned a malformed entry");
  if (rlock__map_get(&L->seen, k->key, k->len) != NULL)
    return RLOCK_OK;
  if (rlock__map_put(&L->seen, k->key, k->len, (void *)kind) != 0)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  rlock_lock_info *info = rlock__info_new();
  if (info == NULL)
    return RLOCK_ENOMEM;
  int rc = rlock__inspect_parse(entry->elem[2], info, node);
  if (rc == RLOCK_OK) {
    rlock__info_set_queue_length(info, (size_t)entry->elem[1]->integer);
    L->stopped = L->fn(k->key, kind, info, L->arg) != 0;
  }
  rlock_lock_info_free(info);
  return rc;
}

/* The script's answer for keys[0..n): one entry per key it reached (at
 * least one), 0 or -1 for those that are not listed; *done is how many. */
static int answer(lister *L, const candidate *keys, size_t n,
                  const rlock__reply *r, const char *node, size_t *done) {
  if (r->type != RLOCK__R_ARRAY || r->n == 0 || r->n > n)
    return rlock__err(RLOCK_EPROTO, "list_inspect returned an unexpected "
                                    "reply");
  int rc = RLOCK_OK;
  for (size_t i = 0; i < r->n && rc == RLOCK_OK && !L->stopped; i++) {
    const rlock__reply *e = r->elem[i];
    if (e->type == RLOCK__R_ARRAY && e->n == 3 &&
        e->elem[2]->type == RLOCK__R_ARRAY)
      rc = report(L, &keys[i], e, node);
    else if (e->type != RLOCK__R_INT)
      rc = rlock__err(RLOCK_EPROTO, "list_inspect returned a %s entry",
                      rlock__reply_type_name(e));
  }
  *done = r->n;
  return rc;
}

/* The fair queue, its deadlines and the token counter of lock `name`
 * (each malloc'ed) into aux[0..3), or NULLs for a name rlock would refuse
 * (its derived names may hash to another cluster slot). */
static int derive(const char *name, char **aux) {
  static const char *const prefixes[] = {
      "redisson_lock_queue", "redisson_lock_timeout", "redisson_lock_token"};
  rlock__saved_error saved;
  rlock__error_save(&saved);
  int valid = rlock__name_check(name, "name") == RLOCK_OK;
  rlock__error_restore(&saved);
  for (int i = 0; valid && i < 3; i++)
    if ((aux[i] = rlock__name_prefixed(prefixes[i], name)) == NULL)
      return rlock__err(RLOCK_ENOMEM, "out of memory");
  return RLOCK_OK;
}

/* Run list_inspect.lua over keys[0..n) (one slot); *done: keys it
 * reached. */
static int lock_batch(lister *L, const candidate *keys, size_t n,
                      size_t *done) {
  char **aux = rlock__calloc(3 * n, sizeof *aux);
  if (aux == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  rlock__call call;
  rlock__call_script(&call, &rlock__script_list_inspect);
  for (size_t i = 0; i < n; i++)
    rlock__call_key(&call, keys[i].key);
  rlock__call_num(&call, rlock__epoch_ms());
  rlock__call_num(&call, RLOCK_LIST_WAITERS);
  rlock__call_num(&call, FIELD_BUDGET);
  int rc = RLOCK_OK;
  for (size_t i = 0; i < n && rc == RLOCK_OK; i++)
    rc = derive(keys[i].key, aux + 3 * i);
  for (size_t i = 0; i < 3 * n; i++)
    rlock__call_arg(&call, aux[i] != NULL ? aux[i] : "");
  /* The call's few numbers always fit its store: a failure to build it
   * is a failure to grow its key list. */
  if (rc == RLOCK_OK && call.failed)
    rc = rlock__err(RLOCK_ENOMEM, "out of memory");
  rlock__reply *r = NULL;
  if (rc == RLOCK_OK)
    rc = rlock__call_run(L->c, &call, &r);
  else
    rlock__call_clear(&call);
  if (rc == RLOCK_OK)
    rc = answer(L, keys, n, r, call.served_by, done);
  rlock__reply_free(r);
  for (size_t i = 0; i < 3 * n; i++)
    free(aux[i]);
  free(aux);
  return rc;
}

/* ---- one SCAN step ------------------------------------------------------ */

static int by_slot(const void *a, const void *b) {
  const candidate *x = a, *y = b;
  if (x->slot != y->slot)
    return x->slot < y->slot ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* Check SCAN's reply [cursor, [key...]] and copy the cursor. */
static int scan_reply(const rlock__node *node, const rlock__reply *r,
                      char *cursor, size_t size) {
  if (r->type == RLOCK__R_ERROR)
    return rlock__error_status(node->where, r);
  if (r->type != RLOCK__R_ARRAY || r->n != 2 ||
      r->elem[0]->type != RLOCK__R_STR || r->elem[0]->len >= size ||
      r->elem[1]->type != RLOCK__R_ARRAY)
    return rlock__err(RLOCK_EPROTO,
                      "redis %s: SCAN returned an unexpected "
                      "reply",
                      node->where);
  memcpy(cursor, r->elem[0]->str, r->elem[0]->len + 1);
  return RLOCK_OK;
}

int rlock__list_scan(rlock__node *node, const char *match, const char *type,
                     int (*step)(void *arg, const rlock__reply *keys),
                     void *arg, const int *stopped) {
  char cursor[32] = "0";
  do {
    const char *argv[] = {"SCAN",  cursor,     "MATCH", match,
                          "COUNT", SCAN_COUNT, "TYPE",  type};
    rlock__reply *r;
    int rc = rlock__topo_node_call(node, 8, argv, &r);
    if (rc != RLOCK_OK)
      return rc;
    rc = scan_reply(node, r, cursor, sizeof cursor);
    if (rc == RLOCK_OK)
      rc = step(arg, r->elem[1]);
    rlock__reply_free(r);
    if (rc != RLOCK_OK)
      return rc;
  } while (!*stopped && strcmp(cursor, "0") != 0);
  return RLOCK_OK;
}

/* Check the keys of one SCAN step: per slot, in as many calls as the
 * listing's script needs (list_inspect.lua's field budget may stop it
 * short of a slot's last key). */
static int lister_step(void *arg, const rlock__reply *keys) {
  lister *L = arg;
  candidate *k = rlock__calloc(keys->n ? keys->n : 1, sizeof *k);
  if (k == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  size_t n = 0;
  int rc = RLOCK_OK;
  for (size_t i = 0; i < keys->n && rc == RLOCK_OK; i++) {
    const rlock__reply *key = keys->elem[i];
    if (key->type != RLOCK__R_STR)
      rc = rlock__err(RLOCK_EPROTO, "SCAN returned a %s key",
                      rlock__reply_type_name(key));
    else if (strlen(key->str) == key->len) { /* a NUL: no rlock name */
      k[n] = (candidate){key->str, key->len,
                         L->cluster ? rlock__slot(key->str, key->len) : 0, i};
      n += L->skip == NULL || !L->skip(&k[n]);
    }
  }
  qsort(k, n, sizeof *k, by_slot);
  for (size_t i = 0; i < n && rc == RLOCK_OK && !L->stopped;) {
    size_t j = i + 1, done = 0;
    while (j < n && k[j].slot == k[i].slot)
      j++;
    rc = L->batch(L, k + i, j - i, &done);
    i += done;
  }
  free(k);
  return rc;
}

/* ---- counts (rlock_client_list_counts) ---------------------------------- */

/* Keys that hold digits but are no semaphore or latch of the user's:
 * Redisson's own (token counters, unlock latches) and rlock's registry. */
static int not_a_count(const candidate *k) {
  static const char *const prefixes[] = {"redisson_", RLOCK_REGISTRY_PREFIX};
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strncmp(k->key, prefixes[i], strlen(prefixes[i])) == 0)
      return 1;
  return 0;
}

/* One entry of list_counts.lua's answer: {digits, leased} or 0. */
static int count_entry(lister *L, const candidate *k, const rlock__reply *e,
                       const char *node) {
  if (e->type == RLOCK__R_INT)
    return RLOCK_OK;
  if (e->type != RLOCK__R_ARRAY || e->n != 2 ||
      e->elem[0]->type != RLOCK__R_STR || e->elem[1]->type != RLOCK__R_INT)
    return rlock__err(RLOCK_EPROTO, "list_counts returned a malformed entry");
  if (rlock__map_get(&L->seen, k->key, k->len) != NULL)
    return RLOCK_OK;
  if (rlock__map_put(&L->seen, k->key, k->len, (void *)k) != 0)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  int64_t leased = e->elem[1]->integer;
  long long v = strtoll(e->elem[0]->str, NULL, 10);
  L->stopped =
      L->count_fn(k->key, leased > 0 ? "permit-expirable-semaphore" : "count",
                  (int64_t)v, leased, node, L->arg) != 0;
  return RLOCK_OK;
}

int rlock__list_batch(rlock_client *c, rlock__call *call, const void *items,
                      size_t n, const char *(*name_at)(const void *, size_t),
                      const char *script, rlock__reply **out) {
  *out = NULL;
  char **sets = rlock__calloc(n, sizeof *sets);
  int rc = sets == NULL ? rlock__err(RLOCK_ENOMEM, "out of memory") : RLOCK_OK;
  for (size_t i = 0; i < n && rc == RLOCK_OK; i++) {
    if ((sets[i] = rlock__name_suffixed(name_at(items, i), ":timeout")) == NULL)
      rc = rlock__err(RLOCK_ENOMEM, "out of memory");
    rlock__call_arg(call, sets[i] != NULL ? sets[i] : "");
  }
  if (rc == RLOCK_OK && call->failed)
    rc = rlock__err(RLOCK_ENOMEM, "out of memory");
  if (rc == RLOCK_OK)
    rc = rlock__call_run(c, call, out);
  else
    rlock__call_clear(call);
  if (rc == RLOCK_OK && ((*out)->type != RLOCK__R_ARRAY || (*out)->n != n)) {
    rlock__reply_free(*out);
    *out = NULL;
    rc = rlock__err(RLOCK_EPROTO, "%s returned an unexpected reply", script);
  }
  for (size_t i = 0; sets != NULL && i < n; i++)
    free(sets[i]);
  free(sets);
  return rc;
}

static const char *candidate_key(const void *items, size_t i) {
  return ((const candidate *)items)[i].key;
}

/* Run list_counts.lua over keys[0..n) (one slot): it reaches them all. */
static int count_batch(lister *L, const candidate *keys, size_t n,
                       size_t *done) {
  *done = n;
  rlock__call call;
  rlock__call_script(&call, &rlock__script_list_counts);
  for (size_t i = 0; i < n; i++)
    rlock__call_key(&call, keys[i].key);
  rlock__reply *r;
  int rc =
      rlock__list_batch(L->c, &call, keys, n, candidate_key, "list_counts", &r);
  for (size_t i = 0; rc == RLOCK_OK && i < n && !L->stopped; i++)
    rc = count_entry(L, &keys[i], r->elem[i], call.served_by);
  rlock__reply_free(r);
  return rc;
}

int rlock__list_args(const char *what, rlock_client *c, int no_fn,
                     const char **pattern) {
  if (c == NULL || no_fn)
    return rlock__err(RLOCK_EINVAL, "%s: %s is NULL", what,
                      c == NULL ? "client" : "fn");
  if (*pattern == NULL)
    *pattern = "*";
  size_t len = strlen(*pattern);
  if (len == 0 || len > RLOCK_MAX_NAME_LEN)
    return rlock__err(RLOCK_EINVAL, "%s: the pattern is %s", what,
                      len == 0 ? "empty" : "longer than 1024 bytes");
  if (c->drv->user_loop)
    return rlock__err(RLOCK_EINVAL, "%s: not for an event-loop client", what);
  return RLOCK_OK;
}

/* After the listing's checks (`what` names it; `no_fn`: no callback),
 * walk every server with L's SCAN type and step. */
static int walk(lister *L, const char *what, int no_fn) {
  int rc = rlock__list_args(what, L->c, no_fn, &L->pattern);
  if (rc != RLOCK_OK)
    return rc;
  L->cluster = L->c->cfg.target.kind == RLOCK__TOPO_CLUSTER;
  rlock__node **nodes;
  size_t n;
  rc = rlock__list_nodes(L->c, &nodes, &n);
  for (size_t i = 0; i < n && rc == RLOCK_OK && !L->stopped; i++)
    rc = rlock__list_scan(nodes[i], L->pattern, L->type, lister_step, L,
                          &L->stopped);
  free(nodes);
  rlock__map_clear(&L->seen);
  return rc;
}

int rlock_client_list_counts(rlock_client *c, const char *pattern,
                             rlock_count_list_fn fn, void *arg) {
  lister L = {.c = c,
              .pattern = pattern,
              .type = "string",
              .skip = not_a_count,
              .batch = count_batch,
              .count_fn = fn,
              .arg = arg};
  return walk(&L, "rlock_client_list_counts", fn == NULL);
}

int rlock_client_list_locks(rlock_client *c, const char *pattern,
                            rlock_lock_list_fn fn, void *arg) {
  lister L = {.c = c,
              .pattern = pattern,
              .type = "hash",
              .batch = lock_batch,
              .fn = fn,
              .arg = arg};
  return walk(&L, "rlock_client_list_locks", fn == NULL);
}
