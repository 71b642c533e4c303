/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_exec.c - `rlock exec`: hold a lock while a command runs.
 *
 *   rlock [-u URL] [--watchdog DUR] exec [-w DUR] [-l DUR] NAME -- COMMAND...
 *
 * Acquire (in one wait a signal can end, see waiting.c), run COMMAND as a
 * child (spawn.c) while the library's watchdog renews the lease, release,
 * and exit with COMMAND's status. With --fenced, COMMAND finds the
 * acquisition's fencing token in $RLOCK_TOKEN. With --permits N, NAME is a
 * permit-expirable semaphore (set to N permits when it has none) and one
 * permit is held instead of a lock, its id in $RLOCK_PERMIT_ID.
 */
#include <errno.h>
#include <stdio.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

typedef struct exec_args {
  int64_t wait_ms;  /* RLOCK_WAIT_FOREVER, or 0.. */
  int64_t lease_ms; /* RLOCK_LEASE_WATCHDOG, or 1.. */
  cli_kind kind;    /* --fair, --read, --write, --fenced, --spin, or a
                       plain lock */
  const char *name; /* the first name */
  char **names;     /* every NAME before "--": several make a MultiLock */
  int nnames;
  char **command;         /* NULL-terminated */
  int on_lost_ignore;     /* --on-lost ignore */
  int64_t kill_after_ms;  /* --kill-after */
  int64_t period_ms;      /* how often to look at the lock: the renewal
                             period, or --check-every if shorter */
  int64_t check_every_ms; /* --check-every: ask the server, or 0 */
  int conflict_status;    /* -E: the status for "not acquired" */
  int verbose;            /* -v */
  int64_t release_ms;     /* bound on the release: the command timeout */
  int no_retry;           /* --retry-for 0, or -w 0: a failure ends the wait,
                             and is told by its own message */
  int64_t permits;        /* --permits N: hold a permit of the semaphore
                             NAME, set to N when it has none; 0: a lock */
} exec_args;

/* exec's defaults: wait for ever, the watchdog, a reentrant lock, the
 * default --kill-after (10 s), 75 when the lock is not acquired. */
#define EXEC_ARGS_INIT                                                         \
  {                                                                            \
    RLOCK_WAIT_FOREVER, RLOCK_LEASE_WATCHDOG, CLI_LOCK, NULL, NULL, 0, NULL,   \
        0, 10000, 0, 0, EX_TEMPFAIL, 0, CLI_COMMAND_TIMEOUT_MS, 0, 0           \
  }

