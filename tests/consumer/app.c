/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The consumer check's program (tests/consumer/check.sh, scripts/deb.sh):
 * built against an installed or embedded rlock the way a user would. It
 * prints the version and checks that the header and the library agree on
 * it, then creates a client for the URL argv[1] (default
 * redis://127.0.0.1:6379, where nothing needs to listen: a client connects
 * on first use) and, when a URL was given, takes the lock "consumer:app"
 * on that server, checks that it is held there and releases it.
 */
#include <rlock.h>
#include <stdio.h>

/* Take, check and release one lock on the client's server. */
static int take_and_release(rlock_client *client) {
  rlock_lock *lock = NULL;
  int held = 0, rc = rlock_lock_new(&lock, client, "consumer:app");
  if (rc == RLOCK_OK)
    rc = rlock_lock_try_acquire(lock, 5000, RLOCK_LEASE_WATCHDOG);
  if (rc == RLOCK_OK) {
    rc = rlock_lock_is_held(&held, lock);
    if (rc == RLOCK_OK && !held) {
      fprintf(stderr, "acquired, but the server says it is not held\n");
      rc = RLOCK_EPROTO;
      rlock_lock_release(lock);
    } else {
      int rc2 = rlock_lock_release(lock);
      rc = rc == RLOCK_OK ? rc2 : rc;
    }
  }
  rlock_lock_free(lock);
  return rc;
}

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  rlock_config *cfg = NULL;
  rlock_client *client = NULL;
  printf("rlock %s\n", rlock_version_string());
  if (rlock_version() != RLOCK_VERSION_HEX) {
    fprintf(stderr, "header %06x, library %06x\n", (unsigned)RLOCK_VERSION_HEX,
            rlock_version());
    return 1;
  }
  if (rlock_config_new(&cfg) != RLOCK_OK ||
      rlock_config_set_url(cfg, url) != RLOCK_OK ||
      rlock_client_new(&client, cfg) != RLOCK_OK) {
    fprintf(stderr, "%s\n", rlock_error_last()->message);
    rlock_config_free(cfg);
    return 1;
  }
  rlock_config_free(cfg); /* the client keeps a copy */
  int rc = argc > 1 ? take_and_release(client) : RLOCK_OK;
  if (rc != RLOCK_OK)
    fprintf(stderr, "%s: %s\n", url, rlock_error_last()->message);
  rlock_client_free(client);
  return rc == RLOCK_OK ? 0 : 1;
}
