/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * multilock.c - a MultiLock's members (checked once, at construction),
 * the decisions of its acquisition (lock_int.h), and the canonical member
 * order (rlock_names_sort). The blocking driver carries the acquisition
 * in blocking/multilock.c, the loop in loop/lmulti.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "common.h"
#include "lock_int.h"
#include "script.h"
#include "rlock/multilock.h"
#include "watchdog.h"

static int same_lock(const rlock_lock *a, const rlock_lock *b) {
  return a->client == b->client && a->kind == b->kind &&
         strcmp(a->name, b->name) == 0;
}

static int check_members(rlock_lock *const *members, size_t n) {
  if (members == NULL || n == 0)
    return rlock__err(RLOCK_EINVAL, "a MultiLock needs at least one member");
  if (n > RLOCK_MAX_MEMBERS)
    return rlock__err(RLOCK_EINVAL,
                      "a MultiLock takes at most %d members "
                      "(got %zu)",
                      RLOCK_MAX_MEMBERS, n);
  for (size_t i = 0; i < n; i++) {
    if (members[i] == NULL)
      return rlock__err(RLOCK_EINVAL, "MultiLock member %zu is NULL", i);
    for (size_t j = 0; j < i; j++)
      if (same_lock(members[i], members[j]))
        return rlock__err(RLOCK_EINVAL,
                          "MultiLock members %zu and %zu are "
                          "the same %s '%s'",
                          j, i, members[i]->kind->label, members[i]->name);
  }
  return RLOCK_OK;
}

int rlock_multilock_new(rlock_multilock **out, rlock_lock *const *members,
                        size_t n) {
  if (out == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_multilock_new: out is NULL");
  *out = NULL;
  int rc = check_members(members, n);
  if (rc != RLOCK_OK)
    return rc;
  rlock_multilock *m = rlock__malloc(sizeof *m + n * sizeof m->members[0]);
  if (m == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  m->n = n;
  memcpy(m->members, members, n * sizeof m->members[0]);
  *out = m;
  return RLOCK_OK;
}

void rlock_multilock_free(rlock_multilock *m) { free(m); }

int64_t rlock__multi_wait_left(int64_t wait_ms, int64_t deadline_us) {
  return wait_ms == RLOCK_WAIT_FOREVER ? RLOCK_WAIT_FOREVER
                                       : rlock__ms_left(deadline_us);
}

int rlock__multi_in_time(const rlock_multilock *m, size_t i, int64_t wait_ms,
                         int64_t deadline_us) {
  if (wait_ms <= 0 || rlock__now_us() < deadline_us)
    return RLOCK_OK;
  const rlock_lock *l = m->members[i];
  return rlock__err(RLOCK_ELOCKED,
                    "MultiLock wait ended before member %zu (%s '%s') "
                    "could be taken",
                    i, l->kind->label, l->name);
}

size_t rlock__multi_give_back(size_t i, int rc) {
  return rc == RLOCK_EIO || rc == RLOCK_ETIMEOUT ? i + 1 : i;
}

int rlock__multi_relets(const rlock_multilock *m, size_t i, int64_t lease_ms) {
  return lease_ms > 0 && i + 1 < m->n;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int rlock_names_sort(const char **names, size_t n) {
  if (names == NULL && n > 0)
    return rlock__err(RLOCK_EINVAL, "rlock_names_sort: names is NULL");
  for (size_t i = 0; i < n; i++)
    if (names[i] == NULL)
      return rlock__err(RLOCK_EINVAL, "rlock_names_sort: name %zu is NULL", i);
  if (n > 1)
    qsort(names, n, sizeof *names, cmp_names);
  return RLOCK_OK;
}
