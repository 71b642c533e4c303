/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cli.c - fuzz_cli: the input is the rlock CLI's argument vector after
 * "rlock", its words separated by NULs ("exec\0-w\0010s\0job\0--\0true").
 *
 * It goes through what main() does before anything touches the network:
 * the global options (main.c), the command's own options and words
 * (cmd_exec.c, cmd_status.c, cmd_unlock.c, cmd_list.c, cmd_latch.c,
 * cmd_elect.c, cmd_leader.c, reached through
 * fuzz/cli/),
 * then what the commands do first with them without I/O: every -u URL and
 * --watchdog given to a configuration (as cli_client_new does) and every
 * NAME checked as a lock constructor checks it. Nothing connects, signals
 * are not touched, no COMMAND is looked up or run. What a parser accepts
 * must be consistent; what it refuses must be a usage error (64).
 */
#include <getopt.h>

#include "cli/parsers.h"
#include "fuzz.h"
#include "names.h"

#define MAX_WORDS 64

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_quiet(); /* help and usage text */
  return 0;
}

/* What cli_client_new() does with the global options before connecting. */
static void configure(const cli_global *g) {
  for (int i = 0; i < g->nurls; i++) {
    rlock_config *cfg;
    FUZZ_CHECK(rlock_config_new(&cfg) == RLOCK_OK);
    int rc = rlock_config_set_url(cfg, g->urls[i]);
    FUZZ_CHECK(rc == RLOCK_OK || rc == RLOCK_EINVAL);
    if (g->watchdog_ms != 0) {
      rc = rlock_config_set_watchdog_timeout_ms(cfg, g->watchdog_ms);
      FUZZ_CHECK(rc == RLOCK_OK || rc == RLOCK_EINVAL);
    }
    if (g->retry_set) /* a parsed duration is always in range */
      FUZZ_CHECK(rlock_config_set_unreachable_retry_ms(cfg, g->retry_ms) ==
                 RLOCK_OK);
    rlock_config_free(cfg);
  }
}

static void check_name(const char *name) {
  FUZZ_CHECK(name != NULL);
  int rc = rlock__name_check(name, "lock name");
  FUZZ_CHECK(rc == RLOCK_OK || rc == RLOCK_EINVAL);
}

/* Parsed `exec` words: argv[from..argc) hold NAME... -- COMMAND... */
static void check_exec(const fuzz_exec *a, char **argv, int argc) {
  FUZZ_CHECK(a->wait_ms == RLOCK_WAIT_FOREVER ||
             (a->wait_ms >= 0 && a->wait_ms <= RLOCK_MAX_DURATION_MS));
  FUZZ_CHECK(a->lease_ms == RLOCK_LEASE_WATCHDOG ||
             (a->lease_ms >= 1 && a->lease_ms <= RLOCK_MAX_DURATION_MS));
  FUZZ_CHECK(a->kill_after_ms >= 0 &&
             a->kill_after_ms <= RLOCK_MAX_DURATION_MS);
  FUZZ_CHECK(a->kind >= CLI_LOCK && a->kind <= CLI_SPIN);
  FUZZ_CHECK(a->on_lost_ignore == 0 || a->on_lost_ignore == 1);
  FUZZ_CHECK(a->nnames >= 1);
  FUZZ_CHECK(a->kind != CLI_FENCED || a->nnames == 1);
  FUZZ_CHECK(a->permits >= 0 && a->permits <= RLOCK_MAX_PERMITS);
  FUZZ_CHECK(a->permits == 0 || (a->kind == CLI_LOCK && a->nnames == 1));
  FUZZ_CHECK(a->names > argv && a->names + a->nnames < argv + argc);
  FUZZ_CHECK(strcmp(a->names[a->nnames], "--") == 0);
  FUZZ_CHECK(a->command == a->names + a->nnames + 1);
  FUZZ_CHECK(a->command < argv + argc && a->command[0] != NULL);
  for (int i = 0; i < a->nnames; i++) {
    FUZZ_CHECK(strcmp(a->names[i], "--") != 0);
    FUZZ_CHECK(i == 0 || a->names[i][0] != '-');
    check_name(a->names[i]);
  }
}

/* Parsed `latch` words: a verb, a NAME, set's COUNT, wait's -w. */
static void check_latch(const fuzz_latch *a) {
  int set = strcmp(a->verb, "set") == 0;
  FUZZ_CHECK(set || strcmp(a->verb, "down") == 0 ||
             strcmp(a->verb, "wait") == 0);
  FUZZ_CHECK(set ? a->count >= 1 : a->count == 0);
  FUZZ_CHECK(a->wait_ms == RLOCK_WAIT_FOREVER ||
             (strcmp(a->verb, "wait") == 0 && a->wait_ms >= 0 &&
              a->wait_ms <= RLOCK_MAX_DURATION_MS));
  check_name(a->name);
}

/* `elect` and `leader`: what their parsers accepted, or -1 for another
 * command (*st is then untouched). */
