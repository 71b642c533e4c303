/* SPDX-License-Identifier: BSD-3-Clause */
/* Thousands of acquisitions pending at once on one libuv loop thread.
 *
 * 5000 owners ask for the same lock "uv-demo" without blocking
 * (rlock_lock_acquire_async). One gets it; the others wait, asleep, for
 * its unlock message, and each holder releases from its callback, which
 * hands the lock to the next. Nothing blocks and no thread is started:
 * the sockets, the timer and every callback are the loop's.
 *
 * Usage: loop_uv [URL]   (default: $RLOCK_URL, else redis://127.0.0.1:6379).
 * Exits 0 when every owner held the lock once, one at a time. */
#include <rlock.h>
#include <rlock/uv.h>
#include <stdio.h>
#include <stdlib.h>

#define OWNERS 5000

static rlock_lock *lock;
static int holding; /* owners inside the lock now: never more than 1 */
static int held, released, failures;

static void on_released(void *arg, int rc, int64_t unused) {
  (void)arg, (void)unused;
  if (rc != RLOCK_OK) {
    fprintf(stderr, "release: %s\n", rlock_error_last()->message);
    failures++;
  }
  released++;
}

static void on_acquired(void *arg, int rc, int64_t unused) {
  (void)unused;
  uint64_t owner = *(uint64_t *)arg;
  if (rc != RLOCK_OK) {
    fprintf(stderr, "acquire: %s\n", rlock_error_last()->message);
    failures++;
    return;
  }
  if (++holding != 1)
    failures++;
  held++;
  holding--; /* the critical section ends before the release is sent */
  if (rlock_lock_release_async(lock, owner, on_released, NULL) != RLOCK_OK)
    failures++;
}

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : getenv("RLOCK_URL");
  uv_loop_t loop;
  uv_loop_init(&loop);
  rlock_config *cfg;
  rlock_client *client;
  rlock_config_new(&cfg);
  if ((url && rlock_config_set_url(cfg, url) != RLOCK_OK) ||
      rlock_client_new_uv(&client, cfg, &loop) != RLOCK_OK ||
      rlock_lock_new(&lock, client, "uv-demo") != RLOCK_OK) {
    fprintf(stderr, "setup: %s\n", rlock_error_last()->message);
    return 1;
  }
  rlock_config_free(cfg);
  static uint64_t owners[OWNERS];
  for (int i = 0; i < OWNERS; i++) {
    owners[i] = rlock_owner_new(); /* one loop thread, many owners */
    rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
    o.owner = owners[i];
    o.wait_ms = 60000;
    o.lease_ms = 10000;
    if (rlock_lock_acquire_async(lock, &o, on_acquired, &owners[i], NULL) !=
        RLOCK_OK) {
      fprintf(stderr, "acquire_async: %s\n", rlock_error_last()->message);
      return 1;
    }
  }
  printf("%d acquisitions pending on one loop\n", OWNERS);
  while (released + failures < OWNERS && uv_run(&loop, UV_RUN_ONCE))
    ;
  printf("held %d times, one at a time; %d failures\n", held, failures);
  rlock_lock_free(lock);
  rlock_client_free(client);
  uv_run(&loop, UV_RUN_NOWAIT); /* the adapter's handles close */
  uv_loop_close(&loop);
  return held == OWNERS && failures == 0 ? 0 : 1;
}
