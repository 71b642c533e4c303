/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pubsub.h - unlock notifications for waiting threads.
 *
 * One subscription per channel, shared by every local waiter of that
 * channel (reference counted) and dropped when the last one leaves. Each
 * subscription carries a counting semaphore: an unlock message "0"
 * releases one permit (wakes one waiter), "1" releases one per waiting
 * thread (wakes all). A permit released while nobody waits is kept, so a
 * message that arrives between a waiter's attempt and its sleep is not
 * lost; a spurious wake-up only costs one extra attempt.
 *
 * Subscriber connections (subconn.c) belong to the background thread:
 * with classic pub/sub one per client, on any node (a cluster forwards
 * PUBLISH to every node); with sharded pub/sub (a cluster whose servers
 * have it) one per node that owns a waited-for channel's slot, using
 * SSUBSCRIBE. A subscription the server drops by itself (its slot moved:
 * an unasked sunsubscribe), or whose connection breaks, is redone where
 * its channel now lives and its waiters are woken once, as unlocks may
 * have been missed meanwhile.
 *
 * Locking: subscriptions are guarded by rlock__pubsub.mu; each has a
 * condition variable on it. Connections are the background thread's.
 */
#ifndef RLOCK_PUBSUB_H
#define RLOCK_PUBSUB_H

#include <poll.h>
#include <pthread.h>
#include <stdint.h>

#include "cancel.h"
#include "map.h"

typedef struct rlock_client rlock_client;
typedef struct rlock__subconn rlock__subconn;

enum rlock__sub_state {
  RLOCK__SUB_NONE,         /* not subscribed on the server */
  RLOCK__SUB_PENDING,      /* (S)SUBSCRIBE sent, not confirmed */
  RLOCK__SUB_ACTIVE,       /* confirmed: messages will arrive */
  RLOCK__SUB_UNSUB_PENDING /* (S)UNSUBSCRIBE sent, not confirmed */
};

typedef struct rlock__sub {
  char *channel;
  size_t chlen;
  int refs;        /* local waiters using this subscription */
  int state;       /* enum rlock__sub_state */
  int permits;     /* released wake-ups not yet taken */
  int waiting;     /* threads blocked in rlock__sub_wait() */
  int resub;       /* re-subscribing after a lost connection or moved slot */
  int64_t sent_us; /* when the pending (UN)SUBSCRIBE went out */
  int64_t idle_until_us; /* no users, but kept subscribed until then for
                            the next waiter (linger), or 0 */
  rlock__subconn *on;    /* the connection it is (to be) subscribed on */
  int skip;              /* unlock messages its direct waiter has acted on
                            before the background thread read them: their
                            delivery wakes no one */
  int parked;            /* its direct waiter leaves the socket alone until
                            the background thread's next read (read_gen
                            past parked_gen) */
  uint64_t parked_gen;
  uint64_t fail_gen;  /* bumped when subscribing it failed ... */
  int fail_code;      /* ... with this status ... */
  char fail_msg[320]; /* ... and message */
  pthread_cond_t cv;
} rlock__sub;

typedef struct rlock__pubsub {
  pthread_mutex_t mu;
  rlock__map subs;        /* channel -> rlock__sub* */
  int dirty;              /* some subscription needs (un)subscribing */
  int short_of_memory;    /* ... and could not be served for lack of it */
  int sharded;            /* SSUBSCRIBE on the slot owner (cluster); set by the
                             background thread from the topology */
  struct rlock__obs *obs; /* the client's counters, set before use */
  /* Linger (rlock_config_set_subscription_linger): an active subscription
   * whose last user left stays for linger_us, at most max_idle of them,
   * so the next wait on the channel needs no SUBSCRIBE (and the server
   * no UNSUBSCRIBE). Set before use. */
  int64_t linger_us;
  int max_idle;
  int idle;             /* lingering now */
  int64_t next_idle_us; /* the earliest linger end, or 0 */
  /* Direct wait: the one thread waiting alone on a subscription polls the
   * subscriber socket itself (and this eventfd, which the background
   * thread writes when it hands that subscription a wake-up), so an
   * unlock wakes it straight from the kernel, not through the background
   * thread. At most one at a time. */
  rlock__sub *direct;
  int direct_efd;
  int direct_fd; /* the socket it polls or peeks at, or -1 */
  /* Subscriptions with users (refs > 0). The background thread leaves a
   * connection out of its poll while a direct waiter watches it (so an
   * unlock message wakes one thread, not two) and while users is 0 (see
   * rlock__subconn.polled); a thread that needs it read again wakes it
   * (need_reader in pubsub.c). */
  int users;
  pthread_cond_t direct_cv; /* signalled when it lets go of direct_fd */
  /* background thread only */
  rlock__subconn **conns;
  size_t nconns;
} rlock__pubsub;

