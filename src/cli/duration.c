/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * duration.c - durations on the command line ("250ms", "10s", "5m", "1h")
 * and in messages.
 *
 * A unit is required so that "-w 5" cannot silently mean 5 ms to one
 * reader and 5 s to another; only "0" is unambiguous without one.
 */
#include <string.h>

#include "cli.h"

static const struct {
  const char *suffix;
  int64_t ms;
} units[] = {{"ms", 1}, {"s", 1000}, {"m", 60 * 1000}, {"h", 3600 * 1000}};

/* The multiplier for a unit suffix, or 0 if it is not one. */
static int64_t unit_ms(const char *suffix) {
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (strcmp(suffix, units[i].suffix) == 0)
      return units[i].ms;
  return 0;
}

int cli_parse_duration(const char *s, int64_t *ms, const char **why) {
  const int64_t max = RLOCK_MAX_DURATION_MS;
  const char *p = s;
  int64_t n = 0;
  *why = "expected a number with a unit (ms, s, m or h), e.g. 250ms or 10s";
  if (*p == '-') {
    *why = "durations cannot be negative";
    return -1;
  }
  if (*p < '0' || *p > '9')
    return -1;
  for (; *p >= '0' && *p <= '9'; p++) {
    n = n * 10 + (*p - '0');
    if (n > max) /* also keeps n * 10 far from overflowing */
      goto too_long;
  }
  int64_t mult = *p == '\0' && n == 0 ? 1 : unit_ms(p);
  if (mult == 0)
    return -1;
  if (n > max / mult)
    goto too_long;
  *ms = n * mult;
  return 0;
too_long:
  *why = "too long: at most 365 days (8760h)";
  return -1;
}

int cli_duration_arg(const char *opt, const char *s, int64_t *ms) {
  const char *why;
  if (cli_parse_duration(s, ms, &why) != 0)
    return cli_usage("invalid duration '%s' for %s: %s", s, opt, why);
  return 0;
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
