/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlock/config.h - client configuration, one typed setter per option.
 *
 * A config is a plain value object: create it, set what differs from the
 * defaults, pass it to rlock_client_new(), which copies it, then free it.
 * A config is not thread-safe; use it from one thread at a time.
 *
 * Every setter validates its argument and returns RLOCK_EINVAL with a
 * message (see rlock_error_last()) when it is out of range; the config is
 * left unchanged in that case.
 */
#ifndef RLOCK_CONFIG_H
#define RLOCK_CONFIG_H

#include <stdint.h>

#include "export.h"

RLOCK_BEGIN_DECLS

typedef struct rlock_config rlock_config;

/** Largest duration any rlock call accepts: 365 days in milliseconds. */
#define RLOCK_MAX_DURATION_MS ((int64_t)365 * 24 * 3600 * 1000)

/**
 * Called on the client's background thread (a loop client's: on its loop's
 * thread, loop.h) when the watchdog finds that a lock this client held (and was
 * renewing) is gone: a renewal found it expired, deleted or taken over (within
 * one renewal period, a third of the watchdog timeout), or renewals kept
 * failing until a whole watchdog lease passed since the last confirmed one (it
 * is noticed at the next renewal tick). A renewal that could not be sent, for
 * want of a connection or of memory on the thread that renews, counts as
 * failing: the holder is told all the same, as telling needs no memory (a
 * renewal short of memory is tried again at a twelfth of the watchdog timeout,
 * at most 1 s). Called once per lost hold, never after
 * a normal release. The holder's next release of that lock returns RLOCK_ELOST,
 * and rlock_lock_check() says so already.
 *
 * @param name     the lock's name (borrowed for the duration of the call)
 * @param owner    the hold's owner field, "<client id>:<owner number>"; for a
 *                 permit of a permit-expirable semaphore (rlock/semaphore.h),
 *                 `name` is the semaphore's and this the permit's id
 * @param userdata as given to rlock_config_set_lost_callback()
 *
 * No library lock is held during the call. The callback must not block for
 * long (it delays renewals and wake-ups). On the background thread it
 * cannot free its own client: rlock_client_free() called from it returns
 * RLOCK_EDEADLK and does nothing. Holds abandoned by a thread that exited are
 * not reported.
 */
typedef void (*rlock_lost_fn)(const char *name, const char *owner,
                              void *userdata);

/**
 * Create a config holding the defaults.
 * @param out receives the new config; the caller frees it with
 *            rlock_config_free().
 * @return RLOCK_OK, RLOCK_EINVAL (out is NULL) or RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_config_new(rlock_config **out);

/** Free a config. NULL is accepted and ignored. */
RLOCK_EXTERN void rlock_config_free(rlock_config *cfg);

/**
 * The servers to use. Default "redis://127.0.0.1:6379". The string is
 * copied. Accepted forms (host may be an IPv6 address in brackets; user,
 * password and parameters may be %-encoded):
 *  - redis://[[user]:password@]host[:port][/db]: one server.
 *  - rediss://[[user]:password@]host[:port][/db][?PARAMS]: one server over
 *    TLS (the server's certificate verified, name included); PARAMS are
 *    the TLS parameters below.
 *  - unix://[[user]:password@]/path/to/socket[?db=N]: one server.
 *  - redis-cluster://[[user]:password@]host:port[,host:port...]
 *    [?pubsub=auto|classic|sharded]: a Redis Cluster, through any of these
 *    seed nodes (any may be down). Keys are routed by slot; MOVED and ASK
 *    are followed; refusals while the cluster heals (TRYAGAIN,
 *    CLUSTERDOWN) and unreachable nodes are retried within each call's
 *    deadline. pubsub: see rlock_config_set_pubsub_mode().
 *  - redis-sentinel://[[user]:password@]host[:port][,host[:port]...][/db]
 *    [?sentinel_user=U&sentinel_password=P]#MASTER: the master named
 *    MASTER, found through these sentinels (port 26379 by default), which
 *    log in with the sentinel_* parameters; the master with the
 *    credentials before '@'. A failover is followed (Sentinel's
 *    +switch-master, or the next failed command).
 *  - rediss-cluster://... and rediss-sentinel://...: the same over TLS
 *    (with Sentinel, the sentinels too unless sentinel_tls=no).
 * TLS parameters (every scheme but unix://; joined to others by '&'):
 * tls_ca=FILE and tls_ca_dir=DIR (trust anchors, default the system's),
 * tls_cert=FILE and tls_key=FILE (a client certificate), tls_server_name=
 * NAME (the name to verify and send as SNI), tls_insecure=yes|no (no
 * verification: tests only), and for a Sentinel URL sentinel_tls=yes|no
 * (whether the sentinels speak TLS; default: as the master). Booleans take
 * yes/no, 1/0 or true/false. The setters below (rlock_config_set_tls_ca() ...)
 * override these. A tls_* parameter where no connection speaks TLS is refused.
 * @return RLOCK_OK, RLOCK_EINVAL (a URL not of these forms, said how),
 *         RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_config_set_url(rlock_config *cfg, const char *url);

/**
 * Bound on establishing a connection: the name lookup, the TCP connect and
 * the TLS handshake together, on every driver (a server that takes the
 * connection but never answers the TLS hello fails by then). The login
 * that follows (AUTH, SELECT) is bounded as any command is, by the command
 * timeout. 1 ms to 1 hour. Default 2000 ms.
 */
