/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock.c - lock objects and what every kind shares (the release's
 * answer and latch, the local check); and the reentrant kind (Redisson
 * RLock): its attempt, release and force-release scripts. The blocking
 * calls that run them are blocking/calls.c's, the loop's loop/lops.c's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "conn.h"
#include "lock_int.h"
#include "names.h"
#include "watchdog.h"

#define UNLOCK_MESSAGE "0"

int rlock__attempt_result(const rlock_lock *l, const rlock__reply *r,
                          int64_t *ttl_ms) {
  if (r->type == RLOCK__R_NIL ||
      (l->kind->tokens && r->type == RLOCK__R_ARRAY && r->n == 1 &&
       r->elem[0]->type == RLOCK__R_INT))
    return RLOCK_OK;
  if (r->type == RLOCK__R_INT) {
    *ttl_ms = r->integer;
    return RLOCK_ELOCKED;
  }
  if (rlock__reply_is(r, "UPGRADE"))
    return rlock__err(RLOCK_EDEADLK,
                      "read-write lock '%s': this thread holds read holds, "
                      "so waiting for the write hold would wait on itself; "
                      "release the read holds first",
                      l->name);
  return rlock__err(RLOCK_EPROTO,
                    "%s acquire script returned an "
                    "unexpected reply type (%s)",
                    l->kind->label, rlock__reply_type_name(r));
}

int64_t rlock__attempt_token(const rlock__reply *r) {
  return r->type == RLOCK__R_ARRAY && r->n == 1 ? r->elem[0]->integer : 0;
}

const rlock__latch rlock__no_latch = {"-", 0, 0};

void rlock__latch_name(rlock_lock *l, const rlock__latch *latch,
                       rlock__call *call) {
  rlock__call_arg(call, rlock__call_fmt(call, "%s:%s", l->latch, latch->id));
}

void rlock__latch_ttl(const rlock__latch *latch, rlock__call *call) {
  rlock__call_num(call, latch->ttl_ms);
}

int rlock__latch_spent(const rlock__latch *latch, const rlock__reply *r) {
  return latch->ttl_ms > 0 && r != NULL && r->type != RLOCK__R_NIL &&
         r->type != RLOCK__R_ERROR;
}

void rlock__latch_key(const rlock_lock *l, const rlock__latch *latch, char *buf,
                      size_t size) {
  snprintf(buf, size, "%s:%s", l->latch, latch->id);
}

void rlock__latch_del(const rlock_lock *l, const rlock__latch *latch,
                      rlock__call *call) {
  rlock__call_cmd(call, "DEL");
  rlock__call_key(call, rlock__call_fmt(call, "%s:%s", l->latch, latch->id));
}

/* ---- the reentrant kind ------------------------------------------------ */

static void attempt(rlock_lock *l, const char *owner, int64_t lease_ms,
                    int64_t wait_ms, rlock__call *call) {
  (void)wait_ms;
  rlock__call_script(call, &rlock__script_lock_acquire);
  rlock__call_key(call, l->name);
  rlock__call_num(call, lease_ms);
  rlock__call_arg(call, owner);
  if (l->kind->nonreentrant) /* else nothing: the script reads nil */
    rlock__call_arg(call, "1");
}

const char *rlock__own_channel(rlock_lock *l, const char *owner, char *buf,
                               size_t size) {
  (void)owner, (void)buf, (void)size;
  return l->channel;
}

void rlock__release_args(rlock_lock *l, const rlock__script *script,
                         const char *owner, int64_t keep_ms,
                         const rlock__latch *latch, rlock__call *call) {
  rlock__call_script(call, script);
  rlock__call_key(call, l->name);
  rlock__call_arg(call, UNLOCK_MESSAGE);
  rlock__call_num(call, keep_ms);
  rlock__call_arg(call, owner);
  rlock__call_arg(call, rlock__publish_cmd(l->client));
  rlock__latch_ttl(latch, call);
  rlock__call_arg(call, l->channel);
  rlock__latch_name(l, latch, call);
}

