/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * main.c - rlock-bench: command line parsing and dispatch.
 *
 *   rlock-bench [-u URL]... [--json] WORKLOAD [options]
 *
 * -u/--url and --json may appear anywhere; -u may be repeated only for
 * redlock (one server per -u) and tls (the same server over TCP, then
 * over TLS). A usage error prints one line on stderr
 * and exits 64; --help prints the full usage on stdout; --script NAME
 * prints a script's text as the library embeds it, and connects to
 * nothing.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define DEFAULT_URL "redis://127.0.0.1:6379"

static const char USAGE[] =
    "usage: rlock-bench [-u URL]... [--json] WORKLOAD [options]\n"
    "       rlock-bench --script lock_acquire|lock_release\n"
    "\n"
    "  -u, --url URL   server (default $RLOCK_URL, else " DEFAULT_URL ");\n"
    "                  redlock: repeat it, once per server; tls: twice\n"
    "  --json          print one JSON object on one line\n"
    "  --script NAME   print the script's text exactly as the library\n"
    "                  embeds it (includes expanded), for SCRIPT LOAD\n"
    "\n"
    "workloads:\n"
    "  uncontended [--ops K]     one thread, one lock: lock+unlock pairs\n"
    "                            vs the same scripts from a bare hiredis\n"
    "                            loop (K default 20000)\n"
    "  contended --procs N --ops K [--think-us T] [--floor [--rounds R]]\n"
    "                            N processes take turns on one lock, K\n"
    "                            acquisitions each, pausing T us between;\n"
    "                            --floor: R runs (default 5) of it and of\n"
    "                            the floor (Redisson's protocol on bare\n"
    "                            hiredis) alternating, acquisitions/s and\n"
    "                            server calls per acquisition of each\n"
    "  fair --procs N --ops K [--think-us T] [--deferred-shift]\n"
    "                            the same on a fair lock (about N-1\n"
    "                            waiters queued at each handoff);\n"
    "                            --deferred-shift: clients defer the\n"
    "                            deadline shift (config.h)\n"
    "  rw --readers R --writers W --ops K [--think-us T]\n"
    "                            R readers and W writers on one read-write\n"
    "                            lock, K acquisitions each, pausing T us\n"
    "                            between\n"
    "  many [--threads T] [--locks L] [--seconds S]\n"
    "                            T threads, one client, random locks out\n"
    "                            of L (defaults 16, 1000, 5)\n"
    "  redlock [--ops K]         one thread: RedLock lock+unlock over the\n"
    "                            -u servers vs a lock on the first one\n"
    "                            (K default 20000)\n"
    "  tls [--ops K]             -u redis://... -u rediss://... (one\n"
    "                            server): lock+unlock pairs and a fresh\n"
    "                            client's first PING over TCP vs TLS\n"
    "  loop [--driver uv|event] [--threads N] [--locks L] [--seconds S]\n"
    "       [--ops K]\n"
    "                            one loop thread (libuv, or libevent with\n"
    "                            event), one loop client: N acquisitions\n"
    "                            in flight over L locks for S s (pairs/s),\n"
    "                            then K handoffs to an async waiter that\n"
    "                            started waiting 2 ms before, then\n"
    "                            max(20, K/200) to one asleep 5-105 ms,\n"
    "                            then max(20, K/100) 2 ms bounded waits\n"
    "                            on a held lock (the client's timer)\n"
    "                            (defaults uv, 16, 1000, 5, 20000)\n"
    "  handoff [--procs N] [--ops K] [--rounds R] [--hold-us H]\n"
    "          [--hold-max-us M]\n"
    "                            N processes in a ping-pong, each holding\n"
    "                            H us (with M, a random time from H to M\n"
    "                            each turn, e.g. 5000 and 105000 for a\n"
    "                            waiter asleep 5-105 ms), the next one\n"
    "                            asleep in its wait:\n"
    "                            handoff to the library's waiter vs a bare\n"
    "                            single-threaded hiredis subscriber\n"
    "                            blocked in read(), R rounds of a phase\n"
    "                            of each, K acquisitions per process a\n"
    "                            phase (defaults 2, 100, 30, 300)\n"
    "  sync [--ops K]            one client: lock, semaphore (1 permit) and\n"
    "                            permit-expirable semaphore pairs, step by\n"
    "                            step, then handoffs to a waiting thread,\n"
    "                            lock and semaphore alternating (K default\n"
    "                            20000; K/20 handoffs, at least 50)\n"
    "  semaphore [--kind plain|expirable] [--ops K]\n"
    "            [--procs N [--permits P] [--hold-us H] [--think-us T]\n"
    "             [--ping-pong]]\n"
    "                            one permit at a time of a semaphore\n"
    "                            (plain) or a permit-expirable one taken\n"
    "                            with the watchdog (expirable); without\n"
    "                            --procs one thread: K acquire+release\n"
    "                            pairs; with it N processes on P permits\n"
    "                            (default 1), K acquisitions each, holding\n"
    "                            H us (default 0), pausing T us between;\n"
    "                            --ping-pong: strict turns, the next one\n"
    "                            asleep in its wait (K default 20000)\n";