static const char exec_help[] =
    "Usage: rlock [-u URL]... [OPTION]... exec\n"
    "             [--fair|--read|--write|--fenced|--spin|--permits N]\n"
    "             [-n|-w DUR] [-l DUR] [-E CODE] [--on-lost ACTION]\n"
    "             [--kill-after DUR] [--check-every DUR] [-v]\n"
    "             NAME [NAME...] -- COMMAND [ARG...]\n"
    "\n"
    "Acquire the lock NAME, run COMMAND while holding it, release it once\n"
    "COMMAND and every process it started have exited (as flock does; once\n"
    "COMMAND has exited, a signal to rlock ends the rest), and exit with\n"
    "COMMAND's status. COMMAND finds NAME in $RLOCK_NAME.\n"
    "COMMAND runs in a process group of its own, which gets the signals\n"
    "TERM, HUP, INT and QUIT that rlock gets; on a terminal where rlock is\n"
    "in the foreground, that group is, so Ctrl-C and Ctrl-\\ reach it\n"
    "directly, once, and Ctrl-Z stops the whole job.\n"
    "Should the renewed lock be lost while COMMAND runs (deleted, expired,\n"
    "taken over, or not renewed for a whole lease), the group is terminated\n"
    "and rlock exits 76 (see --on-lost). rlock learns of a loss at the next\n"
    "renewal (within a third of the lease, see --watchdog), at the next\n"
    "--check-every, or at the release at the latest. Should rlock die,\n"
    "COMMAND gets SIGTERM.\n"
    "Several NAMEs are taken together, all or none (a MultiLock), in the\n"
    "order given: give them in the same order everywhere (e.g. sorted).\n"
    "With --permits N, NAME is a semaphore instead, and COMMAND runs while\n"
    "holding one of its N permits (what is said here of the lock holds of\n"
    "that permit).\n"
    "While it runs, rlock's registry record (key rlock:client:<client id>,\n"
    "written at the start and every 10 s, gone 30 s after rlock is) names\n"
    "its host, its pid, COMMAND with its arguments, its version and start\n"
    "time, which 'rlock status' and 'rlock list' show beside its owner.\n"
    "\n"
    "Options:\n"
    "  -w, --wait DUR, --timeout DUR\n"
    "                    give up if the lock is not acquired within DUR\n"
    "                    (0: try once); default: wait as long as it takes\n"
    "  -n, --nonblock    try once: the same as -w 0\n"
    "  -E, --conflict-exit-code CODE\n"
    "                    exit with CODE (0 to 255) instead of 75 when the\n"
    "                    lock is not acquired within -w\n"
    "  -l, --lease DUR   hold the lock for at most DUR (it then expires even\n"
    "                    if COMMAND still runs); default: keep renewing it\n"
    "                    while COMMAND runs (see --watchdog)\n"
    "      --fair        take NAME as a fair lock: waiters get it in the\n"
    "                    order they asked (Redisson's RFairLock)\n"
    "      --read        take the read half of the read-write lock NAME:\n"
    "                    many readers may hold it at once\n"
    "      --write       take the write half of the read-write lock NAME:\n"
    "                    one writer and no readers\n"
    "      --fenced      take NAME as a fenced lock (Redisson's RFencedLock)\n"
    "                    and give COMMAND this acquisition's fencing token in\n"
    "                    $RLOCK_TOKEN (decimal), larger than any issued for\n"
    "                    NAME before. Pass it to what COMMAND writes to,\n"
    "                    which should refuse a token below the highest it\n"
    "                    has seen: a holder paused past its lease while\n"
    "                    another took over. One NAME and one -u only\n"
    "      --spin        take NAME as a spin lock (Redisson's RSpinLock): "
    "wait\n"
    "                    by retrying with back-off (1ms doubling to 128ms)\n"
    "                    instead of listening for pub/sub unlock messages\n"
    "                    (servers or proxies without pub/sub)\n"
    "      --permits N   hold one permit of the permit-expirable semaphore\n"
    "                    NAME (Redisson's RPermitExpirableSemaphore), which\n"
    "                    is set to N permits (1 to 2147483647) when it has\n"
    "                    none, instead of a lock: at most N COMMANDs run at\n"
    "                    once. COMMAND finds the permit's id in\n"
    "                    $RLOCK_PERMIT_ID. The permit is renewed as a lock is\n"
    "                    (or has -l's lease), so a crashed rlock's permit\n"
    "                    comes back within a lease. One NAME and one -u only\n"
    "                    At most one of --fair, --read, --write, --fenced,\n"
    "                    --spin and --permits\n"
    "      --on-lost ACTION  what to do when the lock is lost while COMMAND\n"
    "                    runs: 'terminate' (default) sends COMMAND's group\n"
    "                    SIGTERM at once and exits with 76; 'ignore' lets it\n"
    "                    run on, warns, and keeps its status (COMMAND then\n"
    "                    also survives rlock's death). Applies to renewed\n"
    "                    locks, not to -l; a RedLock only warns\n"
    "      --kill-after DUR  after that SIGTERM, SIGKILL COMMAND's group if\n"
    "                    it still runs DUR later; default 10s\n"
    "      --check-every DUR\n"
    "                    also ask the server every DUR whether the lock is\n"
    "                    still held, to learn of a deletion or takeover\n"
    "                    sooner than the next renewal\n"
    "  -v, --verbose     say on stderr what the wait is for (who holds the\n"
    "                    lock: one NAME, one -u), and when the lock is\n"
    "                    acquired and released\n"
    "  -h, --help        show this help\n"
    "\n"
    "DUR is a number of seconds (1.5) or a number with a unit: 250ms, 10s,\n"
    "5m, 1h, 1d (at most 365 days).\n"
    "\n"
    "Exit status:\n"
    "  N        COMMAND's exit status, once COMMAND has run\n"
    "  128+N    COMMAND was killed by signal N, or rlock got signal N\n"
    "           while waiting for the lock (COMMAND did not run)\n"
    "  126      COMMAND is not executable\n"
    "  127      COMMAND was not found\n"
    "  64       usage error\n"
    "  65       NAME is not usable: the key (or --fenced's token key)\n"
    "           holds something else, or the name is invalid\n"
    "  69       Redis unreachable, refusing or failing\n"
    "  70       internal error\n"
    "  71       system error (cannot fork or start a thread, out of memory)\n"
    "  75       lock (or permit) not acquired within -w (or -E's CODE)\n"
    "  76       the lock (or permit) was lost while COMMAND ran (COMMAND\n"
    "           was terminated, or it was found lost at the release)\n";

