/* SPDX-License-Identifier: BSD-3-Clause */
/* The README's example: take a lock with a bounded wait and a
 * watchdog-renewed lease, work, release; then the same through
 * rlock_acquire_options, the one struct every acquire form stands for.
 * Usage: basic [URL]   (default: $RLOCK_URL, else redis://127.0.0.1:6379) */
#include <rlock.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  rlock_config *cfg;
  rlock_client *client;
  rlock_lock *lock;
  rlock_config_new(&cfg);
  const char *url = argc > 1 ? argv[1] : getenv("RLOCK_URL");
  rlock_config_set_url(cfg, url && *url ? url : "redis://127.0.0.1:6379");
  if (rlock_client_new(&client, cfg) != RLOCK_OK) {
    fprintf(stderr, "%s\n", rlock_error_last()->message);
    rlock_config_free(cfg);
    return 1;
  }
  rlock_config_free(cfg); /* the client keeps a copy */
  rlock_lock_new(&lock, client, "orders");

  /* Wait up to 5 s; no lease given: the watchdog renews it while we hold it. */
  int rc = rlock_lock_try_acquire(lock, 5000, RLOCK_LEASE_WATCHDOG);
  if (rc == RLOCK_OK) {
    puts("holding 'orders'");      /* ... the critical section ... */
    rc = rlock_lock_release(lock); /* RLOCK_ELOST if it was lost meanwhile */
  }
  if (rc == RLOCK_OK) {
    /* Every acquire function is a short form of rlock_lock_acquire_opts:
     * wait, lease, cancel token, owner and fencing token in one struct.
     * Here: wait up to 5 s, and a fixed 10 s lease instead of the watchdog
     * (the lock expires then, released or not). */
    rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
    o.wait_ms = 5000;
    o.lease_ms = 10000;
    rc = rlock_lock_acquire_opts(lock, &o);
    if (rc == RLOCK_OK) {
      puts("holding 'orders' again, for at most 10 s");
      rc = rlock_lock_release(lock);
    }
  }
  if (rc != RLOCK_OK)
    fprintf(stderr, "%s\n", rlock_error_last()->message);
  rlock_lock_free(lock);
  rlock_client_free(client);
  return rc == RLOCK_OK ? 0 : 1;
}
