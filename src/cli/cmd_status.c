/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_status.c - `rlock status [--json] NAME...`: who holds each lock, and
 * for how long, from one atomic snapshot per lock (rlock_lock_inspect);
 * and the latest fencing token issued for NAME, if any (rlock_lock_token,
 * one more read). Its holder printers serve `rlock list` too.
 *
 * A NAME that is not a lock but a counter (a string holding a number) is
 * shown as a semaphore's or latch's count: their layouts are the same, so
 * only a permit-expirable semaphore, which has permits leased, can be told
 * apart (by its total exceeding what is available).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char status_help[] =
    "Usage: rlock [-u URL] [OPTION]... status [--json] NAME [NAME...]\n"
    "       rlock [-u URL] [OPTION]... status [--json] --watch [--interval "
    "DUR]\n"
    "             NAME\n"
    "\n"
    "Show whether each lock NAME is held, by whom (owner field\n"
    "<client id>:<thread id> and hold count) and when it expires, and\n"
    "for a fair lock the waiters queued for it, in order. Once a fenced\n"
    "lock (exec --fenced, Redisson's RFencedLock) has been taken on NAME,\n"
    "also the latest fencing token issued for it (while NAME is held by a\n"
    "fenced holder, that holder's token).\n"
    "Each holder and queued waiter is followed by who it is, from its\n"
    "client's registry record (rlock:client:<client id>): host, pid,\n"
    "program, rlock version and how long ago the client was made (the hold\n"
    "time itself is not kept in Redis); \"Redisson or unknown client\" when\n"
    "there is no record.\n"
    "A NAME that holds a semaphore's or a count-down latch's count (both\n"
    "are a number in Redis) shows that count; a permit-expirable semaphore\n"
    "with permits leased shows how many are available of how many, then\n"
    "each leased permit's id and the lease it has left (reading it gives\n"
    "expired permits back, as every Redisson call on it does).\n"
    "\n"
    "Options:\n"
    "  --json       print one JSON object per NAME, each on one line, in\n"
    "               the order given:\n"
    "               {\"name\": \"NAME\", \"locked\": true|false, "
    "\"ttl_ms\": N,\n"
    "                \"mode\": \"read\"|\"write\"|null,\n"
    "                \"holders\": [{\"owner\": \"OWNER\", \"count\": N,\n"
    "                  \"client\": CLIENT}],\n"
    "                \"queue\": [{\"owner\": \"OWNER\", \"deadline_ms\": N,\n"
    "                  \"client\": CLIENT}],\n"
    "                \"node\": \"HOST:PORT\", \"topology\": "
    "\"single\"|\"cluster\"|\n"
    "                \"sentinel\", \"token\": N}\n"
    "               (ttl_ms is -2 when the lock is free; queue lists a fair\n"
    "               lock's waiters in order, each with the ms left before\n"
    "               its deadline; mode is a read-write lock's, whose\n"
    "               writer's owner ends in \":write\"; node is the server\n"
    "               that answered: in a cluster the master of the lock's\n"
    "               slot, behind Sentinel the master; token, the latest\n"
    "               fencing token, only once one has been issued;\n"
    "               CLIENT is {\"host\": H, \"pid\": N, \"program\": P,\n"
    "               \"version\": V, \"started_ms\": N} from the registry\n"
    "               record, or null for a Redisson or unknown client);\n"
    "               for a count: {\"name\": \"NAME\", \"kind\":\n"
    "                \"count\"|\"permit-expirable-semaphore\", \"available\": "
    "N,\n"
    "                \"permits\": N, \"leased\": N, \"permit_leases\":\n"
    "                [{\"id\": \"ID\", \"lease_ms\": N}]} (a count's\n"
    "               available is the number, a semaphore's permits or a\n"
    "               latch's count; permit_leases only with permits leased,\n"
    "               the first 1000 by deadline, lease_ms -1 for none)\n"
    "  --watch      follow the lock NAME: print its state, then one line\n"
    "               each time its holders or its queue change, until\n"
    "               interrupted: \"TIME NAME: free\" or \"TIME NAME: locked\n"
    "               by OWNER xCOUNT (pid P on HOST, PROGRAM), ...; queued:\n"
    "               OWNER ...\" (TIME in UTC; the client part from the\n"
    "               registry, when known); with --json one object per\n"
    "               change as above, without token. It reads the lock when\n"
    "               a message on the lock's channel says a holder let go,\n"
    "               when the holder's lease is due to end, and every\n"
    "               --interval: taking a lock publishes nothing (nor does\n"
    "               a fair lock's release on that channel), so a change\n"
    "               only a taking makes is seen within the interval, and\n"
    "               one undone within it can go unseen\n"
    "  --interval DUR  how often --watch reads the lock without a message\n"
    "               (default 1s, at least 10ms)\n"
    "  -h, --help   show this help\n"
    "\n"
    "Exit status:\n"
    "  0    success, whether the locks are held or free\n"
    "  64   usage error\n"
    "  65   a NAME holds something that is neither a lock nor a count\n"
    "       (or its token key something that is not a counter), or is\n"
    "       invalid; the other NAMEs are still shown\n"
    "  69   Redis unreachable, refusing or failing (no more NAMEs are\n"
    "       tried)\n"
    "  70   internal error\n"
    "  71   system error (cannot start a thread, out of memory)\n"
    "  74   cannot write the output\n"
    "  128+N  --watch ended by signal N (Ctrl-C: 130)\n";