static atomic_int lost_flag;

/* Called on the library's background thread: note it, and have the wait
 * for COMMAND look at the lock now. */
static void on_lost(const char *name, const char *owner, void *ud) {
  (void)name, (void)owner, (void)ud;
  atomic_store(&lost_flag, 1);
  cli_spawn_wake();
}

/* What cli_spawn_watch() polls: the locks held, and their names. */
typedef struct held {
  rlock_lock **locks;
  char **names;
  int n;
  int64_t check_every_ms; /* --check-every, or 0 */
  int64_t next_ask;       /* when to ask the server next */
} held;

/* Whether the server says the lock is no longer this thread's: a
 * deletion or a takeover, seen before the next renewal. A server that
 * cannot answer says nothing here: the local check below times that. */
static int server_says_lost(rlock_lock *lock) {
  int is_held = 1;
  return rlock_lock_is_held(&is_held, lock) == RLOCK_OK && !is_held;
}

/* The check answers locally for this (the main) thread's hold, timed on
 * the monotonic clock: lost once deleted, expired, taken over, or not
 * renewed for a whole watchdog lease. With --check-every, the server is
 * asked too, that often. */
static int held_lost(void *ud, char *name, size_t size) {
  held *h = ud;
  int ask = h->check_every_ms > 0 && cli_now_ms() >= h->next_ask;
  if (ask)
    h->next_ask = cli_now_ms() + h->check_every_ms;
  for (int i = 0; i < h->n; i++)
    if (rlock_lock_check(h->locks[i]) == RLOCK_ELOST ||
        (ask && server_says_lost(h->locks[i]))) {
      snprintf(name, size, "lock '%s'", h->names[i]);
      return 1;
    }
  return 0;
}

/* Whether rlock terminates COMMAND when the lock is lost (and exits 76):
 * a renewed lock, without --on-lost ignore. */
static int terminates(const exec_args *a) {
  return !a->on_lost_ignore && a->lease_ms == RLOCK_LEASE_WATCHDOG;
}

/* Run COMMAND with `envp` as its environment, watching what it holds
 * with lost(ud, ...) as --on-lost says. */
static int spawn_watched(const exec_args *a,
                         int (*lost)(void *, char *, size_t), void *ud,
                         char **envp) {
  cli_watch w = {
      terminates(a) ? lost : NULL, ud,  NULL, a->period_ms, a->kill_after_ms,
      !a->on_lost_ignore,          envp};
  return cli_spawn_watch(a->command, &w);
}

/* Run COMMAND, watching `n` locks. */
static int spawn_held(const exec_args *a, rlock_lock **locks, int n,
                      char **envp) {
  held h = {locks, a->names, n, a->check_every_ms,
            cli_now_ms() + a->check_every_ms};
  return spawn_watched(a, held_lost, &h, envp);
}

extern char **environ;

/* Whether environ's entry `e` is one of the variables rlock sets. */
static int ours(const char *e) {
  return strncmp(e, "RLOCK_TOKEN=", 12) == 0 ||
         strncmp(e, "RLOCK_NAME=", 11) == 0 ||
         strncmp(e, "RLOCK_TERM=", 11) == 0 ||
         strncmp(e, "RLOCK_PERMIT_ID=", 16) == 0;
}

/* The environment for COMMAND: rlock's, with RLOCK_NAME=<first NAME>,
 * for --fenced (token > 0) RLOCK_TOKEN=<token>, for --permits (permit not
 * NULL) RLOCK_PERMIT_ID=<id>, in place of any inherited ones, in `slots`;
 * NULL when out of memory. Built before the fork: the child of a threaded
 * process must not allocate. Free the array only (its strings are
 * environ's and the slots). */
static char **command_env(const char *name, int64_t token, const char *permit,
                          cli_env_slots *slots) {
  size_t n = 0, k = 0;
  while (environ[n] != NULL)
    n++;
  char **env = calloc(n + 4, sizeof *env);
  if (env == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++)
    if (!ours(environ[i]))
      env[k++] = environ[i];
  snprintf(slots->name, sizeof slots->name, "RLOCK_NAME=%s", name);
  env[k++] = slots->name;
  if (token > 0) {
    snprintf(slots->token, sizeof slots->token, "RLOCK_TOKEN=%" PRId64, token);
    env[k++] = slots->token;
  }
  if (permit != NULL) {
    snprintf(slots->permit, sizeof slots->permit, "RLOCK_PERMIT_ID=%s", permit);
    env[k] = slots->permit;
  }
  return env;
}

