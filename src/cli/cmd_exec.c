/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_exec.c - `rlock exec`: hold a lock while a command runs.
 *
 *   rlock [-u URL] [--watchdog DUR] exec [-w DUR] [-l DUR] NAME -- COMMAND...
 *
 * Acquire (in one wait a signal can end, see waiting.c), run COMMAND as a
 * child (spawn.c) while the library's watchdog renews the lease, release,
 * and exit with COMMAND's status. With --fenced, COMMAND finds the
 * acquisition's fencing token in $RLOCK_TOKEN.
 */
#include <errno.h>
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
  char **command;        /* NULL-terminated */
  int on_lost_ignore;    /* --on-lost ignore */
  int64_t kill_after_ms; /* --kill-after */
  int64_t period_ms;     /* how often to look at the lock: the renewal period */
} exec_args;

/* exec's defaults: wait for ever, the watchdog, a reentrant lock, the
 * default --kill-after (10 s). */
#define EXEC_ARGS_INIT                                                         \
  {                                                                            \
    RLOCK_WAIT_FOREVER, RLOCK_LEASE_WATCHDOG, CLI_LOCK, NULL, NULL, 0, NULL,   \
        0, 10000, 0                                                            \
  }

static const char exec_help[] =
    "Usage: rlock [-u URL]... [OPTION]... exec\n"
    "             [--fair|--read|--write|--fenced|--spin] [-w DUR] [-l DUR]\n"
    "             [--on-lost ACTION] [--kill-after DUR]\n"
    "             NAME [NAME...] -- COMMAND [ARG...]\n"
    "\n"
    "Acquire the lock NAME, run COMMAND while holding it, release it when\n"
    "COMMAND exits, and exit with COMMAND's status. Signals TERM and HUP\n"
    "are passed on to COMMAND; INT, a process group's signal (Ctrl-C, or\n"
    "kill -INT -PGID), reaches COMMAND in rlock's group once, directly;\n"
    "the lock is released afterwards. Should the renewed lock be lost while\n"
    "COMMAND runs (deleted, expired, taken over, or not renewed for a whole\n"
    "lease), COMMAND is terminated (see --on-lost). Should rlock die,\n"
    "COMMAND gets SIGTERM.\n"
    "Several NAMEs are taken together, all or none (a MultiLock), in the\n"
    "order given: give them in the same order everywhere (e.g. sorted).\n"
    "\n"
    "Options:\n"
    "  -w, --wait DUR    give up if the lock is not acquired within DUR\n"
    "                    (0: try once); default: wait as long as it takes\n"
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
    "                    At most one of --fair, --read, --write, --fenced\n"
    "                    and --spin\n"
    "      --on-lost ACTION  what to do when the lock is lost while COMMAND\n"
    "                    runs: 'terminate' (default) sends COMMAND SIGTERM\n"
    "                    at once and exits with 76; 'ignore' lets it run\n"
    "                    on, warns, and keeps its status (COMMAND then also\n"
    "                    survives rlock's death). Applies to renewed locks,\n"
    "                    not to -l; a RedLock only warns\n"
    "      --kill-after DUR  after that SIGTERM, SIGKILL COMMAND if it still\n"
    "                    runs DUR later; default 10s\n"
    "  -h, --help        show this help\n"
    "\n"
    "DUR is a whole number with a unit: 250ms, 10s, 5m, 1h.\n"
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
    "  71       system error (cannot fork, out of memory)\n"
    "  75       lock not acquired within -w\n"
    "  76       the lock was lost while COMMAND ran, and COMMAND was\n"
    "           terminated (--on-lost terminate)\n";

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
} held;

/* The check answers locally for this (the main) thread's hold, timed on
 * the monotonic clock: lost once deleted, expired, taken over, or not
 * renewed for a whole watchdog lease. */
static int held_lost(void *ud, char *name, size_t size) {
  held *h = ud;
  for (int i = 0; i < h->n; i++)
    if (rlock_lock_check(h->locks[i]) == RLOCK_ELOST) {
      snprintf(name, size, "%s", h->names[i]);
      return 1;
    }
  return 0;
}

/* Run COMMAND, watching `n` locks as --on-lost says, with `envp` as its
 * environment (NULL: rlock's). */
static int spawn_held(const exec_args *a, rlock_lock **locks, int n,
                      char **envp) {
  held h = {locks, a->names, n};
  int watch = !a->on_lost_ignore && a->lease_ms == RLOCK_LEASE_WATCHDOG;
  cli_watch w = {
      watch ? held_lost : NULL, &h,  NULL, a->period_ms, a->kill_after_ms,
      !a->on_lost_ignore,       envp};
  return cli_spawn_watch(a->command, &w);
}