void cli_json_holders(rlock_client *client, const rlock_lock_info *info) {
  fputs("\"holders\": [", stdout);
  for (size_t i = 0; i < rlock_lock_info_holder_count(info); i++) {
    const char *owner = rlock_lock_info_holder_owner(info, i);
    fputs(i > 0 ? ", {\"owner\": " : "{\"owner\": ", stdout);
    cli_json_string(stdout, owner);
    printf(", \"count\": %" PRId64, rlock_lock_info_holder_holds(info, i));
    cli_json_who(client, owner);
    fputc('}', stdout);
  }
  fputs("], \"queue\": [", stdout);
  for (size_t i = 0; i < rlock_lock_info_queue_count(info); i++) {
    const char *owner = rlock_lock_info_queue_owner(info, i);
    fputs(i > 0 ? ", {\"owner\": " : "{\"owner\": ", stdout);
    cli_json_string(stdout, owner);
    printf(", \"deadline_ms\": %" PRId64,
           rlock_lock_info_queue_deadline_ms(info, i));
    cli_json_who(client, owner);
    fputc('}', stdout);
  }
  fputc(']', stdout);
}

/* `token` is the latest fencing token, 0 when none was ever issued. */
void cli_status_json(rlock_client *client, const char *name,
                     const rlock_lock_info *info, const char *topology,
                     int64_t token) {
  fputs("{\"name\": ", stdout);
  cli_json_string(stdout, name);
  const char *mode = rlock_lock_info_mode(info);
  printf(", \"locked\": %s, \"ttl_ms\": %" PRId64 ", \"mode\": %s%s%s, ",
         rlock_lock_info_locked(info) ? "true" : "false",
         rlock_lock_info_ttl_ms(info), mode ? "\"" : "", mode ? mode : "null",
         mode ? "\"" : "");
  cli_json_holders(client, info);
  fputs(", \"node\": ", stdout);
  cli_json_string(stdout, rlock_lock_info_node(info));
  printf(", \"topology\": \"%s\"", topology);
  if (token > 0)
    printf(", \"token\": %" PRId64, token);
  fputs("}\n", stdout);
}

void cli_print_queue(rlock_client *client, const rlock_lock_info *info) {
  for (size_t i = 0; i < rlock_lock_info_queue_count(info); i++) {
    char left[32];
    const char *owner = rlock_lock_info_queue_owner(info, i);
    cli_format_ms(left, sizeof left,
                  rlock_lock_info_queue_deadline_ms(info, i));
    printf("  queued %zu: ", i + 1);
    cli_put_printable(stdout, owner);
    printf(" (deadline in %s)\n", left);
    cli_print_who(client, owner);
  }
}

/* "  holder OWNER (2 holds)"; for a read-write lock "  reader OWNER (...)"
 * or "  writer OWNER (...)" (the owner without its ":write" suffix). */
static void print_holder(rlock_client *client, const rlock_lock_info *info,
                         size_t i, int rw) {
  const char *owner = rlock_lock_info_holder_owner(info, i);
  int64_t holds = rlock_lock_info_holder_holds(info, i);
  size_t n = strlen(owner);
  int writer = rw && n > 6 && strcmp(owner + n - 6, ":write") == 0;
  fputs(!rw ? "  holder " : writer ? "  writer " : "  reader ", stdout);
  if (writer) {
    char *bare = strndup(owner, n - 6);
    cli_put_printable(stdout, bare ? bare : owner);
    free(bare);
  } else {
    cli_put_printable(stdout, owner);
  }
  printf(" (%" PRId64 " hold%s)\n", holds, holds == 1 ? "" : "s");
  cli_print_who(client, owner);
}