char **cli_command_env(const char *name, const char *var, int64_t token,
                       cli_env_slots *slots) {
  char **env = command_env(name, 0, NULL, slots);
  size_t k = 0;
  while (env != NULL && env[k] != NULL)
    k++;
  if (env != NULL && token > 0) { /* room: command_env leaves two slots */
    snprintf(slots->token, sizeof slots->token, "%s=%" PRId64, var, token);
    env[k] = slots->token;
  }
  return env;
}

static char **make_env(const exec_args *a, int64_t token,
                       cli_env_slots *slots) {
  return command_env(a->name, token, NULL, slots);
}

/* NAME -- COMMAND [ARG...]: `rest` holds the n words after the options;
 * `dashdash_eaten` is set when getopt consumed a "--" before them. */
static int parse_positional(char **rest, int n, int dashdash_eaten,
                            exec_args *a) {
  int k = 0;
  while (k < n && strcmp(rest[k], "--") != 0)
    k++;
  if (n == 0)
    return cli_usage("exec: missing NAME and COMMAND");
  if (k == 0 || (k == n && dashdash_eaten))
    return cli_usage("exec: missing NAME before '--'");
  if (k == n && n == 1)
    return cli_usage("exec: missing '-- COMMAND' after NAME '%s'", rest[0]);
  if (k == n)
    return cli_usage("exec: missing '--' between NAME and COMMAND");
  for (int i = 1; i < k; i++)
    if (rest[i][0] == '-')
      return cli_usage("exec: option '%s' after NAME (options go before "
                       "NAME)",
                       rest[i]);
  if (k + 1 == n)
    return cli_usage("exec: missing COMMAND after '--'");
  a->name = rest[0];
  a->names = rest;
  a->nnames = k;
  a->command = rest + k + 1;
  return CLI_CONTINUE;
}

#define EXEC_SHORTOPTS "+:w:l:nE:vh"
enum {
  OPT_FAIR = 256,
  OPT_READ,
  OPT_WRITE,
  OPT_ON_LOST,
  OPT_KILL_AFTER,
  OPT_FENCED,
  OPT_SPIN,
  OPT_CHECK_EVERY,
  OPT_PERMITS
};

/* --fair, --read, --write, --fenced and --spin pick the lock's kind; at
 * most one. */
static int set_kind(exec_args *a, int opt) {
  cli_kind k = opt == OPT_FAIR     ? CLI_FAIR
               : opt == OPT_READ   ? CLI_READ
               : opt == OPT_WRITE  ? CLI_WRITE
               : opt == OPT_FENCED ? CLI_FENCED
                                   : CLI_SPIN;
  if (a->kind != CLI_LOCK && a->kind != k)
    return cli_usage("exec: --fair, --read, --write, --fenced and --spin "
                     "exclude each other");
  a->kind = k;
  return CLI_CONTINUE;
}

/* --permits N: a decimal 1..RLOCK_MAX_PERMITS. */
static int set_permits(exec_args *a, const char *s) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 || v < 1 ||
      v > RLOCK_MAX_PERMITS)
    return cli_usage("--permits: '%s' is not a number of permits (1 to "
                     "%" PRId64 ")",
                     s, RLOCK_MAX_PERMITS);
  a->permits = v;
  return CLI_CONTINUE;
}

/* -E CODE: a decimal 0..255. */
static int set_conflict_status(exec_args *a, const char *s) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 || v > 255)
    return cli_usage("-E: '%s' is not an exit status (0 to 255)", s);
  a->conflict_status = (int)v;
  return CLI_CONTINUE;
}