enum {
  W_UNCONTENDED = 1,
  W_CONTENDED = 2,
  W_MANY = 4,
  W_FAIR = 8,
  W_RW = 16,
  W_REDLOCK = 32,
  W_TLS = 64,
  W_LOOP = 128,
  W_HANDOFF = 256,
  W_SYNC = 512,
  W_SEMAPHORE = 1024
};
#define W_TURNS (W_CONTENDED | W_FAIR | W_RW) /* processes taking turns */
#define WORKLOAD_LIST                                                          \
  "uncontended, contended, fair, rw, many, redlock, tls, loop, handoff, "      \
  "sync, semaphore"
/* At most this many processes in a run (--procs; --readers + --writers). */
#define MAX_PROCS 256

static const struct {
  const char *name;
  unsigned mask;
} WORKLOADS[] = {{"uncontended", W_UNCONTENDED},
                 {"contended", W_CONTENDED},
                 {"fair", W_FAIR},
                 {"rw", W_RW},
                 {"many", W_MANY},
                 {"redlock", W_REDLOCK},
                 {"tls", W_TLS},
                 {"loop", W_LOOP},
                 {"handoff", W_HANDOFF},
                 {"sync", W_SYNC},
                 {"semaphore", W_SEMAPHORE}};

/* Workload options: which workloads take them and their valid range. */
typedef struct opt_spec {
  const char *name;
  unsigned workloads;
  double lo, hi;
  int integer;
} opt_spec;

enum {
  O_OPS,
  O_PROCS,
  O_READERS,
  O_WRITERS,
  O_THINK,
  O_THREADS,
  O_LOCKS,
  O_SECONDS,
  O_ROUNDS,
  O_HOLD,
  O_HOLD_MAX,
  O_PERMITS,
  O_COUNT
};

static const opt_spec OPTS[O_COUNT] = {
    [O_OPS] = {"--ops",
               W_UNCONTENDED | W_TURNS | W_REDLOCK | W_TLS | W_LOOP |
                   W_HANDOFF | W_SYNC | W_SEMAPHORE,
               1, 100000000, 1},
    [O_PROCS] = {"--procs", W_CONTENDED | W_FAIR | W_HANDOFF | W_SEMAPHORE, 1,
                 MAX_PROCS, 1},
    [O_READERS] = {"--readers", W_RW, 1, MAX_PROCS - 1, 1},
    [O_WRITERS] = {"--writers", W_RW, 1, MAX_PROCS - 1, 1},
    [O_THINK] = {"--think-us", W_TURNS | W_SEMAPHORE, 0, 10000000, 1},
    [O_THREADS] = {"--threads", W_MANY | W_LOOP, 1, 100000, 1},
    [O_LOCKS] = {"--locks", W_MANY | W_LOOP, 1, 1000000, 1},
    [O_SECONDS] = {"--seconds", W_MANY | W_LOOP, 0.1, 3600, 0},
    [O_ROUNDS] = {"--rounds", W_HANDOFF | W_CONTENDED, 1, 1000, 1},
    [O_HOLD] = {"--hold-us", W_HANDOFF | W_SEMAPHORE, 0, 10000000, 1},
    [O_HOLD_MAX] = {"--hold-max-us", W_HANDOFF, 0, 10000000, 1},
    [O_PERMITS] = {"--permits", W_SEMAPHORE, 1, 1000000, 1},
};

