/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_latch.c - `rlock latch set|down|wait`: a count-down latch
 * (Redisson's RCountDownLatch) from the shell, so that jobs can wait for
 * each other: one sets the count, each finisher counts down, and the
 * waiters go on once it reaches zero.
 *
 *   rlock [-u URL] latch set NAME COUNT
 *   rlock [-u URL] latch down NAME
 *   rlock [-u URL] latch wait [-w DUR] NAME
 *
 * The wait is one library call that a caught signal ends (the handler
 * fires its cancel token, as exec's wait for a lock).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char latch_help[] =
    "Usage: rlock [-u URL] [OPTION]... latch set NAME COUNT\n"
    "       rlock [-u URL] [OPTION]... latch down NAME\n"
    "       rlock [-u URL] [OPTION]... latch wait [-w DUR] NAME\n"
    "\n"
    "A count-down latch NAME (Redisson's RCountDownLatch): 'set' gives it\n"
    "COUNT (1 to 9223372036854775807) if it has no count (never set, or\n"
    "counted down to zero); 'down' counts it down by one (nothing happens\n"
    "to a latch without a count); 'wait' waits until its count is zero (a\n"
    "latch never set counts zero). Java programs using Redisson's\n"
    "RCountDownLatch on NAME share it.\n"
    "\n"
    "Options:\n"
    "  -w, --wait DUR, --timeout DUR\n"
    "               wait: give up if the count is not zero within DUR (0:\n"
    "               look once); default: wait as long as it takes\n"
    "  -h, --help   show this help\n"
    "\n"
    "DUR is a number of seconds (1.5) or a number with a unit: 250ms, 10s,\n"
    "5m, 1h, 1d (at most 365 days).\n"
    "\n"
    "Exit status:\n"
    "  0        set: the count was set; down: counted down; wait: the count\n"
    "           is zero\n"
    "  1        set: the latch already had a count (left as it was)\n"
    "  64       usage error\n"
    "  65       NAME holds something that is not a latch (left alone), or\n"
    "           is invalid\n"
    "  69       Redis unreachable, refusing or failing\n"
    "  70       internal error\n"
    "  71       system error (cannot start a thread, out of memory)\n"
    "  74       cannot write the output\n"
    "  75       wait: the count was not zero within -w\n"
    "  128+N    wait: rlock got signal N while waiting\n";

#define LATCH_SHORTOPTS "+:w:h"

/* What the command line asks. */
typedef struct latch_args {
  const char *verb; /* "set", "down" or "wait" */
  const char *name;
  int64_t count;   /* set's COUNT */
  int64_t wait_ms; /* wait's -w, or RLOCK_WAIT_FOREVER */
} latch_args;

/* COUNT: a decimal 1..INT64_MAX. */
static int parse_count(const char *s, int64_t *count) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 || v < 1)
    return cli_usage("latch set: COUNT '%s' is not a count (1 to %" PRId64 ")",
                     s, INT64_MAX);
  *count = v;
  return CLI_CONTINUE;
}

/* The words after the options: VERB NAME [COUNT]. */
static int parse_words(int n, char **w, int waited, latch_args *a) {
  if (n == 0)
    return cli_usage("latch: missing 'set', 'down' or 'wait'");
  a->verb = w[0];
  int set = strcmp(a->verb, "set") == 0;
  if (!set && strcmp(a->verb, "down") != 0 && strcmp(a->verb, "wait") != 0)
    return cli_usage("latch: unknown '%s' (expected set, down or wait)",
                     a->verb);
  if (waited && strcmp(a->verb, "wait") != 0)
    return cli_usage("latch %s: -w is for 'latch wait'", a->verb);
  for (int i = 1; i < n; i++)
    if (w[i][0] == '-')
      return cli_usage("latch %s: options go before NAME (got '%s' after "
                       "'%s')",
                       a->verb, w[i], w[i - 1]);
  if (n < 2)
    return cli_usage("latch %s: missing NAME", a->verb);
  if (set && n < 3)
    return cli_usage("latch set: missing COUNT after NAME '%s'", w[1]);
  if (n > (set ? 3 : 2))
    return cli_usage("latch %s: unexpected '%s' after NAME '%s'", a->verb,
                     w[set ? 3 : 2], w[1]);
  a->name = w[1];
  return set ? parse_count(w[2], &a->count) : CLI_CONTINUE;
}