/* One option with its argument (-w, -l, --on-lost, ...). */
static int exec_option(exec_args *a, int c, char **argv) {
  switch (c) {
  case OPT_FAIR:
  case OPT_READ:
  case OPT_WRITE:
  case OPT_FENCED:
  case OPT_SPIN:
    return set_kind(a, c);
  case OPT_PERMITS:
    return set_permits(a, optarg);
  case OPT_ON_LOST:
    if (strcmp(optarg, "ignore") != 0 && strcmp(optarg, "terminate") != 0)
      return cli_usage("--on-lost: '%s' is neither 'terminate' nor 'ignore'",
                       optarg);
    a->on_lost_ignore = strcmp(optarg, "ignore") == 0;
    return CLI_CONTINUE;
  case OPT_KILL_AFTER:
    return cli_duration_arg("--kill-after", optarg, &a->kill_after_ms) != 0
               ? EX_USAGE
               : CLI_CONTINUE;
  case OPT_CHECK_EVERY:
    if (cli_duration_arg("--check-every", optarg, &a->check_every_ms) != 0)
      return EX_USAGE;
    if (a->check_every_ms == 0)
      return cli_usage("--check-every must be at least 1ms");
    return CLI_CONTINUE;
  case 'n':
    a->wait_ms = 0;
    return CLI_CONTINUE;
  case 'E':
    return set_conflict_status(a, optarg);
  case 'v':
    a->verbose = 1;
    return CLI_CONTINUE;
  case 'w':
    return cli_duration_arg("-w", optarg, &a->wait_ms) != 0 ? EX_USAGE
                                                            : CLI_CONTINUE;
  case 'l':
    if (cli_duration_arg("-l", optarg, &a->lease_ms) != 0)
      return EX_USAGE;
    if (a->lease_ms == 0)
      return cli_usage("-l must be at least 1ms (leave it out to have the "
                       "lock renewed while COMMAND runs)");
    return CLI_CONTINUE;
  default:
    return cli_bad_option(c, argv, EXEC_SHORTOPTS);
  }
}

