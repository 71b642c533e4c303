/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alloc.c - the library's allocation functions and their failure
 * injection. With injection off (always, outside tests) each is one
 * relaxed atomic load and the libc call.
 */
#include "alloc.h"

#include <stdatomic.h>
#include <stdlib.h>

static atomic_uint_fast64_t fail_at;  /* 0: off */
static atomic_uint_fast64_t counted;  /* allocations since armed */
static atomic_uint_fast64_t refused;  /* allocations failed since armed */
static atomic_int only_thread;        /* count only on marked threads ... */
static atomic_int other_threads;      /* ... or only on the others */
static atomic_int once;               /* fail the nth alone */
static _Thread_local int armed_by_me; /* the test's thread (marked) */

/* Whether this allocation is to fail. */
static int injected(void) {
  uint_fast64_t at = atomic_load_explicit(&fail_at, memory_order_relaxed);
  if (at == 0 || (atomic_load(&only_thread) && !armed_by_me) ||
      (atomic_load(&other_threads) && armed_by_me))
    return 0;
  uint_fast64_t k = atomic_fetch_add(&counted, 1) + 1;
  if (k < at || (k > at && atomic_load(&once)))
    return 0;
  atomic_fetch_add(&refused, 1);
  return 1;
}

void *rlock__malloc(size_t n) { return injected() ? NULL : malloc(n); }

void *rlock__calloc(size_t count, size_t size) {
  return injected() ? NULL : calloc(count, size);
}

void *rlock__realloc(void *p, size_t n) {
  return injected() ? NULL : realloc(p, n);
}

void rlock__alloc_fail_at(uint64_t n, int flags) {
  atomic_store(&fail_at, 0);
  atomic_store(&counted, 0);
  atomic_store(&refused, 0);
  armed_by_me = 1;
  atomic_store(&only_thread, (flags & RLOCK__ALLOC_THIS_THREAD) != 0);
  atomic_store(&once, (flags & RLOCK__ALLOC_ONCE) != 0);
  atomic_store(&other_threads, (flags & RLOCK__ALLOC_OTHER_THREADS) != 0);
  atomic_store(&fail_at, n);
}

void rlock__alloc_mark_thread(void) { armed_by_me = 1; }

uint64_t rlock__alloc_count(void) { return atomic_load(&counted); }

uint64_t rlock__alloc_failed(void) { return atomic_load(&refused); }
