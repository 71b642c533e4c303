/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlock/errors.h - status codes and the thread-local last error.
 *
 * Every fallible rlock function returns an int: RLOCK_OK (0) on success or
 * one of the negative codes below. Codes are only ever appended; a value is
 * never renumbered or reused. Each function documents the codes a caller
 * should expect from it; anything else is an infrastructure failure
 * (RLOCK_EIO, RLOCK_ETIMEOUT, RLOCK_EPROTO, RLOCK_ESERVER, RLOCK_ENOMEM).
 *
 * The detail of the most recent failure on the calling thread is available
 * from rlock_error_last(). It is thread-local, so a client shared by many
 * threads never mixes up their messages.
 */
#ifndef RLOCK_ERRORS_H
#define RLOCK_ERRORS_H

#include "export.h"

RLOCK_BEGIN_DECLS

typedef enum rlock_status {
  RLOCK_OK = 0,
  /** An argument was NULL, empty, too long, out of range or malformed. */
  RLOCK_EINVAL = -1,
  /** Memory allocation failed. */
  RLOCK_ENOMEM = -2,
  /** The server could not be reached or the connection broke. */
  RLOCK_EIO = -3,
  /** The server did not answer within the command timeout. */
  RLOCK_ETIMEOUT = -4,
  /** The server answered something this library cannot interpret. */
  RLOCK_EPROTO = -5,
  /** The server answered with an error reply (READONLY, OOM, ...). */
  RLOCK_ESERVER = -6,
  /** Authentication, database selection or an ACL right was refused. */
  RLOCK_EAUTH = -7,
  /** The lock's key holds something that is not a lock of this family
   * (another type, a hash that is not a lock, or a read-write lock where a
   * reentrant or fair one was asked for, or the reverse); for a semaphore
   * or latch, a key that is not one (semaphore.h, latch.h). It was left
   * untouched. */
  RLOCK_EWRONGTYPE = -8,
  /** Not acquired: another owner held the lock (or leadership) for the
   * whole wait; for a semaphore, too few permits were available; for a
   * latch's wait, the count was still above zero. */
  RLOCK_ELOCKED = -9,
  /** The owner (by default the calling thread) does not hold the lock it
   * tried to release, extend or check, or does not lead the election it
   * resigns; for a permit-expirable semaphore, no such permit is leased. */
  RLOCK_ENOTHELD = -10,
  /** The lock (a permit, a leadership) was held by this owner but
   * expired, was deleted or was taken by force. */
  RLOCK_ELOST = -11,
  /** The client cannot serve the call: it belongs to another process
   * (the caller is a fork()ed child of the process that created it, and
   * must create its own client), or, for a loop client's pending
   * operations (loop.h), it, or a RedLock member's client, is being
   * freed. */
  RLOCK_ECLOSED = -12,
  /** The wait was given up because its cancel token fired. */
  RLOCK_ECANCELED = -13,
  /** Waiting would deadlock: the caller holds a read hold on the
   * read-write lock whose write hold it asked for; or rlock_client_free()
   * was called on the client's own background thread (from its lost-lock
   * callback), which it would have to join; or, as a RedLock member's
   * status, a blocking RedLock was used on the background thread of that
   * member's client, which carries the member's calls. */
  RLOCK_EDEADLK = -14,
  /** No replica confirmed the write within the replica sync timeout
   * (rlock_config_set_replica_sync): an acquisition was undone, a release
   * happened on the master only (a failover may bring the lock back until
   * its lease runs out). */
  RLOCK_EREPLICA = -15,
  /** A non-reentrant lock (rlock_lock_new_nonreentrant, _fair_nonreentrant)
   * asked again by the owner that holds it, or a campaign by the owner
   * that leads (election.h): refused at once, nothing written (Redisson's
   * NON_REENTRANT_REACQUIRE). */
  RLOCK_EHELD = -16
} rlock_status;

/** Detail of the last failure on the calling thread. */
typedef struct rlock_error {
  int code;            /**< the rlock_status value returned */
  const char *message; /**< one line of English; never NULL */
} rlock_error;

/**
 * The last error recorded on the calling thread.
 *
 * Never NULL. The pointer and its message belong to the library and stay
 * valid until the next rlock call on the same thread. After a success the
 * content is unspecified (it may still describe an older failure).
 */
RLOCK_EXTERN const rlock_error *rlock_error_last(void);

/** A short static description of a status code ("unknown error" if none). */
RLOCK_EXTERN const char *rlock_strerror(int code);

RLOCK_END_DECLS

#endif /* RLOCK_ERRORS_H */