/* The socket the direct waiter watches now (it peeks at what arrives
 * before the background thread may read it), or -1: none, or it is parked
 * until the background thread's next read. Called locked. */
int rlock__pubsub_direct_fd(const rlock__pubsub *ps);

/* Internal status: the caller's own deadline passed while subscribing. */
#define RLOCK__EDEADLINE (-1000)

int rlock__pubsub_init(rlock__pubsub *ps);
void rlock__pubsub_destroy(rlock__pubsub *ps);

/* Take a reference on `channel`'s subscription and wait until the server
 * has confirmed it, so that any unlock published after this returns will
 * reach us. Bounded by `deadline_us` (then RLOCK__EDEADLINE) and, with one
 * server, by the connect + command timeouts (then RLOCK_ETIMEOUT), failing
 * with the subscriber's connection error when it cannot connect (behind
 * Sentinel or a cluster the subscriber keeps trying through a failover
 * until the deadline); fails with an error reply's status (an ACL refusing
 * the channel) and with RLOCK_ECANCELED when `cancel` (may be NULL) fires. */
int rlock__sub_acquire(rlock_client *c, const char *channel,
                       int64_t deadline_us, const rlock_cancel *cancel,
                       rlock__sub **out);

/* Sleep until a permit is released, `until_us` passes or `cancel` (may be
 * NULL) fires. Returns 1 when woken by a message (permit taken), else 0. */
int rlock__sub_wait(rlock_client *c, rlock__sub *s, int64_t until_us,
                    const rlock_cancel *cancel);

/* For the background thread, locked, about an active subscription nobody
 * uses: 1 while it lingers (keeping ps->next_idle_us at the earliest
 * end), else 0: unsubscribe it now. */
int rlock__sub_lingers(rlock__pubsub *ps, rlock__sub *s, int64_t now_us);

/* The background thread is about to close `fd`, a subscriber socket
 * (locked, after unpublishing it): wait until a direct waiter using it
 * lets go, so it never polls or peeks at a closed (or reused) descriptor. */
void rlock__pubsub_closing(rlock__pubsub *ps, int fd);

/* The background thread has read what arrived on `on` (locked): a direct
 * waiter on it may poll its socket again. */
void rlock__pubsub_read_done(rlock__pubsub *ps, rlock__subconn *on);

/* A drain asked for by rlock__sub_acquire is done (the connection's
 * drained_gen moved): wake its waiter. Called locked. */
void rlock__pubsub_drained(rlock__pubsub *ps);

/* Drop the reference taken by rlock__sub_acquire(). */
void rlock__sub_release(rlock_client *c, rlock__sub *s);

/* ---- background thread (subconn.c) ----------------------------------- */

/* Fill fds (room for `max`) with the subscriber connections to poll for
 * input; returns how many, and lowers *next (monotonic us) to when a
 * quiet connection left out must be read. */
int rlock__pubsub_pollfds(rlock_client *c, struct pollfd *fds, int max,
                          int64_t *next);

/* Read what the polled connections have (fds as filled by
 * rlock__pubsub_pollfds, revents set by poll; n may be 0), (re)connect,
 * send pending (UN)SUBSCRIBEs, check the connections' health. Returns
 * when it next wants to run (monotonic us), INT64_MAX when only an event
 * can give it work. */
int64_t rlock__pubsub_service(rlock_client *c, const struct pollfd *fds, int n);

/* Called locked by the background side: deliver a message or a
 * confirmation read on `on` (subproto.h's reading of the push). */
struct rlock__push;
void rlock__pubsub_push(rlock__pubsub *ps, rlock__subconn *on,
                        const struct rlock__push *push);

/* Called locked: subscribing on `on` failed; its waiters are told. */
void rlock__pubsub_fail(rlock__pubsub *ps, rlock__subconn *on, int code,
                        const char *msg);

/* Called locked: free the subscriptions nobody uses that are off the
 * server. */
void rlock__pubsub_sweep(rlock__pubsub *ps);

/* Called locked: `on` broke or is being closed; its subscriptions must be
 * redone (with `reroute`, on whatever node now owns their channel). */
void rlock__pubsub_lost(rlock__pubsub *ps, rlock__subconn *on, int reroute);

#endif /* RLOCK_PUBSUB_H */
