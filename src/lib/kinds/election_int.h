/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * election_int.h - the definition behind rlock_election and
 * rlock_leader, shared by both drivers (blocking/election.c,
 * loop/lelect.c): the election kind (a fenced lock whose attempt also
 * writes the leader record and refuses a second campaign of the leader,
 * and whose release deletes the record), the observation's call and how
 * its answer reads. The scripts are scripts/election_*.lua.
 */
#ifndef RLOCK_ELECTION_INT_H
#define RLOCK_ELECTION_INT_H

#include "lock_int.h"
#include "rlock/election.h"

struct rlock_election {
  /* The election kind on the name, with no value: resignations, checks,
   * observations. Campaigns use a lock object of their own that carries
   * their value (rlock__campaign_lock), so campaigns of several owners
   * share one election object. */
  rlock_lock *lock;
  /* The plain fenced lock on the name (rlock_election_lock). */
  rlock_lock *fenced;
};

struct rlock_leader {
  int present;
  char *owner; /* NULL when none */
  char *value; /* NULL when none or no record */
  int64_t term;
  int64_t ttl_ms;
};

/* RLOCK_OK, or RLOCK_EINVAL with a message for a value that is NULL, empty
 * or longer than RLOCK_MAX_LEADER_VALUE. */
int rlock__leader_value_check(const char *value);

/* A lock object of the election kind on `e`'s name carrying a copy of
 * `value` (checked), for one campaign; free it with rlock_lock_free once
 * the campaign is over (hold records are kept by name, not by object). */
int rlock__campaign_lock(rlock_lock **out, rlock_election *e,
                         const char *value);

/* A campaign's options, checked: those of an acquisition, without a token
 * asked (the term is handed back instead). */
int rlock__campaign_options(rlock_acquire_options *out,
                            const rlock_acquire_options *in);

/* The observation (election_observe.lua) and its answer. */
void rlock__observe_call(rlock_lock *l, rlock__call *call);
int rlock__observe_parse(const rlock__reply *r, rlock_leader **out);

#endif /* RLOCK_ELECTION_INT_H */
