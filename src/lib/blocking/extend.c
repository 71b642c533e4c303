/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * extend.c - rlock_lock_extend: a held lock's fresh fixed lease, on the
 * caller's thread (the steps are kinds/relet.c's, as the loop's
 * rlock_lock_extend_async's).
 */
#include "calls.h"
#include "common.h"
#include "lock_int.h"

int rlock_lock_extend_owner(rlock_lock *l, uint64_t owner_number,
                            int64_t lease_ms) {
  if (l == NULL)
    return rlock__err(RLOCK_EINVAL, "lock is NULL");
  int rc = rlock__blocking_check(l->client);
  if (rc != RLOCK_OK)
    return rc;
  char owner[RLOCK_OWNER_MAX], field[RLOCK_FIELD_MAX];
  rlock__owner_as(l->client, owner_number, owner);
  rlock__field(l, owner, field);
  if ((rc = rlock__extend_check(l, field, lease_ms)) != RLOCK_OK)
    return rc;
  rlock__call call;
  rlock__relet_call(l, field, lease_ms, &call);
  rlock__reply *r = NULL;
  int64_t sent = rlock__now_us(); /* the new lease runs from here at most */
  rc = rlock__call_run(l->client, &call, &r);
  rc = rlock__extend_result(l, field, lease_ms, rc, r, sent);
  rlock__reply_free(r);
  return rc;
}

int rlock_lock_extend(rlock_lock *l, int64_t lease_ms) {
  return rlock_lock_extend_owner(l, RLOCK_OWNER_THREAD, lease_ms);
}
