/*
 * fair.c - the fair lock (Redisson RFairLock): first come, first served.
 *
 * Waiters queue in the list redisson_lock_queue:{name} with a deadline in
 * the sorted set redisson_lock_timeout:{name} (epoch ms: Java clients read
 * and write the same scores, so this is the one place where the library
 * uses the wall clock). Release notifies only the head waiter, on its own
 * channel redisson_lock__channel:{name}:<owner>. A waiter that gives up
 * leaves the queue at once (fair_leave.lua, Redisson's acquireFailed).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "lock_int.h"
#include "names.h"

#define UNLOCK_MESSAGE "0"

/* The `wait` the scripts use for the deadline arithmetic: the waiter's
 * own budget, or the configured fair wait timeout when it has none. */
static int64_t fair_wait(const rlock_lock *l, int64_t wait_ms) {
  return wait_ms > 0 ? wait_ms : l->client->cfg.fair_wait_timeout_ms;
}

static int attempt(rlock_lock *l, const char *owner, int64_t lease_ms,
                   int64_t wait_ms, int64_t *ttl_ms) {
  char lease[24], wait[24], now[24];
  snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
  snprintf(wait, sizeof wait, "%" PRId64, fair_wait(l, wait_ms));
  snprintf(now, sizeof now, "%" PRId64, rlock__epoch_ms());
  const char *kv[10] = {l->name, l->queue, l->timeouts, l->channel, lease,
                        owner, wait, now, "PUBLISH", wait_ms != 0 ? "1" : "0"};
  redisReply *r;
  int rc = rlock__lock_script(l, &rlock__script_fair_acquire, 4, 6, kv, &r);
  return rc == RLOCK_OK ? rlock__attempt_reply(l, r, ttl_ms) : rc;
}

static const char *channel(rlock_lock *l, const char *owner, char *buf,
                           size_t size) {
  snprintf(buf, size, "%s:%s", l->channel, owner);
  return buf;
}

/* Leave the queue; keeps the caller's last error (the reason it gave up). */
static void give_up(rlock_lock *l, const char *owner, int64_t wait_ms) {
  rlock__saved_error saved;
  char wait[24];
  rlock__error_save(&saved);
  snprintf(wait, sizeof wait, "%" PRId64, fair_wait(l, wait_ms));
  const char *kv[7] = {l->name, l->queue, l->timeouts, l->channel, owner,
                       wait, "PUBLISH"};
  redisReply *r;
  if (rlock__lock_script(l, &rlock__script_fair_leave, 4, 3, kv, &r) ==
      RLOCK_OK)
    freeReplyObject(r);
  rlock__error_restore(&saved);
}

static int release(rlock_lock *l, const char *owner, int64_t keep_ms,
                   redisReply **out) {
  char keep[24], now[24];
  snprintf(keep, sizeof keep, "%" PRId64, keep_ms);
  snprintf(now, sizeof now, "%" PRId64, rlock__epoch_ms());
  const char *kv[9] = {l->name, l->queue, l->timeouts, l->channel,
                       UNLOCK_MESSAGE, keep, owner, now, "PUBLISH"};
  return rlock__lock_script(l, &rlock__script_fair_release, 4, 5, kv, out);
}

/* Deletes a lock of any kind (tools force-release a name without knowing
 * its kind), so it also names the read-write channel to wake. */
static int force_release(rlock_lock *l, redisReply **out) {
  char now[24];
  snprintf(now, sizeof now, "%" PRId64, rlock__epoch_ms());
  char *rw_channel = rlock__name_prefixed("redisson_rwlock", l->name);
  if (rw_channel == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  const char *kv[8] = {l->name, l->queue, l->timeouts, l->channel,
                       rw_channel, UNLOCK_MESSAGE, now, "PUBLISH"};
  int rc = rlock__lock_script(l, &rlock__script_fair_force_release, 5, 3, kv,
                              out);
  free(rw_channel);
  return rc;
}

static int inspect(rlock_lock *l, redisReply **out) {
  char now[24];
  snprintf(now, sizeof now, "%" PRId64, rlock__epoch_ms());
  const char *kv[4] = {l->name, l->queue, l->timeouts, now};
  return rlock__lock_script(l, &rlock__script_fair_inspect, 3, 1, kv, out);
}

static const rlock__kind fair_kind = {
    .label = "fair lock",
    .field_suffix = "",
    .attempt = attempt,
    .channel = channel,
    .give_up = give_up,
    .release = release,
    .force_release = force_release,
    .inspect = inspect,
};

int rlock_lock_new_fair(rlock_lock **out, rlock_client *client,
                        const char *name) {
  return rlock__lock_alloc(out, client, name, &fair_kind, RLOCK__KEYS_FAIR);
}
