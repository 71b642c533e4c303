/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * query.c - read-only questions about a lock: the calls that ask them
 * and how their answers read (a hold count, a fencing token, the whole
 * state at once), for both drivers; the blocking calls are
 * blocking/calls.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "lock_int.h"

/* One list of owners with a number each: holders with their hold
 * counts, or queued waiters with the ms left before their deadline. */
typedef struct owner_list {
  size_t n;
  char **owners;
  int64_t *values;
} owner_list;

struct rlock_lock_info {
  int locked;
  char mode[8];   /* read-write locks: "read" or "write"; else "" */
  char node[128]; /* the server that answered */
  int64_t ttl_ms;
  owner_list holders;
  owner_list queue;
  size_t queue_len; /* the whole queue's length (queue may list fewer) */
};

/* From a snapshot, so that a key which is not a lock is refused by the
 * same rule as everywhere (lockcheck.lua); a read-write half is locked by
 * its kind's rule. */
int rlock__info_locked(const rlock_lock *l, const rlock_lock_info *info) {
  return l->kind->locked ? l->kind->locked(info) : info->locked;
}

void rlock__count_call(rlock_lock *l, const char *owner, rlock__call *call) {
  char field[RLOCK_FIELD_MAX];
  rlock__field(l, owner, field);
  rlock__call_cmd(call, "HGET");
  rlock__call_key(call, l->name);
  rlock__call_arg(call, rlock__call_fmt(call, "%s", field));
}

int rlock__count_reply(const rlock__reply *r, int64_t *count) {
  if (r->type == RLOCK__R_NIL)
    *count = 0;
  else if (r->type == RLOCK__R_STR)
    *count = strtoll(r->str, NULL, 10);
  else
    return rlock__err(RLOCK_EPROTO, "HGET returned a %s",
                      rlock__reply_type_name(r));
  return RLOCK_OK;
}

/* Whether `s` (len bytes) is a counter by Redis's own rule (string2ll,
 * what INCR accepts): "0", or an optional '-' and digits without a leading
 * zero, within 64 bits. strtoll would also take " 5", "+5", "007", and
 * clamp an overflow, all of which INCR, and so every acquisition, refuses. */
static int parse_counter(const char *s, size_t len, int64_t *out) {
  if (len == 1 && s[0] == '0') {
    *out = 0;
    return 1;
  }
  size_t i = s[0] == '-';
  if (len == 0 || i >= len || s[i] < '1' || s[i] > '9')
    return 0;
  uint64_t v = 0;
  for (; i < len; i++) {
    unsigned d = (unsigned)(s[i] - '0');
    if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - d) / 10)
      return 0;
    v = v * 10 + d;
  }
  if (s[0] == '-') {
    if (v > (uint64_t)INT64_MAX + 1)
      return 0;
    *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
  } else {
    if (v > (uint64_t)INT64_MAX)
      return 0;
    *out = (int64_t)v;
  }
  return 1;
}

int rlock__token_reply(const rlock_lock *l, const rlock__reply *r,
                       int64_t *token) {
  *token = 0;
  if (r->type == RLOCK__R_STR && !parse_counter(r->str, r->len, token))
    return rlock__err(RLOCK_EWRONGTYPE,
                      "token key '%s' holds '%.40s', not a "
                      "counter",
                      l->token, r->str);
  if (r->type != RLOCK__R_STR && r->type != RLOCK__R_NIL)
    return rlock__err(RLOCK_EPROTO, "GET returned a %s",
                      rlock__reply_type_name(r));
  return RLOCK_OK;
}

/* Fill `list` from the `pairs` owner/value pairs starting at element
 * `from` (values are integers or decimal strings). A read-write lock's
 * "mode" field is not a holder: it goes to `mode` when given. */
