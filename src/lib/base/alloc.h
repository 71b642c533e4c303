/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alloc.h - the library's one door to the heap. Every allocation rlock
 * makes itself goes through these (hiredis's own, for its RESP reader's
 * buffer and task stack, do not: hiredis 0.14 has no allocator hook).
 * Memory they return is released with free().
 *
 * Tests can make the Nth allocation fail (rlock__alloc_fail_at) to walk
 * the out-of-memory paths; nothing else changes their behaviour.
 */
#ifndef RLOCK_ALLOC_H
#define RLOCK_ALLOC_H

#include <stddef.h>
#include <stdint.h>

void *rlock__malloc(size_t n);
void *rlock__calloc(size_t count, size_t size);
void *rlock__realloc(void *p, size_t n);

/* ---- failure injection (tests) ----------------------------------------- */

/* rlock__alloc_fail_at's flags. THIS_THREAD: count and fail only the
 * allocations of the test's threads (the arming thread and those marked
 * by rlock__alloc_mark_thread): deterministic walks of the calls a test
 * makes. OTHER_THREADS: only those of every other thread, that is the
 * library's own (a blocking client's background thread, a name lookup's
 * thread). ONCE: fail the nth alone, not every later one too (memory
 * short for a moment). */
#define RLOCK__ALLOC_THIS_THREAD 1
#define RLOCK__ALLOC_ONCE 2
#define RLOCK__ALLOC_OTHER_THREADS 4

/* Count allocations from now on and fail the `n`th one (1 = the next)
 * and, without RLOCK__ALLOC_ONCE, every later one, until
 * rlock__alloc_fail_at(0, 0) turns it off. */
void rlock__alloc_fail_at(uint64_t n, int flags);

/* Mark the calling thread as the test's: RLOCK__ALLOC_OTHER_THREADS
 * leaves its allocations alone. The arming thread is marked already. */
void rlock__alloc_mark_thread(void);

/* Allocations counted since the last rlock__alloc_fail_at(). */
uint64_t rlock__alloc_count(void);

/* Allocations refused since the last rlock__alloc_fail_at(). */
uint64_t rlock__alloc_failed(void);

#endif /* RLOCK_ALLOC_H */
