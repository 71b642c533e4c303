/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_list.c - `rlock list [--json] [--counts] [PATTERN]`: the locks held
 * now (and with --counts the semaphores and latches), found
 * by rlock_client_list_locks (SCAN on every server, each key checked by
 * the lock scripts' rule), for an operator who does not know their names.
 */
#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "cli.h"

static const char list_help[] =
    "Usage: rlock [-u URL] [OPTION]... list [--json] [--counts] [PATTERN]\n"
    "\n"
    "List the locks held now whose names match PATTERN (a Redis glob: *,\n"
    "?, [abc], \\ escapes; default *), with their kind, holders, time to\n"
    "live and, for a fair lock, how many waiters are queued (the first 10\n"
    "listed). Each holder and waiter is followed by who it is, as 'rlock\n"
    "status' shows it (its client's registry record). Every server\n"
    "is walked: a cluster's every master, Sentinel's master. Keys are\n"
    "found with SCAN in small steps (never KEYS) and each hash is checked\n"
    "by the rule the lock scripts use; a key that is not a lock is never\n"
    "written, and one that is not a hash is not even read. Redis 6.0 or\n"
    "later. Each lock is shown once; locks taken or released meanwhile may\n"
    "or may not show. The last line says how many locks were shown.\n"
    "With --counts, the semaphores and count-down latches whose names match\n"
    "follow the locks, and a last line counts them too (without it the\n"
    "output is locks only, for scripts; 'rlock top' shows by default the\n"
    "semaphores and latches waited on and the permit-expirable semaphores\n"
    "with permits leased).\n"
    "\n"
    "Kinds: reentrant; fair (a lock with waiters queued: a fair lock\n"
    "without waiters shows as reentrant); read-write (held for reading or\n"
    "writing); fenced (a reentrant lock with a fencing-token counter).\n"
    "\n"
    "Options:\n"
    "  --json       print one JSON object per lock, each on one line, and\n"
    "               no count line:\n"
    "               {\"name\": \"NAME\", \"kind\": \"reentrant\"|\"fair\"|"
    "\"read-write\"|\n"
    "                \"fenced\", \"mode\": \"read\"|\"write\"|null, "
    "\"ttl_ms\": N,\n"
    "                \"holders\": [{\"owner\": \"OWNER\", \"count\": N,\n"
    "                  \"client\": CLIENT}],\n"
    "                \"queue\": [{\"owner\": \"OWNER\", \"deadline_ms\": N,\n"
    "                  \"client\": CLIENT}],\n"
    "                \"queue_length\": N, \"node\": \"HOST:PORT\",\n"
    "                \"topology\": \"single\"|\"cluster\"|\"sentinel\"}\n"
    "               (as status --json, but queue lists at most the first\n"
    "               10 waiters, queue_length counts them all)\n"
    "  --counts     also list counts: every string under PATTERN holding\n"
    "               decimal digits (SCAN ... TYPE string in the same small\n"
    "               steps), but Redisson's own keys (redisson_*) and rlock's\n"
    "               registry (rlock:client:*). A semaphore's available\n"
    "               permits and a latch's count look alike in Redis, as any\n"
    "               other counter does: \"NAME: count 3 (a semaphore's\n"
    "               available permits or a latch's count)\"; a permit-\n"
    "               expirable semaphore with permits leased says so:\n"
    "               \"NAME: permit-expirable semaphore, 1 available, 2\n"
    "               leased\". --json: {\"name\": \"NAME\", \"kind\":\n"
    "               \"count\"|\"permit-expirable-semaphore\", \"available\": "
    "N,\n"
    "               \"leased\": N, \"node\": \"HOST:PORT\", \"topology\": "
    "...}\n"
    "  -h, --help   show this help\n"
    "\n"
    "Exit status:\n"
    "  0    success, whether locks were found or not\n"
    "  64   usage error\n"
    "  69   Redis unreachable, refusing or failing (also an ACL user's\n"
    "       PATTERN reaching keys it may not read); what was printed\n"
    "       before stands, no more follows\n"
    "  70   internal error\n"
    "  71   system error (cannot start a thread, out of memory)\n"
    "  74   cannot write the output\n";

#define LIST_SHORTOPTS "+:h"
#define OPT_JSON 256
#define OPT_COUNTS 257

/* Returns CLI_CONTINUE with *pattern (NULL: every lock) and *json set, or
 * an exit status. */
static int parse_list(int argc, char **argv, const char **pattern, int *json,
                      int *counts) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, OPT_JSON},
      {"counts", no_argument, NULL, OPT_COUNTS},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, LIST_SHORTOPTS, longopts, NULL)) != -1) {
    if (c == 'h')
      return cli_help(list_help);
    if (c == OPT_COUNTS)
      *counts = 1;
    else if (c == OPT_JSON)
      *json = 1;
    else
      return cli_bad_option(c, argv, LIST_SHORTOPTS);
  }
  int status =
      cli_options_first("list", "PATTERN", argc - optind, argv + optind);
  if (status != CLI_CONTINUE)
    return status;
  if (argc - optind > 1)
    return cli_usage("list: one PATTERN only (got '%s' after '%s')",
                     argv[optind + 1], argv[optind]);
  *pattern = optind < argc ? argv[optind] : NULL;
  if (*pattern != NULL &&
      (*pattern[0] == '\0' || strlen(*pattern) > RLOCK_MAX_NAME_LEN))
    return cli_usage("list: PATTERN must be 1 to %d bytes", RLOCK_MAX_NAME_LEN);
  return CLI_CONTINUE;
}

