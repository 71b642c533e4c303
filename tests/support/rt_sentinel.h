/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_sentinel.h - a real Redis Sentinel deployment for tests: one master,
 * its replicas, and the sentinels that watch them.
 *
 * Every process is an rt_server (rt_server.h): its own temporary directory,
 * a free loopback port, persistence off. The sentinels are the same
 * redis-server binary run as `redis-server <config> --sentinel`, each with a
 * generated config file in its directory (which Sentinel rewrites):
 *   sentinel monitor <name> 127.0.0.1 <master port> <sentinels/2 + 1>
 *   sentinel down-after-milliseconds <name> RT_SENTINEL_DOWN_AFTER_MS
 *   sentinel failover-timeout <name> RT_SENTINEL_FAILOVER_TIMEOUT_MS
 *   sentinel parallel-syncs <name> 1
 * So rt_cmd(), freeze/thaw, kill, start_again work on each of them, and the
 * process hygiene is rt_server's: processes are only ever stopped by pid,
 * die with the test process, and are killed by pid at exit and on signals.
 *
 * Data servers have fixed indexes: server 0 starts as the master, servers
 * 1 .. replicas as its replicas. The group also keeps track of which server
 * is the master now: server 0 until rt_sentinel_wait_failover() (or
 * rt_sentinel_failover()) has seen the sentinels switch to another one.
 *
 * Failures (a process that does not come up, a wait that runs out, an
 * unexpected reply) are reported with cmocka's fail_msg(), as in rt_server;
 * call every function that can fail from the test's own thread. The getters
 * that do no I/O (all but rt_sentinel_master_port()) never fail and may be
 * called from any thread. No function may race rt_sentinel_free().
 * Processes that are not running (killed, stopped) are left out of every
 * query; frozen ones are not (see rt_server_freeze()).
 */
#ifndef RT_SENTINEL_H
#define RT_SENTINEL_H

#include <stdint.h>

#include "rt_server.h"

/* The sentinels' timing: how long an unanswering master takes to be
   subjectively down, and the failover timeout (which also spaces out two
   failover attempts on one master: 2x). */
#define RT_SENTINEL_DOWN_AFTER_MS 1000
#define RT_SENTINEL_FAILOVER_TIMEOUT_MS 3000

typedef struct rt_sentinel_group rt_sentinel_group;

/*
 * Start a master, `replicas` replicas of it (--replicaof), wait until each
 * has master_link_status:up, then start `sentinels` sentinels (>= 1)
 * monitoring the master as master_name (letters, digits, '-', '_', '.'),
 * and wait (bounded) until every sentinel reports the master
 * (SENTINEL get-master-addr-by-name), knows every replica (SENTINEL
 * replicas) and every other sentinel (SENTINEL sentinels), none of them
 * down or disconnected. Fails the test on any problem. The caller frees the
 * group with rt_sentinel_free().
 */
rt_sentinel_group *rt_sentinel_start(const char *master_name, int replicas,
                                     int sentinels);

struct rt_tls;

/* rt_sentinel_start() with every sentinel also listening on a TLS port
 * (certificates from `tls`, which must outlive the group). The data
 * servers and the sentinels' monitoring stay in plain text. */
rt_sentinel_group *rt_sentinel_start_tls(const char *master_name, int replicas,
                                         int sentinels,
                                         const struct rt_tls *tls);

/* Where each process of a group runs, for partition tests (rt_netns.h):
 * per data server (by index) and per sentinel, an address to listen on
 * and a command prefix (rt_server_opts.host and .prefix); NULL entries
 * mean 127.0.0.1 and no prefix. Replicas follow the first master at its
 * address, the sentinels monitor it there, and rt_sentinel_url() names
 * the sentinels' addresses. */
#define RT_SENTINEL_PLACE_MAX 8
typedef struct rt_sentinel_place {
  const char *server_host[RT_SENTINEL_PLACE_MAX];
  const char *const *server_prefix[RT_SENTINEL_PLACE_MAX];
  const char *sentinel_host[RT_SENTINEL_PLACE_MAX];
  const char *const *sentinel_prefix[RT_SENTINEL_PLACE_MAX];
} rt_sentinel_place;

/* rt_sentinel_start() with each process placed as `place` says (copied;
 * at most RT_SENTINEL_PLACE_MAX data servers and sentinels). */
rt_sentinel_group *rt_sentinel_start_placed(const char *master_name,
                                            int replicas, int sentinels,
                                            const rt_sentinel_place *place);

/* "redis-sentinel://<the sentinels' TLS ports>?sentinel_tls=yes&tls_ca=..
 * #NAME", or NULL without TLS. */
const char *rt_sentinel_tls_url(const rt_sentinel_group *g);

/* Stop the sentinels, then the data servers (by pid, like
   rt_server_free()), remove their directories, free the group. NULL is
   ignored. */
