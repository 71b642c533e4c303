/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench.h - rlock-bench: shared declarations of the benchmark program.
 *
 * rlock-bench measures the library against a running server. Every figure
 * is a wall-clock time on CLOCK_MONOTONIC. The workloads:
 *   uncontended  one thread, one lock: cost of a lock+unlock pair next to
 *                the "floor" (the same two scripts sent from a bare
 *                hiredis loop) and next to a PING round trip;
 *   contended    N processes taking turns on one lock: throughput and the
 *                release-to-next-holder handoff latency;
 *   fair         the same on a fair lock, where nearly every acquisition
 *                is a handoff, with the queue depth at the handoffs;
 *   rw           R reader and W writer processes on one read-write lock:
 *                read and write acquisitions per second and the handoff
 *                latencies to writers and to readers;
 *   many         T threads of one process sharing one client over L locks:
 *                lock+unlock pairs per second;
 *   redlock      one thread: a RedLock's lock+unlock over N servers next to
 *                a plain lock's on the first of them, showing whether the
 *                members are contacted in parallel;
 *   handoff      processes in a strict ping-pong on one lock, the waiter
 *                asleep at each release: the library's waiter next to a
 *                bare single-threaded hiredis one, in interleaved rounds;
 *   sync         the semaphores' pairs and handoff next to the lock's;
 *   semaphore    one permit at a time of either semaphore kind: pairs in
 *                a row, or N processes on P permits (bench_sem.c).
 *
 * Everything talks to the library through its public API only (no header
 * of src/lib). The floor and handoff's bare waiter (raw.c) send the
 * library's own lock_acquire and lock_release scripts, embedded again for
 * the bench at build time (bench_script_*, below), so that they send
 * byte-for-byte the library's EVALSHA commands, and read the -u URL with
 * a small parser of their own (url.c) that accepts what the library does
 * for one server: redis://, unix://, credentials, a database.
 *
 * Exit status: 0 measured, 1 something failed while measuring (server
 * down, unexpected reply, ...), 64 bad command line (one line on stderr).
 */
#ifndef RLOCK_BENCH_H
#define RLOCK_BENCH_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "rlock.h"

#define BENCH_EXIT_FAIL 1
#define BENCH_EXIT_USAGE 64

/* uncontended: steps per block; each block runs on fresh connections
 * (see bench_uncontended.c). */
#define BENCH_BLOCK 1000

/* Most servers (-u) in one run: a RedLock's most members. */
#define BENCH_MAX_URLS RLOCK_MAX_REDLOCK_MEMBERS

/* The parsed command line. Fields a workload does not use keep their
 * defaults; main.c rejects options that do not apply to the workload. */
typedef struct bench_args {
  const char *url;                  /* the first -u, else $RLOCK_URL, else the
                                       default: urls[0] */
  const char *urls[BENCH_MAX_URLS]; /* every -u in order (redlock: the
                                       servers); at least one */
  int nurls;
  int json;             /* --json: one JSON object on one line */
  const char *workload; /* "uncontended", "contended", "fair", "rw",
                           "many", "redlock", "tls", "loop" or
                           "handoff" */
  int fair;             /* fair: bench_contended() on a fair lock */
  long ops;             /* uncontended, contended, fair, rw, redlock,
                           handoff: operations (per process; handoff:
                           per process and phase) */
  int procs;            /* contended, fair, handoff: processes */
  int readers;          /* rw: reader processes */
  int writers;          /* rw: writer processes */
  long think_us;        /* contended, fair, rw: pause outside the lock */
  int threads;          /* many: threads */
  int locks;            /* many: distinct lock names */
  double seconds;       /* many: run time */
  long hold_us;         /* handoff: pause while holding ... */
  long hold_max_us;     /* ... or a random one from hold_us to this */
  int rounds;           /* handoff: rounds (a phase of each waiter);
                           contended --floor: rounds (a run of each) */
  int floor;            /* contended --floor: the floor's runs too */
  int deferred_shift;   /* fair --deferred-shift: the clients defer the
                           fair deadline shift (config.h) */
  int expirable;        /* semaphore --kind expirable (else plain) */
  int permits;          /* semaphore: permits (with --procs) */
  int ping_pong;        /* semaphore --ping-pong: strict turns */
  int driver_event;     /* loop --driver event (else uv) */
} bench_args;

