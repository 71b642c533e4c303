/* SPDX-License-Identifier: BSD-3-Clause */
/* Many locks, each contended, on one libevent loop thread.
 *
 * 500 locks "event-demo:0" .. "event-demo:499", each wanted by two
 * owners at once (1000 acquisitions pending). For each lock one owner
 * gets it at once and the other waits for the unlock message; every
 * holder counts its turn and releases from its callback. The program
 * ends the loop once every owner has had its turn.
 *
 * Usage: loop_event [URL]   (default: $RLOCK_URL, else
 * redis://127.0.0.1:6379). Exits 0 when every owner held its lock. */
#include <rlock.h>
#include <rlock/event.h>
#include <stdio.h>
#include <stdlib.h>

#define LOCKS 500

typedef struct turn {
  rlock_lock *lock;
  uint64_t owner;
} turn;

static struct event_base *base;
static turn turns[LOCKS][2];
static int done, failures;

static void on_released(void *arg, int rc, int64_t unused) {
  (void)arg, (void)unused;
  failures += rc != RLOCK_OK;
  if (++done == 2 * LOCKS)
    event_base_loopbreak(base); /* the client's wake-up event stays */
}

static void on_acquired(void *arg, int rc, int64_t unused) {
  (void)unused;
  turn *t = arg;
  if (rc != RLOCK_OK) {
    fprintf(stderr, "acquire: %s\n", rlock_error_last()->message);
    failures++;
    done++;
    return;
  }
  if (rlock_lock_release_async(t->lock, t->owner, on_released, NULL) !=
      RLOCK_OK)
    failures++;
}

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : getenv("RLOCK_URL");
  base = event_base_new();
  rlock_config *cfg;
  rlock_client *client;
  rlock_config_new(&cfg);
  if ((url && rlock_config_set_url(cfg, url) != RLOCK_OK) ||
      rlock_client_new_event(&client, cfg, base) != RLOCK_OK) {
    fprintf(stderr, "setup: %s\n", rlock_error_last()->message);
    return 1;
  }
  rlock_config_free(cfg);
  for (int i = 0; i < LOCKS; i++) {
    char name[32];
    snprintf(name, sizeof name, "event-demo:%d", i);
    rlock_lock *l;
    if (rlock_lock_new(&l, client, name) != RLOCK_OK)
      return 1;
    for (int k = 0; k < 2; k++) {
      turns[i][k] = (turn){l, rlock_owner_new()};
      rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
      o.owner = turns[i][k].owner;
      o.wait_ms = 60000;
      if (rlock_lock_acquire_async(l, &o, on_acquired, &turns[i][k], NULL) !=
          RLOCK_OK)
        return 1;
    }
  }
  printf("%d acquisitions of %d locks pending on one loop\n", 2 * LOCKS, LOCKS);
  event_base_dispatch(base);
  printf("%d turns, %d failures\n", done, failures);
  for (int i = 0; i < LOCKS; i++)
    rlock_lock_free(turns[i][0].lock);
  rlock_client_free(client);
  event_base_free(base);
  return done == 2 * LOCKS && failures == 0 ? 0 : 1;
}
