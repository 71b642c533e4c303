/*
 * lock.c - lock objects and the operations every kind shares (acquire
 * entry points, release, force release, check); and the reentrant kind
 * (Redisson RLock): its attempt, release and force-release scripts.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "lock_int.h"
#include "names.h"

#define UNLOCK_MESSAGE "0"

int rlock__lock_script(rlock_lock *l, const rlock__script *s, int nkeys,
                       int nargs, const char **kv, redisReply **out) {
  int rc = rlock__cmd_script(l->client, s, nkeys, nargs, kv, NULL, out);
  return rc == RLOCK_OK ? rc : rlock__wrongtype(l, rc);
}

int rlock__attempt_reply(rlock_lock *l, redisReply *r, int64_t *ttl_ms) {
  int rc = RLOCK_OK;
  if (r->type == REDIS_REPLY_INTEGER) {
    *ttl_ms = r->integer;
    rc = RLOCK_ELOCKED;
  } else if (r->type != REDIS_REPLY_NIL) {
    rc = rlock__err(RLOCK_EPROTO, "%s acquire script returned reply type %d",
                    l->kind->label, r->type);
  }
  freeReplyObject(r);
  return rc;
}

/* ---- the reentrant kind ------------------------------------------------ */

static int attempt(rlock_lock *l, const char *owner, int64_t lease_ms,
                   int64_t wait_ms, int64_t *ttl_ms) {
  (void)wait_ms;
  char lease[24];
  snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
  const char *kv[3] = {l->name, lease, owner};
  redisReply *r;
  int rc = rlock__lock_script(l, &rlock__script_lock_acquire, 1, 2, kv, &r);
  return rc == RLOCK_OK ? rlock__attempt_reply(l, r, ttl_ms) : rc;
}

static const char *channel(rlock_lock *l, const char *owner, char *buf,
                           size_t size) {
  (void)owner, (void)buf, (void)size;
  return l->channel;
}

static int release(rlock_lock *l, const char *owner, int64_t keep_ms,
                   redisReply **out) {
  char keep[24];
  snprintf(keep, sizeof keep, "%" PRId64, keep_ms);
  const char *kv[6] = {l->name, l->channel, UNLOCK_MESSAGE, keep, owner,
                       "PUBLISH"};
  return rlock__lock_script(l, &rlock__script_lock_release, 2, 4, kv, out);
}

static int force_release(rlock_lock *l, redisReply **out) {
  const char *kv[4] = {l->name, l->channel, UNLOCK_MESSAGE, "PUBLISH"};
  return rlock__lock_script(l, &rlock__script_lock_force_release, 2, 2, kv,
                            out);
}

static int inspect(rlock_lock *l, redisReply **out) {
  const char *kv[1] = {l->name};
  return rlock__lock_script(l, &rlock__script_lock_inspect, 1, 0, kv, out);
}

static const rlock__kind reentrant_kind = {
    .label = "lock",
    .field_suffix = "",
    .attempt = attempt,
    .channel = channel,
    .release = release,
    .force_release = force_release,
    .inspect = inspect,
};

/* ---- lock objects ------------------------------------------------------ */

void rlock__field(const rlock_lock *l, const char *owner, char *buf) {
  size_t n = strlen(owner), m = strlen(l->kind->field_suffix);
  memcpy(buf, owner, n); /* on every operation: no snprintf */
  memcpy(buf + n, l->kind->field_suffix, m + 1);
}

