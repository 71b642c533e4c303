/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * calls.c - the blocking one-call functions: release, force release and
 * the queries, each one request on the caller's thread over a pooled
 * connection; and what every blocking function starts with. The calls
 * and how their answers read are kinds/'s (lock.c, query.c), shared
 * with the loop's loop/lops.c.
 */
#include <stdio.h>
#include <stdlib.h>

#include "calls.h"
#include "common.h"
#include "conn.h"
#include "lock_int.h"
#include "watchdog.h"

int rlock__lock_run_until(rlock_lock *l, rlock__call *call, int64_t deadline_us,
                          rlock__reply **out) {
  int rc = rlock__call_run_until(l->client, call, deadline_us, out);
  return rc == RLOCK_OK ? rc : rlock__wrongtype(l, rc);
}

int rlock__lock_run(rlock_lock *l, rlock__call *call, rlock__reply **out) {
  return rlock__lock_run_until(l, call, 0, out);
}

int rlock__blocking_check(const rlock_client *c) {
  if (!rlock__origin_ok(&c->origin))
    return rlock__origin_refuse(&c->origin);
  if (c->topo.refuse != NULL) /* set once, before the client is handed out */
    return rlock__err(RLOCK_EINVAL, "%s", c->topo.refuse);
  return RLOCK_OK;
}

int rlock__blocking_check_all(rlock_lock *const *members, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int rc = rlock__blocking_check(members[i]->client);
    if (rc != RLOCK_OK)
      return rc;
  }
  return RLOCK_OK;
}

/* ---- release ------------------------------------------------------------ */

/* The blocking release's follow-up (rlock__call.then): once an answer is
 * read, decide whether the release goes again, and when it does not,
 * delete its latch on the same connection, unawaited. */
typedef struct unlatch {
  const rlock_lock *l;
  const rlock__latch *latch;
  int decided; /* the answer was read: `again` holds the decision */
  int again;
} unlatch;

static int unlatch_then(void *arg, const rlock__call *call,
                        const rlock__reply *r, rlock__buf *out) {
  unlatch *u = arg;
  u->decided = 1;
  u->again = rlock__release_again(u->latch, RLOCK_OK, call);
  if (u->again || !rlock__latch_spent(u->latch, r))
    return 0;
  char key[RLOCK__LATCH_KEY_MAX];
  rlock__latch_key(u->l, u->latch, key, sizeof key);
  const char *argv[2] = {"DEL", key};
  return rlock__resp_command(out, 2, argv, NULL) == 0;
}

int rlock_lock_release(rlock_lock *l) {
  return rlock_lock_release_owner(l, RLOCK_OWNER_THREAD);
}

int rlock_lock_release_owner(rlock_lock *l, uint64_t owner_number) {
  if (l == NULL)
    return rlock__err(RLOCK_EINVAL, "lock is NULL");
  int rc = rlock__blocking_check(l->client); /* before the hold record */
  if (rc != RLOCK_OK)
    return rc;
  char owner[RLOCK_OWNER_MAX], field[RLOCK_FIELD_MAX], id[33];
  rlock__owner_as(l->client, owner_number, owner);
  rlock__field(l, owner, field);
  int state;
  int64_t keep_ms;
  /* Stop renewal first: a release must never be outlived by renewal. */
  rlock__hold_pop(l->client, l->name, field, &state, &keep_ms);
  rlock__latch latch;
  rlock__release_latch(l, &latch, id);
  rlock__call call;
  rlock__reply *r = NULL;
  unlatch u = {.l = l, .latch = &latch};
  for (;;) {
    l->kind->release(l, owner, keep_ms, &latch, &call);
    call.sync = 1;
    call.then = latch.ttl_ms > 0 ? unlatch_then : NULL;
    call.then_arg = &u;
    u.decided = 0;
    rc = rlock__lock_run(l, &call, &r);
    if (!(u.decided ? u.again : rlock__release_again(&latch, rc, &call)))
      break;
    rlock__reply_free(r);
    r = NULL;
    rlock__sleep_ms(RLOCK__RELEASE_PAUSE_MS);
  }
  if (rc != RLOCK_OK)
    return rc;
  rc = rlock__release_result(l, &call, field, state, r);
  rlock__reply_free(r);
  return rc;
}