static int parse_exec(int argc, char **argv, exec_args *a) {
  static const struct option longopts[] = {
      {"wait", required_argument, NULL, 'w'},
      {"timeout", required_argument, NULL, 'w'},
      {"nonblock", no_argument, NULL, 'n'},
      {"conflict-exit-code", required_argument, NULL, 'E'},
      {"lease", required_argument, NULL, 'l'},
      {"fair", no_argument, NULL, OPT_FAIR},
      {"read", no_argument, NULL, OPT_READ},
      {"write", no_argument, NULL, OPT_WRITE},
      {"fenced", no_argument, NULL, OPT_FENCED},
      {"spin", no_argument, NULL, OPT_SPIN},
      {"on-lost", required_argument, NULL, OPT_ON_LOST},
      {"kill-after", required_argument, NULL, OPT_KILL_AFTER},
      {"check-every", required_argument, NULL, OPT_CHECK_EVERY},
      {"permits", required_argument, NULL, OPT_PERMITS},
      {"verbose", no_argument, NULL, 'v'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  optind = 0; /* full re-initialisation: main.c used getopt already */
  opterr = 0;
  while ((c = getopt_long(argc, argv, EXEC_SHORTOPTS, longopts, NULL)) != -1) {
    if (c == 'h')
      return cli_help(exec_help);
    int st = exec_option(a, c, argv);
    if (st != CLI_CONTINUE)
      return st;
  }
  /* An option that would change nothing is refused, not ignored. */
  if (a->check_every_ms > 0 && !terminates(a))
    return cli_usage("exec: --check-every looks for a loss that ends "
                     "COMMAND: not with -l or --on-lost ignore");
  int eaten = optind > 1 && strcmp(argv[optind - 1], "--") == 0;
  int st = parse_positional(argv + optind, argc - optind, eaten, a);
  /* One token for COMMAND: several NAMEs would each issue their own. */
  if (st == CLI_CONTINUE && a->kind == CLI_FENCED && a->nnames > 1)
    return cli_usage("exec: --fenced takes one NAME (got '%s' after '%s')",
                     a->names[1], a->names[0]);
  if (st == CLI_CONTINUE && a->permits > 0 && a->kind != CLI_LOCK)
    return cli_usage("exec: --permits excludes --fair, --read, --write, "
                     "--fenced and --spin (NAME is a semaphore, not a lock)");
  if (st == CLI_CONTINUE && a->permits > 0 && a->nnames > 1)
    return cli_usage("exec: --permits takes one NAME (got '%s' after '%s')",
                     a->names[1], a->names[0]);
  return st;
}

/* -v: one line on stderr. */
static void say(const exec_args *a, const char *what, const char *name) {
  if (a->verbose)
    cli_fail(0, "%s '%s'", what, name);
}

/*
 * After COMMAND (status: its exit status, CLI_EXIT_LOST when it was
 * terminated for a loss, or < 0 when it could not start), with the
 * release's outcome `rc` / `msg`; `lost` names a lock found lost, or is
 * NULL. A loss is exit 76 whenever rlock learns of it, if rlock
 * terminates on a loss (the one line was printed already for a COMMAND
 * it terminated); else a warning, and COMMAND's status stays.
 */
static int after_release(const exec_args *a, int status, const char *lost,
                         int rc, const char *msg) {
  const char *what = a->permits > 0 ? "the permit of semaphore" : "lock";
  if (status < 0)
    return EX_OSERR;
  if (status == CLI_EXIT_LOST)
    return status;
  if (lost != NULL && terminates(a)) {
    cli_fail(0, "%s '%s' was lost while '%s' ran (found at its release)", what,
             lost, a->command[0]);
    return CLI_EXIT_LOST;
  }
  if (lost != NULL)
    cli_fail(0, "warning: %s '%s' was lost while '%s' ran", what, lost,
             a->command[0]);
  else if (rc != RLOCK_OK) /* CLI_RELEASE_TIMEOUT too */
    cli_fail(0,
             "warning: cannot release %s '%s' (it expires by itself within "
             "its lease): %s",
             what, a->name, msg);
  else
    say(a, "released", a->name);
  return status;
}

static int release_one(void *lock, uint64_t owner) {
  return rlock_lock_release_owner(lock, owner);
}

static int run_locked(rlock_lock *lock, const exec_args *a) {
  int64_t token = 0;
  int fenced = a->kind == CLI_FENCED;
  int show = isatty(STDERR_FILENO) ? CLI_SHOW_TERMINAL
             : a->verbose          ? CLI_SHOW_LINES
                                   : 0;
  cli_notice_begin(a->name, show == CLI_SHOW_TERMINAL || a->no_retry);
  int rc =
      cli_acquire(lock, a->wait_ms, a->lease_ms, show, fenced ? &token : NULL);
  cli_notice_end();
  if (rc == CLI_INTERRUPTED)
    return CLI_EXIT_SIGNAL_BASE + cli_signal_caught();
  if (rc == RLOCK_ELOCKED)
    return cli_fail(a->conflict_status, "%s", rlock_error_last()->message);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc);
  say(a, "acquired", a->name);
  cli_env_slots slots;
  char **envp = make_env(a, token, &slots);
  int status;
  if (envp == NULL)
    status = cli_fail(-1, "cannot start '%s': out of memory", a->command[0]);
  else
    status = spawn_held(a, &lock, 1, envp);
  free(envp);
  int lost = status == CLI_EXIT_LOST || atomic_load(&lost_flag) ||
             rlock_lock_check(lock) == RLOCK_ELOST;
  const char *msg;
  rc = cli_release_bounded(release_one, lock, a->release_ms, &msg);
  return after_release(a, status, lost || rc == RLOCK_ELOST ? a->name : NULL,
                       rc, msg);
}

/* A MultiLock's release, for cli_release_bounded(). */
static int release_multi(void *m, uint64_t owner) {
  return rlock_multilock_release_owner(m, owner);
}

/* Several names: one MultiLock, acquired in one cancelable wait. */
static int run_multi(rlock_lock **locks, const exec_args *a) {
  rlock_multilock *m;
  int rc = rlock_multilock_new(&m, locks, (size_t)a->nnames);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc);
  cli_notice_begin(a->name, a->no_retry);
  rc = rlock_multilock_try_acquire_cancel(m, a->wait_ms, a->lease_ms,
                                          cli_cancel_token());
  cli_notice_end();
  int status;
  if (rc == RLOCK_ECANCELED) {
    status = CLI_EXIT_SIGNAL_BASE + cli_signal_caught();
  } else if (rc == RLOCK_ELOCKED) {
    status = cli_fail(a->conflict_status, "%s", rlock_error_last()->message);
  } else if (rc != RLOCK_OK) {
    status = cli_lib_error(rc);
  } else {
    say(a, "acquired", a->name);
    cli_env_slots slots;
    char **envp = make_env(a, 0, &slots);
    status = envp == NULL ? cli_fail(-1, "cannot start '%s': out of memory",
                                     a->command[0])
                          : spawn_held(a, locks, a->nnames, envp);
    free(envp);
    const char *lost = NULL;
    for (int i = 0; i < a->nnames && lost == NULL; i++)
      if (rlock_lock_check(locks[i]) == RLOCK_ELOST)
        lost = a->names[i];
    if (lost == NULL && atomic_load(&lost_flag))
      lost = a->name;
    const char *msg;
    rc = cli_release_bounded(release_multi, m, a->release_ms, &msg);
    if (lost == NULL && rc == RLOCK_ELOST)
      lost = a->name;
    status = after_release(a, status, lost, rc, msg);
  }
  if (!cli_release_abandoned())
    rlock_multilock_free(m);
  return status;
}