/* ---- workloads (bench_<name>.c); each returns an exit status -------- */

int bench_uncontended(const bench_args *a);
int bench_contended(const bench_args *a); /* also fair (a->fair) */
int bench_rw(const bench_args *a);
int bench_many(const bench_args *a);
int bench_redlock(const bench_args *a);
int bench_tls(const bench_args *a);  /* urls[0] TCP, urls[1] TLS */
int bench_loop(const bench_args *a); /* threads: acquisitions in flight */
int bench_handoff(const bench_args *a);
int bench_sync(const bench_args *a);      /* semaphores next to the lock */
int bench_semaphore(const bench_args *a); /* bench_sem.c */

/* ---- stats.c: time and samples --------------------------------------- */

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t bench_now_ns(void);

/* Sleep `us` microseconds on CLOCK_MONOTONIC (0: return at once). */
void bench_sleep_us(long us);

/* xorshift64: the next pseudo-random number of state *s (never 0). */
uint64_t bench_rand(uint64_t *s);

/* A preallocated series of durations in nanoseconds. push() never
 * allocates, so it is safe in a timed loop; it drops samples beyond the
 * capacity (callers size it exactly). */
typedef struct bench_samples {
  int64_t *v;
  size_t n;
  size_t cap;
} bench_samples;

int bench_samples_init(bench_samples *s, size_t cap); /* 0 or -1 (ENOMEM) */
void bench_samples_push(bench_samples *s, int64_t ns);
void bench_samples_free(bench_samples *s);

/* The p-th percentile (0..100) of v[0..n), by linear interpolation
 * between the closest ranks, in v's unit; NaN when n is 0. Sorts v in
 * place. The _us form takes nanoseconds and returns microseconds. */
double bench_percentile(int64_t *v, size_t n, double p);
double bench_percentile_us(int64_t *v, size_t n, double p);
/* The same over a series, in microseconds (sorts it). */
double bench_samples_us(bench_samples *s, double p);

/* ---- report.c: the result listing ------------------------------------ */

/* Prints "key: value" lines, or with json one object on one line whose
 * first key is "workload". Values are numbers or lists of numbers; NaN is
 * printed as null (n/a in text). */
typedef struct bench_report {
  int json;
  int fields;
} bench_report;

void bench_report_begin(bench_report *r, int json, const char *workload);
void bench_report_num(bench_report *r, const char *key, double v, int decimals);
/* A list of numbers: a JSON array, or in text separated by spaces. */
void bench_report_nums(bench_report *r, const char *key, const double *v,
                       size_t n, int decimals);
void bench_report_int(bench_report *r, const char *key, long long v);
void bench_report_end(bench_report *r);

/* ---- raw.c: bare hiredis connections ---------------------------------- */

/* Open a blocking hiredis connection to the server `url` names, of the
 * same kind the library opens (TCP_NODELAY, 3 s I/O timeout, AUTH and
 * SELECT as the URL asks). NULL after printing why. */
redisContext *bench_raw_connect(const char *url);

/* Run one command; returns the reply, or NULL after printing why (error
 * replies count as failures). The caller frees the reply. */
redisReply *bench_raw_cmd(redisContext *c, int argc, const char **argv,
                          const size_t *lens);

/* Pipelining: queue a command (0, or -1 printed), then read the replies
 * in order with bench_raw_reply() (NULL after printing why, naming the
 * command `what`; error replies count as failures). */
int bench_raw_append(redisContext *c, int argc, const char **argv);
redisReply *bench_raw_reply(redisContext *c, const char *what);

/* A Lua script of the library's, with its SHA1, embedded at build time by
 * cmake/embed_scripts.cmake from the library's own .lua files. */
