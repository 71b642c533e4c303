/* SPDX-License-Identifier: BSD-3-Clause */
/* A MultiLock: several locks taken as one, all or none.
 *
 * A job that moves stock between three shelves needs the locks of all
 * three at once. Every process that takes more than one of them must take
 * them in one agreed order, or two jobs can each hold what the other waits
 * for; rlock_names_sort() gives that order, whatever order the job listed
 * them in.
 *
 * Another owner (here an explicit one, rlock_owner_new(), standing for
 * another thread or process) holds "shelf:b". A try of the MultiLock then
 * fails, and holds nothing: "shelf:a", taken before "shelf:b" was found
 * held, was given back, so no half-taken set is left behind. Then the
 * MultiLock waits (rlock_acquire_options.wait_ms) while the other owner
 * lets go, and gets all three.
 *
 * Usage: multilock [URL]   (default: $RLOCK_URL, else
 * redis://127.0.0.1:6379). Exits 0 when the try held nothing and the
 * waiting acquisition held every member. */
#include <pthread.h>
#include <rlock.h>
#include <stdio.h>
#include <stdlib.h>

#define N 3

static rlock_lock *member[N]; /* in lock order */
static uint64_t other;        /* the other owner */

static void fail(const char *what) {
  fprintf(stderr, "%s: %s\n", what, rlock_error_last()->message);
}

/* The other owner lets go of "shelf:b" (member[1]). An explicit owner's
 * hold may be released from any thread; this one runs while main waits. */
static void *let_go(void *arg) {
  int *ok = arg;
  *ok = rlock_lock_release_owner(member[1], other) == RLOCK_OK;
  if (!*ok)
    fail("other owner");
  else
    puts("other owner: released 'shelf:b'");
  return NULL;
}

/* Print which members anyone holds; 1 when exactly `want_b` holds: only
 * "shelf:b" is locked (want_b 1), or none is (want_b 0). */
static int only_b_locked(int want_b) {
  int ok = 1;
  for (int i = 0; i < N; i++) {
    int locked;
    if (rlock_lock_is_locked(&locked, member[i]) != RLOCK_OK) {
      fail("is_locked");
      return 0;
    }
    printf("  %s: %s\n", rlock_lock_name(member[i]),
           locked ? "locked" : "free");
    ok = ok && locked == (i == 1 && want_b);
  }
  return ok;
}

static int demo(rlock_multilock *m) {
  /* The other owner takes "shelf:b" first. */
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = 0;
  o.owner = other = rlock_owner_new();
  if (rlock_lock_acquire_opts(member[1], &o) != RLOCK_OK) {
    fail("other owner");
    return 0;
  }
  puts("other owner: holding 'shelf:b'");

  /* One try of every member: fails on "shelf:b", and takes nothing. */
  rlock_acquire_options once = RLOCK_ACQUIRE_OPTIONS_INIT;
  once.wait_ms = 0;
  int rc = rlock_multilock_acquire_opts(m, &once);
  if (rc != RLOCK_ELOCKED) {
    fprintf(stderr, "expected RLOCK_ELOCKED, got %s\n", rlock_strerror(rc));
    return 0;
  }
  printf("multilock try: RLOCK_ELOCKED, %s\n", rlock_error_last()->message);
  int held;
  if (rlock_multilock_is_held(&held, m) != RLOCK_OK) {
    fail("multilock is_held");
    return 0;
  }
  printf("multilock held: %s; the members:\n", held ? "yes" : "no");
  if (held || !only_b_locked(1))
    return 0;

  /* Now wait up to 5 s for all three, while the other owner lets go. */
  int let_go_ok = 0;
  pthread_t t;
  if (pthread_create(&t, NULL, let_go, &let_go_ok) != 0) {
    fprintf(stderr, "pthread_create failed\n");
    return 0;
  }
  rlock_acquire_options wait = RLOCK_ACQUIRE_OPTIONS_INIT;
  wait.wait_ms = 5000; /* for all members together */
  rc = rlock_multilock_acquire_opts(m, &wait);
  pthread_join(t, NULL);
  if (rc != RLOCK_OK) {
    fail("multilock");
    return 0;
  }
  if (rlock_multilock_is_held(&held, m) != RLOCK_OK) {
    fail("multilock is_held");
    held = 0;
  }
  printf("multilock held: %s\n", held ? "yes, all three" : "no");

  /* ... move the stock ... then give every member back. */
  if (rlock_multilock_release(m) != RLOCK_OK) {
    fail("multilock release");
    return 0;
  }
  puts("multilock released; now:");
  return held && let_go_ok && only_b_locked(0);
}

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : getenv("RLOCK_URL");
  if (url == NULL || url[0] == '\0')
    url = "redis://127.0.0.1:6379";
  rlock_config *cfg = NULL;
  rlock_client *client = NULL;
  rlock_multilock *m = NULL;
  int ok = rlock_config_new(&cfg) == RLOCK_OK &&
           rlock_config_set_url(cfg, url) == RLOCK_OK &&
           rlock_client_new(&client, cfg) == RLOCK_OK;
  if (!ok)
    fail("client");
  rlock_config_free(cfg); /* the client keeps a copy */

  /* The job lists the shelves in its own order; lock them in the
   * canonical one. */
  const char *names[N] = {"shelf:c", "shelf:a", "shelf:b"};
  if (ok && rlock_names_sort(names, N) != RLOCK_OK) {
    fail("names_sort");
    ok = 0;
  }
  for (int i = 0; ok && i < N; i++) {
    ok = rlock_lock_new(&member[i], client, names[i]) == RLOCK_OK;
    if (!ok)
      fail("lock_new");
  }
  if (ok) {
    printf("lock order: %s, %s, %s\n", names[0], names[1], names[2]);
    ok = rlock_multilock_new(&m, member, N) == RLOCK_OK;
    if (!ok)
      fail("multilock_new");
  }
  ok = ok && demo(m);
  puts(ok ? "all or none: done" : "FAILED");
  rlock_multilock_free(m); /* before its members */
  for (int i = 0; i < N; i++)
    rlock_lock_free(member[i]);
  rlock_client_free(client);
  return ok ? 0 : 1;
}
