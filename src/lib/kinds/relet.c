/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * relet.c - a held lock given a fresh fixed lease, the steps both drivers
 * follow: a MultiLock's members once the last one is taken (Redisson's
 * tryLock, step 5) and rlock_lock_extend. renew.lua (renew_read.lua for a
 * read hold) sets the TTL only while the owner's field exists, so a hold
 * that is gone is never re-created.
 */
#include <stdio.h>

#include "common.h"
#include "lock_int.h"
#include "script.h"
#include "watchdog.h"

void rlock__relet_call(rlock_lock *l, const char *field, int64_t lease_ms,
                       rlock__call *call) {
  int read = l->kind->read_renewal && l->base != NULL;
  rlock__call_script(call,
                     read ? &rlock__script_renew_read : &rlock__script_renew);
  rlock__call_key(call, l->name);
  rlock__call_num(call, lease_ms);
  rlock__call_arg(call, field);
  if (read)
    rlock__call_arg(call, l->base);
}

int rlock__relet_alive(const rlock__reply *r) {
  if (r->type != RLOCK__R_ARRAY || r->n != 1 ||
      r->elem[0]->type != RLOCK__R_INT)
    return -1;
  return r->elem[0]->integer != 0;
}

int rlock__relet_check(rlock_lock *l, size_t i, const char *field,
                       int64_t lease_ms) {
  if (rlock__hold_check(l->client, l->name, field) != RLOCK_OK)
    return rlock__err(RLOCK_ELOCKED,
                      "MultiLock member %zu (%s '%s'): its "
                      "lease of %lld ms ran out before the last member was "
                      "acquired",
                      i, l->kind->label, l->name, (long long)lease_ms);
  return RLOCK_OK;
}

int rlock__relet_result(rlock_lock *l, size_t i, const char *field,
                        int64_t lease_ms, int rc, const rlock__reply *r,
                        int64_t sent_us) {
  if (rc != RLOCK_OK) {
    char why[256];
    snprintf(why, sizeof why, "%s", rlock_error_last()->message);
    return rlock__err(rc,
                      "MultiLock member %zu (%s '%s'): giving it the "
                      "full lease failed: %s",
                      i, l->kind->label, l->name, why);
  }
  int alive = rlock__relet_alive(r);
  if (alive < 0)
    return rlock__err(RLOCK_EPROTO,
                      "MultiLock member %zu (%s '%s'): "
                      "unexpected reply to the lease renewal",
                      i, l->kind->label, l->name);
  if (alive == 0)
    return rlock__err(RLOCK_ELOCKED,
                      "MultiLock member %zu (%s '%s') was "
                      "gone (expired or force-released) before the last "
                      "member was acquired",
                      i, l->kind->label, l->name);
  rlock__hold_relet(l->client, l->name, field, lease_ms, sent_us);
  return RLOCK_OK;
}

/* ---- one hold's fresh fixed lease (rlock_lock_extend) -------------------- */

int rlock__extend_check(rlock_lock *l, const char *field, int64_t lease_ms) {
  if (lease_ms <= 0 || lease_ms > RLOCK_MAX_DURATION_MS)
    return rlock__err(RLOCK_EINVAL,
                      "lease %lld ms out of range (1 ms to 365 days; the "
                      "watchdog's holds need no extension)",
                      (long long)lease_ms);
  int rc = rlock__hold_check(l->client, l->name, field);
  if (rc == RLOCK_ENOTHELD)
    return rlock__err(rc, "%s '%s' is not held by this owner", l->kind->label,
                      l->name);
  if (rc != RLOCK_OK)
    return rc; /* RLOCK_ELOST, worded */
  if (rlock__hold_fixed_levels(l->client, l->name, field) == 0)
    return rlock__err(RLOCK_EINVAL,
                      "%s '%s' is renewed by the watchdog: it needs no "
                      "extension (take it with a fixed lease to extend it)",
                      l->kind->label, l->name);
  return RLOCK_OK;
}

int rlock__extend_result(rlock_lock *l, const char *field, int64_t lease_ms,
                         int rc, const rlock__reply *r, int64_t sent_us) {
  if (rc != RLOCK_OK)
    return rlock__wrongtype(l, rc);
  int alive = rlock__relet_alive(r);
  if (alive < 0)
    return rlock__err(RLOCK_EPROTO,
                      "%s '%s': unexpected reply to the lease "
                      "renewal",
                      l->kind->label, l->name);
  if (alive == 0)
    return rlock__err(RLOCK_ELOST,
                      "%s '%s' was lost (expired, or force-released) before "
                      "it could be extended",
                      l->kind->label, l->name);
  rlock__hold_relet(l->client, l->name, field, lease_ms, sent_us);
  return RLOCK_OK;
}