void cli_print_holders(rlock_client *client, const rlock_lock_info *info) {
  for (size_t i = 0; i < rlock_lock_info_holder_count(info); i++)
    print_holder(client, info, i, rlock_lock_info_mode(info) != NULL);
}

void cli_print_node(const rlock_lock_info *info, const char *topology) {
  if (strcmp(topology, "single") == 0)
    return;
  fputs("  node ", stdout);
  cli_put_printable(stdout, rlock_lock_info_node(info));
  printf(" (%s)\n", topology);
}

/* "  token 42 (the latest fencing token issued)", once there is one. */
static void print_token(int64_t token) {
  if (token > 0)
    printf("  token %" PRId64 " (the latest fencing token issued)\n", token);
}

/* "orders: locked, expires in 29.5s" + "  holder OWNER (2 holds)" lines. */
static void print_human(rlock_client *client, const char *name,
                        const rlock_lock_info *info, const char *topology,
                        int64_t token) {
  int64_t ttl = rlock_lock_info_ttl_ms(info);
  cli_put_printable(stdout, name);
  if (!rlock_lock_info_locked(info)) {
    fputs(": free\n", stdout);
    print_token(token);
    cli_print_queue(client, info);
    cli_print_node(info, topology);
    return;
  }
  char left[32] = "";
  if (ttl >= 0)
    cli_format_ms(left, sizeof left, ttl);
  const char *mode = rlock_lock_info_mode(info);
  const char *what = mode == NULL                 ? ""
                     : strcmp(mode, "write") == 0 ? " for writing"
                                                  : " for reading";
  printf(": locked%s, %s%s\n", what, ttl >= 0 ? "expires in " : "no expiry",
         left);
  cli_print_holders(client, info);
  print_token(token);
  cli_print_queue(client, info);
  cli_print_node(info, topology);
}

#define STATUS_SHORTOPTS "+:h"
enum { OPT_JSON = 256, OPT_WATCH, OPT_INTERVAL };

typedef struct status_args {
  int first, json, watch, interval_set;
  int64_t interval_ms;
} status_args;

static int status_option(status_args *a, int c, char **argv) {
  switch (c) {
  case OPT_JSON:
    a->json = 1;
    return CLI_CONTINUE;
  case OPT_WATCH:
    a->watch = 1;
    return CLI_CONTINUE;
  case OPT_INTERVAL:
    a->interval_set = 1;
    return cli_interval_arg("status", optarg, 10, &a->interval_ms);
  default:
    return cli_bad_option(c, argv, STATUS_SHORTOPTS);
  }
}

/* Returns CLI_CONTINUE with the NAMEs (argv[a->first..argc)) and the
 * options in *a, or an exit status. */
static int parse_status(int argc, char **argv, status_args *a) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, OPT_JSON},
      {"watch", no_argument, NULL, OPT_WATCH},
      {"interval", required_argument, NULL, OPT_INTERVAL},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, STATUS_SHORTOPTS, longopts, NULL)) !=
         -1) {
    if (c == 'h')
      return cli_help(status_help);
    int st = status_option(a, c, argv);
    if (st != CLI_CONTINUE)
      return st;
  }
  if (optind == argc)
    return cli_usage("status: missing NAME");
  int st = cli_options_first("status", "NAME", argc - optind, argv + optind);
  if (st != CLI_CONTINUE)
    return st;
  if (a->interval_set && !a->watch)
    return cli_usage("status: --interval applies to --watch only");
  if (a->watch && argc - optind != 1)
    return cli_usage("status: --watch follows one NAME");
  a->first = optind;
  return CLI_CONTINUE;
}

/* A permit-expirable semaphore's leased permits, each with its lease left
 * (-1: none), as JSON members or as indented lines. */
static void put_permits(const rlock_permits_info *info, int json) {
  size_t n = rlock_permits_info_count(info);
  if (json)
    fputs(", \"permit_leases\": [", stdout);
  for (size_t i = 0; i < n; i++) {
    const char *id = rlock_permits_info_id(info, i);
    int64_t ms = rlock_permits_info_lease_ms(info, i);
    if (json)
      printf("%s{\"id\": \"%s\", \"lease_ms\": %" PRId64 "}", i > 0 ? ", " : "",
             id, ms);
    else if (ms < 0)
      printf("  permit %s, no lease\n", id);
    else
      printf("  permit %s, lease %" PRId64 " ms left\n", id, ms);
  }
  if (json)
    fputs("]", stdout);
  else if (rlock_permits_info_leased(info) > n)
    printf("  (%zu more permits leased, not shown)\n",
           rlock_permits_info_leased(info) - n);
}

