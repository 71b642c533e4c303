/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * duration.c - fuzz_duration: the input is a duration as typed on the
 * command line ("250ms", "10s", "5m", "1h", "0"), up to its first NUL.
 *
 * cli_parse_duration (src/cli/duration.c) must agree with a plain
 * reference: digits, then exactly one of the units (or "0"s alone), at
 * most RLOCK_MAX_DURATION_MS, counted without overflow. What it accepts
 * must format (cli_format_ms) within a small buffer, and below a second
 * read back the same.
 */
#include "cli.h"
#include "fuzz.h"

/* The reference: -1 when refused, else the milliseconds. */
static int64_t reference(const char *s) {
  const int64_t max = RLOCK_MAX_DURATION_MS;
  const char *p = s;
  int64_t n = 0;
  int big = 0;
  if (*p < '0' || *p > '9')
    return -1;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (n > max)
      big = 1; /* stays big: only digits follow, no unit shrinks it */
    else
      n = n * 10 + (*p - '0');
  }
  int64_t mult = strcmp(p, "ms") == 0           ? 1
                 : strcmp(p, "s") == 0          ? 1000
                 : strcmp(p, "m") == 0          ? 60 * 1000
                 : strcmp(p, "h") == 0          ? 3600 * 1000
                 : *p == '\0' && n == 0 && !big ? 1
                                                : 0;
  if (mult == 0 || big || n > max || n * mult > max)
    return -1;
  return n * mult;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_quiet(); /* cli_duration_arg's usage lines */
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = fuzz_cstr(data, size);
  int64_t ms = -7;
  const char *why = NULL;
  int rc = cli_parse_duration(s, &ms, &why);
  int64_t want = reference(s);
  FUZZ_CHECK(why != NULL && why[0] != '\0');
  if (rc == 0) {
    FUZZ_CHECK(ms == want);
    FUZZ_CHECK(ms >= 0 && ms <= RLOCK_MAX_DURATION_MS);
    char buf[32];
    cli_format_ms(buf, sizeof buf, ms);
    FUZZ_CHECK(strlen(buf) < sizeof buf - 1); /* never truncated */
    if (ms < 1000) {
      int64_t back = -1;
      FUZZ_CHECK(cli_parse_duration(buf, &back, &why) == 0 && back == ms);
    }
  } else {
    FUZZ_CHECK(rc == -1 && want == -1 && ms == -7);
  }
  int64_t arg = -7;
  int st = cli_duration_arg("-w", s, &arg);
  FUZZ_CHECK(st == (rc == 0 ? 0 : EX_USAGE));
  FUZZ_CHECK(rc == 0 ? arg == ms : arg == -7);
  free(s);
  return 0;
}
