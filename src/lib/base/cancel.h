/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cancel.h - cancel tokens: a lock-free flag a signal handler may set.
 *
 * A waiter given a token cannot be woken by it directly (signalling a
 * condition variable is not async-signal-safe), so it sleeps in steps of
 * at most RLOCK__CANCEL_STEP_MS and checks the flag between them. This is
 * a local check only: nothing is sent to Redis, and unlock messages still
 * wake the waiter at once.
 */
#ifndef RLOCK_CANCEL_H
#define RLOCK_CANCEL_H

#include <stdatomic.h>
#include <stdint.h>

#include "rlock/lock.h"

#define RLOCK__CANCEL_STEP_MS 20

/* How long a read under way when the token fires still waits for its
 * reply: an acquisition's grant arriving then is read and given back
 * rather than left held, unrecorded, until its lease runs out. */
#define RLOCK__CANCEL_GRACE_MS 50

struct rlock_cancel {
  atomic_int fired; /* lock-free on every platform we build for */
};

/* 1 when `c` is non-NULL and has fired. */
int rlock__canceled(const rlock_cancel *c);

/* The next moment a waiter must look at `c`: `until`, or sooner when a
 * token is given. */
int64_t rlock__cancel_step(const rlock_cancel *c, int64_t until_us);

/* ---- the bound of the blocking call under way -----------------------------
 * A public blocking call that waits (an acquisition) promises its caller
 * to return by its wait (plus a margin), and soon after its cancel token
 * fires, whatever the server does. The waits below it (a connect, a
 * command's reply, a free pooled connection, a pause before a retry) each
 * have bounds of their own (the connect and command timeouts) and know
 * nothing of the caller's, so the call sets it for its thread here, and
 * those waits clip their deadlines to it and look at its token every
 * RLOCK__CANCEL_STEP_MS. A thread outside such a call (the background
 * thread, an event loop) has none: INT64_MAX and no token. */
typedef struct rlock__bound {
  int64_t until_us;           /* INT64_MAX: none */
  const rlock_cancel *cancel; /* NULL: none */
} rlock__bound;

/* Narrow the calling thread's bound to `until_us` (never widening it) and
 * set its token to `cancel`; returns the bound it replaced, for
 * rlock__bound_restore. */
rlock__bound rlock__bound_enter(int64_t until_us, const rlock_cancel *cancel);

/* For what a call must still say once its wait has ended (leave a queue,
 * give back a grant): the bound pushed out to `until_us` when that is
 * later (a thread without one keeps none) and no token; returns the bound
 * it replaced, for rlock__bound_restore. */
rlock__bound rlock__bound_extend(int64_t until_us);

/* Put back a bound rlock__bound_enter or _extend returned. */
void rlock__bound_restore(rlock__bound was);

/* `deadline_us` clipped to the calling thread's bound. */
int64_t rlock__bound_clip(int64_t deadline_us);

/* When a wait for `deadline_us` must next wake to look at the token:
 * the clipped deadline, or sooner by a step when a token is set. */
int64_t rlock__bound_step(int64_t deadline_us);

/* Sleep `ms`, ending early once the thread's bound passes or its token
 * fires. */
void rlock__bound_sleep_ms(int64_t ms);

/* Why a wait must end now: RLOCK_ECANCELED when the thread's token has
 * fired, RLOCK_ETIMEOUT when its bound has passed, else 0. */
int rlock__bound_reached(void);

#endif /* RLOCK_CANCEL_H */