extern char **environ;

/* rlock's environment with RLOCK_TOKEN=<token> in place of any inherited
 * one, in `slot` (size `size`); NULL when out of memory. Built before the
 * fork: the child of a threaded process must not allocate. Free the array
 * only (its strings are environ's and `slot`). */
static char **env_with_token(int64_t token, char *slot, size_t size) {
  size_t n = 0, k = 0;
  while (environ[n] != NULL)
    n++;
  char **env = calloc(n + 2, sizeof *env);
  if (env == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "RLOCK_TOKEN=", 12) != 0)
      env[k++] = environ[i];
  snprintf(slot, size, "RLOCK_TOKEN=%" PRId64, token);
  env[k] = slot;
  return env;
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

#define EXEC_SHORTOPTS "+:w:l:h"
#define OPT_FAIR 256
#define OPT_READ 257
#define OPT_WRITE 258
#define OPT_ON_LOST 259
#define OPT_KILL_AFTER 260
#define OPT_FENCED 261
#define OPT_SPIN 262

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

static int parse_exec(int argc, char **argv, exec_args *a) {
  static const struct option longopts[] = {
      {"wait", required_argument, NULL, 'w'},
      {"lease", required_argument, NULL, 'l'},
      {"fair", no_argument, NULL, OPT_FAIR},
      {"read", no_argument, NULL, OPT_READ},
      {"write", no_argument, NULL, OPT_WRITE},
      {"fenced", no_argument, NULL, OPT_FENCED},
      {"spin", no_argument, NULL, OPT_SPIN},
      {"on-lost", required_argument, NULL, OPT_ON_LOST},
      {"kill-after", required_argument, NULL, OPT_KILL_AFTER},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  optind = 0; /* full re-initialisation: main.c used getopt already */
  opterr = 0;
  while ((c = getopt_long(argc, argv, EXEC_SHORTOPTS, longopts, NULL)) != -1) {
    if (c == 'h')
      return cli_help(exec_help);
    if (c == OPT_FAIR || c == OPT_READ || c == OPT_WRITE || c == OPT_FENCED ||
        c == OPT_SPIN) {
      int st = set_kind(a, c);
      if (st != CLI_CONTINUE)
        return st;
      continue;
    }
    if (c == OPT_ON_LOST) {
      if (strcmp(optarg, "ignore") != 0 && strcmp(optarg, "terminate") != 0)
        return cli_usage("--on-lost: '%s' is neither 'terminate' nor "
                         "'ignore'",
                         optarg);
      a->on_lost_ignore = strcmp(optarg, "ignore") == 0;
      continue;
    }
    if (c == OPT_KILL_AFTER) {
      if (cli_duration_arg("--kill-after", optarg, &a->kill_after_ms) != 0)
        return EX_USAGE;
      continue;
    }
    if (c != 'w' && c != 'l')
      return cli_bad_option(c, argv, EXEC_SHORTOPTS);
    int64_t *dst = c == 'w' ? &a->wait_ms : &a->lease_ms;
    if (cli_duration_arg(c == 'w' ? "-w" : "-l", optarg, dst) != 0)
      return EX_USAGE;
    if (c == 'l' && a->lease_ms == 0)
      return cli_usage("-l must be at least 1ms (leave it out to have the "
                       "lock renewed while COMMAND runs)");
  }
  int eaten = optind > 1 && strcmp(argv[optind - 1], "--") == 0;
  int st = parse_positional(argv + optind, argc - optind, eaten, a);
  /* One token for COMMAND: several NAMEs would each issue their own. */
  if (st == CLI_CONTINUE && a->kind == CLI_FENCED && a->nnames > 1)
    return cli_usage("exec: --fenced takes one NAME (got '%s' after '%s')",
                     a->names[1], a->names[0]);
  return st;
}

/* After COMMAND: release, and say so if the lock did not last. The exit
 * status stays COMMAND's either way: COMMAND did run, and the caller most
 * needs to know how that went. */
static void release_after(rlock_lock *lock, const exec_args *a, int said) {
  int lost = atomic_load(&lost_flag) || rlock_lock_check(lock) == RLOCK_ELOST;
  int rc = rlock_lock_release(lock);
  if (said) /* the one line was printed when COMMAND was terminated */
    return;
  if (rc == RLOCK_ELOST || lost)
    cli_fail(0, "warning: lock '%s' was lost while '%s' ran", a->name,
             a->command[0]);
  else if (rc != RLOCK_OK)
    cli_fail(0,
             "warning: cannot release lock '%s' (it expires by itself): "
             "%s",
             a->name, rlock_error_last()->message);
}

static int run_locked(rlock_lock *lock, const exec_args *a) {
  int64_t token = 0;
  int fenced = a->kind == CLI_FENCED;
  int rc = cli_acquire(lock, a->wait_ms, a->lease_ms, isatty(STDERR_FILENO),
                       fenced ? &token : NULL);
  if (rc == CLI_INTERRUPTED)
    return CLI_EXIT_SIGNAL_BASE + cli_signal_caught();
  if (rc != RLOCK_OK)
    return cli_lib_error(rc); /* RLOCK_ELOCKED: EX_TEMPFAIL */
  char slot[64];
  char **envp = fenced ? env_with_token(token, slot, sizeof slot) : NULL;
  int status;
  if (fenced && envp == NULL)
    status = cli_fail(-1, "cannot start '%s': out of memory", a->command[0]);
  else
    status = spawn_held(a, &lock, 1, envp);
  free(envp);
  release_after(lock, a, status == CLI_EXIT_LOST);
  return status < 0 ? EX_OSERR : status;
}

/* After COMMAND ran under a MultiLock: name each member found lost, then
 * release them all (the exit status stays COMMAND's). */
static void release_multi(rlock_multilock *m, rlock_lock **locks,
                          const exec_args *a, int said) {
  int warned = said;
  for (int i = 0; i < a->nnames; i++)
    if (rlock_lock_check(locks[i]) == RLOCK_ELOST && ++warned)
      cli_fail(0, "warning: lock '%s' was lost while '%s' ran", a->names[i],
               a->command[0]);
  int rc = rlock_multilock_release(m);
  if ((rc == RLOCK_ELOST || atomic_load(&lost_flag)) && !warned)
    cli_fail(0, "warning: a lock was lost while '%s' ran: %s", a->command[0],
             rlock_error_last()->message);
  else if (rc != RLOCK_OK && rc != RLOCK_ELOST)
    cli_fail(0,
             "warning: cannot release every lock (they expire by "
             "themselves): %s",
             rlock_error_last()->message);
}

/* Several names: one MultiLock, acquired in one cancelable wait. */
static int run_multi(rlock_lock **locks, const exec_args *a) {
  rlock_multilock *m;
  int rc = rlock_multilock_new(&m, locks, (size_t)a->nnames);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc);
  rc = rlock_multilock_try_acquire_cancel(m, a->wait_ms, a->lease_ms,
                                          cli_cancel_token());
  int status;
  if (rc == RLOCK_ECANCELED) {
    status = CLI_EXIT_SIGNAL_BASE + cli_signal_caught();
  } else if (rc != RLOCK_OK) {
    status = cli_lib_error(rc); /* RLOCK_ELOCKED: EX_TEMPFAIL */
  } else {
    status = spawn_held(a, locks, a->nnames, NULL);
    release_multi(m, locks, a, status == CLI_EXIT_LOST);
    if (status < 0)
      status = EX_OSERR;
  }
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
  for (int i = 1; i < a->nnames; i++)
    rlock_lock_free(locks[i]);
  cli_close(client, locks[0]);
  return status;
}

