/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlock/watch.h - follow the messages of a lock's (semaphore's, latch's,
 * election's) channel, without waiting on it.
 *
 * A watch calls its callback with every message published on the object's
 * channel (the channel its waiters are woken through: Redisson's, see
 * docs/PROTOCOL.md): a lock's or an election's release ("0"; a read-write
 * lock's write release "1"), a semaphore's released permits (their count),
 * a latch's "0" (it reached zero) and "1" (a count was set). Taking a lock
 * or a permit publishes nothing: a watch hears holders go, not come, so a
 * caller that follows who holds re-reads the state on each message and
 * now and then (as `rlock status --watch` does).
 *
 * A fair lock's release is published on its next waiter's own channel,
 * not on the lock's: a watch on a fair lock hears only its forced
 * releases.
 *
 * A watch shares the client's subscriber with the client's waiters (one
 * subscription per channel): it is never counted among them, so it takes
 * no unlock message from a waiter and delays none (each message wakes
 * the waiters it wakes first, the watch's callback after). Cluster
 * (sharded pub/sub where the client uses it) and Sentinel as for waits:
 * the subscription follows the channel's node and a failover.
 *
 * Events, in order, on the client's loop thread (a blocking client: its
 * background thread; a loop client: the thread running its loop):
 * RLOCK_WATCH_SUBSCRIBED once the server has confirmed the subscription
 * (every message published from then on is heard; where the client was
 * subscribed to the channel already, a few messages published shortly
 * before the watch was made may be heard too); RLOCK_WATCH_MESSAGE
 * for each message; RLOCK_WATCH_LOST when the subscription is lost (its
 * connection dropped, its slot moved, a failover; told once, or at once
 * when the first subscription cannot be made yet): messages may be
 * missed until RLOCK_WATCH_RESUMED, which comes when it is confirmed again
 * (re-read what the messages would have told); RLOCK_WATCH_FAILED when
 * the server refused the subscription (an ACL: rlock_error_last() holds
 * the status and message during the callback): the watch then hears
 * nothing more.
 *
 * The callback must return promptly and must not call a blocking function
 * of the watch's client (on a blocking client it runs on the thread that
 * serves those calls: they would deadlock); a loop client's _async
 * functions and rlock_watch_free() of any watch are allowed.
 *
 * Threading: rlock_watch_* may be called from any thread. On a loop
 * client, called from another thread, they hand their work to the loop
 * (rlock_loop's wake), and rlock_watch_free() then waits for the loop to
 * run it: the loop must be running.
 */
#ifndef RLOCK_WATCH_H
#define RLOCK_WATCH_H

#include <stddef.h>

#include "client.h"
#include "election.h"
#include "export.h"
#include "latch.h"
#include "lock.h"
#include "semaphore.h"

RLOCK_BEGIN_DECLS

typedef struct rlock_watch rlock_watch;

/** What a watch's callback is told. */
typedef enum rlock_watch_event {
  RLOCK_WATCH_SUBSCRIBED = 1, /* the subscription is confirmed */
  RLOCK_WATCH_MESSAGE = 2,    /* a message: payload, len */
  RLOCK_WATCH_LOST = 3,       /* not subscribed: messages may be missed */
  RLOCK_WATCH_RESUMED = 4,    /* subscribed again: re-read the state */
  RLOCK_WATCH_FAILED = 5      /* refused (rlock_error_last()); over */
} rlock_watch_event;

/**
 * A watch's callback. `payload` (not NUL-terminated in general; `len`
 * bytes) is borrowed for the call and NULL (len 0) but for
 * RLOCK_WATCH_MESSAGE. `arg` is the one given when the watch was made.
 */
typedef void (*rlock_watch_fn)(void *arg, rlock_watch_event event,
                               const char *payload, size_t len);

/**
 * Watch `lock`'s channel (any kind; a fair lock's: above). Does no I/O on
 * the calling thread: the subscription is made on the client's loop.
 * @param out receives the watch; free it with rlock_watch_free() before
 *            the lock object and the client.
 * @param fn called as described above; never after rlock_watch_free()
 *           has returned.
 * @return RLOCK_OK; RLOCK_EINVAL (NULL out, lock or fn); RLOCK_ECLOSED
 *         (in a fork()ed child of the client's process, or a loop client
 *         being freed); RLOCK_ENOMEM; each with a message.
 */
RLOCK_EXTERN int rlock_watch_lock(rlock_watch **out, rlock_lock *lock,
                                  rlock_watch_fn fn, void *arg);

/** As rlock_watch_lock(), on a semaphore's channel (its released permits'
 * counts). */
RLOCK_EXTERN int rlock_watch_semaphore(rlock_watch **out,
                                       rlock_semaphore *semaphore,
                                       rlock_watch_fn fn, void *arg);

/** As rlock_watch_lock(), on a permit-expirable semaphore's channel. */
RLOCK_EXTERN int rlock_watch_psemaphore(rlock_watch **out,
                                        rlock_psemaphore *semaphore,
                                        rlock_watch_fn fn, void *arg);

/** As rlock_watch_lock(), on a latch's channel. */
RLOCK_EXTERN int rlock_watch_latch(rlock_watch **out, rlock_latch *latch,
                                   rlock_watch_fn fn, void *arg);

/** As rlock_watch_lock(), on an election's channel (its fenced lock's:
 * a resignation, or a leader's release). */
RLOCK_EXTERN int rlock_watch_election(rlock_watch **out,
                                      rlock_election *election,
                                      rlock_watch_fn fn, void *arg);

/** The channel a watch follows. Borrowed: valid as long as the watch. */
RLOCK_EXTERN const char *rlock_watch_channel(const rlock_watch *w);

/**
 * Stop a watch and free it: once it returns, its callback is not running
 * and will not run again (from inside the callback: at once). The
 * subscription goes once no waiter or watch of the client uses it (after
 * the client's subscription linger). NULL is accepted.
 */
RLOCK_EXTERN void rlock_watch_free(rlock_watch *w);

RLOCK_END_DECLS

#endif /* RLOCK_WATCH_H */
