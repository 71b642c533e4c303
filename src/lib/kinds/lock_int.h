/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock_int.h - the definition behind rlock_lock, the contract between
 * each lock kind and the two drivers' acquisitions (blocking/acquire.c,
 * loop/lacquire.c), and the rules and answer readers both drivers share
 * (rules.c, lock.c, query.c, multilock.c).
 *
 * A kind supplies one acquisition attempt (a script) and the channel its
 * waiters listen on; the drivers supply everything else, by the same
 * rules: validation, the subscribe-then-retry loop bounded by the holder's
 * TTL, and recording the hold for the watchdog. The fair lock adds give_up
 * (leave the queue).
 */
#ifndef RLOCK_LOCK_INT_H
#define RLOCK_LOCK_INT_H

#include <stdint.h>

#include "client_int.h"
#include "cmd.h"
#include "rlock/lock.h"
#include "rlock/multilock.h"

/* The unlock latch a release carries (scripts/include/latch.lua): the
 * request id shared by every retry of one release, and the latch's TTL;
 * a TTL of 0 means none (the release is never re-sent). */
typedef struct rlock__latch {
  const char *id;
  int64_t ttl_ms;
  int64_t until_us; /* a release goes again only until then */
} rlock__latch;

/* A release that is never re-sent. */
extern const rlock__latch rlock__no_latch;

/* The latch of one release: where the topology can fail over, a request
 * id (Redisson's, 32 hex digits, written into `id`: 33 bytes), a TTL
 * covering every retry, and the end of the retries (the connect plus the
 * command timeout from now); otherwise none. Both drivers' releases use
 * it. */
void rlock__release_latch(const rlock_lock *l, rlock__latch *latch, char *id);

/* Whether to send a release again: it carries a latch (a repeat returns
 * the first answer and releases nothing more), its retries have not
 * ended, and it failed in flight or no replica confirmed it. It goes
 * again after RLOCK__RELEASE_PAUSE_MS. */
int rlock__release_again(const rlock__latch *latch, int rc,
                         const rlock__call *call);
#define RLOCK__RELEASE_PAUSE_MS 20

/* RLOCK_EREPLICA, with its message, for a release (or an acquisition,
 * which is then given back) that no replica confirmed. */
int rlock__release_unconfirmed(const rlock_lock *l, const rlock__call *call);
int rlock__acquire_unconfirmed(const rlock_lock *l, const rlock__call *call);

/* Record an acquisition of `l` for `owner` (the field's owner part; the
 * record's owner number `owner_number`), with `lease_ms` (0: the
 * watchdog's) from `sent_us`, for renewal and rlock_lock_check. A
 * synchroniser records only permits (a latch's zero holds nothing).
 * RLOCK_ENOMEM, worded, when it cannot be recorded: the caller gives the
 * acquisition back. */
int rlock__acquired_record(rlock_lock *l, const char *owner, int64_t lease_ms,
                           int64_t sent_us, uint64_t owner_number);

