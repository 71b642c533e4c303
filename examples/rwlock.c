/* SPDX-License-Identifier: BSD-3-Clause */
/* A read-write lock: readers share it, a writer has it alone.
 *
 * Two readers take the read half of "rw-demo" and both hold it at once
 * (rlock_lock_inspect() lists two holders, mode "read"). A writer asks for
 * the write half: it cannot have it while any reader is in, so a try that
 * does not wait fails with RLOCK_ELOCKED, and a writer thread waits. The
 * readers leave one at a time; with one reader left the writer still
 * waits, and once the last has left it gets the lock, alone (mode
 * "write", one holder).
 *
 * The readers are explicit owners (rlock_owner_new()), as two threads or
 * processes would be, so the main thread can act for both of them; the
 * writer is a thread of its own, because it blocks while it waits.
 *
 * Usage: rwlock [URL]   (default: $RLOCK_URL, else redis://127.0.0.1:6379).
 * Exits 0 when the readers overlapped and the writer got in only after
 * both had left, and then alone. */
#include <pthread.h>
#include <rlock.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define READERS 2

static rlock_lock *rd, *wr;   /* the two halves of one read-write lock */
static atomic_int readers_in; /* read holds not yet given back */
static sem_t writer_waiting;  /* posted by the writer when it starts waiting */

static void fail(const char *who) {
  fprintf(stderr, "%s: %s\n", who, rlock_error_last()->message);
}

/* Whether the lock is in `mode` ("read"/"write") with `holders` holders,
 * as one rlock_lock_inspect() snapshot shows it. */
static int state_is(rlock_lock *lock, const char *mode, size_t holders) {
  rlock_lock_info *info;
  if (rlock_lock_inspect(&info, lock) != RLOCK_OK) {
    fail("inspect");
    return 0;
  }
  const char *m = rlock_lock_info_mode(info); /* NULL when free */
  size_t n = rlock_lock_info_holder_count(info);
  printf("  inspect: mode %s, %zu holder(s)\n", m ? m : "(free)", n);
  int is = m != NULL && strcmp(m, mode) == 0 && n == holders;
  rlock_lock_info_free(info);
  return is;
}

/* The writer: waits for the write half, then checks it is alone. */
static void *writer_main(void *arg) {
  int *ok = arg;
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = 10000; /* wait at most 10 s */
  puts("writer: waiting for the write half");
  sem_post(&writer_waiting);
  if (rlock_lock_acquire_opts(wr, &o) != RLOCK_OK) {
    fail("writer");
    return NULL;
  }
  printf("writer: holding the write half, %d reader(s) in\n",
         atomic_load(&readers_in));
  *ok = atomic_load(&readers_in) == 0 && state_is(wr, "write", 1);
  if (rlock_lock_release(wr) != RLOCK_OK) {
    fail("writer");
    *ok = 0;
  }
  return NULL;
}

static int demo(void) {
  /* Two readers in at once: no waiting needed (wait_ms 0). */
  uint64_t reader[READERS];
  for (int i = 0; i < READERS; i++) {
    rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
    o.wait_ms = 0;
    o.owner = reader[i] = rlock_owner_new();
    if (rlock_lock_acquire_opts(rd, &o) != RLOCK_OK) {
      fail("reader");
      return 0;
    }
    atomic_fetch_add(&readers_in, 1);
    printf("reader %d: holding the read half\n", i + 1);
  }
  if (!state_is(rd, "read", READERS))
    return 0;

  /* A writer cannot get in now: a try without waiting says so. */
  int rc = rlock_lock_try_acquire(wr, 0, RLOCK_LEASE_WATCHDOG);
  if (rc != RLOCK_ELOCKED) {
    fprintf(stderr, "writer: expected RLOCK_ELOCKED, got %s\n",
            rlock_strerror(rc));
    return 0;
  }
  printf("writer: a try without waiting: RLOCK_ELOCKED, %s\n",
         rlock_error_last()->message);

  /* So the writer waits, on a thread of its own. */
  int writer_ok = 0;
  pthread_t writer;
  if (pthread_create(&writer, NULL, writer_main, &writer_ok) != 0) {
    fprintf(stderr, "pthread_create failed\n");
    return 0;
  }
  sem_wait(&writer_waiting);

  /* The readers leave one at a time; any one left keeps the writer out.
   * An explicit owner's hold may be released from any thread. */
  int ok = 1;
  for (int i = 0; i < READERS; i++) {
    atomic_fetch_sub(&readers_in, 1);
    if (rlock_lock_release_owner(rd, reader[i]) != RLOCK_OK) {
      fail("reader");
      ok = 0;
    }
    printf("reader %d: released\n", i + 1);
    if (i + 1 < READERS) /* someone is still reading: the writer waits */
      ok = state_is(rd, "read", (size_t)(READERS - i - 1)) && ok;
  }
  pthread_join(writer, NULL);
  return ok && writer_ok;
}

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : getenv("RLOCK_URL");
  if (url == NULL || url[0] == '\0')
    url = "redis://127.0.0.1:6379";
  rlock_config *cfg = NULL;
  rlock_client *client = NULL;
  int ok = rlock_config_new(&cfg) == RLOCK_OK &&
           rlock_config_set_url(cfg, url) == RLOCK_OK &&
           rlock_client_new(&client, cfg) == RLOCK_OK &&
           rlock_lock_new_read(&rd, client, "rw-demo") == RLOCK_OK &&
           rlock_lock_new_write(&wr, client, "rw-demo") == RLOCK_OK;
  if (!ok)
    fail("setup");
  rlock_config_free(cfg); /* the client keeps a copy */
  if (ok && sem_init(&writer_waiting, 0, 0) != 0) {
    fprintf(stderr, "sem_init failed\n");
    ok = 0;
  } else if (ok) {
    ok = demo();
    sem_destroy(&writer_waiting);
  }
  puts(ok ? "readers shared the lock; the writer had it alone" : "FAILED");
  rlock_lock_free(rd);
  rlock_lock_free(wr);
  rlock_client_free(client);
  return ok ? 0 : 1;
}
