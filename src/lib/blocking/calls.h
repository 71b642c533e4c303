/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * calls.h - what the blocking functions share (blocking/calls.c).
 */
#ifndef RLOCK_BLOCKING_CALLS_H
#define RLOCK_BLOCKING_CALLS_H

#include "lock_int.h"

/* The first step of every blocking function of lock.h, multilock.h and
 * redlock.h, before it touches any state (a hold record above all):
 * RLOCK_OK when `c` may be used from the calling thread by blocking;
 * RLOCK_ECLOSED in a fork()ed child (rlock__origin_refuse); RLOCK_EINVAL,
 * with why, for a client an event loop drives (rlock_client_new_loop),
 * whose locks are used through the _async functions. The pools refuse
 * the same clients later, but by then a release has dropped its hold
 * record, so the refusal must come first. */
int rlock__blocking_check(const rlock_client *c);
/* rlock__blocking_check for every member of a MultiLock or RedLock. */
int rlock__blocking_check_all(rlock_lock *const *members, size_t n);

/* Run a call about the lock; words a WRONGTYPE refusal with the lock's
 * name (rlock__wrongtype). */
int rlock__lock_run(rlock_lock *l, rlock__call *call, rlock__reply **out);

/* rlock__lock_run, riding out a failover until `deadline_us` (cmd.h). */
int rlock__lock_run_until(rlock_lock *l, rlock__call *call, int64_t deadline_us,
                          rlock__reply **out);

#endif /* RLOCK_BLOCKING_CALLS_H */
