/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlock/lock.h - the reentrant lock, wire-compatible with Redisson's RLock.
 *
 * Layout in Redis (shared with Java programs using Redisson): a hash at the
 * lock's name whose one field "<client id>:<owner>" holds the hold count,
 * with a PEXPIRE lease; the final release publishes "0" on
 * "redisson_lock__channel:{<name>}" (for a name that has its own "{tag}",
 * "redisson_lock__channel:<name>": derived names keep the name's tag).
 * docs/PROTOCOL.md lists every key, field, channel and script.
 *
 * Owners: a hold belongs to an owner, a 64-bit number written after the
 * client id in the hash field ("<client id>:<owner>", which Redisson reads
 * as a Java thread id). By default the owner is the calling thread: the
 * thread that acquires is the one that must release, and a thread that
 * already holds the lock acquires it again at once (the hold count goes
 * up). Each thread's number is handed out on first use from a process-wide
 * counter and never reused, so a thread created after another exited never
 * inherits its holds (Linux thread ids are reused; owner numbers are not).
 * When a thread exits holding locks, their holds are abandoned: the
 * watchdog stops renewing them, so each lock expires within its lease, and
 * no other owner can release them (rlock_lock_force_release can). The
 * lost-lock callback is not called for them.
 *
 * Explicit owners: event loops, coroutines and thread pools can pass an
 * owner of their own (rlock_acquire_options.owner, and the *_owner
 * functions) and acquire on one thread, release on another. Take numbers
 * from rlock_owner_new(), which never collides with a thread's; any other
 * non-zero number is used as given (say, to act for a Java thread id).
 * Two owners exclude each other even on one thread. An explicit owner's
 * watchdog holds are renewed until released or until the client is freed.
 * A lock object carries no per-owner state, so one object may be shared by
 * any number of threads.
 *
 * Leases: a lock acquired with lease_ms == RLOCK_LEASE_WATCHDOG gets the
 * client's watchdog timeout as its lease and is renewed by the client's
 * background thread (a loop client's: on its loop, loop.h) every third of
 * it until the final release. A lock
 * acquired with an explicit lease expires after it, held or not.
 *
 * Waiting: a thread (or a loop client's operation) that has to wait
 * subscribes to the lock's channel and sleeps until an unlock message or
 * the holder's remaining lease runs out, whichever is first; it never
 * polls.
 *
 * Names: 1 to RLOCK_MAX_NAME_LEN bytes. A name containing '{' or '}' must
 * contain a non-empty hash tag ("{tag}") so that the lock's channel and
 * derived keys land in the same Redis Cluster slot as the lock.
 *
 * What counts as a lock: every lock, whoever wrote it (rlock, Redisson,
 * another port), is a hash with a lease (an expiry) whose fields are
 * positive integer hold counts, plus "mode" = "read"|"write" for a
 * read-write lock; owner ids themselves are not judged. A key that is
 * anything else (another type, a hash without an expiry, a field that is
 * not a count) is never written or deleted: every operation on it returns
 * RLOCK_EWRONGTYPE. So does one that mixes families on one name: a
 * reentrant or fair lock where a read-write lock is held, or the reverse
 * (Redisson lets both in; rlock refuses).
 */
#ifndef RLOCK_LOCK_H
#define RLOCK_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "export.h"

RLOCK_BEGIN_DECLS

typedef struct rlock_lock rlock_lock;
typedef struct rlock_lock_info rlock_lock_info;
typedef struct rlock_cancel rlock_cancel;

/** Longest lock name accepted, in bytes. */
#define RLOCK_MAX_NAME_LEN 1024
/** wait_ms value meaning "wait for as long as it takes". */
#define RLOCK_WAIT_FOREVER ((int64_t)-1)
/** lease_ms value meaning "no fixed lease: the watchdog renews it". */
#define RLOCK_LEASE_WATCHDOG ((int64_t)0)

/** `owner` value meaning "the calling thread" (every short form uses it). */
#define RLOCK_OWNER_THREAD ((uint64_t)0)

/**
 * An owner number never used before in this process, by a thread or by an
 * earlier call: for holds that belong to a task rather than a thread.
 * Thread-safe; never returns RLOCK_OWNER_THREAD.
 */
RLOCK_EXTERN uint64_t rlock_owner_new(void);

/** The calling thread's owner number (what RLOCK_OWNER_THREAD stands for). */
RLOCK_EXTERN uint64_t rlock_owner_thread(void);

/**
 * Options for an acquisition, one struct for every lock kind, MultiLock
 * and RedLock. Initialise with RLOCK_ACQUIRE_OPTIONS_INIT or
 * rlock_acquire_options_init() so that a program built against this
 * header keeps working when later versions append fields: the library
 * reads (and rlock_acquire_options_init writes) only the fields of the
 * struct's `version`, and gives later fields their defaults.
 */
typedef struct rlock_acquire_options {
  /** RLOCK_ACQUIRE_OPTIONS_VERSION: which fields the caller knows. */
  unsigned int version;
  /** 0 to try once, a bound in ms, or RLOCK_WAIT_FOREVER (the default). */
  int64_t wait_ms;
  /** RLOCK_LEASE_WATCHDOG (the default) or 1 to RLOCK_MAX_DURATION_MS. */
  int64_t lease_ms;
  /** Give up when this token fires (RLOCK_ECANCELED); NULL: never. */
  rlock_cancel *cancel;
  /** Who holds: RLOCK_OWNER_THREAD (the default) or any other number. */
  uint64_t owner;
  /** Out, fenced locks only: receives the fencing token of this
   * acquisition. NULL (the default): not wanted. */
  int64_t *token;
} rlock_acquire_options;

/** The version of rlock_acquire_options this header describes. */
#define RLOCK_ACQUIRE_OPTIONS_VERSION 1

/** Defaults: wait for ever, watchdog lease, no cancel token, the calling
 * thread, no token wanted. */
#define RLOCK_ACQUIRE_OPTIONS_INIT                                             \
  {                                                                            \
    RLOCK_ACQUIRE_OPTIONS_VERSION, RLOCK_WAIT_FOREVER, RLOCK_LEASE_WATCHDOG,   \
        NULL, RLOCK_OWNER_THREAD, NULL                                         \
  }

/**
 * Fill `opts` with the defaults of RLOCK_ACQUIRE_OPTIONS_INIT.
 * @param version RLOCK_ACQUIRE_OPTIONS_VERSION.
 * @return RLOCK_OK, or RLOCK_EINVAL when opts is NULL or the version is
 *         not one this library knows.
 */
RLOCK_EXTERN int rlock_acquire_options_init(rlock_acquire_options *opts,
                                            unsigned int version);

/**
 * Create a lock object for `name` on `client`. Does no I/O.
 * @param out receives the lock; free it with rlock_lock_free() before the
 *            client is freed (a loop client's lock with operations
 *            pending: after it, see client.h).
 * @param name copied.
 * @return RLOCK_OK, RLOCK_EINVAL (NULL argument, bad name) or RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_lock_new(rlock_lock **out, rlock_client *client,
                                const char *name);

/**
 * Create a fair lock object for `name`: the same operations as a lock made
 * by rlock_lock_new(), but waiters acquire in the order they arrived
 * (Redisson's RFairLock). Waiters queue in "redisson_lock_queue:{<name>}"
 * with deadlines in "redisson_lock_timeout:{<name>}" (epoch ms, so hosts
 * sharing a fair lock need synchronised clocks); a release notifies only
 * the head waiter, on "redisson_lock__channel:{<name>}:<owner>". A try with
 * wait 0 never queues; a waiter that gives up leaves the queue at once.
 * Its force release also wakes waiters of a non-fair lock of the same
 * name, and its inspection also shows holders of one, so tools may use a
 * fair lock object for any lock. Does no I/O. Same return codes as
 * rlock_lock_new().
 */
RLOCK_EXTERN int rlock_lock_new_fair(rlock_lock **out, rlock_client *client,
                                     const char *name);

/**
 * Create the read half of the read-write lock `name` (Redisson's
 * RReadWriteLock.readLock()): any number of threads may hold it at once,
 * unless a writer holds the write half. Layout: a hash at `name` with
 * "mode" = "read"|"write", "<owner>" = read hold count and
 * "<owner>:write" = write hold count, plus one key per read hold,
 * "{<name>}:<owner>:rwlock_timeout:<i>", with that hold's lease (so a
 * crashed reader's holds expire while others keep theirs renewed); channel
 * "redisson_rwlock:{<name>}". The writer may also take read holds; on its
 * last write release the lock becomes a read lock it still holds.
 * Does no I/O. Same return codes as rlock_lock_new().
 */
RLOCK_EXTERN int rlock_lock_new_read(rlock_lock **out, rlock_client *client,
                                     const char *name);

/**
 * Create the write half of the read-write lock `name` (Redisson's
 * RReadWriteLock.writeLock()): one thread at a time, and no readers
 * meanwhile (see rlock_lock_new_read for the layout). Re-acquiring adds
 * the new lease to what is left, as Redisson does. A thread that holds
 * read holds on the lock cannot take the write half: acquiring returns
 * RLOCK_EDEADLK at once (Redisson waits on itself for ever). Its hold
 * count and is-held answers concern the write hold. Does no I/O.
 */
RLOCK_EXTERN int rlock_lock_new_write(rlock_lock **out, rlock_client *client,
                                      const char *name);

/**
 * Create a non-reentrant lock object for `name` (Redisson 4.4's
 * RedissonNonReentrantLock): the lock of rlock_lock_new() (same hash,
 * channel and waiting; Java clients of either kind share it), except that
 * an owner that holds it and asks again is refused at once with
 * RLOCK_EHELD, nothing written: not a wait, not a deadlock, as Redisson
 * refuses it (NON_REENTRANT_REACQUIRE). Other owners wait for it as
 * usual. Does no I/O. Same return codes as rlock_lock_new().
 */
RLOCK_EXTERN int rlock_lock_new_nonreentrant(rlock_lock **out,
                                             rlock_client *client,
                                             const char *name);

/**
 * The fair lock of rlock_lock_new_fair(), non-reentrant (Redisson 4.4's
 * RedissonNonReentrantFairLock): a re-entry by the holder is refused with
 * RLOCK_EHELD, nothing written or queued.
 */
RLOCK_EXTERN int rlock_lock_new_fair_nonreentrant(rlock_lock **out,
                                                  rlock_client *client,
                                                  const char *name);

/**
 * Create a fenced lock object for `name` (Redisson's RFencedLock): a
 * reentrant lock (same hash, channel and waiting; it excludes a reentrant
 * lock of the same name) whose every acquisition, re-entries included,
 * increments the counter "redisson_lock_token:{<name>}" and returns the
 * new value as its fencing token (rlock_acquire_options.token). Tokens
 * only ever grow, across clients and processes, so a resource that
 * remembers the highest token it has seen can refuse a stale holder: one
 * paused past its lease while another owner took the lock. The counter has
 * no expiry and survives releases. Does no I/O. Same return codes as
 * rlock_lock_new().
 */
RLOCK_EXTERN int rlock_lock_new_fenced(rlock_lock **out, rlock_client *client,
                                       const char *name);

/**
 * The latest fencing token issued for the lock's name (0 when none ever
 * was): while the calling owner holds the lock, that is its own token.
 * Any kind of lock object may ask.
 * @return RLOCK_OK; RLOCK_EWRONGTYPE when the token key is not a counter;
 *         RLOCK_EIO, ...
 */
RLOCK_EXTERN int rlock_lock_token(int64_t *token, rlock_lock *lock);

/**
 * Create a spin lock object for `name` (Redisson's RSpinLock): the
 * reentrant lock's layout (it excludes a reentrant lock of the same name,
 * from rlock or Redisson), but a waiter never subscribes: it retries after
 * an exponential back-off with jitter, from 1 ms doubling up to 128 ms
 * (Redisson's default; rlock_lock_new_spin_opts chooses another),
 * bounded by the holder's remaining lease and the wait. For servers or
 * proxies without pub/sub, and for many short waits where a subscription
 * costs more than a few retries. Its release still publishes the unlock
 * message, so waiters on a reentrant lock of the same name wake at once.
 * Does no I/O. Same return codes as rlock_lock_new().
 */
RLOCK_EXTERN int rlock_lock_new_spin(rlock_lock **out, rlock_client *client,
                                     const char *name);

/** How a spin lock's waiter backs off between attempts (Redisson's
 * LockOptions back-offs). */
typedef enum rlock_spin_backoff {
  /** Redisson's ExponentialBackOff (the default): the first pause is
   * initial_ms; each next one is the last times multiplier, plus, with
   * jitter, a random 0 to n-1 ms after the n-th failed attempt (so
   * waiters that started together drift apart), at most max_ms (once
   * there, it stays there, without jitter). */
  RLOCK_SPIN_EXPONENTIAL = 0,
  /** Redisson's ConstantBackOff: every pause is delay_ms, no jitter. */
  RLOCK_SPIN_CONSTANT = 1
} rlock_spin_backoff;

/**
 * A spin lock's options (rlock_lock_new_spin_opts). Initialise with
 * RLOCK_SPIN_OPTIONS_INIT or rlock_spin_options_init() so that a program
 * built against this header keeps working when later versions append
 * fields. Every field is checked, whichever back-off is chosen. Each
 * pause is still cut short by the holder's remaining lease and the wait.
 */
typedef struct rlock_spin_options {
  /** RLOCK_SPIN_OPTIONS_VERSION: which fields the caller knows. */
  unsigned int version;
  /** RLOCK_SPIN_EXPONENTIAL (default) or RLOCK_SPIN_CONSTANT. */
  int backoff;
  /** Exponential: the first pause, 1 ms to RLOCK_MAX_DURATION_MS.
   * Default 1 (Redisson's initialDelay). */
  int64_t initial_ms;
  /** Exponential: the longest pause, initial_ms to RLOCK_MAX_DURATION_MS.
   * Default 128 (Redisson's maxDelay). */
  int64_t max_ms;
  /** Exponential: growth of each pause, 1 to 1000 (1: no growth but the
   * jitter). Default 2 (Redisson's multiplier, which takes whole numbers
   * only). */
  double multiplier;
  /** Exponential: 1 (default) adds Redisson's growing random jitter, 0
   * none (pauses exactly as computed). */
  int jitter;
  /** Constant: the pause, 1 ms to RLOCK_MAX_DURATION_MS. Default 64
   * (Redisson's ConstantBackOff delay). */
  int64_t delay_ms;
} rlock_spin_options;

/** The version of rlock_spin_options this header describes. */
#define RLOCK_SPIN_OPTIONS_VERSION 1

/** Defaults: Redisson's: exponential, 1 ms doubling to 128 ms, with
 * jitter; 64 ms for the constant back-off. */
#define RLOCK_SPIN_OPTIONS_INIT                                                \
  { RLOCK_SPIN_OPTIONS_VERSION, RLOCK_SPIN_EXPONENTIAL, 1, 128, 2.0, 1, 64 }

/**
 * Fill `opts` with the defaults of RLOCK_SPIN_OPTIONS_INIT.
 * @param version RLOCK_SPIN_OPTIONS_VERSION.
 * @return RLOCK_OK, or RLOCK_EINVAL when opts is NULL or the version is
 *         not one this library knows.
 */
RLOCK_EXTERN int rlock_spin_options_init(rlock_spin_options *opts,
                                         unsigned int version);

/**
 * Create a spin lock object (rlock_lock_new_spin) whose waiters back off
 * as `opts` says, on blocking and loop clients alike. The options are
 * copied. Does no I/O.
 * @param opts NULL for the defaults (then this is rlock_lock_new_spin).
 * @return RLOCK_OK; RLOCK_EINVAL (NULL argument, bad name, an unknown
 *         version or back-off, a delay below 1 ms or above
 *         RLOCK_MAX_DURATION_MS, max_ms below initial_ms, a multiplier
 *         outside 1..1000, jitter other than 0 or 1), with a message
 *         naming the field; RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_lock_new_spin_opts(rlock_lock **out,
                                          rlock_client *client,
                                          const char *name,
                                          const rlock_spin_options *opts);

/**
 * Free a lock object. Holds taken through it are not released (they are
 * held by the thread, not the object). NULL is accepted and ignored.
 */
RLOCK_EXTERN void rlock_lock_free(rlock_lock *lock);

/** The lock's name. Borrowed: valid as long as the lock object. */
RLOCK_EXTERN const char *rlock_lock_name(const rlock_lock *lock);

/**
 * Acquire, waiting as long as it takes, with a watchdog-renewed lease.
 * Same as rlock_lock_try_acquire(lock, RLOCK_WAIT_FOREVER,
 * RLOCK_LEASE_WATCHDOG).
 */
RLOCK_EXTERN int rlock_lock_acquire(rlock_lock *lock);

/**
 * Acquire, waiting as long as it takes, with a fixed lease.
 * Same as rlock_lock_try_acquire(lock, RLOCK_WAIT_FOREVER, lease_ms): a
 * lease of RLOCK_LEASE_WATCHDOG (0) makes it rlock_lock_acquire().
 */
RLOCK_EXTERN int rlock_lock_acquire_lease(rlock_lock *lock, int64_t lease_ms);

/**
 * Acquire, waiting at most `wait_ms`.
 *
 * @param wait_ms 0 to try once, a positive bound, or RLOCK_WAIT_FOREVER.
 * @param lease_ms RLOCK_LEASE_WATCHDOG, or a lease of 1 ms to
 *                 RLOCK_MAX_DURATION_MS after which the lock expires.
 *                 Re-acquiring resets the lease to the new value.
 * @return RLOCK_OK when the calling thread now holds the lock (once more);
 *         RLOCK_ELOCKED when another owner held it for the whole wait;
 *         RLOCK_EINVAL for NULL, a bad duration or a loop client;
 *         RLOCK_EWRONGTYPE when the key holds something that is not a
 *         lock; RLOCK_EDEADLK when a write lock's caller holds read holds
 *         on it; RLOCK_EHELD when a non-reentrant lock's holder asks
 *         again; RLOCK_EREPLICA when no replica confirmed the grant (it
 *         was given back, rlock_config_set_replica_sync); RLOCK_EAUTH
 *         when the login or an ACL right is refused; RLOCK_ECLOSED in a
 *         fork()ed child; RLOCK_EIO / RLOCK_ETIMEOUT when the server
 *         cannot be reached (if the connection broke after the request
 *         was sent, the server may still have granted the lock: it then
 *         expires with its lease).
 *
 * A wait (wait_ms != 0) rides out an outage, from its first attempt on:
 * attempts that reach no server (connection refused, connect timeout, a
 * restarting server's LOADING) are made again after a pause, 25 ms
 * doubling to 1 s, until the server answers, the wait ends, the client's
 * unreachable retry bound passes (rlock_config_set_unreachable_retry_ms;
 * by default as long as the wait lasts) or the cancel token fires; then
 * RLOCK_EIO or RLOCK_ETIMEOUT, saying how long it tried. So a wait
 * begun while the server restarts, or before it has come up, takes the
 * lock once it answers. An attempt that failed after it was sent is not
 * repeated (unless a read shows it took nothing). A host name that does
 * not resolve, a refused login (RLOCK_EAUTH), a TLS certificate that
 * fails verification, a TLS handshake the server never answers (a
 * plain-text port behind rediss://) and a Sentinel master name no
 * sentinel knows are reported at once, as is any failure when wait_ms
 * is 0.
 *
 * The wait bounds the whole call, whatever the server does: a call with
 * wait_ms > 0 returns by the wait plus at most 200 ms (100 ms for an
 * answer already under way, 100 ms to leave a fair lock's queue or give
 * back what it could not keep), even against a server that accepts
 * connections and never answers (then RLOCK_ETIMEOUT, "no answer within
 * the time the caller gave"); a single try (wait_ms 0) within one command
 * timeout (the connect timeout, when longer). A wait for ever is bounded
 * by nothing but each command's own timeout. An attempt cut short this
 * way may still be run by the server later: the lock then expires with
 * its lease.
 */
RLOCK_EXTERN int rlock_lock_try_acquire(rlock_lock *lock, int64_t wait_ms,
                                        int64_t lease_ms);

/**
 * rlock_lock_try_acquire(), giving up early when `cancel` fires.
 *
 * @param cancel a token from rlock_cancel_new(), or NULL (then this is
 *               exactly rlock_lock_try_acquire()).
 * @return as rlock_lock_try_acquire(), plus RLOCK_ECANCELED when the
 *         token fired before the call returned (also when it had fired
 *         before the call): nothing is then held, and a fair-lock waiter
 *         has left the queue (a grant the server sent as the token fired
 *         is given back).
 */
RLOCK_EXTERN int rlock_lock_try_acquire_cancel(rlock_lock *lock,
                                               int64_t wait_ms,
                                               int64_t lease_ms,
                                               rlock_cancel *cancel);

/**
 * Acquire with options (see rlock_acquire_options); every other acquire
 * function is a short form of this one.
 * @param opts NULL for the defaults (wait for ever, watchdog lease, the
 *             calling thread).
 * @return as rlock_lock_try_acquire_cancel(); RLOCK_EINVAL also for an
 *         unknown options version, or a token asked of a lock that is not
 *         fenced. On success *opts->token (when asked) is set.
 */
RLOCK_EXTERN int rlock_lock_acquire_opts(rlock_lock *lock,
                                         const rlock_acquire_options *opts);

/**
 * Create a cancel token: a flag that makes waits using it give up.
 * @param out receives the token; free it with rlock_cancel_free() once no
 *            call uses it.
 * @return RLOCK_OK, RLOCK_EINVAL (out is NULL) or RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_cancel_new(rlock_cancel **out);

/** Free a token no call uses any more. NULL is accepted and ignored. */
RLOCK_EXTERN void rlock_cancel_free(rlock_cancel *cancel);

/**
 * Fire the token: every wait using it returns RLOCK_ECANCELED within about
 * 20 ms, also one connecting or waiting for a reply; a reply already due
 * is waited for 50 ms more, so a grant that was on its way is read and
 * given back; against a server that does not answer, the call still
 * returns within about 150 ms. Safe from any thread and from a signal
 * handler. Stays fired until reset.
 */
RLOCK_EXTERN void rlock_cancel_fire(rlock_cancel *cancel);

/** Clear a fired token so it can be used again. */
RLOCK_EXTERN void rlock_cancel_reset(rlock_cancel *cancel);

/** 1 if the token has fired (and not been reset), else 0. */
RLOCK_EXTERN int rlock_cancel_fired(const rlock_cancel *cancel);

/**
 * Release one hold of the calling thread. The last release deletes the
 * lock, stops its renewal and wakes one waiter.
 *
 * @return RLOCK_OK;
 *         RLOCK_ENOTHELD when the calling thread does not hold it (nothing
 *         changes on the server);
 *         RLOCK_ELOST when this thread held it but it expired or was
 *         deleted meanwhile (the thread's local record is cleared);
 *         RLOCK_EWRONGTYPE when the key now holds something that is not a
 *         lock (left untouched; the local record is cleared);
 *         RLOCK_EREPLICA when no replica confirmed the release (it
 *         happened on the master);
 *         RLOCK_EINVAL for NULL or a loop client; RLOCK_ECLOSED in a
 *         fork()ed child;
 *         RLOCK_EIO / RLOCK_ETIMEOUT when the server cannot be reached (the
 *         lock is no longer renewed and expires after its lease; taken
 *         again by the same owner meanwhile, the release that leaves the
 *         owner no hold here takes that level off too: the lock is
 *         deleted unless other holds keep it, another reader's or the
 *         same owner's other half of a read-write lock).
 */
RLOCK_EXTERN int rlock_lock_release(rlock_lock *lock);

/** rlock_lock_release() for the holds of `owner` (RLOCK_OWNER_THREAD: the
 * calling thread's), from any thread. */
RLOCK_EXTERN int rlock_lock_release_owner(rlock_lock *lock, uint64_t owner);

/**
 * Delete the lock whoever holds it and wake one waiter (a fair lock
 * object: a lock of any kind, waking its waiters wherever they listen).
 * @param deleted if not NULL, receives 1 when a lock was deleted, 0 when
 *                there was none.
 * @return RLOCK_OK, RLOCK_EWRONGTYPE (the key is not a lock of this
 *         family: left untouched), RLOCK_EIO, ...
 */
RLOCK_EXTERN int rlock_lock_force_release(int *deleted, rlock_lock *lock);

/**
 * Whether the calling thread's hold is still good, answered locally with
 * no round trip: RLOCK_OK while it holds the lock; RLOCK_ELOST once the
 * watchdog found the hold gone, once a fixed lease has run out, or, for a
 * watchdog hold, once a whole watchdog lease has passed since the last
 * confirmed renewal (renewals failing, or not sent for want of a connection
 * or of memory: the server may have let it expire).
 * Times are on the monotonic clock from when the acquisition or renewal
 * was sent, so it errs on the early side. Once RLOCK_ELOST, it stays so
 * until the hold is released. RLOCK_ENOTHELD when it holds nothing here;
 * RLOCK_EINVAL for NULL; RLOCK_ECLOSED in a fork()ed child (the records
 * are the parent's).
 */
RLOCK_EXTERN int rlock_lock_check(rlock_lock *lock);

/** rlock_lock_check() for the holds of `owner`. */
RLOCK_EXTERN int rlock_lock_check_owner(rlock_lock *lock, uint64_t owner);

/**
 * Give the calling thread's hold of a lock taken with a fixed lease a
 * fresh one: it now expires `lease_ms` from now (every fixed-lease level of
 * the hold; redis-py's reacquire(), or extend() with replace_ttl). One
 * round trip; the server sets the lease only while the hold is still
 * there, so a hold that expired or was force-released is never re-created.
 * @param lease_ms 1 ms to RLOCK_MAX_DURATION_MS.
 * @return RLOCK_OK; RLOCK_ENOTHELD when the thread holds no level of it;
 *         RLOCK_ELOST when the hold was lost (its lease ran out, or the
 *         server no longer has it); RLOCK_EINVAL for a lease out of range
 *         or a hold only the watchdog renews (it needs no extension);
 *         RLOCK_EIO / RLOCK_ETIMEOUT when the server cannot be reached
 *         (the hold keeps the lease it had, or the new one: the answer
 *         was lost).
 */
RLOCK_EXTERN int rlock_lock_extend(rlock_lock *lock, int64_t lease_ms);

/** rlock_lock_extend() for the holds of `owner`. */
RLOCK_EXTERN int rlock_lock_extend_owner(rlock_lock *lock, uint64_t owner,
                                         int64_t lease_ms);

/** Whether anyone holds the lock: *locked = 1 or 0. RLOCK_EWRONGTYPE when
 * the key is not a lock. */
RLOCK_EXTERN int rlock_lock_is_locked(int *locked, rlock_lock *lock);

/** Whether the calling thread holds the lock: *held = 1 or 0. */
RLOCK_EXTERN int rlock_lock_is_held(int *held, rlock_lock *lock);

/** The calling thread's hold count on the server (0 when not held). */
RLOCK_EXTERN int rlock_lock_hold_count(int64_t *count, rlock_lock *lock);

/** rlock_lock_is_held() for `owner`. */
RLOCK_EXTERN int rlock_lock_is_held_owner(int *held, rlock_lock *lock,
                                          uint64_t owner);

/** rlock_lock_hold_count() for `owner`. */
RLOCK_EXTERN int rlock_lock_hold_count_owner(int64_t *count, rlock_lock *lock,
                                             uint64_t owner);

/**
 * The lock's remaining time to live in milliseconds: -2 when it is not
 * locked. (A hash with no expiry is not a lock: RLOCK_EWRONGTYPE.)
 */
RLOCK_EXTERN int rlock_lock_ttl(int64_t *ttl_ms, rlock_lock *lock);

/**
 * Read the lock's whole state in one atomic step: its TTL and every holder
 * with its hold count. Any lock layout is shown (a read-write lock through
 * a reentrant lock object too); a key that is not a lock gives
 * RLOCK_EWRONGTYPE.
 * @param out receives a snapshot; free it with rlock_lock_info_free().
 * @return RLOCK_OK, RLOCK_EWRONGTYPE, RLOCK_EIO, ...
 */
RLOCK_EXTERN int rlock_lock_inspect(rlock_lock_info **out, rlock_lock *lock);

/** 1 if the snapshot saw the lock's key, else 0. (For a read-write lock
 * see rlock_lock_info_mode: the key exists in either mode.) */
RLOCK_EXTERN int rlock_lock_info_locked(const rlock_lock_info *info);
/** A read-write lock's mode in the snapshot, "read" or "write"; NULL for
 * other locks and when it was free. Borrowed. */
RLOCK_EXTERN const char *rlock_lock_info_mode(const rlock_lock_info *info);
/** The server that answered the snapshot, "host:port" (or a unix socket
 * path): in a cluster, the master of the lock's slot; behind Sentinel, the
 * master. Borrowed; NULL when info is NULL. */
RLOCK_EXTERN const char *rlock_lock_info_node(const rlock_lock_info *info);
/** TTL in ms at the time of the snapshot (-2 when absent). */
RLOCK_EXTERN int64_t rlock_lock_info_ttl_ms(const rlock_lock_info *info);
/** Number of holders in the snapshot (0 or 1 for a reentrant or fair lock;
 * for a read-write lock each reader, and the writer, whose owner field
 * ends in ":write"). */
RLOCK_EXTERN size_t rlock_lock_info_holder_count(const rlock_lock_info *info);
/** Owner field of holder `i`, or NULL when out of range. Borrowed. */
RLOCK_EXTERN const char *
rlock_lock_info_holder_owner(const rlock_lock_info *info, size_t i);
/** Hold count of holder `i`, or 0 when out of range. */
RLOCK_EXTERN int64_t rlock_lock_info_holder_holds(const rlock_lock_info *info,
                                                  size_t i);
/** Number of queued waiters in the snapshot (fair locks; else 0). */
RLOCK_EXTERN size_t rlock_lock_info_queue_count(const rlock_lock_info *info);
/** Owner field of queued waiter `i` (0 = next in line), or NULL. Borrowed. */
RLOCK_EXTERN const char *
rlock_lock_info_queue_owner(const rlock_lock_info *info, size_t i);
/** Milliseconds left before waiter `i`'s deadline in the queue (past it, a
 * waiter is dropped when the queue is next touched); 0 when out of range. */
RLOCK_EXTERN int64_t
rlock_lock_info_queue_deadline_ms(const rlock_lock_info *info, size_t i);
/** Free a snapshot. NULL is accepted and ignored. */
RLOCK_EXTERN void rlock_lock_info_free(rlock_lock_info *info);

/** How many waiters a fair lock's queue held when the snapshot was taken:
 * rlock_lock_info_queue_count() for rlock_lock_inspect(), which reads the
 * whole queue; possibly more for a snapshot from rlock_client_list_locks(),
 * which describes only the first RLOCK_LIST_WAITERS. 0 for other locks
 * and when info is NULL. */
RLOCK_EXTERN size_t rlock_lock_info_queue_length(const rlock_lock_info *info);

/** Queued waiters a snapshot from rlock_client_list_locks() describes at
 * most, per fair lock (the first in line). */
#define RLOCK_LIST_WAITERS 10

/**
 * Called by rlock_client_list_locks() for each lock found, on the thread
 * that called it, with no library lock held and no connection borrowed:
 * it may use any function on the same client (rlock_lock_inspect() for a
 * closer look, say) but must not free the client.
 *
 * @param name the lock's name (its key). Borrowed: valid during the call.
 * @param kind "reentrant", "fair" (a reentrant lock with waiters queued:
 *             without waiters a fair lock looks exactly like a reentrant
 *             one), "read-write" (rlock_lock_info_mode() says which half
 *             is held) or "fenced" (a reentrant lock whose fencing-token
 *             counter exists: the layouts are otherwise the same). Static.
 * @param info the lock's snapshot, read in one atomic step as
 *             rlock_lock_inspect() reads it, its node included, with at
 *             most the first RLOCK_LIST_WAITERS waiters of a fair lock
 *             (rlock_lock_info_queue_length() counts all). Borrowed: valid
 *             during the call; do not free it.
 * @param arg  the pointer given to rlock_client_list_locks().
 * @return 0 to go on; anything else stops the listing (which then
 *         returns RLOCK_OK).
 */
typedef int (*rlock_lock_list_fn)(const char *name, const char *kind,
                                  const rlock_lock_info *info, void *arg);

/**
 * List the locks held now whose names match the glob `pattern` (Redis's
 * MATCH syntax: '*', '?', '[...]', '\' escapes), on every server that
 * holds keys of the client's topology: the server, every master of a
 * cluster (the whole slot map must have masters, else RLOCK_EIO before
 * anything is listed), or Sentinel's master.
 *
 * How: SCAN with MATCH, COUNT 100 and TYPE hash (so Redis 6.0 or later)
 * walks each server's keys in small steps, never KEYS; each batch of
 * hashes found goes to one read-only script (per cluster slot) that
 * applies the rule every lock script applies (rlock/lock.h, "What counts
 * as a lock") and snapshots the locks. No step blocks the server for
 * long: a script call reads at most about 1000 hash fields, and a hash of
 * more than 1000 fields is not read at all, so not listed. Keys that are
 * not locks are never written, expired or deleted; keys of other types,
 * hashes without an expiry and a lock's own auxiliary keys (the fair
 * queue, the token counter, read holds' timeout keys: none is a hash)
 * are not even read. A hash with an expiry is read to check its fields,
 * which counts as an access for Redis's LRU/LFU eviction.
 *
 * Each lock is reported once, in no particular order. The listing is not
 * one snapshot: a lock taken or released meanwhile may or may not show,
 * as SCAN guarantees only keys that exist throughout.
 *
 * Access control: the user needs SCAN and the rights every lock script
 * needs (README, "Least-privilege Redis users"), for every key the
 * pattern matches: a hash outside the user's key patterns fails the
 * listing with RLOCK_EAUTH, so give such a user a pattern within them.
 *
 * Threading: safe on a shared client, as every call (rlock/client.h); fn
 * runs on the calling thread. Not for a client made by
 * rlock_client_new_loop() (RLOCK_EINVAL).
 *
 * @param client  the client whose servers to list.
 * @param pattern the glob, copied; NULL lists every lock ("*").
 * @param fn      called once per lock; see rlock_lock_list_fn.
 * @param arg     passed to fn.
 * @return RLOCK_OK (also when fn stopped the listing); RLOCK_EINVAL
 *         (client or fn NULL, pattern empty or longer than
 *         RLOCK_MAX_NAME_LEN bytes, a loop client); RLOCK_EIO,
 *         RLOCK_ETIMEOUT (a server unreachable or slow); RLOCK_EAUTH (a
 *         right missing, see above); RLOCK_ESERVER (an error reply, e.g.
 *         SCAN's TYPE on a server older than 6.0); RLOCK_EPROTO;
 *         RLOCK_ENOMEM; RLOCK_ECLOSED (in a fork()ed child). After an
 *         error, the locks already passed to fn stand and no more follow.
 */
RLOCK_EXTERN int rlock_client_list_locks(rlock_client *client,
                                         const char *pattern,
                                         rlock_lock_list_fn fn, void *arg);

/**
 * Called by rlock_client_list_counts() for each count found, as
 * rlock_lock_list_fn is (the calling thread, no library lock held).
 *
 * @param name      the key. Borrowed: valid during the call.
 * @param kind      "permit-expirable-semaphore" (a lease set,
 *                  {NAME}:timeout, holds permits leased now) or "count":
 *                  a semaphore's available permits, a count-down latch's
 *                  count, or any other string of decimal digits (in
 *                  Redis they look alike, as in Redisson, and a
 *                  permit-expirable semaphore with no permit leased
 *                  looks the same too). Static.
 * @param available the number stored (a semaphore's available permits, a
 *                  latch's count)
 * @param leased    permits leased now (a permit-expirable semaphore's),
 *                  else 0
 * @param node      "host:port" of the server that answered. Borrowed.
 * @param arg       the pointer given to rlock_client_list_counts().
 * @return 0 to go on; anything else stops the listing.
 */
typedef int (*rlock_count_list_fn)(const char *name, const char *kind,
                                   int64_t available, int64_t leased,
                                   const char *node, void *arg);

/**
 * The counts whose names match the glob `pattern`: semaphores, latches
 * and permit-expirable semaphores (rlock/semaphore.h, rlock/latch.h), on
 * every server as rlock_client_list_locks() walks them, with SCAN ...
 * TYPE string in the same small steps; each step's strings go, per
 * cluster slot, to one read-only script that keeps those holding decimal
 * digits. Redisson's own keys (names starting "redisson_": fencing-token
 * counters, unlock latches) and rlock's registry records
 * (RLOCK_REGISTRY_PREFIX) are left out; any other counter an application
 * keeps under the pattern shows as a "count": give a pattern that only
 * your semaphores and latches match. Every string matched is read (an
 * access for LRU/LFU eviction); nothing is written.
 *
 * Threading, access control (plus +get +type +zcard on the lease sets)
 * and the order of reports as rlock_client_list_locks().
 *
 * @return RLOCK_OK (also when fn stopped the listing); RLOCK_EINVAL
 *         (client or fn NULL, pattern empty or longer than
 *         RLOCK_MAX_NAME_LEN bytes, a loop client); RLOCK_EIO,
 *         RLOCK_ETIMEOUT, RLOCK_EAUTH, RLOCK_ESERVER, RLOCK_EPROTO,
 *         RLOCK_ENOMEM, RLOCK_ECLOSED, as rlock_client_list_locks().
 */
RLOCK_EXTERN int rlock_client_list_counts(rlock_client *client,
                                          const char *pattern,
                                          rlock_count_list_fn fn, void *arg);

/** The most channels rlock_client_list_syncs() looks at per server and
 * pub/sub kind (classic, sharded). */
#define RLOCK_LIST_CHANNELS_MAX 10000

/**
 * Called by rlock_client_list_syncs() for each semaphore, latch or
 * permit-expirable semaphore found, as rlock_lock_list_fn is (the calling
 * thread, no library lock held).
 *
 * @param name        its name. Borrowed: valid during the call.
 * @param kind        "semaphore": a client is subscribed to its channel
 *                    (redisson_sc:{NAME}) and it has no lease set, so a
 *                    semaphore, or a permit-expirable semaphore with no
 *                    permit leased now (in Redis they look alike);
 *                    "permit-expirable-semaphore": its lease set
 *                    ({NAME}:timeout) holds permits leased now; "latch": a
 *                    client is subscribed to its channel
 *                    (redisson_countdownlatch__channel__{NAME}). Static.
 * @param value       the number stored: available permits, or a latch's
 *                    count; 0 when the key is absent (a semaphore never
 *                    set, a latch counted down)
 * @param leased      permits leased now (a permit-expirable semaphore's),
 *                    else 0
 * @param subscribers client connections subscribed to its channel now,
 *                    summed over the servers (PUBSUB NUMSUB): each may
 *                    carry several waiters, and a client may stay
 *                    subscribed a moment after its last wait (rlock's
 *                    subscription linger) or to follow it (a watch); 0 for
 *                    a permit-expirable semaphore found by its lease set
 * @param node        "host:port" of the server that holds its key.
 *                    Borrowed.
 * @param arg         the pointer given to rlock_client_list_syncs().
 * @return 0 to go on; anything else stops the listing.
 */
typedef int (*rlock_sync_list_fn)(const char *name, const char *kind,
                                  int64_t value, int64_t leased,
                                  int64_t subscribers, const char *node,
                                  void *arg);

/**
 * The semaphores, latches and permit-expirable semaphores whose names
 * match the glob `pattern` that can be told from any other counter
 * without reading every string: those a client waits on now (or follows:
 * subscribed to the kind's channel), and the permit-expirable semaphores
 * with permits leased. Each server (as rlock_client_list_locks() walks
 * them) is asked once for the channels subscribed there whose names start
 * "redisson_s" or "redisson_c" (PUBSUB CHANNELS; on a cluster PUBSUB
 * SHARDCHANNELS too), at most RLOCK_LIST_CHANNELS_MAX of each, then for
 * their subscriber counts (PUBSUB NUMSUB, SHARDNUMSUB: 100 channels a
 * call); its sorted sets whose names end ":timeout" are found by SCAN ...
 * TYPE zset in rlock_client_list_locks()'s small steps. The names are
 * matched against `pattern` as SCAN MATCH would match them, and their
 * counts read per cluster slot by one read-only script (a key that is
 * not a string of decimal digits is left out). A semaphore nobody waits on
 * and a latch nobody awaits are plain strings of digits, as any
 * application counter is: rlock_client_list_counts() lists every such
 * string. Nothing is written.
 *
 * Threading as rlock_client_list_locks(); access control: SCAN, PUBSUB,
 * and +type +get +zcard on the names and their lease sets. Each found
 * once; one taken, released or awaited meanwhile may or may not show.
 *
 * @return RLOCK_OK (also when fn stopped the listing); RLOCK_EINVAL
 *         (client or fn NULL, pattern empty or longer than
 *         RLOCK_MAX_NAME_LEN bytes, a loop client); RLOCK_EIO,
 *         RLOCK_ETIMEOUT, RLOCK_EAUTH, RLOCK_ESERVER, RLOCK_EPROTO,
 *         RLOCK_ENOMEM, RLOCK_ECLOSED, as rlock_client_list_locks().
 *         Nothing is passed to fn before every server has answered.
 */
RLOCK_EXTERN int rlock_client_list_syncs(rlock_client *client,
                                         const char *pattern,
                                         rlock_sync_list_fn fn, void *arg);

RLOCK_END_DECLS

#endif /* RLOCK_LOCK_H */
