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
 * Threading: rt_cmd(), rt_cmd_int(), rt_server_connect() and the getters may
 * be called from any thread, also while another thread stops or restarts the
 * server. The lifecycle calls (stop, kill, freeze, thaw, start_again,
 * restart, free) on one server must not race each other.
 */
#ifndef RT_SERVER_H
#define RT_SERVER_H

#include <stdbool.h>
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

int rt_server_port(const rt_server *s);
/* "redis://127.0.0.1:PORT"; valid until rt_server_free(). */
const char *rt_server_url(const rt_server *s);
/* The server's unix socket; valid until rt_server_free(). */
const char *rt_server_unix_path(const rt_server *s);
/* The server's temporary directory (holds redis.log); until rt_server_free(). */
const char *rt_server_dir(const rt_server *s);
/* The server's pid, or 0 while it is stopped. */
pid_t rt_server_pid(const rt_server *s);

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
 * A new blocking hiredis connection to the server's TCP port, made with
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

/* Call in a freshly fork()ed child that does not exec: the child forgets the
   parent's servers, so its exit or death never touches them. The child may
   still use rt_cmd()/rt_server_connect() on them (if no other thread of the
   parent was inside rt_cmd() on the same server at the fork), but must not
   start, stop, kill, freeze or thaw one. rt_server_free() in the child frees
   just the child's copy of the object; worth doing before the child exits
   under valgrind, which checks children for leaks too. */
void rt_forked_child(void);

#endif /* RT_SERVER_H */
