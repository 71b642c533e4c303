/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lelect.c - an election's campaign and resignation on the loop
 * (rlock/loop.h): a campaign is the loop's acquisition (lacquire.c) of a
 * lock object of the election kind carrying its value, freed when the
 * acquisition completes (hold records are kept by name); a resignation is
 * the loop's release. The observation is lops.c's.
 */
#include <stdlib.h>

#include "common.h"
#include "election_int.h"
#include "loop.h"

/* One campaign under way: its own lock object, and the caller's
 * callback. */
typedef struct campaign {
  rlock_lock *camp;
  rlock_async_fn cb;
  void *arg;
} campaign;

/* The acquisition is over (its operation no longer uses the lock object):
 * free what the campaign owns, then tell the caller. */
static void campaign_done(void *arg, int rc, int64_t term) {
  campaign *cp = arg;
  rlock_async_fn cb = cp->cb;
  void *cb_arg = cp->arg;
  rlock_lock_free(cp->camp);
  free(cp);
  cb(cb_arg, rc, rc == RLOCK_OK ? term : 0);
}

int rlock_election_campaign_async(rlock_election *e, const char *value,
                                  const rlock_acquire_options *opts,
                                  rlock_async_fn cb, void *arg, rlock_op **op) {
  if (op != NULL)
    *op = NULL;
  if (e == NULL || cb == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_election_campaign_async: %s is NULL",
                      e == NULL ? "election" : "callback");
  campaign *cp = rlock__calloc(1, sizeof *cp);
  if (cp == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  int rc = rlock__campaign_lock(&cp->camp, e, value);
  if (rc == RLOCK_OK) {
    cp->cb = cb;
    cp->arg = arg;
    rc = rlock_lock_acquire_async(cp->camp, opts, campaign_done, cp, op);
  }
  if (rc != RLOCK_OK) { /* no callback will come */
    rlock_lock_free(cp->camp);
    free(cp);
  }
  return rc;
}

int rlock_election_resign_async(rlock_election *e, uint64_t owner,
                                rlock_async_fn cb, void *arg) {
  if (e == NULL)
    return rlock__err(RLOCK_EINVAL,
                      "rlock_election_resign_async: election is NULL");
  return rlock_lock_release_async(e->lock, owner, cb, arg);
}