void rt_sentinel_free(rt_sentinel_group *g);

/* The monitored master's name, as given to rt_sentinel_start(). */
const char *rt_sentinel_name(const rt_sentinel_group *g);

/* Data servers: 1 + replicas of them, in start order (0: the first
   master). Owned by the group: don't free them. */
int rt_sentinel_nservers(const rt_sentinel_group *g);
rt_server *rt_sentinel_server(const rt_sentinel_group *g, int i);
/* The server that is the master as far as the group knows (see above), and
   its index. */
rt_server *rt_sentinel_master(const rt_sentinel_group *g);
int rt_sentinel_master_index(const rt_sentinel_group *g);
/* The servers that are not the master (as far as the group knows), in start
   order: rt_sentinel_nservers() - 1 of them. */
int rt_sentinel_nreplicas(const rt_sentinel_group *g);
rt_server *rt_sentinel_replica(const rt_sentinel_group *g, int i);

/* The sentinels, in start order. Owned by the group. */
int rt_sentinel_nsentinels(const rt_sentinel_group *g);
rt_server *rt_sentinel_sentinel(const rt_sentinel_group *g, int i);

/* "redis-sentinel://127.0.0.1:S1,127.0.0.1:S2,...#<name>" listing every
   sentinel; valid until rt_sentinel_free(). */
const char *rt_sentinel_url(const rt_sentinel_group *g);

/* The master's port as a majority of all the sentinels report it right now
   (SENTINEL get-master-addr-by-name, asked of the running ones), or -1 if
   no port has a majority (a failover in progress, say). */
int rt_sentinel_master_port(rt_sentinel_group *g);

/* SIGKILL the current master (rt_server_kill(): by pid, no shutdown) and
   note the time, from which rt_sentinel_wait_failover() measures. Fails the
   test if it is not running. */
void rt_sentinel_kill_master(rt_sentinel_group *g);

/*
 * Wait up to timeout_ms (taken as is: scale with rt_scaled_ms() as needed)
 * until a majority of all the sentinels report a master other than the one
 * the group knew, on one of the group's servers, and that server says (ROLE)
 * it is a master. It then becomes the group's master. Returns its port and
 * records how long it took (rt_sentinel_failover_ms()), counted from
 * rt_sentinel_kill_master() or rt_sentinel_failover() if one came since the
 * last switch, else from this call. Fails the test on timeout, saying what
 * each sentinel reports.
 */
int rt_sentinel_wait_failover(rt_sentinel_group *g, int64_t timeout_ms);

/*
 * Graceful switch: SENTINEL FAILOVER <name> on a running sentinel (retried
 * while it answers -NOGOODSLAVE or -INPROG), then rt_sentinel_wait_failover()
 * with timeout_ms. Returns the new master's port. The sentinels turn the
 * old master into a replica of the new one only about 10 s later (Redis 7.0
 * Sentinel waits for a reappearing old master to keep claiming the role for
 * four 2 s hello periods, then for its next INFO): wait for that with
 * rt_sentinel_wait_replicas() when a test needs it.
 */
int rt_sentinel_failover(rt_sentinel_group *g, int64_t timeout_ms);

/*
 * rt_sentinel_failover(), then at once what the sentinels do only some 10 s
 * later: the old master, when it is running and still says it is a master,
 * is made a replica of the new one (REPLICAOF, which drops what it accepted
 * after the switch, as the sentinels' own conversion does), and every
 * running replica is waited for in sync (rt_sentinel_wait_replicas()), all
 * within timeout_ms. Failovers closer together than that 10 s then still
 * promote a replica holding the master's data, as the test's "a master with
 * a replica" says; with rt_sentinel_failover() alone, the second one
 * promotes the first old master, a master that never replicated the other,
 * and the two lose each other's writes in turn. Returns the new master's
 * port.
 */
int rt_sentinel_failover_settled(rt_sentinel_group *g, int64_t timeout_ms);

/* Wait up to timeout_ms (as is) until every running server other than the
   group's master says (ROLE, INFO replication) it is a replica of the
   master's port with master_link_status:up, and all of them receive the
   master's command stream: a write the harness makes (PUBLISH, which
   changes no key) acknowledged by each (WAIT). Link up alone is not that:
   after a diskless full sync a Redis 7.0 master may hold the stream back
   until the replica's next once-a-second REPLCONF ACK. Fails the test on
   timeout. */
void rt_sentinel_wait_replicas(rt_sentinel_group *g, int64_t timeout_ms);

/* How long the latest switch seen by rt_sentinel_wait_failover() took, in
   ms (see there); 0 before the first. */
int64_t rt_sentinel_failover_ms(const rt_sentinel_group *g);

#endif /* RT_SENTINEL_H */