/* Open the client and the first lock, then one lock per further name. */
static int exec_multi(const cli_global *g, const exec_args *a) {
  rlock_client *client;
  rlock_lock *locks[RLOCK_MAX_MEMBERS] = {NULL};
  if (a->nnames > RLOCK_MAX_MEMBERS)
    return cli_usage("exec: at most %d NAMEs", RLOCK_MAX_MEMBERS);
  int status =
      cli_open(g, a->names[0], a->kind, on_lost, NULL, &client, &locks[0]);
  for (int i = 1; status == 0 && i < a->nnames; i++) {
    int rc = cli_lock_new(a->kind, &locks[i], client, a->names[i]);
    if (rc != RLOCK_OK)
      status = cli_lib_error(rc);
  }
  if (status == 0)
    status = run_multi(locks, a);
  if (cli_release_abandoned())
    return status; /* the release still uses them; rlock exits now */
  for (int i = 1; i < a->nnames; i++)
    rlock_lock_free(locks[i]);
  cli_close(client, locks[0]);
  return status;
}

/* ---- --permits: a permit of a permit-expirable semaphore ---------------- */

/* What cli_spawn_watch() polls for a permit, and what its release needs. */
typedef struct permit_held {
  rlock_psemaphore *sem;
  const char *name;
  char id[RLOCK_PERMIT_ID_LEN + 1];
  int64_t check_every_ms; /* --check-every, or 0 */
  int64_t next_ask;
} permit_held;

/* Lost once the local check says so (the watchdog found it gone, its
 * lease ran out, renewals failed for a whole lease) or, with
 * --check-every, once the server no longer leases it. */
static int permit_lost(void *ud, char *what, size_t size) {
  permit_held *p = ud;
  int ask = p->check_every_ms > 0 && cli_now_ms() >= p->next_ask;
  int64_t left;
  if (ask)
    p->next_ask = cli_now_ms() + p->check_every_ms;
  if (rlock_psemaphore_check(p->sem, p->id) == RLOCK_ELOST ||
      (ask &&
       rlock_psemaphore_lease_ms(&left, p->sem, p->id) == RLOCK_ENOTHELD)) {
    snprintf(what, size, "the permit %s of semaphore '%s'", p->id, p->name);
    return 1;
  }
  return 0;
}

static int release_permit(void *arg, uint64_t owner) {
  permit_held *p = arg;
  (void)owner; /* a permit has an id, not an owner */
  return rlock_psemaphore_release(p->sem, p->id);
}

/* Take one permit (setting the semaphore to --permits N when it has none)
 * in one wait a signal ends: CLI_CONTINUE when taken, else an exit status
 * (after saying why; -E may make it 0). */
static int take_permit(permit_held *p, const exec_args *a) {
  int rc = rlock_psemaphore_try_set_permits(NULL, p->sem, a->permits);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc);
  cli_notice_begin(a->name, a->no_retry);
  rc = rlock_psemaphore_acquire(p->id, p->sem, a->wait_ms, a->lease_ms,
                                cli_cancel_token());
  cli_notice_end();
  if (rc == RLOCK_ECANCELED)
    return CLI_EXIT_SIGNAL_BASE + cli_signal_caught();
  if (rc == RLOCK_ELOCKED)
    return cli_fail(a->conflict_status, "%s", rlock_error_last()->message);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc);
  if (cli_signal_caught() != 0) { /* the signal came first: do not run */
    rlock_psemaphore_release(p->sem, p->id);
    return CLI_EXIT_SIGNAL_BASE + cli_signal_caught();
  }
  return CLI_CONTINUE;
}

/* Hold the permit while COMMAND runs, then release it (bounded). */
static int run_permit(permit_held *p, const exec_args *a) {
  int status = take_permit(p, a);
  if (status != CLI_CONTINUE)
    return status;
  say(a, "acquired a permit of", a->name);
  cli_env_slots slots;
  char **envp = command_env(a->name, 0, p->id, &slots);
  if (envp == NULL)
    status = cli_fail(-1, "cannot start '%s': out of memory", a->command[0]);
  else
    status = spawn_watched(a, permit_lost, p, envp);
  free(envp);
  int lost = status == CLI_EXIT_LOST || atomic_load(&lost_flag) ||
             rlock_psemaphore_check(p->sem, p->id) == RLOCK_ELOST;
  const char *msg;
  int rc = cli_release_bounded(release_permit, p, a->release_ms, &msg);
  return after_release(a, status, lost || rc == RLOCK_ELOST ? a->name : NULL,
                       rc, msg);
}

