/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: the metrics' sets, histogram buckets and text (base/obs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "obs.h"

static char text[1 << 16];

static const char *render(rlock__obs *o, int openmetrics) {
  size_t len = rlock__obs_text(o, text, sizeof text, openmetrics);
  assert_int_equal(len, strlen(text));
  return text;
}

/* A value is at the upper bound of its bucket or below; the sum keeps
 * microseconds exactly; +Inf takes what is past 300 s. */
static void test_buckets_and_sum(void **state) {
  (void)state;
  rlock__obs o = {0};
  assert_int_equal(rlock__obs_init(&o, 0), RLOCK_OK);
  rlock__mset *m = rlock__obs_mset(&o, RLOCK__MK_FAIR, "ignored");
  assert_ptr_equal(m, &o.kinds[RLOCK__MK_FAIR]);
  const int64_t held[] = {0, 100, 101, 300000000, 300000001};
  for (size_t i = 0; i < sizeof held / sizeof *held; i++) {
    rlock__obs_hold_begin(m);
    rlock__obs_hold_end(m, held[i]);
  }
  rlock__obs_hold_begin(m);
  rlock__obs_hold_end(m, -1); /* lost: out of the gauge, not observed */
  const char *t = render(&o, 0);
  assert_non_null(strstr(
      t, "\nrlock_hold_seconds_bucket{kind=\"fair\",le=\"0.0001\"} 2\n"));
  assert_non_null(strstr(
      t, "\nrlock_hold_seconds_bucket{kind=\"fair\",le=\"0.00025\"} 3\n"));
  assert_non_null(
      strstr(t, "\nrlock_hold_seconds_bucket{kind=\"fair\",le=\"300\"} 4\n"));
  assert_non_null(
      strstr(t, "\nrlock_hold_seconds_bucket{kind=\"fair\",le=\"+Inf\"} 5\n"));
  assert_non_null(
      strstr(t, "\nrlock_hold_seconds_sum{kind=\"fair\"} 600.000202\n"));
  assert_non_null(strstr(t, "\nrlock_hold_seconds_count{kind=\"fair\"} 5\n"));
  assert_non_null(strstr(t, "\nrlock_holds{kind=\"fair\"} 0\n"));
  /* Kinds that saw nothing have no series. */
  assert_null(strstr(t, "kind=\"reentrant\""));
  rlock__obs_destroy(&o);
}

/* Per-name slots: one per (kind, name), up to the bound; label values
 * escaped; the rest counted under their kind and as refused. */
static void test_names(void **state) {
  (void)state;
  rlock__obs o = {0};
  assert_int_equal(rlock__obs_init(&o, 2), RLOCK_OK);
  rlock__mset *a = rlock__obs_mset(&o, RLOCK__MK_REENTRANT, "a\"b\\c\nd");
  assert_ptr_equal(rlock__obs_mset(&o, RLOCK__MK_REENTRANT, "a\"b\\c\nd"), a);
  rlock__mset *w = rlock__obs_mset(&o, RLOCK__MK_WRITE, "a\"b\\c\nd");
  assert_ptr_not_equal(w, a);
  rlock__mset *x = rlock__obs_mset(&o, RLOCK__MK_REENTRANT, "x");
  assert_ptr_equal(x, &o.kinds[RLOCK__MK_REENTRANT]);
  rlock__obs_acquire_end(a, RLOCK_OK, 0, 0, 0);
  rlock__obs_acquire_end(x, RLOCK_ELOCKED, 0, 0, 0);
  rlock__obs_wait_begin(w);
  const char *t = render(&o, 0);
  assert_non_null(strstr(t, "\nrlock_acquisitions_total{kind=\"reentrant\","
                            "name=\"a\\\"b\\\\c\\nd\"} 1\n"));
  assert_non_null(
      strstr(t, "\nrlock_acquire_timeouts_total{kind=\"reentrant\"} 1\n"));
  assert_non_null(strstr(
      t, "\nrlock_waiters{kind=\"write\",name=\"a\\\"b\\\\c\\nd\"} 1\n"));
  assert_non_null(strstr(t, "\nrlock_metric_names_refused_total 1\n"));
  rlock__obs_destroy(&o);
}

/* The length needed comes back whatever the room; what is written is
 * always terminated. OpenMetrics: counter families without _total, and
 * # EOF last. */
static void test_sizes_and_openmetrics(void **state) {
  (void)state;
  rlock__obs o = {0};
  assert_int_equal(rlock__obs_init(&o, 0), RLOCK_OK);
  size_t need = rlock__obs_text(&o, NULL, 0, 0);
  char small[32];
  assert_int_equal(rlock__obs_text(&o, small, sizeof small, 0), need);
  assert_int_equal(strlen(small), sizeof small - 1);
  const char *t = render(&o, 1);
  assert_non_null(strstr(t, "# TYPE rlock_renewals counter\n"));
  assert_non_null(strstr(t, "# TYPE rlock_holds gauge\n"));
  assert_string_equal(t + strlen(t) - 6, "# EOF\n");
  rlock__obs_destroy(&o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_buckets_and_sum),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_sizes_and_openmetrics),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
