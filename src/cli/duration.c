/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * duration.c - durations on the command line ("250ms", "10s", "1.5",
 * "5m", "1h", "2d") and in messages.
 *
 * A number without a unit is seconds, as flock -w and timeout(1) read it;
 * a fraction is allowed with any unit ("1.5s", "0.5h").
 */
#include <string.h>

#include "cli.h"

static const struct {
  const char *suffix;
  int64_t ms;
} units[] = {{"ms", 1},
             {"s", 1000},
             {"m", 60 * 1000},
             {"h", 3600 * 1000},
             {"d", 24 * 3600 * 1000}};

/* The multiplier for a unit suffix ("" is seconds), or 0 if it is not
 * one. */
static int64_t unit_ms(const char *suffix) {
  if (*suffix == '\0')
    return 1000;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (strcmp(suffix, units[i].suffix) == 0)
      return units[i].ms;
  return 0;
}

/* Digits at *p into *n, saturating just above `cap`; *count: how many. */
static const char *digits(const char *p, int64_t cap, int64_t *n, int *count) {
  *n = 0;
  *count = 0;
  for (; *p >= '0' && *p <= '9'; p++, (*count)++)
    if (*n <= cap)
      *n = *n * 10 + (*p - '0');
  return p;
}

/* The fraction 0.<n digits at f> of a unit of `mult` ms, in ms rounded
 * up, exactly: the digits times mult by long multiplication from the
 * last one (each step below 10 * mult, far from overflowing), whose
 * carry out is the whole ms and whose digits left the fraction of one. */
static int64_t fraction_ms(const char *f, int n, int64_t mult) {
  int64_t carry = 0;
  int below = 0; /* a fraction of a ms is left */
  for (int i = n - 1; i >= 0; i--) {
    int64_t t = (f[i] - '0') * mult + carry;
    below |= t % 10 != 0;
    carry = t / 10;
  }
  return carry + below;
}

int cli_parse_duration(const char *s, int64_t *ms, const char **why) {
  const int64_t max = RLOCK_MAX_DURATION_MS;
  static const char *bad = "expected a number, in seconds or with a unit "
                           "(ms, s, m, h, d), e.g. 1.5, 250ms or 10s";
  int64_t whole;
  int nwhole, nfrac = 0;
  *why = bad;
  if (*s == '-') {
    *why = "durations cannot be negative";
    return -1;
  }
  const char *p = digits(s, max, &whole, &nwhole);
  const char *fraction = p + 1;
  if (*p == '.')
    for (p++; *p >= '0' && *p <= '9'; p++)
      nfrac++;
  if (nwhole + nfrac == 0)
    return -1;
  int64_t mult = unit_ms(p);
  if (mult == 0)
    return -1; /* the unit is checked first: "1y" is not "too long" */
  int64_t extra = fraction_ms(fraction, nfrac, mult);
  if (whole > max / mult || whole * mult > max - extra) {
    *why = "too long: at most 365 days (365d, 8760h)";
    return -1;
  }
  *ms = whole * mult + extra;
  return 0;
}

int cli_duration_arg(const char *opt, const char *s, int64_t *ms) {
  const char *why;
  if (cli_parse_duration(s, ms, &why) != 0)
    return cli_usage("invalid duration '%s' for %s: %s", s, opt, why);
  return 0;
}

int cli_interval_arg(const char *cmd, const char *s, int64_t min_ms,
                     int64_t *ms) {
  if (cli_duration_arg("--interval", s, ms) != 0)
    return EX_USAGE;
  if (*ms < min_ms)
    return cli_usage("%s: --interval must be at least %lldms", cmd,
                     (long long)min_ms);
  return CLI_CONTINUE;
}

void cli_format_ms(char *buf, size_t size, int64_t ms) {
  if (ms < 1000)
    snprintf(buf, size, "%lldms", (long long)ms);
  else if (ms < 60 * 1000)
    snprintf(buf, size, "%lld.%llds", (long long)(ms / 1000),
             (long long)(ms % 1000 / 100));
  else if (ms < 3600 * 1000)
    snprintf(buf, size, "%lldm%02llds", (long long)(ms / 60000),
             (long long)(ms % 60000 / 1000));
  else
    snprintf(buf, size, "%lldh%02lldm", (long long)(ms / 3600000),
             (long long)(ms % 3600000 / 60000));
}
