/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pubsub.h - unlock notifications for a blocking client's waiting threads.
 *
 * The subscriber is the loop engine's (loop/lsub.c), driven by the
 * client's background thread (bg.c): per-node subscriber connections,
 * sharded pub/sub, re-subscription after a lost connection or a moved
 * slot, health PINGs, none of it waiting on one node. This file is the
 * threads' side of it: one channel front per channel, shared by every
 * local waiter of that channel (reference counted), which joins the
 * loop's channel as one waiter (rlock__lwaiter) and turns what the
 * channel tells it into wake-up permits: as many as the message wakes
 * by its channel's kind (rlock__message_wakes: a lock's "0" one, "1" all,
 * a semaphore's count, a latch's every waiter); a re-subscription wakes
 * all, as messages may have been missed. A permit released while nobody waits
 * is kept, so a message that arrives between a waiter's attempt and its sleep
 * is not lost; a spurious wake-up only costs one extra attempt.
 *
 * A front whose last user left lingers (rlock_config_set_subscription
 * _linger, at most max_idle of them) still joined, so the next wait on
 * the channel needs no SUBSCRIBE and wakes no background thread; the
 * messages it receives meanwhile wake no one.
 *
 * Direct wait: the one thread waiting alone on a front polls the
 * subscriber socket itself (peeking, never reading: the loop reads), so
 * an unlock wakes it straight from the kernel; the background thread
 * leaves that socket's input out of its poll meanwhile (bg.c).
 *
 * Locking: fronts are guarded by rlock__pubsub.mu; each has a condition
 * variable on it. What is marked "loop thread" is the background
 * thread's alone.
 */
#ifndef RLOCK_PUBSUB_H
#define RLOCK_PUBSUB_H

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "cancel.h"
#include "loop.h"
#include "map.h"

typedef struct rlock_client rlock_client;

typedef struct rlock__sub {
  char *channel;
  size_t chlen;
  int refs;              /* local waiters using this front */
  int permits;           /* released wake-ups not yet taken */
  int waiting;           /* threads blocked in rlock__sub_wait() */
  int active;            /* the loop's channel is confirmed */
  int confirmed;         /* ... has been once: a later one is a resub */
  int64_t idle_until_us; /* no users, lingering until then, or 0 */
  int pub_fd;            /* its subscriber socket (plain text), or -1 */
  int skip;              /* unlock messages acted on before the loop read
                            them (a direct waiter's, or older than the
                            wait that took it back): they wake no one */
  size_t stale;          /* bytes unread in pub_fd when it was taken back:
                            a direct waiter looks past them ... */
  uint64_t stale_gen;    /* ... until the loop reads (read_gen moves) */
  int parked;            /* its direct waiter leaves the socket alone until
                            the loop's next read (read_gen past parked_gen) */
  uint64_t parked_gen;
  uint64_t fail_gen;  /* bumped when subscribing it failed ... */
  int fail_code;      /* ... with this status ... */
  char fail_msg[320]; /* ... and message */
  pthread_cond_t cv;
  /* loop thread */
  rlock__lwaiter w;
  int joined;
  rlock_client *c;
} rlock__sub;

typedef struct rlock__pubsub {
  pthread_mutex_t mu;
  rlock__map subs;        /* channel -> rlock__sub* */
  int dirty;              /* some front must join or leave */
  struct rlock__obs *obs; /* the client's counters, set before use */
  int64_t linger_us;      /* set before use */
  int max_idle;
  int idle;             /* lingering now */
  int64_t next_idle_us; /* the earliest linger end, or 0 */
  int users;            /* fronts with users (refs > 0) */
  /* The direct waiter (at most one): the front, an eventfd the loop
   * thread writes when it hands that front a wake-up, the socket it
   * polls now (not closed until it lets go: direct_cv). */
  rlock__sub *direct;
  int direct_efd;
  int direct_fd;
  pthread_cond_t direct_cv;
  uint64_t read_gen; /* the loop thread's reads of subscriber sockets */
  /* What the loop thread's poll leaves out (bg.c): the direct waiter's
   * socket, and every subscriber socket while no thread waits (quiet:
   * read lazily, so this client's own unlock, which its lingering front
   * receives, wakes no thread at the moment of a handoff). A thread that
   * needs them read wakes it (need_reader). */
  int muted_fd;
  int muted_quiet;
  int quiet_whole;         /* ... every quiet one whole: the loop reads none of
                              them, not even a hang-up (no output waited) */
  int direct_whole;        /* the direct waiter's socket left out whole */
  int64_t lazy_due_us;     /* loop thread: quiet sockets are read then */
  atomic_int master_moved; /* Sentinel named a new master */
  rlock__ltimer linger;    /* loop thread: the earliest linger end */
} rlock__pubsub;

/* Internal status: the caller's own deadline passed while subscribing. */
#define RLOCK__EDEADLINE (-1000)

int rlock__pubsub_init(rlock__pubsub *ps);
/* After the loop's thread has stopped. */
void rlock__pubsub_destroy(rlock__pubsub *ps);

/* Take a reference on `channel`'s front and wait until the server has
 * confirmed its subscription, so that any unlock published after this
 * returns will reach us. Bounded by `deadline_us` (then RLOCK__EDEADLINE)
 * and, with one server, by the connect + command timeouts (then
 * RLOCK_ETIMEOUT); behind Sentinel or a cluster the subscriber keeps
 * trying through a failover until the deadline. Fails with an error
 * reply's status (an ACL refusing the channel), RLOCK_ENOMEM, and
 * RLOCK_ECANCELED when `cancel` (may be NULL) fires. */
int rlock__sub_acquire(rlock_client *c, const char *channel,
                       int64_t deadline_us, const rlock_cancel *cancel,
                       rlock__sub **out);

/* Sleep until a permit is released, `until_us` passes or `cancel` (may be
 * NULL) fires. Returns 1 when woken by a message (permit taken), else 0. */
int rlock__sub_wait(rlock_client *c, rlock__sub *s, int64_t until_us,
                    const rlock_cancel *cancel);

/* Drop the reference taken by rlock__sub_acquire(). */
void rlock__sub_release(rlock_client *c, rlock__sub *s);

/* ---- the background thread (bg.c) -------------------------------------- */

/* Loop thread, at each wake-up of the loop and at the earliest linger
 * end: join the fronts that have users, leave those whose linger ended,
 * free those left; follow a new Sentinel master. */
void rlock__pubsub_turn(rlock_client *c);

/* Loop thread, before poll(): leave out of fds[0..n) the input of the
 * sockets no one must read now (see muted_fd), lowering *next to when a
 * quiet one must be read. */
void rlock__pubsub_mute(rlock_client *c, struct pollfd *fds, int n,
                        int64_t *next);

/* Loop thread, after the engine handled a poll that found a subscriber
 * socket readable (1 when fds[0..n) has one). */
int rlock__pubsub_any_ready(rlock_client *c, const struct pollfd *fds, int n);
void rlock__pubsub_read_done(rlock__pubsub *ps);

/* Loop thread: the engine is about to close `fd` (lpoll's unwatch): a
 * direct waiter polling it lets go first. */
void rlock__pubsub_closing(void *arg, int fd);

#endif /* RLOCK_PUBSUB_H */
