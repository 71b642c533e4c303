/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_bare.c - the floor: Redisson's protocol on a bare single-threaded
 * hiredis client, for the handoff and contended workloads' comparisons
 * (turns_impl bench_bare_impl, turns.h).
 *
 * Two connections: one SUBSCRIBEd to the lock's channel
 * (redisson_lock__channel:{NAME}) from before the start to the end, and
 * one for the library's own lock_acquire and lock_release scripts by
 * EVALSHA (raw.c, byte-for-byte the library's commands; the release
 * script publishes the unlock message). A wait: drop what the subscriber
 * has received since the last one (non-blocking), attempt, and while the
 * lock is held block in read() on the subscriber socket (redisGetReply)
 * until a message arrives, then attempt again.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "turns.h"

/* The bare subscriber's read timeout beyond the hold: a message must come
 * within it, or the run fails (a lost unlock message). */
#define SUB_TIMEOUT_S 10

typedef struct bare {
  redisContext *cmd; /* the scripts */
  redisContext *sub; /* subscribed to the lock's channel throughout */
  bench_lock_cmds lk;
} bare;

static int bare_open(void **state, const turns_spec *sp, const char *lock) {
  bare *b = calloc(1, sizeof *b);
  *state = b;
  if (b == NULL)
    return bench_fail("out of memory"), -1;
  bench_lock_cmds_init(&b->lk, lock);
  if ((b->cmd = bench_raw_connect(sp->a->url)) == NULL ||
      (b->sub = bench_raw_connect(sp->a->url)) == NULL)
    return -1;
  const char *argv[2] = {"SUBSCRIBE", b->lk.channel};
  redisReply *r = bench_raw_cmd(b->sub, 2, argv, NULL);
  int ok = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 3;
  freeReplyObject(r);
  if (!ok)
    return bench_fail("SUBSCRIBE %s: unexpected reply", b->lk.channel), -1;
  long hold = sp->hold_max_us > sp->hold_us ? sp->hold_max_us : sp->hold_us;
  struct timeval tv = {SUB_TIMEOUT_S + hold / 1000000, 0};
  redisSetTimeout(b->sub, tv);
  return 0;
}

static void bare_close(void *state) {
  bare *b = state;
  if (b == NULL)
    return;
  if (b->cmd != NULL)
    redisFree(b->cmd);
  if (b->sub != NULL)
    redisFree(b->sub);
  free(b);
}

/* Drop every message received so far (our own release's, or ones that
 * arrived after the wait they woke had ended), without blocking. */
static int drain(bare *b) {
  for (;;) {
    void *r;
    do {
      r = NULL;
      if (redisGetReplyFromReader(b->sub, &r) != REDIS_OK)
        return bench_fail("bare subscriber: %s", b->sub->errstr), -1;
      freeReplyObject(r);
    } while (r != NULL);
    struct pollfd p = {.fd = b->sub->fd, .events = POLLIN};
    int n = poll(&p, 1, 0);
    if (n == 0)
      return 0;
    if (n < 0 && errno != EINTR)
      return bench_fail("bare subscriber: poll: %s", strerror(errno)), -1;
    if (n > 0 && redisBufferRead(b->sub) != REDIS_OK)
      return bench_fail("bare subscriber: %s", b->sub->errstr), -1;
  }
}

/* Block in read() until a message arrives on the subscriber. */
static int wait_message(bare *b) {
  for (;;) {
    void *p = NULL;
    if (redisGetReply(b->sub, &p) != REDIS_OK || p == NULL)
      return bench_fail("bare subscriber: %s", b->sub->errstr), -1;
    redisReply *m = p;
    int message = m->type == REDIS_REPLY_ARRAY && m->elements == 3 &&
                  m->element[0]->type == REDIS_REPLY_STRING &&
                  strcmp(m->element[0]->str, "message") == 0;
    freeReplyObject(m);
    if (message)
      return 0;
  }
}

static int bare_acquire(void *state) {
  bare *b = state;
  if (drain(b) != 0)
    return -1;
  for (;;) {
    redisReply *r = bench_raw_cmd(b->cmd, 6, b->lk.acq, NULL);
    if (r == NULL)
      return -1;
    int type = r->type;
    freeReplyObject(r);
    if (type == REDIS_REPLY_NIL)
      return 0; /* taken */
    if (type != REDIS_REPLY_INTEGER)
      return bench_fail("bare waiter: lock_acquire answered type %d", type), -1;
    if (wait_message(b) != 0) /* held: its TTL was the answer */
      return -1;
  }
}

static int bare_release(void *state) {
  bare *b = state;
  redisReply *r = bench_raw_cmd(b->cmd, 11, b->lk.rel, NULL);
  int ok = r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
  if (r != NULL && !ok)
    bench_fail("bare waiter: lock_release did not delete the lock");
  freeReplyObject(r);
  return ok ? 0 : -1;
}

const turns_impl bench_bare_impl = {bare_open, bare_acquire, bare_release,
                                    bare_close};
