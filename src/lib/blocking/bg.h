/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bg.h - a blocking client's one background thread.
 *
 * It runs the loop engine (loop/) on the library's poll() adapter
 * (loop/lpoll.c): the watchdog's renewals (loop/lrenew.c), the subscriber
 * and the Sentinel +switch-master watch (loop/lsub.c), with their
 * connections, its timers and its inbox; at each wake-up of the loop it
 * also joins and leaves the waiting threads' channel fronts (pubsub.c).
 * One poll() over the engine's descriptors and its eventfd (which user
 * threads write when they need the thread), less the subscriber input
 * pubsub.c mutes (a direct waiter's socket, quiet sockets), with the
 * engine's timer as its timeout. Nothing waits anywhere else on a
 * server's answer, so a node that does not answer delays no unlock
 * message and no other node's renewal. It blocks every signal so that
 * signals reach the application's threads.
 */
#ifndef RLOCK_BG_H
#define RLOCK_BG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "loop.h"

typedef struct rlock_client rlock_client;
struct pollfd;

typedef struct rlock__bg {
  pthread_t thread;
  int started;
  rlock__lpoll lp; /* the loop engine's adapter (its eventfd wakes us) */
  atomic_int stop;
} rlock__bg;

int rlock__bg_start(rlock_client *c);
void rlock__bg_stop(rlock_client *c);

/* Make the background thread re-run its services soon. Any thread. Does
 * nothing in a fork()ed child of the client's process (no thread there). */
void rlock__bg_wake(rlock_client *c);

#endif /* RLOCK_BG_H */
