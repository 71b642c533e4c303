/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_sync.c - the semaphores next to the lock, in one run.
 *
 * Uncontended: one thread, one client; each step times, in turn, a lock
 * pair (rlock_lock_acquire + rlock_lock_release, watchdog lease), a
 * semaphore pair (rlock_semaphore_acquire of 1 permit + release) and a
 * permit-expirable semaphore pair (rlock_psemaphore_acquire with a fixed
 * lease + release), step by step so that noise hits them alike
 * (bench_uncontended.c says why).
 *
 * Handoff: two threads of one client; the holder holds (the lock, or the
 * semaphore's only permit), the waiter is asleep in its wait; the time
 * from the holder's release call to the waiter's acquisition returning.
 * Lock and semaphore rounds alternate.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

enum { SYNC_LOCK, SYNC_SEM, SYNC_PSEM, SYNC_KINDS };
static const char *const SYNC_NAMES[SYNC_KINDS] = {"lock", "semaphore",
                                                   "psemaphore"};

typedef struct objs {
  rlock_lock *lock;
  rlock_semaphore *sem;
  rlock_psemaphore *psem;
} objs;

static int objs_new(objs *o, rlock_client *c) {
  char k[3][96];
  long pid = (long)getpid();
  bench_key(k[0], sizeof k[0], "bench:sync:lock", pid);
  bench_key(k[1], sizeof k[1], "bench:sync:sem", pid);
  bench_key(k[2], sizeof k[2], "bench:sync:psem", pid);
  int rc = rlock_lock_new(&o->lock, c, k[0]);
  if (rc == RLOCK_OK)
    rc = rlock_semaphore_new(&o->sem, c, k[1]);
  if (rc == RLOCK_OK)
    rc = rlock_psemaphore_new(&o->psem, c, k[2]);
  if (rc == RLOCK_OK)
    rc = rlock_semaphore_set_permits(o->sem, 1);
  if (rc == RLOCK_OK)
    rc = rlock_psemaphore_set_permits(o->psem, 1);
  return rc;
}

static void objs_free(objs *o) {
  rlock_lock_free(o->lock);
  rlock_semaphore_free(o->sem);
  rlock_psemaphore_free(o->psem);
}

static int pair(objs *o, int kind) {
  char id[RLOCK_PERMIT_ID_LEN + 1];
  int rc;
  switch (kind) {
  case SYNC_LOCK:
    rc = rlock_lock_acquire(o->lock);
    return rc == RLOCK_OK ? rlock_lock_release(o->lock) : rc;
  case SYNC_SEM:
    rc = rlock_semaphore_acquire(o->sem, 1, 0, NULL);
    return rc == RLOCK_OK ? rlock_semaphore_release(o->sem, 1) : rc;
  default:
    rc = rlock_psemaphore_acquire(id, o->psem, 0, 30000, NULL);
    return rc == RLOCK_OK ? rlock_psemaphore_release(o->psem, id) : rc;
  }
}

static int uncontended(objs *o, long ops, bench_samples *s) {
  for (int k = 0; k < SYNC_KINDS; k++)
    for (int i = 0; i < 50; i++) /* warm: scripts loaded, pools open */
      if (pair(o, k) != RLOCK_OK)
        return bench_fail_rc(SYNC_NAMES[k], rlock_error_last()->code);
  for (long i = 0; i < ops; i++)
    for (int j = 0; j < SYNC_KINDS; j++) {
      int k = (int)((i + j) % SYNC_KINDS); /* each first in turn */
      int64_t t0 = bench_now_ns();
      if (pair(o, k) != RLOCK_OK)
        return bench_fail_rc(SYNC_NAMES[k], rlock_error_last()->code);
      bench_samples_push(&s[k], bench_now_ns() - t0);
    }
  return 0;
}

/* ---- handoff ------------------------------------------------------------ */

/* One waiter thread for both kinds, round r on kind r % 2: the two kinds'
 * handoffs alternate one by one, so a change in the machine's speed
 * (other processes, frequency) during the run weighs on both alike. */
typedef struct hand {
  objs *o;
  long rounds;
  atomic_int phase;      /* odd: the holder holds, the waiter may wait */
  atomic_llong released; /* when the holder called release (ns) */
  bench_samples *s;      /* one per kind */
  int rc;
} hand;

static int take(objs *o, int kind, int64_t wait) {
  if (kind == SYNC_LOCK)
    return rlock_lock_try_acquire_cancel(o->lock, wait, RLOCK_LEASE_WATCHDOG,
                                         NULL);
  return rlock_semaphore_acquire(o->sem, 1, wait, NULL);
}

static int give(objs *o, int kind) {
  return kind == SYNC_LOCK ? rlock_lock_release(o->lock)
                           : rlock_semaphore_release(o->sem, 1);
}

/* The waiter: waits for each round's hold, then takes and gives back. */
static void *waiter(void *arg) {
  hand *h = arg;
  for (long r = 0; r < h->rounds; r++) {
    int kind = (int)(r % 2);
    while (atomic_load(&h->phase) != (int)(2 * r + 1))
      bench_sleep_us(20); /* no spinning: 2 cores, the holder's thread */
    int rc = take(h->o, kind, RLOCK_WAIT_FOREVER);
    int64_t got = bench_now_ns();
    if (rc == RLOCK_OK)
      bench_samples_push(&h->s[kind], got - atomic_load(&h->released));
    if (rc != RLOCK_OK || (rc = give(h->o, kind)) != RLOCK_OK) {
      h->rc = rc;
      atomic_store(&h->phase, -1);
      return NULL;
    }
    atomic_store(&h->phase, (int)(2 * r + 2));
  }
  return NULL;
}

/* `rounds` handoffs to the waiter, lock and semaphore in turn. */
static int handoffs(objs *o, long rounds, bench_samples *s) {
  hand h = {.o = o, .rounds = rounds, .s = s};
  pthread_t t;
  if (pthread_create(&t, NULL, waiter, &h) != 0)
    return bench_fail("pthread_create");
  int rc = RLOCK_OK, kind = 0;
  for (long r = 0; r < rounds && rc == RLOCK_OK; r++) {
    kind = (int)(r % 2);
    if ((rc = take(o, kind, 0)) != RLOCK_OK)
      break;
    atomic_store(&h.phase, (int)(2 * r + 1));
    bench_sleep_us(2000); /* the waiter is asleep in its wait by then */
    atomic_store(&h.released, bench_now_ns());
    rc = give(o, kind);
    while (rc == RLOCK_OK && atomic_load(&h.phase) != (int)(2 * r + 2) &&
           atomic_load(&h.phase) != -1)
      bench_sleep_us(20); /* a spinning holder would slow the handoff */
    if (atomic_load(&h.phase) == -1)
      rc = h.rc;
  }
  if (rc != RLOCK_OK)
    atomic_store(&h.phase, -1);
  pthread_join(t, NULL);
  return rc == RLOCK_OK ? 0 : bench_fail_rc(SYNC_NAMES[kind], rc);
}

int bench_sync(const bench_args *a) {
  rlock_client *c = bench_client_new(a->url);
  if (c == NULL)
    return BENCH_EXIT_FAIL;
  objs o = {0};
  bench_samples s[SYNC_KINDS], hs[2];
  int rc = objs_new(&o, c) == RLOCK_OK ? 0 : BENCH_EXIT_FAIL;
  for (int k = 0; k < SYNC_KINDS; k++)
    bench_samples_init(&s[k], (size_t)a->ops);
  long rounds = a->ops / 20 > 50 ? a->ops / 20 : 50;
  for (int k = 0; k < 2; k++)
    bench_samples_init(&hs[k], (size_t)rounds);
  if (rc == 0)
    rc = uncontended(&o, a->ops, s);
  if (rc == 0)
    rc = handoffs(&o, 2 * rounds, hs);
  if (rc == 0) {
    bench_report rep;
    bench_report_begin(&rep, a->json, "sync");
    bench_report_int(&rep, "pairs", a->ops);
    for (int k = 0; k < SYNC_KINDS; k++) {
      char key[64];
      snprintf(key, sizeof key, "%s_pair_p50_us", SYNC_NAMES[k]);
      bench_report_num(&rep, key, bench_samples_us(&s[k], 50), 1);
      snprintf(key, sizeof key, "%s_pair_p99_us", SYNC_NAMES[k]);
      bench_report_num(&rep, key, bench_samples_us(&s[k], 99), 1);
    }
    double lock = bench_samples_us(&s[SYNC_LOCK], 50);
    bench_report_num(&rep, "semaphore_vs_lock",
                     bench_samples_us(&s[SYNC_SEM], 50) / lock, 3);
    bench_report_num(&rep, "psemaphore_vs_lock",
                     bench_samples_us(&s[SYNC_PSEM], 50) / lock, 3);
    bench_report_int(&rep, "handoffs", (long long)hs[0].n);
    bench_report_num(&rep, "lock_handoff_p50_us", bench_samples_us(&hs[0], 50),
                     1);
    bench_report_num(&rep, "semaphore_handoff_p50_us",
                     bench_samples_us(&hs[1], 50), 1);
    bench_report_num(
        &rep, "semaphore_handoff_vs_lock",
        bench_samples_us(&hs[1], 50) / bench_samples_us(&hs[0], 50), 3);
    bench_report_end(&rep);
  }
  for (int k = 0; k < SYNC_KINDS; k++)
    bench_samples_free(&s[k]);
  for (int k = 0; k < 2; k++)
    bench_samples_free(&hs[k]);
  objs_free(&o);
  rlock_client_free(c);
  return rc;
}
