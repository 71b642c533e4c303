/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bg.h - the client's one background thread.
 *
 * It owns the subscriber connections (subconn.c), the Sentinel
 * +switch-master watch (sentinel.c) and runs lease renewal (renewal.c's
 * rlock__bg_renew, over kinds/renew.c's steps): a poll() loop over an eventfd
 * that user threads write to when they need it, the subscriber sockets and the
 * watch's, with a timeout taken from the earliest time any part asks
 * for. It blocks every signal so that signals reach the application's
 * threads.
 */
#ifndef RLOCK_BG_H
#define RLOCK_BG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct rlock_client rlock_client;

typedef struct rlock__bg {
  pthread_t thread;
  int started;
  int wake_fd;
  atomic_int stop;
} rlock__bg;

int rlock__bg_start(rlock_client *c);
void rlock__bg_stop(rlock_client *c);

/* The renewal tick, when due (renewal.c): every batch routed, then
 * pipelined per node, each node with its own deadline. Returns when the
 * next tick is due (monotonic us), or INT64_MAX when nothing is renewed. */
int64_t rlock__bg_renew(rlock_client *c);

/* Make the background thread re-run its services soon. Any thread. Does
 * nothing in a fork()ed child of the client's process (no thread there). */
void rlock__bg_wake(rlock_client *c);

#endif /* RLOCK_BG_H */
