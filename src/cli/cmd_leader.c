/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_leader.c - `rlock leader [--json] [--watch] NAME`: who leads the
 * election NAME (rlock_election_observe: value, term, lease left, owner),
 * once or one line per change (rlock_election_watch_new: from the
 * election's messages, the lease's end and the interval).
 */
#include <errno.h>
#include <getopt.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char leader_help[] =
    "Usage: rlock [-u URL] [OPTION]... leader [--json] [--watch]\n"
    "             [--interval DUR] NAME\n"
    "\n"
    "Show who leads the election NAME (see 'rlock elect'): the leader's\n"
    "value (by default HOST:PID of its rlock elect), its term, the lease\n"
    "left and its owner id, read in one step. A holder of the lock NAME\n"
    "that did not campaign (a Redisson RFencedLock, say) is shown with its\n"
    "owner only.\n"
    "\n"
    "Options:\n"
    "  --json          print one JSON object per line: name, leader (true\n"
    "                  or false), value, term, ttl_ms, owner\n"
    "  --watch         print the current state, then one line each time the\n"
    "                  leader (owner or term) changes, until interrupted;\n"
    "                  it looks when a message on the election's channel\n"
    "                  says a leader went (and twice soon after, for the\n"
    "                  standby that takes over), when the leader's lease\n"
    "                  is due to end and every --interval (a new leader\n"
    "                  publishes nothing: one that comes and goes between\n"
    "                  two looks is not shown)\n"
    "  --interval DUR  how often --watch looks (default 1s, at least 10ms)\n"
    "  -h, --help      show this help\n"
    "\n"
    "Exit status:\n"
    "  0      someone leads\n"
    "  1      nobody leads (without --watch)\n"
    "  64     usage error\n"
    "  65     NAME holds something that is not a lock, or is invalid\n"
    "  69     Redis unreachable, refusing or failing\n"
    "  70     internal error\n"
    "  71     system error (cannot start a thread, out of memory)\n"
    "  74     cannot write the output\n"
    "  128+N  --watch ended by signal N\n";

typedef struct leader_args {
  int json, watch;
  int64_t interval_ms;
  const char *name;
} leader_args;

#define LEADER_SHORTOPTS "+:h"
enum { OPT_JSON = 256, OPT_WATCH, OPT_INTERVAL };

static int leader_option(leader_args *a, int c, char **argv) {
  switch (c) {
  case OPT_JSON:
    a->json = 1;
    return CLI_CONTINUE;
  case OPT_WATCH:
    a->watch = 1;
    return CLI_CONTINUE;
  case OPT_INTERVAL:
    return cli_interval_arg("leader", optarg, 10, &a->interval_ms);
  default:
    return cli_bad_option(c, argv, LEADER_SHORTOPTS);
  }
}

static int parse_leader(int argc, char **argv, leader_args *a) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, OPT_JSON},
      {"watch", no_argument, NULL, OPT_WATCH},
      {"interval", required_argument, NULL, OPT_INTERVAL},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c, interval_set = 0;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, LEADER_SHORTOPTS, longopts, NULL)) !=
         -1) {
    if (c == 'h')
      return cli_help(leader_help);
    interval_set |= c == OPT_INTERVAL;
    int st = leader_option(a, c, argv);
    if (st != CLI_CONTINUE)
      return st;
  }
  if (interval_set && !a->watch)
    return cli_usage("leader: --interval applies to --watch only");
  return cli_one_name("leader", argc - optind, argv + optind, &a->name);
}

static void print_json(const char *name, const rlock_leader *l) {
  fputs("{\"name\":", stdout);
  cli_json_string(stdout, name);
  printf(",\"leader\":%s", rlock_leader_present(l) ? "true" : "false");
  if (rlock_leader_present(l)) {
    fputs(",\"value\":", stdout);
    if (rlock_leader_value(l) != NULL)
      cli_json_string(stdout, rlock_leader_value(l));
    else
      fputs("null", stdout);
    printf(",\"term\":%lld,\"ttl_ms\":%lld,\"owner\":",
           (long long)rlock_leader_term(l), (long long)rlock_leader_ttl_ms(l));
    cli_json_string(stdout, rlock_leader_owner(l));
  }
  fputs("}\n", stdout);
}

static void print_text(const char *name, const rlock_leader *l) {
  cli_put_printable(stdout, name);
  if (!rlock_leader_present(l)) {
    fputs(": no leader\n", stdout);
    return;
  }
  char left[32];
  cli_format_ms(left, sizeof left,
                rlock_leader_ttl_ms(l) > 0 ? rlock_leader_ttl_ms(l) : 0);
  if (rlock_leader_value(l) != NULL) {
    fputs(": ", stdout);
    cli_put_printable(stdout, rlock_leader_value(l));
    printf(" (term %lld, lease %s left, owner ",
           (long long)rlock_leader_term(l), left);
  } else {
    printf(": held without a campaign (lease %s left, owner ", left);
  }
  cli_put_printable(stdout, rlock_leader_owner(l));
  fputs(")\n", stdout);
}

static void print_leader(const leader_args *a, const rlock_leader *l) {
  if (a->json)
    print_json(a->name, l);
  else
    print_text(a->name, l);
  fflush(stdout);
}

/* --watch: rlock_election_watch_new tells each change on the client's
 * background thread; this thread waits for a signal or a failed read. */
typedef struct follow {
  const leader_args *a;
  atomic_int status; /* an exit status once a read failed, else 0 */
} follow;

static void on_change(void *arg, int rc, rlock_leader *l) {
  follow *f = arg;
  if (rc != RLOCK_OK) {
    atomic_store(&f->status, cli_lib_error(rc));
    return;
  }
  print_leader(f->a, l);
  rlock_leader_free(l);
}

static int watch(rlock_election *e, const leader_args *a) {
  follow f = {a, 0};
  rlock_election_watch *w;
  int rc = rlock_election_watch_new(&w, e, a->interval_ms, on_change, &f);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc);
  while (cli_signal_caught() == 0 && atomic_load(&f.status) == 0) {
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL); /* EINTR: the loop looks at the signal */
  }
  rlock_election_watch_free(w);
  int st = atomic_load(&f.status);
  return st != 0 ? st : CLI_EXIT_SIGNAL_BASE + cli_signal_caught();
}

static int show(rlock_client *client, const leader_args *a) {
  rlock_election *e;
  int rc = rlock_election_new(&e, client, a->name);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc);
  rlock_leader *l;
  int status;
  if (a->watch) {
    status = watch(e, a);
  } else if ((rc = rlock_election_observe(&l, e)) != RLOCK_OK) {
    status = cli_lib_error(rc);
  } else {
    print_leader(a, l);
    status = rlock_leader_present(l) ? 0 : CLI_EXIT_NOTHING;
    rlock_leader_free(l);
  }
  rlock_election_free(e);
  return status;
}

int cli_cmd_leader(const cli_global *g, int argc, char **argv) {
  leader_args a = {0, 0, 1000, NULL};
  int status = parse_leader(argc, argv, &a);
  if (status != CLI_CONTINUE)
    return status;
  if (g->nurls > 1)
    return cli_usage("leader: one -u URL only (several are for exec's "
                     "RedLock)");
  if (a.watch && cli_signals_install() != 0)
    return cli_fail(EX_OSERR, "cannot catch signals: %s", strerror(errno));
  rlock_client *client;
  status = cli_client_new(g, g->url, NULL, NULL, &client);
  if (status != 0)
    return status;
  status = show(client, &a);
  rlock_client_free(client);
  if (a.watch)
    cli_signals_free();
  return status;
}
