/* SPDX-License-Identifier: BSD-3-Clause */
/* src/cli/cmd_unlock.c: parse_unlock for fuzz_cli. */
#include "../../src/cli/cmd_unlock.c"

#include "parsers.h"

int fuzz_cli_unlock(int argc, char **argv, const char **name) {
  return parse_unlock(argc, argv, name);
}
