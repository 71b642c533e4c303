/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util.c - error messages, clients, owner-shaped strings, key names.
 */
#include <stdarg.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench.h"

int bench_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("rlock-bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return BENCH_EXIT_FAIL;
}

int bench_fail_rc(const char *what, int rc) {
  return bench_fail("%s: %s (%s)", what, rlock_strerror(rc),
                    rlock_error_last()->message);
}

rlock_client *bench_client_new(const char *url) {
  return bench_client_new_fair(url, 0);
}

rlock_client *bench_client_new_fair(const char *url, int deferred_shift) {
  rlock_config *cfg = NULL;
  rlock_client *c = NULL;
  int rc = rlock_config_new(&cfg);
  if (rc == RLOCK_OK)
    rc = rlock_config_set_url(cfg, url);
  if (rc == RLOCK_OK)
    rc = rlock_config_set_fair_deferred_shift(cfg, deferred_shift);
  if (rc == RLOCK_OK)
    rc = rlock_client_new(&c, cfg);
  rlock_config_free(cfg);
  if (rc != RLOCK_OK)
    bench_fail_rc("cannot create a client", rc);
  return c;
}

void bench_fake_owner(char *buf, size_t size) {
  unsigned char b[16] = {0};
  /* A short read only makes the id less random, which does not matter
   * here: it just has to differ from the real clients' ids. */
  if (getrandom(b, sizeof b, 0) < 0)
    b[0] = (unsigned char)getpid();
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
  snprintf(buf, size,
           "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
           "%02x%02x%02x%02x%02x%02x:%ld",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
           b[11], b[12], b[13], b[14], b[15], (long)syscall(SYS_gettid));
}

void bench_key(char *buf, size_t size, const char *base, long pid) {
  snprintf(buf, size, "%s:%ld", base, pid);
}

long bench_block_count(long ops) {
  return (ops + BENCH_BLOCK - 1) / BENCH_BLOCK;
}

int bench_run_blocks(long ops, int (*block)(void *arg, long n), void *arg) {
  for (long done = 0; done < ops; done += BENCH_BLOCK)
    if (block(arg, ops - done < BENCH_BLOCK ? ops - done : BENCH_BLOCK) != 0)
      return -1;
  return 0;
}

uint64_t bench_rand(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}
