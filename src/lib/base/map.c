/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * map.c - chained hash table with FNV-1a hashing, doubling at load 1;
 * removed nodes are kept as spares (map.h).
 */
#include "map.h"

#include <stdlib.h>

#include "alloc.h"
#include <string.h>

static size_t hash_bytes(const char *key, size_t len) {
  size_t h = (size_t)1469598103934665603ULL;
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)key[i];
    h *= (size_t)1099511628211ULL;
  }
  return h;
}

static rlock__map_node **find_slot(const rlock__map *m, const char *key,
                                   size_t keylen, size_t h) {
  rlock__map_node **slot = &m->buckets[h & (m->nbuckets - 1)];
  while (*slot != NULL) {
    rlock__map_node *n = *slot;
    if (n->hash == h && n->keylen == keylen && memcmp(n->key, key, keylen) == 0)
      return slot;
    slot = &n->next;
  }
  return slot;
}

void *rlock__map_get(const rlock__map *m, const char *key, size_t keylen) {
  if (m->count == 0)
    return NULL;
  rlock__map_node *n = *find_slot(m, key, keylen, hash_bytes(key, keylen));
  return n ? n->value : NULL;
}

static int grow(rlock__map *m) {
  size_t nb = m->nbuckets ? m->nbuckets * 2 : 16;
  rlock__map_node **b = rlock__calloc(nb, sizeof *b);
  if (b == NULL)
    return -1;
  for (size_t i = 0; i < m->nbuckets; i++) {
    rlock__map_node *n = m->buckets[i];
    while (n != NULL) {
      rlock__map_node *next = n->next;
      n->next = b[n->hash & (nb - 1)];
      b[n->hash & (nb - 1)] = n;
      n = next;
    }
  }
  free(m->buckets);
  m->buckets = b;
  m->nbuckets = nb;
  return 0;
}

/* A node with room for `keylen` key bytes: a spare one when one fits. */
static rlock__map_node *node_take(rlock__map *m, size_t keylen) {
  for (rlock__map_node **link = &m->spare; *link != NULL;
       link = &(*link)->next) {
    rlock__map_node *n = *link;
    if (n->keycap > keylen) {
      *link = n->next;
      m->nspare--;
      return n;
    }
  }
  /* Rounded up, so that a spare fits the next key of about that length. */
  size_t cap = (keylen + 1 + 31) & ~(size_t)31;
  rlock__map_node *n = rlock__malloc(sizeof *n + cap);
  if (n != NULL)
    n->keycap = cap;
  return n;
}

static void node_give(rlock__map *m, rlock__map_node *n) {
  if (m->nspare >= RLOCK__MAP_SPARES) {
    free(n);
    return;
  }
  n->next = m->spare;
  m->spare = n;
  m->nspare++;
}

static void free_list(rlock__map_node *n) {
  while (n != NULL) {
    rlock__map_node *next = n->next;
    free(n);
    n = next;
  }
}

int rlock__map_put(rlock__map *m, const char *key, size_t keylen, void *value) {
  if (m->count >= m->nbuckets && grow(m) != 0)
    return -1;
  size_t h = hash_bytes(key, keylen);
  rlock__map_node **slot = find_slot(m, key, keylen, h);
  if (*slot != NULL) {
    (*slot)->value = value;
    return 0;
  }
  rlock__map_node *n = node_take(m, keylen);
  if (n == NULL)
    return -1;
  n->next = NULL;
  n->hash = h;
  n->keylen = keylen;
  n->value = value;
  memcpy(n->key, key, keylen);
  n->key[keylen] = '\0';
  *slot = n;
  m->count++;
  return 0;
}

void *rlock__map_del(rlock__map *m, const char *key, size_t keylen) {
  if (m->count == 0)
    return NULL;
  rlock__map_node **slot = find_slot(m, key, keylen, hash_bytes(key, keylen));
  rlock__map_node *n = *slot;
  if (n == NULL)
    return NULL;
  void *value = n->value;
  *slot = n->next;
  node_give(m, n);
  m->count--;
  return value;
}

void rlock__map_each(const rlock__map *m,
                     void (*fn)(const char *, size_t, void *, void *),
                     void *arg) {
  for (size_t i = 0; i < m->nbuckets; i++)
    for (rlock__map_node *n = m->buckets[i]; n != NULL; n = n->next)
      fn(n->key, n->keylen, n->value, arg);
}

void rlock__map_drop_if(rlock__map *m,
                        int (*fn)(const char *, size_t, void *, void *),
                        void *arg) {
  for (size_t i = 0; i < m->nbuckets; i++) {
    rlock__map_node **link = &m->buckets[i];
    while (*link != NULL) {
      rlock__map_node *n = *link;
      if (fn(n->key, n->keylen, n->value, arg)) {
        *link = n->next;
        node_give(m, n);
        m->count--;
      } else {
        link = &n->next;
      }
    }
  }
}

void rlock__map_clear(rlock__map *m) {
  for (size_t i = 0; i < m->nbuckets; i++)
    free_list(m->buckets[i]);
  free_list(m->spare);
  free(m->buckets);
  m->buckets = NULL;
  m->nbuckets = 0;
  m->count = 0;
  m->spare = NULL;
  m->nspare = 0;
}
