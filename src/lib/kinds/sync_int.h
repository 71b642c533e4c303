/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sync_int.h - Redisson's synchronisers as lock kinds (kinds/sync.c):
 * the semaphore, the permit-expirable semaphore and the count-down latch.
 *
 * Each public object wraps an rlock_lock whose kind builds the calls of
 * semaphore.lua, psemaphore.lua or latch.lua. Their waits are the locks'
 * own: an attempt answers as a lock's does (nil: done; an integer: how
 * long at most to sleep before trying again, -1 for "until a message"),
 * so both drivers' acquisitions (blocking/acquire.c, loop/lacquire.c)
 * carry them unchanged. The "owner" an attempt is given is what the kind
 * needs: the number of permits (semaphore), the permit id (psemaphore),
 * nothing (latch). What a message on their channel wakes is
 * cmd/subproto.c's rlock__message_wakes.
 */
#ifndef RLOCK_SYNC_INT_H
#define RLOCK_SYNC_INT_H

#include <stdint.h>

#include "lock_int.h"
#include "rlock/latch.h"
#include "rlock/semaphore.h"

struct rlock_semaphore {
  rlock_lock *l;
};
struct rlock_psemaphore {
  rlock_lock *l;
};
struct rlock_latch {
  rlock_lock *l;
};

/* A permit hold's record base (watchdog.h): this byte, then the
 * semaphore's timeout key; renewed by psem_renew.lua. */
#define RLOCK__PERMIT_BASE_MARK '\x01'

/* The call of whichever kind `l` is: an operation of its script
 * (semaphore.lua, psemaphore.lua, latch.lua: their headers say what each
 * answers), with the number an operation takes (0 when none) and a
 * permit `id` (or NULL). The psemaphore's "acquire" and "renew" take a
 * lease, sent as a deadline by this client's wall clock, as Redisson's;
 * rlock__psem_call is that kind's. */
void rlock__sync_call(rlock_lock *l, const char *op, int64_t num,
                      const char *id, rlock__call *call);
void rlock__psem_call(rlock_lock *l, const char *op, int64_t num,
                      const char *id, rlock__call *call);

/* Argument checks shared by both drivers' entry points: each words the
 * refusal (RLOCK_EINVAL) with `fn`. */
int rlock__check_permits(int64_t permits, int64_t min, const char *fn);
int rlock__check_delta(int64_t delta, const char *fn);
int rlock__check_count(int64_t count, const char *fn);
int rlock__check_permit_id(const char *id, const char *fn);
/* A latch whose channel a cluster with sharded pub/sub cannot publish
 * from its scripts (latch.h): RLOCK_EINVAL, else RLOCK_OK. */
int rlock__latch_usable(const rlock_lock *l, const char *fn);

/* An operation's integer answer into *value (RLOCK_OK), the status RANGE
 * as RLOCK_EINVAL (nothing written), anything else RLOCK_EPROTO; the
 * WRONGTYPE refusal was worded by the runner. */
int rlock__sync_reply(const rlock_lock *l, const rlock__reply *r,
                      int64_t *value);

/* A checked permit id in lowercase into `out` (RLOCK_PERMIT_ID_LEN + 1
 * bytes): the form records are kept under. */
void rlock__permit_id_lower(const char *in, char *out);

/* A psemaphore's inspection answer into a snapshot (RLOCK_OK), or
 * RLOCK_EPROTO / RLOCK_ENOMEM with the last error set. */
int rlock__permits_parse(const rlock__reply *r, rlock_permits_info **out);

/* A fresh permit id: 32 lowercase hex digits and a NUL into `id`. */
int rlock__permit_id(char *id);

/* The psemaphore's permit `id` (lowercase) after a release or a lease
 * update answered `released` (1: it was leased), given what this client
 * knew of it (`state`, enum rlock__hold_state): RLOCK_OK, RLOCK_ELOST or
 * RLOCK_ENOTHELD, worded. */
int rlock__permit_result(const rlock_lock *l, const char *id, int state,
                         int64_t released);

/* A permit's lease was set to `lease_ms` by a request sent at `sent_us`:
 * this client's record of it (if any) now has that fixed lease and is
 * no longer renewed. */
void rlock__permit_relet(rlock_lock *l, const char *id, int64_t lease_ms,
                         int64_t sent_us);

/* A write the master answered but no replica confirmed (`call`, after its
 * run): RLOCK_EREPLICA, worded. It stands on the master. */
int rlock__sync_unconfirmed(const rlock_lock *l, const rlock__call *call);

/* A lease update's lease: 1 ms to RLOCK_MAX_DURATION_MS, else
 * RLOCK_EINVAL naming `fn`. */
int rlock__check_permit_lease(int64_t lease_ms, const char *fn);

/* What this client knows of permit `id` before a lease update:
 * RLOCK__HOLD_LOST when it holds or held it, else RLOCK__HOLD_NONE. */
int rlock__permit_known(const rlock_lock *l, const char *id);

/* What the answer to permit call `op` on `id` means, for both drivers:
 * "release" (`state` as rlock__hold_pop gave it), "lease" (-2: none) or
 * "renew" (`state` as rlock__permit_known gave it; the new lease `lease_ms`
 * sent at `sent_us`). `rc` is the call's status (RLOCK_EREPLICA: the
 * master's answer `v` stands, unconfirmed). Returns the call's status. */
int rlock__permit_outcome(rlock_lock *l, const char *op, const char *id,
                          int state, int rc, int64_t v, int64_t lease_ms,
                          int64_t sent_us);

#endif /* RLOCK_SYNC_INT_H */