typedef struct parsed {
  bench_args args;
  unsigned workload; /* W_* */
  double val[O_COUNT];
  int given[O_COUNT];
  int help;
  const char *script; /* --script NAME */
  const char *kind;   /* semaphore --kind */
  const char *driver; /* loop --driver */
} parsed;

static int usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("rlock-bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputs(" (see rlock-bench --help)\n", stderr);
  va_end(ap);
  return BENCH_EXIT_USAGE;
}

static int parse_value(const opt_spec *o, const char *s, double *out) {
  char *end;
  errno = 0;
  double v = o->integer ? (double)strtol(s, &end, 10) : strtod(s, &end);
  if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || v < o->lo ||
      v > o->hi)
    return usage_error("%s takes %s from %.15g to %.15g (got '%s')", o->name,
                       o->integer ? "an integer" : "a number", o->lo, o->hi, s);
  *out = v;
  return 0;
}

/* Split "--name=value" or take the next word as the value. */
static int take_value(int argc, char **argv, int *i, const char *name,
                      const char **value) {
  size_t n = strlen(name);
  if (argv[*i][n] == '=') {
    *value = argv[*i] + n + 1;
    return 0;
  }
  if (*i + 1 >= argc)
    return usage_error("%s needs a value", name);
  *value = argv[++*i];
  return 0;
}

/* Does argv word `w` name option `name` (alone or as "name=...")? */
static int is_opt(const char *w, const char *name) {
  size_t n = strlen(name);
  return strncmp(w, name, n) == 0 && (w[n] == '\0' || w[n] == '=');
}

static int parse_workload(parsed *p, const char *w) {
  if (p->args.workload != NULL)
    return usage_error("unexpected argument '%s'", w);
  for (size_t i = 0; i < sizeof WORKLOADS / sizeof *WORKLOADS; i++)
    if (strcmp(w, WORKLOADS[i].name) == 0) {
      p->args.workload = WORKLOADS[i].name;
      p->workload = WORKLOADS[i].mask;
      return 0;
    }
  return usage_error("unknown workload '%s' (" WORKLOAD_LIST ")", w);
}

static int add_url(bench_args *a, const char *url) {
  if (a->nurls == BENCH_MAX_URLS)
    return usage_error("at most %d servers (-u)", BENCH_MAX_URLS);
  a->urls[a->nurls++] = url;
  return 0;
}

static int parse_word(parsed *p, int argc, char **argv, int *i) {
  const char *w = argv[*i], *v = NULL;
  if (strcmp(w, "-h") == 0 || strcmp(w, "--help") == 0)
    return p->help = 1, 0;
  if (strcmp(w, "--json") == 0)
    return p->args.json = 1, 0;
  if (strcmp(w, "--floor") == 0)
    return p->args.floor = 1, 0;
  if (strcmp(w, "--deferred-shift") == 0)
    return p->args.deferred_shift = 1, 0;
  if (strcmp(w, "--ping-pong") == 0)
    return p->args.ping_pong = 1, 0;
  if (is_opt(w, "--kind"))
    return take_value(argc, argv, i, "--kind", &p->kind);
  if (is_opt(w, "--driver"))
    return take_value(argc, argv, i, "--driver", &p->driver);
  if (is_opt(w, "--script"))
    return take_value(argc, argv, i, "--script", &p->script);
  if (strcmp(w, "-u") == 0 || is_opt(w, "--url")) {
    int rc = take_value(argc, argv, i, w[1] == 'u' ? "-u" : "--url", &v);
    return rc != 0 ? rc : add_url(&p->args, v);
  }
  for (int o = 0; o < O_COUNT; o++)
    if (is_opt(w, OPTS[o].name)) {
      int rc = take_value(argc, argv, i, OPTS[o].name, &v);
      if (rc == 0 && (rc = parse_value(&OPTS[o], v, &p->val[o])) == 0)
        p->given[o] = 1;
      return rc;
    }
  if (w[0] == '-')
    return usage_error("unknown option '%s'", w);
  return parse_workload(p, w);
}

/* rw needs --readers, --writers and --ops, and at most MAX_PROCS
 * processes in all. */
