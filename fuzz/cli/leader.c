/* SPDX-License-Identifier: BSD-3-Clause */
/* src/cli/cmd_leader.c: parse_leader for fuzz_cli. */
#include "../../src/cli/cmd_leader.c"

#include "parsers.h"

int fuzz_cli_leader(int argc, char **argv, fuzz_leader *out) {
  leader_args a = {0, 0, 1000, NULL};
  int status = parse_leader(argc, argv, &a);
  *out = (fuzz_leader){a.json, a.watch, a.interval_ms, a.name};
  return status;
}
