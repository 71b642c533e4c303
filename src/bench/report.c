/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * report.c - print results as "key: value" lines or as one JSON object.
 *
 * Keys are fixed identifiers chosen by the workloads (no escaping needed);
 * the workload name is one of the known workloads' names.
 */
#include <math.h>
#include <stdio.h>

#include "bench.h"

static void key(bench_report *r, const char *k) {
  if (r->json)
    printf("%s\"%s\":", r->fields++ ? "," : "", k);
  else
    printf("%-24s ", k);
}

static void end_field(const bench_report *r) {
  if (!r->json)
    putchar('\n');
}

void bench_report_begin(bench_report *r, int json, const char *workload) {
  r->json = json;
  r->fields = 0;
  if (json)
    putchar('{');
  key(r, "workload");
  printf(json ? "\"%s\"" : "%s", workload);
  end_field(r);
}

void bench_report_num(bench_report *r, const char *k, double v, int decimals) {
  key(r, k);
  if (isfinite(v))
    printf("%.*f", decimals, v);
  else
    fputs(r->json ? "null" : "n/a", stdout);
  end_field(r);
}

void bench_report_nums(bench_report *r, const char *k, const double *v,
                       size_t n, int decimals) {
  key(r, k);
  if (r->json)
    putchar('[');
  for (size_t i = 0; i < n; i++) {
    if (i > 0)
      fputs(r->json ? "," : " ", stdout);
    if (isfinite(v[i]))
      printf("%.*f", decimals, v[i]);
    else
      fputs(r->json ? "null" : "n/a", stdout);
  }
  if (r->json)
    putchar(']');
  end_field(r);
}

void bench_report_int(bench_report *r, const char *k, long long v) {
  key(r, k);
  printf("%lld", v);
  end_field(r);
}

void bench_report_end(bench_report *r) {
  if (r->json)
    puts("}");
  fflush(stdout);
}
