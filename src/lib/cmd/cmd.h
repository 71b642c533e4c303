/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd.h - the command layer: the door to Redis for every lock call.
 *
 * Everything above it (lock kinds, queries, the watchdog, RedLock,
 * pub/sub's error handling) describes what to run as an rlock__call: a
 * script with its keys and arguments, or a plain command. The layer owns
 * the rest: encoding (EVALSHA, EVAL on NOSCRIPT), picking the node that
 * owns the call's key, following redirections, mapping every error reply
 * to one status code by one rule (rlock__error_status), and handing back a
 * typed rlock__reply. Nothing above it sees hiredis or a connection
 * (the drivers aside: each carries requests over connections of its own
 * kind; the login, the subscribers and the topology's questions talk to
 * connections directly).
 *
 * A request (rlock__req) is a small state machine over one call: encode
 * what to send next, feed it each reply, and it says whether it is done
 * or what to send next (EVAL after NOSCRIPT, ...), and rlock__req_next()
 * decides for both drivers what follows a redirection or a refusal.
 * rlock__call_run() runs one to completion on the caller's thread over a
 * pooled connection (the blocking driver); the loop engine
 * (loop/lroute.c, lconn.c) drives the same machine without blocking, for
 * a loop client and for a blocking client's background thread and
 * fan-out (loop/lfan.c).
 */
#ifndef RLOCK_CMD_H
#define RLOCK_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "reply.h"
#include "script.h"

typedef struct rlock_client rlock_client;
typedef struct rlock__buf rlock__buf; /* net/conn.h */

/* Room for the strings a call formats itself (numbers, derived keys). */
#define RLOCK__CALL_STORE 3072
#define RLOCK__CALL_SMALL 16
/* Arguments of raw bytes a call may carry (rlock__call_bytes). */
#define RLOCK__CALL_BYTES 2

/* One command or script call. Keys come first, then arguments. Strings
 * added with rlock__call_key/arg are borrowed and must outlive the call;
 * those added with rlock__call_num/fmt live in the call itself. */
typedef struct rlock__call {
  const rlock__script *script; /* NULL: a plain command, kv[0] its name */
  const char *word;            /* a plain command's name, else NULL */
  int nkeys;
  int n; /* entries in kv: keys then arguments */
  const char **kv;
  int cap;
  int failed;            /* out of memory or store while building */
  size_t used;           /* bytes of store in use */
  const char *served_by; /* after a run: "host:port" of the node that
                            answered (valid as long as the client), or "" */
  int sync;              /* in: confirm on replicas with WAIT (a lock write) */
  int replicas;  /* after a run: replicas WAIT asked for (0: none sent) */
  int acked;     /* after a run: replicas that confirmed, -1 when unknown */
  int in_flight; /* after a failed run: 1 when it failed after being sent
                    (the server may have run it) */
  int transient; /* after a failed run: 1 when nothing ran and a later
                    try may succeed: no server reachable (connection
                    refused, connect timed out; not a host name that does
                    not resolve nor a certificate refused: those are
                    final, rlock__error_final) or refused for now
                    (LOADING, TRYAGAIN, CLUSTERDOWN, READONLY, MASTERDOWN) */
  /* in: called once by the blocking runner when the call has been
   * answered with a reply that is not an error, before its connection
   * goes back to the pool, with served_by, replicas and acked set: it may
   * append commands to `out`, which are sent at once on that connection
   * and never waited for (rlock__conn_send_skip: the connection's next
   * reads discard their replies), so a follow-up costs no round trip (a
   * release's latch DEL, kinds/lock.c). Returns how many it appended.
   * NULL for none; the loop driver and the fan-out ignore it. */
  int (*then)(void *arg, const struct rlock__call *call, const rlock__reply *r,
              rlock__buf *out);
  void *then_arg;
  /* after a run: when the request was last written (monotonic, taken
   * just before the write: whatever ran, ran after it), 0 when never; an
   * acquisition's lease runs from it */
  int64_t sent_us;
  /* in: when the call's arguments were stamped from the clocks (the
   * permit-expirable semaphore's deadline, by the wall clock), monotonic;
   * 0 when none. What it grants runs from the earlier of this and
   * sent_us, so the local view of a lease errs early (kinds/sync.c). */
  int64_t stamped_us;
  /* arguments added by rlock__call_bytes: their indexes in kv and their
   * lengths (the others are C strings) */
  int nbytes;
  int bytes_at[RLOCK__CALL_BYTES];
  size_t bytes_len[RLOCK__CALL_BYTES];
  const char *small[RLOCK__CALL_SMALL];
  char store[RLOCK__CALL_STORE];
} rlock__call;

/* Start a script call. */
void rlock__call_script(rlock__call *call, const rlock__script *s);
/* Start a plain command `word` (e.g. "HGET"): its keys, then arguments. */
void rlock__call_cmd(rlock__call *call, const char *word);
/* Append a key (before any argument). */
void rlock__call_key(rlock__call *call, const char *key);
/* Append an argument. */
void rlock__call_arg(rlock__call *call, const char *arg);
/* Append a decimal argument, stored in the call. */
void rlock__call_num(rlock__call *call, int64_t v);
/* Append an argument of `n` bytes of any value (NUL included: a permit
 * id's 16 bytes, which a script then need not decode from hex), copied
 * into the call. At most RLOCK__CALL_BYTES a call; past that, or past the
 * store, the call fails to run. */
void rlock__call_bytes(rlock__call *call, const void *p, size_t n);
/* Format a string into the call's store and return it (for a key or an
 * argument), or "" when the store is full (the call then fails to run). */
const char *rlock__call_fmt(rlock__call *call, const char *fmt, ...)
    RLOCK_PRINTF(2, 3);
/* When what the call grants begins, for the local view of a lease: the
 * earlier of its send and its stamp (stamped_us). */
int64_t rlock__call_granted_from(const rlock__call *call);
/* Free what the call allocated. The call may be started again. */
void rlock__call_clear(rlock__call *call);

/* After a run with sync set: 1 when the node has replicas and none of
 * them confirmed the write within the replica sync timeout. */
int rlock__call_unconfirmed(const rlock__call *call);

/* The key a call is routed by: its first key, or NULL for none. */
const char *rlock__call_route_key(const rlock__call *call);

/* Run a call to completion on the calling thread. RLOCK_OK with *out a
 * reply that is not an error (caller frees it), or a status code from the
 * transport or from rlock__error_status() with the last error set. A
 * command that failed in flight is never re-sent (a script may have run);
 * one the server refused before running it (NOSCRIPT, a redirection, a
 * cluster that is down for now) is, on the right node, for up to the
 * connect plus the command timeout. Clears the call. */
int rlock__call_run(rlock_client *c, rlock__call *call, rlock__reply **out);

/* rlock__call_run, retrying refusals until `deadline_us` (monotonic) when
 * that is later: a waiter rides out a cluster failover within its wait. */
int rlock__call_run_until(rlock_client *c, rlock__call *call,
                          int64_t deadline_us, rlock__reply **out);

/* The command lock scripts publish with: "PUBLISH", or "SPUBLISH" where
 * the client uses sharded pub/sub. Scripts take it as an argument, as
 * Redisson's do, so one script text serves both. */
const char *rlock__publish_cmd(rlock_client *c);

/* ---- requests: the state machine under rlock__call_run ------------- */

typedef enum rlock__step {
  RLOCK__STEP_ROUTE,  /* not sent yet: route by the call's key */
  RLOCK__STEP_DONE,   /* finished: rc and reply set */
  RLOCK__STEP_MORE,   /* read another reply on the same connection */
  RLOCK__STEP_RESEND, /* encode and send again on the same connection */
  RLOCK__STEP_MOVED,  /* the key's slot moved to `addr` for good */
  RLOCK__STEP_ASK,    /* this once, ask `addr` (a slot being migrated) */
  RLOCK__STEP_RETRY   /* refused for now (TRYAGAIN, CLUSTERDOWN, LOADING,
                         READONLY, MASTERDOWN): rc says why; back off,
                         refresh the topology and route again */
} rlock__step;

typedef struct rlock__req {
  rlock__call *call;
  int eval;         /* send the script's text (EVAL) */
  int asking;       /* precede the next send with ASKING */
  int asking_reply; /* ASKING's reply is the next one due */
  int redirects;    /* MOVED and ASK followed so far */
  int wait_n;       /* send WAIT <wait_n> <wait_ms> after the command */
  int64_t wait_ms;
  int wait_due;         /* 1: the command's reply is next, then WAIT's;
                           2: WAIT's reply is next */
  rlock__step deferred; /* the command's step, acted on after WAIT's */
  int acked;            /* WAIT's count (0 for any other answer: an
                           error confirmed nothing), -1 when none */
  rlock__step step;     /* the last step fed */
  unsigned slot;        /* MOVED: the slot */
  char addr[128];       /* MOVED, ASK: "host:port" */
  int rc;               /* DONE or RETRY: RLOCK_OK or a status */
  rlock__reply *reply;  /* DONE with RLOCK_OK; the caller frees it */
} rlock__req;

/* Most redirections one request follows before giving up. */
#define RLOCK__MAX_REDIRECTS 5

/* Start a request over `call` (which it borrows). */
void rlock__req_init(rlock__req *q, rlock__call *call);

/* Encode what to send next into a malloc'ed buffer (free with free()).
 * Returns its length, or -1 with the last error set (RLOCK_ENOMEM, or
 * RLOCK_EINVAL for a call that failed while being built). */
long rlock__req_encode(rlock__req *q, char **buf);

/* rlock__req_encode, appending to `out` instead (a connection's reused
 * buffer, rlock__conn.out: nothing is allocated once it is large
 * enough). Returns the bytes appended, or -1 with the last error set and
 * out->len as it was; only a success moves the request on (ASKING's and
 * WAIT's replies now due). */
long rlock__req_encode_to(rlock__req *q, rlock__buf *out);

/* Feed one reply read from `where` (takes it). Returns the next step,
 * also kept in q->step. Only replies the server gives before running a
 * command (NOSCRIPT, MOVED, ASK, TRYAGAIN, ...) lead to a resend. */
rlock__step rlock__req_feed(rlock__req *q, const char *where, rlock__reply *r);

/* The connection failed after the command's own reply, while WAIT's was
 * due: the command ran, so its answer stands, and what WAIT would have
 * said is taken as "no replica confirmed" (acked 0: the write is
 * unconfirmed). Returns 1 with q->step DONE when so; 0 (nothing changed)
 * for any other state, in which the request failed with the connection. */
int rlock__req_wait_reply_lost(rlock__req *q);

/* What a request does after a step that leaves its connection, decided
 * once for both drivers (no I/O: the caller carries it out). */
typedef enum rlock__next {
  RLOCK__NEXT_ROUTE, /* route by the call's key (a fresh request) */
  RLOCK__NEXT_GO,    /* send to *node (ASK: with ASKING first) */
  RLOCK__NEXT_MOVED, /* send to *node, which now serves the slot; refresh
                        the topology (rate-limited) */
  RLOCK__NEXT_PAUSE, /* refused for now: refresh, wait *pause_ms, then
                        route by the key again */
  RLOCK__NEXT_FAIL   /* give up with q->rc (the last error set) */
} rlock__next;

struct rlock__topo;
struct rlock__node;

/* After q->step is MOVED, ASK or RETRY (or a fresh request): follow a
 * redirection (at most RLOCK__MAX_REDIRECTS; MOVED updates the slot map
 * at once), back off a refusal (10 ms doubling to 500 ms, counted in
 * *attempt) until `deadline_us`, or give up where the topology cannot
 * change (a single server). */
rlock__next rlock__req_next(struct rlock__topo *t, rlock__req *q,
                            int64_t deadline_us, int *attempt,
                            struct rlock__node **node, int64_t *pause_ms);

/* Whether a failure `rc` before anything was sent (no node known, a node
 * unreachable) is worth another try: only where the topology can change
 * (a failover), for a transport failure, while the deadline lasts, and
 * not when every sentinel said it knows no such master. Sets q->step to
 * RETRY and q->rc when it is. */
int rlock__req_retry_unsent(const struct rlock__topo *t, rlock__req *q, int rc,
                            int64_t deadline_us);

/* A master no sentinel knows is a mistake in the URL, not an outage:
 * mark a transport failure `rc` final (rlock__error_final) then. */
void rlock__req_final_if_unknown_master(const struct rlock__topo *t, int rc);

/* Run a request from where it stands (fresh, or after a step a fan-out
 * handed over: MOVED, ASK, RETRY) to completion on the calling thread,
 * retrying refusals and unreachable nodes until `deadline_us` where the
 * topology can change. Returns q->rc; on RLOCK_OK q->reply is set. */
int rlock__req_run(rlock_client *c, rlock__req *q, int64_t deadline_us);

#endif /* RLOCK_CMD_H */