RLOCK_EXTERN int rlock_config_set_connect_timeout_ms(rlock_config *cfg,
                                                     int64_t ms);

/** Bound on one command's round trip, 1 ms to 1 hour. Default 3000 ms. */
RLOCK_EXTERN int rlock_config_set_command_timeout_ms(rlock_config *cfg,
                                                     int64_t ms);

/**
 * The lease of a lock taken without an explicit lease; the watchdog renews
 * such a lock every third of it while it is held. 30 ms to
 * RLOCK_MAX_DURATION_MS. Default 30000 ms (Redisson's lockWatchdogTimeout).
 */
RLOCK_EXTERN int rlock_config_set_watchdog_timeout_ms(rlock_config *cfg,
                                                      int64_t ms);

/**
 * How long a fair-lock waiter that gave no wait time of its own may stay
 * queued: its deadline in the queue is this far behind the waiter ahead
 * of it (Redisson's fairLockWaitTimeout). A waiter not granted the lock by
 * its deadline (a crashed one, say) is dropped from the queue; a live one
 * re-queues at the tail. 1 ms to RLOCK_MAX_DURATION_MS. Default 300000 ms.
 */
RLOCK_EXTERN int rlock_config_set_fair_wait_timeout_ms(rlock_config *cfg,
                                                       int64_t ms);

/** rlock_config_set_unreachable_retry_ms(): as long as the wait lasts. */
#define RLOCK_RETRY_FOREVER INT64_C(-1)

/**
 * How long an acquisition that waits (wait_ms != 0) keeps trying a server
 * it cannot reach: a connection refused, a connect that timed out, a
 * server still loading its data (LOADING) or refusing for now (a cluster
 * or a failover healing). Counted from the first failed attempt of each
 * outage, at its first attempt or later in the wait alike, with pauses of
 * 25 ms doubling to 1 s between attempts; once the bound (or the wait)
 * has passed, the acquisition fails with the last failure (RLOCK_EIO or
 * RLOCK_ETIMEOUT), saying how long it tried. A host name that does not
 * resolve, a refused login (RLOCK_EAUTH), a TLS certificate that fails
 * verification, a TLS handshake the server never answers (a plain-text
 * port behind rediss://) and a Sentinel master name no sentinel knows are
 * never tried again, nor is anything when the wait is 0.
 * So a program (a cron job) that waits without a bound for a lock can
 * still give up soon on a server that is down.
 * @param ms RLOCK_RETRY_FOREVER (the default: as long as the wait lasts,
 *           so a wait without a bound rides out any outage), 0 (fail at
 *           the first attempt that cannot reach the server), or up to
 *           RLOCK_MAX_DURATION_MS.
 * @return RLOCK_OK, or RLOCK_EINVAL (NULL config, ms out of range).
 */
RLOCK_EXTERN int rlock_config_set_unreachable_retry_ms(rlock_config *cfg,
                                                       int64_t ms);

/**
 * Most connections a blocking client opens for commands to one server
 * (the subscriber connections are extra, as is one connection per server
 * for its background thread: lease renewals and RedLock rounds). A caller that
 * finds them all busy waits for one, bounded by the command timeout. A loop
 * client (loop.h) keeps one command connection per server and ignores this. 1
 * to 1024. Default 64.
 */
