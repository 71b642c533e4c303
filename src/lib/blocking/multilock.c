/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * multilock.c - a MultiLock on the calling thread: members taken in order,
 * each with what is left of the caller's wait (a member waits through its
 * own pub/sub machinery, so a MultiLock wakes as soon as the member
 * blocking it is freed). With a fixed lease, once the last member is
 * taken every earlier one is given the full lease again (kinds/
 * multilock.c's relet steps, Redisson's tryLock step 5). Any failure
 * releases the members already taken, in reverse order, before returning.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "calls.h"
#include "common.h"
#include "lock_int.h"
#include "rlock/multilock.h"
#include "watchdog.h"

/* Release `owner`'s holds of members [0, n) in reverse; keeps the
 * caller's last error. */
static void release_first(rlock_multilock *m, size_t n, uint64_t owner) {
  rlock__saved_error saved;
  rlock__error_save(&saved);
  /* Also once the caller's wait has ended or was canceled. */
  rlock__bound was = rlock__bound_extend(rlock__cleanup_bound());
  while (n-- > 0)
    rlock_lock_release_owner(m->members[n], owner);
  rlock__bound_restore(was);
  rlock__error_restore(&saved);
}

/* Give member i, held by `owner`, a fresh fixed lease of `lease_ms`, and
 * tell its hold record when that now ends. It must still be held: its
 * local record must vouch for it (a lease that ran out may have let
 * another owner in and out meanwhile, which a read lock's shared hash
 * would not show), and the server must still have its hash field.
 * renew.lua (renew_read.lua for a read hold) re-sets the TTL only if the
 * field exists, so a hold that is gone is never re-created. */
static int relet(rlock_multilock *m, size_t i, const char *owner,
                 int64_t lease_ms) {
  rlock_lock *l = m->members[i];
  char field[RLOCK_FIELD_MAX];
  rlock__field(l, owner, field);
  int rc = rlock__relet_check(l, i, field, lease_ms);
  if (rc != RLOCK_OK)
    return rc;
  rlock__call call;
  rlock__relet_call(l, field, lease_ms, &call);
  rlock__reply *r = NULL;
  int64_t sent = rlock__now_us(); /* the new lease runs from here at most */
  rc = rlock__lock_run(l, &call, &r);
  rc = rlock__relet_result(l, i, field, lease_ms, rc, r, sent);
  rlock__reply_free(r);
  return rc;
}

/* Take every member in order for the options' owner, each with what is
 * left of the wait; all or none. */
static int acquire_all(rlock_multilock *m, const rlock_acquire_options *o) {
  int64_t deadline = rlock__deadline_after_ms(o->wait_ms);
  rlock_acquire_options member = *o;
  for (size_t i = 0; i < m->n; i++) {
    member.wait_ms = rlock__multi_wait_left(o->wait_ms, deadline);
    int rc = rlock__multi_in_time(m, i, o->wait_ms, deadline);
    if (rc == RLOCK_OK)
      rc = rlock__acquire_opts(m->members[i], &member);
    if (rc != RLOCK_OK) {
      release_first(m, rlock__multi_give_back(i, rc), o->owner);
      return rc;
    }
  }
  /* Every member is held: the earlier ones get their full lease again. */
  for (size_t i = 0; rlock__multi_relets(m, i, o->lease_ms); i++) {
    char owner[RLOCK_OWNER_MAX]; /* the owner, on i's client */
    rlock__owner_as(m->members[i]->client, o->owner, owner);
    int rc = relet(m, i, owner, o->lease_ms);
    if (rc != RLOCK_OK) {
      release_first(m, m->n, o->owner);
      return rc;
    }
  }
  return RLOCK_OK;
}

int rlock_multilock_acquire_opts(rlock_multilock *m,
                                 const rlock_acquire_options *opts) {
  if (m == NULL)
    return rlock__err(RLOCK_EINVAL, "MultiLock is NULL");
  rlock_acquire_options o;
  int rc = rlock__options(&o, opts);
  if (rc != RLOCK_OK ||
      (rc = rlock__blocking_check_all(m->members, m->n)) != RLOCK_OK)
    return rc;
  if (o.token != NULL)
    return rlock__err(RLOCK_EINVAL, "a MultiLock issues no fencing token "
                                    "(each fenced member has its own)");
  rlock_client *c = m->members[0]->client;
  int64_t start = rlock__now_us();
  rlock__bound was =
      rlock__bound_enter(rlock__wait_bound(c, o.wait_ms), o.cancel);
  rc = acquire_all(m, &o);
  rlock__obs_acquire_end(&c->obs.kinds[RLOCK__MK_MULTILOCK], rc, 0, start, 0);
  rlock__bound_restore(was);
  return rc;
}

int rlock_multilock_try_acquire_cancel(rlock_multilock *m, int64_t wait_ms,
                                       int64_t lease_ms, rlock_cancel *cancel) {
  rlock_acquire_options o = rlock__options_with(wait_ms, lease_ms, cancel);
  return rlock_multilock_acquire_opts(m, &o);
}

int rlock_multilock_try_acquire(rlock_multilock *m, int64_t wait_ms,
                                int64_t lease_ms) {
  return rlock_multilock_try_acquire_cancel(m, wait_ms, lease_ms, NULL);
}

int rlock_multilock_acquire(rlock_multilock *m) {
  return rlock_multilock_acquire_opts(m, NULL);
}

int rlock_multilock_release(rlock_multilock *m) {
  return rlock_multilock_release_owner(m, RLOCK_OWNER_THREAD);
}

int rlock_multilock_release_owner(rlock_multilock *m, uint64_t owner) {
  if (m == NULL)
    return rlock__err(RLOCK_EINVAL, "MultiLock is NULL");
  int rc = rlock__blocking_check_all(m->members, m->n); /* before any hold */
  if (rc != RLOCK_OK)
    return rc;
  rlock__saved_error first = {RLOCK_OK, ""};
  for (size_t i = m->n; i-- > 0;)
    if (rlock_lock_release_owner(m->members[i], owner) != RLOCK_OK &&
        first.code == RLOCK_OK)
      rlock__error_save(&first);
  return first.code == RLOCK_OK ? RLOCK_OK : rlock__error_restore(&first);
}

int rlock_multilock_is_held(int *held, rlock_multilock *m) {
  return rlock_multilock_is_held_owner(held, m, RLOCK_OWNER_THREAD);
}

int rlock_multilock_is_held_owner(int *held, rlock_multilock *m,
                                  uint64_t owner) {
  if (held == NULL || m == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_multilock_is_held: %s is NULL",
                      held ? "MultiLock" : "held");
  *held = 1;
  for (size_t i = 0; i < m->n && *held; i++) {
    int rc = rlock_lock_is_held_owner(held, m->members[i], owner);
    if (rc != RLOCK_OK)
      return rc;
  }
  return RLOCK_OK;
}
