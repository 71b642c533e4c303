/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sync.c - Redisson's semaphore, permit-expirable semaphore and count-down
 * latch as lock kinds (sync_int.h): their constructors, the calls their
 * scripts take, and how their answers read, for both drivers.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "common.h"
#include "names.h"
#include "script.h"
#include "sync_int.h"
#include "watchdog.h"

/* ---- the calls ----------------------------------------------------------- */

static void num_arg(rlock__call *call, int64_t num) {
  rlock__call_num(call, num);
}

/* A semaphore's or a latch's call: `script` (semaphore.lua, latch.lua)
 * with the operation, its number and the channel its waiters hear. */
static void count_call(rlock_lock *l, const rlock__script *script,
                       const char *op, int64_t num, rlock__call *call) {
  rlock__call_script(call, script);
  rlock__call_key(call, l->name);
  rlock__call_arg(call, op);
  num_arg(call, num);
  rlock__call_arg(call, rlock__publish_cmd(l->client));
  rlock__call_arg(call, l->channel);
}

/* An acquisition's or release's call: a script of its own each
 * (psem_acquire.lua, psem_release.lua, or their _sharded twins where
 * messages go out with SPUBLISH), sent only the keys, now, the deadline
 * of an acquisition and the permit id as the 16 bytes the timeout set
 * stores, so the hot scripts decode nothing (include/psemacquire.lua). */
static void psem_hot_call(rlock_lock *l, int acquire, int64_t now,
                          int64_t deadline, const char *id, rlock__call *call) {
  unsigned char raw[RLOCK_PERMIT_ID_LEN / 2] = {0};
  static const rlock__script *const scripts[2][2] = {
      {&rlock__script_psem_release, &rlock__script_psem_release_sharded},
      {&rlock__script_psem_acquire, &rlock__script_psem_acquire_sharded}};
  int sharded = rlock__publish_cmd(l->client)[0] == 'S';
  rlock__call_script(call, scripts[acquire != 0][sharded]);
  rlock__call_key(call, l->name);
  rlock__call_key(call, l->timeouts);
  num_arg(call, now);
  if (acquire)
    num_arg(call, deadline);
  if (id == NULL || strlen(id) != RLOCK_PERMIT_ID_LEN ||
      rlock__hex_bytes(id, raw, sizeof raw) != 0)
    call->failed = 1; /* the callers pass checked ids */
  rlock__call_bytes(call, raw, sizeof raw);
}

void rlock__psem_call(rlock_lock *l, const char *op, int64_t num,
                      const char *id, rlock__call *call) {
  /* A lease becomes a deadline on Redisson's clock (sync_int.h), which
   * runs from now, before the call is sent: the local view of the lease
   * starts here (rlock__call_granted_from), read first and a millisecond
   * early, so that it ends no later than the deadline the wall clock's
   * whole milliseconds give the server. Set after the call is started. */
  int64_t stamp = rlock__now_us() - 1000;
  int64_t now = rlock__epoch_ms();
  int acquire = strcmp(op, "acquire") == 0;
  if (acquire || strcmp(op, "renew") == 0)
    num += now;
  if (acquire || strcmp(op, "release") == 0) {
    psem_hot_call(l, acquire, now, num, id, call);
  } else {
    rlock__call_script(call, &rlock__script_psemaphore);
    rlock__call_key(call, l->name);
    rlock__call_key(call, l->timeouts);
    rlock__call_arg(call, op);
    num_arg(call, now);
    num_arg(call, num);
    rlock__call_arg(call, rlock__publish_cmd(l->client));
    rlock__call_arg(call, l->channel);
    rlock__call_arg(call, id != NULL ? id : "");
  }
  call->stamped_us = stamp;
}

/* ---- the kinds ------------------------------------------------------------
 */

/* The semaphore's "owner" is the number of permits asked for. */
static void sem_attempt(rlock_lock *l, const char *permits, int64_t lease_ms,
                        int64_t wait_ms, rlock__call *call) {
  (void)lease_ms, (void)wait_ms;
  count_call(l, &rlock__script_semaphore, "acquire", strtoll(permits, NULL, 10),
             call);
}

