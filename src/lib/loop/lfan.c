/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lfan.c - several calls at once, each on its own client's loop, waited
 * for on a condition variable by a caller's thread: the blocking RedLock's
 * rounds and releases (blocking/redlock.c).
 *
 * Each call is a loop operation (RLOCK__LOP_CALL) handed to its client's
 * loop through the inbox; the loop routes and sends it (rlock__lreq_send:
 * MOVED, ASK and refusals followed within the fan-out's deadline) and
 * tells the shared group when its answer came. The caller waits until
 * every call is answered, its deadline passes, its bound (rlock__bound:
 * the caller's wait, its cancel token) ends it, or decide() ends it
 * early. A call still pending then is abandoned, not stopped: it goes on
 * on its loop, ahead of anything sent after it to that node (a release of
 * the same member), and its answer is dropped. So the group lives until
 * the caller and every call are through with it, and a call owns copies
 * of the strings it was built with (the caller's may be gone by then).
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "client_int.h"
#include "common.h"
#include "loop.h"

typedef struct slot {
  struct rlock__lfan *g;
  rlock_op *op;     /* its operation, until told() ends it */
  char *kept;       /* the call's borrowed strings, copied */
  rlock__reply *in; /* the answer, between lreq's done and the callback */
  int done, rc;     /* the loop's side, under g->mu */
  rlock__reply *reply;
  char error[256];
  int abandoned; /* the caller stopped waiting: drop the answer */
  int seen;      /* the caller has copied the outcome */
} slot;

struct rlock__lfan {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs; /* the caller, and each call handed to a loop */
  int64_t deadline_us;
  size_t n;
  slot s[];
};

rlock__lfan *rlock__lfan_new(size_t n) {
  rlock__lfan *g = rlock__calloc(1, sizeof *g + n * sizeof g->s[0]);
  if (g == NULL)
    return NULL;
  if (rlock__cond_init(&g->cv) != 0) {
    free(g);
    return NULL;
  }
  pthread_mutex_init(&g->mu, NULL);
  g->refs = 1;
  g->n = n;
  for (size_t i = 0; i < n; i++)
    g->s[i].g = g;
  return g;
}

static void group_free(rlock__lfan *g) {
  for (size_t i = 0; i < g->n; i++) {
    free(g->s[i].op); /* never handed to a loop */
    free(g->s[i].kept);
    rlock__reply_free(g->s[i].reply);
  }
  pthread_mutex_destroy(&g->mu);
  pthread_cond_destroy(&g->cv);
  free(g);
}

static void unref(rlock__lfan *g) {
  pthread_mutex_lock(&g->mu);
  int last = --g->refs == 0;
  pthread_mutex_unlock(&g->mu);
  if (last)
    group_free(g);
}

/* ---- on the loop's thread ---------------------------------------------- */

static void answered(rlock_client *c, rlock__lreq *r) {
  (void)c;
  rlock_op *op = rlock__lop_of(r);
  slot *s = op->arg;
  s->in = r->q.reply;
  r->q.reply = NULL;
  rlock__lop_finish(op, r->q.rc, 0);
}

static void start(rlock_op *op) {
  slot *s = op->arg;
  rlock__lreq *r = &op->lreq;
  r->deadline_us = s->g->deadline_us;   /* refusals retried until then */
  rlock__lreq_send(op->c, r, answered); /* may end (answered) at once */
}

/* The operation's callback: its outcome (an answer, a failure, the client
 * freed) to the group. The operation is freed when this returns. */
static void told(void *arg, int rc, int64_t value) {
  (void)value;
  slot *s = arg;
  rlock__lfan *g = s->g;
  rlock__reply *in = s->in;
  s->in = NULL;
  rlock__call_clear(&s->op->lreq.call);
  pthread_mutex_lock(&g->mu);
  s->op = NULL;
  if (!s->abandoned) {
    s->rc = rc;
    s->reply = rc == RLOCK_OK ? in : NULL;
    in = rc == RLOCK_OK ? NULL : in;
    if (rc != RLOCK_OK)
      snprintf(s->error, sizeof s->error, "%s", rlock_error_last()->message);
  }
  s->done = 1;
  int last = --g->refs == 0;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
  rlock__reply_free(in);
  if (last)
    group_free(g);
}

/* ---- on the caller's thread -------------------------------------------- */

rlock__call *rlock__lfan_call(rlock__lfan *g, size_t i, rlock_lock *l) {
  rlock_op *op = rlock__lop_new(l, RLOCK__LOP_CALL);
  if (op == NULL)
    return NULL;
  op->cb = told;
  op->arg = &g->s[i];
  g->s[i].op = op;
  return &op->lreq.call;
}

static int inside(const rlock__call *call, const char *p) {
  return p >= call->store && p < call->store + sizeof call->store;
}

/* Copy the strings the call borrows into memory of its own. */
static int keep_strings(slot *s, rlock__call *call) {
  size_t need = 0;
  for (int i = 0; i < call->n; i++)
    if (!inside(call, call->kv[i]))
      need += strlen(call->kv[i]) + 1;
  if (need == 0)
    return RLOCK_OK;
  char *p = s->kept = rlock__malloc(need);
  if (p == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  for (int i = 0; i < call->n; i++)
    if (!inside(call, call->kv[i])) {
      size_t len = strlen(call->kv[i]) + 1;
      memcpy(p, call->kv[i], len);
      call->kv[i] = p;
      p += len;
    }
  return RLOCK_OK;
}

/* Why call i cannot be handed to its loop, or RLOCK_OK. */
static int refuse(slot *s) {
  if (s->op == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  rlock_client *c = s->op->c;
  if (pthread_equal(pthread_self(), c->loop->thread))
    return rlock__err(RLOCK_EDEADLK,
                      "a blocking call on its client's own background "
                      "thread (a lost-lock callback) cannot wait for it");
  if (s->op->lreq.call.failed)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  return keep_strings(s, &s->op->lreq.call);
}

/* Hand every call to its loop; a call that cannot go is done at once. */
static void submit_all(rlock__lfan *g, rlock__fan *out) {
  for (size_t i = 0; i < g->n; i++) {
    slot *s = &g->s[i];
    int rc = refuse(s);
    if (rc != RLOCK_OK) {
      if (s->op != NULL)
        rlock__call_clear(&s->op->lreq.call);
      free(s->op);
      s->op = NULL;
      s->done = s->seen = 1;
      out[i] = (rlock__fan){.done = 1, .rc = rc};
      snprintf(out[i].error, sizeof out[i].error, "%s",
               rlock_error_last()->message);
      continue;
    }
    pthread_mutex_lock(&g->mu);
    g->refs++;
    pthread_mutex_unlock(&g->mu);
    rlock__lop_submit(s->op, start); /* told() clears s->op */
  }
}

/* Copy the outcomes that came since the last look into out[] (locked);
 * returns how many. */
static size_t take_new(rlock__lfan *g, rlock__fan *out) {
  size_t got = 0;
  for (size_t i = 0; i < g->n; i++) {
    slot *s = &g->s[i];
    if (!s->done || s->seen)
      continue;
    s->seen = 1;
    out[i] = (rlock__fan){.done = 1, .rc = s->rc, .reply = s->reply};
    s->reply = NULL;
    memcpy(out[i].error, s->error, sizeof out[i].error);
    got++;
  }
  return got;
}

/* The caller stops waiting: what has not come is `rc` (locked). */
static void abandon_rest(rlock__lfan *g, rlock__fan *out, int rc) {
  for (size_t i = 0; i < g->n; i++) {
    slot *s = &g->s[i];
    if (s->seen)
      continue;
    s->seen = s->abandoned = 1;
    out[i] = (rlock__fan){.done = 1, .rc = rc};
    snprintf(out[i].error, sizeof out[i].error, "%s",
             rc == RLOCK__EABANDONED ? "not waited for"
                                     : "redis: no answer in time");
  }
}

void rlock__lfan_run(rlock__lfan *g, rlock__fan *out, int64_t deadline_us,
                     int (*decide)(void *arg), void *arg) {
  g->deadline_us = deadline_us;
  memset(out, 0, g->n * sizeof *out);
  submit_all(g, out);
  int64_t until = rlock__bound_clip(deadline_us);
  int decided = 0;
  pthread_mutex_lock(&g->mu);
  for (;;) {
    take_new(g, out);
    size_t seen = 0;
    for (size_t i = 0; i < g->n; i++)
      seen += g->s[i].seen;
    if (seen == g->n)
      break;
    decided = decide != NULL && decide(arg);
    if (decided || rlock__now_us() >= until || rlock__bound_reached())
      break;
    rlock__cond_wait_until(&g->cv, &g->mu, rlock__bound_step(until));
  }
  abandon_rest(g, out, decided ? RLOCK__EABANDONED : RLOCK_ETIMEOUT);
  pthread_mutex_unlock(&g->mu);
  unref(g);
}

void rlock__lfan_fail(rlock__fan *out, size_t n, int rc) {
  for (size_t i = 0; i < n; i++) {
    out[i] = (rlock__fan){.done = 1, .rc = rc};
    snprintf(out[i].error, sizeof out[i].error, "%s",
             rlock_error_last()->message);
  }
}
