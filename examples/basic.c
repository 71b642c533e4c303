/* The README's example: take a lock with a bounded wait and a
 * watchdog-renewed lease, work, release. Usage: basic [URL] */
#include <rlock.h>
#include <stdio.h>

int main(int argc, char **argv) {
  rlock_config *cfg;
  rlock_client *client;
  rlock_lock *lock;
  rlock_config_new(&cfg);
  rlock_config_set_url(cfg, argc > 1 ? argv[1] : "redis://127.0.0.1:6379");
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
    puts("holding 'orders'"); /* ... the critical section ... */
    rc = rlock_lock_release(lock); /* RLOCK_ELOST if it was lost meanwhile */
  }
  if (rc != RLOCK_OK)
    fprintf(stderr, "%s\n", rlock_error_last()->message);
  rlock_lock_free(lock);
  rlock_client_free(client);
  return rc == RLOCK_OK ? 0 : 1;
}
