/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * subproto.h - Redis pub/sub and Redisson's messages as the subscriber
 * (loop/lsub.c, which a blocking client's background thread runs too)
 * speaks them: the node a channel is subscribed on, the words to send,
 * what a push says, what a message wakes, and the timings of
 * re-subscription and health checks.
 */
#ifndef RLOCK_SUBPROTO_H
#define RLOCK_SUBPROTO_H

#include <stddef.h>
#include <stdint.h>

#include "reply.h"
#include "topo.h"

/* Re-subscribing after a failure backs off from 25 ms to 1 s. The
 * blocking subscriber resets it only on a confirmed subscription; the
 * loop's (loop/lsub.c) backs off only while a subscription cannot be
 * queued, and tries again at once after a failed connection. */
#define RLOCK__RESUB_MIN_MS 25
#define RLOCK__RESUB_MAX_MS 1000
/* A subscriber connection silent this long is sent a PING; no answer
 * within the command timeout drops it. */
#define RLOCK__SUB_PING_IDLE_US ((int64_t)30 * 1000 * 1000)

/* The node a channel is subscribed on, as the map stands (no I/O): the
 * owner of the channel's slot with sharded pub/sub, else the primary (a
 * single server, Sentinel's master, any node of a cluster, which forwards
 * PUBLISH everywhere). NULL while the topology does not know. */
rlock__node *rlock__sub_node(rlock__topo *t, int sharded, const char *channel);

/* The command that subscribes (unsub 0) or unsubscribes (1). */
const char *rlock__sub_word(int sharded, int unsub);

typedef enum rlock__push_kind {
  RLOCK__PUSH_OTHER,       /* nothing to act on */
  RLOCK__PUSH_MESSAGE,     /* (s)message: channel, payload */
  RLOCK__PUSH_SUBSCRIBED,  /* (s)subscribe confirmed: channel */
  RLOCK__PUSH_UNSUBSCRIBED /* (s)unsubscribe: confirmed, or (sharded) the
                              server dropped it: its slot moved */
} rlock__push_kind;

typedef struct rlock__push {
  rlock__push_kind kind;
  const char *channel; /* borrowed from the reply */
  size_t chlen;
  const char *payload; /* a message's, or NULL */
  size_t paylen;       /* its length */
  int pong;            /* a PING's answer (kind OTHER) */
} rlock__push;

/* Read a reply from a subscriber connection (not an error reply). */
void rlock__push_read(const rlock__reply *r, rlock__push *out);

/* The raw bytes at the head of a subscriber socket (peeked, with nothing
 * of the connection buffered in its reader): the length of the leading
 * run of complete (s)message pushes (RESP2 "*3" or RESP3 ">3", three bulk
 * strings), 0 when the head is anything else (a confirmation, a PONG, a
 * push cut short by the end of `buf`). Such a run may be dropped unparsed
 * where every message is known to be stale. */
size_t rlock__push_messages_len(const char *buf, size_t n);

/* Redisson's unlock messages: "1" (a read-write unlock) wakes every
 * waiter; anything else ("0") wakes one. */
int rlock__unlock_wakes_all(const char *payload);

/* What a message wakes, by its channel's kind (Redisson's pub/sub
 * classes), for both subscribers: how many sleeping waiters of the
 * channel try again, RLOCK__WAKE_ALL for every one.
 *  - "redisson_sc:..." (SemaphorePubSub): the number published, the
 *    permits now available (0 and below: none).
 *  - "redisson_countdownlatch__channel__..." (CountDownLatchPubSub): every
 *    waiter, which reads the count again: "0" (zero reached), and also
 *    "1" (a new count), which Redisson's delete sends too, where its own
 *    waiters sleep on until their wait ends.
 *  - a lock's channel (LockPubSub): rlock__unlock_wakes_all's rule. */
#define RLOCK__WAKE_ALL INT64_MAX
int64_t rlock__message_wakes(const char *channel, size_t chlen,
                             const char *payload);

/* An error reply to (S)SUBSCRIBE that means "not here" (MOVED: a sharded
 * channel's slot is served elsewhere), to be redone after a refresh,
 * rather than a refusal (an ACL) that fails the waiters. */
int rlock__sub_error_moved(const rlock__reply *r);

#endif /* RLOCK_SUBPROTO_H */
