/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_elect.c - `rlock elect [--value TEXT] NAME -- COMMAND`: campaign in
 * the election NAME (rlock/election.h), run COMMAND while leader with the
 * term in $RLOCK_TERM, resign once it has exited.
 *
 * The job is exec's: COMMAND runs under cli_spawn_watch() (spawn.c),
 * watched by rlock_election_check() and woken by the lost-lock callback,
 * terminated when leadership is lost (76); the resignation is bounded by
 * cli_release_bounded() (release.c); COMMAND's environment is
 * cli_command_env()'s (cmd_exec.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char elect_help[] =
    "Usage: rlock [-u URL] [OPTION]... elect [--value TEXT] [-n|-w DUR]\n"
    "             [--kill-after DUR] [-v] NAME -- COMMAND [ARG...]\n"
    "\n"
    "Campaign in the election NAME: wait until this process leads (holds\n"
    "the fenced lock NAME, as Redisson's RFencedLock), publish TEXT as the\n"
    "leader's value, run COMMAND while leading, resign once COMMAND and\n"
    "every process it started have exited, and exit with COMMAND's status.\n"
    "COMMAND finds NAME in $RLOCK_NAME and the term in $RLOCK_TERM: the\n"
    "fencing token of this leadership, larger than any earlier term of\n"
    "NAME; what COMMAND writes to should refuse a term below the highest it\n"
    "has seen. COMMAND runs as a job, as with exec. Leadership is renewed\n"
    "while COMMAND runs; should it be lost (the lease ran out, the lock was\n"
    "deleted or taken over), COMMAND's group is terminated and rlock exits\n"
    "76. rlock learns of a loss at the next renewal (within a third of the\n"
    "lease, see --watchdog) or at the resignation at the latest. A standby\n"
    "waiting in its own 'rlock elect' takes over once the leader resigns,\n"
    "or within one lease when the leader stops.\n"
    "\n"
    "Options:\n"
    "      --value TEXT  the leader's value others read with 'rlock leader'\n"
    "                    (1 to 65536 bytes); default HOST:PID of rlock\n"
    "  -w, --wait DUR    give up if not leading within DUR (0: try once);\n"
    "                    default: wait as long as it takes\n"
    "  -n, --nonblock    try once: the same as -w 0\n"
    "      --kill-after DUR  after the SIGTERM of a lost leadership, SIGKILL\n"
    "                    COMMAND's group if it still runs DUR later;\n"
    "                    default 10s\n"
    "  -v, --verbose     say on stderr when leading and when resigned\n"
    "  -h, --help        show this help\n"
    "\n"
    "DUR is a number of seconds (1.5) or a number with a unit: 250ms, 10s,\n"
    "5m, 1h, 1d (at most 365 days).\n"
    "\n"
    "Exit status:\n"
    "  N        COMMAND's exit status, once COMMAND has run\n"
    "  128+N    COMMAND was killed by signal N, or rlock got signal N\n"
    "           while campaigning (COMMAND did not run)\n"
    "  126      COMMAND is not executable\n"
    "  127      COMMAND was not found\n"
    "  64       usage error\n"
    "  65       NAME is not usable: the key, its token counter or its\n"
    "           leader record holds something else, or the name is invalid\n"
    "  69       Redis unreachable, refusing or failing\n"
    "  70       internal error\n"
    "  71       system error (cannot fork or start a thread, out of memory)\n"
    "  75       not leading within -w\n"
    "  76       leadership was lost while COMMAND ran (COMMAND was\n"
    "           terminated, or it was found lost at the resignation)\n";

typedef struct elect_args {
  int64_t wait_ms;
  int64_t kill_after_ms;
  int verbose;
  const char *value; /* --value, or NULL: HOST:PID */
  const char *name;
  char **command;
  int64_t release_ms;
} elect_args;

static atomic_int lost_flag;

/* The library's thread: note it, and have the wait for COMMAND look. */
static void on_lost(const char *name, const char *owner, void *ud) {
  (void)name, (void)owner, (void)ud;
  atomic_store(&lost_flag, 1);
  cli_spawn_wake();
}