typedef struct rlock__kind {
  const char *label; /* "lock", for messages */
  int metric;        /* the metrics' kind (rlock__mkind, obs.h) */
  /* The hash field of a hold is the owner plus this suffix (":write" for
   * a write hold; NULL, the default, for none); hold records are kept per
   * field, so a thread's read and write holds on one lock are renewed
   * independently. */
  const char *field_suffix;
  /* Renew holds with renew_read.lua (read holds' timeout keys). */
  int read_renewal;
  /* Waiters retry after a back-off instead of subscribing (spin lock). */
  int spin;
  /* Acquisitions issue fencing tokens: the attempt's reply is {token}. */
  int tokens;
  /* A second acquisition by the holder is refused (Redisson 4.4's
   * non-reentrant locks): the attempt answers NON_REENTRANT_REACQUIRE,
   * RLOCK_EHELD. */
  int nonreentrant;
  /* A synchroniser (sync_int.h): an attempt's "owner" is what the kind
   * needs, not a hash field; nothing is recorded for the watchdog but a
   * permit (`permits`: the permit-expirable semaphore's, under its id,
   * renewed by psem_renew.lua); an attempt lost in flight is not
   * settled by a read (it failed: the permits of a semaphore may then be
   * taken, a permit comes back after its lease). */
  int sync;
  int permits;
  /* The attempt only reads (a latch's await): it takes nothing, so one
   * left unanswered past the wait's end is "not in time"
   * (rlock__plan_read_cut), not a failure. */
  int reads;
  /* How a wait that ran out is worded ("<label> '<name>' <unavailable>
   * within the wait"); NULL for locks. */
  const char *unavailable;
  /* The kind's operations are calls it builds, never runs: the blocking
   * path runs them (rlock__lock_run), RedLock fans them out, and a loop
   * client sends them from an event loop (loop/). */
  /* One attempt. Reply: nil (or {token} for a kind with tokens) =
   * acquired; an integer = held by another owner, its remaining lease in
   * ms; the status "UPGRADE" = the caller holds read holds of the lock
   * whose write half it asks for. */
  void (*attempt)(rlock_lock *l, const char *owner, int64_t lease_ms,
                  int64_t wait_ms, rlock__call *call);
  /* The channel `owner` waits on; may be l->channel. */
  const char *(*channel)(rlock_lock *l, const char *owner, char *buf,
                         size_t size);
  /* Leave the wait queue when a waiting acquisition gives up; NULL for
   * kinds without a queue. */
  void (*give_up)(rlock_lock *l, const char *owner, int64_t wait_ms,
                  rlock__call *call);
  /* Release one hold. Reply: nil (not held), 0 (holds remain), 1 (the
   * last hold went) or 2 (the lock was already gone). */
  void (*release)(rlock_lock *l, const char *owner, int64_t keep_ms,
                  const rlock__latch *latch, rlock__call *call);
  /* Force release. Reply: 1 (deleted) or 0. */
  void (*force_release)(rlock_lock *l, rlock__call *call);
  /* Inspect. Reply: {type, pttl, nfields, fields..., then queue
   * owner/ms-left pairs}. */
  void (*inspect)(rlock_lock *l, rlock__call *call);
  /* Whether the lock counts as locked given its inspected mode and
   * holders; NULL: whenever the key exists. */
  int (*locked)(const rlock_lock_info *info);
} rlock__kind;

/* A spin lock's back-off, checked (rlock_spin_options). */
typedef struct rlock__spin {
  int backoff; /* rlock_spin_backoff */
  int64_t initial_ms, max_ms, delay_ms;
  double multiplier;
  int jitter;
} rlock__spin;

struct rlock_lock {
  rlock_client *client;
  const rlock__kind *kind;
  rlock__mset *ms;  /* where its metrics go: its name's or its kind's */
  rlock__spin spin; /* the spin kind's back-off (defaults for the others) */
  char *name;
  char *channel;    /* redisson_lock__channel:{name} */
  char *queue;      /* fair lock: redisson_lock_queue:{name}, else NULL */
  char *timeouts;   /* fair lock: redisson_lock_timeout:{name}, else NULL */
  char *base;       /* read-write lock: timeout-key base {name}, else NULL */
  char *rw_channel; /* fair lock: redisson_rwlock:{name} (force release
                       wakes a read-write lock's waiters), else NULL */
  char *latch;      /* redisson_unlock_latch:{name}, + ":<id>" per unlock */
  char *token;      /* redisson_lock_token:{name}: fencing tokens */
  char *leader;     /* election: rlock_leader:{name}, else NULL */
  char *value;      /* election campaign: the value it writes, else NULL */
};

/* Which extra keys rlock__lock_alloc derives. */
enum rlock__keys { RLOCK__KEYS_PLAIN, RLOCK__KEYS_FAIR, RLOCK__KEYS_RW };

/* Room for a hold's hash field: an owner plus ":write". */
#define RLOCK_FIELD_MAX (RLOCK_OWNER_MAX + 8)

/* The hash field of the calling thread's hold on `l`: owner + suffix. */
void rlock__field(const rlock_lock *l, const char *owner, char *buf);

/* Room for a latch key: redisson_unlock_latch:{NAME}:<32 hex digits>. */
#define RLOCK__LATCH_KEY_MAX (RLOCK_MAX_NAME_LEN + 64)

/* Whether a release's answer `r` (the last one read) left an answer in
 * its latch to delete: it carries a latch and the script stored one (any
 * answer but nil: "not held" is never stored, and a repeat finds the
 * first answer). The answer has been read, so once the release is not to
 * be sent again (rlock__release_again) nothing will read the latch:
 * both drivers then delete it without waiting for the DEL's reply, as
 * Redisson does, so no latch outlives its release. */