static int check_rw(const parsed *p) {
  if (!p->given[O_READERS] || !p->given[O_WRITERS] || !p->given[O_OPS])
    return usage_error("rw needs --readers R, --writers W and --ops K");
  if (p->val[O_READERS] + p->val[O_WRITERS] > MAX_PROCS)
    return usage_error("--readers plus --writers is at most %d (got %.0f)",
                       MAX_PROCS, p->val[O_READERS] + p->val[O_WRITERS]);
  return 0;
}

/* semaphore: --kind plain|expirable; the processes' options need
 * --procs. */
static int check_semaphore(parsed *p) {
  if (p->kind != NULL && strcmp(p->kind, "plain") != 0 &&
      strcmp(p->kind, "expirable") != 0)
    return usage_error("--kind takes plain or expirable (got '%s')", p->kind);
  p->args.expirable = p->kind != NULL && strcmp(p->kind, "expirable") == 0;
  if (!p->given[O_PROCS] && (p->given[O_PERMITS] || p->given[O_HOLD] ||
                             p->given[O_THINK] || p->args.ping_pong))
    return usage_error("--permits, --hold-us, --think-us and --ping-pong "
                       "need --procs N");
  if (p->args.ping_pong && p->val[O_PROCS] < 2)
    return usage_error("--ping-pong needs --procs 2 or more");
  return 0;
}

/* Options must fit the workload; contended and fair need --procs and
 * --ops. */
static int check_combination(parsed *p) {
  if (p->args.workload == NULL)
    return usage_error("no workload given (" WORKLOAD_LIST ")");
  if (p->args.nurls > 1 && p->workload != W_REDLOCK && p->workload != W_TLS)
    return usage_error("-u given %d times: only redlock and tls take "
                       "several",
                       p->args.nurls);
  if (p->workload == W_TLS && p->args.nurls != 2)
    return usage_error("tls needs two -u: redis://HOST:PORT, then "
                       "rediss://HOST:TLSPORT of the same server");
  for (int o = 0; o < O_COUNT; o++)
    if (p->given[o] && !(OPTS[o].workloads & p->workload))
      return usage_error("%s does not apply to %s", OPTS[o].name,
                         p->args.workload);
  if (p->workload == W_MANY && p->given[O_THREADS] && p->val[O_THREADS] > 256)
    return usage_error("many takes --threads from 1 to 256 (got %.0f)",
                       p->val[O_THREADS]);
  if ((p->kind != NULL || p->args.ping_pong) && p->workload != W_SEMAPHORE)
    return usage_error("--kind and --ping-pong apply to semaphore only");
  if (p->driver != NULL && p->workload != W_LOOP)
    return usage_error("--driver applies to loop only");
  if (p->driver != NULL && strcmp(p->driver, "uv") != 0 &&
      strcmp(p->driver, "event") != 0)
    return usage_error("--driver takes uv or event (got '%s')", p->driver);
  p->args.driver_event = p->driver != NULL && strcmp(p->driver, "event") == 0;
  if (p->workload == W_RW)
    return check_rw(p);
  if (p->workload == W_HANDOFF && p->given[O_PROCS] && p->val[O_PROCS] < 2)
    return usage_error("handoff takes --procs from 2 to %d (got %.0f)",
                       MAX_PROCS, p->val[O_PROCS]);
  if (p->args.floor && p->workload != W_CONTENDED)
    return usage_error("--floor applies to contended only");
  if (p->args.deferred_shift && p->workload != W_FAIR)
    return usage_error("--deferred-shift applies to fair only");
  if (p->given[O_ROUNDS] && p->workload == W_CONTENDED && !p->args.floor)
    return usage_error("--rounds applies to contended only with --floor");
  if (p->given[O_HOLD_MAX] &&
      p->val[O_HOLD_MAX] < (p->given[O_HOLD] ? p->val[O_HOLD] : 300))
    return usage_error("--hold-max-us must be at least --hold-us");
  if ((p->workload & W_TURNS) && (!p->given[O_PROCS] || !p->given[O_OPS]))
    return usage_error("%s needs --procs N and --ops K", p->args.workload);
  return p->workload == W_SEMAPHORE ? check_semaphore(p) : 0;
}

