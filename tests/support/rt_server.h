/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_server.h - real redis-server processes for the tests.
 *
 * Each server runs in a fresh temporary directory (under $TMPDIR or /tmp),
 * listens on 127.0.0.1:<free port> and on a unix socket in that directory,
 * with persistence off. The redis-server binary is $RLOCK_REDIS_SERVER if
 * set, else the first redis-server on PATH.
 *
 * Failures (server does not come up, I/O error on rt_cmd, ...) are reported
 * with cmocka's fail_msg(), so these functions are meant to be called from
 * cmocka tests and fixtures. Call the failing functions from the test's own
 * thread: cmocka reports a failure by longjmp()ing to the test runner, which
 * is undefined from any other thread.
 *
 * Process hygiene: servers are only ever stopped by pid.
 *  - A server dies with the test process, even if that is SIGKILLed: the
 *    server is started with PR_SET_PDEATHSIG = SIGKILL. (The fork happens on
 *    one long-lived helper thread, because the death signal fires when the
 *    forking *thread* exits: servers may be started from short-lived threads.)
 *  - At exit(), and on SIGINT, SIGTERM, SIGHUP, SIGABRT, SIGSEGV and SIGBUS
 *    when the signal would terminate the process, every live server is
 *    SIGKILLed by pid and its directory removed. (When the test has its own
 *    handler for such a signal, or cmocka does, that handler decides; if the
 *    process dies, the servers still do, but their directories stay.)
 *  - Each server runs in a process group of its own, so a signal a test
 *    sends to its own group (kill(0, sig)) does not reach it.
 *  - A forked child (that does not exec) must call rt_forked_child() first
 *    and should leave with _exit(). The cleanup also checks that it runs in
 *    the process that started the servers, so a child that forgets can at
 *    worst leak its copy of the bookkeeping, never kill the parent's servers.
 *  - The servers are children of the test process: a test must not reap
 *    them, i.e. must wait for its own children with waitpid(pid, ...) and
 *    never with waitpid(-1, ...) or wait().
 *
 * Threading: rt_cmd() and its variants (rt_cmd_int, rt_cmd_ok, rt_cmd_argv,
 * rt_server_info_field, rt_server_role), rt_server_connect() and the getters
 * may be called from any thread, also while another thread stops or restarts
 * the server. The lifecycle calls (stop, kill, freeze, thaw, start_again,
 * restart, free) on one server must not race each other. rt_info_value() is
 * a pure function; rt_wait_until() runs its predicate on the calling thread.
 *
 * Topologies built on this: rt_cluster.h (Redis Cluster), rt_sentinel.h
 * (a master, replicas and Sentinels).
 */
#ifndef RT_SERVER_H
#define RT_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

typedef struct rt_server rt_server;

/*
 * Start a redis-server and wait (up to 10 s) until it answers PING.
 * extra_args: NULL, or a NULL-terminated list of words appended to the
 * command line, e.g. (const char *const[]){"--requirepass", "secret", NULL}.
 * They are copied. Don't override --port, --unixsocket or --dir.
 * Fails the test (after printing the tail of the server log) if the server
 * does not come up; a port taken by someone else is retried with another.
 */
rt_server *rt_server_start(const char *const *extra_args);

/* What rt_server_start_opts() starts; zero-initialise what is not needed. */
typedef struct rt_server_opts {
  /* As rt_server_start()'s extra_args. */
  const char *const *extra_args;
  /* NULL, or the text of a config file: it is written to <dir>/redis.conf
     before the first start and passed as the first argument, ahead of the
     harness's own options (which therefore override it). The file stays
     in the directory for the server's life, so a server that rewrites its
     config (CONFIG REWRITE, Sentinel) may, and start_again reuses it. */
  const char *config;
  /* Run as Redis Sentinel: `redis-server <config> --sentinel`, same
     redis-server binary. Requires config (holding the `sentinel monitor`
     lines); Sentinel rewrites it. */
  bool sentinel;
  /* Cluster mode: --cluster-enabled yes --cluster-config-file nodes.conf
     (in the server's directory, so it survives start_again, and with it
     the node id), and the cluster bus on a free port of its own
     (--cluster-port, see rt_server_cluster_port()) rather than port+10000,
     which may be out of range or taken. When a port turns out to be taken
     both are picked anew. */
  bool cluster;
  /* NULL, or the address to listen on instead of 127.0.0.1 (--bind), also
     the one rt_server_url() names. rt_cmd() and rt_server_connect() then
     reach the server through its unix socket, so a network fault a test
     injects (rt_netns.h) never cuts the harness off. */
  const char *host;
  /* NULL, or a NULL-terminated command the server runs under, e.g.
     {"/usr/sbin/ip", "netns", "exec", "NS", NULL} (rt_netns_prefix()):
     prefix[0] is executed with the rest, then the redis-server command
     line. It must exec the server in the same process (its pid is the
     server's). Copied. */
  const char *const *prefix;
  /* NULL, or a NULL-terminated list of "NAME=value" words added to the
     server's environment (replacing a variable of the same name there),
     e.g. LD_PRELOAD (rt_clock.h). Copied. In a value, "{dir}" stands for
     the server's directory (rt_server_dir()). */
  const char *const *env;
} rt_server_opts;

/* rt_server_start() with options. rt_server_start(args) is
   rt_server_start_opts(&(rt_server_opts){ .extra_args = args }). Same
   contract: fails the test when the server does not come up. */
rt_server *rt_server_start_opts(const rt_server_opts *opts);