/* What an acquisition gives back: the permits it took. */
static void sem_give_back(rlock_lock *l, const char *permits, int64_t keep_ms,
                          const rlock__latch *latch, rlock__call *call) {
  (void)keep_ms, (void)latch;
  count_call(l, &rlock__script_semaphore, "release", strtoll(permits, NULL, 10),
             call);
}

static const rlock__kind semaphore_kind = {
    .label = "semaphore",
    .sync = 1,
    .metric = RLOCK__MK_SEMAPHORE,
    .unavailable = "has not the permits asked for available",
    .attempt = sem_attempt,
    .channel = rlock__own_channel,
    .release = sem_give_back,
};

/* The psemaphore's "owner" is the permit's id; its lease the lease sent
 * (the watchdog's for a watchdog permit). */
static void psem_attempt(rlock_lock *l, const char *id, int64_t lease_ms,
                         int64_t wait_ms, rlock__call *call) {
  (void)wait_ms;
  rlock__psem_call(l, "acquire", lease_ms, id, call);
}

static void psem_give_back(rlock_lock *l, const char *id, int64_t keep_ms,
                           const rlock__latch *latch, rlock__call *call) {
  (void)keep_ms, (void)latch;
  rlock__psem_call(l, "release", 0, id, call);
}

static const rlock__kind psemaphore_kind = {
    .label = "permit-expirable semaphore",
    .sync = 1,
    .permits = 1,
    .metric = RLOCK__MK_PSEMAPHORE,
    .unavailable = "has no permit available",
    .attempt = psem_attempt,
    .channel = rlock__own_channel,
    .release = psem_give_back,
};

static void latch_attempt(rlock_lock *l, const char *owner, int64_t lease_ms,
                          int64_t wait_ms, rlock__call *call) {
  (void)owner, (void)lease_ms, (void)wait_ms;
  count_call(l, &rlock__script_latch, "await", 0, call);
}

/* An await takes nothing, so gives nothing back: a read stands in. */
static void latch_give_back(rlock_lock *l, const char *owner, int64_t keep_ms,
                            const rlock__latch *latch, rlock__call *call) {
  (void)owner, (void)keep_ms, (void)latch;
  count_call(l, &rlock__script_latch, "get", 0, call);
}

static const rlock__kind latch_kind = {
    .label = "count-down latch",
    .sync = 1,
    .reads = 1,
    .metric = RLOCK__MK_LATCH,
    .unavailable = "still has a count above zero",
    .attempt = latch_attempt,
    .channel = rlock__own_channel,
    .release = latch_give_back,
};

void rlock__sync_call(rlock_lock *l, const char *op, int64_t num,
                      const char *id, rlock__call *call) {
  if (l->kind == &psemaphore_kind)
    rlock__psem_call(l, op, num, id, call);
  else
    count_call(l,
               l->kind == &latch_kind ? &rlock__script_latch
                                      : &rlock__script_semaphore,
               op, num, call);
}

/* ---- constructors ----------------------------------------------------------
 */

/* The lock under a synchroniser: the name's checks, then its channel
 * (and timeout key) in place of a lock's. */
