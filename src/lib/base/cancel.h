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

struct rlock_cancel {
  atomic_int fired; /* lock-free on every platform we build for */
};

/* 1 when `c` is non-NULL and has fired. */
int rlock__canceled(const rlock_cancel *c);

/* The next moment a waiter must look at `c`: `until`, or sooner when a
 * token is given. */
int64_t rlock__cancel_step(const rlock_cancel *c, int64_t until_us);

#endif /* RLOCK_CANCEL_H */
