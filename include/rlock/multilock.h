/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlock/multilock.h - several locks taken as one (Redisson's MultiLock).
 *
 * A MultiLock holds all of its members or none: it acquires them one
 * after another, in the order given, by the calling thread; if one cannot
 * be had within the wait, every member already taken is released before
 * the call returns, so no partial hold is ever left behind. Members may
 * be of any kind (reentrant, fair, read, write) and from different
 * clients (and so different servers).
 *
 * Lock order: two MultiLocks that take the same locks in different orders
 * can deadlock each other (each holding what the other waits for), as can
 * a MultiLock and a thread taking the same locks one by one. Every caller
 * must take locks in one global order; rlock_names_sort() gives a
 * canonical one (byte-wise by name).
 *
 * Threading: like a lock object, a MultiLock holds no per-thread state;
 * holds belong to the calling thread, or to the owner given in the
 * options (lock.h: "Owners"). Its members must outlive it.
 */
#ifndef RLOCK_MULTILOCK_H
#define RLOCK_MULTILOCK_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "lock.h"

RLOCK_BEGIN_DECLS

typedef struct rlock_multilock rlock_multilock;

/** Most members one MultiLock accepts. */
#define RLOCK_MAX_MEMBERS 256

/**
 * Create a MultiLock over `members` (taken in this order). The array is
 * copied; the lock objects are borrowed and must outlive the MultiLock.
 * @return RLOCK_OK; RLOCK_EINVAL when out is NULL, there are no members
 *         or more than RLOCK_MAX_MEMBERS, a member is NULL, or two members
 *         are the same lock (same client, kind and name); RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_multilock_new(rlock_multilock **out,
                                     rlock_lock *const *members, size_t n);

/** Free a MultiLock (not its members). NULL is accepted and ignored. */
RLOCK_EXTERN void rlock_multilock_free(rlock_multilock *m);

/** Acquire every member, waiting as long as it takes, watchdog leases. */
RLOCK_EXTERN int rlock_multilock_acquire(rlock_multilock *m);

/**
 * Acquire every member within `wait_ms` in all (0: one try each).
 * @param lease_ms RLOCK_LEASE_WATCHDOG, or each member's lease. Once the
 *        last member is taken, every member taken before it is given the
 *        full lease again (one more round trip per such member), so each
 *        member's lease runs from the end of the acquisition, not from
 *        when that member was taken. A member whose lease ran out (or that
 *        was deleted) before the last one was taken is not re-created: the
 *        attempt fails with RLOCK_ELOCKED naming it.
 * @return RLOCK_OK when the calling thread holds every member; otherwise
 *         no member is held (those taken were released) and the status
 *         is the failing member's: RLOCK_ELOCKED, RLOCK_EWRONGTYPE,
 *         RLOCK_EDEADLK, RLOCK_EIO, ... (the message names the member).
 *         RLOCK_ELOCKED also when a wait (wait_ms > 0) ended before a
 *         member could be tried: that member is not tried at all.
 */
RLOCK_EXTERN int rlock_multilock_try_acquire(rlock_multilock *m,
                                             int64_t wait_ms, int64_t lease_ms);

/** rlock_multilock_try_acquire(), giving up when `cancel` fires
 * (RLOCK_ECANCELED; nothing stays held). */
RLOCK_EXTERN int rlock_multilock_try_acquire_cancel(rlock_multilock *m,
                                                    int64_t wait_ms,
                                                    int64_t lease_ms,
                                                    rlock_cancel *cancel);

/**
 * Acquire every member with options (lock.h): the wait is for all members
 * together, the lease each member's, the owner every member's holder.
 * Every other MultiLock acquire function is a short form of this one.
 * @param opts NULL for the defaults.
 * @return as rlock_multilock_try_acquire(); RLOCK_ECANCELED when the
 *         cancel token fired; RLOCK_EINVAL also for an unknown options
 *         version or a token asked for (each fenced member has its own:
 *         acquire it alone to get it).
 */
RLOCK_EXTERN int
rlock_multilock_acquire_opts(rlock_multilock *m,
                             const rlock_acquire_options *opts);

/**
 * Release one hold of every member, in reverse order. Every member is
 * released even when one fails; the first failure's status is returned
 * (RLOCK_ENOTHELD, RLOCK_ELOST, RLOCK_EIO, ...).
 */
RLOCK_EXTERN int rlock_multilock_release(rlock_multilock *m);

/** rlock_multilock_release() for the holds of `owner`, from any thread. */
RLOCK_EXTERN int rlock_multilock_release_owner(rlock_multilock *m,
                                               uint64_t owner);

/** Whether the calling thread holds every member: *held = 1 or 0. */
RLOCK_EXTERN int rlock_multilock_is_held(int *held, rlock_multilock *m);

/** rlock_multilock_is_held() for `owner`. */
RLOCK_EXTERN int rlock_multilock_is_held_owner(int *held, rlock_multilock *m,
                                               uint64_t owner);

/**
 * Sort lock names into rlock's canonical lock order (byte-wise, as
 * strcmp), in place, so that every process takes a set of locks in the
 * same order. NULL entries are not allowed.
 * @return RLOCK_OK, or RLOCK_EINVAL when names or an entry is NULL.
 */
RLOCK_EXTERN int rlock_names_sort(const char **names, size_t n);

RLOCK_END_DECLS

#endif /* RLOCK_MULTILOCK_H */
