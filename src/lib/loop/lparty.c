/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lparty.c - what a watch (lwatch.c) and an election watch (lfollow.c)
 * share: an object made and freed by any thread whose life is on the
 * client's loop thread. It joins there through the inbox (an
 * RLOCK__LOP_WATCH operation), and a free from another thread hands its
 * leave to the loop the same way, then waits until it has run. The leave
 * operation is made with the object, so a free never fails.
 */
#include <pthread.h>
#include <stdlib.h>

#include "client_int.h"
#include "common.h"
#include "loop.h"

int rlock__lparty_check(rlock_client *c, const char *fn) {
  if (!rlock__origin_ok(&c->origin))
    return rlock__origin_refuse(&c->origin);
  if (c->loop == NULL || c->loop->closing)
    return rlock__err(RLOCK_ECLOSED, "%s: the client is being freed", fn);
  return RLOCK_OK;
}

/* The leave ran (or the loop closed without running it: RLOCK_ECLOSED,
 * and the channel is gone with the loop): the waiting free goes on. */
static void left(void *arg, int rc, int64_t value) {
  (void)rc, (void)value;
  rlock__lparty *p = arg;
  pthread_mutex_lock(&p->mu);
  p->left = 1;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

static rlock_op *op_new(rlock__lparty *p, rlock_async_fn done) {
  rlock_op *op = rlock__lop_new_on(p->c, RLOCK__LOP_WATCH);
  if (op != NULL) {
    op->cb = done;
    op->arg = p;
  }
  return op;
}

int rlock__lparty_init(rlock__lparty *p, rlock_client *c, void *owner) {
  p->c = c;
  p->owner = owner;
  if ((p->join = op_new(p, rlock__lop_ignore)) == NULL ||
      (p->leave = op_new(p, left)) == NULL) {
    free(p->join);
    return RLOCK_ENOMEM;
  }
  pthread_mutex_init(&p->mu, NULL);
  rlock__cond_init(&p->cv);
  atomic_fetch_add(&c->loop->watches, 1);
  return RLOCK_OK;
}

int rlock__lparty_join(rlock__lparty *p, void (*join)(rlock_op *op)) {
  rlock_op *op = p->join;
  p->join = NULL; /* the loop frees it once it has run */
  return rlock__lop_submit(op, join);
}

int rlock__lparty_here(rlock__lparty *p) {
  atomic_fetch_sub(&p->c->loop->watches, 1);
  return pthread_equal(pthread_self(), p->c->loop->thread);
}

void rlock__lparty_leave(rlock__lparty *p, void (*leave)(rlock_op *op)) {
  rlock_client *c = p->c;
  if (c->loop->closing || !rlock__origin_ok(&c->origin))
    return; /* a loop closed, or a fork()ed child's copy: nothing runs it */
  rlock_op *op = p->leave;
  p->leave = NULL; /* the loop frees it once it has run */
  rlock__lop_submit(op, leave);
  pthread_mutex_lock(&p->mu);
  while (!p->left)
    pthread_cond_wait(&p->cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
}

void rlock__lparty_destroy(rlock__lparty *p) {
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  free(p->leave);
  p->leave = NULL;
}