int cli_cmd_exec(const cli_global *g, int argc, char **argv) {
  exec_args a = EXEC_ARGS_INIT;
  int status = parse_exec(argc, argv, &a);
  if (status != CLI_CONTINUE)
    return status;
  /* The renewal period: a lost lock is seen within one of it, at the
   * latest, even should the callback never come. */
  a.period_ms = (g->watchdog_ms != 0 ? g->watchdog_ms : 30000) / 3;
  if (a.period_ms < 1)
    a.period_ms = 1;
  if ((status = cli_check_command(a.command[0])) != 0)
    return status; /* no point waiting for the lock */
  if (cli_signals_install() != 0)
    return cli_fail(EX_OSERR, "cannot catch signals: %s", strerror(errno));
  if (g->nurls > 1 && (a.nnames > 1 || a.kind != CLI_LOCK))
    status = cli_usage("exec: a RedLock (several -u) takes one NAME and no "
                       "--fair, --read, --write, --fenced or --spin");
  else if (g->nurls > 1)
    status = cli_exec_redlock(g, !a.on_lost_ignore, a.name, a.wait_ms,
                              a.lease_ms, a.command, on_lost);
  else if (a.nnames > 1) {
    status = exec_multi(g, &a);
  } else {
    rlock_client *client;
    rlock_lock *lock;
    status = cli_open(g, a.name, a.kind, on_lost, NULL, &client, &lock);
    if (status == 0)
      status = run_locked(lock, &a);
    cli_close(client, lock);
  }
  cli_signals_free();
  return status;
}
