/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * election.c - the election kind and the election objects (election.h):
 * a fenced lock (Redisson RFencedLock's hash, token counter and channel)
 * whose attempt also writes the leader record rlock_leader:{name} and
 * refuses a second campaign by a leader that knows it leads (a hold of
 * the owner's field its client does not know of is waited on), and whose
 * release deletes the record. The calls are built here and run by
 * blocking/election.c or loop/lelect.c.
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "election_int.h"
#include "names.h"
#include "watchdog.h"

static void campaign_attempt(rlock_lock *l, const char *owner, int64_t lease_ms,
                             int64_t wait_ms, rlock__call *call) {
  (void)wait_ms;
  rlock__call_script(call, &rlock__script_election_campaign);
  rlock__call_key(call, l->name);
  rlock__call_num(call, lease_ms);
  rlock__call_arg(call, owner);
  rlock__call_arg(call, l->token);
  rlock__call_arg(call, l->leader);
  /* An object without a value (the election's own) never campaigns:
   * rlock__campaign_lock makes the ones that do. */
  rlock__call_arg(call, l->value != NULL ? l->value : "");
  /* Whether this owner leads as far as it knows: the script refuses only
   * such a leader (RLOCK_EHELD); a hold of its field it does not know of
   * (lost, e.g. left on a promoted replica) is waited on as another's. */
  rlock__call_arg(call,
                  rlock__hold_live(l->client, l->name, owner) ? "1" : "0");
}

/* lock_release.lua's arguments, plus the record. */
static void resign(rlock_lock *l, const char *owner, int64_t keep_ms,
                   const rlock__latch *latch, rlock__call *call) {
  rlock__release_args(l, &rlock__script_election_resign, owner, keep_ms, latch,
                      call);
  rlock__call_arg(call, l->leader);
}

/* A fenced lock that issues terms and is never re-entered: the drivers'
 * acquisition reads NON_REENTRANT_REACQUIRE as RLOCK_EHELD. */
static const rlock__kind election_kind = {
    .label = "election",
    .metric = RLOCK__MK_FENCED,
    .tokens = 1,
    .nonreentrant = 1,
    .attempt = campaign_attempt,
    .channel = rlock__own_channel,
    .release = resign,
    .force_release = rlock__plain_force_release,
    .inspect = rlock__plain_inspect,
};

static int election_lock(rlock_lock **out, rlock_client *client,
                         const char *name) {
  int rc =
      rlock__lock_alloc(out, client, name, &election_kind, RLOCK__KEYS_PLAIN);
  if (rc != RLOCK_OK)
    return rc;
  (*out)->leader = rlock__name_prefixed("rlock_leader", name);
  if ((*out)->leader == NULL) {
    rlock_lock_free(*out);
    *out = NULL;
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  return RLOCK_OK;
}

int rlock_election_new(rlock_election **out, rlock_client *client,
                       const char *name) {
  if (out == NULL || client == NULL)
    return rlock__err(RLOCK_EINVAL, "cannot create an election: %s is NULL",
                      out ? "client" : "out");
  *out = NULL;
  rlock_election *e = rlock__calloc(1, sizeof *e);
  if (e == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  int rc = election_lock(&e->lock, client, name);
  if (rc == RLOCK_OK)
    rc = rlock_lock_new_fenced(&e->fenced, client, name);
  if (rc != RLOCK_OK) {
    rlock_election_free(e);
    return rc;
  }
  *out = e;
  return RLOCK_OK;
}

void rlock_election_free(rlock_election *e) {
  if (e == NULL)
    return;
  rlock_lock_free(e->lock);
  rlock_lock_free(e->fenced);
  free(e);
}

const char *rlock_election_name(const rlock_election *e) {
  return e != NULL ? e->lock->name : NULL;
}

rlock_lock *rlock_election_lock(rlock_election *e) {
  if (e == NULL) {
    rlock__err(RLOCK_EINVAL, "election is NULL");
    return NULL;
  }
  return e->fenced;
}

int rlock__leader_value_check(const char *value) {
  if (value == NULL)
    return rlock__err(RLOCK_EINVAL, "leader value is NULL");
  size_t n = strnlen(value, RLOCK_MAX_LEADER_VALUE + 1);
  if (n == 0)
    return rlock__err(RLOCK_EINVAL, "leader value is empty");
  if (n > RLOCK_MAX_LEADER_VALUE)
    return rlock__err(RLOCK_EINVAL,
                      "leader value is longer than %d bytes "
                      "(RLOCK_MAX_LEADER_VALUE)",
                      RLOCK_MAX_LEADER_VALUE);
  return RLOCK_OK;
}

int rlock__campaign_lock(rlock_lock **out, rlock_election *e,
                         const char *value) {
  *out = NULL;
  if (e == NULL)
    return rlock__err(RLOCK_EINVAL, "election is NULL");
  int rc = rlock__leader_value_check(value);
  if (rc == RLOCK_OK)
    rc = election_lock(out, e->lock->client, e->lock->name);
  if (rc != RLOCK_OK)
    return rc;
  (*out)->value = rlock__strdup(value);
  if ((*out)->value == NULL) {
    rlock_lock_free(*out);
    *out = NULL;
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  return RLOCK_OK;
}

int rlock__campaign_options(rlock_acquire_options *out,
                            const rlock_acquire_options *in) {
  int rc = rlock__options(out, in);
  if (rc == RLOCK_OK && out->token != NULL)
    return rlock__err(RLOCK_EINVAL, "a campaign hands back its term itself: "
                                    "rlock_acquire_options.token must be NULL");
  return rc;
}

/* ---- observation ------------------------------------------------------- */

void rlock__observe_call(rlock_lock *l, rlock__call *call) {
  rlock__call_script(call, &rlock__script_election_observe);
  rlock__call_key(call, l->name);
  rlock__call_arg(call, l->leader);
}

static int is_str(const rlock__reply *r) { return r->type == RLOCK__R_STR; }

/* {} | {owner, pttl} | {owner, pttl, term, value}: the shape checked. */
static int observe_shape(const rlock__reply *r) {
  if (r->type != RLOCK__R_ARRAY || (r->n != 0 && r->n != 2 && r->n != 4))
    return 0;
  if (r->n >= 2 && (!is_str(r->elem[0]) || r->elem[1]->type != RLOCK__R_INT))
    return 0;
  return r->n != 4 || (r->elem[2]->type == RLOCK__R_INT && is_str(r->elem[3]));
}

int rlock__observe_parse(const rlock__reply *r, rlock_leader **out) {
  if (!observe_shape(r))
    return rlock__err(RLOCK_EPROTO, "election observe script returned an "
                                    "unexpected reply");
  rlock_leader *l = rlock__calloc(1, sizeof *l);
  if (l == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  l->ttl_ms = -2;
  if (r->n >= 2) {
    l->present = 1;
    l->ttl_ms = r->elem[1]->integer;
    l->owner = rlock__strdup(r->elem[0]->str);
  }
  if (r->n == 4) {
    l->term = r->elem[2]->integer;
    l->value = rlock__strdup(r->elem[3]->str);
  }
  if ((r->n >= 2 && l->owner == NULL) || (r->n == 4 && l->value == NULL)) {
    rlock_leader_free(l);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  *out = l;
  return RLOCK_OK;
}

int rlock_leader_present(const rlock_leader *l) {
  return l != NULL && l->present;
}
const char *rlock_leader_owner(const rlock_leader *l) {
  return l != NULL ? l->owner : NULL;
}
const char *rlock_leader_value(const rlock_leader *l) {
  return l != NULL ? l->value : NULL;
}
int64_t rlock_leader_term(const rlock_leader *l) {
  return l != NULL ? l->term : 0;
}
int64_t rlock_leader_ttl_ms(const rlock_leader *l) {
  return l != NULL ? l->ttl_ms : -2;
}

void rlock_leader_free(rlock_leader *l) {
  if (l == NULL)
    return;
  free(l->owner);
  free(l->value);
  free(l);
}

int rlock_election_check(rlock_election *e, uint64_t owner) {
  if (e == NULL)
    return rlock__err(RLOCK_EINVAL, "election is NULL");
  return rlock_lock_check_owner(e->lock, owner);
}
