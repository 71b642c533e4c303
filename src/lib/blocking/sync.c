/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sync.c - the blocking functions of rlock/semaphore.h and rlock/latch.h.
 * A wait is the locks' own acquisition (acquire.c's rlock__acquire_as,
 * with the kind's "owner": sync_int.h); every other call is one script
 * call, its answer read by kinds/sync.c as the loop's is.
 */
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "calls.h"
#include "common.h"
#include "sync_int.h"
#include "watchdog.h"

/* The checks every entry point starts with: the object, the client. */
static int usable(const void *obj, const char *fn) {
  if (obj == NULL)
    return rlock__err(RLOCK_EINVAL, "%s: the object is NULL", fn);
  return rlock__blocking_check((*(rlock_lock *const *)obj)->client);
}

/* Run one call of a synchroniser: its integer answer into *value (may be
 * NULL; set also with RLOCK_EREPLICA). A write (`write`) is confirmed on
 * replicas where the client asks for it: RLOCK_EREPLICA when none did (it
 * stands on the master). */
static int run(rlock_lock *l, rlock__call *call, int write, int64_t *value) {
  rlock__reply *r;
  int64_t v = 0;
  call->sync = write;
  int rc = rlock__lock_run(l, call, &r);
  if (rc != RLOCK_OK)
    return rc;
  rc = rlock__sync_reply(l, r, &v);
  rlock__reply_free(r);
  if (rc == RLOCK_OK && value != NULL)
    *value = v; /* also when unconfirmed: the master's answer */
  if (rc == RLOCK_OK && write && rlock__call_unconfirmed(call))
    return rlock__sync_unconfirmed(l, call);
  return rc;
}

/* A wait of the kind, for `owner` (sync_int.h) with `lease_ms`. */
static int wait_for(rlock_lock *l, const char *owner, int64_t wait_ms,
                    int64_t lease_ms, rlock_cancel *cancel) {
  rlock_acquire_options o = rlock__options_with(wait_ms, lease_ms, cancel);
  o.owner = UINT64_MAX; /* a permit belongs to no thread (watchdog.h) */
  int rc = rlock__check_wait(wait_ms);
  if (rc == RLOCK_OK)
    rc = rlock__check_lease(lease_ms);
  return rc == RLOCK_OK ? rlock__acquire_as(l, owner, &o) : rc;
}

/* The script operation `what` with `num` (and a permit `id`, lowercase)
 * on the synchroniser `obj`, after `check` (the argument's, RLOCK_OK when
 * none): as run(). */
static int one(const void *obj, int check, const char *what, int64_t num,
               const char *id, int write, int64_t *value, const char *fn) {
  int rc = usable(obj, fn);
  if (rc != RLOCK_OK || (rc = check) != RLOCK_OK)
    return rc;
  rlock_lock *l = *(rlock_lock *const *)obj;
  rlock__call call;
  rlock__sync_call(l, what, num, id, &call);
  return run(l, &call, write, value);
}

/* one() answering 1 or 0 into *flag (may be NULL). */
static int one_flag(const void *obj, int check, const char *what, int64_t num,
                    int *flag, const char *fn) {
  int64_t v = 0;
  int rc = one(obj, check, what, num, NULL, 1, &v, fn);
  if (rc == RLOCK_OK && flag != NULL)
    *flag = v == 1;
  return rc;
}

/* ---- the semaphore ----------------------------------------------------------
 */

int rlock_semaphore_try_set_permits(int *set, rlock_semaphore *s,
                                    int64_t permits) {
  static const char fn[] = "rlock_semaphore_try_set_permits";
  return one_flag(s, rlock__check_permits(permits, 0, fn), "tryset", permits,
                  set, fn);
}

int rlock_semaphore_set_permits(rlock_semaphore *s, int64_t permits) {
  static const char fn[] = "rlock_semaphore_set_permits";
  return one(s, rlock__check_permits(permits, 0, fn), "set", permits, NULL, 1,
             NULL, fn);
}

int rlock_semaphore_add_permits(rlock_semaphore *s, int64_t delta) {
  static const char fn[] = "rlock_semaphore_add_permits";
  return one(s, rlock__check_delta(delta, fn), "add", delta, NULL, 1, NULL, fn);
}

int rlock_semaphore_acquire(rlock_semaphore *s, int64_t permits,
                            int64_t wait_ms, rlock_cancel *cancel) {
  static const char fn[] = "rlock_semaphore_acquire";
  int rc = usable(s, fn);
  if (rc != RLOCK_OK || (rc = rlock__check_permits(permits, 1, fn)) != 0)
    return rc;
  char owner[24];
  rlock__decimal(owner, permits);
  return wait_for(s->l, owner, wait_ms, 0, cancel);
}

