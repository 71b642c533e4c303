/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * duration.c - fuzz_duration: the input is a duration as typed on the
 * command line ("1.5", "250ms", "10s", "5m", "1h", "2d", "0.5h"), up to
 * its first NUL.
 *
 * cli_parse_duration (src/cli/duration.c) must agree with a plain
 * reference: digits with an optional fraction (at least one digit), then
 * nothing (seconds) or exactly one of the units, at most
 * RLOCK_MAX_DURATION_MS, a fraction of a millisecond rounded up, counted
 * without overflow (here in 128 bits, exactly for up to 29 fraction
 * digits; beyond, the digits past the 29th can only add the one ms of the
 * rounding up, so either value passes). What it accepts must format
 * (cli_format_ms) within a small buffer, and below a second read back the
 * same.
 */
#include "cli.h"
#include "fuzz.h"

/* Set by reference(): the digits past the 29th were not all 0. */
static int ref_inexact;

/* The reference: -1 when refused, else the milliseconds. */
static int64_t reference(const char *s) {
  const int64_t max = RLOCK_MAX_DURATION_MS;
  const char *p = s;
  __int128 n = 0, f = 0, pow = 1;
  int big = 0, nd = 0, rest = 0;
  for (; *p >= '0' && *p <= '9'; p++, nd++) {
    if (n > max)
      big = 1; /* stays big: only digits follow */
    else
      n = n * 10 + (*p - '0');
  }
  if (*p == '.')
    for (p++; *p >= '0' && *p <= '9'; p++, nd++) {
      if (pow < (__int128)10000000000000000 * 10000000000000)
        f = f * 10 + (*p - '0'), pow *= 10;
      else if (*p != '0')
        rest = 1;
    }
  if (nd == 0)
    return -1;
  int64_t mult = *p == '\0'             ? 1000
                 : strcmp(p, "ms") == 0 ? 1
                 : strcmp(p, "s") == 0  ? 1000
                 : strcmp(p, "m") == 0  ? 60 * 1000
                 : strcmp(p, "h") == 0  ? 3600 * 1000
                 : strcmp(p, "d") == 0  ? 24 * 3600 * 1000
                                        : 0;
  if (mult == 0 || big)
    return -1;
  __int128 part = f * mult; /* below 10^29 * 8.64e7 < 2^127 */
  __int128 total = n * mult + part / pow + (part % pow != 0 || rest);
  ref_inexact = rest;
  return total > max ? -1 : (int64_t)total;
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
  ref_inexact = 0;
  int64_t want = reference(s);
  FUZZ_CHECK(why != NULL && why[0] != '\0');
  if (rc == 0) {
    FUZZ_CHECK(ms == want || (ref_inexact && want >= 0 && ms == want + 1));
    FUZZ_CHECK(ms >= 0 && ms <= RLOCK_MAX_DURATION_MS);
    char buf[32];
    cli_format_ms(buf, sizeof buf, ms);
    FUZZ_CHECK(strlen(buf) < sizeof buf - 1); /* never truncated */
    if (ms < 1000) {
      int64_t back = -1;
      FUZZ_CHECK(cli_parse_duration(buf, &back, &why) == 0 && back == ms);
    }
  } else {
    FUZZ_CHECK(rc == -1 && ms == -7 &&
               (want == -1 || (ref_inexact && want == RLOCK_MAX_DURATION_MS)));
  }
  int64_t arg = -7;
  int st = cli_duration_arg("-w", s, &arg);
  FUZZ_CHECK(st == (rc == 0 ? 0 : EX_USAGE));
  FUZZ_CHECK(rc == 0 ? arg == ms : arg == -7);
  free(s);
  return 0;
}
