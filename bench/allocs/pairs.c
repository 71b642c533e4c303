/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pairs.c - heap allocations per uncontended lock+unlock pair (or a
 * semaphore's, or a permit-expirable semaphore's, acquire+release of one
 * permit), after a warm-up, counted by shim.c:
 * pairs URL [WARMUP [PAIRS [lock|semaphore|psemaphore]]].
 */
#include <rlock.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern atomic_long rlock_shim_count;
extern atomic_int rlock_shim_on;

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s URL [WARMUP [PAIRS [KIND]]]\n", argv[0]);
    return 64;
  }
  long warm = argc > 2 ? atol(argv[2]) : 200,
       n = argc > 3 ? atol(argv[3]) : 1000;
  /* lock (the default), semaphore (one permit) or psemaphore (one permit
   * with a fixed lease) */
  const char *kind = argc > 4 ? argv[4] : "lock";
  rlock_config *cfg;
  rlock_client *c;
  rlock_lock *l;
  rlock_semaphore *s;
  rlock_psemaphore *p;
  char id[RLOCK_PERMIT_ID_LEN + 1];
  if (rlock_config_new(&cfg) != RLOCK_OK ||
      rlock_config_set_url(cfg, argv[1]) != RLOCK_OK ||
      rlock_client_new(&c, cfg) != RLOCK_OK ||
      rlock_lock_new(&l, c, "bench:allocs") != RLOCK_OK ||
      rlock_semaphore_new(&s, c, "bench:allocs:sem") != RLOCK_OK ||
      rlock_semaphore_set_permits(s, 1) != RLOCK_OK ||
      rlock_psemaphore_new(&p, c, "bench:allocs:psem") != RLOCK_OK ||
      rlock_psemaphore_set_permits(p, 1) != RLOCK_OK) {
    fprintf(stderr, "%s\n", rlock_error_last()->message);
    return 1;
  }
  rlock_config_free(cfg);
  for (long i = 0; i < warm + n; i++) {
    if (i == warm)
      atomic_store(&rlock_shim_on, 1);
    int rc;
    if (strcmp(kind, "semaphore") == 0)
      rc = rlock_semaphore_acquire(s, 1, 0, NULL) != RLOCK_OK ||
           rlock_semaphore_release(s, 1) != RLOCK_OK;
    else if (strcmp(kind, "psemaphore") == 0)
      rc = rlock_psemaphore_acquire(id, p, 0, 30000, NULL) != RLOCK_OK ||
           rlock_psemaphore_release(p, id) != RLOCK_OK;
    else
      rc = rlock_lock_acquire(l) != RLOCK_OK ||
           rlock_lock_release(l) != RLOCK_OK;
    if (rc) {
      fprintf(stderr, "%s\n", rlock_error_last()->message);
      return 1;
    }
  }
  atomic_store(&rlock_shim_on, 0);
  printf("heap allocations per uncontended %s acquire+release, every "
         "thread, after %ld warm-up pairs: %.2f\n",
         kind, warm, (double)atomic_load(&rlock_shim_count) / (double)n);
  rlock_lock_free(l);
  rlock_semaphore_free(s);
  rlock_psemaphore_free(p);
  rlock_client_free(c);
  return 0;
}
