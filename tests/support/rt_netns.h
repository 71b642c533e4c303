/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_netns.h - network namespaces a test creates, and partitions between
 * them, for the partition fault runs (tests/integration/
 * test_faults_partition.c).
 *
 * Nothing here touches the machine's network. The test binary runs itself
 * again under `unshare --net --mount` (rt_netns_rerun(); where that is not
 * allowed, with --user --map-root-user if user namespaces are): a private
 * network namespace of its own, with /run on a private tmpfs for `ip netns`.
 * That process (the "router") creates the namespaces: namespace i gets a veth
 * pair to the router, 10.77.(i+1).2/24 on its side, 10.77.(i+1).1 on the
 * router's, and a default route through the router, which forwards between
 * them. The router also has 10.77.0.1 on its loopback
 * (rt_netns_router_addr()): servers that no fault touches (the counter and
 * the fenced resource of a fault run) listen there.
 *
 * Faults are policy rules in the router (`ip rule ... blackhole`): the
 * packets are dropped silently, no ICMP, so each side sees a peer that
 * stops answering, not one that refuses:
 *  - rt_netns_drop(i, j): packets from i to j (one way: with i the server,
 *    a client's requests arrive and its replies do not);
 *  - rt_netns_cut(i, j): both ways;
 *  - rt_netns_isolate(i): everything to and from i (the harness's TCP too:
 *    servers started with rt_server_opts.host are reached through their
 *    unix sockets, which no network fault cuts).
 * rt_netns_heal() removes every rule.
 *
 * Processes: servers run in a namespace with rt_server_opts.prefix =
 * rt_netns_prefix() (`ip netns exec NS`, which execs in place, so the pid
 * is the server's, stopped by pid as rt_server does); other programs with
 * rt_netns_spawn(), which enters the namespace with setns() and execs,
 * with PR_SET_PDEATHSIG = SIGKILL. When the router process exits, its
 * namespaces go with it.
 *
 * Failures (a command that fails) are reported with cmocka's fail_msg():
 * call these from the test's own thread.
 */
#ifndef RT_NETNS_H
#define RT_NETNS_H

#include <stdbool.h>
#include <sys/types.h>

/* At most this many namespaces in one rt_netns. */
#define RT_NETNS_MAX 16

typedef struct rt_netns rt_netns;

/* NULL when this machine lets the test make private namespaces with
   veth pairs and blackhole rules (probed once, in a throwaway unshare:
   as is, or else as root of a user namespace, `unshare --user
   --map-root-user`, which rt_netns_rerun() then uses too), else a
   sentence saying what is missing: the caller skips with it. */
const char *rt_netns_unavailable(void);

/* Run `argv0 --child args...` (args NULL-terminated) under `unshare --net
   --mount`, with /run on a tmpfs, loopback up and $RT_NETNS_PRIVATE set;
   it inherits stdout and stderr. Returns its wait status (-1 if it could
   not be started). Check rt_netns_unavailable() first. */
int rt_netns_rerun(const char *argv0, const char *const *args);

/* Whether this process was started by rt_netns_rerun(). */
bool rt_netns_private(void);

/* In the process rt_netns_rerun() started: turn forwarding on, put
   10.77.0.1 on the loopback. Fails the test anywhere else. Free with
   rt_netns_free(), which deletes the namespaces it made. */
rt_netns *rt_netns_new(void);
void rt_netns_free(rt_netns *n);

/* A new namespace named "rt-<name>" (name: letters, digits, '-'), linked
   to the router; returns its index (0, 1, ...). */
int rt_netns_add(rt_netns *n, const char *name);
int rt_netns_count(const rt_netns *n);
/* Namespace i's address, "10.77.(i+1).2"; valid until rt_netns_free(). */
const char *rt_netns_addr(const rt_netns *n, int i);
/* The router's own address, for servers no fault touches: "10.77.0.1". */
const char *rt_netns_router_addr(void);
/* {"<path of ip>", "netns", "exec", "rt-<name>", NULL}: the prefix that
   runs a server in namespace i (rt_server_opts.prefix). Owned by n. */
const char *const *rt_netns_prefix(const rt_netns *n, int i);

/* fork, enter namespace i (setns), exec argv[0] with argv (NULL-
   terminated), dying with the caller (PR_SET_PDEATHSIG). stdin from
   *in_fd's pipe when in_fd is not NULL (its write end returned there),
   stdout into *out_fd's pipe likewise. The caller owns the pid: it kills
   and reaps it by pid. Fails the test if fork fails. */
pid_t rt_netns_spawn(const rt_netns *n, int i, const char *const *argv,
                     int *in_fd, int *out_fd);

/* The faults (see above); `on` false removes that rule again. */
void rt_netns_drop(rt_netns *n, int from, int to, bool on);
void rt_netns_cut(rt_netns *n, int i, int j, bool on);
void rt_netns_isolate(rt_netns *n, int i, bool on);
/* Remove every rule these made. */
void rt_netns_heal(rt_netns *n);
/* How many rules are in force. */
int rt_netns_rules(const rt_netns *n);

/* Run `ip` with the words (NULL-terminated); fails the test, naming the
   command, when it exits non-zero. */
void rt_netns_ip(const char *const *words);

#endif /* RT_NETNS_H */