int rlock_semaphore_release(rlock_semaphore *s, int64_t permits) {
  static const char fn[] = "rlock_semaphore_release";
  return one(s, rlock__check_permits(permits, 1, fn), "release", permits, NULL,
             1, NULL, fn);
}

/* A read of `what` into *out, which must be given. */
static int query(int64_t *out, const void *obj, const char *what,
                 const char *fn) {
  int check = out == NULL ? rlock__err(RLOCK_EINVAL,
                                       "%s: the result pointer is NULL", fn)
                          : RLOCK_OK;
  return one(obj, check, what, 0, NULL, 0, out, fn);
}

int rlock_semaphore_available(int64_t *available, rlock_semaphore *s) {
  return query(available, s, "get", "rlock_semaphore_available");
}

int rlock_semaphore_drain(int64_t *drained, rlock_semaphore *s) {
  return one(s, RLOCK_OK, "drain", 0, NULL, 1, drained,
             "rlock_semaphore_drain");
}

/* ---- the permit-expirable semaphore
 * ------------------------------------------ */

int rlock_psemaphore_try_set_permits(int *set, rlock_psemaphore *s,
                                     int64_t permits) {
  static const char fn[] = "rlock_psemaphore_try_set_permits";
  return one_flag(s, rlock__check_permits(permits, 0, fn), "tryset", permits,
                  set, fn);
}

int rlock_psemaphore_set_permits(rlock_psemaphore *s, int64_t permits) {
  static const char fn[] = "rlock_psemaphore_set_permits";
  return one(s, rlock__check_permits(permits, 0, fn), "set", permits, NULL, 1,
             NULL, fn);
}

int rlock_psemaphore_add_permits(rlock_psemaphore *s, int64_t delta) {
  static const char fn[] = "rlock_psemaphore_add_permits";
  return one(s, rlock__check_delta(delta, fn), "add", delta, NULL, 1, NULL, fn);
}

int rlock_psemaphore_acquire(char *id, rlock_psemaphore *s, int64_t wait_ms,
                             int64_t lease_ms, rlock_cancel *cancel) {
  static const char fn[] = "rlock_psemaphore_acquire";
  int rc = usable(s, fn);
  if (rc != RLOCK_OK)
    return rc;
  if (id == NULL)
    return rlock__err(RLOCK_EINVAL, "%s: id is NULL", fn);
  char mine[RLOCK_PERMIT_ID_LEN + 1];
  if ((rc = rlock__permit_id(mine)) != RLOCK_OK)
    return rc;
  rc = wait_for(s->l, mine, wait_ms, lease_ms, cancel);
  if (rc == RLOCK_OK)
    memcpy(id, mine, sizeof mine);
  return rc;
}

/* The checks of a call naming a permit; its id lowercased into `lower`. */
static int permit_args(rlock_psemaphore *s, const char *id, char *lower,
                       const char *fn) {
  int rc = usable(s, fn);
  if (rc == RLOCK_OK && (rc = rlock__check_permit_id(id, fn)) == RLOCK_OK)
    rlock__permit_id_lower(id, lower);
  return rc;
}

int rlock_psemaphore_release(rlock_psemaphore *s, const char *id) {
  char lower[RLOCK_PERMIT_ID_LEN + 1];
  int rc = permit_args(s, id, lower, "rlock_psemaphore_release");
  if (rc != RLOCK_OK)
    return rc;
  int state;
  int64_t keep, released = 0;
  /* Renewal stops first, so it never outlives the release. */
  rlock__hold_pop(s->l->client, s->l->name, lower, &state, &keep);
  rlock__call call;
  rlock__psem_call(s->l, "release", 0, lower, &call);
  rc = run(s->l, &call, 1, &released);
  return rlock__permit_outcome(s->l, "release", lower, state, rc, released, 0,
                               0);
}

int rlock_psemaphore_update_lease(rlock_psemaphore *s, const char *id,
                                  int64_t lease_ms) {
  static const char fn[] = "rlock_psemaphore_update_lease";
  char lower[RLOCK_PERMIT_ID_LEN + 1];
  int rc = permit_args(s, id, lower, fn);
  if (rc != RLOCK_OK || (rc = rlock__check_permit_lease(lease_ms, fn)) != 0)
    return rc;
  int known = rlock__permit_known(s->l, lower);
  rlock__call call;
  int64_t renewed = 0;
  rlock__psem_call(s->l, "renew", lease_ms, lower, &call);
  rc = run(s->l, &call, 1, &renewed);
  return rlock__permit_outcome(s->l, "renew", lower, known, rc, renewed,
                               lease_ms, rlock__call_granted_from(&call));
}