#define ELECT_SHORTOPTS "+:w:nvh"
enum { OPT_VALUE = 256, OPT_KILL_AFTER };

static int elect_option(elect_args *a, int c, char **argv) {
  switch (c) {
  case OPT_VALUE:
    if (optarg[0] == '\0')
      return cli_usage("--value: empty (give 1 to %d bytes)",
                       RLOCK_MAX_LEADER_VALUE);
    if (strlen(optarg) > RLOCK_MAX_LEADER_VALUE)
      return cli_usage("--value: longer than %d bytes", RLOCK_MAX_LEADER_VALUE);
    a->value = optarg;
    return CLI_CONTINUE;
  case OPT_KILL_AFTER:
    return cli_duration_arg("--kill-after", optarg, &a->kill_after_ms) != 0
               ? EX_USAGE
               : CLI_CONTINUE;
  case 'w':
    return cli_duration_arg("-w", optarg, &a->wait_ms) != 0 ? EX_USAGE
                                                            : CLI_CONTINUE;
  case 'n':
    a->wait_ms = 0;
    return CLI_CONTINUE;
  case 'v':
    a->verbose = 1;
    return CLI_CONTINUE;
  default:
    return cli_bad_option(c, argv, ELECT_SHORTOPTS);
  }
}

/* NAME -- COMMAND [ARG...] in the n words `rest`. */
static int elect_positional(char **rest, int n, elect_args *a) {
  if (n == 0)
    return cli_usage("elect: missing NAME and COMMAND");
  if (strcmp(rest[0], "--") == 0)
    return cli_usage("elect: missing NAME before '--'");
  if (n == 1)
    return cli_usage("elect: missing '-- COMMAND' after NAME '%s'", rest[0]);
  if (strcmp(rest[1], "--") != 0)
    return cli_usage(rest[1][0] == '-'
                         ? "elect: option '%s' after NAME (options go "
                           "before NAME)"
                         : "elect: one NAME, then '--' (got '%s')",
                     rest[1]);
  if (n == 2)
    return cli_usage("elect: missing COMMAND after '--'");
  a->name = rest[0];
  a->command = rest + 2;
  return CLI_CONTINUE;
}

static int parse_elect(int argc, char **argv, elect_args *a) {
  static const struct option longopts[] = {
      {"value", required_argument, NULL, OPT_VALUE},
      {"wait", required_argument, NULL, 'w'},
      {"nonblock", no_argument, NULL, 'n'},
      {"kill-after", required_argument, NULL, OPT_KILL_AFTER},
      {"verbose", no_argument, NULL, 'v'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ELECT_SHORTOPTS, longopts, NULL)) != -1) {
    if (c == 'h')
      return cli_help(elect_help);
    int st = elect_option(a, c, argv);
    if (st != CLI_CONTINUE)
      return st;
  }
  return elect_positional(argv + optind, argc - optind, a);
}

/* cli_watch.lost: leadership lost, by the local check. */
static int elect_lost(void *ud, char *name, size_t size) {
  rlock_election *e = ud;
  if (rlock_election_check(e, RLOCK_OWNER_THREAD) != RLOCK_ELOST)
    return 0;
  snprintf(name, size, "leadership of '%s'", rlock_election_name(e));
  return 1;
}

static int resign_one(void *e, uint64_t owner) {
  return rlock_election_resign(e, owner);
}

/* After COMMAND (`status`) and the resignation (`rc`, `msg`). */
static int after_resign(const elect_args *a, int status, int lost, int rc,
                        const char *msg) {
  if (status < 0)
    return EX_OSERR;
  if (status == CLI_EXIT_LOST)
    return status;
  if (lost || rc == RLOCK_ELOST) {
    cli_fail(0,
             "leadership of '%s' was lost while '%s' ran (found at the "
             "resignation)",
             a->name, a->command[0]);
    return CLI_EXIT_LOST;
  }
  if (rc != RLOCK_OK)
    cli_fail(0,
             "warning: cannot resign from '%s' (leadership ends by itself "
             "within its lease): %s",
             a->name, msg);
  else if (a->verbose)
    cli_fail(0, "resigned from '%s'", a->name);
  return status;
}

