/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * watchdog.h - this client's record of the locks its threads hold, and
 * the lease renewal built on it.
 *
 * Every successful acquisition pushes one level onto the (name, owner)
 * record with its lease (0 = watchdog lease); every release pops one level
 * *before* the release script is sent, so renewal can never outlive a
 * release (Redisson #7272). A record is renewed while any of its levels is
 * a watchdog level. The client's driver renews all such records every
 * third of the watchdog timeout, up to RLOCK__RENEW_BATCH locks per
 * script call (renew.c's tick, carried by the loop engine's lrenew.c, one
 * batch in flight per node: on a loop client's loop, or on a blocking
 * client's background thread). A renewal that finds the
 * lock gone marks the record lost (never re-takes it) and reports it
 * through the lost-lock callback; the owner's next release then returns
 * RLOCK_ELOST. A hold whose renewals fail is vouched for only until one
 * watchdog lease after the send time of its last confirmed renewal (or
 * acquisition): past that the server may have let it expire, so it
 * counts as lost too (rlock__hold_check says RLOCK_ELOST at once; the
 * next tick marks it and calls back).
 *
 * A renewal in flight is never let to outlive the release of the last
 * watchdog level: where the driver's renewals and releases may travel on
 * different connections (a blocking client), rlock__hold_pop waits for it
 * to come back before the release script is sent (see rlock__hold_pop).
 *
 * Locking: guarded by rlock__watchdog.mu; the renewal round trip runs with
 * the mutex released, and its results are applied only to records whose
 * generation has not changed meanwhile.
 */
#ifndef RLOCK_WATCHDOG_H
#define RLOCK_WATCHDOG_H

#include <pthread.h>
#include <stdint.h>

#include "map.h"
#include "obs.h"
#include "owner.h"

typedef struct rlock_client rlock_client;

#define RLOCK__RENEW_BATCH 100

/* Levels a record holds without another allocation. */
#define RLOCK__HOLD_LEVELS 4
/* Released records a watchdog keeps for reuse, so that a lock taken and
 * released in a loop allocates nothing once warm. */
#define RLOCK__HOLD_SPARES 8

/* One allocation: the strings live in text[], the first
 * RLOCK__HOLD_LEVELS levels in leases_in/ends_in (deeper reentry moves
 * them to the heap). */
typedef struct rlock__hold {
  struct rlock__hold *next_spare;
  char *name;
  char *owner; /* the hash field: "<uuid>:<thread>" or "...:write" */
  char *base;  /* read hold: timeout-key base for renew_read.lua; else NULL */
  int64_t *leases; /* one per level; 0 = watchdog */
  int64_t *ends;   /* read holds: each level's own expiry (monotonic us) */
  int64_t leases_in[RLOCK__HOLD_LEVELS];
  int64_t ends_in[RLOCK__HOLD_LEVELS];
  size_t depth;
  size_t cap;
  size_t wd_levels;   /* levels with lease 0 */
  int64_t expires_us; /* monotonic; meaningful when wd_levels == 0 */
  /* Monotonic end of the lease last vouched for: the send time of the
   * latest acquisition or confirmed renewal plus its lease. While
   * wd_levels > 0 the hold counts as lost once this has passed. */
  int64_t vouched_us;
  /* The owning thread's liveness (owner.h); NULL for an explicit owner.
   * Once the thread has exited the record is dropped unrenewed. */
  rlock__life *life;
  rlock__mset *ms;  /* the metrics it counts in (obs.h), or NULL */
  int64_t since_us; /* monotonic: its first level was sent */
  int lost;
  int untold;     /* lost by time, the holder not told yet (renew.c) */
  int inflight;   /* a renewal that names this record is in flight */
  uint64_t gen;   /* changes on every local change */
  size_t textcap; /* bytes text[] has room for */
  char text[];
} rlock__hold;

typedef struct rlock__watchdog {
  pthread_mutex_t mu;
  pthread_cond_t settled; /* signalled when in-flight renewals end */
  rlock__map holds;       /* name NUL owner -> rlock__hold* */
  rlock__hold *spare;     /* released records for reuse, via next_spare */
  size_t nspare;
  uint64_t next_gen;
  int armed; /* a renewal tick is scheduled */
  int64_t next_tick_us;
  int64_t period_us;
  int64_t retry_us;    /* sooner tick after a failed renewal */
  int64_t timeout_us;  /* the watchdog lease */
  unsigned exits_seen; /* rlock__thread_exits() when last reaped */
} rlock__watchdog;

/* Result of rlock__hold_pop(): what this client knew of the hold. */
enum rlock__hold_state { RLOCK__HOLD_NONE, RLOCK__HOLD_HELD, RLOCK__HOLD_LOST };

int rlock__watchdog_init(rlock__watchdog *wd, int64_t timeout_ms);
void rlock__watchdog_destroy(rlock__watchdog *wd);

/* Record one more hold of (name, owner) with `lease_ms` (0 = watchdog),
 * acquired by a request sent at `sent_us` (monotonic): a fixed lease is
 * taken to end `lease_ms` after that, which errs on the early side. A read
 * hold passes its timeout-key `base` (renewed by renew_read.lua), others
 * NULL. The record counts in the metrics set `ms` (its lock's; NULL:
 * none): the holds gauge while it lives, the hold time when its last
 * level is released, a loss when it is found lost. RLOCK_ENOMEM on
 * failure. */
int rlock__hold_push(rlock_client *c, const char *name, const char *owner,
                     int64_t lease_ms, int64_t sent_us, const char *base,
                     rlock__mset *ms);

/* rlock__hold_push for an owner number: RLOCK_OWNER_THREAD (the calling
 * thread: the record follows its liveness) or an explicit owner. */
int rlock__hold_push_owned(rlock_client *c, const char *name, const char *owner,
                           int64_t lease_ms, int64_t sent_us, const char *base,
                           uint64_t owner_number, rlock__mset *ms);

/* Remove one level. *state tells what was known; *keep_lease_ms is the
 * lease the remaining holds should keep (the level below's lease, or the
 * watchdog timeout; RLOCK__KEEP_NONE when the record held no level more,
 * or was lost: the release then takes every level of the owner). When this
 * removes the last watchdog level of a record that a renewal in flight names,
 * waits until that renewal's answer is in: otherwise its PEXPIRE could reach
 * the server after the release script and stretch what is left (fixed-lease
 * levels, or a new hold of the same owner) to the watchdog lease; only where
 * the driver asks for it (rlock__driver.release_waits_renewal). Call from the
 * holder's thread, never from the lost-lock callback. */
void rlock__hold_pop(rlock_client *c, const char *name, const char *owner,
                     int *state, int64_t *keep_lease_ms);

/* The "lease to keep" a release sends once this client records no level
 * of the hold any more (rlock__hold_pop took the last one, or found the
 * hold lost): the owner's levels on the server all go then, the lock is
 * deleted and a waiter told. A level the server still counts beyond the
 * client's record was left there by a release that never reached it
 * (RLOCK_EIO, the server down), or by an acquisition whose answer was
 * lost; re-entered, it would keep the lock held after the owner's last
 * release, for as long as the owner takes the lock again within its lease.
 * The scripts of the kinds that count levels read it: holdcheck.lua's
 * (reentrant, spin, fenced, fair lock, election), write_release.lua and
 * read_release.lua (which reads only this value of the lease to keep:
 * each read level has a lease of its own). */
#define RLOCK__KEEP_NONE (-1)

/* The lock's TTL was just set to `lease_ms` (> 0) by a request sent at
 * `sent_us`, by the holder itself (a MultiLock giving every member its
 * full lease): the fixed-lease levels of (name, owner) now end then.
 * Watchdog levels are untouched. No-op when there is no record. */
void rlock__hold_relet(rlock_client *c, const char *name, const char *owner,
                       int64_t lease_ms, int64_t sent_us);

/* Forget the (name, owner) record entirely (the server released it). */
void rlock__hold_forget(rlock_client *c, const char *name, const char *owner);

/* Mark every local hold of `name` lost (after a force release). */
void rlock__hold_mark_lost(rlock_client *c, const char *name);

/* RLOCK_OK, RLOCK_ELOST or RLOCK_ENOTHELD for (name, owner), locally:
 * lost when the watchdog found it gone, its fixed lease has run out, or
 * (watchdog holds) a whole watchdog lease passed since the send time of
 * the last confirmed renewal or acquisition. */
int rlock__hold_check(rlock_client *c, const char *name, const char *owner);

/* 1 when rlock__hold_check would say RLOCK_OK for (name, owner): this
 * client knows of a live hold; else 0. Sets no error message (for a
 * script's argument, not a caller's status). */
int rlock__hold_live(rlock_client *c, const char *name, const char *owner);

/* How many of (name, owner)'s levels have a fixed lease (not renewed by
 * the watchdog): 0 when none, or no record, or lost. */
size_t rlock__hold_fixed_levels(rlock_client *c, const char *name,
                                const char *owner);

/* The levels recorded for (name, owner): 0 when none, or lost. */
size_t rlock__hold_depth(rlock_client *c, const char *name, const char *owner);

/* Drop the records of threads that exited (never renewed again, never
 * reported lost: the locks expire within their lease). Done at each
 * renewal tick (rlock__renew_begin), called locked. */
void rlock__watchdog_reap(rlock__watchdog *wd);

/* One renewal tick in steps, for either driver: the tick's batches are
 * taken (rlock__renew_take), routed and sent by the driver, and each is
 * settled on its own as its answer comes (rlock__renew_settle): the loop
 * engine sends every node's at once, one in flight per node
 * (loop/lrenew.c), for either driver. */
typedef struct rlock__renew_tick rlock__renew_tick;
struct rlock__call;
struct rlock__reply;

/* One batch of a tick: `n` holds from item `from` of one list (the
 * renew.lua, the renew_read.lua or the psem_renew.lua holds). */
typedef struct rlock__renew_batch {
  int list;
  size_t from, n;
} rlock__renew_batch;

/* When a tick is due: take the snapshot (telling the holds found lost by
 * time) and return it in *t; else *t is NULL. *next_us: when the next tick
 * is due (INT64_MAX: nothing to renew). RLOCK_ENOMEM (tried again at the
 * retry interval). */
int rlock__renew_begin(rlock_client *c, rlock__renew_tick **t,
                       int64_t *next_us);
/* Take the tick's next batch (at most RLOCK__RENEW_BATCH holds; in a
 * cluster, of one slot): 1, or 0 when the tick has no more. Batches taken
 * so are settled in any order, each on its own. */
int rlock__renew_take(rlock_client *c, rlock__renew_tick *t,
                      rlock__renew_batch *b);
/* The key a batch is routed by (its first hold's name; borrowed from the
 * tick). */
const char *rlock__renew_key(rlock__renew_tick *t, const rlock__renew_batch *b);
/* Build a batch's call (its strings borrowed from the tick). */
void rlock__renew_build(rlock_client *c, rlock__renew_tick *t,
                        const rlock__renew_batch *b, struct rlock__call *call);
/* A batch's outcome (rc, with the last error saying why, or its reply
 * when RLOCK_OK), sent at `sent_us`: applied to the records; a failure
 * gives up only that batch's holds for this tick and brings the next tick
 * forward. */
void rlock__renew_settle(rlock_client *c, rlock__renew_tick *t,
                         const rlock__renew_batch *b, int rc,
                         const struct rlock__reply *r, int64_t sent_us);
/* A batch the driver does not send this tick (its node still has an
 * earlier renewal in flight): its holds' in-flight marks are cleared,
 * nothing else; a later tick renews them. */
void rlock__renew_skip(rlock_client *c, rlock__renew_tick *t,
                       const rlock__renew_batch *b);
/* Free the tick. */
void rlock__renew_end(rlock_client *c, rlock__renew_tick *t);

#endif /* RLOCK_WATCHDOG_H */
