/* SPDX-License-Identifier: BSD-3-Clause */
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
#include <string.h>

#include "common.h"
#include "lock_int.h"

static void force_release(rlock_lock *l, const char *mode, const char *msg,
                          rlock__call *call) {
  rlock__call_script(call, &rlock__script_rw_force_release);
  rlock__call_key(call, l->name);
  rlock__call_arg(call, msg);
  rlock__call_arg(call, rlock__publish_cmd(l->client));
  rlock__call_arg(call, mode);
  rlock__call_arg(call, l->channel);
}

/* ---- read ---------------------------------------------------------------- */

/* This owner's timeout-key prefix: "{name}:<owner>:rwlock_timeout". */
static const char *timeout_prefix(rlock_lock *l, const char *owner,
                                  rlock__call *call) {
  return rlock__call_fmt(call, "%s:%s:rwlock_timeout", l->base, owner);
}

static void read_attempt(rlock_lock *l, const char *owner, int64_t lease_ms,
                         int64_t wait_ms, rlock__call *call) {
  (void)wait_ms;
  rlock__call_script(call, &rlock__script_read_acquire);
  rlock__call_key(call, l->name);
  rlock__call_num(call, lease_ms);
  rlock__call_arg(call, owner);
  rlock__call_arg(call, rlock__call_fmt(call, "%s:write", owner));
  rlock__call_arg(call, timeout_prefix(l, owner, call));
}

static void read_release(rlock_lock *l, const char *owner, int64_t keep_ms,
                         const rlock__latch *latch, rlock__call *call) {
  rlock__call_script(call, &rlock__script_read_release);
  rlock__call_key(call, l->name);
  rlock__call_arg(call, "0");
  rlock__call_arg(call, owner);
  rlock__call_arg(call, rlock__publish_cmd(l->client));
  rlock__latch_ttl(latch, call);
  rlock__call_arg(call, l->channel);
  rlock__call_arg(call, timeout_prefix(l, owner, call));
  rlock__call_arg(call, l->base);
  rlock__latch_name(l, latch, call);
  /* Read holds keep their own leases: the script reads only -1
   * (RLOCK__KEEP_NONE, every read level of `owner` goes). */
  rlock__call_num(call, keep_ms);
}

static void read_force(rlock_lock *l, rlock__call *call) {
  force_release(l, "read", "0", call);
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
    .metric = RLOCK__MK_READ,
    .read_renewal = 1,
    .attempt = read_attempt,
    .channel = rlock__own_channel,
    .release = read_release,
    .force_release = read_force,
    .inspect = rlock__plain_inspect,
    .locked = read_locked,
};

/* ---- write --------------------------------------------------------------- */

static void write_attempt(rlock_lock *l, const char *owner, int64_t lease_ms,
                          int64_t wait_ms, rlock__call *call) {
  (void)wait_ms;
  rlock__call_script(call, &rlock__script_write_acquire);
  rlock__call_key(call, l->name);
  rlock__call_num(call, lease_ms);
  rlock__call_arg(call, rlock__call_fmt(call, "%s:write", owner));
  rlock__call_arg(call, owner);
}

static void write_release(rlock_lock *l, const char *owner, int64_t keep_ms,
                          const rlock__latch *latch, rlock__call *call) {
  rlock__call_script(call, &rlock__script_write_release);
  rlock__call_key(call, l->name);
  rlock__call_arg(call, "1");
  rlock__call_num(call, keep_ms);
  rlock__call_arg(call, rlock__call_fmt(call, "%s:write", owner));
  rlock__call_arg(call, rlock__publish_cmd(l->client));
  rlock__latch_ttl(latch, call);
  rlock__call_arg(call, l->channel);
  rlock__latch_name(l, latch, call);
}

static void write_force(rlock_lock *l, rlock__call *call) {
  force_release(l, "write", "1", call);
}

static int write_locked(const rlock_lock_info *info) {
  const char *mode = rlock_lock_info_mode(info);
  return mode != NULL && strcmp(mode, "write") == 0;
}

static const rlock__kind write_kind = {
    .label = "write lock",
    .metric = RLOCK__MK_WRITE,
    .field_suffix = ":write",
    .attempt = write_attempt,
    .channel = rlock__own_channel,
    .release = write_release,
    .force_release = write_force,
    .inspect = rlock__plain_inspect,
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
