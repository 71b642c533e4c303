/*
 * query.c - read-only questions about a lock: is it locked, do I hold it,
 * how often, for how long, and the whole state at once.
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "lock_int.h"

struct rlock_lock_info {
  int locked;
  int64_t ttl_ms;
  size_t nholders;
  char **owners;
  int64_t *holds;
};

/* Run a plain command about the lock; maps WRONGTYPE to a clear message. */
static int query(rlock_lock *l, int argc, const char **argv, redisReply **r) {
  if (l == NULL)
    return rlock__err(RLOCK_EINVAL, "lock is NULL");
  return rlock__wrongtype(l, rlock__cmd(l->client, l->name, argc, argv, NULL, r));
}

int rlock_lock_is_locked(int *locked, rlock_lock *l) {
  if (locked == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_lock_is_locked: locked is NULL");
  const char *argv[2] = {"TYPE", l ? l->name : ""};
  redisReply *r;
  int rc = query(l, 2, argv, &r);
  if (rc != RLOCK_OK)
    return rc;
  if (r->type != REDIS_REPLY_STATUS)
    rc = rlock__err(RLOCK_EPROTO, "TYPE returned reply type %d", r->type);
  else if (strcmp(r->str, "none") == 0 || strcmp(r->str, "hash") == 0)
    *locked = strcmp(r->str, "hash") == 0;
  else
    rc = rlock__err(RLOCK_EWRONGTYPE, "key '%s' holds a %s, not a lock",
                    l->name, r->str);
  freeReplyObject(r);
  return rc;
}

int rlock_lock_is_held(int *held, rlock_lock *l) {
  int64_t count = 0;
  if (held == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_lock_is_held: held is NULL");
  int rc = rlock_lock_hold_count(&count, l);
  if (rc == RLOCK_OK)
    *held = count > 0;
  return rc;
}

int rlock_lock_hold_count(int64_t *count, rlock_lock *l) {
  if (count == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_lock_hold_count: count is NULL");
  char owner[RLOCK_OWNER_MAX] = "";
  if (l != NULL)
    rlock__owner(l->client, owner);
  const char *argv[3] = {"HGET", l ? l->name : "", owner};
  redisReply *r;
  int rc = query(l, 3, argv, &r);
  if (rc != RLOCK_OK)
    return rc;
  if (r->type == REDIS_REPLY_NIL)
    *count = 0;
  else if (r->type == REDIS_REPLY_STRING)
    *count = strtoll(r->str, NULL, 10);
  else
    rc = rlock__err(RLOCK_EPROTO, "HGET returned reply type %d", r->type);
  freeReplyObject(r);
  return rc;
}

int rlock_lock_ttl(int64_t *ttl_ms, rlock_lock *l) {
  if (ttl_ms == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_lock_ttl: ttl_ms is NULL");
  rlock_lock_info *info;
  int rc = rlock_lock_inspect(&info, l);
  if (rc != RLOCK_OK)
    return rc;
  *ttl_ms = info->ttl_ms;
  rlock_lock_info_free(info);
  return RLOCK_OK;
}

/* Fill holders from the field/value pairs after {type, pttl}. */
static int fill_holders(rlock_lock_info *info, const redisReply *r) {
  size_t pairs = (r->elements - 2) / 2;
  info->owners = calloc(pairs ? pairs : 1, sizeof *info->owners);
  info->holds = calloc(pairs ? pairs : 1, sizeof *info->holds);
  if (info->owners == NULL || info->holds == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  for (size_t i = 0; i < pairs; i++) {
    const redisReply *f = r->element[2 + 2 * i], *v = r->element[3 + 2 * i];
    if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
      return rlock__err(RLOCK_EPROTO, "inspect returned a non-string field");
    if ((info->owners[i] = rlock__strndup(f->str, f->len)) == NULL)
      return rlock__err(RLOCK_ENOMEM, "out of memory");
    info->holds[i] = strtoll(v->str, NULL, 10);
    info->nholders++;
  }
  info->locked = 1;
  return RLOCK_OK;
}

static int parse_inspect(rlock_lock *l, const redisReply *r,
                         rlock_lock_info *info) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
      r->element[0]->type != REDIS_REPLY_STRING ||
      r->element[1]->type != REDIS_REPLY_INTEGER)
    return rlock__err(RLOCK_EPROTO, "inspect returned an unexpected reply");
  const char *type = r->element[0]->str;
  info->ttl_ms = r->element[1]->integer;
  if (strcmp(type, "none") == 0)
    return RLOCK_OK;
  if (strcmp(type, "hash") != 0)
    return rlock__err(RLOCK_EWRONGTYPE, "key '%s' holds a %s, not a lock",
                      l->name, type);
  return fill_holders(info, r);
}

int rlock_lock_inspect(rlock_lock_info **out, rlock_lock *l) {
  if (out == NULL || l == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_lock_inspect: %s is NULL",
                      out ? "lock" : "out");
  *out = NULL;
  rlock_lock_info *info = calloc(1, sizeof *info);
  if (info == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  const char *kv[1] = {l->name};
  redisReply *r;
  int rc = rlock__cmd_script(l->client, &rlock__script_lock_inspect, 1, 0, kv,
                             NULL, &r);
  if (rc == RLOCK_OK) {
    rc = parse_inspect(l, r, info);
    freeReplyObject(r);
  }
  if (rc != RLOCK_OK) {
    rlock_lock_info_free(info);
    return rc;
  }
  *out = info;
  return RLOCK_OK;
}

int rlock_lock_info_locked(const rlock_lock_info *info) {
  return info ? info->locked : 0;
}

int64_t rlock_lock_info_ttl_ms(const rlock_lock_info *info) {
  return info ? info->ttl_ms : -2;
}

size_t rlock_lock_info_holder_count(const rlock_lock_info *info) {
  return info ? info->nholders : 0;
}

const char *rlock_lock_info_holder_owner(const rlock_lock_info *info,
                                         size_t i) {
  return info && i < info->nholders ? info->owners[i] : NULL;
}

int64_t rlock_lock_info_holder_holds(const rlock_lock_info *info, size_t i) {
  return info && i < info->nholders ? info->holds[i] : 0;
}

void rlock_lock_info_free(rlock_lock_info *info) {
  if (info == NULL)
    return;
  for (size_t i = 0; i < info->nholders; i++)
    free(info->owners[i]);
  free(info->owners);
  free(info->holds);
  free(info);
}