int rlock_lock_force_release(int *deleted, rlock_lock *l) {
  if (l == NULL)
    return rlock__err(RLOCK_EINVAL, "lock is NULL");
  int rc = rlock__blocking_check(l->client);
  if (rc != RLOCK_OK)
    return rc;
  rlock__call call;
  rlock__reply *r;
  l->kind->force_release(l, &call);
  call.sync = 1;
  rc = rlock__lock_run(l, &call, &r);
  if (rc != RLOCK_OK)
    return rc;
  rc = rlock__force_result(l, &call, r, deleted);
  rlock__reply_free(r);
  return rc;
}

/* ---- queries ------------------------------------------------------------ */

int rlock_lock_is_locked(int *locked, rlock_lock *l) {
  if (locked == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_lock_is_locked: locked is NULL");
  rlock_lock_info *info = NULL;
  int rc = rlock_lock_inspect(&info, l);
  if (rc == RLOCK_OK)
    *locked = rlock__info_locked(l, info);
  rlock_lock_info_free(info);
  return rc;
}

int rlock_lock_is_held(int *held, rlock_lock *l) {
  return rlock_lock_is_held_owner(held, l, RLOCK_OWNER_THREAD);
}

int rlock_lock_is_held_owner(int *held, rlock_lock *l, uint64_t owner) {
  int64_t count = 0;
  if (held == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_lock_is_held: held is NULL");
  int rc = rlock_lock_hold_count_owner(&count, l, owner);
  if (rc == RLOCK_OK)
    *held = count > 0;
  return rc;
}

int rlock_lock_hold_count(int64_t *count, rlock_lock *l) {
  return rlock_lock_hold_count_owner(count, l, RLOCK_OWNER_THREAD);
}

int rlock_lock_hold_count_owner(int64_t *count, rlock_lock *l,
                                uint64_t owner_number) {
  if (count == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_lock_hold_count: count is NULL");
  if (l == NULL)
    return rlock__err(RLOCK_EINVAL, "lock is NULL");
  int rc = rlock__blocking_check(l->client);
  if (rc != RLOCK_OK)
    return rc;
  char owner[RLOCK_OWNER_MAX];
  rlock__owner_as(l->client, owner_number, owner);
  rlock__call call;
  rlock__count_call(l, owner, &call);
  rlock__reply *r;
  rc = rlock__lock_run(l, &call, &r);
  if (rc != RLOCK_OK)
    return rc;
  rc = rlock__count_reply(r, count);
  rlock__reply_free(r);
  return rc;
}

int rlock_lock_token(int64_t *token, rlock_lock *l) {
  if (token == NULL || l == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_lock_token: %s is NULL",
                      token ? "lock" : "token");
  int rc = rlock__blocking_check(l->client);
  if (rc != RLOCK_OK)
    return rc;
  rlock__call call;
  rlock__call_cmd(&call, "GET");
  rlock__call_key(&call, l->token);
  rlock__reply *r;
  rc = rlock__call_run(l->client, &call, &r);
  if (rc == RLOCK_EWRONGTYPE)
    return rlock__err(rc,
                      "token key '%s' holds a value of another type, "
                      "not a counter",
                      l->token);
  if (rc != RLOCK_OK)
    return rc;
  rc = rlock__token_reply(l, r, token);
  rlock__reply_free(r);
  return rc;
}

int rlock_lock_ttl(int64_t *ttl_ms, rlock_lock *l) {
  if (ttl_ms == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_lock_ttl: ttl_ms is NULL");
  rlock_lock_info *info;
  int rc = rlock_lock_inspect(&info, l);
  if (rc != RLOCK_OK)
    return rc;
  *ttl_ms = rlock_lock_info_ttl_ms(info);
  rlock_lock_info_free(info);
  return RLOCK_OK;
}

int rlock_lock_inspect(rlock_lock_info **out, rlock_lock *l) {
  if (out == NULL || l == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_lock_inspect: %s is NULL",
                      out ? "lock" : "out");
  *out = NULL;
  int rc = rlock__blocking_check(l->client);
  if (rc != RLOCK_OK)
    return rc;
  rlock_lock_info *info = rlock__info_new();
  if (info == NULL)
    return RLOCK_ENOMEM;
  rlock__call call;
  rlock__reply *r;
  l->kind->inspect(l, &call);
  rc = rlock__lock_run(l, &call, &r);
  if (rc == RLOCK_OK) {
    rc = rlock__inspect_parse(r, info, call.served_by);
    rlock__reply_free(r);
  }
  if (rc != RLOCK_OK) {
    rlock_lock_info_free(info);
    return rc;
  }
  *out = info;
  return RLOCK_OK;
}
