/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_cluster.h - a real Redis Cluster of redis-server processes, for tests.
 *
 * Every node is an rt_server (rt_server.h) started in cluster mode: its own
 * temporary directory, a free loopback port, a cluster bus on another free
 * port, persistence off, --cluster-node-timeout RT_CLUSTER_NODE_TIMEOUT_MS.
 * So rt_cmd(), freeze/thaw, kill, start_again all work on a node, and the
 * process hygiene is rt_server's: nodes are only ever stopped by pid, die
 * with the test process, and are killed by pid at exit and on fatal signals.
 *
 * The cluster is built with plain commands (CLUSTER SET-CONFIG-EPOCH, MEET,
 * ADDSLOTSRANGE, REPLICATE), not redis-cli.
 *
 * Node indexes are fixed for the cluster's life: with M masters and R
 * replicas per master, nodes 0 .. M-1 start as the masters (master m owning
 * an even share of the slots, in order), and node M + m*R + r starts as
 * replica r of master m. Roles change with failovers; the functions that
 * care ask the cluster (rt_cluster_is_master(), rt_cluster_replica_of(),
 * rt_cluster_slot_owner()).
 *
 * A node that is not running (rt_server_pid() == 0: killed, stopped) is left
 * out of every check and query. A frozen node (rt_server_freeze()) is not:
 * the functions that talk to the cluster would wait for it until rt_cmd()
 * times out, so thaw it, or kill it, before calling them.
 *
 * Failures (a node that does not come up, a cluster that does not converge
 * in time, an unexpected reply) are reported with cmocka's fail_msg(), as in
 * rt_server; call every function that can fail from the test's own thread.
 * The getters that do no I/O (rt_cluster_size, _masters, _node, _port,
 * _node_id, _node_by_port, rt_cluster_slot_of*) never fail and may be called
 * from any thread. No function may race rt_cluster_free().
 */
#ifndef RT_CLUSTER_H
#define RT_CLUSTER_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "rt_server.h"

#define RT_CLUSTER_SLOTS 16384
/* --cluster-node-timeout of every node: how long a silent node takes to be
   flagged as failing, so the bulk of an automatic failover's duration. */
#define RT_CLUSTER_NODE_TIMEOUT_MS 1500
/* Length of a node id (hex digits), without the NUL. */
#define RT_CLUSTER_ID_LEN 40

typedef struct rt_cluster rt_cluster;

/*
 * Start masters * (1 + replicas_per_master) nodes (masters >= 1, at most 64
 * nodes in all), join them, give master m the m-th of `masters` even ranges
 * of the 16384 slots, attach the replicas, and wait (bounded) until
 * rt_cluster_wait_ok()'s conditions hold. Fails the test on any problem
 * (nodes already started are then killed at exit). The caller frees the
 * cluster with rt_cluster_free().
 */
rt_cluster *rt_cluster_start(int masters, int replicas_per_master);

struct rt_tls;

/* rt_cluster_start() with every node also on a TLS port (certificates
 * from `tls`, which must outlive the cluster) and tls-cluster and
 * tls-replication on: clients are told TLS ports over TLS connections.
 * The plain ports stay, for the harness's own commands. */
rt_cluster *rt_cluster_start_tls(int masters, int replicas_per_master,
                                 const struct rt_tls *tls);

/* Where each node runs, for partition tests (rt_netns.h): node i listens
 * on host[i] (its cluster bus too) and runs under prefix[i]
 * (rt_server_opts.host and .prefix); NULL arrays or entries mean
 * 127.0.0.1 and no prefix. The nodes meet at those addresses, and
 * rt_cluster_url() names them. The arrays are read during the call; the
 * addresses are copied. */
rt_cluster *rt_cluster_start_placed(int masters, int replicas_per_master,
                                    const char *const *host,
                                    const char *const *const *prefix);

/* Node i's TLS port (0 without TLS). */
int rt_cluster_tls_port(const rt_cluster *c, int i);

/* Stop every node (by pid, like rt_server_free()), remove their
   directories, free the cluster. NULL is ignored. */
void rt_cluster_free(rt_cluster *c);

/*
 * Wait up to timeout_ms (taken as is: scale it with rt_scaled_ms() as
 * needed) until the running nodes agree: on every one of them CLUSTER INFO
 * says cluster_state:ok, cluster_slots_ok:16384 and knows every node; its
 * CLUSTER NODES knows every node by id (none in handshake), flags no
 * running node as failing or disconnected, gives every slot to the same
 * running node as every other view and each node the role (and master) that
 * node gives itself; and every running replica whose master runs has
 * master_link_status:up to it (INFO replication). Fails the test, saying
 * which condition does not hold, on timeout.
 */
void rt_cluster_wait_ok(rt_cluster *c, int64_t timeout_ms);