/* A count (a semaphore's, a latch's) or a permit-expirable semaphore's
 * permits, from one snapshot (rlock_psemaphore_inspect): the available
 * ones and the leased ones with their leases. A key that is no count
 * either is told with `why`, the lock's reason. */
static int show_count(rlock_client *client, const char *name, int json,
                      const char *why) {
  rlock_psemaphore *sem;
  rlock_permits_info *info = NULL;
  int rc = rlock_psemaphore_new(&sem, client, name);
  if (rc == RLOCK_OK)
    rc = rlock_psemaphore_inspect(&info, sem);
  rlock_psemaphore_free(sem);
  if (rc == RLOCK_EWRONGTYPE)
    return cli_fail(EX_DATAERR, "%s", why);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc);
  int64_t available = rlock_permits_info_available(info);
  int64_t leased = (int64_t)rlock_permits_info_leased(info);
  if (json) {
    fputs("{\"name\": ", stdout);
    cli_json_string(stdout, name);
    printf(", \"kind\": \"%s\", \"available\": %" PRId64
           ", \"permits\": %" PRId64 ", \"leased\": %" PRId64,
           leased > 0 ? "permit-expirable-semaphore" : "count", available,
           available + leased, leased);
    if (leased > 0)
      put_permits(info, 1);
    fputs("}\n", stdout);
  } else {
    cli_put_printable(stdout, name);
    if (leased > 0) {
      printf(": permit-expirable semaphore, %" PRId64 " available of %" PRId64
             " (%" PRId64 " leased)\n",
             available, available + leased, leased);
      put_permits(info, 0);
    } else {
      printf(": count %" PRId64 " (a semaphore's available permits or a "
             "latch's count)\n",
             available);
    }
  }
  rlock_permits_info_free(info);
  return 0;
}

/* Show one lock: 0, or an exit status after saying what went wrong. */
static int show(rlock_client *client, const char *name, int json) {
  rlock_lock *lock;
  rlock_lock_info *info;
  int64_t token;
  int rc = cli_lock_new(CLI_FAIR, &lock, client, name);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc); /* a bad name: EX_DATAERR */
  rc = rlock_lock_inspect(&info, lock);
  if (rc == RLOCK_EWRONGTYPE) {
    char why[512];
    snprintf(why, sizeof why, "%s", rlock_error_last()->message);
    rlock_lock_free(lock);
    return show_count(client, name, json, why);
  }
  if (rc != RLOCK_OK) {
    rlock_lock_free(lock);
    return cli_lib_error(rc);
  }
  /* A second read, after the snapshot: a token issued in between shows
   * too. 0 when none ever was (the counter starts at 1). */
  rc = rlock_lock_token(&token, lock);
  rlock_lock_free(lock);
  if (rc != RLOCK_OK) {
    rlock_lock_info_free(info);
    return cli_lib_error(rc); /* not a counter: EX_DATAERR */
  }
  const char *topology = rlock_client_topology(client);
  if (json)
    cli_status_json(client, name, info, topology, token);
  else
    print_human(client, name, info, topology, token);
  rlock_lock_info_free(info);
  return 0;
}

int cli_cmd_status(const cli_global *g, int argc, char **argv) {
  status_args a = {0, 0, 0, 0, 1000};
  int status = parse_status(argc, argv, &a);
  if (status != CLI_CONTINUE)
    return status;
  if (g->nurls > 1)
    return cli_usage(
        "status: one -u URL only (several are for exec's RedLock)");
  if (a.watch && cli_signals_install() != 0)
    return cli_fail(EX_OSERR, "cannot catch signals: %s", strerror(errno));
  rlock_client *client;
  if ((status = cli_client_new(g, g->url, NULL, NULL, &client)) == 0) {
    if (a.watch)
      status = cli_status_watch(client, argv[a.first], a.json, a.interval_ms);
    /* A NAME that is not a lock does not hide the others; a server that
     * fails would fail them all, so that ends the command. */
    for (int i = a.first; !a.watch && i < argc && status != EX_UNAVAILABLE;
         i++) {
      int st = show(client, argv[i], a.json);
      if (status == 0 || st == EX_UNAVAILABLE)
        status = st;
    }
    rlock_client_free(client);
  }
  if (a.watch)
    cli_signals_free();
  return status;
}
