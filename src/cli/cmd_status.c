/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_status.c - `rlock status [--json] NAME`: who holds a lock, and for
 * how long, from one atomic snapshot (rlock_lock_inspect); and the latest
 * fencing token issued for NAME, if any (rlock_lock_token, one more read).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char status_help[] =
    "Usage: rlock [-u URL] [OPTION]... status [--json] NAME\n"
    "\n"
    "Show whether the lock NAME is held, by whom (owner field\n"
    "<client id>:<thread id> and hold count) and when it expires, and\n"
    "for a fair lock the waiters queued for it, in order. Once a fenced\n"
    "lock (exec --fenced, Redisson's RFencedLock) has been taken on NAME,\n"
    "also the latest fencing token issued for it (while NAME is held by a\n"
    "fenced holder, that holder's token).\n"
    "\n"
    "Options:\n"
    "  --json       print one JSON object on one line:\n"
    "               {\"name\": \"NAME\", \"locked\": true|false, "
    "\"ttl_ms\": N,\n"
    "                \"mode\": \"read\"|\"write\"|null,\n"
    "                \"holders\": [{\"owner\": \"OWNER\", \"count\": N}],\n"
    "                \"queue\": [{\"owner\": \"OWNER\", \"deadline_ms\": N}],\n"
    "                \"node\": \"HOST:PORT\", \"topology\": "
    "\"single\"|\"cluster\"|\n"
    "                \"sentinel\", \"token\": N}\n"
    "               (ttl_ms is -2 when the lock is free; queue lists a fair\n"
    "               lock's waiters in order, each with the ms left before\n"
    "               its deadline; mode is a read-write lock's, whose\n"
    "               writer's owner ends in \":write\"; node is the server\n"
    "               that answered: in a cluster the master of the lock's\n"
    "               slot, behind Sentinel the master; token, the latest\n"
    "               fencing token, only once one has been issued)\n"
    "  -h, --help   show this help\n"
    "\n"
    "Exit status:\n"
    "  0    success, whether the lock is held or free\n"
    "  64   usage error\n"
    "  65   NAME holds something that is not a lock (or its token key\n"
    "       something that is not a counter), or NAME is invalid\n"
    "  69   Redis unreachable, refusing or failing\n";

/* `token` is the latest fencing token, 0 when none was ever issued. */
static void print_json(const char *name, const rlock_lock_info *info,
                       const char *topology, int64_t token) {
  size_t n = rlock_lock_info_holder_count(info);
  fputs("{\"name\": ", stdout);
  cli_json_string(stdout, name);
  const char *mode = rlock_lock_info_mode(info);
  printf(", \"locked\": %s, \"ttl_ms\": %" PRId64 ", \"mode\": %s%s%s, "
         "\"holders\": [",
         rlock_lock_info_locked(info) ? "true" : "false",
         rlock_lock_info_ttl_ms(info), mode ? "\"" : "", mode ? mode : "null",
         mode ? "\"" : "");
  for (size_t i = 0; i < n; i++) {
    fputs(i > 0 ? ", {\"owner\": " : "{\"owner\": ", stdout);
    cli_json_string(stdout, rlock_lock_info_holder_owner(info, i));
    printf(", \"count\": %" PRId64 "}", rlock_lock_info_holder_holds(info, i));
  }
  fputs("], \"queue\": [", stdout);
  for (size_t i = 0; i < rlock_lock_info_queue_count(info); i++) {
    fputs(i > 0 ? ", {\"owner\": " : "{\"owner\": ", stdout);
    cli_json_string(stdout, rlock_lock_info_queue_owner(info, i));
    printf(", \"deadline_ms\": %" PRId64 "}",
           rlock_lock_info_queue_deadline_ms(info, i));
  }
  fputs("], \"node\": ", stdout);
  cli_json_string(stdout, rlock_lock_info_node(info));
  printf(", \"topology\": \"%s\"", topology);
  if (token > 0)
    printf(", \"token\": %" PRId64, token);
  fputs("}\n", stdout);
}

/* "  queued 1: OWNER (deadline in 4m59s)" for each fair-lock waiter. */
static void print_queue(const rlock_lock_info *info) {
  for (size_t i = 0; i < rlock_lock_info_queue_count(info); i++) {
    char left[32];
    cli_format_ms(left, sizeof left,
                  rlock_lock_info_queue_deadline_ms(info, i));
    printf("  queued %zu: ", i + 1);
    cli_put_printable(stdout, rlock_lock_info_queue_owner(info, i));
    printf(" (deadline in %s)\n", left);
  }
}

/* "  holder OWNER (2 holds)"; for a read-write lock "  reader OWNER (...)"
 * or "  writer OWNER (...)" (the owner without its ":write" suffix). */
static void print_holder(const rlock_lock_info *info, size_t i, int rw) {
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
}

/* "  node 10.0.0.7:7002 (cluster)": where the lock lives, when the URL
 * alone does not say (a cluster, Sentinel). */
static void print_node(const rlock_lock_info *info, const char *topology) {
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
static void print_human(const char *name, const rlock_lock_info *info,
                        const char *topology, int64_t token) {
  int64_t ttl = rlock_lock_info_ttl_ms(info);
  cli_put_printable(stdout, name);
  if (!rlock_lock_info_locked(info)) {
    fputs(": free\n", stdout);
    print_token(token);
    print_queue(info);
    print_node(info, topology);
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
  for (size_t i = 0; i < rlock_lock_info_holder_count(info); i++)
    print_holder(info, i, mode != NULL);
  print_token(token);
  print_queue(info);
  print_node(info, topology);
}

#define STATUS_SHORTOPTS "+:h"
#define OPT_JSON 256

/* Returns CLI_CONTINUE with *name and *json set, or an exit status. */
static int parse_status(int argc, char **argv, const char **name, int *json) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, OPT_JSON},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, STATUS_SHORTOPTS, longopts, NULL)) !=
         -1) {
    if (c == 'h')
      return cli_help(status_help);
    if (c != OPT_JSON)
      return cli_bad_option(c, argv, STATUS_SHORTOPTS);
    *json = 1;
  }
  return cli_one_name("status", argc - optind, argv + optind, name);
}

static int show(rlock_client *client, rlock_lock *lock, const char *name,
                int json) {
  rlock_lock_info *info;
  int64_t token;
  int rc = rlock_lock_inspect(&info, lock);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc);
  /* A second read, after the snapshot: a token issued in between shows
   * too. 0 when none ever was (the counter starts at 1). */
  if ((rc = rlock_lock_token(&token, lock)) != RLOCK_OK) {
    rlock_lock_info_free(info);
    return cli_lib_error(rc); /* not a counter: EX_DATAERR */
  }
  const char *topology = rlock_client_topology(client);
  if (json)
    print_json(name, info, topology, token);
  else
    print_human(name, info, topology, token);
  rlock_lock_info_free(info);
  return 0;
}

int cli_cmd_status(const cli_global *g, int argc, char **argv) {
  const char *name = NULL;
  int json = 0;
  int status = parse_status(argc, argv, &name, &json);
  if (status != CLI_CONTINUE)
    return status;
  if (g->nurls > 1)
    return cli_usage(
        "status: one -u URL only (several are for exec's RedLock)");
  rlock_client *client;
  rlock_lock *lock;
  status = cli_open(g, name, CLI_FAIR, NULL, NULL, &client, &lock);
  if (status == 0)
    status = show(client, lock, name, json);
  cli_close(client, lock);
  return status;
}