RLOCK_EXTERN int rlock_config_set_pool_size(rlock_config *cfg, int size);

/** How lock channels use pub/sub on a cluster (Redisson's subscription
 * modes): sharded pub/sub (SSUBSCRIBE on the node that owns a channel's
 * slot; scripts SPUBLISH) or classic (SUBSCRIBE/PUBLISH). Java clients
 * sharing a lock must use the same mode, or their wake-ups miss each
 * other (waiters then wait for the holder's lease). */
typedef enum rlock_pubsub_mode {
  RLOCK_PUBSUB_AUTO = 0,    /**< sharded where the servers have it (Redis
                                 7+: PUBSUB SHARDNUMSUB answers), as
                                 Redisson's default */
  RLOCK_PUBSUB_CLASSIC = 1, /**< always classic */
  RLOCK_PUBSUB_SHARDED = 2  /**< always sharded */
} rlock_pubsub_mode;

/**
 * Choose the pub/sub mode for a cluster; it wins over the URL's pubsub=
 * parameter. Single servers and Sentinel always use classic pub/sub.
 * Default: the URL's, else RLOCK_PUBSUB_AUTO.
 * @return RLOCK_OK or RLOCK_EINVAL (NULL config, unknown mode).
 */
RLOCK_EXTERN int rlock_config_set_pubsub_mode(rlock_config *cfg, int mode);

/**
 * Confirm lock writes on replicas (Redisson's checkLockSyncedSlaves): where
 * the master serving a lock has replicas connected (Sentinel, Cluster, or a
 * plain master with replicas attached), each acquire, release, force
 * release and fair-queue departure is followed on the same connection by
 * WAIT <replicas> <timeout>, by blocking and loop clients alike.
 * (Watchdog renewals are not: renewal must not stall on a lagging replica;
 * a missed renewal is made again a third of a lease later. Nor are a
 * MultiLock's lease resets, nor a blocking RedLock's writes: its servers
 * are independent masters. A loop client's RedLock takes and releases each
 * member with that member's client's ordinary operations, which are
 * confirmed where the member's master has replicas.) An acquisition no
 * replica confirmed (WAIT counted none, or answered with an error, as a
 * master made a replica while WAIT waits does) is undone for the same
 * owner and tried again within the
 * caller's wait, then fails with RLOCK_EREPLICA; a release no replica
 * confirmed returns RLOCK_EREPLICA (it did happen on the master). Not
 * confirming keeps a failover from losing a lock just taken, at the cost of
 * one replication round trip per write. On (1) by default; 0 turns it off.
 * The replica count is read from INFO replication, at most every 30 s
 * (every second while the master reports none).
 * @return RLOCK_OK, or RLOCK_EINVAL for a NULL config.
 */
RLOCK_EXTERN int rlock_config_set_replica_sync(rlock_config *cfg, int on);

/**
 * Fair locks: how an acquisition moves the queued waiters' deadlines.
 * Redisson moves every one earlier by the taker's wait, at once, a write
 * per waiter; so does rlock by default (0), which keeps the stored state
 * after every rlock script exactly what Redisson's would be, for Java
 * clients sharing the lock. 1 defers that shift to the next fair script
 * (the new head's attempt, off the handoff's path: about 200 us less per
 * handoff with 100 waiters queued), recording it meanwhile in a key of
 * rlock's own (docs/PROTOCOL.md). Only for deployments where every client
 * of a fair lock is rlock: a Java client running between sees deadlines
 * later by the wait, and can keep a dead head in front of the queue that
 * long.
 * @return RLOCK_OK, or RLOCK_EINVAL for a NULL config.
 */
RLOCK_EXTERN int rlock_config_set_fair_deferred_shift(rlock_config *cfg,
                                                      int on);

/** How long WAIT waits for a replica, 1 ms to 60 s. Default 1000 ms
 * (Redisson's slavesSyncTimeout). */
RLOCK_EXTERN int rlock_config_set_replica_sync_timeout_ms(rlock_config *cfg,
                                                          int64_t ms);

/**
 * Ask to be told when a watchdog-renewed lock is found lost (see
 * rlock_lost_fn). Pass NULL to remove. Default: none.
 */
