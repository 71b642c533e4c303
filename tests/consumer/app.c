/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The consumer check's program (tests/consumer/check.sh): built against an
 * installed or embedded rlock the way a user would, it needs no server.
 * It checks that the header and the library agree on the version and that
 * a config and a client can be created and freed.
 */
#include <rlock.h>
#include <stdio.h>

int main(void) {
  rlock_config *cfg = NULL;
  rlock_client *client = NULL;
  printf("rlock %s\n", rlock_version_string());
  if (rlock_version() != RLOCK_VERSION_HEX) {
    fprintf(stderr, "header %06x, library %06x\n", (unsigned)RLOCK_VERSION_HEX,
            rlock_version());
    return 1;
  }
  if (rlock_config_new(&cfg) != RLOCK_OK ||
      rlock_config_set_url(cfg, "redis://127.0.0.1:6379") != RLOCK_OK ||
      rlock_client_new(&client, cfg) != RLOCK_OK) {
    fprintf(stderr, "%s\n", rlock_error_last()->message);
    return 1;
  }
  rlock_config_free(cfg); /* the client keeps a copy */
  rlock_client_free(client);
  return 0;
}