int rlock__lock_alloc(rlock_lock **out, rlock_client *client, const char *name,
                      const rlock__kind *kind, enum rlock__keys keys) {
  if (out == NULL || client == NULL)
    return rlock__err(RLOCK_EINVAL, "cannot create a %s: %s is NULL",
                      kind->label, out ? "client" : "out");
  *out = NULL;
  int rc = rlock__name_check(name, "lock name");
  if (rc != RLOCK_OK)
    return rc;
  rlock_lock *l = calloc(1, sizeof *l);
  if (l == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  l->client = client;
  l->kind = kind;
  l->name = rlock__strdup(name);
  l->channel = rlock__name_prefixed(
      keys == RLOCK__KEYS_RW ? "redisson_rwlock" : "redisson_lock__channel",
      name);
  if (keys == RLOCK__KEYS_FAIR) {
    l->queue = rlock__name_prefixed("redisson_lock_queue", name);
    l->timeouts = rlock__name_prefixed("redisson_lock_timeout", name);
  }
  if (keys == RLOCK__KEYS_RW)
    l->base = rlock__name_braced(name);
  if (l->name == NULL || l->channel == NULL ||
      (keys == RLOCK__KEYS_FAIR && (l->queue == NULL || l->timeouts == NULL)) ||
      (keys == RLOCK__KEYS_RW && l->base == NULL)) {
    rlock_lock_free(l);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  *out = l;
  return RLOCK_OK;
}

int rlock__lock_is_plain(const rlock_lock *l) {
  return l->kind == &reentrant_kind;
}

int rlock_lock_new(rlock_lock **out, rlock_client *client, const char *name) {
  return rlock__lock_alloc(out, client, name, &reentrant_kind,
                           RLOCK__KEYS_PLAIN);
}

void rlock_lock_free(rlock_lock *l) {
  if (l == NULL)
    return;
  free(l->name);
  free(l->channel);
  free(l->queue);
  free(l->timeouts);
  free(l->base);
  free(l);
}

const char *rlock_lock_name(const rlock_lock *l) { return l ? l->name : NULL; }

int rlock_lock_acquire(rlock_lock *l) {
  return rlock__acquire(l, RLOCK_WAIT_FOREVER, RLOCK_LEASE_WATCHDOG, NULL);
}

int rlock_lock_acquire_lease(rlock_lock *l, int64_t lease_ms) {
  if (lease_ms == 0)
    return rlock__err(RLOCK_EINVAL, "lease must be at least 1 ms; use "
                                    "rlock_lock_acquire() for the watchdog");
  return rlock__acquire(l, RLOCK_WAIT_FOREVER, lease_ms, NULL);
}

int rlock_lock_try_acquire(rlock_lock *l, int64_t wait_ms, int64_t lease_ms) {
  return rlock__acquire(l, wait_ms, lease_ms, NULL);
}

int rlock_lock_try_acquire_cancel(rlock_lock *l, int64_t wait_ms,
                                  int64_t lease_ms, rlock_cancel *cancel) {
  return rlock__acquire(l, wait_ms, lease_ms, cancel);
}

/* Interpret a release script's answer given what we knew locally about
 * the hold of `field`. */
static int release_result(rlock_lock *l, const char *field, int state,
                          const redisReply *r) {
  int gone = r->type == REDIS_REPLY_NIL ||
             (r->type == REDIS_REPLY_INTEGER && r->integer == 2);
  if (gone && state == RLOCK__HOLD_NONE)
    return rlock__err(RLOCK_ENOTHELD, "%s '%s' is not held by this thread "
                      "(%s)", l->kind->label, l->name, field);
  if (gone)
    return rlock__err(RLOCK_ELOST, "%s '%s' was lost before release: it "
                      "expired or was deleted while held", l->kind->label,
                      l->name);
  if (r->type != REDIS_REPLY_INTEGER)
    return rlock__err(RLOCK_EPROTO, "unlock script returned reply type %d",
                      r->type);
  if (r->integer == 1) /* our last hold went: nothing left to renew */
    rlock__hold_forget(l->client, l->name, field);
  return RLOCK_OK;
}

int rlock_lock_release(rlock_lock *l) {
  if (l == NULL)
    return rlock__err(RLOCK_EINVAL, "lock is NULL");
  char owner[RLOCK_OWNER_MAX], field[RLOCK_FIELD_MAX];
  rlock__owner(l->client, owner);
  rlock__field(l, owner, field);
  int state;
  int64_t keep_ms;
  /* Stop renewal first: a release must never be outlived by renewal. */
  rlock__hold_pop(l->client, l->name, field, &state, &keep_ms);
  redisReply *r;
  int rc = l->kind->release(l, owner, keep_ms, &r);
  if (rc != RLOCK_OK)
    return rc;
  rc = release_result(l, field, state, r);
  freeReplyObject(r);
  return rc;
}

int rlock_lock_force_release(int *deleted, rlock_lock *l) {
  if (l == NULL)
    return rlock__err(RLOCK_EINVAL, "lock is NULL");
  redisReply *r;
  int rc = l->kind->force_release(l, &r);
  if (rc != RLOCK_OK)
    return rc;
  if (r->type != REDIS_REPLY_INTEGER) {
    rc = rlock__err(RLOCK_EPROTO, "force-unlock script returned type %d",
                    r->type);
  } else {
    /* Only a deletion ends local holds: a read lock's force release does
     * nothing to a write-held lock, whose renewal must go on. */
    if (r->integer == 1)
      rlock__hold_mark_lost(l->client, l->name);
    if (deleted != NULL)
      *deleted = r->integer == 1;
  }
  freeReplyObject(r);
  return rc;
}

int rlock_lock_check(rlock_lock *l) {
  if (l == NULL)
    return rlock__err(RLOCK_EINVAL, "lock is NULL");
  char owner[RLOCK_OWNER_MAX], field[RLOCK_FIELD_MAX];
  rlock__owner(l->client, owner);
  rlock__field(l, owner, field);
  return rlock__hold_check(l->client, l->name, field);
}
