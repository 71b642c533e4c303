/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlock/redlock.h - a quorum lock over independent servers (RedLock).
 *
 * One reentrant lock per server (each from its own client); the RedLock
 * is held when a majority, N/2 + 1, of them is. Beyond Redisson's
 * RedissonRedLock: the members are contacted in parallel, and every free
 * member is taken (and, with the watchdog, renewed), not just the first
 * quorum to answer, so losing one member later (a server restarted
 * without persistence) need not drop the lock below the quorum; a round
 * ends early only once the quorum can no longer be reached; the time left
 * is computed on the monotonic clock as the lease minus the time spent
 * acquiring minus a drift allowance of 1% of the lease plus 2 ms, and an
 * acquisition that leaves nothing fails; and the caller learns which
 * members were taken and why the others were not.
 *
 * Safety: a RedLock is only as safe as its assumptions (bounded clock
 * drift and pauses; servers that do not lose keys on restart, so run them
 * with persistence or delay their restarts by a lease). For correctness
 * against paused holders, guard the resource with fencing tokens.
 *
 * Threading: like a lock object, a RedLock holds no per-thread state;
 * holds belong to the calling thread or the options' owner (lock.h:
 * "Owners"). Its members must outlive it.
 */
#ifndef RLOCK_REDLOCK_H
#define RLOCK_REDLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "lock.h"

RLOCK_BEGIN_DECLS

typedef struct rlock_redlock rlock_redlock;
typedef struct rlock_redlock_result rlock_redlock_result;

/** Most members one RedLock accepts. */
#define RLOCK_MAX_REDLOCK_MEMBERS 64

/**
 * Create a RedLock over `members`: reentrant locks (rlock_lock_new), each
 * from a different client connected to a different server. The array is
 * copied; the lock objects are borrowed and must outlive the RedLock.
 * @return RLOCK_OK; RLOCK_EINVAL when out is NULL, there are no members or
 *         too many, a member is NULL or not a reentrant lock, or two
 *         members share a client or a server; RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_redlock_new(rlock_redlock **out,
                                   rlock_lock *const *members, size_t n);

/** Free a RedLock (not its members). NULL is accepted and ignored. */
RLOCK_EXTERN void rlock_redlock_free(rlock_redlock *r);

/**
 * Acquire a quorum of members within `wait_ms` (0: one round), each with
 * `lease_ms` (RLOCK_LEASE_WATCHDOG: the clients' watchdog timeouts, and
 * every member taken is renewed by its own client's watchdog). A round
 * sends to every member at once and waits for every answer, each for at
 * most 5% of the lease (10 ms to the command timeout), so every member
 * that is free is taken, beyond the quorum too; a round stops sooner only
 * once the quorum is out of reach. A slow or unreachable member therefore
 * costs a successful round up to that member timeout (validity counts
 * it). A member that did not answer in time may still take its lock on
 * its server: a round that fails gives it back, sent after the attempt on
 * the same connection; after a round that succeeded without it,
 * rlock_redlock_release covers it (otherwise it expires with its lease,
 * unrenewed). Rounds that miss the quorum release what they
 * took and are retried after a short random pause until the wait runs
 * out (contention only, when waiting for ever).
 * @param result if not NULL, receives the outcome of the last round (also
 *        on failure); free it with rlock_redlock_result_free().
 * @return RLOCK_OK when the calling thread holds a quorum with validity
 *         left; RLOCK_ELOCKED when it could not (members held elsewhere,
 *         or too slow to leave any validity); the first member's transport
 *         error (RLOCK_EIO, ...) when too few servers answered at all;
 *         RLOCK_EINVAL for bad durations.
 */
RLOCK_EXTERN int rlock_redlock_try_acquire(rlock_redlock_result **result,
                                           rlock_redlock *r, int64_t wait_ms,
                                           int64_t lease_ms);

/** rlock_redlock_try_acquire(), giving up when `cancel` fires (checked
 * at least every 20 ms, within a round too): RLOCK_ECANCELED, nothing
 * held. */
RLOCK_EXTERN int rlock_redlock_try_acquire_cancel(rlock_redlock_result **result,
                                                  rlock_redlock *r,
                                                  int64_t wait_ms,
                                                  int64_t lease_ms,
                                                  rlock_cancel *cancel);

/**
 * Acquire a quorum with options (lock.h): the wait, each member's lease,
 * the cancel token (as rlock_redlock_try_acquire_cancel()) and the owner. The
 * other RedLock acquire functions are short forms of this one.
 * @param opts NULL for the defaults (wait for ever, watchdog leases).
 * @return as rlock_redlock_try_acquire(); RLOCK_EINVAL also for an
 *         unknown options version or a token asked for (a RedLock issues
 *         none).
 */
RLOCK_EXTERN int rlock_redlock_acquire_opts(rlock_redlock_result **result,
                                            rlock_redlock *r,
                                            const rlock_acquire_options *opts);

/**
 * Release every member, in parallel; members this thread never took are
 * ignored.
 * @return RLOCK_OK when every member this thread held was released;
 *         RLOCK_ENOTHELD when it held none (no member recorded a hold and
 *         no server had one to release: as rlock_lock_release() and
 *         rlock_multilock_release(), and rlock_redlock_release_async());
 *         RLOCK_ELOST when one had expired or was deleted meanwhile (the
 *         others were released); else the first transport error.
 */
RLOCK_EXTERN int rlock_redlock_release(rlock_redlock *r);

/** rlock_redlock_release() for the holds of `owner`, from any thread. */
RLOCK_EXTERN int rlock_redlock_release_owner(rlock_redlock *r, uint64_t owner);

/** Milliseconds of validity left when the round ended: lease minus time
 * spent minus drift; 0 when the quorum was not reached. Never larger than
 * the lease. */
RLOCK_EXTERN int64_t
rlock_redlock_result_validity_ms(const rlock_redlock_result *res);
/** Number of members (the same order as given to rlock_redlock_new). */
RLOCK_EXTERN size_t rlock_redlock_result_count(const rlock_redlock_result *res);
/** RLOCK_OK when member `i` was taken, else why not (RLOCK_ELOCKED,
 * RLOCK_EIO, RLOCK_ETIMEOUT, RLOCK_EDEADLK on the background thread of
 * that member's client, ...). */
RLOCK_EXTERN int rlock_redlock_result_status(const rlock_redlock_result *res,
                                             size_t i);
/** A message for member `i` ("" when taken). Borrowed. */
RLOCK_EXTERN const char *
rlock_redlock_result_message(const rlock_redlock_result *res, size_t i);
/** Free a result. NULL is accepted and ignored. */
RLOCK_EXTERN void rlock_redlock_result_free(rlock_redlock_result *res);

RLOCK_END_DECLS

#endif /* RLOCK_REDLOCK_H */
