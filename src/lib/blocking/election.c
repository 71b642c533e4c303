/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * election.c - the blocking election calls (rlock/election.h): a campaign
 * is the generic acquisition (acquire.c) of a lock object of the election
 * kind carrying its value; a resignation is a release; an observation
 * one script. The calls and their answers are kinds/election.c's.
 */
#include "calls.h"
#include "common.h"
#include "election_int.h"

int rlock_election_campaign(rlock_election *e, const char *value,
                            const rlock_acquire_options *opts, int64_t *term) {
  if (e == NULL)
    return rlock__err(RLOCK_EINVAL, "election is NULL");
  rlock_acquire_options o;
  int rc = rlock__campaign_options(&o, opts);
  rlock_lock *camp = NULL;
  if (rc == RLOCK_OK)
    rc = rlock__campaign_lock(&camp, e, value);
  if (rc != RLOCK_OK)
    return rc;
  int64_t token = 0;
  o.token = &token;
  rc = rlock__acquire_opts(camp, &o);
  rlock_lock_free(camp); /* the hold's record is kept by name */
  if (rc == RLOCK_OK && term != NULL)
    *term = token;
  return rc;
}

int rlock_election_resign(rlock_election *e, uint64_t owner) {
  if (e == NULL)
    return rlock__err(RLOCK_EINVAL, "election is NULL");
  return rlock_lock_release_owner(e->lock, owner);
}

int rlock_election_observe(rlock_leader **out, rlock_election *e) {
  if (out == NULL || e == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_election_observe: %s is NULL",
                      out ? "election" : "out");
  *out = NULL;
  int rc = rlock__blocking_check(e->lock->client);
  if (rc != RLOCK_OK)
    return rc;
  rlock__call call;
  rlock__reply *r;
  rlock__observe_call(e->lock, &call);
  rc = rlock__lock_run(e->lock, &call, &r);
  if (rc != RLOCK_OK)
    return rc;
  rc = rlock__observe_parse(r, out);
  rlock__reply_free(r);
  return rc;
}
