/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_tls.c - what TLS costs: the same server reached over plain TCP
 * (the first -u) and over TLS (the second, rediss://), in one run.
 *
 *   pairs    uncontended lock+unlock pairs, one client per transport,
 *            interleaved step by step (one TCP pair, one TLS pair) so
 *            that machine noise hits both alike;
 *   connect  a fresh client's first PING: name lookup, connect, (TLS
 *            handshake,) PING; the client is freed after each, so every
 *            sample opens a connection. Interleaved the same way.
 */
#include <stdio.h>

#include "bench.h"

#define CONNECTS 200 /* fresh clients per transport */

static int pair(rlock_lock *l, bench_samples *out) {
  int64_t t0 = bench_now_ns();
  int rc = rlock_lock_acquire(l);
  if (rc == RLOCK_OK)
    rc = rlock_lock_release(l);
  if (rc != RLOCK_OK)
    return bench_fail_rc("lock+unlock", rc), -1;
  bench_samples_push(out, bench_now_ns() - t0);
  return 0;
}

/* One fresh client's first PING: opens its connection. */
static int connect_once(const char *url, bench_samples *out) {
  rlock_client *c = bench_client_new(url);
  if (c == NULL)
    return -1;
  int64_t t0 = bench_now_ns();
  int rc = rlock_client_ping(c, NULL);
  int64_t dt = bench_now_ns() - t0;
  rlock_client_free(c);
  if (rc != RLOCK_OK)
    return bench_fail_rc("first PING", rc), -1;
  bench_samples_push(out, dt);
  return 0;
}

static int run_pairs(const bench_args *a, bench_samples *tcp,
                     bench_samples *tls) {
  rlock_client *c[2] = {bench_client_new(a->urls[0]),
                        bench_client_new(a->urls[1])};
  rlock_lock *l[2] = {NULL, NULL};
  int rc = c[0] && c[1] ? 0 : -1;
  for (int i = 0; i < 2 && rc == 0; i++)
    if (rlock_lock_new(&l[i], c[i], i ? "bench:tls:s" : "bench:tls:p") !=
        RLOCK_OK)
      rc = bench_fail_rc("rlock_lock_new", rlock_error_last()->code);
  bench_samples scratch = {NULL, 0, 0}; /* warm-up: discarded */
  for (int i = 0; i < 100 && rc == 0; i++)
    rc = pair(l[0], &scratch) || pair(l[1], &scratch) ? -1 : 0;
  for (long i = 0; i < a->ops && rc == 0; i++)
    rc = (i % 2 ? pair(l[1], tls) || pair(l[0], tcp)
                : pair(l[0], tcp) || pair(l[1], tls))
             ? -1
             : 0;
  for (int i = 0; i < 2; i++) {
    rlock_lock_free(l[i]);
    rlock_client_free(c[i]);
  }
  return rc;
}

int bench_tls(const bench_args *a) {
  bench_samples s[4];
  for (int i = 0; i < 4; i++)
    if (bench_samples_init(&s[i], i < 2 ? (size_t)a->ops : CONNECTS) != 0)
      return bench_fail("out of memory");
  int rc = run_pairs(a, &s[0], &s[1]);
  for (int i = 0; i < CONNECTS && rc == 0; i++)
    rc = connect_once(a->urls[0], &s[2]) || connect_once(a->urls[1], &s[3]) ? -1
                                                                            : 0;
  if (rc == 0) {
    bench_report r;
    bench_report_begin(&r, a->json, "tls");
    bench_report_int(&r, "ops", a->ops);
    bench_report_num(&r, "tcp_pair_p50_us", bench_samples_us(&s[0], 50), 1);
    bench_report_num(&r, "tls_pair_p50_us", bench_samples_us(&s[1], 50), 1);
    bench_report_num(&r, "tcp_pair_p99_us", bench_samples_us(&s[0], 99), 1);
    bench_report_num(&r, "tls_pair_p99_us", bench_samples_us(&s[1], 99), 1);
    bench_report_num(&r, "pair_ratio",
                     bench_samples_us(&s[1], 50) / bench_samples_us(&s[0], 50),
                     3);
    bench_report_int(&r, "connects", CONNECTS);
    bench_report_num(&r, "tcp_connect_p50_us", bench_samples_us(&s[2], 50), 1);
    bench_report_num(&r, "tls_connect_p50_us", bench_samples_us(&s[3], 50), 1);
    bench_report_num(&r, "connect_ratio",
                     bench_samples_us(&s[3], 50) / bench_samples_us(&s[2], 50),
                     3);
    bench_report_end(&r);
  }
  for (int i = 0; i < 4; i++)
    bench_samples_free(&s[i]);
  return rc == 0 ? 0 : BENCH_EXIT_FAIL;
}
