/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlock/client.h - the connection to Redis that every lock uses.
 *
 * Threading: a client may be shared by any number of threads; every
 * function here and in lock.h is safe to call concurrently on one client.
 * Each client made by rlock_client_new() runs one background thread of its
 * own, which renews leases (the watchdog), receives unlock messages for
 * waiting threads, and calls the lost-lock callback. rlock_client_free()
 * stops and joins it. (A client made by rlock_client_new_loop(), loop.h,
 * has no thread of its own: its event loop does all of that.)
 *
 * Processes: a client belongs to the process that created it. In a child
 * made by fork() every operation on an inherited client (and on its lock
 * objects) fails at once with RLOCK_ECLOSED, and never touches the
 * parent's connections; the child must create its own client. (The
 * client's background thread does not exist in the child, and the copies
 * of its sockets carry the parent's conversations.)
 *
 * Connections are opened on demand and re-opened after a failure, so a
 * client survives a server restart. While a single server is unreachable,
 * operations fail with RLOCK_EIO (or RLOCK_ETIMEOUT) instead of hanging,
 * except an acquisition that waits: it tries again within its wait
 * (rlock_lock_try_acquire, rlock_config_set_unreachable_retry_ms).
 * Behind Sentinel or a cluster, where a failover can make the servers
 * reachable again, an operation retries until its deadline (the connect
 * plus the command timeout, or an acquisition's wait within that bound:
 * one that waits for ever keeps trying) and then fails the same way.
 */
#ifndef RLOCK_CLIENT_H
#define RLOCK_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "export.h"

RLOCK_BEGIN_DECLS

typedef struct rlock_client rlock_client;

/**
 * Create a client.
 *
 * The client does not connect here: the first operation does, so creating
 * a client for a server that is down succeeds. The client gets a random
 * version-4 UUID (36 lower-case characters) as its identity, which it uses
 * in the owner field of every lock it takes.
 *
 * @param out receives the client; free it with rlock_client_free().
 * @param cfg the configuration to copy, or NULL for the defaults.
 * @return RLOCK_OK, RLOCK_EINVAL, RLOCK_ENOMEM, or RLOCK_EIO when the
 *         background thread cannot be started.
 */
RLOCK_EXTERN int rlock_client_new(rlock_client **out, const rlock_config *cfg);

/**
 * Stop the background thread, close every connection and free the client.
 * A loop client (loop.h) is freed on its loop's thread only, also from
 * one of its callbacks; from any other thread: RLOCK_EINVAL, and nothing
 * happens.
 *
 * Locks still held are not released: they expire after their lease (for
 * watchdog-renewed locks, within one watchdog timeout). Every lock object
 * made from this client must be freed first, and no other thread may be
 * inside a call on this client. (A loop client's locks with operations
 * pending are freed after it instead: rlock_client_free completes those
 * operations, which still use their locks; rlock_lock_free never touches
 * the client.)
 *
 * From the client's own background thread, i.e. from its lost-lock
 * callback, the client cannot be freed (the thread would have to join
 * itself): RLOCK_EDEADLK, and nothing happens. Free it from another thread
 * (the callback may tell one to).
 *
 * In a fork()ed child of the process that created the client: RLOCK_ECLOSED,
 * and nothing is released, deliberately. Stopping the (nonexistent)
 * background thread, taking locks that threads of the parent may have held
 * at the fork, or closing descriptors the child may since have reused
 * would not be safe, so the client's memory and the child's copies of its
 * descriptors (all close-on-exec) stay until the child exits or execs.
 * Meanwhile those copies keep the parent's connections open on the
 * server's side even after the parent closes them. Fork before creating
 * clients where that matters.
 *
 * @return RLOCK_OK (also for NULL), RLOCK_EDEADLK, RLOCK_ECLOSED, or
 *         RLOCK_EINVAL (a loop client, off its loop's thread).
 */
RLOCK_EXTERN int rlock_client_free(rlock_client *client);

/**
 * The client's identity, a 36-character lower-case UUID. Borrowed: valid
 * as long as the client.
 */
RLOCK_EXTERN const char *rlock_client_id(const rlock_client *client);

/**
 * The owner field this client writes for the calling thread:
 * "<client id>:<thread id>". Writes at most `size` bytes including the
 * terminating NUL.
 * @return RLOCK_OK, or RLOCK_EINVAL if an argument is NULL or `size` is
 *         too small (RLOCK_OWNER_MAX is always enough).
 */
