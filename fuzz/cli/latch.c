/* SPDX-License-Identifier: BSD-3-Clause */
/* src/cli/cmd_latch.c: parse_latch for fuzz_cli. */
#include "../../src/cli/cmd_latch.c"

#include "parsers.h"

int fuzz_cli_latch(int argc, char **argv, fuzz_latch *out) {
  latch_args a = {NULL, NULL, 0, RLOCK_WAIT_FOREVER};
  int status = parse_latch(argc, argv, &a);
  *out = (fuzz_latch){a.verb, a.name, a.count, a.wait_ms};
  return status;
}
