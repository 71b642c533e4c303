/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlock/loop.h - locks from an event loop, without blocking.
 *
 * A loop client (rlock_client_new_loop) is driven by the caller's event
 * loop through a small adapter table (rlock_loop): it watches its sockets
 * and arms its one timer through the table, and the loop calls back into
 * rlock_loop_io(), rlock_loop_timer() and rlock_loop_wake(). It keeps no
 * thread of its own: connecting, commands, topology refreshes, unlock
 * messages and the watchdog's lease renewal all run on the loop's thread
 * (a host name is looked up on a short-lived thread, which wakes the loop
 * when it is done). Ready adapters:
 * rlock/uv.h (libuv, library rlock_uv) and rlock/event.h (libevent,
 * library rlock_event).
 *
 * Lock objects are made from a loop client with the usual constructors
 * (rlock_lock_new, _fair, _read, _write, _fenced, _spin), and MultiLocks
 * from them (rlock_multilock_new), and used through the _async functions
 * below, and RedLocks over locks of several loop clients on one loop
 * thread (rlock_redlock_new). The blocking operations of lock.h,
 * multilock.h and redlock.h, and rlock_client_ping(), refuse a loop client
 * with RLOCK_EINVAL before touching anything (a hold stays recorded and
 * renewed); rlock_lock_check_owner() (local) works.
 *
 * Threading: the thread that calls rlock_client_new_loop() is the loop's
 * thread. Every function here may be called from it; the _async functions
 * and rlock_op_cancel() may also be called from any other thread (the
 * operation, or the cancel, is handed to the loop through the adapter's
 * wake-up and runs there). Callbacks run on the loop's thread only.
 *
 * Callback contract (every _async function's callback: rlock_async_fn,
 * rlock_info_fn, rlock_leader_fn, rlock_record_fn, rlock_redlock_fn, and
 * semaphore.h's rlock_permit_fn and rlock_permits_fn):
 *  - An _async function that returns RLOCK_OK calls its callback exactly
 *    once, later, from the loop (never from inside the _async call
 *    itself). One that returns an error never calls it.
 *  - `rc` is RLOCK_OK or a status code; on failure rlock_error_last()
 *    inside the callback has the message.
 *  - Inside a callback anything here may be called, including new _async
 *    operations, rlock_op_cancel(), rlock_lock_free() of a lock with no
 *    other operation pending, and rlock_client_free().
 *  - rlock_client_free() with operations pending completes each of them,
 *    inside that call, with RLOCK_ECLOSED ("client freed"); no callback
 *    runs after it returns. A lock must not be freed while an operation on
 *    it is pending.
 *
 * Ownership is by explicit owner number (rlock_owner_new()): async
 * operations refuse RLOCK_OWNER_THREAD, since one loop thread serves many
 * owners.
 *
 * Topologies: every URL a blocking client takes (config.h), with the same
 * behaviour: a single server, a Redis Cluster (routing by slot, MOVED and
 * ASK followed, refusals while it heals retried within the operation's
 * deadline, sharded pub/sub by Redisson's AUTO rule) and Sentinel (the
 * master checked with ROLE, +switch-master followed; an acquisition rides
 * out a failover within its wait), over TLS too. Lock writes are confirmed
 * on replicas as a blocking client's are (rlock_config_set_replica_sync).
 * A loop client keeps one command connection per server it uses (its pool
 * size is not used) and, once something waits there, one subscriber
 * connection, plus, behind Sentinel, one to a sentinel at a time to ask for
 * the master and one to watch for +switch-master. Connections are made
 * without blocking, each bounded by the connect timeout (name lookup and
 * TLS handshake included), and re-made on demand; a host name is looked
 * up each time a connection to it is made.
 */
#ifndef RLOCK_LOOP_H
#define RLOCK_LOOP_H

#include <stdint.h>

#include "client.h"
#include "election.h"
#include "export.h"
#include "lock.h"
#include "multilock.h"
#include "redlock.h"

RLOCK_BEGIN_DECLS

/** Events of a descriptor: readable, writable. */
#define RLOCK_LOOP_READ 1
#define RLOCK_LOOP_WRITE 2

/** The version of rlock_loop this header describes. */
#define RLOCK_LOOP_VERSION 1

/**
 * What a loop client needs from an event loop. Every function is called
 * on the loop's thread except wake(). The client copies the table: the
 * fields of its `version` (later versions only append fields).
 */
typedef struct rlock_loop {
  /** RLOCK_LOOP_VERSION: which fields the adapter knows. */
  unsigned int version;
  /** The adapter's own state, passed to every function below. */
  void *data;
  /**
   * Watch `fd` for `events` (RLOCK_LOOP_READ | RLOCK_LOOP_WRITE),
   * replacing what was watched for it before; 0 stops watching it (the
   * client closes it right after). When some are ready, call
   * rlock_loop_io(client, fd, ready events). Returns 0, or -1 when the
   * loop refused (the connection then fails).
   */
  int (*watch)(void *data, int fd, int events);
  /**
   * Arm the one timer to fire once, `after_ms` (>= 0) from now, replacing
   * any earlier arming; `after_ms` < 0 disarms it. When it fires, call
   * rlock_loop_timer(client).
   */
  void (*timer)(void *data, int64_t after_ms);
  /**
   * Any thread: make the loop call rlock_loop_wake(client) on its own
   * thread soon. Several wake()s may lead to one rlock_loop_wake().
   */
  void (*wake)(void *data);
  /**
   * The client is being freed (rlock_client_free): nothing of the table
   * is called after this returns. Stop watching, free the adapter's
   * resources. May be NULL.
   */
  void (*detach)(void *data);
} rlock_loop;

/**
 * Create a client driven by an event loop (see above). For a single
 * server it does no I/O and calls nothing of `loop`. For a cluster or
 * Sentinel it starts learning the topology at once (the slot map, the
 * master), so it may open a connection and call the table's watch() and
 * timer() before it returns; the events that follow reach the client
 * through rlock_loop_io() and rlock_loop_timer() as usual.
 * @param out receives the client; free it with rlock_client_free() on the
 *        loop's thread.
 * @param cfg configuration to copy, or NULL for the defaults.
 * @param loop the adapter table (copied); version, watch, timer and wake
 *        are required.
 * @return RLOCK_OK; RLOCK_EINVAL for a NULL argument, a table version
 *         this library does not know, an incomplete table, or TLS settings
 *         that cannot be used (as rlock_client_new()); RLOCK_ENOMEM. A
 *         host name that does not resolve fails the operations that need
 *         it (RLOCK_EIO), not this call.
 */
RLOCK_EXTERN int rlock_client_new_loop(rlock_client **out,
                                       const rlock_config *cfg,
                                       const rlock_loop *loop);

/** Adapter: `fd` has `events` ready. Loop thread. */
RLOCK_EXTERN void rlock_loop_io(rlock_client *client, int fd, int events);

/** Adapter: the timer fired. Loop thread. */
RLOCK_EXTERN void rlock_loop_timer(rlock_client *client);

/** Adapter: answer to wake(). Loop thread. */
RLOCK_EXTERN void rlock_loop_wake(rlock_client *client);

/**
 * For adapters: set the calling thread's last error (rlock_error_last)
 * to `code` and `message` (copied; NULL: ""), and return `code`, so an
 * adapter's constructor fails like the library's own functions.
 */
RLOCK_EXTERN int rlock_loop_error(int code, const char *message);

/** A pending operation, for rlock_op_cancel(). Owned by the library;
 * valid until its callback returns. */
typedef struct rlock_op rlock_op;

/**
 * Completion of an operation. `value`: an acquisition's fencing token
 * (fenced locks; else 0); a force release's `deleted` (1 or 0); a hold
 * count; a TTL in ms (as rlock_lock_ttl); 1 or 0 for is_locked; 0
 * otherwise.
 */
typedef void (*rlock_async_fn)(void *arg, int rc, int64_t value);

/**
 * Acquire `lock` for `opts->owner` without blocking: attempt, and while
 * it is held elsewhere wait for its unlock message (or its holder's
 * lease to run out) and attempt again, within `opts->wait_ms`, with
 * `opts->lease_ms` (RLOCK_LEASE_WATCHDOG: renewed on the loop while held).
 * Waiters of one lock on one client are woken in arrival order. A wait
 * rides out an outage from its first attempt on, as the blocking one
 * does (rlock_lock_try_acquire; rlock_config_set_unreachable_retry_ms
 * bounds it); a spin lock's waiter backs off as its rlock_spin_options
 * say. The wait bounds the operation as the blocking call's does: with
 * wait_ms > 0 an attempt not answered by the wait plus 100 ms fails its
 * connection as that connection's command timeout would (every request
 * on it with it: the server is that slow for them too), and the callback
 * comes with RLOCK_ETIMEOUT.
 * @param opts required; owner must be an explicit owner; cancel and token
 *        must be NULL (cancel with rlock_op_cancel(); the token comes as
 *        the callback's value).
 * @param op if not NULL, receives the operation (valid until its callback
 *        returns), for rlock_op_cancel(), also when called off the loop
 *        thread.
 * @return RLOCK_OK (the callback will run: RLOCK_OK held, RLOCK_ELOCKED
 *         not within the wait, RLOCK_ECANCELED, RLOCK_ECLOSED, or the
 *         blocking call's errors), or RLOCK_EINVAL / RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_lock_acquire_async(rlock_lock *lock,
                                          const rlock_acquire_options *opts,
                                          rlock_async_fn cb, void *arg,
                                          rlock_op **op);

/**
 * Cancel a pending acquisition: its callback runs later with
 * RLOCK_ECANCELED (a fair lock's waiter leaves the queue first). An
 * acquisition already granted by the server when the cancel arrives is
 * given back first. An operation whose outcome is already decided (its
 * callback due) is left as it is. Any thread: on the loop's thread the
 * cancel applies at once; from another thread it is handed to the loop
 * through the adapter's wake-up and applies there (an operation that ends
 * meanwhile ends as it would have).
 * `op` must be valid for the whole call: from another thread, make sure
 * its callback cannot return meanwhile, e.g. call this holding a mutex
 * that the callback takes (and under which it notes that it ran).
 * @return RLOCK_OK, or RLOCK_EINVAL for NULL or an operation that is not
 *         an acquisition.
 */
RLOCK_EXTERN int rlock_op_cancel(rlock_op *op);

/** Release one hold of `owner` (rlock_lock_release_owner's results). */
RLOCK_EXTERN int rlock_lock_release_async(rlock_lock *lock, uint64_t owner,
                                          rlock_async_fn cb, void *arg);

/** Force release (value: 1 when deleted, else 0). */
RLOCK_EXTERN int rlock_lock_force_release_async(rlock_lock *lock,
                                                rlock_async_fn cb, void *arg);

/** Whether the lock is held by anyone (value 1 or 0). */
RLOCK_EXTERN int rlock_lock_is_locked_async(rlock_lock *lock, rlock_async_fn cb,
                                            void *arg);

/** Hold count of `owner` (value). */
RLOCK_EXTERN int rlock_lock_hold_count_async(rlock_lock *lock, uint64_t owner,
                                             rlock_async_fn cb, void *arg);

/** rlock_lock_extend_owner() on the loop: `owner`'s hold, taken with a
 * fixed lease, now expires `lease_ms` from now; the callback gets its
 * status (value 0). Argument checks and a hold only the watchdog renews
 * fail in the callback, as the blocking call's. */
RLOCK_EXTERN int rlock_lock_extend_async(rlock_lock *lock, uint64_t owner,
                                         int64_t lease_ms, rlock_async_fn cb,
                                         void *arg);

/** Remaining lease in ms (value; as rlock_lock_ttl: -2 when not locked;
 * a hash with no expiry is not a lock: RLOCK_EWRONGTYPE). */
RLOCK_EXTERN int rlock_lock_ttl_async(rlock_lock *lock, rlock_async_fn cb,
                                      void *arg);

/**
 * Completion of an inspection: `info` (owned by the callback, free it
 * with rlock_lock_info_free()) when rc is RLOCK_OK, else NULL.
 */
typedef void (*rlock_info_fn)(void *arg, int rc, rlock_lock_info *info);

/** The lock's whole state at once (rlock_lock_inspect). */
RLOCK_EXTERN int rlock_lock_inspect_async(rlock_lock *lock, rlock_info_fn cb,
                                          void *arg);

/**
 * rlock_election_campaign() on the loop: wait until `opts->owner` leads,
 * as rlock_lock_acquire_async() waits (its rules, bounds and statuses,
 * plus the campaign's: RLOCK_EHELD when the owner leads already and knows
 * it, as rlock_election_check says; a lost hold of its own still on the
 * server is waited on as another leader's), then
 * the callback gets RLOCK_OK and the term as its value. `value` is checked
 * and copied before this returns (RLOCK_EINVAL: NULL, empty, longer than
 * RLOCK_MAX_LEADER_VALUE; nothing sent).
 * @param opts required; owner must be an explicit owner; cancel and token
 *        NULL (cancel with rlock_op_cancel()).
 * @param op as for rlock_lock_acquire_async().
 * @return RLOCK_OK (the callback will run), RLOCK_EINVAL, RLOCK_ENOMEM.
 */
RLOCK_EXTERN int
rlock_election_campaign_async(rlock_election *e, const char *value,
                              const rlock_acquire_options *opts,
                              rlock_async_fn cb, void *arg, rlock_op **op);

/** rlock_election_resign() on the loop: `owner` stops leading (the
 * callback gets rlock_election_resign's statuses, value 0). */
RLOCK_EXTERN int rlock_election_resign_async(rlock_election *e, uint64_t owner,
                                             rlock_async_fn cb, void *arg);

/**
 * Completion of an observation: `leader` (owned by the callback, free it
 * with rlock_leader_free()) when rc is RLOCK_OK, else NULL.
 */
typedef void (*rlock_leader_fn)(void *arg, int rc, rlock_leader *leader);

/** Who leads now (rlock_election_observe), in one round trip. */
RLOCK_EXTERN int rlock_election_observe_async(rlock_election *e,
                                              rlock_leader_fn cb, void *arg);

/**
 * Completion of rlock_client_whois_async(): `rc` is RLOCK_OK or a status
 * (rlock_error_last() has the message); `record` is the record read when
 * rc is RLOCK_OK and one was found, else NULL (RLOCK_OK with NULL: there
 * is no record). `record` is borrowed for the call: copy the struct to
 * keep it; the library frees it when the callback returns.
 */
typedef void (*rlock_record_fn)(void *arg, int rc,
                                const rlock_client_record *record);

/**
 * rlock_client_whois() on the loop: who is behind an owner field or a
 * client id, read as that call reads it (one GET of RLOCK_REGISTRY_PREFIX
 * + the id, sent to the node that serves that key: its slot's master on
 * a cluster, MOVED and ASK followed, refusals retried within the connect
 * plus the command timeout as any loop call's; Sentinel's master). Not
 * cancelable; rlock_client_free() with it pending completes it with
 * RLOCK_ECLOSED. Any thread, as every _async function; the callback runs
 * on the loop's thread.
 *
 * @param client a loop client (rlock_client_new_loop)
 * @param owner  an owner field ("<client id>:<thread>") or a client id
 *               (a UUID, 36 characters, before any ':'); borrowed, read
 *               before this returns
 * @param cb     required; gets the record or NULL (rlock_record_fn)
 * @return RLOCK_OK (the callback will run: RLOCK_OK, with the record or
 *         NULL when there is none (a Redisson client, a client whose
 *         registry is off, one gone for three periods); RLOCK_EIO,
 *         RLOCK_ETIMEOUT, RLOCK_EAUTH (an ACL refused the read),
 *         RLOCK_EWRONGTYPE (the key is not a record), RLOCK_ESERVER,
 *         RLOCK_ENOMEM, RLOCK_ECLOSED (the client was freed)); or, with no
 *         callback, RLOCK_EINVAL (client, owner or cb NULL; an owner that
 *         does not start with a client id; a blocking client: use
 *         rlock_client_whois()), RLOCK_ECLOSED (a fork()ed child, or the
 *         client is being freed), RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_client_whois_async(rlock_client *client,
                                          const char *owner, rlock_record_fn cb,
                                          void *arg);

/**
 * Acquire every member of `m` for `opts->owner`, in order, within
 * `opts->wait_ms` in all: rlock_multilock_acquire_opts's rules (each
 * member with what is left of the wait; with a fixed lease, the earlier
 * members are given the full lease again once the last is taken; on
 * failure or cancel the members taken are released before the callback
 * runs). The members may be on several loop clients, all running on the
 * calling loop thread; the operation belongs to member 0's client:
 * freeing that client completes it (RLOCK_ECLOSED; a member's attempt
 * pending on another client is canceled, and that client gives back a
 * late grant by itself), while another member's client must not be freed
 * with the operation pending. `opts`, `op` and cancel as
 * rlock_lock_acquire_async.
 * @return RLOCK_OK (the callback will run with RLOCK_OK when every member
 *         is held, else the failing member's status, RLOCK_ECANCELED or
 *         RLOCK_ECLOSED, and nothing held), or RLOCK_EINVAL (also when a
 *         member's client is not a loop client, or runs on another loop
 *         thread) / RLOCK_ENOMEM.
 */
RLOCK_EXTERN int
rlock_multilock_acquire_async(rlock_multilock *m,
                              const rlock_acquire_options *opts,
                              rlock_async_fn cb, void *arg, rlock_op **op);

/** Release one hold of `owner` on every member, in reverse order; every
 * member is released even when one fails, and the first failure is the
 * callback's status. Members as rlock_multilock_acquire_async. */
RLOCK_EXTERN int rlock_multilock_release_async(rlock_multilock *m,
                                               uint64_t owner,
                                               rlock_async_fn cb, void *arg);

/**
 * Acquire a quorum of `r`'s members for `opts->owner` without blocking,
 * by rlock_redlock_acquire_opts's rounds: every member attempted at once
 * (each on its own client), every answer awaited up to the member timeout
 * (5% of the lease, 10 ms to member 0's command timeout) unless the
 * quorum is out of reach sooner; validity = lease - time spent - (1% of
 * the lease + 2 ms). A member not waited for (still unanswered at the
 * member timeout, or once the quorum is out of reach) is canceled: its
 * client gives back a late grant on its own, possibly after the callback
 * has run: that member's operation may still be pending then, so free the
 * members' clients before their locks. A round that misses
 * gives back what it took and, within `opts->wait_ms`, is retried after a
 * random 1 to 50 ms (an outage only within a finite wait, as the blocking
 * call). Every member's client must be a loop client running on the
 * calling loop thread; the operation belongs to member 0's client:
 * freeing that client completes it (RLOCK_ECLOSED), while another
 * member's client must not be freed with the operation pending. With
 * RLOCK_LEASE_WATCHDOG each member's client renews its member on the loop.
 * `opts`, `op` and cancel as rlock_lock_acquire_async; a canceled round
 * gives back what it took before the callback.
 * @return RLOCK_OK (the callback will run: RLOCK_OK with the validity left
 *         in ms as its value; RLOCK_ELOCKED when no round reached the
 *         quorum with validity left; a transport error when too few
 *         members answered at all; RLOCK_ECANCELED; RLOCK_ECLOSED when
 *         member 0's client is freed), or RLOCK_EINVAL (also when a
 *         member's client is not a loop client, or runs on another loop
 *         thread) / RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_redlock_acquire_async(rlock_redlock *r,
                                             const rlock_acquire_options *opts,
                                             rlock_async_fn cb, void *arg,
                                             rlock_op **op);

/** Release one hold of `owner` on every member at once. The callback's
 * status, as rlock_redlock_release_owner() returns it: RLOCK_OK when
 * every member held was released (members never taken are skipped),
 * RLOCK_ENOTHELD when no member was held, else the first member's failure
 * (RLOCK_ELOST: that member's hold had expired or was deleted). Not
 * cancelable. */
RLOCK_EXTERN int rlock_redlock_release_async(rlock_redlock *r, uint64_t owner,
                                             rlock_async_fn cb, void *arg);

/**
 * Completion of a RedLock operation with each member's outcome: `rc` and
 * `validity_ms` as an rlock_async_fn's `rc` and `value`; `result` is
 * never NULL and is the callback's to free (rlock_redlock_result_free(),
 * also later, from any thread), read with redlock.h's
 * rlock_redlock_result_* functions.
 */
typedef void (*rlock_redlock_fn)(void *arg, int rc, int64_t validity_ms,
                                 rlock_redlock_result *result);

/**
 * rlock_redlock_acquire_async(), telling each member's outcome as the
 * blocking rlock_redlock_acquire_opts() does: the result is that of the
 * last round (also on failure): its validity (0 unless rc is RLOCK_OK),
 * and for each member RLOCK_OK when it was taken, else why not
 * (RLOCK_ELOCKED, a transport error, RLOCK_ETIMEOUT when it was not
 * waited for, RLOCK_ECANCELED, RLOCK_ECLOSED), with a message ("" when
 * taken). A member taken in a round that missed the quorum was given back
 * before the callback. Its count is 0 when the operation ended before its
 * first round. Arguments and return codes as rlock_redlock_acquire_async.
 */
RLOCK_EXTERN int rlock_redlock_acquire_async_result(
    rlock_redlock *r, const rlock_acquire_options *opts, rlock_redlock_fn cb,
    void *arg, rlock_op **op);

/**
 * rlock_redlock_release_async(), telling each member's outcome: for each
 * member RLOCK_OK when one hold of `owner` was released there,
 * RLOCK_ENOTHELD when it held none there, RLOCK_ELOST when its hold had
 * expired or was deleted, else the member's failure (a transport error,
 * RLOCK_ECLOSED), with a message ("" when released). The validity is 0.
 * Arguments and return codes as rlock_redlock_release_async.
 */
RLOCK_EXTERN int rlock_redlock_release_async_result(rlock_redlock *r,
                                                    uint64_t owner,
                                                    rlock_redlock_fn cb,
                                                    void *arg);

RLOCK_END_DECLS

#endif /* RLOCK_LOOP_H */
