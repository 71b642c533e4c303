/* SPDX-License-Identifier: BSD-3-Clause */
/* A fair lock serves its waiters in the order they asked.
 *
 * The main thread takes the fair lock "fair-demo", then starts three
 * worker threads, one at a time. Each worker asks for the lock and, since
 * main holds it, joins the lock's queue in Redis. Main starts the next
 * worker only once rlock_lock_inspect() shows the queue one longer, so the
 * arrival order is known: 1, 2, 3. Then main releases, and the workers get
 * the lock in exactly that order, each release handing it to the next in
 * line. (An ordinary lock, rlock_lock_new(), wakes any one waiter and lets
 * whoever asks first win; a fair lock notifies only the head of the queue,
 * so a newcomer can never overtake it.)
 *
 * Each thread is an owner of its own, so one client and one lock object
 * serve all four threads.
 *
 * Usage: fair [URL]   (default: $RLOCK_URL, else redis://127.0.0.1:6379).
 * Exits 0 when the workers were served in the order they arrived. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <pthread.h>
#include <rlock.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define WORKERS 3

typedef struct worker {
  rlock_lock *lock; /* shared: a lock object has no per-thread state */
  int id;           /* 1, 2, 3: the order main starts them in */
  int ok;
} worker;

/* The order the workers got the lock in, filled in by the workers. */
static int served[WORKERS];
static atomic_int nserved;

static void *worker_main(void *arg) {
  worker *w = arg;
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = 10000; /* queue for at most 10 s (the default: for ever) */
  if (rlock_lock_acquire_opts(w->lock, &o) != RLOCK_OK) {
    /* The last error is per thread: print it on the thread that failed. */
    fprintf(stderr, "worker %d: %s\n", w->id, rlock_error_last()->message);
    return NULL;
  }
  /* The critical section: note our turn. */
  served[atomic_fetch_add(&nserved, 1)] = w->id;
  printf("worker %d: holding 'fair-demo'\n", w->id);
  if (rlock_lock_release(w->lock) != RLOCK_OK) {
    fprintf(stderr, "worker %d: %s\n", w->id, rlock_error_last()->message);
    return NULL;
  }
  w->ok = 1;
  return NULL;
}

/* Wait (up to 10 s, looking every 10 ms) until `n` waiters are queued.
 * The queue lives in Redis; rlock_lock_inspect() reads it atomically. */
static int wait_queued(rlock_lock *lock, size_t n) {
  for (int i = 0; i < 1000; i++) {
    rlock_lock_info *info;
    if (rlock_lock_inspect(&info, lock) != RLOCK_OK) {
      fprintf(stderr, "%s\n", rlock_error_last()->message);
      return 0;
    }
    size_t queued = rlock_lock_info_queue_count(info);
    rlock_lock_info_free(info);
    if (queued == n)
      return 1;
    nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
  }
  fprintf(stderr, "the queue did not reach %zu waiters within 10 s\n", n);
  return 0;
}

/* Main holds the lock while the workers queue up, then lets them go. */
static int demo(rlock_lock *lock) {
  if (rlock_lock_acquire_opts(lock, NULL) != RLOCK_OK) { /* the defaults */
    fprintf(stderr, "%s\n", rlock_error_last()->message);
    return 0;
  }
  puts("main: holding 'fair-demo'");

  worker w[WORKERS];
  pthread_t t[WORKERS];
  int started = 0, queued = 1;
  for (; started < WORKERS && queued; started++) {
    w[started] = (worker){lock, started + 1, 0};
    if (pthread_create(&t[started], NULL, worker_main, &w[started]) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      break;
    }
    queued = wait_queued(lock, (size_t)started + 1);
    if (queued)
      printf("worker %d: queued, place %d\n", started + 1, started + 1);
  }

  /* Release: the head of the queue is told, and only it. */
  puts("main: releasing");
  int released = rlock_lock_release(lock) == RLOCK_OK;
  if (!released)
    fprintf(stderr, "%s\n", rlock_error_last()->message);
  int ok = released && queued && started == WORKERS;
  for (int i = 0; i < started; i++) {
    pthread_join(t[i], NULL);
    ok = ok && w[i].ok;
  }

  printf("served in order:");
  for (int i = 0; i < nserved; i++) {
    printf(" %d", served[i]);
    ok = ok && served[i] == i + 1;
  }
  printf("%s\n", ok ? " (the order they arrived in)" : " (WRONG)");
  return ok;
}

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : getenv("RLOCK_URL");
  if (url == NULL || url[0] == '\0')
    url = "redis://127.0.0.1:6379";
  rlock_config *cfg = NULL;
  rlock_client *client = NULL;
  rlock_lock *lock = NULL;
  int ok = rlock_config_new(&cfg) == RLOCK_OK &&
           rlock_config_set_url(cfg, url) == RLOCK_OK &&
           rlock_client_new(&client, cfg) == RLOCK_OK &&
           rlock_lock_new_fair(&lock, client, "fair-demo") == RLOCK_OK;
  if (!ok)
    fprintf(stderr, "%s\n", rlock_error_last()->message);
  rlock_config_free(cfg); /* the client keeps a copy */
  ok = ok && demo(lock);
  rlock_lock_free(lock);
  rlock_client_free(client);
  return ok ? 0 : 1;
}
