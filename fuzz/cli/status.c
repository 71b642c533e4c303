/* SPDX-License-Identifier: BSD-3-Clause */
/* src/cli/cmd_status.c: parse_status for fuzz_cli. */
#include "../../src/cli/cmd_status.c"

#include "parsers.h"

int fuzz_cli_status(int argc, char **argv, int *first, int *json) {
  status_args a = {0, 0, 0, 0, 1000};
  int rc = parse_status(argc, argv, &a);
  *first = a.first;
  *json = a.json;
  return rc;
}
