/* SPDX-License-Identifier: BSD-3-Clause */
/* src/cli/cmd_status.c: parse_status for fuzz_cli. */
#include "../../src/cli/cmd_status.c"

#include "parsers.h"

int fuzz_cli_status(int argc, char **argv, int *first, int *json) {
  return parse_status(argc, argv, first, json);
}