/* Returns CLI_CONTINUE with *a filled, or an exit status. The options
 * (-w) may come before or after the verb: "latch -w 5 wait NAME" and
 * "latch wait -w 5 NAME". */
static int parse_latch(int argc, char **argv, latch_args *a) {
  static const struct option longopts[] = {
      {"wait", required_argument, NULL, 'w'},
      {"timeout", required_argument, NULL, 'w'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c, waited = 0;
  optind = 0;
  opterr = 0;
  /* The verb first, if it is there, so that its options follow it. */
  int verb = argc > 1 && argv[1][0] != '-';
  char **args = argv + verb;
  int nargs = argc - verb;
  while ((c = getopt_long(nargs, args, LATCH_SHORTOPTS, longopts, NULL)) !=
         -1) {
    if (c == 'h')
      return cli_help(latch_help);
    if (c != 'w')
      return cli_bad_option(c, args, LATCH_SHORTOPTS);
    if (cli_duration_arg("-w", optarg, &a->wait_ms) != 0)
      return EX_USAGE;
    waited = 1;
  }
  char *words[4];
  int n = 0;
  if (nargs - optind + verb > 4)
    return cli_usage("latch: too many words (got '%s')", args[nargs - 1]);
  if (verb)
    words[n++] = argv[1];
  for (int i = optind; i < nargs; i++)
    words[n++] = args[i];
  return parse_words(n, words, waited, a);
}

/* latch set: 0 when set, 1 when it had a count; one line on stdout. */
static int latch_set(rlock_latch *latch, const latch_args *a) {
  int set = 0;
  int rc = rlock_latch_try_set_count(&set, latch, a->count);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc);
  fputs("rlock: latch '", stdout);
  cli_put_printable(stdout, a->name);
  if (set) {
    printf("' set to %" PRId64 "\n", a->count);
    return 0;
  }
  int64_t now = 0;
  if (rlock_latch_count(&now, latch) == RLOCK_OK && now > 0)
    printf("' already counts %" PRId64 "; left as it is\n", now);
  else
    fputs("' already had a count; left as it is\n", stdout);
  return CLI_EXIT_NOTHING;
}

/* latch wait: one wait a signal ends (the signals are caught only here,
 * the one command that waits). */
static int latch_wait(rlock_latch *latch, const latch_args *a) {
  if (cli_signals_install() != 0)
    return cli_fail(EX_OSERR, "cannot catch signals: %s", strerror(errno));
  cli_notice_begin(a->name, a->wait_ms == 0);
  int rc = rlock_latch_await(latch, a->wait_ms, cli_cancel_token());
  cli_notice_end();
  int status;
  if (rc == RLOCK_ECANCELED)
    status = CLI_EXIT_SIGNAL_BASE + cli_signal_caught();
  else if (rc == RLOCK_ELOCKED)
    status = cli_fail(EX_TEMPFAIL, "%s", rlock_error_last()->message);
  else
    status = rc == RLOCK_OK ? 0 : cli_lib_error(rc);
  cli_signals_free();
  return status;
}

int cli_cmd_latch(const cli_global *g, int argc, char **argv) {
  latch_args a = {NULL, NULL, 0, RLOCK_WAIT_FOREVER};
  int status = parse_latch(argc, argv, &a);
  if (status != CLI_CONTINUE)
    return status;
  if (g->nurls > 1)
    return cli_usage("latch: one -u URL only (several are for exec's "
                     "RedLock)");
  if (g->retry_set && strcmp(a.verb, "wait") != 0)
    return cli_usage("--retry-for applies to exec, elect and latch wait "
                     "only, not to latch %s",
                     a.verb);
  rlock_client *client;
  if ((status = cli_client_new(g, g->url, NULL, NULL, &client)) != 0)
    return status;
  rlock_latch *latch;
  int rc = rlock_latch_new(&latch, client, a.name);
  if (rc != RLOCK_OK) {
    status = cli_lib_error(rc); /* a bad name: EX_DATAERR */
  } else if (strcmp(a.verb, "set") == 0) {
    status = latch_set(latch, &a);
  } else if (strcmp(a.verb, "down") == 0) {
    rc = rlock_latch_count_down(latch);
    status = rc == RLOCK_OK ? 0 : cli_lib_error(rc);
  } else {
    status = latch_wait(latch, &a);
  }
  rlock_latch_free(latch);
  rlock_client_free(client);
  return status;
}
