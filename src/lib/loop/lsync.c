/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lsync.c - the _async functions of rlock/semaphore.h and rlock/latch.h.
 * A wait is the locks' acquisition (lacquire.c) with the kind's "owner"
 * (sync_int.h); every other operation is one script call whose answer
 * kinds/sync.c reads, as the blocking functions' (blocking/sync.c).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "loop.h"
#include "sync_int.h"
#include "watchdog.h"

/* The checks every entry point shares (lops.c's, for a synchroniser). */
static int check(const void *obj, const void *cb, const char *fn) {
  if (obj == NULL || cb == NULL)
    return rlock__err(RLOCK_EINVAL, "%s: %s is NULL", fn,
                      obj == NULL ? "the object" : "callback");
  return rlock__lop_check_clients((rlock_lock *const *)obj, 1, fn);
}

/* ---- one call
 * ---------------------------------------------------------------- */

static int is(const rlock_op *op, const char *what) {
  return strcmp(op->sync_op, what) == 0;
}

static void one_done(rlock_client *c, rlock__lreq *r) {
  (void)c;
  rlock_op *op = rlock__lop_of(r);
  rlock__reply *reply;
  int rc = rlock__lreq_take(r, &reply);
  int64_t v = 0;
  if (rc != RLOCK_OK)
    rc = rlock__wrongtype(op->l, rc);
  else if (op->permits_cb != NULL) /* an inspection */
    rc = rlock__permits_parse(reply, &op->permits);
  else
    rc = rlock__sync_reply(op->l, reply, &v);
  rlock__reply_free(reply);
  if (rc == RLOCK_OK && op->sync_write && rlock__call_unconfirmed(&r->call))
    rc = rlock__sync_unconfirmed(op->l, &r->call);
  if (r->call.stamped_us != 0 && r->call.stamped_us < r->sent_us)
    r->sent_us = r->call.stamped_us; /* a new lease runs from its stamp */
  if (op->owner[0] != '\0')
    rc = rlock__permit_outcome(op->l, op->sync_op, op->owner, op->hold_state,
                               rc, v, op->sync_num, r->sent_us);
  if (is(op, "tryset") || is(op, "delete")) /* 1 or 0 */
    v = v == 1;
  rlock__lop_finish(op, rc, rc == RLOCK_OK ? v : 0);
}

static void one_start(rlock_op *op) {
  rlock_lock *l = op->l;
  if (is(op, "release")) { /* renewal stops first */
    int64_t keep;
    rlock__hold_pop(op->c, l->name, op->owner, &op->hold_state, &keep);
  } else if (is(op, "renew")) {
    op->hold_state = rlock__permit_known(l, op->owner);
  }
  rlock__sync_call(l, op->sync_op, op->sync_num,
                   op->owner[0] != '\0' ? op->owner : NULL, &op->lreq.call);
  op->lreq.call.sync = op->sync_write;
  rlock__lreq_send(op->c, &op->lreq, one_done);
}

/* Queue the script operation `what` with `num` (and a permit `id`). */
static int one(const void *obj, const char *what, int64_t num, const char *id,
               int write, rlock_async_fn cb, void *arg, const char *fn) {
  int rc = check(obj, (const void *)cb, fn);
  if (rc != RLOCK_OK)
    return rc;
  rlock_lock *l = *(rlock_lock *const *)obj;
  if (id != NULL && (rc = rlock__check_permit_id(id, fn)) != RLOCK_OK)
    return rc;
  rlock_op *op = rlock__lop_new(l, RLOCK__LOP_SYNC);
  if (op == NULL)
    return RLOCK_ENOMEM;
  op->cb = cb;
  op->arg = arg;
  op->sync_op = what;
  op->sync_num = num;
  op->sync_write = write;
  if (id != NULL)
    rlock__permit_id_lower(id, op->owner);
  return rlock__lop_submit(op, one_start);
}

/* ---- waits
 * ---------------------------------------------------------------------- */

static int wait_async(rlock_lock *l, const char *owner, int64_t wait_ms,
                      int64_t lease_ms, rlock_async_fn cb,
                      rlock_permit_fn permit_cb, void *arg, rlock_op **out) {
  int rc = rlock__check_wait(wait_ms);
  if (rc == RLOCK_OK)
    rc = rlock__check_lease(lease_ms);
  if (rc != RLOCK_OK)
    return rc;
  rlock_op *op = rlock__lop_new(l, RLOCK__LOP_ACQUIRE);
  if (op == NULL)
    return RLOCK_ENOMEM;
  op->cb = cb;
  op->permit_cb = permit_cb;
  op->arg = arg;
  op->owner_number = UINT64_MAX; /* a permit belongs to no thread */
  snprintf(op->owner, sizeof op->owner, "%s", owner);
  op->wait_ms = wait_ms;
  op->lease_ms = lease_ms;
  if (out != NULL)
    *out = op;
  return rlock__lop_submit(op, rlock__lacquire_start);
}

