/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redlock.c - the quorum lock over independent servers.
 *
 * A round (blocking/redlock.c, loop/lredlock.c) sends the acquire script
 * to every member at once and waits for every answer, up to the round's
 * member timeout, so that
 * every member free in that round is taken (and then renewed): losing one
 * later, say on a server restarted without persistence, need not drop the
 * lock below the quorum. It stops early only once the quorum is out of
 * reach. Validity is lease - elapsed - (1% of lease +
 * 2 ms) on the monotonic clock. A round that fails releases every member
 * (in parallel, ignoring those never taken) before the next round or the
 * return.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "lock_int.h"
#include "redlock_int.h"

static int same_endpoint(const rlock__endpoint *x, const rlock__endpoint *y) {
  if (x->unix_path || y->unix_path)
    return x->unix_path && y->unix_path &&
           strcmp(x->unix_path, y->unix_path) == 0;
  return x->port == y->port && strcmp(x->host, y->host) == 0;
}

/* Whether two clients may reach the same servers: any configured address
 * (server, seed node or sentinel) in common. */
static int same_server(const rlock_client *a, const rlock_client *b) {
  const rlock__target *x = &a->cfg.target, *y = &b->cfg.target;
  for (size_t i = 0; i < x->n; i++)
    for (size_t j = 0; j < y->n; j++)
      if (same_endpoint(&x->addrs[i], &y->addrs[j]))
        return 1;
  return 0;
}

static int check_members(rlock_lock *const *members, size_t n) {
  if (members == NULL || n == 0)
    return rlock__err(RLOCK_EINVAL, "a RedLock needs at least one member");
  if (n > RLOCK_MAX_REDLOCK_MEMBERS)
    return rlock__err(RLOCK_EINVAL, "a RedLock takes at most %d members",
                      RLOCK_MAX_REDLOCK_MEMBERS);
  for (size_t i = 0; i < n; i++) {
    if (members[i] == NULL)
      return rlock__err(RLOCK_EINVAL, "RedLock member %zu is NULL", i);
    if (!rlock__lock_is_plain(members[i]))
      return rlock__err(RLOCK_EINVAL,
                        "RedLock member %zu is a %s; members "
                        "must be reentrant locks",
                        i, members[i]->kind->label);
    for (size_t j = 0; j < i; j++)
      if (members[i]->client == members[j]->client ||
          same_server(members[i]->client, members[j]->client))
        return rlock__err(RLOCK_EINVAL,
                          "RedLock members %zu and %zu use "
                          "the same %s: a quorum needs independent servers",
                          j, i,
                          members[i]->client == members[j]->client ? "client"
                                                                   : "server");
  }
  return RLOCK_OK;
}

int rlock_redlock_new(rlock_redlock **out, rlock_lock *const *members,
                      size_t n) {
  if (out == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_redlock_new: out is NULL");
  *out = NULL;
  int rc = check_members(members, n);
  if (rc != RLOCK_OK)
    return rc;
  rlock_redlock *r = rlock__malloc(sizeof *r + n * sizeof r->members[0]);
  if (r == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  r->n = n;
  r->quorum = n / 2 + 1;
  memcpy(r->members, members, n * sizeof r->members[0]);
  *out = r;
  return RLOCK_OK;
}

void rlock_redlock_free(rlock_redlock *r) { free(r); }

/* ---- one round --------------------------------------------------------- */

int64_t rlock__redlock_validity(int64_t lease_min_ms, int64_t started_us) {
  int64_t elapsed = (rlock__now_us() - started_us + 999) / 1000;
  return lease_min_ms - elapsed - (lease_min_ms / 100 + 2);
}

int rlock__redlock_out_of_reach(const rlock_redlock *r, size_t refused) {
  return refused > r->n - r->quorum;
}

int rlock__redlock_retry(int rc, int canceled, int64_t wait_ms,
                         int64_t deadline_us) {
  return rc != RLOCK_OK && !canceled && rlock__now_us() < deadline_us &&
         (rc == RLOCK_ELOCKED || wait_ms != RLOCK_WAIT_FOREVER);
}

int64_t rlock__redlock_next_round(uint64_t *seed, int64_t deadline_us) {
  *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
  int64_t at = rlock__now_us() + (1 + (int64_t)((*seed >> 33) % 50)) * 1000;
  return at < deadline_us ? at : deadline_us;
}

int64_t rlock__redlock_lease_min(const rlock_redlock *r, int64_t lease_ms) {
  int64_t min = INT64_MAX;
  for (size_t i = 0; i < r->n; i++) {
    int64_t li = rlock__redlock_member_lease(r, i, lease_ms);
    min = li < min ? li : min;
  }
  return min;
}

int rlock__redlock_held(const rlock_redlock *r, size_t taken,
                        int64_t validity_ms) {
  return taken >= r->quorum && validity_ms > 0;
}

static int miss_code(const int *status, size_t n, size_t taken, size_t quorum) {
  if (taken >= quorum) /* too slow: no validity left */
    return RLOCK_ELOCKED;
  for (size_t i = 0; i < n; i++)
    if (status[i] == RLOCK_ELOCKED) /* held elsewhere: not infra */
      return RLOCK_ELOCKED;
  for (size_t i = 0; i < n; i++)
    if (status[i] != RLOCK_OK)
      return status[i];
  return RLOCK_ELOCKED;
}

int rlock__redlock_miss(const rlock_redlock *r, const rlock_redlock_result *res,
                        size_t taken, int64_t validity_ms) {
  int code = miss_code(res->status, r->n, taken, r->quorum);
  for (size_t i = 0; i < r->n; i++)
    if (res->status[i] != RLOCK_OK && res->status[i] != RLOCK_ETIMEOUT)
      return rlock__err(code,
                        "RedLock: %zu of %zu members taken (quorum "
                        "%zu); member %zu: %s",
                        taken, r->n, r->quorum, i, res->message[i]);
  return rlock__err(code,
                    "RedLock: %zu of %zu members taken (quorum %zu), "
                    "validity left %lld ms",
                    taken, r->n, r->quorum, (long long)validity_ms);
}

int64_t rlock__redlock_member_lease(const rlock_redlock *r, size_t i,
                                    int64_t lease) {
  return rlock__lease_sent(r->members[i]->client, lease);
}

int64_t rlock__redlock_node_timeout_ms(const rlock_redlock *r,
                                       int64_t lease_min) {
  int64_t t = lease_min / 20,
          cap = r->members[0]->client->cfg.command_timeout_ms;
  return t < 10 ? 10 : t > cap ? cap : t;
}