int rt_server_port(const rt_server *s);
/* "redis://127.0.0.1:PORT" (or opts.host); valid until rt_server_free(). */
const char *rt_server_url(const rt_server *s);
/* The server's unix socket; valid until rt_server_free(). */
const char *rt_server_unix_path(const rt_server *s);
/* The server's temporary directory (holds redis.log); until rt_server_free().
 */
const char *rt_server_dir(const rt_server *s);
/* The server's pid, or 0 while it is stopped. */
pid_t rt_server_pid(const rt_server *s);
/* The cluster bus port of a server started with opts.cluster, else 0. */
int rt_server_cluster_port(const rt_server *s);
/* <dir>/redis.conf for a server started with opts.config, else NULL; valid
   until rt_server_free(). */
const char *rt_server_config_path(const rt_server *s);

/* SIGTERM, wait for the process; SIGKILL if it is still there after 5 s.
   No-op if already stopped. */
void rt_server_stop(rt_server *s);
/* SIGKILL and wait: a crash, without the server's shutdown sequence.
   No-op if already stopped. */
void rt_server_kill(rt_server *s);
/* SIGSTOP / SIGCONT: a hung server. While frozen it accepts TCP connections
   (the kernel does) but answers nothing; it loses no data. Stopping or
   killing a frozen server works. rt_cmd() on a frozen server fails after its
   timeout: use a raw connection with a short timeout instead. Both fail the
   test if the server is not running. */
void rt_server_freeze(rt_server *s);
void rt_server_thaw(rt_server *s);
/* Start a stopped server again on the same port, socket, directory and
   arguments, and wait for PING. The data set starts empty. */
void rt_server_start_again(rt_server *s);
/* rt_server_stop() + rt_server_start_again(): all data is lost. */
void rt_server_restart(rt_server *s);
/* Stop the server if it runs, remove its directory, free. NULL is ignored. */
void rt_server_free(rt_server *s);

/*
 * A new blocking hiredis connection to the server's TCP port (its unix
 * socket for a server started with opts.host), made with
 * redisConnectWithTimeout() (2 s; no read timeout is set). Fails the test if
 * the server cannot be reached. The caller owns it (redisFree()). It is not
 * authenticated: with --requirepass the caller sends AUTH itself.
 */
redisContext *rt_server_connect(const rt_server *s);

/*
 * Run one command (redisCommand() format) on a connection kept inside the
 * rt_server and return the reply, which the caller frees with
 * freeReplyObject(). Error replies (-ERR ...) are returned, not failed on;
 * an I/O error or timeout (15 s) fails the test.
 *
 * The connection is (re)opened as needed: after a restart, after the server
 * closed it (CLIENT KILL, timeout), and in a forked child. When the server
 * was started with "--requirepass PW" it is authenticated with PW. Don't
 * change its state (SELECT, CLIENT REPLY, MULTI across calls): it may be
 * replaced between any two calls.
 */
redisReply *rt_cmd(rt_server *s, const char *fmt, ...);

/* rt_cmd() for a command with an integer reply: returns the integer and
   fails the test on any other reply type. */
long long rt_cmd_int(rt_server *s, const char *fmt, ...);

/* rt_cmd() for a command that must answer +OK: fails the test, with the
   reply, on anything else. */
void rt_cmd_ok(rt_server *s, const char *fmt, ...);

/* rt_cmd() for a command given as words (redisCommandArgv(): argvlen NULL
   means NUL-terminated words), e.g. for a variable number of keys or binary
   ones. Same contract as rt_cmd(). */
redisReply *rt_cmd_argv(rt_server *s, int argc, const char **argv,
                        const size_t *argvlen);

/* INFO <section>, and the value of `field` in it ("field:value" line),
   copied (truncated) into out. False, with out empty, when the reply has no
   such field. Fails the test like rt_cmd() on an I/O error. Example:
   rt_server_info_field(s, "replication", "master_link_status", buf, sizeof
   buf). */
bool rt_server_info_field(rt_server *s, const char *section, const char *field,
                          char *out, size_t cap);

/* The value of `field` in text made of "field:value" lines (INFO, CLUSTER
   INFO), copied (truncated) into out. False, with out empty, when there is
   no such line. Pure function. */
bool rt_info_value(const char *text, const char *field, char *out, size_t cap);

/* The first element of ROLE: "master", "slave" or "sentinel", copied into
   out. Fails the test on an I/O error or an unexpected reply. */
void rt_server_role(rt_server *s, char *out, size_t cap);

/*
 * Poll pred(arg, why, cap) every 20 ms until it returns true; after
 * timeout_ms (taken as is: scale it with rt_scaled_ms() as needed) fail the
 * test with "<what>: not done after N ms: <why>", why being what pred wrote
 * there last (the condition that does not hold yet). pred is always called
 * at least once, and may itself fail the test. For waits on observable
 * conditions, instead of fixed sleeps.
 */
typedef bool (*rt_wait_pred)(void *arg, char *why, size_t cap);
void rt_wait_until(rt_wait_pred pred, void *arg, int64_t timeout_ms,
                   const char *what);

/* As rt_wait_until(), but returns false on timeout instead of failing,
   with why (cap bytes) holding the predicate's last reason. */
bool rt_poll_until(rt_wait_pred pred, void *arg, int64_t timeout_ms, char *why,
                   size_t cap);

/* Call in a freshly fork()ed child that does not exec: the child forgets the
   parent's servers, so its exit or death never touches them. The child may
   still use rt_cmd()/rt_server_connect() on them (if no other thread of the
   parent was inside rt_cmd() on the same server at the fork), but must not
   start, stop, kill, freeze or thaw one. rt_server_free() in the child frees
   just the child's copy of the object; worth doing before the child exits
   under valgrind, which checks children for leaks too. */
void rt_forked_child(void);

#endif /* RT_SERVER_H */
