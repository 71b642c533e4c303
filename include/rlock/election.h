/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlock/election.h - leader election on the fenced lock.
 *
 * An election on NAME is Redisson's RFencedLock on NAME (rlock/lock.h,
 * rlock_lock_new_fenced: the lock hash at NAME, its token counter
 * "redisson_lock_token:{NAME}", its channel) plus a leader record,
 * "rlock_leader:{NAME}" (same hash tag, so the same Cluster slot): a hash
 * with the fields "owner" (the leader's hash field, "<client id>:<owner>"),
 * "term" and "value".
 *
 * - Leading is holding the lock: a campaign is an acquisition (waiting as
 *   a lock wait does: woken by the unlock message, or when the leader's
 *   lease runs out), with the watchdog's lease by default, so a leader
 *   that stops (crash, SIGSTOP, a lost network) is replaced within one
 *   lease of its last renewal the server applied (one whose replies alone
 *   are lost may have had a renewal applied that it never saw answered:
 *   replaced up to a third of a lease later than it is told); a
 *   resignation is a release.
 * - The term is the fencing token the winning acquisition took from the
 *   counter: it only grows, across clients and processes, so a resource
 *   that remembers the highest term it has seen refuses a deposed leader.
 * - The record is written by the campaign's script in the same step as
 *   the lock, and counts only while the lock's hash holds the owner field
 *   it names: it needs no lease of its own (the lock's lease, renewals and
 *   expiry decide who leads), so Redisson's scripts keep working on the
 *   lock key unchanged and rlock's lock rule (lock.h, "What counts as a
 *   lock") holds. A resignation deletes it; a leader that expired or was
 *   deleted leaves it behind, overwritten by the next leader (like the
 *   token counter, it has no expiry). A Java service reads who leads with
 *   one script (docs/PROTOCOL.md, "Leader election").
 *
 * Values: 1 to RLOCK_MAX_LEADER_VALUE bytes of text (no NUL). Names: as
 * for locks.
 *
 * Owners: a campaign is for an owner (rlock_acquire_options.owner; the
 * calling thread by default), and a leader is never re-entered: a second
 * campaign by the owner that leads (and knows it: rlock_election_check
 * would say RLOCK_OK) returns RLOCK_EHELD, nothing written. An owner told
 * it lost leadership whose hold the server still carries (e.g. a promoted
 * replica's copy after a failover; nobody renews it) waits on that hold as
 * on another leader's, and leads with a new term once it expires.
 *
 * Losing leadership (the lease ran out, the lock was deleted or taken by
 * force) is told as a lock's loss: through the client's lost-lock
 * callback (rlock_config_set_lost_callback), and by rlock_election_check.
 * Anyone can follow who leads: rlock_election_watch_new() calls back on
 * each change of leader.
 *
 * Threading: an election object carries no per-owner state; any number of
 * threads may use one. Every function that talks to the server is a
 * blocking call, refused on a loop client as a lock's blocking calls are
 * (there: the _async forms, rlock/loop.h); rlock_election_check and the
 * rlock_leader_* accessors do no I/O and serve both.
 */
#ifndef RLOCK_ELECTION_H
#define RLOCK_ELECTION_H

#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "export.h"
#include "lock.h"

RLOCK_BEGIN_DECLS

typedef struct rlock_election rlock_election;
typedef struct rlock_leader rlock_leader;

/** Longest leader value accepted, in bytes (64 KiB). */
#define RLOCK_MAX_LEADER_VALUE 65536

/**
 * Create an election object for `name` on `client`. Does no I/O.
 * @param out receives it; free it with rlock_election_free() before the
 *            client is freed (with loop operations pending: after it).
 * @param name copied; a lock name's rules (rlock/lock.h).
 * @return RLOCK_OK, RLOCK_EINVAL (NULL argument, bad name) or RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_election_new(rlock_election **out, rlock_client *client,
                                    const char *name);

/** Free an election object. Leadership taken through it is not given up
 * (it belongs to its owner: resign first). NULL is accepted. */
RLOCK_EXTERN void rlock_election_free(rlock_election *e);

/** The election's name. Borrowed: valid as long as the object. */
RLOCK_EXTERN const char *rlock_election_name(const rlock_election *e);

/**
 * The fenced lock underneath (rlock_lock_new_fenced on the same name), for
 * what a lock offers beyond this header (rlock_lock_token,
 * rlock_lock_inspect, rlock_lock_extend_owner of a fixed lease). Borrowed:
 * owned by the election object. Do not acquire it to lead: a hold taken
 * through it writes no leader record.
 * @return the lock; NULL when e is NULL (RLOCK_EINVAL as the last error).
 */
RLOCK_EXTERN rlock_lock *rlock_election_lock(rlock_election *e);

/**
 * Campaign: wait until `opts->owner` leads, then write `value` as the
 * leader's value. Waits as rlock_lock_acquire_opts() does (wait bound,
 * cancel token, outages ridden out), with the watchdog's lease by default
 * (opts->lease_ms: a fixed lease instead, after which leadership ends).
 *
 * @param value 1 to RLOCK_MAX_LEADER_VALUE bytes, NUL-terminated; copied.
 * @param opts NULL for the defaults; opts->token must be NULL (the term
 *             comes in *term).
 * @param term if not NULL, receives the term (the fencing token).
 * @return RLOCK_OK when it leads; RLOCK_ELOCKED when another owner led
 *         for the whole wait (also a hold of this owner's the server
 *         still carries after it was told RLOCK_ELOST); RLOCK_EHELD when
 *         this owner leads already and knows it (nothing written);
 *         RLOCK_ECANCELED; RLOCK_EINVAL (NULL election, a value NULL,
 *         empty or too long, bad options: nothing written), with a
 *         message; RLOCK_EWRONGTYPE (the name, its token counter or its
 *         record hold something else: nothing written);
 *         RLOCK_EIO / RLOCK_ETIMEOUT / ... as an acquisition.
 */
RLOCK_EXTERN int rlock_election_campaign(rlock_election *e, const char *value,
                                         const rlock_acquire_options *opts,
                                         int64_t *term);

/**
 * Resign: `owner` (RLOCK_OWNER_THREAD: the calling thread) stops leading:
 * the lock is released (one standby woken) and the record deleted.
 * @return RLOCK_OK; RLOCK_ENOTHELD when the owner does not lead here
 *         (nothing written); RLOCK_ELOST when it led but had lost it
 *         meanwhile; RLOCK_EINVAL (NULL election); RLOCK_EIO, ...
 */
RLOCK_EXTERN int rlock_election_resign(rlock_election *e, uint64_t owner);

/**
 * Whether `owner` still leads, answered locally with no round trip, as
 * rlock_lock_check_owner(): RLOCK_OK while it leads; RLOCK_ELOST once the
 * watchdog found the lock gone, a fixed lease ran out, or a whole lease
 * passed without a confirmed renewal; RLOCK_ENOTHELD when it does not
 * lead here; RLOCK_EINVAL for a NULL election; RLOCK_ECLOSED in a
 * fork()ed child.
 */
RLOCK_EXTERN int rlock_election_check(rlock_election *e, uint64_t owner);

/**
 * Who leads now, for anyone, in one round trip (one script: atomic).
 * @param out receives a snapshot; free it with rlock_leader_free().
 * @return RLOCK_OK (also when nobody leads: rlock_leader_present() is 0);
 *         RLOCK_EINVAL (NULL argument); RLOCK_EWRONGTYPE (the name holds
 *         something that is not a plain lock); RLOCK_EIO, ...
 */
RLOCK_EXTERN int rlock_election_observe(rlock_leader **out, rlock_election *e);

/** 1 when the snapshot saw a leader (the lock held), else 0. */
RLOCK_EXTERN int rlock_leader_present(const rlock_leader *l);
/** The leader's owner field ("<client id>:<owner>"), NULL when none.
 * Borrowed from the snapshot. */
RLOCK_EXTERN const char *rlock_leader_owner(const rlock_leader *l);
/** The leader's value, NULL when none or when the holder did not campaign
 * (a plain fenced-lock holder: it wrote no record). Borrowed. */
RLOCK_EXTERN const char *rlock_leader_value(const rlock_leader *l);
/** The leader's term, 0 when none or unknown (as for the value). */
RLOCK_EXTERN int64_t rlock_leader_term(const rlock_leader *l);
/** The leader's remaining lease in ms at the snapshot; -2 when none. */
RLOCK_EXTERN int64_t rlock_leader_ttl_ms(const rlock_leader *l);
/** Free a snapshot. NULL is accepted. */
RLOCK_EXTERN void rlock_leader_free(rlock_leader *l);

typedef struct rlock_election_watch rlock_election_watch;

/**
 * A leader change, or a failed read (rlock_election_watch_new).
 * @param rc RLOCK_OK with `leader` (owned by the callback: free it with
 *           rlock_leader_free()), or the failed read's status (the last
 *           error holds its message) with `leader` NULL.
 */
typedef void (*rlock_leader_change_fn)(void *arg, int rc, rlock_leader *leader);

/** Longest interval rlock_election_watch_new() accepts: a day, in ms. */
#define RLOCK_ELECTION_WATCH_MAX_INTERVAL 86400000

/**
 * Follow who leads: `fn` is called with the leader read now (present or
 * not), then each time a read finds another leadership (owner or term:
 * a new leader, the same owner's next term, or nobody). The leader is
 * read again whenever the election's channel has a message (a
 * resignation, a leader's release: rlock/watch.h) and twice soon after it
 * (10 ms after it, then 50 ms later: the standby it woke takes over meanwhile,
 * and taking publishes nothing), when a lost subscription is back, when the
 * leader's lease is due to end (a leader that stopped is gone then), and
 * every `interval_ms`. A leadership that begins and ends between two
 * reads is not seen; the terms told then jump by more than one.
 *
 * A failed read is told once (rc, leader NULL), until a read works again;
 * the reads go on.
 *
 * Threading: `fn` runs on the client's loop thread (a blocking client's
 * background thread, or the thread running a loop client's loop), one
 * call at a time, under rlock/watch.h's rules for callbacks (no blocking
 * call of this client in it; rlock_election_watch_free() of this watch is
 * allowed). Any thread may make and free the watch; on a loop client,
 * from another thread, the loop must be running.
 *
 * @param out receives the watch; free it with rlock_election_watch_free()
 *            before the election object and the client.
 * @param interval_ms 10 to RLOCK_ELECTION_WATCH_MAX_INTERVAL.
 * @return RLOCK_OK; RLOCK_EINVAL (NULL out, election or fn, interval out
 *         of range); RLOCK_ECLOSED (in a fork()ed child of the client's
 *         process, or a loop client being freed); RLOCK_ENOMEM; each with
 *         a message.
 */
RLOCK_EXTERN int rlock_election_watch_new(rlock_election_watch **out,
                                          rlock_election *election,
                                          int64_t interval_ms,
                                          rlock_leader_change_fn fn, void *arg);

/** Stop following and free the watch: once it returns `fn` is not
 * running and will not run again (from inside `fn`: at once). NULL is
 * accepted. */
RLOCK_EXTERN void rlock_election_watch_free(rlock_election_watch *w);

RLOCK_END_DECLS

#endif /* RLOCK_ELECTION_H */
