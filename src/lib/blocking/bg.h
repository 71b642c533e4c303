/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bg.h - the client's one background thread.
 *
 * It owns the subscriber connections (subconn.c), the Sentinel
 * +switch-master watch (sentinel.c) and runs lease renewal (renewal.c's
 * rlock__bg_renew, over kinds/renew.c's steps): one poll() loop over an
 * eventfd that user threads write to when they need it, the subscriber
 * sockets, the watch's and the renewal tick's connections, with a timeout
 * taken from the earliest time any part asks for. No part waits
 * anywhere else on a server's answer, so a node that does not answer
 * delays no unlock message. It blocks every signal so that signals reach the
 * application's threads.
 */
#ifndef RLOCK_BG_H
#define RLOCK_BG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "loop.h"

typedef struct rlock_client rlock_client;
struct pollfd;

/* Renewal sockets the thread polls at once (nodes under way in one tick;
 * the others start as those finish). */
#define RLOCK__BG_RENEW_FDS 64

typedef struct rlock__bg {
  pthread_t thread;
  int started;
  rlock__lpoll lp; /* the loop engine's adapter (its eventfd wakes us) */
  atomic_int stop;
  struct rlock__bg_ticker *renew; /* the renewal tick under way (renewal.c) */
} rlock__bg;

int rlock__bg_start(rlock_client *c);
void rlock__bg_stop(rlock_client *c);

/* The renewal tick (renewal.c), carried by the thread's poll loop: every
 * batch routed, then pipelined per node, each node with its own deadline.
 * `fds` are the n renewal entries of the last poll (as
 * rlock__bg_renew_pollfds filled them; n 0 when poll() returned nothing):
 * their replies are read, nodes past their deadline failed, and a tick
 * that is through ended; a new one starts when due. Never waits. Returns
 * when it next needs the thread (monotonic us): a node's deadline while a
 * tick is under way, else when the next tick is due (INT64_MAX: nothing
 * to renew). */
int64_t rlock__bg_renew(rlock_client *c, const struct pollfd *fds, int n);

/* The sockets the tick under way waits on (at most `max`, and
 * RLOCK__BG_RENEW_FDS): how many were written to fds. */
int rlock__bg_renew_pollfds(rlock_client *c, struct pollfd *fds, int max);

/* The thread is stopping: a tick under way is given up quietly (its
 * in-flight marks cleared, its connections dropped). */
void rlock__bg_renew_stop(rlock_client *c);

/* Make the background thread re-run its services soon. Any thread. Does
 * nothing in a fork()ed child of the client's process (no thread there). */
void rlock__bg_wake(rlock_client *c);

#endif /* RLOCK_BG_H */