static int sync_alloc(rlock_lock **out, rlock_client *client, const char *name,
                      const rlock__kind *kind) {
  int rc = rlock__lock_alloc(out, client, name, kind, RLOCK__KEYS_PLAIN);
  if (rc != RLOCK_OK)
    return rc;
  rlock_lock *l = *out;
  free(l->channel);
  if (kind == &latch_kind) {
    size_t n = strlen(name) + 40;
    l->channel = rlock__malloc(n);
    if (l->channel != NULL)
      snprintf(l->channel, n, "redisson_countdownlatch__channel__{%s}", name);
  } else {
    l->channel = rlock__name_prefixed("redisson_sc", name);
  }
  if (kind == &psemaphore_kind) {
    l->timeouts = rlock__name_suffixed(name, ":timeout");
    size_t n = l->timeouts != NULL ? strlen(l->timeouts) + 2 : 0;
    l->base = l->timeouts != NULL ? rlock__malloc(n) : NULL;
    if (l->base != NULL)
      snprintf(l->base, n, "%c%s", RLOCK__PERMIT_BASE_MARK, l->timeouts);
  }
  if (l->channel == NULL ||
      (kind == &psemaphore_kind && (l->timeouts == NULL || l->base == NULL))) {
    rlock_lock_free(l);
    *out = NULL;
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  return RLOCK_OK;
}

/* The public object around the lock. */
static int wrap(void **out, size_t size, rlock_client *client, const char *name,
                const rlock__kind *kind) {
  if (out == NULL)
    return rlock__err(RLOCK_EINVAL, "cannot create a %s: out is NULL",
                      kind->label);
  *out = NULL;
  rlock_lock *l;
  int rc = sync_alloc(&l, client, name, kind);
  if (rc != RLOCK_OK)
    return rc;
  rlock_lock **w = rlock__calloc(1, size);
  if (w == NULL) {
    rlock_lock_free(l);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  *w = l; /* every wrapper's first (only) member */
  *out = w;
  return RLOCK_OK;
}

int rlock_semaphore_new(rlock_semaphore **out, rlock_client *client,
                        const char *name) {
  return wrap((void **)out, sizeof **out, client, name, &semaphore_kind);
}

int rlock_psemaphore_new(rlock_psemaphore **out, rlock_client *client,
                         const char *name) {
  return wrap((void **)out, sizeof **out, client, name, &psemaphore_kind);
}

int rlock_latch_new(rlock_latch **out, rlock_client *client, const char *name) {
  return wrap((void **)out, sizeof **out, client, name, &latch_kind);
}

void rlock_semaphore_free(rlock_semaphore *s) {
  if (s != NULL)
    rlock_lock_free(s->l);
  free(s);
}

void rlock_psemaphore_free(rlock_psemaphore *s) {
  if (s != NULL)
    rlock_lock_free(s->l);
  free(s);
}

void rlock_latch_free(rlock_latch *x) {
  if (x != NULL)
    rlock_lock_free(x->l);
  free(x);
}

const char *rlock_semaphore_name(const rlock_semaphore *s) {
  return s != NULL ? s->l->name : NULL;
}

const char *rlock_psemaphore_name(const rlock_psemaphore *s) {
  return s != NULL ? s->l->name : NULL;
}

const char *rlock_latch_name(const rlock_latch *x) {
  return x != NULL ? x->l->name : NULL;
}

/* ---- checks ----------------------------------------------------------------
 */

int rlock__check_permits(int64_t permits, int64_t min, const char *fn) {
  if (permits < min || permits > RLOCK_MAX_PERMITS)
    return rlock__err(RLOCK_EINVAL,
                      "%s: permits must be %" PRId64 "..%" PRId64
                      " (got %" PRId64 ")",
                      fn, min, RLOCK_MAX_PERMITS, permits);
  return RLOCK_OK;
}

int rlock__check_delta(int64_t delta, const char *fn) {
  if (delta == 0 || delta < -RLOCK_MAX_PERMITS || delta > RLOCK_MAX_PERMITS)
    return rlock__err(RLOCK_EINVAL,
                      "%s: delta must be -%" PRId64 "..%" PRId64
                      " and not 0 (got %" PRId64 ")",
                      fn, RLOCK_MAX_PERMITS, RLOCK_MAX_PERMITS, delta);
  return RLOCK_OK;
}

int rlock__check_count(int64_t count, const char *fn) {
  if (count < 1)
    return rlock__err(RLOCK_EINVAL,
                      "%s: count must be 1..%" PRId64 " (got %" PRId64 ")", fn,
                      INT64_MAX, count);
  return RLOCK_OK;
}

int rlock__check_permit_id(const char *id, const char *fn) {
  if (id == NULL)
    return rlock__err(RLOCK_EINVAL, "%s: permit id is NULL", fn);
  size_t n = 0; /* hex digits; a NUL is none, so reading stops there */
  while (n < RLOCK_PERMIT_ID_LEN && rlock__is_hex(id[n]))
    n++;
  if (n != RLOCK_PERMIT_ID_LEN || id[n] != '\0')
    return rlock__err(RLOCK_EINVAL,
                      "%s: a permit id is %d hex digits (got \"%.40s\")", fn,
                      RLOCK_PERMIT_ID_LEN, id);
  return RLOCK_OK;
}

int rlock__latch_usable(const rlock_lock *l, const char *fn) {
  if (strchr(l->name, '{') == NULL ||
      strcmp(rlock__publish_cmd(l->client), "SPUBLISH") != 0)
    return RLOCK_OK;
  return rlock__err(RLOCK_EINVAL,
                    "%s: latch '%s' has a {tag} of its own, so Redisson's "
                    "channel for it (%s) is in another cluster slot, which "
                    "a script cannot SPUBLISH to: use a name without braces",
                    fn, l->name, l->channel);
}

/* ---- answers ------------------------------------------------------------- */

int rlock__sync_reply(const rlock_lock *l, const rlock__reply *r,
                      int64_t *value) {
  if (r->type == RLOCK__R_INT) {
    *value = r->integer;
    return RLOCK_OK;
  }
  if (rlock__reply_is(r, "RANGE"))
    return rlock__err(RLOCK_EINVAL,
                      "%s '%s': the count would leave -%" PRId64 "..%" PRId64
                      " (Redisson's int); nothing written",
                      l->kind->label, l->name, RLOCK_MAX_PERMITS,
                      RLOCK_MAX_PERMITS);
  return rlock__err(RLOCK_EPROTO, "%s script returned an unexpected %s",
                    l->kind->label, rlock__reply_type_name(r));
}

void rlock__permit_id_lower(const char *in, char *out) {
  /* Hex digits and a-f have the bit: set in eight bytes at a time, as a
   * release does on every call. */
  uint64_t w[RLOCK_PERMIT_ID_LEN / 8];
  memcpy(w, in, sizeof w);
  for (size_t i = 0; i < sizeof w / sizeof *w; i++)
    w[i] |= UINT64_C(0x2020202020202020);
  memcpy(out, w, sizeof w);
  out[RLOCK_PERMIT_ID_LEN] = '\0';
}

int rlock__permit_id(char *id) {
  return rlock__random_hex(id, RLOCK_PERMIT_ID_LEN / 2);
}

int rlock__permit_result(const rlock_lock *l, const char *id, int state,
                         int64_t released) {
  if (released == 1)
    return RLOCK_OK;
  if (state == RLOCK__HOLD_NONE)
    return rlock__err(RLOCK_ENOTHELD,
                      "%s '%s' has no permit %s leased (released already, "
                      "expired, or never taken)",
                      l->kind->label, l->name, id);
  return rlock__err(RLOCK_ELOST,
                    "permit %s of %s '%s' was lost: it expired, was "
                    "released by someone else, or the semaphore was deleted",
                    id, l->kind->label, l->name);
}

void rlock__permit_relet(rlock_lock *l, const char *id, int64_t lease_ms,
                         int64_t sent_us) {
  if (rlock__hold_depth(l->client, l->name, id) == 0)
    return; /* not this client's, or lost */
  rlock__hold_forget(l->client, l->name, id);
  /* Out of memory here leaves no record: the permit still has its lease
   * on the server, and a check says RLOCK_ENOTHELD. */
  rlock__hold_push_owned(l->client, l->name, id, lease_ms, sent_us, l->base,
                         UINT64_MAX, l->ms);
}

int rlock__sync_unconfirmed(const rlock_lock *l, const rlock__call *call) {
  return rlock__err(RLOCK_EREPLICA,
                    "%s '%s': written on %s, but no replica confirmed it "
                    "within %lld ms",
                    l->kind->label, l->name, call->served_by,
                    (long long)l->client->cfg.replica_sync_timeout_ms);
}

int rlock__check_permit_lease(int64_t lease_ms, const char *fn) {
  if (lease_ms < 1 || lease_ms > RLOCK_MAX_DURATION_MS)
    return rlock__err(RLOCK_EINVAL,
                      "%s: lease must be 1..%" PRId64 " ms (got %" PRId64 ")",
                      fn, RLOCK_MAX_DURATION_MS, lease_ms);
  return RLOCK_OK;
}

int rlock__permit_known(const rlock_lock *l, const char *id) {
  return rlock__hold_check(l->client, l->name, id) != RLOCK_ENOTHELD
             ? RLOCK__HOLD_LOST
             : RLOCK__HOLD_NONE;
}

int rlock__permit_outcome(rlock_lock *l, const char *op, const char *id,
                          int state, int rc, int64_t v, int64_t lease_ms,
                          int64_t sent_us) {
  if (strcmp(op, "release") == 0) /* unconfirmed: the master's answer says */
    return rc == RLOCK_OK || (rc == RLOCK_EREPLICA && v != 1)
               ? rlock__permit_result(l, id, state, v)
               : rc;
  if (strcmp(op, "lease") == 0)
    return rc == RLOCK_OK && v == -2
               ? rlock__permit_result(l, id, RLOCK__HOLD_NONE, 0)
               : rc;
  if (rc != RLOCK_OK && rc != RLOCK_EREPLICA)
    return rc; /* renew: the lease is the old or the new one */
  if (v == 1) {
    rlock__permit_relet(l, id, lease_ms, sent_us);
    return rc;
  }
  rlock__hold_forget(l->client, l->name, id);
  return rlock__permit_result(l, id, state, 0);
}

/* ---- a permit-expirable semaphore's snapshot --------------------------------
 */

struct rlock_permits_info {
  int64_t available;
  size_t leased, n;
  int64_t *lease_ms;                    /* n of them */
  char (*ids)[RLOCK_PERMIT_ID_LEN + 1]; /* n of them */
};

static int permits_malformed(void) {
  return rlock__err(RLOCK_EPROTO,
                    "the semaphore's inspection returned an unexpected "
                    "reply");
}

int rlock__permits_parse(const rlock__reply *r, rlock_permits_info **out) {
  *out = NULL;
  if (r->type != RLOCK__R_ARRAY || r->n < 2 || r->n % 2 != 0 ||
      r->elem[0]->type != RLOCK__R_INT || r->elem[1]->type != RLOCK__R_INT ||
      r->elem[1]->integer < 0)
    return permits_malformed();
  size_t n = (r->n - 2) / 2;
  rlock_permits_info *info = rlock__calloc(1, sizeof *info);
  if (info == NULL ||
      (n > 0 &&
       ((info->lease_ms = rlock__calloc(n, sizeof *info->lease_ms)) == NULL ||
        (info->ids = rlock__calloc(n, sizeof *info->ids)) == NULL))) {
    rlock_permits_info_free(info);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  info->available = r->elem[0]->integer;
  info->leased = (size_t)r->elem[1]->integer;
  info->n = n;
  for (size_t i = 0; i < n; i++) {
    const rlock__reply *id = r->elem[2 + 2 * i], *ms = r->elem[3 + 2 * i];
    if (id->type != RLOCK__R_STR || ms->type != RLOCK__R_INT) {
      rlock_permits_info_free(info);
      return permits_malformed();
    }
    snprintf(
        info->ids[i], sizeof info->ids[i], "%.*s",
        (int)(id->len < RLOCK_PERMIT_ID_LEN ? id->len : RLOCK_PERMIT_ID_LEN),
        id->str);
    info->lease_ms[i] = ms->integer;
  }
  *out = info;
  return RLOCK_OK;
}

int64_t rlock_permits_info_available(const rlock_permits_info *info) {
  return info != NULL ? info->available : 0;
}

size_t rlock_permits_info_leased(const rlock_permits_info *info) {
  return info != NULL ? info->leased : 0;
}

size_t rlock_permits_info_count(const rlock_permits_info *info) {
  return info != NULL ? info->n : 0;
}

const char *rlock_permits_info_id(const rlock_permits_info *info, size_t i) {
  return info != NULL && i < info->n ? info->ids[i] : NULL;
}

int64_t rlock_permits_info_lease_ms(const rlock_permits_info *info, size_t i) {
  return info != NULL && i < info->n ? info->lease_ms[i] : 0;
}

void rlock_permits_info_free(rlock_permits_info *info) {
  if (info == NULL)
    return;
  free(info->lease_ms);
  free(info->ids);
  free(info);
}