int rlock__latch_spent(const rlock__latch *latch, const rlock__reply *r);

/* The latch's key into buf (RLOCK__LATCH_KEY_MAX bytes). */
void rlock__latch_key(const rlock_lock *l, const rlock__latch *latch, char *buf,
                      size_t size);

/* Build `DEL <latch key>` (routed by that key: the lock's slot). */
void rlock__latch_del(const rlock_lock *l, const rlock__latch *latch,
                      rlock__call *call);

/* Write "<client id>:<thread id>" for the calling thread into buf
 * (RLOCK_OWNER_MAX bytes). */
void rlock__owner(const rlock_client *c, char *buf);

/* The owner field of `owner` (RLOCK_OWNER_THREAD: the calling thread's)
 * into buf (RLOCK_OWNER_MAX bytes). */
void rlock__owner_as(const rlock_client *c, uint64_t owner, char *buf);

/* Allocate a lock of `kind` with its name, the kind's channel and the
 * extra keys `keys` asks for. */
int rlock__lock_alloc(rlock_lock **out, rlock_client *client, const char *name,
                      const rlock__kind *kind, enum rlock__keys keys);

/* A kind's channel when it is the object's own (l->channel), whoever
 * waits: rlock__kind.channel for every kind but the fair lock's. */
const char *rlock__own_channel(rlock_lock *l, const char *owner, char *buf,
                               size_t size);

/* lock_release.lua's arguments after its script (`script`: it or a
 * script that takes the same ones first): the name, the unlock message,
 * the lease kept, the owner, the publish command, the latch's TTL, the
 * channel and the latch's name. */
void rlock__release_args(rlock_lock *l, const rlock__script *script,
                         const char *owner, int64_t keep_ms,
                         const rlock__latch *latch, rlock__call *call);

/* Add the latch's TTL and its key's name to a release call, as arguments
 * (where each script's header says). Names that are not keys of their
 * own (channels, prefixes, the latch) go as ARGV: a cluster migrating the
 * slot refuses a call naming absent keys (TRYAGAIN). */
void rlock__latch_ttl(const rlock__latch *latch, rlock__call *call);
void rlock__latch_name(rlock_lock *l, const rlock__latch *latch,
                       rlock__call *call);

/* The reentrant kind's force release and inspection (kinds/lock.c), for
 * kinds sharing its layout (the other plain kinds, the election; the
 * read-write halves inspect with it too). */
void rlock__plain_force_release(rlock_lock *l, rlock__call *call);
void rlock__plain_inspect(rlock_lock *l, rlock__call *call);

/* Validate durations for the public API. */
int rlock__check_wait(int64_t wait_ms);
int rlock__check_lease(int64_t lease_ms);

/* Options with `wait_ms`, `lease_ms` and `cancel`, the rest defaults: for
 * the entry points that take them as arguments. */
rlock_acquire_options rlock__options_with(int64_t wait_ms, int64_t lease_ms,
                                          rlock_cancel *cancel);

/* Validate options given to a public entry point and copy the fields
 * their version has into *out (the rest keep their defaults). */
int rlock__options(rlock_acquire_options *out, const rlock_acquire_options *in);

/* The generic acquire: attempt, then wait (subscribed, or backing off for
 * a spin lock) and retry on every wake-up or when the holder's TTL runs
 * out, until acquired, the wait passes or the cancel token fires. Records
 * the hold (lease 0 = watchdog) for its owner on success and writes the
 * fencing token where asked. `o` is validated (rlock__options). */
int rlock__acquire_opts(rlock_lock *l, const rlock_acquire_options *o);

/* rlock__acquire_opts with the kind's own "owner" string (a
 * synchroniser's, sync_int.h); `o->owner` is the record's owner number. */
int rlock__acquire_as(rlock_lock *l, const char *owner,
                      const rlock_acquire_options *o);

/* rlock__acquire_opts for the calling thread, without a token. */
int rlock__acquire(rlock_lock *l, int64_t wait_ms, int64_t lease_ms,
                   const rlock_cancel *cancel);

/* 1 when `l` is a reentrant lock (rlock_lock_new). */
int rlock__lock_is_plain(const rlock_lock *l);