static int fill_list(owner_list *list, const rlock__reply *r, size_t from,
                     size_t pairs, char *mode, size_t mode_size) {
  list->owners = rlock__calloc(pairs ? pairs : 1, sizeof *list->owners);
  list->values = rlock__calloc(pairs ? pairs : 1, sizeof *list->values);
  if (list->owners == NULL || list->values == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  for (size_t i = 0; i < pairs; i++) {
    const rlock__reply *f = r->elem[from + 2 * i];
    const rlock__reply *v = r->elem[from + 2 * i + 1];
    if (f->type != RLOCK__R_STR ||
        (v->type != RLOCK__R_STR && v->type != RLOCK__R_INT))
      return rlock__err(RLOCK_EPROTO, "inspect returned a malformed entry");
    if (mode != NULL && strcmp(f->str, "mode") == 0 &&
        v->type == RLOCK__R_STR) {
      snprintf(mode, mode_size, "%s", v->str);
      continue;
    }
    size_t k = list->n;
    if ((list->owners[k] = rlock__strndup(f->str, f->len)) == NULL)
      return rlock__err(RLOCK_ENOMEM, "out of memory");
    list->values[k] =
        v->type == RLOCK__R_INT ? v->integer : strtoll(v->str, NULL, 10);
    list->n++;
  }
  return RLOCK_OK;
}

int rlock__inspect_parse(const rlock__reply *r, rlock_lock_info *info,
                         const char *node) {
  snprintf(info->node, sizeof info->node, "%s", node);
  if (r->type != RLOCK__R_ARRAY || r->n < 3 ||
      r->elem[0]->type != RLOCK__R_STR || r->elem[1]->type != RLOCK__R_INT ||
      r->elem[2]->type != RLOCK__R_INT || r->elem[2]->integer < 0 ||
      (size_t)r->elem[2]->integer > r->n - 3 ||
      (r->n - 3 - (size_t)r->elem[2]->integer) % 2 != 0)
    return rlock__err(RLOCK_EPROTO, "inspect returned an unexpected reply");
  const char *type = r->elem[0]->str;
  size_t nfields = (size_t)r->elem[2]->integer;
  info->ttl_ms = r->elem[1]->integer;
  if (strcmp(type, "none") != 0 && strcmp(type, "hash") != 0)
    return rlock__err(RLOCK_EPROTO, "inspect returned key type '%s'", type);
  info->locked = strcmp(type, "hash") == 0;
  int rc = fill_list(&info->holders, r, 3, nfields / 2, info->mode,
                     sizeof info->mode);
  if (rc == RLOCK_OK)
    rc = fill_list(&info->queue, r, 3 + nfields, (r->n - 3 - nfields) / 2, NULL,
                   0);
  info->queue_len = info->queue.n;
  return rc;
}

rlock_lock_info *rlock__info_new(void) {
  rlock_lock_info *info = rlock__calloc(1, sizeof *info);
  if (info == NULL)
    rlock__err(RLOCK_ENOMEM, "out of memory");
  return info;
}

int rlock_lock_info_locked(const rlock_lock_info *info) {
  return info ? info->locked : 0;
}

const char *rlock_lock_info_mode(const rlock_lock_info *info) {
  return info && info->mode[0] != '\0' ? info->mode : NULL;
}

const char *rlock_lock_info_node(const rlock_lock_info *info) {
  return info ? info->node : NULL;
}

int64_t rlock_lock_info_ttl_ms(const rlock_lock_info *info) {
  return info ? info->ttl_ms : -2;
}

size_t rlock_lock_info_holder_count(const rlock_lock_info *info) {
  return info ? info->holders.n : 0;
}

const char *rlock_lock_info_holder_owner(const rlock_lock_info *info,
                                         size_t i) {
  return info && i < info->holders.n ? info->holders.owners[i] : NULL;
}

int64_t rlock_lock_info_holder_holds(const rlock_lock_info *info, size_t i) {
  return info && i < info->holders.n ? info->holders.values[i] : 0;
}

size_t rlock_lock_info_queue_count(const rlock_lock_info *info) {
  return info ? info->queue.n : 0;
}

size_t rlock_lock_info_queue_length(const rlock_lock_info *info) {
  return info ? info->queue_len : 0;
}

void rlock__info_set_queue_length(rlock_lock_info *info, size_t n) {
  info->queue_len = n;
}

const char *rlock_lock_info_queue_owner(const rlock_lock_info *info, size_t i) {
  return info && i < info->queue.n ? info->queue.owners[i] : NULL;
}

int64_t rlock_lock_info_queue_deadline_ms(const rlock_lock_info *info,
                                          size_t i) {
  return info && i < info->queue.n ? info->queue.values[i] : 0;
}

static void list_free(owner_list *list) {
  for (size_t i = 0; i < list->n; i++)
    free(list->owners[i]);
  free(list->owners);
  free(list->values);
}

void rlock_lock_info_free(rlock_lock_info *info) {
  if (info == NULL)
    return;
  list_free(&info->holders);
  list_free(&info->queue);
  free(info);
}
