/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pool.c - a bounded LIFO pool of command connections.
 */
#include "pool.h"

#include <errno.h>
#include <stdlib.h>

#include "cancel.h"
#include "common.h"
#include "obs.h"

/* ---- the pool ---------------------------------------------------------- */

int rlock__pool_init(rlock__pool *p, const rlock__endpoint *ep, int max,
                     int64_t connect_ms, int64_t command_ms) {
  *p = (rlock__pool){
      .max = max, .connect_ms = connect_ms, .command_ms = command_ms};
  rlock__origin_here(&p->origin);
  p->idle = rlock__calloc((size_t)max, sizeof *p->idle);
  if (p->idle == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  int rc = rlock__endpoint_copy(&p->ep, ep);
  if (rc != RLOCK_OK) {
    free(p->idle);
    return rc;
  }
  pthread_mutex_init(&p->mu, NULL);
  rlock__cond_init(&p->cv);
  return RLOCK_OK;
}

void rlock__pool_destroy(rlock__pool *p) {
  for (int i = 0; i < p->nidle; i++)
    rlock__conn_close(p->idle[i]);
  free(p->idle);
  rlock__endpoint_clear(&p->ep);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
}

/* Drop a connection that was counted in the pool. */
static void discard(rlock__pool *p, rlock__conn *c) {
  rlock__conn_close(c);
  pthread_mutex_lock(&p->mu);
  p->total--;
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

/* Take an idle connection, or reserve a slot for a new one (*out NULL),
 * waiting while every connection is busy. Returns RLOCK_OK or
 * RLOCK_ETIMEOUT. */
static int take(rlock__pool *p, int64_t deadline, rlock__conn **out) {
  deadline = rlock__bound_clip(deadline); /* the caller's wait, if sooner */
  pthread_mutex_lock(&p->mu);
  while (p->nidle == 0 && p->total >= p->max) {
    int64_t step = rlock__bound_step(deadline);
    int timed_out = rlock__cond_wait_until(&p->cv, &p->mu, step) == ETIMEDOUT;
    int why = rlock__bound_reached();
    if (why != 0 || (timed_out && step >= deadline)) {
      pthread_mutex_unlock(&p->mu);
      if (why == RLOCK_ECANCELED)
        return rlock__err(RLOCK_ECANCELED, "wait canceled");
      if (why == RLOCK_ETIMEOUT)
        return rlock__err(RLOCK_ETIMEOUT,
                          "all %d connections stayed busy until the wait "
                          "ran out",
                          p->max);
      return rlock__err(RLOCK_ETIMEOUT,
                        "all %d connections stayed busy for %lld ms", p->max,
                        (long long)p->command_ms);
    }
  }
  if (p->nidle > 0) {
    *out = p->idle[--p->nidle];
  } else {
    *out = NULL;
    p->total++; /* reserve the slot; connect without the mutex */
  }
  pthread_mutex_unlock(&p->mu);
  return RLOCK_OK;
}

/* A connection was dropped: counted, and owed a replacement. */
static void count_drop(rlock__pool *p) {
  rlock__obs_count(p->obs, RLOCK__STAT_DISCONNECTS);
  atomic_fetch_add_explicit(&p->dropped, 1, memory_order_relaxed);
}

/* A connection was opened: a reconnect when it replaces a dropped one. */
static void count_open(rlock__pool *p) {
  rlock__obs_count(p->obs, RLOCK__STAT_CONNECTS);
  int owed = atomic_load_explicit(&p->dropped, memory_order_relaxed);
  while (owed > 0 && !atomic_compare_exchange_weak_explicit(
                         &p->dropped, &owed, owed - 1, memory_order_relaxed,
                         memory_order_relaxed))
    ;
  if (owed > 0)
    rlock__obs_count(p->obs, RLOCK__STAT_RECONNECTS);
}

int rlock__pool_get(rlock__pool *p, rlock__conn **out) {
  /* Before anything else: in a forked child the mutex may be held by a
   * thread that does not exist here, and the sockets are the parent's. */
  if (!rlock__origin_ok(&p->origin)) {
    *out = NULL;
    return rlock__origin_refuse(&p->origin);
  }
  if (p->refuse != NULL) {
    *out = NULL;
    return rlock__err(RLOCK_EINVAL, "%s", p->refuse);
  }
  int64_t deadline = rlock__deadline_after_ms(p->command_ms);
  for (;;) {
    int rc = take(p, deadline, out);
    if (rc != RLOCK_OK)
      return rc;
    if (*out == NULL)
      break;
    /* The staleness probe is a system call: out of the mutex. */
    if (rlock__conn_lendable(*out))
      return RLOCK_OK;
    count_drop(p);
    rlock__obs_log(p->obs, RLOCK_LOG_WARN,
                   "connection to %s was closed "
                   "while idle (server restarted, or the connection was "
                   "killed): opening another",
                   (*out)->where);
    discard(p, *out);
  }
  int rc = rlock__conn_open(out, &p->ep, p->connect_ms, p->command_ms);
  if (rc != RLOCK_OK) {
    discard(p, NULL);
    rlock__obs_count(p->obs, RLOCK__STAT_CONNECT_FAILURES);
    rlock__obs_log(p->obs, RLOCK_LOG_WARN, "%s", rlock_error_last()->message);
    return rc;
  }
  count_open(p);
  rlock__obs_log(p->obs, RLOCK_LOG_DEBUG, "connected to %s", (*out)->where);
  return rc;
}

void rlock__pool_put(rlock__pool *p, rlock__conn *c) {
  pthread_mutex_lock(&p->mu);
  if (c->broken) {
    p->total--;
    pthread_mutex_unlock(&p->mu);
    pthread_cond_signal(&p->cv);
    /* Put back by the thread whose call broke it: its last error says
     * why. Logged outside the mutex (the hook may call the library). */
    count_drop(p);
    rlock__obs_log(p->obs, RLOCK_LOG_WARN, "connection to %s dropped: %s",
                   c->where, rlock_error_last()->message);
    rlock__conn_close(c);
    return;
  }
  p->idle[p->nidle++] = c;
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
}
