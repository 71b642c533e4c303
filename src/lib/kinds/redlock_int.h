/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redlock_int.h - internals shared by redlock.c (validation, decisions),
 * blocking/redlock.c (rounds, release, results) and loop/lredlock.c.
 */
#ifndef RLOCK_REDLOCK_INT_H
#define RLOCK_REDLOCK_INT_H

#include "lock_int.h"
#include "rlock/redlock.h"

struct rlock_redlock {
  size_t n;
  size_t quorum; /* n / 2 + 1 */
  rlock_lock *members[];
};

struct rlock_redlock_result {
  int64_t validity_ms;
  size_t n;
  int status[RLOCK_MAX_REDLOCK_MEMBERS];
  char message[RLOCK_MAX_REDLOCK_MEMBERS][256];
};

/* ---- a RedLock's decisions, for both drivers (redlock.c) ----------------
 * blocking/redlock.c (one fan-out per round, its calls carried by the
 * members' loops: loop/lfan.c) and loop/lredlock.c (a state machine over
 * member operations) carry out the same rounds. */

/* The validity left of a round begun at `started_us` whose smallest
 * member lease is `lease_min_ms`: that lease less the time the round took
 * and a clock-drift allowance of 1% + 2 ms (the RedLock algorithm's).
 * The round holds the lock only while this is > 0. */
int64_t rlock__redlock_validity(int64_t lease_min_ms, int64_t started_us);

/* The smallest lease of a round's members (rlock__redlock_member_lease). */
int64_t rlock__redlock_lease_min(const rlock_redlock *r, int64_t lease_ms);

/* Whether a round holds the lock: `taken` reach the quorum, and validity
 * is left. */
int rlock__redlock_held(const rlock_redlock *r, size_t taken,
                        int64_t validity_ms);

/* The failure of a round that missed, from each member's status and
 * message (res): RLOCK_ELOCKED when the quorum was taken but too slowly
 * or a member is held elsewhere (contention), else the first member's
 * failure (an outage). Its message counts the members taken and names
 * the first member that failed other than by its timeout, or else the
 * validity left. Returns the code. */
int rlock__redlock_miss(const rlock_redlock *r, const rlock_redlock_result *res,
                        size_t taken, int64_t validity_ms);

/* Whether a round can stop waiting for members: `refused` of them have
 * answered without granting, so the quorum is out of reach. Reaching the
 * quorum is no reason to stop: members still to answer are taken too. */
int rlock__redlock_out_of_reach(const rlock_redlock *r, size_t refused);

/* After a round that failed with `rc`: whether to try another round (not
 * canceled, the wait lasts, and contention, or an outage within a finite
 * wait: servers may come back, never for ever). */
int rlock__redlock_retry(int rc, int canceled, int64_t wait_ms,
                         int64_t deadline_us);

/* When the next round starts: after a random 1 to 50 ms (`seed` is the
 * caller's generator state), so contenders do not retry in lockstep;
 * never past the deadline. */
int64_t rlock__redlock_next_round(uint64_t *seed, int64_t deadline_us);

/* The lease member i is taken with: lease_ms, or its client's watchdog
 * timeout for RLOCK_LEASE_WATCHDOG. */
int64_t rlock__redlock_member_lease(const rlock_redlock *r, size_t i,
                                    int64_t lease_ms);
/* How long one round may wait for a member: 5% of the smallest lease,
 * within [10 ms, member 0's command timeout]. */
int64_t rlock__redlock_node_timeout_ms(const rlock_redlock *r,
                                       int64_t lease_min_ms);

#endif /* RLOCK_REDLOCK_INT_H */
