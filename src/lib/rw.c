/*
 * rw.c - the read-write lock (Redisson RReadWriteLock): a read kind and a
 * write kind over one hash at the lock's name.
 *
 * The hash holds mode = read|write, "<owner>" = read hold count and
 * "<owner>:write" = write hold count; each read hold i also has its own
 * key "{name}:<owner>:rwlock_timeout:i" with that hold's lease, so a
 * crashed reader's holds expire by themselves. Both halves share the
 * channel redisson_rwlock:{name}: a read release publishes "0" (wakes one
 * waiter), a write release "1" (wakes them all).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "lock_int.h"

#define TP_MAX (RLOCK_MAX_NAME_LEN + RLOCK_OWNER_MAX + 32)

/* This owner's timeout-key prefix: "{name}:<owner>:rwlock_timeout". */
static void timeout_prefix(const rlock_lock *l, const char *owner, char *buf) {
  snprintf(buf, TP_MAX, "%s:%s:rwlock_timeout", l->base, owner);
}

static const char *channel(rlock_lock *l, const char *owner, char *buf,
                           size_t size) {
  (void)owner, (void)buf, (void)size;
  return l->channel;
}

static int inspect(rlock_lock *l, redisReply **out) {
  const char *kv[1] = {l->name};
  return rlock__lock_script(l, &rlock__script_lock_inspect, 1, 0, kv, out);
}

static int force_release(rlock_lock *l, const char *mode, const char *msg,
                         redisReply **out) {
  const char *kv[5] = {l->name, l->channel, msg, "PUBLISH", mode};
  return rlock__lock_script(l, &rlock__script_rw_force_release, 2, 3, kv, out);
}

/* ---- read ---------------------------------------------------------------- */

static int read_attempt(rlock_lock *l, const char *owner, int64_t lease_ms,
                        int64_t wait_ms, int64_t *ttl_ms) {
  (void)wait_ms;
  char tp[TP_MAX], lease[24], wfield[RLOCK_FIELD_MAX];
  timeout_prefix(l, owner, tp);
  snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
  snprintf(wfield, sizeof wfield, "%s:write", owner);
  const char *kv[5] = {l->name, tp, lease, owner, wfield};
  redisReply *r;
  int rc = rlock__lock_script(l, &rlock__script_read_acquire, 2, 3, kv, &r);
  return rc == RLOCK_OK ? rlock__attempt_reply(l, r, ttl_ms) : rc;
}

static int read_release(rlock_lock *l, const char *owner, int64_t keep_ms,
                        redisReply **out) {
  (void)keep_ms; /* read holds keep their own leases */
  char tp[TP_MAX];
  timeout_prefix(l, owner, tp);
  const char *kv[7] = {l->name, l->channel, tp, l->base, "0", owner,
                       "PUBLISH"};
  return rlock__lock_script(l, &rlock__script_read_release, 4, 3, kv, out);
}

static int read_force(rlock_lock *l, redisReply **out) {
  return force_release(l, "read", "0", out);
}

/* Redisson's rule: locked for reading when read holds exist, also those a
 * writer took on top of its write hold. */
static int read_locked(const rlock_lock_info *info) {
  const char *mode = rlock_lock_info_mode(info);
  if (mode == NULL || strcmp(mode, "read") == 0)
    return mode != NULL;
  for (size_t i = 0; i < rlock_lock_info_holder_count(info); i++) {
    const char *f = rlock_lock_info_holder_owner(info, i);
    size_t n = strlen(f);
    if (n < 6 || strcmp(f + n - 6, ":write") != 0)
      return 1;
  }
  return 0;
}

static const rlock__kind read_kind = {
    .label = "read lock",
    .field_suffix = "",
    .read_renewal = 1,
    .attempt = read_attempt,
    .channel = channel,
    .release = read_release,
    .force_release = read_force,
    .inspect = inspect,
    .locked = read_locked,
};

/* ---- write --------------------------------------------------------------- */

static int write_attempt(rlock_lock *l, const char *owner, int64_t lease_ms,
                         int64_t wait_ms, int64_t *ttl_ms) {
  (void)wait_ms;
  char lease[24], field[RLOCK_FIELD_MAX];
  snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
  rlock__field(l, owner, field);
  const char *kv[4] = {l->name, lease, field, owner};
  redisReply *r;
  int rc = rlock__lock_script(l, &rlock__script_write_acquire, 1, 3, kv, &r);
  if (rc != RLOCK_OK)
    return rc;
  if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "UPGRADE") == 0) {
    freeReplyObject(r);
    return rlock__err(RLOCK_EDEADLK,
                      "read-write lock '%s': this thread holds read holds, "
                      "so waiting for the write hold would wait on itself; "
                      "release the read holds first", l->name);
  }
  return rlock__attempt_reply(l, r, ttl_ms);
}

static int write_release(rlock_lock *l, const char *owner, int64_t keep_ms,
                         redisReply **out) {
  char keep[24], field[RLOCK_FIELD_MAX];
  snprintf(keep, sizeof keep, "%" PRId64, keep_ms);
  rlock__field(l, owner, field);
  const char *kv[6] = {l->name, l->channel, "1", keep, field, "PUBLISH"};
  return rlock__lock_script(l, &rlock__script_write_release, 2, 4, kv, out);
}

static int write_force(rlock_lock *l, redisReply **out) {
  return force_release(l, "write", "1", out);
}

static int write_locked(const rlock_lock_info *info) {
  const char *mode = rlock_lock_info_mode(info);
  return mode != NULL && strcmp(mode, "write") == 0;
}

static const rlock__kind write_kind = {
    .label = "write lock",
    .field_suffix = ":write",
    .attempt = write_attempt,
    .channel = channel,
    .release = write_release,
    .force_release = write_force,
    .inspect = inspect,
    .locked = write_locked,
};

int rlock_lock_new_read(rlock_lock **out, rlock_client *client,
                        const char *name) {
  return rlock__lock_alloc(out, client, name, &read_kind, RLOCK__KEYS_RW);
}

int rlock_lock_new_write(rlock_lock **out, rlock_client *client,
                         const char *name) {
  return rlock__lock_alloc(out, client, name, &write_kind, RLOCK__KEYS_RW);
}