/* exec --permits N NAME: the client, the semaphore, the run. */
static int exec_permit(const cli_global *g, const exec_args *a) {
  static permit_held p; /* static: an abandoned release may still read it */
  rlock_client *client;
  int status = cli_client_new(g, g->url, on_lost, NULL, &client);
  if (status != 0)
    return status;
  p = (permit_held){.name = a->name,
                    .check_every_ms = a->check_every_ms,
                    .next_ask = cli_now_ms() + a->check_every_ms};
  int rc = rlock_psemaphore_new(&p.sem, client, a->name);
  status = rc != RLOCK_OK ? cli_lib_error(rc) : run_permit(&p, a);
  if (cli_release_abandoned())
    return status; /* the release still uses them; rlock exits now */
  rlock_psemaphore_free(p.sem);
  rlock_client_free(client);
  return status;
}

/* How often to look at the lock: the renewal period (a lost lock is seen
 * within one of it, at the latest, even should the callback never come),
 * or --check-every when shorter. */
static int64_t watch_period(const cli_global *g, const exec_args *a) {
  int64_t p = (g->watchdog_ms != 0 ? g->watchdog_ms : 30000) / 3;
  if (a->check_every_ms > 0 && a->check_every_ms < p)
    p = a->check_every_ms;
  return p < 1 ? 1 : p;
}

void cli_program_text(char *const *command, char *buf) {
  size_t n = 0;
  buf[0] = '\0';
  for (size_t i = 0; command[i] != NULL && n < RLOCK_PROGRAM_MAX; i++) {
    int w = snprintf(buf + n, RLOCK_PROGRAM_MAX + 1 - n, "%s%s",
                     i > 0 ? " " : "", command[i]);
    n += w < 0 ? 0 : (size_t)w;
  }
  if (buf[0] == '\0') /* an empty COMMAND word: the setter needs text */
    snprintf(buf, RLOCK_PROGRAM_MAX + 1, "rlock exec");
}

int cli_cmd_exec(const cli_global *g, int argc, char **argv) {
  exec_args a = EXEC_ARGS_INIT;
  int status = parse_exec(argc, argv, &a);
  if (status != CLI_CONTINUE)
    return status;
  /* The registry record names COMMAND: operators see what holds. */
  static char program[RLOCK_PROGRAM_MAX + 1];
  cli_program_text(a.command, program);
  cli_global gx = *g;
  gx.program = program;
  g = &gx;
  a.period_ms = watch_period(g, &a);
  if (g->command_timeout_ms != 0)
    a.release_ms = g->command_timeout_ms;
  a.no_retry = a.wait_ms == 0 || (g->retry_set && g->retry_ms == 0);
  if ((status = cli_check_command(a.command[0])) != 0)
    return status; /* no point waiting for the lock */
  if (cli_signals_install() != 0)
    return cli_fail(EX_OSERR, "cannot catch signals: %s", strerror(errno));
  if (g->nurls > 1 && (a.nnames > 1 || a.kind != CLI_LOCK || a.permits > 0))
    status = cli_usage("exec: a RedLock (several -u) takes one NAME and no "
                       "--fair, --read, --write, --fenced, --spin or "
                       "--permits");
  else if (g->nurls > 1 && a.check_every_ms > 0)
    status = cli_usage("exec: --check-every is not for a RedLock (several "
                       "-u), which survives the loss of a member");
  else if (g->nurls > 1) {
    cli_env_slots slots;
    char **envp = make_env(&a, 0, &slots);
    cli_redlock_args r = {.name = a.name,
                          .wait_ms = a.wait_ms,
                          .lease_ms = a.lease_ms,
                          .command = a.command,
                          .envp = envp,
                          .pdeath = !a.on_lost_ignore,
                          .conflict_status = a.conflict_status,
                          .release_ms = a.release_ms,
                          .kill_after_ms = a.kill_after_ms,
                          .verbose = a.verbose};
    status = envp == NULL ? cli_fail(EX_OSERR, "out of memory")
                          : cli_exec_redlock(g, &r, on_lost);
    free(envp);
  } else if (a.nnames > 1) {
    status = exec_multi(g, &a);
  } else if (a.permits > 0) {
    status = exec_permit(g, &a);
  } else {
    rlock_client *client;
    rlock_lock *lock;
    status = cli_open(g, a.name, a.kind, on_lost, NULL, &client, &lock);
    if (status == 0)
      status = run_locked(lock, &a);
    if (!cli_release_abandoned())
      cli_close(client, lock);
  }
  if (!cli_release_abandoned())
    cli_signals_free();
  return status;
}
