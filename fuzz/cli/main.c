/* SPDX-License-Identifier: BSD-3-Clause */
/* src/cli/main.c with its main() renamed: parse_global for fuzz_cli. */
#define main rlock_cli_main
#include "../../src/cli/main.c"
#undef main

#include "parsers.h"

int fuzz_cli_global(int argc, char **argv, cli_global *g) {
  return parse_global(argc, argv, g);
}
