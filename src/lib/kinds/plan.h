/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan.h - the decisions of one acquisition, made once for both drivers.
 *
 * blocking/acquire.c (on the caller's thread, sleeping) and
 * loop/lacquire.c (a state machine, with timers) carry out the same
 * acquisition. What it decides lives here: how long a round sleeps at
 * most, when riding out an outage ends and how long each pause is, how a
 * failure after an outage is worded, how long the reads that settle an
 * attempt lost in flight go on and their pauses, and whether an
 * acquisition no replica confirmed is tried again. The steps do no I/O
 * and never sleep: each returns the moment to act next (the driver sleeps
 * or arms a timer until then), or 0 to give up.
 */
#ifndef RLOCK_PLAN_H
#define RLOCK_PLAN_H

#include <stdint.h>

typedef struct rlock_client rlock_client;
typedef struct rlock__call rlock__call; /* cmd/cmd.h */
typedef struct rlock_lock rlock_lock;
typedef struct rlock__spin rlock__spin; /* lock_int.h */

typedef struct rlock__plan {
  int64_t wait_ms;         /* as asked: 0 one try, RLOCK_WAIT_FOREVER */
  int64_t deadline_us;     /* the wait's end; INT64_MAX for ever */
  int64_t ttl_ms;          /* the holder's lease left at the last attempt; -1 */
  int64_t outage_us;       /* when the outage under way was first met, or 0 */
  int64_t backoff_ms;      /* the next pause of that outage */
  int64_t settle_until_us; /* reads settling a lost attempt end here ... */
  int64_t settle_ms;       /* ... with this pause before the next one */
  int waiting;             /* an answer said "held" and the wait began */
  unsigned spins;          /* a spin lock's pauses so far ... */
  int64_t spin_ms;         /* ... the next one ... */
  uint64_t seed;           /* ... and its jitter's generator */
} rlock__plan;

/* Pause between attempts whose acquisition no replica confirmed. */
#define RLOCK__UNCONFIRMED_PAUSE_MS 50

/* Start the plan of an acquisition waiting `wait_ms` from now. */
void rlock__plan_init(rlock__plan *p, int64_t wait_ms);

/* How long a waiter sleeps for an unlock message at most: until the
 * holder's lease runs out (at least 1 ms on, so a lock about to expire is
 * not hammered), within the wait. */
int64_t rlock__plan_round_until(const rlock__plan *p);

/* When trying an unreachable server must stop: the wait's end, or sooner
 * by the client's unreachable retry bound, counted from the outage's
 * first failure (or from `now` when none is under way). */
int64_t rlock__plan_retry_limit(const rlock__plan *p, const rlock_client *c,
                                int64_t now);

/* After a failed attempt: when to attempt again, riding out an outage, or
 * 0 to give up (the failure may not pass, the acquisition does not wait,
 * or the retry limit has come). Pauses of 25 ms doubling to 1 s from the
 * outage's first failure. */
int64_t rlock__plan_ride_out(rlock__plan *p, const rlock_client *c,
                             int retryable);

/* The attempt on `l` ended with `rc`. An answer (RLOCK_OK granted,
 * RLOCK_ELOCKED held elsewhere) ends the outage under way, if any. The
 * first "held" of an acquisition that waits begins its wait: counted once
 * in the client's and the lock's metrics (p->waiting). */
void rlock__plan_answered(rlock__plan *p, const rlock_lock *l, int rc);

/* A spin lock was found held: when to attempt again. Its back-off
 * (rlock__spin_first, then rlock__spin_next), never past the holder's
 * lease nor the wait (rlock__plan_round_until). */
int64_t rlock__plan_spin(rlock__plan *p, const rlock__spin *s);

/* Give up with `rc`, the last error: after an outage, worded with how
 * long it was tried again. Returns rc. */
int rlock__plan_outage_end(const rlock__plan *p, int rc);

/* An attempt was lost in flight: start the reads that tell whether it took
 * the lock. They go on within the retry limit (and at least a connect and
 * a command timeout). For a wait, an outage begins here, unless one is
 * under way: a wait it ends says how long it tried (plan_outage_end). */
void rlock__plan_settle_begin(rlock__plan *p, const rlock_client *c);

/* A settling read failed with `rc` (`call`: the read, after its run):
 * when to read again, or 0 to stop (the attempt's failure then stands).
 * A read runs nothing, so one lost in flight (a pooled connection the
 * dead master had reset) may pass as one that was never sent. */
int64_t rlock__plan_settle_again(rlock__plan *p, const rlock__call *call,
                                 int rc);

/* What a settling read's answer says of the attempt lost in flight. Nobody
 * else writes this owner's field: `now` (its count on the server) one
 * more than `had` (the levels this client recorded) means taken, as many
 * means not. */
typedef enum rlock__settled {
  RLOCK__SETTLED_UNTAKEN, /* the failure ran nothing: a wait rides it out */
  RLOCK__SETTLED_TAKEN,   /* the attempt took the lock */
  RLOCK__SETTLED_UNKNOWN, /* anything else: the failure stands, never
                             tried again (it may have taken the lock) */
} rlock__settled;
rlock__settled rlock__plan_settled(int64_t had, int64_t now);

/* Whether an attempt that failed with `rc` is, instead, the wait ending
 * without the condition: a kind whose attempt only reads (a latch) whose
 * read the call's bound cut (RLOCK_ETIMEOUT) after the wait's end. The
 * wait's last read is sent at its end, and the bound gives its answer a
 * short margin only: a slow answer is "not yet", nothing having been
 * taken. */
int rlock__plan_read_cut(const rlock__plan *p, const rlock_lock *l, int rc);

/* Whether a waiter whose sleep ended with no message (the holder's lease
 * outlasting the wait, or its subscription confirmed only then) is past
 * the wait's end and gives up now, "not in time", without attempting: an
 * attempt then is a write nothing suggested would succeed, racing the
 * call's bound, which leaves its answer RLOCK__WAIT_MARGIN_MS only, so a
 * slow but healthy server would turn "held for the whole wait" into
 * RLOCK_ETIMEOUT (Redisson gives up there too). Not for a latch, whose
 * look at the wait's end only reads (rlock__plan_read_cut), nor for a
 * wait for ever or a single try. */
int rlock__plan_wait_ended(const rlock__plan *p, const rlock_lock *l);

/* An acquisition no replica confirmed was given back: when to attempt
 * again (a replica may be catching up), or 0 when the wait leaves no room
 * (then RLOCK_EREPLICA). */
int64_t rlock__plan_unconfirmed_again(const rlock__plan *p);

#endif /* RLOCK_PLAN_H */