typedef struct shown {
  rlock_client *client; /* for the holders' registry records */
  const char *topology;
  int json;
  size_t n;
  size_t ncounts;
} shown;

static void print_json(rlock_client *client, const char *name, const char *kind,
                       const rlock_lock_info *info, const char *topology) {
  const char *mode = rlock_lock_info_mode(info);
  fputs("{\"name\": ", stdout);
  cli_json_string(stdout, name);
  printf(", \"kind\": \"%s\", \"mode\": %s%s%s, \"ttl_ms\": %" PRId64 ", ",
         kind, mode ? "\"" : "", mode ? mode : "null", mode ? "\"" : "",
         rlock_lock_info_ttl_ms(info));
  cli_json_holders(client, info);
  printf(", \"queue_length\": %zu, \"node\": ",
         rlock_lock_info_queue_length(info));
  cli_json_string(stdout, rlock_lock_info_node(info));
  printf(", \"topology\": \"%s\"}\n", topology);
}

/* "jobs: fair, expires in 29.5s, 3 queued" and its holders; a read-write
 * lock says "held for reading" or "for writing". */
static void print_human(rlock_client *client, const char *name,
                        const char *kind, const rlock_lock_info *info,
                        const char *topology) {
  const char *mode = rlock_lock_info_mode(info);
  int64_t ttl = rlock_lock_info_ttl_ms(info);
  size_t queued = rlock_lock_info_queue_length(info);
  char left[32];
  cli_format_ms(left, sizeof left, ttl >= 0 ? ttl : 0);
  cli_put_printable(stdout, name);
  printf(": %s%s, expires in %s", kind,
         mode == NULL                 ? ""
         : strcmp(mode, "write") == 0 ? ", held for writing"
                                      : ", held for reading",
         left);
  if (queued > 0)
    printf(", %zu queued", queued);
  fputc('\n', stdout);
  cli_print_holders(client, info);
  cli_print_queue(client, info);
  cli_print_node(info, topology);
}

static int show(const char *name, const char *kind, const rlock_lock_info *info,
                void *arg) {
  shown *s = arg;
  if (s->json)
    print_json(s->client, name, kind, info, s->topology);
  else
    print_human(s->client, name, kind, info, s->topology);
  s->n++;
  return ferror(stdout) != 0; /* stop: main() reports the write error */
}

/* "NAME: count 3 (...)" or a permit-expirable semaphore's line, or its
 * JSON object. */
static int show_count(const char *name, const char *kind, int64_t available,
                      int64_t leased, const char *node, void *arg) {
  shown *s = arg;
  if (s->json) {
    fputs("{\"name\": ", stdout);
    cli_json_string(stdout, name);
    printf(", \"kind\": \"%s\", \"available\": %" PRId64
           ", \"leased\": %" PRId64 ", \"node\": ",
           kind, available, leased);
    cli_json_string(stdout, node);
    printf(", \"topology\": \"%s\"}\n", s->topology);
  } else {
    cli_put_printable(stdout, name);
    if (leased > 0)
      printf(": permit-expirable semaphore, %" PRId64 " available, %" PRId64
             " leased\n",
             available, leased);
    else
      printf(": count %" PRId64 " (a semaphore's available permits or a "
             "latch's count)\n",
             available);
    if (strcmp(s->topology, "single") != 0) {
      fputs("  node ", stdout);
      cli_put_printable(stdout, node);
      printf(" (%s)\n", s->topology);
    }
  }
  s->ncounts++;
  return ferror(stdout) != 0;
}

int cli_cmd_list(const cli_global *g, int argc, char **argv) {
  const char *pattern = NULL;
  int json = 0, counts = 0;
  int status = parse_list(argc, argv, &pattern, &json, &counts);
  if (status != CLI_CONTINUE)
    return status;
  if (g->nurls > 1)
    return cli_usage("list: one -u URL only (several are for exec's RedLock)");
  rlock_client *client;
  if ((status = cli_client_new(g, g->url, NULL, NULL, &client)) != 0)
    return status;
  shown s = {client, rlock_client_topology(client), json, 0, 0};
  int rc = rlock_client_list_locks(client, pattern, show, &s);
  if (rc == RLOCK_OK && counts && !ferror(stdout))
    rc = rlock_client_list_counts(client, pattern, show_count, &s);
  if (rc != RLOCK_OK)
    status = cli_lib_error(rc);
  else if (!json)
    printf("%zu lock%s\n", s.n, s.n == 1 ? "" : "s");
  if (rc == RLOCK_OK && !json && counts)
    printf("%zu count%s\n", s.ncounts, s.ncounts == 1 ? "" : "s");
  rlock_client_free(client);
  return status;
}
