/*
 * pubsub.h - unlock notifications for waiting threads.
 *
 * One subscriber connection per client, owned by the background thread.
 * One subscription per channel, shared by every local waiter of that
 * channel (reference counted) and dropped when the last one leaves.
 * Each subscription carries a counting semaphore: an unlock message "0"
 * releases one permit (wakes one waiter), "1" releases one per waiting
 * thread (wakes all). A permit released while nobody waits is kept, so a
 * message that arrives between a waiter's attempt and its sleep is not
 * lost; a spurious wake-up only costs one extra attempt.
 *
 * Locking: everything below is guarded by rlock__pubsub.mu. Only the
 * background thread touches `conn`.
 */
#ifndef RLOCK_PUBSUB_H
#define RLOCK_PUBSUB_H

#include <pthread.h>
#include <stdint.h>

#include "cancel.h"
#include "conn.h"
#include "map.h"

typedef struct rlock_client rlock_client;

enum rlock__sub_state {
  RLOCK__SUB_NONE,          /* not subscribed on the server */
  RLOCK__SUB_PENDING,       /* SUBSCRIBE sent, not confirmed */
  RLOCK__SUB_ACTIVE,        /* confirmed: messages will arrive */
  RLOCK__SUB_UNSUB_PENDING  /* UNSUBSCRIBE sent, not confirmed */
};

typedef struct rlock__sub {
  char *channel;
  size_t chlen;
  int refs;    /* local waiters using this subscription */
  int state;   /* enum rlock__sub_state */
  int permits; /* released wake-ups not yet taken */
  int waiting; /* threads blocked in rlock__sub_wait() */
  int resub;   /* re-subscribing after a lost connection */
  int64_t sent_us; /* when the pending (UN)SUBSCRIBE went out */
  pthread_cond_t cv;
} rlock__sub;

typedef struct rlock__pubsub {
  pthread_mutex_t mu;
  rlock__map subs;   /* channel -> rlock__sub* */
  rlock__conn *conn; /* subscriber connection, or NULL */
  int dirty;         /* some subscription needs (un)subscribing */
  uint64_t fail_gen; /* bumped when connecting the subscriber fails */
  int fail_code;
  char fail_msg[320];
  int64_t reconnect_at_us;
  int64_t backoff_ms;
  int64_t last_rx_us;   /* last time the subscriber connection said anything */
  int64_t ping_sent_us; /* an unanswered PING, or 0 */
} rlock__pubsub;

/* Internal status: the caller's own deadline passed while subscribing. */
#define RLOCK__EDEADLINE (-1000)

int rlock__pubsub_init(rlock__pubsub *ps);
void rlock__pubsub_destroy(rlock__pubsub *ps);

/* Take a reference on `channel`'s subscription and wait until the server
 * has confirmed it, so that any unlock published after this returns will
 * reach us. Bounded by `deadline_us` (then RLOCK__EDEADLINE) and by the
 * connect + command timeouts (then RLOCK_ETIMEOUT); fails with the
 * subscriber's connection error when it cannot connect, and with
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

/* Background thread: the fd to poll for messages, or -1. */
int rlock__pubsub_fd(rlock_client *c);

/* Background thread: read messages when `readable`, (re)connect, send
 * pending (UN)SUBSCRIBEs. Returns when it next wants to run (monotonic
 * us), INT64_MAX when only an event can give it work. */
int64_t rlock__pubsub_service(rlock_client *c, int readable);

#endif /* RLOCK_PUBSUB_H */
