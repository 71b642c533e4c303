/* SPDX-License-Identifier: BSD-3-Clause */
/* src/cli/cmd_list.c: parse_list for fuzz_cli. */
#include "../../src/cli/cmd_list.c"

#include "parsers.h"

int fuzz_cli_list(int argc, char **argv, const char **pattern, int *json) {
  int counts = 0;
  return parse_list(argc, argv, pattern, json, &counts);
}