typedef struct bench_script {
  const char *name; /* file stem */
  const char *sha;  /* 40 lower-case hex digits */
  const char *text;
  size_t len;
} bench_script;

extern const bench_script bench_script_lock_acquire;
extern const bench_script bench_script_lock_release;

/* Where the bare hiredis connections go, read from a -u URL:
 * redis://[[user]:password@]host[:port][/db] (host a name, an IPv4 address
 * or [an IPv6 one]; port 6379 by default) or
 * unix://[[user]:password@]/path[?db=N], user and password %-decoded. A
 * bare connection speaks no TLS: rediss:// is refused. */
typedef struct bench_url {
  char host[256]; /* "" for a unix socket */
  int port;
  char path[108]; /* the unix socket, or "" */
  char user[256]; /* "": AUTH with the password only */
  char password[256];
  int has_password; /* AUTH at all */
  int db;           /* SELECT db when non-zero */
} bench_url;

/* Parse `url` into *u: 0, or -1 after printing why (bench_fail). */
int bench_url_parse(bench_url *u, const char *url);

/* The library's lock_acquire and lock_release scripts as a bare client
 * sends them: by EVALSHA with the SHA1 embedded at build time
 * (bench_script_*), the library's default lease (its watchdog timeout, 30 s),
 * an owner shaped like the library's ("<uuid>:<tid>", a fresh random
 * UUID) and Redisson's channel name, so that they are byte-for-byte the
 * library's commands. acq and rel point into the struct: do not copy it
 * after bench_lock_cmds_init(). */
typedef struct bench_lock_cmds {
  char owner[RLOCK_OWNER_MAX];
  char channel[RLOCK_MAX_NAME_LEN + 64]; /* redisson_lock__channel:{NAME} */
  char latch[RLOCK_MAX_NAME_LEN + 64];
  const char *acq[6];  /* answered nil (taken) or the holder's TTL */
  const char *rel[11]; /* answered 1 (deleted, unlock "0" published) */
} bench_lock_cmds;

void bench_lock_cmds_init(bench_lock_cmds *f, const char *name);

/* SCRIPT LOAD both scripts, so that EVALSHA never meets NOSCRIPT, and
 * check that the server hashes them as embedded. 0 or -1
 * (printed). */
int bench_load_lock_scripts(const char *url);

/* Time `n` PINGs, one after the other, into `out`. 0 or -1 (printed). */
int bench_raw_ping(redisContext *c, bench_samples *out, size_t n);

/* Time one PING fan-out into `out`: a PING written to each of the `n`
 * connections, then every reply read; the servers work on theirs at the
 * same time, so it costs about the slowest round trip, not the sum.
 * 0 or -1 (printed). */
int bench_raw_ping_fanout(redisContext *const *c, int n, bench_samples *out);

/* ---- util.c: shared helpers ------------------------------------------- */

/* Print "rlock-bench: <message>" on stderr; returns BENCH_EXIT_FAIL. */
int bench_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Same, appending the library's status and last error message. */
int bench_fail_rc(const char *what, int rc);

/* A client for `url` with the library's defaults otherwise. NULL after
 * printing why. */
rlock_client *bench_client_new(const char *url);
/* bench_client_new with the fair lock's deadline shift deferred or not. */
rlock_client *bench_client_new_fair(const char *url, int deferred_shift);

/* A "<uuid>:<tid>" string shaped like the library's owner fields, with a
 * fresh random UUID (so it never equals a real client's). */
void bench_fake_owner(char *buf, size_t size);

/* `base` + ":" + decimal pid, for key names private to this run. */
void bench_key(char *buf, size_t size, const char *base, long pid);

/* How many blocks of BENCH_BLOCK steps `ops` steps take. */
long bench_block_count(long ops);

/* Run `ops` steps in blocks: block(arg, n) once per block, n its steps
 * (BENCH_BLOCK, fewer in the last). 0, or -1 at the first block that
 * fails (nonzero). */
int bench_run_blocks(long ops, int (*block)(void *arg, long n), void *arg);

#endif /* RLOCK_BENCH_H */
