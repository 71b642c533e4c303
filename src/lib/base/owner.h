/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * owner.h - owner numbers: who holds a lock within this process.
 *
 * A hold's hash field is "<client id>:<owner number>" (Redisson reads the
 * number as a Java thread id). Each thread gets a number the first time it
 * needs one, from a process-wide counter that never repeats, so a thread
 * created after another exited can never be mistaken for it (Linux thread
 * ids are reused). rlock_owner_new() hands out numbers from the same
 * counter for explicit owners (event loops, coroutines, pools).
 *
 * A thread's liveness record lets the watchdog stop renewing the holds of
 * a thread that exited holding them: they then expire within their lease.
 * Holds of explicit owners have no liveness record: they are renewed until
 * released or until the client is freed.
 */
#ifndef RLOCK_OWNER_H
#define RLOCK_OWNER_H

#include <stdint.h>

typedef struct rlock__life rlock__life;

/* A number never handed out before in this process (1, 2, 3, ...). */
uint64_t rlock__owner_next(void);

/* The calling thread's owner number. */
uint64_t rlock__thread_owner(void);

/* The calling thread's liveness record, with one more reference for the
 * caller (release it with rlock__life_unref); NULL when out of memory
 * (the hold is then treated as an explicit owner's). */
rlock__life *rlock__thread_life_ref(void);

void rlock__life_unref(rlock__life *life);

/* 1 once the thread the record belongs to has exited. */
int rlock__life_gone(const rlock__life *life);

/* How many threads that had a liveness record have exited so far (an
 * atomic counter): the hold records notice a change and drop the records
 * of exited threads without waiting for a renewal tick. */
unsigned rlock__thread_exits(void);

#endif /* RLOCK_OWNER_H */
