/* SPDX-License-Identifier: BSD-3-Clause */
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
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "lock_int.h"

#define UNLOCK_MESSAGE "0"

/* The `wait` the scripts use for the deadline arithmetic: the waiter's
 * own budget, or the configured fair wait timeout when it has none. */
static int64_t fair_wait(const rlock_lock *l, int64_t wait_ms) {
  return wait_ms > 0 ? wait_ms : l->client->cfg.fair_wait_timeout_ms;
}

/* Every fair script's one declared key, the lock. Its channel prefix,
 * queue and deadlines go last among the arguments (fair_names): a cluster
 * migrating the slot refuses a call declaring keys that are absent, and
 * the queue usually is. */
static void fair_keys(rlock_lock *l, rlock__call *call,
                      const rlock__script *s) {
  rlock__call_script(call, s);
  rlock__call_key(call, l->name);
}

static void fair_names(rlock_lock *l, rlock__call *call) {
  rlock__call_arg(call, l->queue);
  rlock__call_arg(call, l->timeouts);
}

static void attempt(rlock_lock *l, const char *owner, int64_t lease_ms,
                    int64_t wait_ms, rlock__call *call) {
  fair_keys(l, call, &rlock__script_fair_acquire);
  rlock__call_num(call, lease_ms);
  rlock__call_arg(call, owner);
  rlock__call_num(call, fair_wait(l, wait_ms));
  rlock__call_num(call, rlock__epoch_ms());
  rlock__call_arg(call, rlock__publish_cmd(l->client));
  rlock__call_arg(call, wait_ms != 0 ? "1" : "0");
  rlock__call_arg(call, l->channel);
  fair_names(l, call);
  rlock__call_arg(call, l->client->cfg.fair_deferred_shift ? "1" : "0");
  if (l->kind->nonreentrant)
    rlock__call_arg(call, "1");
}

static const char *channel(rlock_lock *l, const char *owner, char *buf,
                           size_t size) {
  snprintf(buf, size, "%s:%s", l->channel, owner);
  return buf;
}

static void give_up(rlock_lock *l, const char *owner, int64_t wait_ms,
                    rlock__call *call) {
  fair_keys(l, call, &rlock__script_fair_leave);
  rlock__call_arg(call, owner);
  rlock__call_num(call, fair_wait(l, wait_ms));
  rlock__call_arg(call, rlock__publish_cmd(l->client));
  rlock__call_arg(call, l->channel);
  fair_names(l, call);
}

static void release(rlock_lock *l, const char *owner, int64_t keep_ms,
                    const rlock__latch *latch, rlock__call *call) {
  fair_keys(l, call, &rlock__script_fair_release);
  rlock__call_arg(call, UNLOCK_MESSAGE);
  rlock__call_num(call, keep_ms);
  rlock__call_arg(call, owner);
  rlock__call_num(call, rlock__epoch_ms());
  rlock__call_arg(call, rlock__publish_cmd(l->client));
  rlock__latch_ttl(latch, call);
  rlock__call_arg(call, l->channel);
  rlock__latch_name(l, latch, call);
  fair_names(l, call);
}

/* Deletes a lock of any kind (tools force-release a name without knowing
 * its kind), so it also names the read-write channel to wake. */
static void force_release(rlock_lock *l, rlock__call *call) {
  fair_keys(l, call, &rlock__script_fair_force_release);
  rlock__call_arg(call, UNLOCK_MESSAGE);
  rlock__call_num(call, rlock__epoch_ms());
  rlock__call_arg(call, rlock__publish_cmd(l->client));
  rlock__call_arg(call, l->channel);
  rlock__call_arg(call, l->rw_channel);
  fair_names(l, call);
}

static void inspect(rlock_lock *l, rlock__call *call) {
  fair_keys(l, call, &rlock__script_fair_inspect);
  rlock__call_num(call, rlock__epoch_ms());
  fair_names(l, call);
}

static const rlock__kind fair_kind = {
    .label = "fair lock",
    .metric = RLOCK__MK_FAIR,
    .attempt = attempt,
    .channel = channel,
    .give_up = give_up,
    .release = release,
    .force_release = force_release,
    .inspect = inspect,
};

/* Redisson 4.4's non-reentrant fair lock: the fair lock, a re-entry
 * refused. */
static const rlock__kind nonreentrant_fair_kind = {
    .label = "non-reentrant fair lock",
    .metric = RLOCK__MK_NONREENTRANT_FAIR,
    .nonreentrant = 1,
    .attempt = attempt,
    .channel = channel,
    .give_up = give_up,
    .release = release,
    .force_release = force_release,
    .inspect = inspect,
};

int rlock_lock_new_fair_nonreentrant(rlock_lock **out, rlock_client *client,
                                     const char *name) {
  return rlock__lock_alloc(out, client, name, &nonreentrant_fair_kind,
                           RLOCK__KEYS_FAIR);
}

int rlock_lock_new_fair(rlock_lock **out, rlock_client *client,
                        const char *name) {
  return rlock__lock_alloc(out, client, name, &fair_kind, RLOCK__KEYS_FAIR);
}