static int check_url(const char *url) {
  rlock_config *cfg;
  if (rlock_config_new(&cfg) != RLOCK_OK)
    return bench_fail("out of memory");
  int rc = rlock_config_set_url(cfg, url);
  rlock_config_free(cfg);
  return rc == RLOCK_OK ? 0 : usage_error("%s", rlock_error_last()->message);
}

static void apply_values(parsed *p) {
  bench_args *a = &p->args;
  int handoff = p->workload == W_HANDOFF;
  a->ops = p->given[O_OPS] ? (long)p->val[O_OPS] : handoff ? 100 : 20000;
  a->fair = p->workload == W_FAIR;
  a->procs = p->given[O_PROCS] ? (int)p->val[O_PROCS] : handoff ? 2 : 0;
  a->readers = (int)p->val[O_READERS];
  a->writers = (int)p->val[O_WRITERS];
  a->think_us = p->given[O_THINK] ? (long)p->val[O_THINK] : 0;
  a->threads = p->given[O_THREADS] ? (int)p->val[O_THREADS] : 16;
  a->locks = p->given[O_LOCKS] ? (int)p->val[O_LOCKS] : 1000;
  a->seconds = p->given[O_SECONDS] ? p->val[O_SECONDS] : 5.0;
  a->rounds = p->given[O_ROUNDS]         ? (int)p->val[O_ROUNDS]
              : p->workload == W_HANDOFF ? 30
                                         : 5;
  a->hold_us = p->given[O_HOLD]             ? (long)p->val[O_HOLD]
               : p->workload == W_SEMAPHORE ? 0
                                            : 300;
  a->permits = p->given[O_PERMITS] ? (int)p->val[O_PERMITS] : 1;
  a->hold_max_us = p->given[O_HOLD_MAX] ? (long)p->val[O_HOLD_MAX] : a->hold_us;
  if (a->nurls == 0) {
    const char *env = getenv("RLOCK_URL");
    a->urls[a->nurls++] = env != NULL && env[0] != '\0' ? env : DEFAULT_URL;
  }
  a->url = a->urls[0];
}

/* --script NAME: write the embedded text of a script the floor sends, byte
 * for byte, so that SCRIPT LOAD of it answers the library's SHA1. */
static int print_script(const char *name) {
  static const bench_script *const known[] = {&bench_script_lock_acquire,
                                              &bench_script_lock_release};
  for (size_t i = 0; i < sizeof known / sizeof *known; i++)
    if (strcmp(name, known[i]->name) == 0)
      return fwrite(known[i]->text, 1, known[i]->len, stdout) == known[i]->len
                 ? 0
                 : bench_fail("cannot write the script");
  return usage_error("--script takes lock_acquire or lock_release (got '%s')",
                     name);
}

int main(int argc, char **argv) {
  parsed p;
  memset(&p, 0, sizeof p);
  for (int i = 1; i < argc; i++) {
    int rc = parse_word(&p, argc, argv, &i);
    if (rc != 0)
      return rc;
  }
  if (p.help) {
    fputs(USAGE, stdout);
    return 0;
  }
  if (p.script != NULL)
    return p.args.workload != NULL ? usage_error("--script takes no workload")
                                   : print_script(p.script);
  int rc = check_combination(&p);
  if (rc != 0)
    return rc;
  apply_values(&p);
  for (int i = 0; i < p.args.nurls; i++)
    if ((rc = check_url(p.args.urls[i])) != 0)
      return rc;
  /* A server that goes away must fail a write, not kill the process. */
  signal(SIGPIPE, SIG_IGN);
  fflush(stdout);
  switch (p.workload) {
  case W_UNCONTENDED:
    return bench_uncontended(&p.args);
  case W_CONTENDED:
  case W_FAIR:
    return bench_contended(&p.args);
  case W_RW:
    return bench_rw(&p.args);
  case W_REDLOCK:
    return bench_redlock(&p.args);
  case W_TLS:
    return bench_tls(&p.args);
  case W_LOOP:
    return bench_loop(&p.args);
  case W_HANDOFF:
    return bench_handoff(&p.args);
  case W_SYNC:
    return bench_sync(&p.args);
  case W_SEMAPHORE:
    return bench_semaphore(&p.args);
  default:
    return bench_many(&p.args);
  }
}
