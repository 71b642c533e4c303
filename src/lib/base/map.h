/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * map.h - a string-keyed hash table of void pointers (chained, growing).
 *
 * Keys are byte strings with explicit lengths and are copied on insert
 * into the entry's node. A removed entry's node is kept for reuse (up to
 * RLOCK__MAP_SPARES per map), so a map whose entries come and go (a
 * lock taken and released in a loop) stops allocating once warm.
 * Not thread-safe: every map in the library is guarded by its owner's
 * mutex.
 */
#ifndef RLOCK_MAP_H
#define RLOCK_MAP_H

#include <stddef.h>

#define RLOCK__MAP_SPARES 8

typedef struct rlock__map_node {
  struct rlock__map_node *next;
  size_t hash;
  size_t keylen;
  size_t keycap; /* bytes key[] has room for, the NUL included */
  void *value;
  char key[]; /* keylen bytes plus a NUL */
} rlock__map_node;

typedef struct rlock__map {
  rlock__map_node **buckets;
  size_t nbuckets; /* a power of two, or 0 before the first insert */
  size_t count;
  rlock__map_node *spare; /* removed nodes kept for reuse, via next */
  size_t nspare;
} rlock__map;

/* Look `key` up; NULL when absent. */
void *rlock__map_get(const rlock__map *m, const char *key, size_t keylen);

/* Insert or replace. Returns 0, or -1 when out of memory (map unchanged). */
int rlock__map_put(rlock__map *m, const char *key, size_t keylen, void *value);

/* Remove `key`; returns its value or NULL when absent. */
void *rlock__map_del(rlock__map *m, const char *key, size_t keylen);

/* Call fn for every entry; fn must not modify the map. */
void rlock__map_each(const rlock__map *m,
                     void (*fn)(const char *key, size_t keylen, void *value,
                                void *arg),
                     void *arg);

/* Call fn for every entry and remove those for which it returns nonzero
 * (fn may free their values, not the map's own nodes). */
void rlock__map_drop_if(rlock__map *m,
                        int (*fn)(const char *key, size_t keylen, void *value,
                                  void *arg),
                        void *arg);

/* Free the map's own memory, spare nodes included (not the values). */
void rlock__map_clear(rlock__map *m);

#endif /* RLOCK_MAP_H */