RLOCK_EXTERN int rlock_client_owner(char *buf, size_t size,
                                    const rlock_client *client);

/** Buffer size that always holds an owner field and its NUL. */
#define RLOCK_OWNER_MAX 64

/**
 * What the client talks to, from its URL: "single" (one server),
 * "cluster" or "sentinel". Static string; NULL when client is NULL.
 */
RLOCK_EXTERN const char *rlock_client_topology(const rlock_client *client);

/**
 * Round trip a PING on a command connection.
 * @param rtt_us if not NULL, receives the round-trip time in microseconds.
 * @return RLOCK_OK, RLOCK_EIO, RLOCK_ETIMEOUT, RLOCK_EAUTH, ...
 */
RLOCK_EXTERN int rlock_client_ping(rlock_client *client, int64_t *rtt_us);

/** What a client's registry record says about it
 * (rlock_config_set_registry_period). Strings are NUL-terminated. */
typedef struct rlock_client_record {
  char client_id[37];                  /**< the client's id (its UUID) */
  char host[256];                      /**< its host name */
  long long pid;                       /**< its process id on that host */
  char program[RLOCK_PROGRAM_MAX + 1]; /**< rlock_config_set_program's text,
                                            or the command line */
  char version[32];                    /**< its rlock version */
  int64_t started_ms; /**< when it was made, Unix epoch milliseconds */
} rlock_client_record;

/**
 * Who is behind an owner field (a lock's holder or waiter, as
 * rlock_lock_info_owner() gives it: "<client id>:<thread>") or a bare
 * client id: reads its registry record from the server, one GET of
 * RLOCK_REGISTRY_PREFIX + the id on the node that serves that key.
 * Blocking; thread-safe; not for a loop client (RLOCK_EINVAL: a loop
 * client reads it with rlock_client_whois_async(), rlock/loop.h).
 *
 * @param owner an owner field or a client id (a UUID, 36 characters,
 *              before any ':'); borrowed
 * @param out   filled when the record is found (zeroed otherwise)
 * @return 1 when found; 0 when there is no record (a Redisson client, a
 *         client whose registry is off, one gone for three periods); or
 *         RLOCK_EINVAL (NULL argument, an owner that does not start with
 *         a client id, a loop client), RLOCK_ECLOSED (a fork()ed child),
 *         RLOCK_EIO, RLOCK_ETIMEOUT, RLOCK_EAUTH (an ACL refused the
 *         read), RLOCK_EWRONGTYPE (the key is not a record),
 *         RLOCK_ESERVER, RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_client_whois(rlock_client *client, const char *owner,
                                    rlock_client_record *out);

/**
 * Counters of what a client has done since it was created, for a program
 * to export to its metrics. Each only grows. Fields are only ever added
 * at the end: pass sizeof(rlock_stats) to rlock_client_stats().
 */
typedef struct rlock_stats {
  uint64_t acquisitions;     /**< holds taken (re-entries count), every kind */
  uint64_t waits;            /**< acquisitions that found the lock held and
                                  waited (or spun), taken in the end or not */
  uint64_t wakeups;          /**< waits ended by an unlock message (not by
                                  the holder's lease running out) */
  uint64_t releases;         /**< holds given back by their owner */
  uint64_t renewals;         /**< leases the watchdog extended */
  uint64_t renewal_failures; /**< watchdog renewal calls that failed
                                  (tried again sooner) */
  uint64_t lost;             /**< holds found lost (as the lost callback) */
  uint64_t connects;         /**< connections opened to data nodes:
                                  commands and subscriber (not those to
                                  sentinels) */
  uint64_t connect_failures; /**< such connections that could not be
                                  opened */
  uint64_t disconnects;      /**< connections dropped: broken in use, closed
                                  by the server while idle, or timed out; a
                                  reconnect shows as one of these followed by
                                  a connect */
  uint64_t topology_changes; /**< Sentinel master switches and cluster slot
                                  moves followed */
  uint64_t redirections;     /**< MOVED and ASK redirections followed (a
                                  cluster's slots moving, or the client's
                                  map of them out of date) */
  uint64_t reconnects;       /**< connections opened to replace one that
                                  was dropped (counted in disconnects):
                                  to the same node, by a command pool, a
                                  subscriber or a loop client's node */
} rlock_stats;