int rlock_semaphore_acquire_async(rlock_semaphore *s, int64_t permits,
                                  int64_t wait_ms, rlock_async_fn cb, void *arg,
                                  rlock_op **op) {
  static const char fn[] = "rlock_semaphore_acquire_async";
  if (op != NULL)
    *op = NULL;
  int rc = check(s, (const void *)cb, fn);
  if (rc != RLOCK_OK || (rc = rlock__check_permits(permits, 1, fn)) != 0)
    return rc;
  char owner[24];
  rlock__decimal(owner, permits);
  return wait_async(s->l, owner, wait_ms, 0, cb, NULL, arg, op);
}

int rlock_psemaphore_acquire_async(rlock_psemaphore *s, int64_t wait_ms,
                                   int64_t lease_ms, rlock_permit_fn cb,
                                   void *arg, rlock_op **op) {
  if (op != NULL)
    *op = NULL;
  int rc = check(s, (const void *)cb, "rlock_psemaphore_acquire_async");
  char id[RLOCK_PERMIT_ID_LEN + 1];
  if (rc != RLOCK_OK || (rc = rlock__permit_id(id)) != RLOCK_OK)
    return rc;
  return wait_async(s->l, id, wait_ms, lease_ms, NULL, cb, arg, op);
}

int rlock_latch_await_async(rlock_latch *x, int64_t wait_ms, rlock_async_fn cb,
                            void *arg, rlock_op **op) {
  static const char fn[] = "rlock_latch_await_async";
  if (op != NULL)
    *op = NULL;
  int rc = check(x, (const void *)cb, fn);
  if (rc != RLOCK_OK || (rc = rlock__latch_usable(x->l, fn)) != RLOCK_OK)
    return rc;
  return wait_async(x->l, "", wait_ms, 0, cb, NULL, arg, op);
}

/* ---- the one-call operations
 * ------------------------------------------------- */

int rlock_semaphore_release_async(rlock_semaphore *s, int64_t permits,
                                  rlock_async_fn cb, void *arg) {
  static const char fn[] = "rlock_semaphore_release_async";
  int rc = rlock__check_permits(permits, 1, fn);
  return rc == RLOCK_OK ? one(s, "release", permits, NULL, 1, cb, arg, fn) : rc;
}

int rlock_semaphore_try_set_permits_async(rlock_semaphore *s, int64_t permits,
                                          rlock_async_fn cb, void *arg) {
  static const char fn[] = "rlock_semaphore_try_set_permits_async";
  int rc = rlock__check_permits(permits, 0, fn);
  return rc == RLOCK_OK ? one(s, "tryset", permits, NULL, 1, cb, arg, fn) : rc;
}

int rlock_semaphore_set_permits_async(rlock_semaphore *s, int64_t permits,
                                      rlock_async_fn cb, void *arg) {
  static const char fn[] = "rlock_semaphore_set_permits_async";
  int rc = rlock__check_permits(permits, 0, fn);
  return rc == RLOCK_OK ? one(s, "set", permits, NULL, 1, cb, arg, fn) : rc;
}

int rlock_semaphore_add_permits_async(rlock_semaphore *s, int64_t delta,
                                      rlock_async_fn cb, void *arg) {
  static const char fn[] = "rlock_semaphore_add_permits_async";
  int rc = rlock__check_delta(delta, fn);
  return rc == RLOCK_OK ? one(s, "add", delta, NULL, 1, cb, arg, fn) : rc;
}

int rlock_semaphore_available_async(rlock_semaphore *s, rlock_async_fn cb,
                                    void *arg) {
  return one(s, "get", 0, NULL, 0, cb, arg, "rlock_semaphore_available_async");
}

int rlock_semaphore_drain_async(rlock_semaphore *s, rlock_async_fn cb,
                                void *arg) {
  return one(s, "drain", 0, NULL, 1, cb, arg, "rlock_semaphore_drain_async");
}

int rlock_psemaphore_release_async(rlock_psemaphore *s, const char *id,
                                   rlock_async_fn cb, void *arg) {
  static const char fn[] = "rlock_psemaphore_release_async";
  if (id == NULL)
    return rlock__err(RLOCK_EINVAL, "%s: permit id is NULL", fn);
  return one(s, "release", 0, id, 1, cb, arg, fn);
}