RLOCK_EXTERN int rlock_config_set_lost_callback(rlock_config *cfg,
                                                rlock_lost_fn fn,
                                                void *userdata);

/**
 * TLS (rediss://, rediss-cluster://, rediss-sentinel:// URLs): the trust
 * anchors that verify servers. Default: the system's store. Either may be
 * NULL; both NULL goes back to the URL's tls_ca / tls_ca_dir, or the
 * system's. Strings are copied. Setting TLS options for a URL without TLS
 * makes rlock_client_new() fail with RLOCK_EINVAL; a file that cannot be
 * read or parsed makes it fail too, naming the file.
 * @return RLOCK_OK, RLOCK_EINVAL (empty or over 4096 bytes), RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_config_set_tls_ca(rlock_config *cfg, const char *ca_file,
                                         const char *ca_dir);

/**
 * TLS: a client certificate (PEM, may be a chain) and its private key,
 * for servers that require one (tls-auth-clients). Both or neither (NULL,
 * NULL: the URL's tls_cert / tls_key, or none). Strings are copied.
 * @return RLOCK_OK, RLOCK_EINVAL (one without the other, empty, over 4096
 *         bytes), RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_config_set_tls_cert(rlock_config *cfg,
                                           const char *cert_file,
                                           const char *key_file);

/**
 * TLS: the name the servers' certificates must carry (and the SNI sent),
 * instead of the host connected to: for servers reached by address, or
 * cluster nodes that announce addresses. NULL: the URL's tls_server_name,
 * or each host. Hostname verification is always on unless insecure. The
 * string is copied.
 * @return RLOCK_OK, RLOCK_EINVAL (empty or over 4096 bytes), RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_config_set_tls_server_name(rlock_config *cfg,
                                                  const char *name);

/**
 * TLS: 1 turns off every check of the servers' certificates (for tests
 * only: anyone on the path can then read and change the traffic). 0, the
 * default, verifies the chain and the name. TLS 1.2 is the minimum either
 * way. Overrides the URL's tls_insecure.
 * @return RLOCK_OK, or RLOCK_EINVAL for a value other than 0 and 1.
 */
RLOCK_EXTERN int rlock_config_set_tls_insecure(rlock_config *cfg, int insecure);

/**
 * The user and password the data nodes are logged in with, instead of the
 * URL's: for programs that keep secrets out of URLs (and command lines).
 * `user` NULL: AUTH with the password only. `password` NULL (and user
 * NULL): back to the URL's. Sentinels keep the URL's sentinel_user and
 * sentinel_password. Strings are copied; they never appear in messages.
 * @return RLOCK_OK, RLOCK_EINVAL (a user without password, an empty user,
 *         over 4096 bytes), RLOCK_ENOMEM.
 */
RLOCK_EXTERN int rlock_config_set_password(rlock_config *cfg, const char *user,
                                           const char *password);

/**
 * How long a lock channel's subscription stays after its last waiter in
 * this client stops waiting, and how many such idle subscriptions are
 * kept at most. Within that time the next wait on the same lock needs no
 * SUBSCRIBE round trip (and the server no UNSUBSCRIBE): under contention
 * a waiter that takes the lock and soon waits again keeps its
 * subscription. Default 1000 ms and 64; 0 ms (or 0 subscriptions)
 * unsubscribes as soon as the last waiter leaves, as Redisson does.
 * @return RLOCK_OK, or RLOCK_EINVAL (ms outside 0..3600000, max_idle
 *         outside 0..100000).
 */
RLOCK_EXTERN int rlock_config_set_subscription_linger(rlock_config *cfg,
                                                      int64_t ms, int max_idle);

/** The most lock names rlock_config_set_metrics_names() keeps. */
#define RLOCK_METRICS_NAMES_MAX 10000

/**
 * Keep the metrics (rlock_client_metrics_text) of up to `max_names` lock
 * names apart, each under a `name` label beside its `kind`: the first
 * names this client makes lock objects for, each (kind, name) pair once.
 * Lock objects made once every slot is taken are counted under their
 * kind only (no `name` label), as every lock is by default (0): a
 * monitoring system keeps a series per label value, so names that are
 * not a small fixed set belong there. The slots are allocated when the
 * client is made (about 600 bytes each), so recording never allocates.
 * @return RLOCK_OK, or RLOCK_EINVAL (config NULL, max_names outside
 *         0..RLOCK_METRICS_NAMES_MAX).
 */
