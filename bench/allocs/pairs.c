/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pairs.c - heap allocations per uncontended lock+unlock pair, after a
 * warm-up, counted by shim.c: pairs URL [WARMUP [PAIRS]].
 */
#include <rlock.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

extern atomic_long rlock_shim_count;
extern atomic_int rlock_shim_on;

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s URL [WARMUP [PAIRS]]\n", argv[0]);
    return 64;
  }
  long warm = argc > 2 ? atol(argv[2]) : 200,
       n = argc > 3 ? atol(argv[3]) : 1000;
  rlock_config *cfg;
  rlock_client *c;
  rlock_lock *l;
  if (rlock_config_new(&cfg) != RLOCK_OK ||
      rlock_config_set_url(cfg, argv[1]) != RLOCK_OK ||
      rlock_client_new(&c, cfg) != RLOCK_OK ||
      rlock_lock_new(&l, c, "bench:allocs") != RLOCK_OK) {
    fprintf(stderr, "%s\n", rlock_error_last()->message);
    return 1;
  }
  rlock_config_free(cfg);
  for (long i = 0; i < warm + n; i++) {
    if (i == warm)
      atomic_store(&rlock_shim_on, 1);
    if (rlock_lock_acquire(l) != RLOCK_OK ||
        rlock_lock_release(l) != RLOCK_OK) {
      fprintf(stderr, "%s\n", rlock_error_last()->message);
      return 1;
    }
  }
  atomic_store(&rlock_shim_on, 0);
  printf("heap allocations per uncontended lock+unlock, every thread, "
         "after %ld warm-up pairs: %.2f\n",
         warm, (double)atomic_load(&rlock_shim_count) / (double)n);
  rlock_lock_free(l);
  rlock_client_free(c);
  return 0;
}