/* Run COMMAND as the leader of term `term`, then resign. */
static int lead(rlock_election *e, const elect_args *a, int64_t period_ms,
                int64_t term) {
  if (a->verbose)
    cli_fail(0, "leading '%s' (term %lld)", a->name, (long long)term);
  cli_env_slots slots;
  char **envp = cli_command_env(a->name, "RLOCK_TERM", term, &slots);
  int status;
  if (envp == NULL) {
    status = cli_fail(-1, "cannot start '%s': out of memory", a->command[0]);
  } else {
    cli_watch w = {elect_lost, e, NULL, period_ms, a->kill_after_ms, 1, envp};
    status = cli_spawn_watch(a->command, &w);
  }
  free(envp);
  int lost = status == CLI_EXIT_LOST || atomic_load(&lost_flag) ||
             rlock_election_check(e, RLOCK_OWNER_THREAD) == RLOCK_ELOST;
  const char *msg;
  int rc = cli_release_bounded(resign_one, e, a->release_ms, &msg);
  return after_resign(a, status, lost, rc, msg);
}

/* Campaign (a wait a caught signal ends), then lead. */
static int campaign(rlock_election *e, const elect_args *a, int64_t period_ms) {
  char host[256], value[320];
  const char *v = a->value;
  if (v == NULL) {
    if (gethostname(host, sizeof host) != 0)
      snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    snprintf(value, sizeof value, "%s:%ld", host, (long)getpid());
    v = value;
  }
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = a->wait_ms;
  o.cancel = cli_cancel_token();
  int64_t term = 0;
  cli_notice_begin(a->name, a->wait_ms == 0);
  int rc = rlock_election_campaign(e, v, &o, &term);
  cli_notice_end();
  if (rc == RLOCK_ECANCELED)
    return CLI_EXIT_SIGNAL_BASE + cli_signal_caught();
  if (rc == RLOCK_ELOCKED)
    return cli_fail(EX_TEMPFAIL, "%s", rlock_error_last()->message);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc);
  return lead(e, a, period_ms, term);
}

int cli_cmd_elect(const cli_global *g, int argc, char **argv) {
  elect_args a = {RLOCK_WAIT_FOREVER,    10000, 0, NULL, NULL, NULL,
                  CLI_COMMAND_TIMEOUT_MS};
  int status = parse_elect(argc, argv, &a);
  if (status != CLI_CONTINUE)
    return status;
  if (g->nurls > 1)
    return cli_usage("elect: one -u URL only (several are for exec's "
                     "RedLock)");
  /* The registry record names COMMAND: operators see who leads. */
  static char program[RLOCK_PROGRAM_MAX + 1];
  cli_program_text(a.command, program);
  cli_global gx = *g;
  gx.program = program;
  g = &gx;
  if (g->command_timeout_ms != 0)
    a.release_ms = g->command_timeout_ms;
  int64_t period = (g->watchdog_ms != 0 ? g->watchdog_ms : 30000) / 3;
  if ((status = cli_check_command(a.command[0])) != 0)
    return status;
  if (cli_signals_install() != 0)
    return cli_fail(EX_OSERR, "cannot catch signals: %s", strerror(errno));
  rlock_client *client = NULL;
  rlock_election *e = NULL;
  status = cli_client_new(g, g->url, on_lost, NULL, &client);
  if (status == 0) {
    int rc = rlock_election_new(&e, client, a.name);
    status = rc != RLOCK_OK ? cli_lib_error(rc)
                            : campaign(e, &a, period < 1 ? 1 : period);
  }
  if (cli_release_abandoned())
    return status; /* the resignation still uses them; rlock exits now */
  rlock_election_free(e);
  rlock_client_free(client);
  cli_signals_free();
  return status;
}
