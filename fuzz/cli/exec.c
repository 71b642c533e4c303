/* SPDX-License-Identifier: BSD-3-Clause */
/* src/cli/cmd_exec.c: parse_exec for fuzz_cli, with exec_args filled in
 * as cli_cmd_exec() starts it. */
#include "../../src/cli/cmd_exec.c"

#include "parsers.h"

int fuzz_cli_exec(int argc, char **argv, fuzz_exec *out) {
  exec_args a = EXEC_ARGS_INIT;
  int status = parse_exec(argc, argv, &a);
  *out = (fuzz_exec){a.wait_ms, a.lease_ms, a.kill_after_ms,  a.kind,   a.names,
                     a.nnames,  a.command,  a.on_lost_ignore, a.permits};
  if (status == CLI_CONTINUE && a.name != a.names[0])
    abort(); /* the first name is names[0] */
  return status;
}