/* Number of nodes, and of masters at the start. */
int rt_cluster_size(const rt_cluster *c);
int rt_cluster_masters(const rt_cluster *c);
/* Node i (0 <= i < size): its server (owned by the cluster: don't free it),
   client port, and node id (RT_CLUSTER_ID_LEN hex digits; a node keeps it
   across rt_server_start_again(), nodes.conf being in its directory). */
rt_server *rt_cluster_node(const rt_cluster *c, int i);
int rt_cluster_port(const rt_cluster *c, int i);
const char *rt_cluster_node_id(const rt_cluster *c, int i);
/* The index of the node listening on `port`, or -1. */
int rt_cluster_node_by_port(const rt_cluster *c, int port);

/* Whether node i runs and says (ROLE) it is a master. */
bool rt_cluster_is_master(rt_cluster *c, int i);
/* A running replica of node `master` in the cluster's view (the master's
   own if it runs, else a running node's), or -1 if it has none. */
int rt_cluster_replica_of(rt_cluster *c, int master);
/* The node that owns `slot` in a running node's view (CLUSTER NODES), or
   -1 if the slot is unassigned. */
int rt_cluster_slot_owner(rt_cluster *c, int slot);

/* "redis-cluster://127.0.0.1:P1,127.0.0.1:P2,..." listing the running
   nodes that are masters (ROLE), in index order. Valid until the next call
   or rt_cluster_free(). */
const char *rt_cluster_url(rt_cluster *c);

/* The hash slot of a key, as Redis computes it: CRC16-XMODEM modulo 16384
   of the key, or of its hash tag: the bytes between the first '{' and the
   first '}' after it, if there are any. Pure functions. */
int rt_cluster_slot_of(const char *key);
int rt_cluster_slot_of_len(const char *key, size_t len);

/* Write into buf `prefix` followed by the smallest decimal number that makes
   a key whose slot node `node` owns (rt_cluster_slot_owner()). Fails the
   test if the node owns no slot, buf is too small, or the prefix has a
   hash tag pinning it to another node's slot. */
void rt_cluster_key_on(rt_cluster *c, int node, const char *prefix, char *buf,
                       size_t size);
/* The same for a given slot (no I/O): `prefix` followed by a number, with
   rt_cluster_slot_of() == slot. */
void rt_cluster_key_in_slot(int slot, const char *prefix, char *buf,
                            size_t size);

/*
 * Live migration of one slot from master `from` to master `to`, as
 * redis-cli does it, in steps a test can stop between:
 *  - begin: CLUSTER SETSLOT IMPORTING on `to`, then MIGRATING on `from`.
 *    From then on `from` answers -ASK for the slot's keys it no longer has.
 *  - keys: move up to max_keys (< 0: all) of the slot's keys, found with
 *    CLUSTER GETKEYSINSLOT, with MIGRATE ... KEYS in batches; returns how
 *    many were moved.
 *  - finish: move the remaining keys, CLUSTER SETSLOT NODE `to` on `to`,
 *    `from` and every other running master, and wait (bounded) until every
 *    running node sees `to` as the owner, with no migration left open on
 *    either node, and rt_cluster_wait_ok()'s conditions hold.
 * rt_cluster_migrate_slot() does all three. Every step fails the test on an
 * error reply.
 */
void rt_cluster_migrate_begin(rt_cluster *c, int slot, int from, int to);
int rt_cluster_migrate_keys(rt_cluster *c, int slot, int from, int to,
                            int max_keys);
void rt_cluster_migrate_finish(rt_cluster *c, int slot, int from, int to);
void rt_cluster_migrate_slot(rt_cluster *c, int slot, int from, int to);

/*
 * Graceful failover: CLUSTER FAILOVER on a running replica of master
 * `master` (rt_cluster_replica_of()), then wait (bounded) until it is a
 * master, `master` is its replica, and rt_cluster_wait_ok()'s conditions
 * hold. Returns the new master's index. Fails the test if `master` has no
 * running replica or the switch does not complete in time.
 */
int rt_cluster_failover(rt_cluster *c, int master);

/*
 * Crash: SIGKILL master `master` (rt_server_kill()), then wait up to
 * timeout_ms (as is) until one of its replicas has taken over by itself and
 * rt_cluster_wait_ok()'s conditions hold among the running nodes. Returns
 * the new master's index; the killed node stays stopped (start it again
 * with rt_server_start_again(): it rejoins as a replica). Fails the test if
 * the master has no running replica or no failover completes in time.
 * Expect about RT_CLUSTER_NODE_TIMEOUT_MS + 1-2 s.
 */
int rt_cluster_kill_master(rt_cluster *c, int master, int64_t timeout_ms);

/* How long the latest rt_cluster_failover() or rt_cluster_kill_master()
   took, in ms, from the command or the kill until the cluster was ok
   again; 0 before the first. */
int64_t rt_cluster_last_failover_ms(const rt_cluster *c);

#endif /* RT_CLUSTER_H */
