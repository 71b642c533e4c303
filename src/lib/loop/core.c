/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * core.c - a loop client's life, the adapter's entry points, and when
 * callbacks run.
 *
 * Every entry point (the adapter's, and the _async functions on the loop
 * thread) runs between enter() and leave(). Work done inside only queues:
 * bytes for the connections and completed operations. The outermost
 * leave() writes the queued bytes (one write per connection per turn, so
 * requests made in one turn are pipelined), then runs the completions'
 * callbacks when the adapter called in, or arms the timer at once when a
 * user's call did (a callback never runs inside the call that started its
 * operation).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "client_int.h"
#include "common.h"
#include "lock_int.h"
#include "loop.h"
#include "resolve.h"
#include "setup.h"

static void enter(rlock_client *c) { c->loop->depth++; }

/* The operation whose link `e` is (NULL: none). */
static rlock_op *op_of(rlock__llink *e) {
  return e != NULL ? (rlock_op *)((char *)e - offsetof(rlock_op, at)) : NULL;
}

/* Run due callbacks, each with its operation's error as the last error. */
static void run_completions(rlock_client *c) {
  rlock__loop *lp = c->loop;
  rlock_op *op;
  while (!lp->doomed && (op = op_of(lp->done.first)) != NULL) {
    rlock__llist_del(&lp->done, &op->at);
    if (op->rc != RLOCK_OK)
      rlock__err(op->rc, "%s", op->msg);
    if (op->type == RLOCK__LOP_INSPECT)
      op->info_cb(op->arg, op->rc, op->info);
    else if (op->type == RLOCK__LOP_OBSERVE)
      op->leader_cb(op->arg, op->rc, op->leader);
    else if (op->type == RLOCK__LOP_WHOIS) /* the record is borrowed */
      op->record_cb(op->arg, op->rc, op->rc == RLOCK_OK ? op->record : NULL);
    else if (op->permits_cb != NULL)
      op->permits_cb(op->arg, op->rc, op->permits);
    else if (op->permit_cb != NULL) /* the id was the attempt's owner */
      op->permit_cb(op->arg, op->rc, op->rc == RLOCK_OK ? op->owner : NULL);
    else
      op->cb(op->arg, op->rc, op->value);
    free(op->record);
    op->record = NULL;
    if (atomic_load(&op->cancels) != 0)
      op->called = 1; /* freed once its cancel requests are handled */
    else
      free(op);
  }
}

/* Tell the adapter when to call rlock_loop_timer next. */
static void rearm(rlock_client *c) {
  rlock__loop *lp = c->loop;
  int64_t at = lp->done.first != NULL ? 0 : rlock__ltimer_next(c);
  if (at == lp->armed_us)
    return;
  lp->armed_us = at;
  if (at == INT64_MAX) {
    lp->ad.timer(lp->ad.data, -1);
    return;
  }
  int64_t now = rlock__now_us();
  lp->ad.timer(lp->ad.data, at <= now ? 0 : (at - now + 999) / 1000);
}

static void really_free(rlock_client *c);

static void leave(rlock_client *c, int run_callbacks) {
  rlock__loop *lp = c->loop;
  if (lp->depth == 1 && !lp->doomed) {
    if (run_callbacks)
      run_completions(c);
    if (!lp->doomed) {
      rlock__lconn_each(c, rlock__lconn_flush);
      rearm(c);
    }
  }
  if (--lp->depth == 0 && lp->doomed)
    really_free(c);
}

void rlock__loop_enter(rlock_client *c) { enter(c); }

void rlock__loop_leave(rlock_client *c) { leave(c, 0); }

/* ---- operations ---------------------------------------------------- */

rlock_op *rlock__lop_new_on(rlock_client *c, int type) {
  rlock_op *op = rlock__calloc(1, sizeof *op);
  if (op == NULL) {
    rlock__err(RLOCK_ENOMEM, "out of memory");
    return NULL;
  }
  op->type = type;
  op->c = c;
  rlock__ltimer_init(&op->timer, NULL);
  if (type == RLOCK__LOP_ACQUIRE) { /* its own cancel and abandon steps */
    op->cancel = rlock__lacquire_cancel;
    op->abandon = rlock__lacquire_abandon;
  }
  return op;
}