static void release(rlock_lock *l, const char *owner, int64_t keep_ms,
                    const rlock__latch *latch, rlock__call *call) {
  rlock__release_args(l, &rlock__script_lock_release, owner, keep_ms, latch,
                      call);
}

void rlock__plain_force_release(rlock_lock *l, rlock__call *call) {
  rlock__call_script(call, &rlock__script_lock_force_release);
  rlock__call_key(call, l->name);
  rlock__call_arg(call, UNLOCK_MESSAGE);
  rlock__call_arg(call, rlock__publish_cmd(l->client));
  rlock__call_arg(call, l->channel);
}

void rlock__plain_inspect(rlock_lock *l, rlock__call *call) {
  rlock__call_script(call, &rlock__script_lock_inspect);
  rlock__call_key(call, l->name);
}

/* What every kind of the reentrant lock's layout does alike: its
 * channel, release, force release and inspection. */
#define PLAIN_OPS                                                              \
  .channel = rlock__own_channel, .release = release,                           \
  .force_release = rlock__plain_force_release, .inspect = rlock__plain_inspect

static const rlock__kind reentrant_kind = {
    .label = "lock",
    .metric = RLOCK__MK_REENTRANT,
    .attempt = attempt,
    PLAIN_OPS,
};

/* Redisson 4.4's non-reentrant lock: the reentrant lock's layout and
 * scripts, a re-entry refused. */
static const rlock__kind nonreentrant_kind = {
    .label = "non-reentrant lock",
    .metric = RLOCK__MK_NONREENTRANT,
    .nonreentrant = 1,
    .attempt = attempt,
    PLAIN_OPS,
};

/* The spin lock: the reentrant lock's scripts, a back-off for waiting. */
static const rlock__kind spin_kind = {
    .label = "spin lock",
    .metric = RLOCK__MK_SPIN,
    .spin = 1,
    .attempt = attempt,
    PLAIN_OPS,
};

/* The fenced lock: the reentrant lock whose acquisitions take a token. */
static void fenced_attempt(rlock_lock *l, const char *owner, int64_t lease_ms,
                           int64_t wait_ms, rlock__call *call) {
  (void)wait_ms;
  rlock__call_script(call, &rlock__script_fenced_acquire);
  rlock__call_key(call, l->name);
  rlock__call_num(call, lease_ms);
  rlock__call_arg(call, owner);
  rlock__call_arg(call, l->token);
}

static const rlock__kind fenced_kind = {
    .label = "fenced lock",
    .metric = RLOCK__MK_FENCED,
    .tokens = 1,
    .attempt = fenced_attempt,
    PLAIN_OPS,
};

/* ---- lock objects ------------------------------------------------------ */

