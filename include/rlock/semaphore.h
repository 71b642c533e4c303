/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlock/semaphore.h - semaphores, wire-compatible with Redisson's RSemaphore
 * and RPermitExpirableSemaphore.
 *
 * Two kinds:
 *
 *  - rlock_semaphore (Redisson's RSemaphore): a counter of available
 *    permits. Acquiring takes permits from it, releasing gives them back,
 *    and anyone may release (a permit has no holder). Its permits NEVER
 *    expire: a process that dies holding permits takes them with it, and
 *    they are gone until someone adds them back (rlock_semaphore_release,
 *    _add_permits, _set_permits). Where a holder may crash, use the
 *    permit-expirable semaphore below.
 *
 *  - rlock_psemaphore (Redisson's RPermitExpirableSemaphore): each permit
 *    taken has an id and a lease; a permit whose lease runs out comes back
 *    by itself. A permit may be taken with a fixed lease or with the
 *    watchdog (RLOCK_LEASE_WATCHDOG), which renews it as a lock's watchdog
 *    renews a lock, so a crashed holder's permit comes back one watchdog
 *    timeout after its last renewal.
 *
 * Layout in Redis (shared with Java programs using Redisson; every key,
 * script and message is in docs/PROTOCOL.md):
 *  - NAME: a string holding the number of available permits (absent: none
 *    were ever set; it reads as 0 available).
 *  - "{NAME}:timeout" (psemaphore only; "NAME:timeout" when NAME has its
 *    own "{tag}"): a sorted set, member = the permit id's 16 bytes, score
 *    = the permit's deadline in milliseconds since the epoch by the
 *    acquiring client's wall clock.
 *  - channel "redisson_sc:{NAME}" ("redisson_sc:NAME" when NAME has a
 *    "{tag}"): every write that makes permits available publishes a
 *    number there; a waiter wakes on it and tries again. All three share
 *    NAME's Redis Cluster slot. On a cluster that uses sharded pub/sub
 *    (config.h) it is SPUBLISH, as Redisson's.
 *
 * Clocks (psemaphore): Redisson stamps a permit's deadline with the
 * acquiring client's wall clock, and every client purges the permits whose
 * deadline is behind its own wall clock. So clients sharing a psemaphore,
 * Java or rlock, need wall clocks that agree to well within a lease: a
 * client whose clock runs ahead frees others' permits early (more holders
 * than permits), one whose clock runs behind keeps expired permits out
 * longer. rlock writes deadlines as Redisson does (its one wall-clock use,
 * also the fair lock's); its own view of a lease (rlock_psemaphore_check,
 * the watchdog) is on the monotonic clock.
 *
 * Values: permit counts are Java ints in Redisson, so every count written
 * stays within -RLOCK_MAX_PERMITS..RLOCK_MAX_PERMITS (below zero only
 * through a negative add); a write that would leave that range is refused
 * with RLOCK_EINVAL, nothing written.
 *
 * Keys that are not semaphores: NAME must be absent or a string holding a
 * decimal integer; "{NAME}:timeout" absent or a sorted set. Anything else
 * (a lock's hash at NAME, a string that is not a number, ...) is never
 * written: every operation returns RLOCK_EWRONGTYPE and leaves it as it
 * is. A semaphore name used by a lock is refused by the lock's operations
 * the same way (rlock/lock.h, "What counts as a lock").
 *
 * Waiting: a waiter subscribes to the channel and sleeps until a message
 * (or, psemaphore, until the earliest permit's deadline, when it would
 * come back), then tries again; it never polls. Waiting is not fair: a
 * release wakes up to as many waiters as the number it published, and
 * whoever tries first wins (Redisson's order is unspecified too).
 *
 * Topologies: as the locks (single server, Cluster, Sentinel, TLS);
 * writes are confirmed on replicas when rlock_config_set_replica_sync is
 * on, as lock writes are (RLOCK_EREPLICA when none confirmed: an
 * acquisition is given back, any other write stays on the master).
 *
 * Threading: semaphore objects carry no per-thread state and may be used
 * from any number of threads at once; they must be freed before their
 * client. The blocking functions refuse a loop client (RLOCK_EINVAL); the
 * _async functions need one (rlock/loop.h's callback contract applies).
 *
 * Names: as lock names (1 to RLOCK_MAX_NAME_LEN bytes; a name with '{' or
 * '}' must contain a non-empty "{tag}").
 */
#ifndef RLOCK_SEMAPHORE_H
#define RLOCK_SEMAPHORE_H

#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "export.h"
#include "lock.h"
#include "loop.h"

RLOCK_BEGIN_DECLS

/** Most permits a semaphore holds, and most taken or given at once
 * (Redisson's counts are Java ints). */
#define RLOCK_MAX_PERMITS ((int64_t)2147483647)

typedef struct rlock_semaphore rlock_semaphore;

/**
 * Create a semaphore object for `name` on `client` (blocking or loop).
 * Does no I/O; the semaphore's key is created by the first write
 * (rlock_semaphore_try_set_permits, _set_permits, _add_permits, _release).
 * @param out receives the object; free it with rlock_semaphore_free()
 *        before the client.
 * @param name copied.
 * @return RLOCK_OK, RLOCK_EINVAL (NULL argument, bad name), RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_semaphore_new(rlock_semaphore **out,
                                     rlock_client *client, const char *name);

/** Free a semaphore object (permits taken through it stay taken). NULL is
 * ignored. Not while one of its _async operations is pending. */
RLOCK_EXTERN void rlock_semaphore_free(rlock_semaphore *sem);

/** The semaphore's name. Borrowed: valid as long as the object. */
RLOCK_EXTERN const char *rlock_semaphore_name(const rlock_semaphore *sem);

/**
 * Set the number of available permits to `permits` if the semaphore has
 * none set yet (its key is absent), and wake waiters (Redisson's
 * trySetPermits).
 * @param set if not NULL, receives 1 when it was set, 0 when the key
 *        existed (left as it was).
 * @param permits 0 to RLOCK_MAX_PERMITS.
 * @return RLOCK_OK; RLOCK_EINVAL (NULL sem, permits out of range);
 *         RLOCK_EWRONGTYPE (the key is not a semaphore); RLOCK_EREPLICA;
 *         RLOCK_EIO, RLOCK_ETIMEOUT, RLOCK_ESERVER, RLOCK_EPROTO,
 *         RLOCK_ENOMEM, RLOCK_ECLOSED (fork()ed child).
 */
RLOCK_EXTERN int rlock_semaphore_try_set_permits(int *set, rlock_semaphore *sem,
                                                 int64_t permits);

/**
 * Set the number of available permits to `permits`, whatever it was, and
 * wake waiters. (Redisson's RSemaphore has no such call: it is a SET and
 * the message Redisson's trySetPermits sends.)
 * @param permits 0 to RLOCK_MAX_PERMITS.
 * @return as rlock_semaphore_try_set_permits().
 */
RLOCK_EXTERN int rlock_semaphore_set_permits(rlock_semaphore *sem,
                                             int64_t permits);

/**
 * Add `delta` to the available permits (Redisson's addPermits: an absent
 * key counts as 0), and publish the new count. A negative delta takes
 * permits away, also below zero (waiters then wait until releases bring
 * the count back up past what they ask).
 * @param delta -RLOCK_MAX_PERMITS..RLOCK_MAX_PERMITS, not 0.
 * @return as rlock_semaphore_try_set_permits(); RLOCK_EINVAL also when the
 *         result would leave -RLOCK_MAX_PERMITS..RLOCK_MAX_PERMITS
 *         (nothing written).
 */
RLOCK_EXTERN int rlock_semaphore_add_permits(rlock_semaphore *sem,
                                             int64_t delta);

/**
 * Take `permits` permits at once, waiting at most `wait_ms` for that many
 * to be available (Redisson's tryAcquire(permits, wait)).
 * @param permits 1 to RLOCK_MAX_PERMITS.
 * @param wait_ms 0 to try once, a bound in ms (up to
 *        RLOCK_MAX_DURATION_MS), or RLOCK_WAIT_FOREVER.
 * @param cancel a token (rlock_cancel_new) that ends the wait, or NULL.
 * @return RLOCK_OK (taken); RLOCK_ELOCKED (not that many available within
 *         the wait; nothing taken); RLOCK_ECANCELED (the token fired;
 *         nothing taken: a grant on its way is given back);
 *         RLOCK_EINVAL (NULL sem, permits or wait out of range, a loop
 *         client); RLOCK_EWRONGTYPE; RLOCK_EREPLICA (taken, no replica
 *         confirmed: given back); RLOCK_EIO / RLOCK_ETIMEOUT (the server
 *         unreachable: a wait rides out an outage as a lock's does, see
 *         rlock_lock_try_acquire; if the connection broke after the
 *         request was sent the permits may have been taken, and since
 *         they never expire, they stay taken); RLOCK_ESERVER,
 *         RLOCK_EPROTO, RLOCK_ENOMEM, RLOCK_ECLOSED. The wait bounds the
 *         call as rlock_lock_try_acquire's does.
 */
RLOCK_EXTERN int rlock_semaphore_acquire(rlock_semaphore *sem, int64_t permits,
                                         int64_t wait_ms, rlock_cancel *cancel);

/**
 * Give `permits` permits back (Redisson's release(permits): any caller
 * may, also one that took none; an absent key counts as 0) and wake up to
 * the new available count of waiters.
 * @param permits 1 to RLOCK_MAX_PERMITS.
 * @return as rlock_semaphore_try_set_permits(); RLOCK_EINVAL also when
 *         the count would pass RLOCK_MAX_PERMITS (nothing written).
 */
RLOCK_EXTERN int rlock_semaphore_release(rlock_semaphore *sem, int64_t permits);

/**
 * The number of available permits (0 when the key is absent; negative
 * after rlock_semaphore_add_permits took more than there were).
 * @return RLOCK_OK; RLOCK_EINVAL (NULL argument); RLOCK_EWRONGTYPE;
 *         transport errors as above.
 */
RLOCK_EXTERN int rlock_semaphore_available(int64_t *available,
                                           rlock_semaphore *sem);

/**
 * Take every available permit at once (Redisson's drainPermits: the count
 * becomes 0; an absent key stays absent).
 * @param drained if not NULL, receives the count it had (0 when absent;
 *        a negative count is set to 0 too, and received as it was).
 * @return as rlock_semaphore_available(); RLOCK_EREPLICA.
 */
RLOCK_EXTERN int rlock_semaphore_drain(int64_t *drained, rlock_semaphore *sem);

/* ---- The permit-expirable semaphore ---------------------------------- */

typedef struct rlock_psemaphore rlock_psemaphore;

/** Length of a permit id: 32 lowercase hex digits (Redisson's form: 16
 * random bytes, stored as those bytes). Buffers take one more for '\0'. */
#define RLOCK_PERMIT_ID_LEN 32

/**
 * Create a permit-expirable semaphore object for `name` on `client`
 * (blocking or loop). Does no I/O.
 * @param out receives the object; free it with rlock_psemaphore_free()
 *        before the client.
 * @return RLOCK_OK, RLOCK_EINVAL (NULL argument, bad name), RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_psemaphore_new(rlock_psemaphore **out,
                                      rlock_client *client, const char *name);

/**
 * Free the object. Permits taken through it are not released: fixed
 * leases run out on the server; watchdog permits are renewed by the client
 * until released by id (through any object of the same name) or until the
 * client is freed. NULL is ignored. Not while one of its _async
 * operations is pending.
 */
RLOCK_EXTERN void rlock_psemaphore_free(rlock_psemaphore *sem);

/** The semaphore's name. Borrowed: valid as long as the object. */
RLOCK_EXTERN const char *rlock_psemaphore_name(const rlock_psemaphore *sem);

/**
 * Set the available permits to `permits` if none were set (the key is
 * absent), and wake waiters (Redisson's trySetPermits).
 * @param set if not NULL: 1 when set, 0 when the key existed.
 * @param permits 0 to RLOCK_MAX_PERMITS.
 * @return as rlock_semaphore_try_set_permits().
 */
RLOCK_EXTERN int rlock_psemaphore_try_set_permits(int *set,
                                                  rlock_psemaphore *sem,
                                                  int64_t permits);

/**
 * Make the semaphore's total (available + leased) `permits` (Redisson's
 * setPermits): the available count moves by the difference, possibly
 * below zero while more permits are leased than the new total; waiters
 * are woken.
 * @param permits 0 to RLOCK_MAX_PERMITS.
 * @return as rlock_semaphore_try_set_permits().
 */
RLOCK_EXTERN int rlock_psemaphore_set_permits(rlock_psemaphore *sem,
                                              int64_t permits);

/**
 * Add `delta` to the available permits (Redisson's addPermits; negative
 * takes away). Range and returns as rlock_semaphore_add_permits().
 */
RLOCK_EXTERN int rlock_psemaphore_add_permits(rlock_psemaphore *sem,
                                              int64_t delta);

/**
 * Take one permit, waiting at most `wait_ms` (Redisson's
 * tryAcquire(wait, lease)). One expired permit is given back first, as
 * Redisson's acquisition of one permit does.
 * @param id receives the permit's id, RLOCK_PERMIT_ID_LEN hex digits and
 *        '\0' (the caller's buffer of RLOCK_PERMIT_ID_LEN + 1 bytes);
 *        written only on RLOCK_OK.
 * @param wait_ms 0 to try once, a bound, or RLOCK_WAIT_FOREVER.
 * @param lease_ms RLOCK_LEASE_WATCHDOG: the client's watchdog timeout,
 *        renewed every third of it (Redisson's updateLeaseTime) until the
 *        permit is released, found lost, or the client freed; else 1 to
 *        RLOCK_MAX_DURATION_MS, after which the permit comes back by
 *        itself.
 * @param cancel a token that ends the wait, or NULL.
 * @return RLOCK_OK; RLOCK_ELOCKED (no permit within the wait);
 *         RLOCK_ECANCELED; RLOCK_EINVAL (NULL sem or id, a duration out of
 *         range, a loop client); RLOCK_EWRONGTYPE; RLOCK_EREPLICA (taken,
 *         no replica confirmed: given back); transport errors as
 *         rlock_lock_try_acquire (a permit the server granted on a broken
 *         connection comes back after its lease).
 */
RLOCK_EXTERN int rlock_psemaphore_acquire(char *id, rlock_psemaphore *sem,
                                          int64_t wait_ms, int64_t lease_ms,
                                          rlock_cancel *cancel);

/**
 * Give back the permit `id` (Redisson's release(id)) and wake waiters. Any
 * client may release any permit by its id; the acquiring client stops
 * renewing it (another client's watchdog finds it gone and reports it
 * lost). As Redisson's release, no other expired permit is given back,
 * and an expired permit still in the set is given back all the same (the
 * call then answers as for one no longer leased).
 * @param id RLOCK_PERMIT_ID_LEN hex digits (either case).
 * @return RLOCK_OK; RLOCK_ELOST (this client took the permit, and it
 *         expired, was released by someone else, or the key was deleted);
 *         RLOCK_ENOTHELD (no such permit is leased, and this client never
 *         took it); RLOCK_EINVAL
 *         (NULL argument, an id not of 32 hex digits); RLOCK_EWRONGTYPE;
 *         RLOCK_EREPLICA (released on the master only); transport errors
 *         (the client stops renewing the permit: it comes back after its
 *         lease).
 */
RLOCK_EXTERN int rlock_psemaphore_release(rlock_psemaphore *sem,
                                          const char *id);

/**
 * Give the permit `id` a new lease of `lease_ms` from now (Redisson's
 * updateLeaseTime). A permit the client's watchdog renews gets a fixed
 * lease and is renewed no more.
 * @param lease_ms 1 to RLOCK_MAX_DURATION_MS.
 * @return RLOCK_OK; RLOCK_ELOST / RLOCK_ENOTHELD as
 *         rlock_psemaphore_release(); RLOCK_EINVAL; RLOCK_EWRONGTYPE;
 *         transport errors (the lease is the old one or the new one).
 */
RLOCK_EXTERN int rlock_psemaphore_update_lease(rlock_psemaphore *sem,
                                               const char *id,
                                               int64_t lease_ms);

/**
 * Whether the permit `id`, taken by this client, is still good, answered
 * locally with no round trip, exactly as rlock_lock_check() answers for a
 * lock: RLOCK_OK while held; RLOCK_ELOST once the watchdog found it gone,
 * once its fixed lease ran out, or, with the watchdog, once a whole
 * watchdog timeout passed since the last confirmed renewal (monotonic
 * clock, from when each request was sent: it errs early). RLOCK_ENOTHELD
 * when this client holds no permit `id` of this semaphore (never took it,
 * or released it). RLOCK_EINVAL for NULL or a malformed id; RLOCK_ECLOSED
 * in a fork()ed child. Thread-safe; also on a loop client, from any
 * thread.
 */
RLOCK_EXTERN int rlock_psemaphore_check(rlock_psemaphore *sem, const char *id);

/**
 * The available permits, expired ones given back first (Redisson's
 * availablePermits: so it writes, and may wake waiters). 0 when absent.
 * @return RLOCK_OK; RLOCK_EINVAL; RLOCK_EWRONGTYPE; transport errors.
 */
RLOCK_EXTERN int rlock_psemaphore_available(int64_t *available,
                                            rlock_psemaphore *sem);

/**
 * The total: available plus leased (Redisson's getPermits; expired ones
 * given back first). 0 when the semaphore's key is absent.
 * @return as rlock_psemaphore_available().
 */
RLOCK_EXTERN int rlock_psemaphore_permits(int64_t *permits,
                                          rlock_psemaphore *sem);

/**
 * The remaining lease of the permit `id` in ms (Redisson's getLeaseTime;
 * expired permits given back first).
 * @return RLOCK_OK; RLOCK_ENOTHELD (no such permit leased); RLOCK_EINVAL;
 *         RLOCK_EWRONGTYPE; transport errors.
 */
RLOCK_EXTERN int rlock_psemaphore_lease_ms(int64_t *remaining_ms,
                                           rlock_psemaphore *sem,
                                           const char *id);

/** A snapshot of a permit-expirable semaphore (rlock_psemaphore_inspect). */
typedef struct rlock_permits_info rlock_permits_info;

/** Most leased permits a snapshot describes (the earliest deadlines). */
#define RLOCK_INSPECT_PERMITS 1000

/**
 * The semaphore's state in one atomic step, expired permits given back
 * first (as every operation does): available permits, the leased ones
 * with their ids and remaining leases, earliest deadline first (at most
 * RLOCK_INSPECT_PERMITS of them; rlock_permits_info_leased counts all).
 * For tools (`rlock status`).
 * @param out receives the snapshot; free it with rlock_permits_info_free().
 * @return RLOCK_OK; RLOCK_EINVAL (NULL argument, a loop client);
 *         RLOCK_EWRONGTYPE; RLOCK_ENOMEM; transport errors.
 */
RLOCK_EXTERN int rlock_psemaphore_inspect(rlock_permits_info **out,
                                          rlock_psemaphore *sem);

/** Available permits in the snapshot (0 when the semaphore's key was
 * absent, or info is NULL). */
RLOCK_EXTERN int64_t
rlock_permits_info_available(const rlock_permits_info *info);
/** Permits leased when the snapshot was taken (all of them, also past
 * RLOCK_INSPECT_PERMITS); 0 when info is NULL. */
RLOCK_EXTERN size_t rlock_permits_info_leased(const rlock_permits_info *info);
/** Leased permits the snapshot describes (min(leased,
 * RLOCK_INSPECT_PERMITS)). */
RLOCK_EXTERN size_t rlock_permits_info_count(const rlock_permits_info *info);
/** Permit `i`'s id (RLOCK_PERMIT_ID_LEN hex digits), or NULL when out of
 * range. Borrowed: valid as long as the snapshot. */
RLOCK_EXTERN const char *rlock_permits_info_id(const rlock_permits_info *info,
                                               size_t i);
/** Permit `i`'s remaining lease in ms at the snapshot (by the semaphore's
 * deadlines against this client's wall clock: PROTOCOL.md); -1 for a
 * permit without a lease (Redisson's acquire without one); 0 when out of
 * range. */
RLOCK_EXTERN int64_t rlock_permits_info_lease_ms(const rlock_permits_info *info,
                                                 size_t i);
/** Free a snapshot. NULL is ignored. */
RLOCK_EXTERN void rlock_permits_info_free(rlock_permits_info *info);

/* ---- Loop clients (rlock/loop.h) -------------------------------------- */
/*
 * The _async forms of the calls above for a loop client: same arguments,
 * checks and statuses, the status coming as the callback's `rc` (argument
 * errors found before anything is queued are returned at once, and then
 * the callback never runs). `value` is as stated for each, else 0.
 */

/** rlock_semaphore_acquire() on the loop. Cancel it with
 * rlock_op_cancel() (`op` as rlock_lock_acquire_async's). */
RLOCK_EXTERN int rlock_semaphore_acquire_async(rlock_semaphore *sem,
                                               int64_t permits, int64_t wait_ms,
                                               rlock_async_fn cb, void *arg,
                                               rlock_op **op);
/** rlock_semaphore_release(). */
RLOCK_EXTERN int rlock_semaphore_release_async(rlock_semaphore *sem,
                                               int64_t permits,
                                               rlock_async_fn cb, void *arg);
/** rlock_semaphore_try_set_permits(); value 1 when set, else 0. */
RLOCK_EXTERN int rlock_semaphore_try_set_permits_async(rlock_semaphore *sem,
                                                       int64_t permits,
                                                       rlock_async_fn cb,
                                                       void *arg);
/** rlock_semaphore_set_permits(). */
RLOCK_EXTERN int rlock_semaphore_set_permits_async(rlock_semaphore *sem,
                                                   int64_t permits,
                                                   rlock_async_fn cb,
                                                   void *arg);
/** rlock_semaphore_add_permits(). */
RLOCK_EXTERN int rlock_semaphore_add_permits_async(rlock_semaphore *sem,
                                                   int64_t delta,
                                                   rlock_async_fn cb,
                                                   void *arg);
/** rlock_semaphore_available(); value the count. */
RLOCK_EXTERN int rlock_semaphore_available_async(rlock_semaphore *sem,
                                                 rlock_async_fn cb, void *arg);
/** rlock_semaphore_drain(); value the permits taken. */
RLOCK_EXTERN int rlock_semaphore_drain_async(rlock_semaphore *sem,
                                             rlock_async_fn cb, void *arg);

/**
 * Completion of a permit acquisition: `id` (RLOCK_PERMIT_ID_LEN hex
 * digits, borrowed for the call: copy it) when rc is RLOCK_OK, else NULL.
 */
typedef void (*rlock_permit_fn)(void *arg, int rc, const char *id);

/** rlock_psemaphore_acquire() on the loop; a watchdog permit is renewed on
 * the loop. Cancel with rlock_op_cancel() (a grant arriving meanwhile is
 * given back). */
RLOCK_EXTERN int rlock_psemaphore_acquire_async(rlock_psemaphore *sem,
                                                int64_t wait_ms,
                                                int64_t lease_ms,
                                                rlock_permit_fn cb, void *arg,
                                                rlock_op **op);
/** rlock_psemaphore_release(); `id` copied. */
RLOCK_EXTERN int rlock_psemaphore_release_async(rlock_psemaphore *sem,
                                                const char *id,
                                                rlock_async_fn cb, void *arg);
/** rlock_psemaphore_update_lease(); `id` copied. */
RLOCK_EXTERN int rlock_psemaphore_update_lease_async(rlock_psemaphore *sem,
                                                     const char *id,
                                                     int64_t lease_ms,
                                                     rlock_async_fn cb,
                                                     void *arg);
/** rlock_psemaphore_try_set_permits(); value 1 when set, else 0. */
RLOCK_EXTERN int rlock_psemaphore_try_set_permits_async(rlock_psemaphore *sem,
                                                        int64_t permits,
                                                        rlock_async_fn cb,
                                                        void *arg);
/** rlock_psemaphore_set_permits(). */
RLOCK_EXTERN int rlock_psemaphore_set_permits_async(rlock_psemaphore *sem,
                                                    int64_t permits,
                                                    rlock_async_fn cb,
                                                    void *arg);
/** rlock_psemaphore_add_permits(). */
RLOCK_EXTERN int rlock_psemaphore_add_permits_async(rlock_psemaphore *sem,
                                                    int64_t delta,
                                                    rlock_async_fn cb,
                                                    void *arg);
/** rlock_psemaphore_available(); value the count. */
RLOCK_EXTERN int rlock_psemaphore_available_async(rlock_psemaphore *sem,
                                                  rlock_async_fn cb, void *arg);
/** rlock_psemaphore_permits(); value the total. */
RLOCK_EXTERN int rlock_psemaphore_permits_async(rlock_psemaphore *sem,
                                                rlock_async_fn cb, void *arg);
/** rlock_psemaphore_lease_ms(); value the remaining ms. */
RLOCK_EXTERN int rlock_psemaphore_lease_ms_async(rlock_psemaphore *sem,
                                                 const char *id,
                                                 rlock_async_fn cb, void *arg);

/** Completion of an inspection: `info` (the callback's to free, with
 * rlock_permits_info_free()) when rc is RLOCK_OK, else NULL. */
typedef void (*rlock_permits_fn)(void *arg, int rc, rlock_permits_info *info);

/** rlock_psemaphore_inspect() on the loop. */
RLOCK_EXTERN int rlock_psemaphore_inspect_async(rlock_psemaphore *sem,
                                                rlock_permits_fn cb, void *arg);

RLOCK_END_DECLS

#endif /* RLOCK_SEMAPHORE_H */
