/* SPDX-License-Identifier: BSD-3-Clause */
/* Why a lease lock needs fencing tokens, in one run.
 *
 * Two clients, A and B, share the fenced lock "fenced-demo" and write to
 * a "storage" that remembers the highest fencing token it has seen and
 * refuses any write carrying a lower one. A takes the lock with a short
 * lease and then stalls (here: it does nothing while B waits; in life:
 * a GC pause, SIGSTOP, a swapped-out page, a slow network). Its
 * lease runs out, B takes the lock with a larger token and writes. When A
 * wakes up it still believes it holds the lock and writes too: the
 * storage refuses it, because A's token is older than B's. Only then does
 * A learn, from rlock_lock_check(), that its lock was lost.
 *
 * Usage: fenced_resource [URL]   (default: $RLOCK_URL, else
 * redis://127.0.0.1:6379). Exits 0 when the stale write was refused and
 * A was told its lock was lost. */
#include <inttypes.h>
#include <rlock.h>
#include <stdio.h>
#include <stdlib.h>

/* The protected resource. In a real system this check lives in the
 * resource itself and is atomic with the write, e.g. a database row
 * updated with "SET fence_token = :token ... WHERE fence_token <= :token".
 * Here it is a struct in this one process, so the check and the write
 * cannot be interleaved. */
typedef struct storage {
  int64_t highest; /* the highest token seen so far */
  char data[64];
} storage;

static int storage_write(storage *s, int64_t token, const char *data) {
  if (token < s->highest)
    return 0; /* a stale holder: refused */
  s->highest = token;
  snprintf(s->data, sizeof s->data, "%s", data);
  return 1;
}

/* A client of its own for each party, as two processes would have. */
static rlock_client *client_for(const char *url) {
  rlock_config *cfg;
  rlock_client *client = NULL;
  if (rlock_config_new(&cfg) != RLOCK_OK)
    return NULL;
  if (rlock_config_set_url(cfg, url) != RLOCK_OK ||
      rlock_client_new(&client, cfg) != RLOCK_OK)
    fprintf(stderr, "%s\n", rlock_error_last()->message);
  rlock_config_free(cfg);
  return client;
}

/* Acquire `lock` waiting up to wait_ms, with a fixed lease, and return
 * this acquisition's fencing token (0 on failure). */
static int64_t acquire(rlock_lock *lock, int64_t wait_ms, int64_t lease_ms) {
  int64_t token = 0;
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = wait_ms;
  o.lease_ms = lease_ms;
  o.token = &token; /* only a fenced lock hands one out */
  if (rlock_lock_acquire_opts(lock, &o) != RLOCK_OK) {
    fprintf(stderr, "%s\n", rlock_error_last()->message);
    return 0;
  }
  return token;
}

/* The story; 1 when A's stale write was refused and A learnt of the loss. */
static int demo(rlock_lock *a, rlock_lock *b) {
  storage store = {0, ""};

  /* A: a 1 s lease. (With the watchdog instead, renewals would come from
   * a background thread; a stall of the whole process stops them too, so
   * the gap below stays open.) */
  int64_t ta = acquire(a, 0, 1000);
  if (ta == 0)
    return 0;
  printf("A: acquired 'fenced-demo' with token %" PRId64 " (lease 1s)\n", ta);
  printf("A: writes with token %" PRId64 ": %s\n", ta,
         storage_write(&store, ta, "A's first write") ? "accepted"
                                                      : "REJECTED");
  printf("A: stalls (think: a long GC pause) ...\n");

  /* B waits for the lock; A's lease runs out while A is stalled. */
  int64_t tb = acquire(b, 5000, 10000);
  if (tb == 0)
    return 0;
  printf("B: acquired 'fenced-demo' with token %" PRId64
         " after A's lease ran out\n",
         tb);
  printf("B: writes with token %" PRId64 ": %s\n", tb,
         storage_write(&store, tb, "B's write") ? "accepted" : "REJECTED");

  /* A wakes up and carries on where it stopped: the write it was about
   * to do. Checking the lock first would not close the gap, since the
   * stall could come between the check and the write; the storage's
   * token check does not depend on A's timing at all. */
  int accepted = storage_write(&store, ta, "A's stale write");
  printf("A: wakes up, writes with token %" PRId64 ": %s (storage has seen "
         "token %" PRId64 ")\n",
         ta, accepted ? "accepted" : "REJECTED", store.highest);
  int check = rlock_lock_check(a);
  printf("A: rlock_lock_check says %s\n", check == RLOCK_ELOST
                                              ? "RLOCK_ELOST: the lock was lost"
                                              : rlock_strerror(check));
  printf("storage holds \"%s\"\n", store.data);

  /* A's release reports the loss too; B's succeeds. */
  int rc = rlock_lock_release(a);
  printf("A: release says %s\n",
         rc == RLOCK_ELOST ? "RLOCK_ELOST" : rlock_strerror(rc));
  if (rlock_lock_release(b) != RLOCK_OK)
    return 0;
  return !accepted && check == RLOCK_ELOST;
}

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : getenv("RLOCK_URL");
  if (url == NULL || url[0] == '\0')
    url = "redis://127.0.0.1:6379";
  rlock_client *ca = client_for(url), *cb = ca ? client_for(url) : NULL;
  rlock_lock *a = NULL, *b = NULL;
  int ok =
      cb != NULL && rlock_lock_new_fenced(&a, ca, "fenced-demo") == RLOCK_OK &&
      rlock_lock_new_fenced(&b, cb, "fenced-demo") == RLOCK_OK && demo(a, b);
  rlock_lock_free(a);
  rlock_lock_free(b);
  rlock_client_free(ca);
  rlock_client_free(cb);
  return ok ? 0 : 1;
}
