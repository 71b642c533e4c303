/* SPDX-License-Identifier: BSD-3-Clause */
/* src/cli/cmd_elect.c: parse_elect for fuzz_cli. */
#include "../../src/cli/cmd_elect.c"

#include "parsers.h"

int fuzz_cli_elect(int argc, char **argv, fuzz_elect *out) {
  elect_args a = {RLOCK_WAIT_FOREVER,    10000, 0, NULL, NULL, NULL,
                  CLI_COMMAND_TIMEOUT_MS};
  int status = parse_elect(argc, argv, &a);
  *out = (fuzz_elect){a.wait_ms, a.kill_after_ms, a.value, a.name, a.command};
  return status;
}