/**
 * Read the client's counters. Lock-free (relaxed atomic reads): each
 * counter is exact, but they are not one snapshot.
 *
 * @param out  receives the first `size` bytes of the counters (a program
 *             built against an older header passes a smaller size)
 * @param size sizeof(rlock_stats)
 * @return RLOCK_OK, or RLOCK_EINVAL (client or out NULL, size 0).
 */
RLOCK_EXTERN int rlock_client_stats(const rlock_client *client,
                                    rlock_stats *out, size_t size);

/** rlock_client_metrics_text() flag: the OpenMetrics text format
 * (counter families named without `_total` in HELP and TYPE, a final
 * `# EOF`), served as `application/openmetrics-text; version=1.0.0`.
 * Without it, the Prometheus text format 0.0.4 (`text/plain;
 * version=0.0.4`). */
#define RLOCK_METRICS_OPENMETRICS 1u

/**
 * Write the client's metrics in the Prometheus text format into `buf`,
 * for the program to serve on its own metrics endpoint (the library
 * serves nothing). Every family has HELP and TYPE lines; names start with
 * `rlock_` and carry their unit (`_seconds`).
 *
 * Per kind of lock (label `kind`: reentrant, nonreentrant, fair,
 * nonreentrant_fair, read, write, fenced, spin; semaphore, psemaphore
 * (the permit-expirable one) and latch, where an acquisition is a permit
 * taken or a latch's wait that saw zero, and only psemaphore permits are
 * holds; and multilock, redlock for
 * those acquisitions as a whole, in their first member's client, with
 * acquisitions, timeouts, failures and wait times only; a MultiLock's
 * members count under their own kinds, and a RedLock's members' holds
 * under theirs), for each kind that has seen any: the counters
 * rlock_acquisitions_total, rlock_acquire_timeouts_total (ended RLOCK_ELOCKED:
 * held until the wait ran out, or at a single try),
 * rlock_acquire_failures_total (any other error), rlock_lost_total (holds found
 * lost: by the watchdog, by their release, or by this client's force release);
 * the gauges rlock_holds (holds recorded now, a thread's re-entries once; a
 * lost one until its holder releases it) and rlock_waiters (acquisitions
 * waiting now); the histograms rlock_wait_seconds (an acquisition's start to
 * the hold, for those that took the lock), rlock_hold_seconds (a hold's first
 * level to the release of its last, holds not found lost) and
 * rlock_handoff_seconds (acquisitions that waited: from the waiter's last
 * wake-up to the hold; the wake-up is the unlock message's arrival, a
 * confirmed subscription or the end of a sleep, and on a blocking client
 * the waiting thread's resumption), buckets from 100 us to 300 s.
 * With rlock_config_set_metrics_names(), the names kept have series of
 * their own (labels `kind` and `name`), which the `kind`-only series
 * leave out: a sum over both is the client's total.
 * Per client: rlock_waits_total, rlock_wakeups_total,
 * rlock_releases_total, rlock_renewals_total,
 * rlock_renewal_failures_total, rlock_lost_told_total,
 * rlock_connects_total, rlock_connect_failures_total,
 * rlock_disconnects_total, rlock_reconnects_total,
 * rlock_topology_changes_total, rlock_redirections_total (as
 * rlock_stats) and rlock_metric_names_refused_total.
 *
 * Recording costs a few relaxed atomic adds on the lock path and never
 * allocates; memory is fixed when the client is made.
 *
 * Thread-safety: any thread, any client kind (also a loop client, off its
 * loop's thread; never while the client is being freed), lock-free: each
 * number is exact, but they are not one snapshot (a hold may show in
 * rlock_holds before its acquisition shows in rlock_acquisitions_total).
 *
 * @param buf    receives the text, NUL-terminated (may be NULL when size
 *               is 0, to ask for the size: RLOCK_EINVAL, *needed set)
 * @param size   bytes at buf
 * @param needed if not NULL, receives the bytes the whole text needs,
 *               its NUL included (also when it did not fit)
 * @param flags  0, or RLOCK_METRICS_OPENMETRICS
 * @return RLOCK_OK; RLOCK_EINVAL: client NULL, buf NULL with size > 0,
 *         an unknown flag, or `size` too small (then buf holds as much as
 *         fits, and *needed says how much to give: the text grows as
 *         kinds and names are first used, so leave room).
 */
RLOCK_EXTERN int rlock_client_metrics_text(const rlock_client *client,
                                           char *buf, size_t size,
                                           size_t *needed, unsigned flags);

RLOCK_END_DECLS

#endif /* RLOCK_CLIENT_H */