/* Interpret an attempt's reply (not freed): RLOCK_OK when acquired,
 * RLOCK_ELOCKED with *ttl_ms set when held by another owner (no message
 * set), RLOCK_EDEADLK for a refused upgrade, else RLOCK_EPROTO. */
int rlock__attempt_result(const rlock_lock *l, const rlock__reply *r,
                          int64_t *ttl_ms);

/* The fencing token in an acquired attempt's reply; 0 for kinds without
 * tokens. */
int64_t rlock__attempt_token(const rlock__reply *r);

/* Word why an acquisition ended without the lock (RLOCK_ELOCKED: held by
 * whom and for how long, from the last attempt's `ttl`); other codes pass
 * with their message. Returns rc. */
int rlock__not_acquired(const rlock_lock *l, int rc, int64_t ttl);

/* A spin lock's first pause (ms), and the one after `cur` once
 * `failures` attempts have failed (counted from 1); `seed` feeds the
 * jitter. */
int64_t rlock__spin_first(const rlock__spin *p);
int64_t rlock__spin_next(const rlock__spin *p, int64_t cur, unsigned failures,
                         uint64_t *seed);

/* Check `in` (NULL: the defaults) into *out: RLOCK_OK or RLOCK_EINVAL
 * naming the field. */
int rlock__spin_options(rlock__spin *out, const rlock_spin_options *in);

/* While a server cannot be reached, a wait tries again after 25 ms,
 * doubling to 1 s (both drivers). */
#define RLOCK__OUTAGE_FIRST_MS 25
#define RLOCK__OUTAGE_MAX_MS 1000

/* Whether a failed attempt may be tried again while a wait lasts: it ran
 * nothing and may pass (`transient`, as rlock__call's), and is neither a
 * refused login nor marked final (a name that does not resolve, a
 * refused certificate). Reads the last error. */
int rlock__retryable(int rc, int transient);

/* What a caller's wait promises: the whole call returns by the wait plus
 * a margin, whatever the server does. Each wait under it (a connect, a
 * reply, a pause) ends by the call's bound (rlock__bound): the wait's end
 * plus RLOCK__WAIT_MARGIN_MS, room for an attempt sent just before then;
 * what must still be said after it (leaving a fair lock's queue, giving
 * back a grant not kept) gets another margin, from when it starts. So a
 * call returns by the wait plus twice the margin at worst. */
#define RLOCK__WAIT_MARGIN_MS 100

/* The bound of an acquisition waiting `wait_ms` (RLOCK_WAIT_FOREVER: none,
 * INT64_MAX) from now: its end plus the margin; a single try (0) gets one
 * command timeout (or the connect timeout, when longer). Monotonic us. */
int64_t rlock__wait_bound(const rlock_client *c, int64_t wait_ms);

/* The lease an attempt sends: `lease_ms`, or the client's watchdog
 * timeout for RLOCK_LEASE_WATCHDOG (0). */
int64_t rlock__lease_sent(const rlock_client *c, int64_t lease_ms);

/* The bound of what follows a call's end (the cleanup above): the margin
 * from now, never past an enclosing call's bound. */
int64_t rlock__cleanup_bound(void);

/* When riding out an outage that began at `since_us` must end: at the
 * wait's deadline, or earlier by the client's unreachable retry bound
 * (rlock_config_set_unreachable_retry_ms). Monotonic microseconds. */
int64_t rlock__outage_until(const rlock_client *c, int64_t since_us,
                            int64_t deadline_us);

/* A release script's answer `r` to `call` (after its run), given what
 * this client knew of the hold of `field` (enum rlock__hold_state):
 * RLOCK_OK, RLOCK_ENOTHELD, RLOCK_ELOST, RLOCK_EPROTO, or RLOCK_EREPLICA
 * when released but no replica confirmed it; forgets the record when the
 * last hold went. */
int rlock__release_result(rlock_lock *l, const rlock__call *call,
                          const char *field, int state, const rlock__reply *r);

/* A force release's answer `r` to `call` (after its run): *deleted
 * (may be NULL) 1 when the lock was deleted, which ends every local
 * hold of it (a read lock's force release leaves a write-held lock, whose
 * renewal goes on). RLOCK_OK, RLOCK_EPROTO for an answer that is no
 * integer, or RLOCK_EREPLICA when no replica confirmed it. */