RLOCK_EXTERN int rlock_config_set_metrics_names(rlock_config *cfg,
                                                int max_names);

/** Where each client's registry record lives: this prefix, then its
 * client id (rlock_client_id). An ACL that lets clients write it is in
 * the README's ACL section. */
#define RLOCK_REGISTRY_PREFIX "rlock:client:"
/** The registry period by default, in milliseconds. */
#define RLOCK_REGISTRY_PERIOD_DEFAULT 10000
/** The longest program text (rlock_config_set_program), in bytes. */
#define RLOCK_PROGRAM_MAX 256

/**
 * How often the client writes its registry record: one SET of
 * RLOCK_REGISTRY_PREFIX + its client id, holding its host, pid, program,
 * rlock version and start time, with a TTL of three periods, so the
 * record goes a little after the client does. It is written when the
 * client is made and then once a period, on the client's background
 * thread (a blocking client) or its loop's thread (a loop client), never
 * on a lock call's path. rlock_client_whois() reads it back, so
 * operators (`rlock status`, `rlock list`) see who holds and who waits.
 * A write the server refuses (an ACL) is logged once at WARN and never
 * touches the locks; a write that cannot reach the server is tried again
 * next period, and logged only at DEBUG (the lock calls report an
 * outage). 0 turns the registry off: no key is ever written.
 * Default RLOCK_REGISTRY_PERIOD_DEFAULT (10 s).
 * @return RLOCK_OK, or RLOCK_EINVAL (config NULL, period_ms other than 0
 *         and outside 100..3600000).
 */
RLOCK_EXTERN int rlock_config_set_registry_period(rlock_config *cfg,
                                                  int64_t period_ms);

/**
 * The program the registry record names: e.g. the command `rlock exec`
 * runs. Default (NULL): the process's argv[0], read from
 * /proc/self/cmdline, or "" where there is none (never its arguments,
 * which may carry secrets: the record is readable by every client). Control
 * characters are written as spaces; the text is copied.
 * @return RLOCK_OK, or RLOCK_EINVAL (config NULL, an empty text, one over
 *         RLOCK_PROGRAM_MAX bytes).
 */
RLOCK_EXTERN int rlock_config_set_program(rlock_config *cfg,
                                          const char *program);

/** How much a log message matters; a hook gets those up to its level. */
typedef enum rlock_log_level {
  RLOCK_LOG_ERROR = 1, /**< a held lock was lost */
  RLOCK_LOG_WARN = 2,  /**< a renewal failed; a connection could not be
                            made or was lost; a write no replica confirmed */
  RLOCK_LOG_INFO = 3,  /**< a failover or slot move was followed; the
                            subscriber connection was made again */
  RLOCK_LOG_DEBUG = 4  /**< every connection opened */
} rlock_log_level;

/**
 * Receives the client's log messages (see rlock_config_set_log).
 *
 * @param level    the message's level, at most the hook's
 * @param message  one line without a newline, e.g. "watchdog: renewing 3
 *                 holds failed: ...; retrying in 100 ms" (borrowed for
 *                 the duration of the call). It names servers by
 *                 host:port and locks by name; never a password.
 * @param userdata as given to rlock_config_set_log()
 *
 * Called on any thread: the one whose call met the event, or the
 * client's background thread; for a loop client (loop.h), on its loop's
 * thread. No library lock is held during the call, so it may call rlock
 * functions, except rlock_client_free() on its own client from the
 * background thread. It must not block for long: on the background
 * thread, or the loop's, it delays renewals and wake-ups.
 */
typedef void (*rlock_log_fn)(rlock_log_level level, const char *message,
                             void *userdata);

/**
 * Send the client's log messages up to `max_level` to `fn`. Pass NULL to
 * remove (`max_level` and `userdata` are then ignored). Default: none
 * (the library writes nothing anywhere).
 * @return RLOCK_OK, or RLOCK_EINVAL for a NULL `cfg` or, with a hook, a
 *         level outside RLOCK_LOG_ERROR..RLOCK_LOG_DEBUG.
 */
RLOCK_EXTERN int rlock_config_set_log(rlock_config *cfg, rlock_log_fn fn,
                                      rlock_log_level max_level,
                                      void *userdata);

RLOCK_END_DECLS

#endif /* RLOCK_CONFIG_H */