void rlock__field(const rlock_lock *l, const char *owner, char *buf) {
  const char *suffix = l->kind->field_suffix;
  size_t n = strlen(owner);
  memcpy(buf, owner, n + 1); /* on every operation: no snprintf */
  if (suffix != NULL)
    memcpy(buf + n, suffix, strlen(suffix) + 1);
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
  rlock_lock *l = rlock__calloc(1, sizeof *l);
  if (l == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  l->client = client;
  l->kind = kind;
  /* No per-name slot in a fork()ed child: its mutex may have been held
   * at the fork (the child's operations on this client are refused). */
  l->ms = rlock__origin_ok(&client->origin)
              ? rlock__obs_mset(&client->obs, kind->metric, name)
              : &client->obs.kinds[kind->metric];
  rlock__spin_options(&l->spin, NULL); /* the defaults: cannot fail */
  l->name = rlock__strdup(name);
  l->channel = rlock__name_prefixed(
      keys == RLOCK__KEYS_RW ? "redisson_rwlock" : "redisson_lock__channel",
      name);
  if (keys == RLOCK__KEYS_FAIR) {
    l->queue = rlock__name_prefixed("redisson_lock_queue", name);
    l->timeouts = rlock__name_prefixed("redisson_lock_timeout", name);
    l->rw_channel = rlock__name_prefixed("redisson_rwlock", name);
  }
  l->latch = rlock__name_prefixed("redisson_unlock_latch", name);
  l->token = rlock__name_prefixed("redisson_lock_token", name);
  if (keys == RLOCK__KEYS_RW)
    l->base = rlock__name_braced(name);
  if (l->name == NULL || l->channel == NULL || l->latch == NULL ||
      l->token == NULL ||
      (keys == RLOCK__KEYS_FAIR &&
       (l->queue == NULL || l->timeouts == NULL || l->rw_channel == NULL)) ||
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

int rlock_lock_new_spin(rlock_lock **out, rlock_client *client,
                        const char *name) {
  return rlock__lock_alloc(out, client, name, &spin_kind, RLOCK__KEYS_PLAIN);
}

int rlock_spin_options_init(rlock_spin_options *opts, unsigned int version) {
  if (opts == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_spin_options_init: opts is NULL");
  if (version < 1 || version > RLOCK_SPIN_OPTIONS_VERSION)
    return rlock__err(RLOCK_EINVAL,
                      "rlock_spin_options version %u is not one this "
                      "library knows (1 to %d)",
                      version, RLOCK_SPIN_OPTIONS_VERSION);
  rlock_spin_options defaults = RLOCK_SPIN_OPTIONS_INIT;
  *opts = defaults;
  opts->version = version;
  return RLOCK_OK;
}

static int check_delay(const char *field, int64_t ms) {
  if (ms < 1 || ms > RLOCK_MAX_DURATION_MS)
    return rlock__err(RLOCK_EINVAL,
                      "spin lock %s must be 1..%" PRId64 " ms (got %" PRId64
                      ")",
                      field, RLOCK_MAX_DURATION_MS, ms);
  return RLOCK_OK;
}

/* Every field of `o`, whichever back-off it chooses. */
static int check_spin(const rlock_spin_options *o) {
  int rc;
  if (o->backoff != RLOCK_SPIN_EXPONENTIAL && o->backoff != RLOCK_SPIN_CONSTANT)
    return rlock__err(RLOCK_EINVAL,
                      "spin lock backoff must be RLOCK_SPIN_EXPONENTIAL or "
                      "RLOCK_SPIN_CONSTANT (got %d)",
                      o->backoff);
  if ((rc = check_delay("initial_ms", o->initial_ms)) != RLOCK_OK ||
      (rc = check_delay("max_ms", o->max_ms)) != RLOCK_OK ||
      (rc = check_delay("delay_ms", o->delay_ms)) != RLOCK_OK)
    return rc;
  if (o->max_ms < o->initial_ms)
    return rlock__err(RLOCK_EINVAL,
                      "spin lock max_ms (%" PRId64 ") is below initial_ms "
                      "(%" PRId64 ")",
                      o->max_ms, o->initial_ms);
  if (!(o->multiplier >= 1.0 && o->multiplier <= 1000.0)) /* NaN too */
    return rlock__err(RLOCK_EINVAL,
                      "spin lock multiplier must be 1..1000 (got %g)",
                      o->multiplier);
  if (o->jitter != 0 && o->jitter != 1)
    return rlock__err(RLOCK_EINVAL, "spin lock jitter must be 0 or 1 (got %d)",
                      o->jitter);
  return RLOCK_OK;
}

int rlock__spin_options(rlock__spin *out, const rlock_spin_options *in) {
  rlock_spin_options o = RLOCK_SPIN_OPTIONS_INIT;
  if (in != NULL &&
      (in->version < 1 || in->version > RLOCK_SPIN_OPTIONS_VERSION))
    return rlock__err(RLOCK_EINVAL,
                      "rlock_spin_options version %u is not one this "
                      "library knows (1 to %d): initialise with "
                      "RLOCK_SPIN_OPTIONS_INIT",
                      in->version, RLOCK_SPIN_OPTIONS_VERSION);
  if (in != NULL)
    o = *in; /* version 1 is every field there is */
  int rc = check_spin(&o);
  if (rc == RLOCK_OK)
    *out = (rlock__spin){.backoff = o.backoff,
                         .initial_ms = o.initial_ms,
                         .max_ms = o.max_ms,
                         .delay_ms = o.delay_ms,
                         .multiplier = o.multiplier,
                         .jitter = o.jitter};
  return rc;
}

int rlock_lock_new_spin_opts(rlock_lock **out, rlock_client *client,
                             const char *name, const rlock_spin_options *opts) {
  rlock__spin spin;
  int rc = rlock__spin_options(&spin, opts);
  if (rc == RLOCK_OK)
    rc = rlock__lock_alloc(out, client, name, &spin_kind, RLOCK__KEYS_PLAIN);
  else if (out != NULL)
    *out = NULL;
  if (rc == RLOCK_OK)
    (*out)->spin = spin;
  return rc;
}

int rlock_lock_new_nonreentrant(rlock_lock **out, rlock_client *client,
                                const char *name) {
  return rlock__lock_alloc(out, client, name, &nonreentrant_kind,
                           RLOCK__KEYS_PLAIN);
}

int rlock_lock_new_fenced(rlock_lock **out, rlock_client *client,
                          const char *name) {
  return rlock__lock_alloc(out, client, name, &fenced_kind, RLOCK__KEYS_PLAIN);
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
  free(l->rw_channel);
  free(l->latch);
  free(l->token);
  free(l->leader);
  free(l->value);
  free(l);
}

const char *rlock_lock_name(const rlock_lock *l) { return l ? l->name : NULL; }

/* The owner field is built on every operation; cache it per thread for
 * the last client used. Keyed by client id and thread id, so a second
 * client, or the child of a fork (new thread id), rebuilds it. */
static _Thread_local struct {
  char id[37];
  uint64_t tid;
  char owner[RLOCK_OWNER_MAX];
  size_t len;
} owner_cache;

void rlock__owner(const rlock_client *c, char *buf) {
  uint64_t tid = rlock__thread_id();
  if (owner_cache.tid != tid || memcmp(owner_cache.id, c->id, 36) != 0) {
    int n = snprintf(owner_cache.owner, sizeof owner_cache.owner, "%s:%" PRIu64,
                     c->id, tid);
    owner_cache.len = (size_t)n;
    memcpy(owner_cache.id, c->id, sizeof owner_cache.id);
    owner_cache.tid = tid;
  }
  memcpy(buf, owner_cache.owner, owner_cache.len + 1);
}

void rlock__owner_as(const rlock_client *c, uint64_t owner, char *buf) {
  if (owner == RLOCK_OWNER_THREAD)
    rlock__owner(c, buf);
  else
    snprintf(buf, RLOCK_OWNER_MAX, "%s:%" PRIu64, c->id, owner);
}

/* Interpret a release script's answer given what we knew locally about
 * the hold of `field`. */
int rlock__release_result(rlock_lock *l, const rlock__call *call,
                          const char *field, int state, const rlock__reply *r) {
  int gone =
      r->type == RLOCK__R_NIL || (r->type == RLOCK__R_INT && r->integer == 2);
  if (gone && state == RLOCK__HOLD_HELD) /* lost, and news to the client */
    rlock__obs_lost(l->ms);
  if (gone && state == RLOCK__HOLD_NONE)
    return rlock__err(RLOCK_ENOTHELD,
                      "%s '%s' is not held by this owner "
                      "(%s)",
                      l->kind->label, l->name, field);
  if (gone)
    return rlock__err(RLOCK_ELOST,
                      "%s '%s' was lost before release: it "
                      "expired or was deleted while held",
                      l->kind->label, l->name);
  if (r->type != RLOCK__R_INT)
    return rlock__err(RLOCK_EPROTO, "unlock script returned a %s",
                      rlock__reply_type_name(r));
  if (r->integer == 1) /* our last hold went: nothing left to renew */
    rlock__hold_forget(l->client, l->name, field);
  return rlock__call_unconfirmed(call) ? rlock__release_unconfirmed(l, call)
                                       : RLOCK_OK;
}

void rlock__release_latch(const rlock_lock *l, rlock__latch *latch, char *id) {
  const rlock_config *cfg = &l->client->cfg;
  *latch = rlock__no_latch;
  if (cfg->target.kind == RLOCK__TOPO_SINGLE || rlock__random_hex(id, 16))
    return;
  latch->id = id;
  latch->ttl_ms = 2 * (cfg->connect_timeout_ms + cfg->command_timeout_ms +
                       cfg->replica_sync_timeout_ms);
  latch->until_us = rlock__deadline_after_ms(cfg->connect_timeout_ms +
                                             cfg->command_timeout_ms);
}

int rlock__release_again(const rlock__latch *latch, int rc,
                         const rlock__call *call) {
  if (latch->ttl_ms == 0 || rlock__now_us() >= latch->until_us)
    return 0;
  return rc == RLOCK_EIO || rc == RLOCK_ETIMEOUT ||
         (rc == RLOCK_OK && rlock__call_unconfirmed(call));
}

int rlock__force_result(rlock_lock *l, const rlock__call *call,
                        const rlock__reply *r, int *deleted) {
  if (r->type != RLOCK__R_INT)
    return rlock__err(RLOCK_EPROTO, "force-unlock script returned a %s",
                      rlock__reply_type_name(r));
  if (r->integer == 1)
    rlock__hold_mark_lost(l->client, l->name);
  if (deleted != NULL)
    *deleted = r->integer == 1;
  if (!rlock__call_unconfirmed(call))
    return RLOCK_OK;
  return rlock__err(RLOCK_EREPLICA,
                    "%s '%s' was force-released on %s, but no replica "
                    "confirmed it within %lld ms",
                    l->kind->label, l->name, call->served_by,
                    (long long)l->client->cfg.replica_sync_timeout_ms);
}

int rlock__release_unconfirmed(const rlock_lock *l, const rlock__call *call) {
  return rlock__err(RLOCK_EREPLICA,
                    "%s '%s' was released on %s, but none of its %d replicas "
                    "confirmed it within %lld ms: after a failover the lock "
                    "may stay held until its lease runs out",
                    l->kind->label, l->name, call->served_by, call->replicas,
                    (long long)l->client->cfg.replica_sync_timeout_ms);
}

int rlock__acquire_unconfirmed(const rlock_lock *l, const rlock__call *call) {
  return rlock__err(RLOCK_EREPLICA,
                    "%s '%s' was acquired on %s, but none of its %d replicas "
                    "confirmed it within %lld ms; it was given back",
                    l->kind->label, l->name, call->served_by, call->replicas,
                    (long long)l->client->cfg.replica_sync_timeout_ms);
}

int rlock__acquired_record(rlock_lock *l, const char *owner, int64_t lease_ms,
                           int64_t sent_us, uint64_t owner_number) {
  if (l->kind->sync && !l->kind->permits)
    return RLOCK_OK; /* nothing held: permits or a latch's zero */
  char field[RLOCK_FIELD_MAX];
  rlock__field(l, owner, field);
  const char *base = l->kind->read_renewal || l->kind->permits ? l->base : NULL;
  if (rlock__hold_push_owned(l->client, l->name, field, lease_ms, sent_us, base,
                             owner_number, l->ms) == RLOCK_OK)
    return RLOCK_OK;
  return rlock__err(RLOCK_ENOMEM,
                    "out of memory recording the hold of '%s' (released)",
                    l->name);
}

int rlock_lock_check(rlock_lock *l) {
  return rlock_lock_check_owner(l, RLOCK_OWNER_THREAD);
}

int rlock_lock_check_owner(rlock_lock *l, uint64_t owner_number) {
  if (l == NULL)
    return rlock__err(RLOCK_EINVAL, "lock is NULL");
  if (!rlock__origin_ok(&l->client->origin)) /* the records are the
                                                parent's */
    return rlock__origin_refuse(&l->client->origin);
  char owner[RLOCK_OWNER_MAX], field[RLOCK_FIELD_MAX];
  rlock__owner_as(l->client, owner_number, owner);
  rlock__field(l, owner, field);
  return rlock__hold_check(l->client, l->name, field);
}