int rlock_psemaphore_check(rlock_psemaphore *s, const char *id) {
  static const char fn[] = "rlock_psemaphore_check";
  if (s == NULL)
    return rlock__err(RLOCK_EINVAL, "%s: the object is NULL", fn);
  if (!rlock__origin_ok(&s->l->client->origin)) /* the parent's records */
    return rlock__origin_refuse(&s->l->client->origin);
  int rc = rlock__check_permit_id(id, fn);
  if (rc != RLOCK_OK)
    return rc;
  char lower[RLOCK_PERMIT_ID_LEN + 1];
  rlock__permit_id_lower(id, lower);
  rc = rlock__hold_check(s->l->client, s->l->name, lower);
  return rc == RLOCK_OK
             ? rc
             : rlock__permit_result(
                   s->l, lower,
                   rc == RLOCK_ELOST ? RLOCK__HOLD_LOST : RLOCK__HOLD_NONE, 0);
}

int rlock_psemaphore_available(int64_t *available, rlock_psemaphore *s) {
  return query(available, s, "get", "rlock_psemaphore_available");
}

int rlock_psemaphore_permits(int64_t *permits, rlock_psemaphore *s) {
  return query(permits, s, "total", "rlock_psemaphore_permits");
}

int rlock_psemaphore_lease_ms(int64_t *remaining_ms, rlock_psemaphore *s,
                              const char *id) {
  static const char fn[] = "rlock_psemaphore_lease_ms";
  char lower[RLOCK_PERMIT_ID_LEN + 1];
  int rc = permit_args(s, id, lower, fn);
  if (rc != RLOCK_OK)
    return rc;
  if (remaining_ms == NULL)
    return rlock__err(RLOCK_EINVAL, "%s: remaining_ms is NULL", fn);
  rlock__call call;
  int64_t v = 0;
  rlock__psem_call(s->l, "lease", 0, lower, &call);
  rc = run(s->l, &call, 0, &v);
  rc = rlock__permit_outcome(s->l, "lease", lower, RLOCK__HOLD_NONE, rc, v, 0,
                             0);
  if (rc == RLOCK_OK)
    *remaining_ms = v;
  return rc;
}

int rlock_psemaphore_inspect(rlock_permits_info **out, rlock_psemaphore *s) {
  static const char fn[] = "rlock_psemaphore_inspect";
  int rc = usable(s, fn);
  if (rc != RLOCK_OK)
    return rc;
  if (out == NULL)
    return rlock__err(RLOCK_EINVAL, "%s: out is NULL", fn);
  *out = NULL;
  rlock__call call;
  rlock__reply *r;
  rlock__psem_call(s->l, "inspect", 0, NULL, &call);
  if ((rc = rlock__lock_run(s->l, &call, &r)) != RLOCK_OK)
    return rc;
  rc = rlock__permits_parse(r, out);
  rlock__reply_free(r);
  return rc;
}

/* ---- the count-down latch
 * ---------------------------------------------------- */

static int latch_args(rlock_latch *x, const char *fn) {
  int rc = usable(x, fn);
  return rc == RLOCK_OK ? rlock__latch_usable(x->l, fn) : rc;
}

int rlock_latch_try_set_count(int *set, rlock_latch *x, int64_t count) {
  static const char fn[] = "rlock_latch_try_set_count";
  int rc = latch_args(x, fn);
  return rc == RLOCK_OK ? one_flag(x, rlock__check_count(count, fn), "tryset",
                                   count, set, fn)
                        : rc;
}

int rlock_latch_count_down(rlock_latch *x) {
  static const char fn[] = "rlock_latch_count_down";
  int rc = latch_args(x, fn);
  return rc == RLOCK_OK ? one(x, RLOCK_OK, "down", 0, NULL, 1, NULL, fn) : rc;
}

int rlock_latch_count(int64_t *count, rlock_latch *x) {
  return query(count, x, "get", "rlock_latch_count");
}

int rlock_latch_await(rlock_latch *x, int64_t wait_ms, rlock_cancel *cancel) {
  int rc = latch_args(x, "rlock_latch_await");
  return rc == RLOCK_OK ? wait_for(x->l, "", wait_ms, 0, cancel) : rc;
}

int rlock_latch_delete(int *deleted, rlock_latch *x) {
  static const char fn[] = "rlock_latch_delete";
  int rc = latch_args(x, fn);
  return rc == RLOCK_OK ? one_flag(x, RLOCK_OK, "delete", 0, deleted, fn) : rc;
}
