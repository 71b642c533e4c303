/* SPDX-License-Identifier: BSD-3-Clause */
/* A C program sharing a lock with the Python tests (test_interop.py):
 *   c_peer URL NAME WAIT_MS
 * acquires the reentrant lock NAME waiting at most WAIT_MS, prints
 * "acquired" or "not-acquired"; once acquired, holds it until its
 * standard input ends, then releases it and prints "released". Exit 0,
 * or 1 with the library's message on any failure. */
#include <rlock.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  rlock_config *cfg = NULL;
  rlock_client *client = NULL;
  rlock_lock *lock = NULL;
  int rc = RLOCK_EINVAL;
  if (argc != 4) {
    fprintf(stderr, "usage: c_peer URL NAME WAIT_MS\n");
    return 1;
  }
  if ((rc = rlock_config_new(&cfg)) != RLOCK_OK ||
      (rc = rlock_config_set_url(cfg, argv[1])) != RLOCK_OK ||
      (rc = rlock_client_new(&client, cfg)) != RLOCK_OK ||
      (rc = rlock_lock_new(&lock, client, argv[2])) != RLOCK_OK)
    goto out;
  rc = rlock_lock_try_acquire(lock, atoll(argv[3]), RLOCK_LEASE_WATCHDOG);
  if (rc == RLOCK_ELOCKED) {
    puts("not-acquired");
    rc = RLOCK_OK;
    goto out;
  }
  if (rc != RLOCK_OK)
    goto out;
  puts("acquired");
  fflush(stdout);
  while (getchar() != EOF)
    ;
  if ((rc = rlock_lock_release(lock)) == RLOCK_OK)
    puts("released");
out:
  if (rc != RLOCK_OK)
    fprintf(stderr, "c_peer: %s\n", rlock_error_last()->message);
  rlock_lock_free(lock);
  rlock_client_free(client);
  rlock_config_free(cfg);
  return rc == RLOCK_OK ? 0 : 1;
}