int rlock__lgrow(void *arr, size_t *cap, size_t n, size_t size, size_t first) {
  if (n < *cap)
    return RLOCK_OK;
  void *p;
  memcpy(&p, arr, sizeof p); /* an item **, read as the void * it is */
  size_t want = *cap > 0 ? *cap * 2 : first;
  if ((p = rlock__realloc(p, want * size)) == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  memcpy(arr, &p, sizeof p);
  *cap = want;
  return RLOCK_OK;
}

rlock_op *rlock__lop_new(rlock_lock *l, int type) {
  rlock_op *op = rlock__lop_new_on(l->client, type);
  if (op != NULL)
    op->l = l;
  return op;
}

void rlock__lop_ignore(void *arg, int rc, int64_t value) {
  (void)arg, (void)rc, (void)value;
}

int rlock__lop_canceled(void) {
  return rlock__err(RLOCK_ECANCELED, "wait canceled");
}

int rlock__lop_check_owner(uint64_t owner, const char *fn) {
  if (owner == RLOCK_OWNER_THREAD)
    return rlock__err(RLOCK_EINVAL,
                      "%s: an event-loop operation needs an "
                      "explicit owner (rlock_owner_new()), not "
                      "RLOCK_OWNER_THREAD",
                      fn);
  return RLOCK_OK;
}

int rlock__lop_options(rlock_acquire_options *o,
                       const rlock_acquire_options *opts, const char *fn) {
  if (opts == NULL)
    return rlock__err(RLOCK_EINVAL,
                      "%s: opts is NULL (an explicit owner is needed)", fn);
  int rc = rlock__options(o, opts);
  if (rc != RLOCK_OK || (rc = rlock__lop_check_owner(o->owner, fn)) != RLOCK_OK)
    return rc;
  if (o->cancel != NULL || o->token != NULL)
    return rlock__err(RLOCK_EINVAL,
                      "%s: cancel and token must be NULL (cancel with "
                      "rlock_op_cancel; a fenced lock's token is the "
                      "callback's value)",
                      fn);
  return RLOCK_OK;
}

int rlock__lop_submit(rlock_op *op, void (*start)(rlock_op *op)) {
  rlock_client *c = op->c;
  rlock__loop *lp = c->loop;
  if (!pthread_equal(pthread_self(), lp->thread)) {
    op->start = start;
    pthread_mutex_lock(&lp->inbox_mu);
    rlock__llist_add(&lp->inbox, &op->at);
    pthread_mutex_unlock(&lp->inbox_mu);
    lp->ad.wake(lp->ad.data);
    return RLOCK_OK;
  }
  enter(c);
  rlock__llist_add(&lp->ops, &op->at);
  start(op);
  leave(c, 0);
  return RLOCK_OK;
}

void rlock__lop_finish(rlock_op *op, int rc, int64_t value) {
  rlock__loop *lp = op->c->loop;
  if (op->whole != NULL)
    rlock__obs_acquire_end(op->whole, rc, 0, op->start_us, 0);
  op->rc = rc;
  op->value = value;
  op->msg[0] = '\0';
  if (rc != RLOCK_OK)
    snprintf(op->msg, sizeof op->msg, "%s", rlock_error_last()->message);
  op->finished = 1;
  rlock__ltimer_stop(op->c, &op->timer);
  rlock__llist_del(&lp->ops, &op->at);
  rlock__llist_add(&lp->done, &op->at);
}

/* ---- the adapter's entry points ------------------------------------------ */

static rlock__lconn *conn_of(rlock_client *c, int fd) {
  rlock__loop *lp = c->loop;
  if (fd < 0)
    return NULL;
  for (size_t i = 0; i < lp->nnodes; i++) {
    if (lp->nodes[i]->cmd.fd == fd)
      return &lp->nodes[i]->cmd;
    if (lp->nodes[i]->sub.fd == fd)
      return &lp->nodes[i]->sub;
  }
  if (lp->sentinel.fd == fd)
    return &lp->sentinel;
  if (lp->swatch.fd == fd)
    return &lp->swatch;
  return NULL; /* closed meanwhile: a stale event */
}

int rlock__user_loop(const rlock_client *c) {
  return c != NULL && c->loop != NULL && c->drv->user_loop;
}

void rlock_loop_io(rlock_client *c, int fd, int events) {
  if (rlock__user_loop(c))
    rlock__loop_io(c, fd, events);
}

void rlock__loop_io(rlock_client *c, int fd, int events) {
  enter(c);
  rlock__lconn *k = conn_of(c, fd);
  if (k != NULL)
    rlock__lconn_io(c, k, events);
  leave(c, 1);
}

void rlock_loop_timer(rlock_client *c) {
  if (rlock__user_loop(c))
    rlock__loop_timer(c);
}

void rlock__loop_timer(rlock_client *c) {
  enter(c);
  c->loop->armed_us = INT64_MAX; /* it fired: no longer armed */
  rlock__ltimer_run_due(c);
  leave(c, 1);
}

static void cancel_now(rlock_op *op);

/* Handle the cancel requests `list` (taken from the cancel list): apply
 * each (`apply`), then free an operation whose callback has run already. */
static void run_cancels(rlock__loop *lp, rlock_op *list, int apply) {
  while (list != NULL) {
    rlock_op *op = list;
    list = op->cancel_next;
    if (apply)
      cancel_now(op);
    pthread_mutex_lock(&lp->inbox_mu);
    atomic_store(&op->cancels, 0); /* a later request queues it again */
    pthread_mutex_unlock(&lp->inbox_mu);
    if (op->called)
      free(op);
  }
}

/* Start the operations handed over by other threads, then apply their
 * cancel requests. Both lists are taken at once, so an operation's start
 * is always taken no later than a cancel request made after it, and runs
 * first. */
static void take_inbox(rlock_client *c) {
  rlock__loop *lp = c->loop;
  pthread_mutex_lock(&lp->inbox_mu);
  rlock__llist in = lp->inbox; /* its links are its operations' own */
  rlock_op *op, *cancels = lp->cancel_first;
  lp->inbox = (rlock__llist){0};
  lp->cancel_first = lp->cancel_last = NULL;
  pthread_mutex_unlock(&lp->inbox_mu);
  while (!lp->doomed && (op = op_of(in.first)) != NULL) {
    rlock__llist_del(&in, &op->at);
    rlock__llist_add(&lp->ops, &op->at);
    op->start(op);
  }
  run_cancels(lp, cancels, !lp->doomed);
}

void rlock_loop_wake(rlock_client *c) {
  if (rlock__user_loop(c))
    rlock__loop_wake(c);
}

void rlock__loop_wake(rlock_client *c) {
  enter(c);
  if (atomic_exchange(&c->loop->lookups_done, 0))
    rlock__lconn_each(c, rlock__lconn_lookups);
  if (atomic_exchange(&c->loop->renew_asked, 0))
    rlock__lrenew_arm(c);
  take_inbox(c);
  if (c->loop->on_wake != NULL)
    c->loop->on_wake(c);
  leave(c, 1);
}

/* ---- life ------------------------------------------------------------ */

/* The size of rlock_loop as each version declared it: an adapter built
 * against version v owns only that many bytes. A version that appends
 * fields appends its size here. */
static const size_t table_size[RLOCK_LOOP_VERSION + 1] = {
    [1] = offsetof(rlock_loop, detach) + sizeof(void (*)(void *)),
};

static int loop_new(rlock_client *c, const rlock_loop *loop) {
  rlock__loop *lp = rlock__calloc(1, sizeof *lp);
  /* The timer heap's first room, now: the loop's own timers (renewal,
   * re-subscription, health checks) are then armed without memory, as a
   * blocking client's first watchdog hold must be on its background
   * thread, whatever that thread's allocations meet. */
  rlock__ltimer **heap = rlock__calloc(64, sizeof *heap);
  if (lp == NULL || heap == NULL) {
    free(lp);
    free(heap);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  lp->heap = heap;
  lp->capheap = 64;
  c->loop = lp;
  memcpy(&lp->ad, loop, table_size[loop->version]); /* later fields: 0 */
  lp->thread = pthread_self();
  lp->armed_us = INT64_MAX;
  pthread_mutex_init(&lp->inbox_mu, NULL);
  atomic_init(&lp->lookups_done, 0);
  atomic_init(&lp->renew_asked, 0);
  /* Both are pointed at a sentinel when used (ltopo.c, lsub.c). */
  rlock__lconn_init(&lp->sentinel, &c->cfg.target.addrs[0], NULL);
  rlock__lconn_init(&lp->swatch, &c->cfg.target.addrs[0], NULL);
  rlock__ltimer_init(&lp->refresh_req.retry, NULL);
  lp->refresh_req.direct = 1;
  rlock__ltimer_init(&lp->sub_retry, rlock__lsub_retry);
  rlock__ltimer_init(&lp->swatch_retry, rlock__lswatch_retry);
  rlock__ltimer_init(&lp->health, NULL);
  rlock__ltimer_init(&lp->renew, rlock__lrenew_tick);
  rlock__ltimer_init(&lp->registry, rlock__lregistry_tick);
  return RLOCK_OK;
}

static void loop_free(rlock_client *c) {
  rlock__loop *lp = c->loop;
  for (size_t i = 0; i < lp->nnodes; i++) {
    rlock__lconn_destroy(&lp->nodes[i]->cmd);
    rlock__lconn_destroy(&lp->nodes[i]->sub);
    free(lp->nodes[i]);
  }
  free(lp->nodes);
  rlock__lconn_destroy(&lp->sentinel);
  rlock__lconn_destroy(&lp->swatch);
  rlock__lsub_destroy(c);
  rlock__map_clear(&lp->chans);
  free(lp->heap);
  pthread_mutex_destroy(&lp->inbox_mu);
  free(lp);
  c->loop = NULL;
}

static int loop_client_free(rlock_client *c);

static void loop_renew_arm(rlock_client *c) {
  rlock__lrenew_arm(c); /* the loop's thread: this one */
}

static const rlock__driver loop_driver = {
    .free = loop_client_free,
    .renew_arm = loop_renew_arm,
    .release_waits_renewal = 0,
    .user_loop = 1,
};

/* Write the registry record (lregistry.c). Learn the topology at once
 * (a cluster's map, Sentinel's master), so
 * the first calls need not wait for it, and follow Sentinel's
 * +switch-master. */
static void start_topology(rlock_client *c) {
  enter(c);
  if (c->topo.target.kind != RLOCK__TOPO_SINGLE) {
    rlock__ltopo_refresh(c, 1);
    rlock__lswatch_start(c);
  }
  rlock__lregistry_start(c);
  leave(c, 0);
}

int rlock_client_new_loop(rlock_client **out, const rlock_config *cfg,
                          const rlock_loop *loop) {
  if (out == NULL || loop == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_client_new_loop: %s is NULL",
                      out == NULL ? "out" : "loop");
  *out = NULL;
  if (loop->version < 1 || loop->version > RLOCK_LOOP_VERSION)
    return rlock__err(RLOCK_EINVAL,
                      "rlock_client_new_loop: rlock_loop version %u is not "
                      "one this library knows (1 to %d): set it to "
                      "RLOCK_LOOP_VERSION",
                      loop->version, RLOCK_LOOP_VERSION);
  if (loop->watch == NULL || loop->timer == NULL || loop->wake == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_client_new_loop: the loop table "
                                    "needs watch, timer and wake");
  rlock_client *c;
  int rc = rlock__client_setup(&c, cfg);
  if (rc != RLOCK_OK)
    return rc;
  c->drv = &loop_driver;
  if ((rc = loop_new(c, loop)) != RLOCK_OK) {
    if (c->loop != NULL)
      loop_free(c);
    rlock__client_teardown(c);
    return rc;
  }
  rlock__topo_refuse(&c->topo,
                     "this client runs on an event loop "
                     "(rlock_client_new_loop): use the _async functions "
                     "of rlock/loop.h");
  c->topo.on_change = rlock__ltopo_master_changed;
  c->topo.on_change_arg = c;
  start_topology(c);
  *out = c;
  return RLOCK_OK;
}

static void close_one(rlock_client *c, rlock__lconn *k) {
  k->on_down = NULL;
  rlock__err(RLOCK_ECLOSED, "client freed");
  rlock__lconn_fail(c, k, RLOCK_ECLOSED);
}

/* Complete every pending operation with RLOCK_ECLOSED, now. */
static void close_all(rlock_client *c) {
  rlock__loop *lp = c->loop;
  rlock__lconn_each(c, close_one);
  rlock__ltopo_destroy(c);
  pthread_mutex_lock(&lp->inbox_mu);
  rlock__llist in = lp->inbox;
  lp->inbox = (rlock__llist){0};
  pthread_mutex_unlock(&lp->inbox_mu);
  rlock_op *op; /* those never started are live now, finished below */
  while ((op = op_of(in.first)) != NULL) {
    rlock__llist_del(&in, &op->at);
    rlock__llist_add(&lp->ops, &op->at);
  }
  while ((op = op_of(lp->ops.last)) != NULL) { /* the latest first */
    if (op->abandon != NULL)
      op->abandon(op);
    rlock__err(RLOCK_ECLOSED, "client freed");
    rlock__lop_finish(op, RLOCK_ECLOSED, 0);
  }
  rlock__ltimer_stop(c, &lp->renew);
  rlock__ltimer_stop(c, &lp->registry);
  rlock__ltimer_stop(c, &lp->sub_retry);
  rlock__ltimer_stop(c, &lp->swatch_retry);
  rlock__ltimer_stop(c, &lp->health);
  run_completions(c);
  /* Cancel requests still queued: every operation has completed. */
  pthread_mutex_lock(&lp->inbox_mu);
  rlock_op *cancels = lp->cancel_first;
  lp->cancel_first = lp->cancel_last = NULL;
  pthread_mutex_unlock(&lp->inbox_mu);
  run_cancels(lp, cancels, 0);
}

static void really_free(rlock_client *c) {
  loop_free(c);
  rlock__client_teardown(c);
}

static int loop_client_free(rlock_client *c) {
  rlock__loop *lp = c->loop;
  if (!pthread_equal(pthread_self(), lp->thread))
    return rlock__err(RLOCK_EINVAL, "rlock_client_free: a loop client is "
                                    "freed on its loop's thread");
  if (lp->closing)
    return RLOCK_OK; /* again, from a callback run by the first call */
  lp->closing = 1;
  enter(c);
  close_all(c);
  lp->ad.timer(lp->ad.data, -1);
  if (lp->ad.detach != NULL)
    lp->ad.detach(lp->ad.data);
  lp->doomed = 1;
  leave(c, 0); /* frees now, or when the outermost entry point returns */
  return RLOCK_OK;
}

/* Cancel on the loop thread (each kind ignores an operation that is over,
 * or not started yet: its cancel request comes after its start). */
static void cancel_now(rlock_op *op) { op->cancel(op); }

/* Another thread: queue a request (once per operation until handled) and
 * wake the loop. The wake-up is asked for under the inbox's mutex, which
 * rlock_client_free takes too, so the adapter is still there. */
static void cancel_later(rlock_op *op) {
  rlock__loop *lp = op->c->loop;
  pthread_mutex_lock(&lp->inbox_mu);
  if (atomic_fetch_add(&op->cancels, 1) == 0) {
    op->cancel_next = NULL;
    if (lp->cancel_last != NULL)
      lp->cancel_last->cancel_next = op;
    else
      lp->cancel_first = op;
    lp->cancel_last = op;
  }
  lp->ad.wake(lp->ad.data);
  pthread_mutex_unlock(&lp->inbox_mu);
}

int rlock_op_cancel(rlock_op *op) {
  if (op == NULL || op->cancel == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_op_cancel: %s",
                      op == NULL ? "op is NULL" : "not an acquisition");
  rlock_client *c = op->c;
  if (!pthread_equal(pthread_self(), c->loop->thread)) {
    cancel_later(op);
    return RLOCK_OK;
  }
  enter(c);
  if (!c->loop->closing) /* op may be in the inbox still (started off the */
    take_inbox(c);       /* loop thread): start it first */
  cancel_now(op);
  leave(c, 0);
  return RLOCK_OK;
}

int rlock_loop_error(int code, const char *message) {
  return rlock__err(code, "%s", message ? message : "");
}

/* ---- a blocking client's loop, run by its background thread ------------- */

int rlock__loop_attach(rlock_client *c, const rlock_loop *table) {
  int rc = loop_new(c, table);
  if (rc != RLOCK_OK && c->loop != NULL)
    loop_free(c);
  return rc;
}

void rlock__loop_bind(rlock_client *c, pthread_t thread) {
  c->loop->thread = thread;
}

void rlock__loop_begin(rlock_client *c) {
  enter(c);
  rlock__lswatch_start(c); /* Sentinel: follow +switch-master */
  rlock__lregistry_start(c);
  leave(c, 0);
}

void rlock__loop_ask_renew(rlock_client *c) {
  rlock__loop *lp = c->loop;
  atomic_store(&lp->renew_asked, 1);
  lp->ad.wake(lp->ad.data);
}

void rlock__loop_shut(rlock_client *c) {
  rlock__loop *lp = c->loop;
  if (lp->closing)
    return;
  lp->closing = 1;
  enter(c);
  close_all(c);
  lp->ad.timer(lp->ad.data, -1);
  leave(c, 0);
}

void rlock__loop_detach(rlock_client *c) {
  if (c->loop != NULL)
    loop_free(c);
}
