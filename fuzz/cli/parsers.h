/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * parsers.h - the rlock CLI's option parsers, reached by fuzz_cli.
 *
 * They are static in src/cli (main.c, cmd_exec.c, cmd_status.c,
 * cmd_unlock.c, cmd_list.c, cmd_latch.c, cmd_elect.c, cmd_leader.c); each
 * file here #includes one of those
 * sources whole and hands its parser out, so the CLI itself stays as it is.
 * Each returns CLI_CONTINUE (parsed: go on and do the work) or the exit status
 * the CLI would exit with, after printing the same help or usage text.
 */
#ifndef RLOCK_FUZZ_CLI_PARSERS_H
#define RLOCK_FUZZ_CLI_PARSERS_H

#include "cli.h"

/* main.c's global options; optind is left at the command. */
int fuzz_cli_global(int argc, char **argv, cli_global *g);

/* What `exec`'s options and words said. */
typedef struct fuzz_exec {
  int64_t wait_ms, lease_ms, kill_after_ms;
  cli_kind kind;
  char **names;
  int nnames;
  char **command;
  int on_lost_ignore;
  int64_t permits; /* --permits N, or 0 */
} fuzz_exec;

/* `exec` (argv[0] is "exec"), as cli_cmd_exec parses it. */
int fuzz_cli_exec(int argc, char **argv, fuzz_exec *out);

/* `status`: the NAMEs argv[*first..argc) and *json set on CLI_CONTINUE. */
int fuzz_cli_status(int argc, char **argv, int *first, int *json);

/* `list`: *pattern (NULL: none given) and *json set on CLI_CONTINUE. */
int fuzz_cli_list(int argc, char **argv, const char **pattern, int *json);

/* `unlock`: *name set on CLI_CONTINUE. */
int fuzz_cli_unlock(int argc, char **argv, const char **name);

/* What `latch`'s options and words said. */
typedef struct fuzz_latch {
  const char *verb, *name;
  int64_t count, wait_ms;
} fuzz_latch;

/* `latch` (argv[0] is "latch"). */
int fuzz_cli_latch(int argc, char **argv, fuzz_latch *out);

/* What `elect`'s options and words said. */
typedef struct fuzz_elect {
  int64_t wait_ms, kill_after_ms;
  const char *value, *name;
  char **command;
} fuzz_elect;

/* `elect` (argv[0] is "elect"). */
int fuzz_cli_elect(int argc, char **argv, fuzz_elect *out);

/* What `leader`'s options and words said. */
typedef struct fuzz_leader {
  int json, watch;
  int64_t interval_ms;
  const char *name;
} fuzz_leader;

/* `leader` (argv[0] is "leader"). */
int fuzz_cli_leader(int argc, char **argv, fuzz_leader *out);

#endif /* RLOCK_FUZZ_CLI_PARSERS_H */