int rlock_psemaphore_update_lease_async(rlock_psemaphore *s, const char *id,
                                        int64_t lease_ms, rlock_async_fn cb,
                                        void *arg) {
  static const char fn[] = "rlock_psemaphore_update_lease_async";
  if (id == NULL)
    return rlock__err(RLOCK_EINVAL, "%s: permit id is NULL", fn);
  int rc = rlock__check_permit_lease(lease_ms, fn);
  return rc == RLOCK_OK ? one(s, "renew", lease_ms, id, 1, cb, arg, fn) : rc;
}

int rlock_psemaphore_try_set_permits_async(rlock_psemaphore *s, int64_t permits,
                                           rlock_async_fn cb, void *arg) {
  static const char fn[] = "rlock_psemaphore_try_set_permits_async";
  int rc = rlock__check_permits(permits, 0, fn);
  return rc == RLOCK_OK ? one(s, "tryset", permits, NULL, 1, cb, arg, fn) : rc;
}

int rlock_psemaphore_set_permits_async(rlock_psemaphore *s, int64_t permits,
                                       rlock_async_fn cb, void *arg) {
  static const char fn[] = "rlock_psemaphore_set_permits_async";
  int rc = rlock__check_permits(permits, 0, fn);
  return rc == RLOCK_OK ? one(s, "set", permits, NULL, 1, cb, arg, fn) : rc;
}

int rlock_psemaphore_add_permits_async(rlock_psemaphore *s, int64_t delta,
                                       rlock_async_fn cb, void *arg) {
  static const char fn[] = "rlock_psemaphore_add_permits_async";
  int rc = rlock__check_delta(delta, fn);
  return rc == RLOCK_OK ? one(s, "add", delta, NULL, 1, cb, arg, fn) : rc;
}

int rlock_psemaphore_available_async(rlock_psemaphore *s, rlock_async_fn cb,
                                     void *arg) {
  return one(s, "get", 0, NULL, 0, cb, arg, "rlock_psemaphore_available_async");
}

int rlock_psemaphore_permits_async(rlock_psemaphore *s, rlock_async_fn cb,
                                   void *arg) {
  return one(s, "total", 0, NULL, 0, cb, arg, "rlock_psemaphore_permits_async");
}

int rlock_psemaphore_lease_ms_async(rlock_psemaphore *s, const char *id,
                                    rlock_async_fn cb, void *arg) {
  static const char fn[] = "rlock_psemaphore_lease_ms_async";
  if (id == NULL)
    return rlock__err(RLOCK_EINVAL, "%s: permit id is NULL", fn);
  return one(s, "lease", 0, id, 0, cb, arg, fn);
}

int rlock_latch_try_set_count_async(rlock_latch *x, int64_t count,
                                    rlock_async_fn cb, void *arg) {
  static const char fn[] = "rlock_latch_try_set_count_async";
  int rc = x != NULL ? rlock__latch_usable(x->l, fn) : RLOCK_OK;
  if (rc == RLOCK_OK)
    rc = rlock__check_count(count, fn);
  return rc == RLOCK_OK ? one(x, "tryset", count, NULL, 1, cb, arg, fn) : rc;
}

int rlock_latch_count_down_async(rlock_latch *x, rlock_async_fn cb, void *arg) {
  static const char fn[] = "rlock_latch_count_down_async";
  int rc = x != NULL ? rlock__latch_usable(x->l, fn) : RLOCK_OK;
  return rc == RLOCK_OK ? one(x, "down", 0, NULL, 1, cb, arg, fn) : rc;
}

int rlock_latch_count_async(rlock_latch *x, rlock_async_fn cb, void *arg) {
  return one(x, "get", 0, NULL, 0, cb, arg, "rlock_latch_count_async");
}

int rlock_latch_delete_async(rlock_latch *x, rlock_async_fn cb, void *arg) {
  static const char fn[] = "rlock_latch_delete_async";
  int rc = x != NULL ? rlock__latch_usable(x->l, fn) : RLOCK_OK;
  return rc == RLOCK_OK ? one(x, "delete", 0, NULL, 1, cb, arg, fn) : rc;
}

int rlock_psemaphore_inspect_async(rlock_psemaphore *s, rlock_permits_fn cb,
                                   void *arg) {
  static const char fn[] = "rlock_psemaphore_inspect_async";
  int rc = check(s, (const void *)cb, fn);
  if (rc != RLOCK_OK)
    return rc;
  rlock_op *op = rlock__lop_new(s->l, RLOCK__LOP_SYNC);
  if (op == NULL)
    return RLOCK_ENOMEM;
  op->permits_cb = cb;
  op->arg = arg;
  op->sync_op = "inspect";
  return rlock__lop_submit(op, one_start);
}
