/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlock/latch.h - the count-down latch, wire-compatible with Redisson's
 * RCountDownLatch.
 *
 * A latch is a count set once (rlock_latch_try_set_count) and counted down
 * by anyone; waiters (rlock_latch_await) return once it reaches zero.
 * Unlike java.util.concurrent.CountDownLatch it can be set again once it
 * has reached zero (its key is then gone).
 *
 * Layout in Redis (shared with Java programs using Redisson; details in
 * docs/PROTOCOL.md): NAME is a string holding the count; absent reads as
 * 0 (the count reaching zero deletes it). Messages on the channel
 * "redisson_countdownlatch__channel__{NAME}" (always braced, also when
 * NAME has a "{tag}" of its own, as Redisson names it): "0" when the count
 * reached zero or the latch was deleted (every waiter wakes and reads the
 * count), "1" when a new count was set. On a cluster that uses sharded
 * pub/sub it is SPUBLISH, as Redisson's.
 *
 * Redis Cluster: the channel's hash tag is NAME itself, so for a NAME
 * without braces the channel shares NAME's slot. For a NAME with a
 * "{tag}", the channel's slot is that of "NAME's text up to its first
 * '}'", usually another slot: Redisson's own scripts then fail on a
 * cluster with sharded pub/sub (a cross-slot script), and rlock refuses
 * such a name there with RLOCK_EINVAL (with classic pub/sub it works).
 *
 * Counts are Java longs: 1 to INT64_MAX when set. A count of 0 or below is
 * refused (RLOCK_EINVAL). A latch's key is absent or a string holding a
 * decimal integer; on any other key every operation returns
 * RLOCK_EWRONGTYPE and leaves the key as it is.
 *
 * Waiting: a waiter reads the count, subscribes, and sleeps until a
 * message on the channel ("0", or "1", which Redisson's delete sends),
 * then reads the count again; it never polls.
 *
 * Threading, topologies, replica confirmation and names: as for
 * semaphores (rlock/semaphore.h). The blocking functions refuse a loop
 * client (RLOCK_EINVAL); the _async functions need one.
 */
#ifndef RLOCK_LATCH_H
#define RLOCK_LATCH_H

#include <stdint.h>

#include "client.h"
#include "export.h"
#include "lock.h"
#include "loop.h"

RLOCK_BEGIN_DECLS

typedef struct rlock_latch rlock_latch;

/**
 * Create a latch object for `name` on `client` (blocking or loop). Does
 * no I/O.
 * @param out receives the object; free it with rlock_latch_free() before
 *        the client.
 * @return RLOCK_OK, RLOCK_EINVAL (NULL argument, bad name), RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_latch_new(rlock_latch **out, rlock_client *client,
                                 const char *name);

/** Free a latch object. NULL is ignored. Not while one of its _async
 * operations is pending. */
RLOCK_EXTERN void rlock_latch_free(rlock_latch *latch);

/** The latch's name. Borrowed: valid as long as the object. */
RLOCK_EXTERN const char *rlock_latch_name(const rlock_latch *latch);

/**
 * Set the count to `count` if the latch has none (its key is absent:
 * never set, or counted down to zero) and publish "1" (Redisson's
 * trySetCount).
 * @param set if not NULL: 1 when set, 0 when a count was there (left as
 *        it was).
 * @param count 1 to INT64_MAX.
 * @return RLOCK_OK; RLOCK_EINVAL (NULL latch, count below 1, a loop
 *         client, a "{tag}" name on a sharded pub/sub cluster: above);
 *         RLOCK_EWRONGTYPE; RLOCK_EREPLICA (set on the master only);
 *         RLOCK_EIO, RLOCK_ETIMEOUT, RLOCK_ESERVER, RLOCK_EPROTO,
 *         RLOCK_ENOMEM, RLOCK_ECLOSED (fork()ed child).
 */
RLOCK_EXTERN int rlock_latch_try_set_count(int *set, rlock_latch *latch,
                                           int64_t count);

/**
 * Count down by one (Redisson's countDown); at zero the key is deleted
 * and "0" published, waking every waiter. On an absent latch it does
 * nothing (as Redisson's, whose DECR of an absent key is deleted at once).
 * @return as rlock_latch_try_set_count().
 */
RLOCK_EXTERN int rlock_latch_count_down(rlock_latch *latch);

/**
 * The current count (0 when absent).
 * @return RLOCK_OK; RLOCK_EINVAL (NULL argument); RLOCK_EWRONGTYPE;
 *         transport errors as above.
 */
RLOCK_EXTERN int rlock_latch_count(int64_t *count, rlock_latch *latch);

/**
 * Wait until the count is zero (Redisson's await(time)), at most
 * `wait_ms`.
 * @param wait_ms 0 to look once, a bound (up to RLOCK_MAX_DURATION_MS), or
 *        RLOCK_WAIT_FOREVER.
 * @param cancel a token that ends the wait, or NULL.
 * @return RLOCK_OK (the count was zero); RLOCK_ELOCKED (still above zero
 *         when the wait ended); RLOCK_ECANCELED; RLOCK_EINVAL;
 *         RLOCK_EWRONGTYPE; transport errors (a wait rides out an outage
 *         as a lock's does, rlock_lock_try_acquire). The wait bounds the
 *         call as a lock's wait does; the wait's last look, made at its
 *         end, takes nothing, so one the server leaves unanswered then is
 *         RLOCK_ELOCKED, not RLOCK_ETIMEOUT.
 */
RLOCK_EXTERN int rlock_latch_await(rlock_latch *latch, int64_t wait_ms,
                                   rlock_cancel *cancel);

/**
 * Delete the latch whatever its count (Redisson's delete), publishing "0"
 * when there was one, so its waiters return RLOCK_OK.
 * @param deleted if not NULL: 1 when a latch was deleted, 0 when absent.
 * @return as rlock_latch_try_set_count().
 */
RLOCK_EXTERN int rlock_latch_delete(int *deleted, rlock_latch *latch);

/* ---- Loop clients (rlock/loop.h) ---------------------------------------
 * The _async forms: same arguments, checks and statuses, the status as the
 * callback's `rc` (argument errors found before anything is queued are
 * returned at once, and the callback never runs). */

/** rlock_latch_try_set_count(); value 1 when set, else 0. */
RLOCK_EXTERN int rlock_latch_try_set_count_async(rlock_latch *latch,
                                                 int64_t count,
                                                 rlock_async_fn cb, void *arg);
/** rlock_latch_count_down(). */
RLOCK_EXTERN int rlock_latch_count_down_async(rlock_latch *latch,
                                              rlock_async_fn cb, void *arg);
/** rlock_latch_count(); value the count. */
RLOCK_EXTERN int rlock_latch_count_async(rlock_latch *latch, rlock_async_fn cb,
                                         void *arg);
/** rlock_latch_await() on the loop; cancel with rlock_op_cancel() (`op` as
 * rlock_lock_acquire_async's). */
RLOCK_EXTERN int rlock_latch_await_async(rlock_latch *latch, int64_t wait_ms,
                                         rlock_async_fn cb, void *arg,
                                         rlock_op **op);
/** rlock_latch_delete(); value 1 when deleted, else 0. */
RLOCK_EXTERN int rlock_latch_delete_async(rlock_latch *latch, rlock_async_fn cb,
                                          void *arg);

RLOCK_END_DECLS

#endif /* RLOCK_LATCH_H */