int rlock__force_result(rlock_lock *l, const rlock__call *call,
                        const rlock__reply *r, int *deleted);

/* Fill `info` from an inspection's reply (RLOCK_EPROTO when malformed). */
int rlock__inspect_parse(const rlock__reply *r, rlock_lock_info *info,
                         const char *node);
/* Allocate an empty rlock_lock_info. */
rlock_lock_info *rlock__info_new(void);
/* Set a snapshot's queue length when it lists only the first waiters
 * (rlock_client_list_locks). */
void rlock__info_set_queue_length(rlock_lock_info *info, size_t n);
/* Whether `l` counts as locked given its inspected state. */
int rlock__info_locked(const rlock_lock *l, const rlock_lock_info *info);
/* The call reading `owner`'s hold count of `l` (HGET of its field), and
 * its answer. */
void rlock__count_call(rlock_lock *l, const char *owner, rlock__call *call);
int rlock__count_reply(const rlock__reply *r, int64_t *count);

/* A fenced lock's token counter as GET answered it: *token (0 for none),
 * or RLOCK_EWRONGTYPE when it holds what INCR would refuse. */
int rlock__token_reply(const rlock_lock *l, const rlock__reply *r,
                       int64_t *token);

/* The definition behind rlock_multilock. */
struct rlock_multilock {
  size_t n;
  rlock_lock *members[];
};

/* ---- a MultiLock's decisions, for both drivers (multilock.c) ----------
 * blocking/multilock.c (on the caller's thread) and loop/lmulti.c (a
 * chain of member operations) take the members in order. */

/* The wait left for the next member: RLOCK_WAIT_FOREVER, or what is left
 * until `deadline_us` (0 for a single try each, wait_ms 0). */
int64_t rlock__multi_wait_left(int64_t wait_ms, int64_t deadline_us);

/* Before member i of a MultiLock waiting `wait_ms` until `deadline_us`:
 * RLOCK_OK to take it, or RLOCK_ELOCKED naming it once a positive wait
 * has ended ("not in time", as Redisson gives up), instead of one try
 * with no wait left: a write racing the call's bound, which leaves its
 * answer RLOCK__WAIT_MARGIN_MS only. */
int rlock__multi_in_time(const rlock_multilock *m, size_t i, int64_t wait_ms,
                         int64_t deadline_us);

/* Member i failed with `rc`: how many members, from the first, are given
 * back. Those taken, and member i too after a transport error (its
 * script may have run; the release is a no-op when it did not). */
size_t rlock__multi_give_back(size_t i, int rc);

/* Whether member i gets the full lease again once every member is taken:
 * a fixed lease, and not the last member (just taken with it). Watchdog
 * leases are renewed anyway. */
int rlock__multi_relets(const rlock_multilock *m, size_t i, int64_t lease_ms);

/* A MultiLock's member i, held under `field`, given a fresh fixed lease
 * once the last member is taken: whether its record still vouches for
 * it, the renewal call, and what its answer means (RLOCK_ELOCKED when it
 * was gone; the record re-let on success). */
int rlock__relet_check(rlock_lock *l, size_t i, const char *field,
                       int64_t lease_ms);
void rlock__relet_call(rlock_lock *l, const char *field, int64_t lease_ms,
                       rlock__call *call);
int rlock__relet_result(rlock_lock *l, size_t i, const char *field,
                        int64_t lease_ms, int rc, const rlock__reply *r,
                        int64_t sent_us);

/* A renewal script's answer (renew.lua's): 1 the field was there and
 * got its lease, 0 it was gone, -1 not such an answer. */
int rlock__relet_alive(const rlock__reply *r);

/* rlock_lock_extend: whether the owner's hold (under `field`) may be
 * given a fresh fixed lease, checked locally (a lease, a hold, fixed
 * levels), and what the renewal's answer means (RLOCK_ELOST when the
 * field was gone; the record re-let on success). Shared by both
 * drivers. */
int rlock__extend_check(rlock_lock *l, const char *field, int64_t lease_ms);
int rlock__extend_result(rlock_lock *l, const char *field, int64_t lease_ms,
                         int rc, const rlock__reply *r, int64_t sent_us);

/* Set a clearer message when a command failed on a wrong-type key. */
int rlock__wrongtype(const rlock_lock *l, int rc);

#endif /* RLOCK_LOCK_INT_H */