static int election_command(int argc, char **argv, int *st) {
  if (strcmp(argv[0], "elect") == 0) {
    fuzz_elect a;
    if ((*st = fuzz_cli_elect(argc, argv, &a)) != CLI_CONTINUE)
      return 0;
    FUZZ_CHECK(a.wait_ms == RLOCK_WAIT_FOREVER ||
               (a.wait_ms >= 0 && a.wait_ms <= RLOCK_MAX_DURATION_MS));
    FUZZ_CHECK(a.kill_after_ms >= 0 &&
               a.kill_after_ms <= RLOCK_MAX_DURATION_MS);
    FUZZ_CHECK(a.value == NULL || (a.value[0] != '\0' &&
                                   strlen(a.value) <= RLOCK_MAX_LEADER_VALUE));
    FUZZ_CHECK(a.command > argv && a.command < argv + argc &&
               a.command[0] != NULL && strcmp(a.command[-1], "--") == 0);
    check_name(a.name);
    return 0;
  }
  if (strcmp(argv[0], "leader") == 0) {
    fuzz_leader a;
    if ((*st = fuzz_cli_leader(argc, argv, &a)) != CLI_CONTINUE)
      return 0;
    FUZZ_CHECK(a.json == 0 || a.json == 1);
    FUZZ_CHECK(a.watch == 0 || a.watch == 1);
    FUZZ_CHECK(a.interval_ms >= 10 && a.interval_ms <= RLOCK_MAX_DURATION_MS);
    check_name(a.name);
    return 0;
  }
  return -1;
}

/* dispatch() in main.c, up to where a command would connect. */
static void command(const cli_global *g, int argc, char **argv) {
  if (argc == 0)
    return; /* "missing command" */
  const char *name = NULL;
  int json = -1, st;
  if (strcmp(argv[0], "exec") == 0) {
    fuzz_exec a;
    st = fuzz_cli_exec(argc, argv, &a);
    if (st == CLI_CONTINUE)
      check_exec(&a, argv, argc);
  } else if (strcmp(argv[0], "status") == 0) {
    int first = -1;
    json = 0;
    st = fuzz_cli_status(argc, argv, &first, &json);
    if (st == CLI_CONTINUE) {
      FUZZ_CHECK(json == 0 || json == 1);
      FUZZ_CHECK(first >= 1 && first < argc);
      for (int i = first; i < argc; i++) {
        FUZZ_CHECK(i == first || argv[i][0] != '-');
        check_name(argv[i]);
      }
    }
  } else if (strcmp(argv[0], "list") == 0) {
    json = 0;
    st = fuzz_cli_list(argc, argv, &name, &json);
    if (st == CLI_CONTINUE) {
      FUZZ_CHECK(json == 0 || json == 1);
      FUZZ_CHECK(name == NULL ||
                 (name[0] != '\0' && strlen(name) <= RLOCK_MAX_NAME_LEN));
    }
  } else if (strcmp(argv[0], "unlock") == 0) {
    st = fuzz_cli_unlock(argc, argv, &name);
    if (st == CLI_CONTINUE)
      check_name(name);
  } else if (strcmp(argv[0], "latch") == 0) {
    fuzz_latch a;
    st = fuzz_cli_latch(argc, argv, &a);
    if (st == CLI_CONTINUE)
      check_latch(&a);
  } else if (election_command(argc, argv, &st) == 0) {
    /* checked there */
  } else {
    return; /* "unknown command" */
  }
  FUZZ_CHECK(st == CLI_CONTINUE || st == 0 || st == EX_USAGE);
  if (st == CLI_CONTINUE)
    configure(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* Each word in its own allocation, so that reading past one is seen. */
  char *argv[MAX_WORDS + 2];
  int argc = 0;
  argv[argc++] = fuzz_cstr((const uint8_t *)"rlock", 5);
  for (size_t at = 0; at < size && argc <= MAX_WORDS;) {
    const uint8_t *nul = memchr(data + at, '\0', size - at);
    size_t len = nul ? (size_t)(nul - (data + at)) : size - at;
    argv[argc++] = fuzz_cstr(data + at, len);
    at += len + 1;
  }
  argv[argc] = NULL;
  char *words[MAX_WORDS + 2]; /* getopt may reorder argv; free these */
  memcpy(words, argv, (size_t)(argc + 1) * sizeof *argv);

  cli_global g = {.url = NULL};
  optind = 0; /* a fresh getopt, as in a new process */
  int st = fuzz_cli_global(argc, argv, &g);
  FUZZ_CHECK(st == CLI_CONTINUE || st == 0 || st == EX_USAGE);
  if (st == CLI_CONTINUE) {
    FUZZ_CHECK(optind >= 1 && optind <= argc);
    FUZZ_CHECK(g.nurls >= 0 && g.nurls <= RLOCK_MAX_REDLOCK_MEMBERS);
    FUZZ_CHECK(g.nurls == 0 ? g.url == NULL : g.url == g.urls[0]);
    FUZZ_CHECK(g.watchdog_ms >= 0 && g.watchdog_ms <= RLOCK_MAX_DURATION_MS);
    command(&g, argc - optind, argv + optind);
  }
  fflush(stdout);
  for (int i = 0; i < argc; i++)
    free(words[i]);
  return 0;
}
