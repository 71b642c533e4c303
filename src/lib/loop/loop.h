/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loop.h - the event-loop engine behind rlock/loop.h.
 *
 * A loop client drives the same request state machine (cmd.h), lock kinds
 * (lock_int.h) and hold records (watchdog.h) as a blocking client, but
 * from the caller's event loop instead of blocked threads and a
 * background thread:
 *
 *   core.c     the client's loop state, the adapter entry points, the
 *              inbox for operations started off the loop thread, and the
 *              deferred completions (a callback never runs inside the call
 *              that started its operation);
 *   timer.c    a min-heap of timers behind the adapter's one timer;
 *   lconn.c    one non-blocking connection: a name lookup that wakes the
 *              loop, net/dial.c's steps, the login, a write buffer flushed
 *              once per loop turn (so requests made in one turn go out
 *              pipelined), SCRIPT LOAD before a script's first use, the
 *              reply reader, and a FIFO of requests;
 *   lroute.c   where a request goes: the node of its key, one command and
 *              one subscriber connection per node met, and what follows a
 *              redirection or a refusal (cmd.h's rlock__req_next);
 *   ltopo.c    the topology on the loop: net/refresh.c's steps as
 *              requests, requests parked until a refresh ends, replica
 *              counts and WAIT behind lock writes;
 *   lsub.c     the subscribers (one per node subscribed on): channels
 *              shared by waiters, woken in arrival order by unlock
 *              messages, and by watchers told every message after them;
 *              health-check PINGs; Sentinel's +switch-master;
 *   lwatch.c   rlock/watch.h's watches, watchers of the subscriber;
 *   lparty.c   what a watch and an election watch share: made and freed
 *              by any thread, joined and left on the loop thread;
 *   lfollow.c  rlock_election_watch_new: the leader re-read on messages,
 *              at its lease's end and every interval;
 *   lacquire.c the acquisition state machine (attempt, subscribe, sleep
 *              until a message or the holder's TTL, attempt again);
 *   lops.c     release, force release, the queries and fresh fixed
 *              leases (an extension, a MultiLock member's);
 *   lwhois.c   rlock_client_whois_async: one GET of a registry record, an
 *              operation that belongs to no lock;
 *   lrenew.c   the watchdog's renewal tick (renew.c's steps) on the loop's
 *              timer, a batch in flight per node at a time;
 *   lmulti.c   a MultiLock as a chain of member operations;
 *   lredlock.c a RedLock's rounds as member operations of several loop
 *              clients on one loop thread;
 *   lpoll.c    the engine on poll(): an adapter table the library runs
 *              itself, on a blocking client's background thread
 *              (blocking/bg.c), which then carries that client's
 *              renewals, Sentinel watch and RedLock calls;
 *   lfan.c     a blocking fan-out: calls handed to several clients'
 *              loops, waited for by the caller's thread.
 *
 * Everything here runs on the loop's thread, so nothing is locked but the
 * inbox (and the hold records' own mutex, shared with watchdog.c, and a
 * blocking fan-out's group, lfan.c).
 */
#ifndef RLOCK_LOOP_INT_H
#define RLOCK_LOOP_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <poll.h>
#include <sys/socket.h>

#include <stdatomic.h>

#include "cmd.h"
#include "lock_int.h"
#include "conn.h"
#include "dial.h"
#include "refresh.h"
#include "map.h"
#include "plan.h"
#include "reader.h"
#include "rlock/election.h"
#include "rlock/loop.h"
#include "rlock/semaphore.h"

typedef struct rlock__lconn rlock__lconn;

/* Room for one more item of `size` bytes in the array whose pointer is at
 * `arr` (an `item **`), holding `n` of `*cap`: doubled when full (to
 * `first` from none; core.c). RLOCK_OK, or RLOCK_ENOMEM (last error set)
 * with the array as it was. */
int rlock__lgrow(void *arr, size_t *cap, size_t n, size_t size, size_t first);

/* A place in a list: a channel's waiters or watchers (lsub.c), the
 * operations in the inbox, live or done (core.c), a connection's requests
 * or those waiting (lconn.c, ltopo.c), the renewal ticks (lrenew.c). Its
 * owner embeds it. */
typedef struct rlock__llink rlock__llink;
struct rlock__llink {
  rlock__llink *prev, *next;
};

/* A list, in the order its members were added. A walk over it visits
 * `cursor` next, which a member taken out on the way moves past itself. */
typedef struct rlock__llist {
  rlock__llink *first, *last, *cursor;
  int n;
} rlock__llist;

/* Add `e` at the end of `l`; take it out. */
static inline void rlock__llist_add(rlock__llist *l, rlock__llink *e) {
  e->next = NULL;
  e->prev = l->last;
  if (l->last != NULL)
    l->last->next = e;
  else
    l->first = e;
  l->last = e;
  l->n++;
}

static inline void rlock__llist_del(rlock__llist *l, rlock__llink *e) {
  if (l->cursor == e)
    l->cursor = e->next;
  if (e->prev != NULL)
    e->prev->next = e->next;
  else
    l->first = e->next;
  if (e->next != NULL)
    e->next->prev = e->prev;
  else
    l->last = e->prev;
  e->prev = e->next = NULL;
  l->n--;
}

/* ---- timers (timer.c) --------------------------------------------- */

typedef struct rlock__ltimer rlock__ltimer;
struct rlock__ltimer {
  int64_t at_us; /* monotonic */
  size_t idx;    /* position in the heap, or RLOCK__LTIMER_OFF */
  void (*fn)(rlock_client *c, rlock__ltimer *t);
};

#define RLOCK__LTIMER_OFF ((size_t)-1)

/* Set up a timer that is not armed. */
void rlock__ltimer_init(rlock__ltimer *t,
                        void (*fn)(rlock_client *, rlock__ltimer *));
/* Arm (or re-arm) `t` for `at_us`. RLOCK_ENOMEM when the heap cannot grow. */
int rlock__ltimer_at(rlock_client *c, rlock__ltimer *t, int64_t at_us);
/* Disarm; no-op when not armed. */
void rlock__ltimer_stop(rlock_client *c, rlock__ltimer *t);
/* Run every timer due now. */
void rlock__ltimer_run_due(rlock_client *c);
/* The earliest armed time, or INT64_MAX. */
int64_t rlock__ltimer_next(const rlock_client *c);

/* ---- requests on a connection (lconn.c) -------------------------------- */

struct rlock__node;
struct rlock__lchan;
typedef struct rlock__lnode rlock__lnode;

/* A call in flight on a loop connection. Its owner embeds it and is told
 * once, through done(), with q.rc and (RLOCK_OK) q.reply set; the reply is
 * the owner's to free. */
typedef struct rlock__lreq rlock__lreq;
struct rlock__lreq {
  rlock__req q;
  rlock__call call;
  /* in: where retries of refusals and of unreachable nodes end (a
   * cluster's TRYAGAIN, a failover); rlock__lreq_send reads it (the
   * connect plus the command timeout at least) and clears it */
  int64_t deadline_us;
  int64_t until_us; /* the deadline in force */
  /* in: the caller's bound on its answer (an acquisition's wait plus its
   * margin, rules.c), or 0 for none: a connection that has not answered
   * it by then fails as one that ran out of the command timeout, with
   * every request on it (lconn.c) */
  int64_t bound_us;
  int attempt;              /* refusals retried so far (the back-off) */
  struct rlock__node *to;   /* the node to send to next (a redirection),
                               or NULL: route by the call's key */
  struct rlock__node *node; /* the node it went to last */
  rlock__ltimer retry;      /* the pause before routing again */
  int direct;               /* sent on a connection of the caller's
                               choosing (rlock__lreq_queue): never routed
                               or retried */
  int no_pause;             /* never waited out here (a renewal batch): a
                               refusal or an unreachable node ends it at
                               once, and its caller tries again, so no
                               release sent meanwhile is overtaken by it */
  int quiet;                /* its connection's failure is logged at DEBUG
                               when no other request waited on it (the
                               registry's write: lregistry.c) */
  char why[256];            /* a refusal's message, kept over a pause */
  int64_t sent_us;          /* when it was queued */
  uint64_t start;           /* bytes queued on the connection before it */
  int replies;              /* replies still due for what was sent */
  int load_due;             /* SCRIPT LOAD\'s reply comes first */
  rlock__llink at; /* in a connection's FIFO, or waiting (parked, behind
                     an INFO: ltopo.c) */
  void (*done)(rlock_client *c, rlock__lreq *r);
};

/* The request whose link `e` is (NULL: none). */
static inline rlock__lreq *rlock__lreq_at(rlock__llink *e) {
  return e != NULL ? (rlock__lreq *)((char *)e - offsetof(rlock__lreq, at))
                   : NULL;
}

/* Send `r->call` (built by the caller) to the node that serves its key,
 * its answer to `done` (r->q is set up here): routed through the topology
 * (net/topo.c), following MOVED and ASK, retrying refusals and
 * unreachable nodes until r->deadline_us where the topology can change,
 * as the blocking driver does (rlock__req_next). Always ends in done():
 * at once (from inside this call) when it cannot even be queued. */
void rlock__lreq_send(rlock_client *c, rlock__lreq *r,
                      void (*done)(rlock_client *c, rlock__lreq *r));

enum rlock__lconn_state {
  RLOCK__LCONN_CLOSED,
  RLOCK__LCONN_RESOLVING,  /* a name lookup under way (a thread wakes us) */
  RLOCK__LCONN_CONNECTING, /* net/dial.c's steps: connect, TLS handshake */
  RLOCK__LCONN_READY
};

typedef struct rlock__lconn rlock__lconn;
struct rlock__lconn {
  int fd;
  int state;                 /* enum rlock__lconn_state */
  int dropped;               /* it was ready, then dropped: the next
                                connection is a reconnect */
  int watching;              /* events asked of the adapter */
  const rlock__endpoint *ep; /* whom it connects to (borrowed) */
  rlock__lnode *ln;          /* the node it belongs to, NULL for a sentinel */
  rlock__dial dial;          /* while CONNECTING */
  struct rlock__lookup *lookup; /* while RESOLVING */
  rlock__buf out;               /* bytes to write: out.p[off..out.len) */
  size_t off;
  uint64_t queued;  /* bytes ever queued */
  uint64_t written; /* bytes ever written */
  rlock__reader *rd;
  struct rlock__tls_conn *tls; /* NULL: plain text */
  const char *login[2];        /* the login commands whose replies are due */
  int login_due;
  int due;              /* answers expected (not unlock messages) */
  int64_t due_since_us; /* the last answer, or the first one due */
  int64_t rx_us;        /* when bytes last came in */
  rlock__llist reqs;    /* requests, in the order they were sent */
  /* Scripts loaded on this connection's server: the first use of each
   * is preceded by SCRIPT LOAD, pipelined (so no NOSCRIPT sends a request
   * back to the tail, past later ones: scripts loaded so are never
   * evicted, and after a SCRIPT FLUSH every script request is refused
   * alike and re-sent in order). Where an ACL refuses SCRIPT LOAD
   * (noload), a first use goes as EVAL instead. */
  const struct rlock__script *evald[32];
  int nevald;
  int noload;
  rlock__ltimer io_timer;   /* connect timeout, then the head's reply */
  int64_t connect_until_us; /* while connecting */
  /* A subscriber connection (no request FIFO) hands every reply here (it
   * takes it); NULL for a command connection. */
  void (*on_reply)(rlock_client *c, rlock__lconn *k, rlock__reply *r);
  /* After the connection failed (every request told): a subscriber's
   * re-subscription. NULL for a command connection. */
  void (*on_down)(rlock_client *c, rlock__lconn *k, int rc);
  /* A subscriber's (UN)SUBSCRIBE commands whose confirmations are due, in
   * order (lsub.c). */
  struct rlock__lchan **sent;
  size_t nsent, capsent;
  int sharded;  /* a subscriber: SSUBSCRIBE (1) or SUBSCRIBE (0) */
  int sub_lost; /* a subscriber that dropped with channels on it: its next
                   confirmed subscription says it reconnected (INFO) */
  char where[128];
};

/* One server's connections on the loop: one per rlock__node met. */
struct rlock__lnode {
  struct rlock__node *node;
  rlock__lconn cmd; /* commands, pipelined */
  rlock__lconn sub; /* its subscriptions (lsub.c) */
  rlock__lreq info; /* INFO replication, while the count is asked */
  int info_busy;
  rlock__llist await; /* lock writes waiting for it (rlock__lreq.at) */
};

/* Set up a closed connection to `ep` (borrowed; it must outlive k). */
void rlock__lconn_init(rlock__lconn *k, const rlock__endpoint *ep,
                       rlock__lnode *ln);
/* Open (start connecting) when closed. RLOCK_OK, or a status with the
 * last error set (the connection stays closed). */
int rlock__lconn_open(rlock_client *c, rlock__lconn *k);
/* Queue a plain command (words and lengths); flushed at the end of the
 * loop turn. RLOCK_ENOMEM. */
int rlock__lconn_command(rlock__lconn *k, int argc, const char **argv,
                         const size_t *lens);
/* Fail: close, tell every request (RLOCK_ECLOSED, RLOCK_EIO, ...) with the
 * last error worded by the caller, then on_down. */
void rlock__lconn_fail(rlock_client *c, rlock__lconn *k, int rc);
/* One answer that was due on k came (a reply, a confirmation, a PONG). */
void rlock__lconn_answered(rlock__lconn *k);
/* `n` more answers are due on k (arms the no-answer timeout). */
void rlock__lconn_expect(rlock_client *c, rlock__lconn *k, int n);
/* Write what is queued, never waiting; watch for writable when some is
 * left. */
void rlock__lconn_flush(rlock_client *c, rlock__lconn *k);
/* The adapter says `events` are ready on k->fd. */
void rlock__lconn_io(rlock_client *c, rlock__lconn *k, int events);
/* A name lookup thread finished: go on connecting the connections that
 * waited for theirs. */
void rlock__lconn_lookups(rlock_client *c, rlock__lconn *k);
/* Close a connection with no request in flight, quietly. */
void rlock__lconn_close(rlock_client *c, rlock__lconn *k);
/* Free the buffers of a closed connection. */
void rlock__lconn_destroy(rlock__lconn *k);

/* lroute.c: a request goes on `k` now (opening it when closed; a failure
 * goes to rlock__lreq_failed). */
void rlock__lreq_queue(rlock_client *c, rlock__lconn *k, rlock__lreq *r);

/* A request queued on `k` now has the bound `bound_us` (0: none, else
 * as rlock__lreq.bound_us): look at it in time. */
void rlock__lconn_watch_bound(rlock_client *c, rlock__lconn *k,
                              int64_t bound_us);
/* The head of a FIFO got its last reply, `step` what it says. */
void rlock__lreq_answered(rlock_client *c, rlock__lconn *k, rlock__lreq *r,
                          rlock__step step);
/* The request failed on its connection (q.rc, call.transient and
 * call.in_flight set): retried where the topology may change, else done. */
void rlock__lreq_failed(rlock_client *c, rlock__lreq *r);

/* The loop's connections to `node`, made on first use. NULL (last error
 * set) when out of memory. */
rlock__lnode *rlock__lnode_of(rlock_client *c, struct rlock__node *node);
/* Every connection the loop has: call fn on each. */
void rlock__lconn_each(rlock_client *c,
                       void (*fn)(rlock_client *c, rlock__lconn *k));

/* ---- the topology on the loop (ltopo.c) --------------------------------- */

/* Refresh the topology (net/refresh.c's steps on loop connections) unless
 * one is under way or, without `force`, one ran within
 * RLOCK__TOPO_REFRESH_MS. A single server has nothing to refresh. */
void rlock__ltopo_refresh(rlock_client *c, int force);
/* A parked request's refresh ended with `rc` (lroute.c). */
void rlock__lreq_unparked(rlock_client *c, rlock__lreq *r, int rc);
/* Queue a lock write on `ln` with WAIT behind it where the node has
 * replicas, asking INFO replication first when the count is not known. */
void rlock__lreplicas_send(rlock_client *c, rlock__lnode *ln, rlock__lreq *r);
/* Hold `r` until a refresh ends (no node serves its key yet), starting
 * one: then it is routed again, or fails with the refresh's status. */
void rlock__ltopo_park(rlock_client *c, rlock__lreq *r);
/* The client is going away: parked requests end with RLOCK_ECLOSED. */
void rlock__ltopo_destroy(rlock_client *c);
/* Sentinel's master changed: the subscriber follows (core.c). */
void rlock__ltopo_master_changed(void *arg);

/* ---- pending operations (core.c, lacquire.c, lops.c) ------------------- */

enum rlock__lop_type {
  RLOCK__LOP_ACQUIRE,
  RLOCK__LOP_RELEASE,
  RLOCK__LOP_FORCE,
  RLOCK__LOP_IS_LOCKED,
  RLOCK__LOP_COUNT,
  RLOCK__LOP_TTL,
  RLOCK__LOP_INSPECT,
  RLOCK__LOP_MULTI,   /* a MultiLock acquisition (lmulti.c) */
  RLOCK__LOP_RELET,   /* a fresh fixed lease (an extension, a MultiLock
                         member's) */
  RLOCK__LOP_REDLOCK, /* a RedLock's acquisition or release (lredlock.c) */
  RLOCK__LOP_CALL,    /* one call of a blocking fan-out (lfan.c) */
  RLOCK__LOP_SYNC,    /* a synchroniser's one call (lsync.c) */
  RLOCK__LOP_OBSERVE, /* an election's observation (lops.c) */
  RLOCK__LOP_WATCH,   /* a channel watch joining or leaving (lwatch.c) */
  RLOCK__LOP_WHOIS    /* a registry record read (lwhois.c) */
};

typedef struct rlock__lchan rlock__lchan;

/* What a waiter's channel tells it (lsub.c). */
typedef enum rlock__chan_event {
  RLOCK__CHAN_FAILED,    /* the subscription failed (last error set) */
  RLOCK__CHAN_CONFIRMED, /* the subscription is confirmed */
  RLOCK__CHAN_WOKEN,     /* a message (its channel's wakes: how many) */
  RLOCK__CHAN_WOKEN_ALL  /* messages possibly missed: each tries again */
} rlock__chan_event;

/* One party waiting on a channel (lsub.c): a loop acquisition
 * (lacquire.c), or a blocking client's channel front (blocking/pubsub.c),
 * which stands for every thread of that client waiting on the channel.
 * Its owner fills asleep and event, then joins. */
typedef struct rlock__lwaiter rlock__lwaiter;
struct rlock__lwaiter {
  rlock__llink at;    /* first: its place among the channel's waiters */
  rlock__lchan *chan; /* NULL: on no channel */
  /* Whether an unlock message "0" goes to it now (it sleeps on it); one
   * that none takes is kept as a permit (rlock__lsub_take_permit). */
  int (*asleep)(const rlock__lwaiter *w);
  /* What the channel tells it; it may leave the channel meanwhile. */
  void (*event)(rlock__lwaiter *w, rlock__chan_event what);
};

/* What a watcher's channel tells it (lsub.c). */
typedef enum rlock__watch_event {
  RLOCK__WATCH_UP,      /* the subscription is confirmed (again) */
  RLOCK__WATCH_MESSAGE, /* a message: its payload */
  RLOCK__WATCH_DOWN,    /* the subscription is lost (told at each retry) */
  RLOCK__WATCH_FAILED   /* refused (last error set): it left the channel */
} rlock__watch_event;

/* One party following a channel without waiting on it (rlock/watch.h's
 * watches, lwatch.c): told every message after the waiters it wakes, never
 * counted among them, so it takes no unlock message and keeps no permit. */
typedef struct rlock__lwatcher rlock__lwatcher;
struct rlock__lwatcher {
  rlock__llink at;    /* first: its place among the channel's watchers */
  rlock__lchan *chan; /* NULL: on no channel */
  /* It may leave the channel meanwhile (also other watchers). */
  void (*event)(rlock__lwatcher *w, rlock__watch_event what,
                const char *payload, size_t len);
};

struct rlock_op {
  int type; /* enum rlock__lop_type */
  rlock_client *c;
  rlock_lock *l;
  rlock_async_fn cb;
  rlock_info_fn info_cb;
  void *arg;
  uint64_t owner_number;
  char owner[RLOCK_OWNER_MAX];
  /* outcome, kept until the callback runs */
  int rc;
  int64_t value;
  rlock_lock_info *info;
  rlock_leader_fn leader_cb;   /* RLOCK__LOP_OBSERVE: its callback ... */
  rlock_leader *leader;        /* ... and its snapshot */
  rlock_record_fn record_cb;   /* RLOCK__LOP_WHOIS: its callback ... */
  rlock_client_record *record; /* ... and the record read, or NULL (none
                                  found); freed after the callback */
  char msg[512];
  /* links */
  rlock__llink at;             /* in the inbox, then among the live
                                  operations, then the completions due */
  void (*start)(rlock_op *op); /* while in the inbox */
  int finished;                /* outcome set, callback due */
  /* An acquisition's own steps (NULL for the other operations): cancel it
   * on the loop thread (rlock_op_cancel), and abandon it without I/O when
   * the client is freed (before it completes with RLOCK_ECLOSED). */
  void (*cancel)(rlock_op *op);
  void (*abandon)(rlock_op *op);
  /* rlock_op_cancel from another thread (core.c): the request waits in
   * the client's cancel list; the operation outlives its callback until
   * every request queued for it has been handled. */
  rlock_op *cancel_next; /* the cancel list (inbox_mu) */
  atomic_int cancels;    /* requests queued, not yet handled (inbox_mu) */
  int called;            /* its callback has run: the requests free it */
  rlock__lreq lreq;
  /* acquisition */
  int state; /* lacquire.c */
  int canceled;
  int woken; /* a wake-up came while an attempt was in flight */
  /* asleep for a message or the holder's lease, not for a pause */
  int resting;
  int64_t lease_ms, lease_sent, wait_ms, deadline_us;
  rlock__plan plan;    /* its decisions (kinds/plan.h) */
  int64_t bound_us;    /* the attempts' bound (lreq.bound_us), or 0 */
  int unmetered;       /* a RedLock's member: its round is what counts */
  rlock__mset *whole;  /* a MultiLock's or RedLock's acquisition: its
                          metrics, recorded when it finishes; else NULL */
  int64_t start_us;    /* when it began (the metrics' wait time) ... */
  int64_t woke_us;     /* ... and its wait's last wake-up (the handoff) */
  uint64_t seed;       /* a RedLock's pauses between rounds */
  int sub_rc;          /* the channel was refused while an attempt flew */
  int settle_rc;       /* SETTLING: the failure that started it ... */
  int64_t settle_had;  /* ... and the levels recorded before */
  rlock__lwaiter sw;   /* on its channel (lsub.c) */
  rlock__ltimer timer; /* the sleep bound */
  /* release */
  int hold_state;
  int64_t keep_ms;
  rlock__latch latch; /* its unlock latch (lock_int.h), and ... */
  char latch_id[33];  /* ... the request id every repeat carries */
  /* synchronisers (lsync.c): a permit acquisition's callback (instead of
   * cb), and a one-call operation's script operation and its number */
  rlock_permit_fn permit_cb;
  rlock_permits_fn permits_cb; /* an inspection's, with its snapshot: */
  rlock_permits_info *permits;
  const char *sync_op;
  int64_t sync_num;
  int sync_write;
  /* MultiLock (lmulti.c): its operation's, or a member's fresh lease's */
  struct rlock_multilock *multi;
  size_t index;    /* the member being taken, given back or re-let */
  int phase;       /* lmulti.c */
  rlock_op *child; /* the member operation under way, or NULL */
  /* RedLock (lredlock.c) */
  struct rlock_redlock *redlock;
  struct rlock__lred *red; /* its members' state; freed at the end */
};

/* The operation a request belongs to (its `lreq`). */
static inline rlock_op *rlock__lop_of(rlock__lreq *r) {
  return (rlock_op *)((char *)r - offsetof(rlock_op, lreq));
}

/* A request's answer, taken by its done step: its status, and its reply
 * (the caller's to free; NULL when none) in *reply. The call's arguments
 * are cleared (rlock__call_clear); what the request learned (in_flight,
 * transient, replicas, acked, stamped_us) is left to read. */
static inline int rlock__lreq_take(rlock__lreq *r, rlock__reply **reply) {
  *reply = r->q.reply;
  r->q.reply = NULL;
  rlock__call_clear(&r->call);
  return r->q.rc;
}

/* Allocate an operation of `type` on `l` (an acquisition gets
 * lacquire.c's cancel and abandon steps). NULL (last error set) when out
 * of memory. */
rlock_op *rlock__lop_new(rlock_lock *l, int type);
/* The same for an operation of client `c` that is about no lock (a
 * watch's join, a registry read): its `l` is NULL. */
rlock_op *rlock__lop_new_on(rlock_client *c, int type);
/* Start `op` on the loop: at once on the loop thread, else through the
 * inbox. The start function runs on the loop thread. */
int rlock__lop_submit(rlock_op *op, void (*start)(rlock_op *op));
/* Record the outcome (and the last error's message when rc fails); the
 * callback runs at the end of the loop turn. The operation must not be
 * in flight or waiting any more. */
void rlock__lop_finish(rlock_op *op, int rc, int64_t value);
/* The checks every _async entry point makes of its locks' clients (a
 * MultiLock's or RedLock's members; one for the rest): made in this
 * process (fork), loop clients (rlock_client_new_loop) of one loop
 * thread, none being freed. RLOCK_OK, or the refusal naming `fn`. */
int rlock__lop_check_clients(rlock_lock *const *locks, size_t n,
                             const char *fn);
/* A callback that does nothing: an operation whose outcome no one awaits
 * (a watch's join, a member whose parent stopped listening). */
void rlock__lop_ignore(void *arg, int rc, int64_t value);
/* RLOCK_ECANCELED, with the message of a wait canceled (rlock_op_cancel). */
int rlock__lop_canceled(void);
/* The owner number check shared by the _async entry points. */
int rlock__lop_check_owner(uint64_t owner, const char *fn);
/* An _async acquisition's options, checked into *o: required, an explicit
 * owner, no cancel token (rlock_op_cancel instead) and no token pointer
 * (the token is the callback's value). RLOCK_OK or RLOCK_EINVAL. */
int rlock__lop_options(rlock_acquire_options *o,
                       const rlock_acquire_options *opts, const char *fn);

/* lops.c: a release's start (the hold popped, the script sent). */
void rlock__lrelease_start(rlock_op *op);
/* lops.c: a fresh fixed lease's start (RLOCK__LOP_RELET, keep_ms the
 * lease): rlock_lock_extend_async's, or, with `multi` set, a MultiLock
 * member's (`index`) once the last member is taken (lmulti.c). */
void rlock__lrelet_start(rlock_op *op);
/* lops.c: an observation's start (RLOCK__LOP_OBSERVE, leader_cb set). */
void rlock__lobserve_start(rlock_op *op);

/* Enter and leave another loop client from inside one's turn (a RedLock's
 * members are on several clients): what is queued on `c` meanwhile goes
 * out, and its completions are scheduled, when the outermost leave runs. */
void rlock__loop_enter(rlock_client *c);
void rlock__loop_leave(rlock_client *c);

/* lacquire.c */
void rlock__lacquire_start(rlock_op *op);
void rlock__lacquire_event(rlock__lwaiter *w, rlock__chan_event what);
/* Cancel `op`, a MultiLock's or RedLock's member operation (nothing
 * unless it is an acquisition under way), from another client's turn:
 * inside its own client's (rlock__loop_enter). */
void rlock__lacquire_cancel_member(rlock_op *op);
/* rlock_op_cancel on the loop thread. */
void rlock__lacquire_cancel(rlock_op *op);
/* The client is being freed: abandon the acquisition (no I/O). */
void rlock__lacquire_abandon(rlock_op *op);

/* ---- objects of the loop thread made by any thread (lparty.c) ---------- */

/* A watch (lwatch.c) or an election watch (lfollow.c): made and freed by
 * any thread, it lives on its client's loop thread. Its join and its
 * leave run there (through the inbox from another thread) as
 * RLOCK__LOP_WATCH operations whose arg is the party; it counts in
 * rlock__loop.watches from init to the free. Its owner embeds it. */
typedef struct rlock__lparty {
  rlock_client *c;
  void *owner;            /* the object that embeds it */
  int started;            /* its join has run (loop thread) */
  int doomed;             /* freed on the loop thread while a step of it
                             was still due (its join, a read in flight):
                             that step frees it */
  rlock_op *join, *leave; /* made with it, so neither can fail later */
  pthread_mutex_t mu;     /* a free from another thread waits ... */
  pthread_cond_t cv;
  int left; /* ... until its leave has run */
} rlock__lparty;

/* A constructor's checks of `c`: made in this process, not being freed.
 * RLOCK_OK, or the refusal naming `fn`. */
int rlock__lparty_check(rlock_client *c, const char *fn);
/* Set up `p` (zeroed) for `owner` on `c`: RLOCK_OK, or RLOCK_ENOMEM
 * with nothing kept (no rlock__lparty_destroy then). */
int rlock__lparty_init(rlock__lparty *p, rlock_client *c, void *owner);
/* Hand the join to the loop: `join` runs there (at once on the loop
 * thread) and finishes its operation. RLOCK_OK. */
int rlock__lparty_join(rlock__lparty *p, void (*join)(rlock_op *op));
/* A free begins (no longer counted): 1 when it runs on the loop thread,
 * whose caller leaves at once, else 0. */
int rlock__lparty_here(rlock__lparty *p);
/* Off the loop thread: hand the leave to the loop (`leave` runs there and
 * finishes its operation, at once or later) and wait until it has run.
 * Nothing when the loop is closed, or in a fork()ed child's copy. */
void rlock__lparty_leave(rlock__lparty *p, void (*leave)(rlock_op *op));
/* Free what the party holds (its leave, unless handed to the loop). */
void rlock__lparty_destroy(rlock__lparty *p);
/* The owner of the party whose join or leave `op` is. */
static inline void *rlock__lparty_owner(const rlock_op *op) {
  return ((rlock__lparty *)op->arg)->owner;
}

/* ---- the subscriber (lsub.c) ------------------------------------------- */

enum rlock__lchan_state {
  RLOCK__LCHAN_NONE,
  RLOCK__LCHAN_PENDING,
  RLOCK__LCHAN_ACTIVE,
  RLOCK__LCHAN_UNSUB_PENDING
};

struct rlock__lchan {
  rlock__ltimer linger; /* first: the timer finds its channel */
  rlock__lconn *k;      /* the subscriber it is (being) subscribed on */
  char *name;
  size_t len;
  int state;             /* enum rlock__lchan_state */
  int permits;           /* unlock messages no waiter has taken yet */
  rlock__llist waiters;  /* rlock__lwaiter.at, in arrival order */
  int walking;           /* a walk over the waiters is under way */
  int64_t wakes;         /* what the message being delivered wakes (RLOCK__CHAN
                            _WOKEN): how many, RLOCK__WAKE_ALL for all */
  rlock__llist watchers; /* rlock__lwatcher.at (they keep it subscribed) */
};

/* The states of an acquisition (lacquire.c), which the subscriber reads
 * to pick whom an unlock message wakes. */
enum rlock__lacq_state {
  RLOCK__LACQ_ATTEMPTING,  /* an attempt is in flight */
  RLOCK__LACQ_SUBSCRIBING, /* held elsewhere; its channel not confirmed */
  RLOCK__LACQ_SLEEPING,    /* held elsewhere; waiting for a message */
  RLOCK__LACQ_GIVING_BACK, /* canceled after the server granted it */
  RLOCK__LACQ_SETTLING     /* an attempt lost in flight: reading whether
                              it took the lock */
};

/* Join `w` to the waiters of `channel`, subscribing when needed: 1 when
 * the subscription is confirmed already, 0 when the waiter will hear
 * RLOCK__CHAN_CONFIRMED once it is (RLOCK__CHAN_FAILED if it fails), or a
 * status (the subscriber cannot connect, out of memory). */
int rlock__lsub_join(rlock_client *c, rlock__lwaiter *w, const char *channel);
/* 1 when w's channel is confirmed. */
int rlock__lsub_active(const rlock__lwaiter *w);
/* Leave (unsubscribing when it was the last waiter, after the linger).
 * No-op when on no channel. */
void rlock__lsub_leave(rlock_client *c, rlock__lwaiter *w);
/* Leave, unsubscribing at once when it was the last waiter: for a
 * blocking client's front, which lingers on its own. */
void rlock__lsub_leave_now(rlock_client *c, rlock__lwaiter *w);
/* The file descriptor of w's subscriber connection when it is up and in
 * plain text (its bytes can be peeked at), else -1. */
int rlock__lsub_fd(const rlock__lwaiter *w);
/* The waiter is going to sleep: take a permit if one is there (1), else
 * 0. */
int rlock__lsub_take_permit(rlock__lwaiter *w);
/* Add the watcher `w` to `channel`, subscribing when needed: RLOCK_OK
 * (RLOCK__WATCH_UP comes once the subscription is confirmed; at once, from
 * this call, when it is already) or a status (out of memory, the
 * subscriber cannot connect). */
int rlock__lsub_watch(rlock_client *c, rlock__lwatcher *w, const char *channel);
/* Take the watcher off its channel (unsubscribing, after the linger, when
 * no one else uses it). No-op when on no channel. */
void rlock__lsub_unwatch(rlock_client *c, rlock__lwatcher *w);

/* ---- the client's loop state (core.c) ---------------------------------- */

typedef struct rlock__loop {
  rlock_loop ad;
  pthread_t thread;
  int depth;        /* entry points under way on the stack */
  int closing;      /* rlock_client_free has begun */
  int doomed;       /* freed: free the memory when depth is back to 0 */
  int64_t armed_us; /* what the adapter's timer is armed for */
  rlock__ltimer **heap;
  size_t nheap, capheap;
  rlock__llist ops;  /* live operations (rlock_op.at) */
  rlock__llist done; /* completions due (rlock_op.at) */
  pthread_mutex_t inbox_mu;
  rlock__llist inbox; /* operations started off the loop thread */
  /* rlock_op_cancel from other threads (core.c) */
  rlock_op *cancel_first, *cancel_last;
  atomic_int lookups_done; /* a name lookup thread woke the loop */
  atomic_int renew_asked;  /* another thread recorded the first watchdog
                              hold: arm the renewal tick (a blocking
                              client's loop) */
  /* A blocking client's loop: run at each wake-up, inside the loop's
   * turn (blocking/pubsub.c's channel fronts); NULL otherwise. */
  void (*on_wake)(rlock_client *c);
  /* the servers (lroute.c): one entry per topology node met */
  rlock__lnode **nodes;
  size_t nnodes, capnodes;
  /* the topology (ltopo.c) */
  rlock__lconn sentinel;   /* a refresh's question to a sentinel */
  rlock__lconn swatch;     /* +switch-master on a sentinel (lsub.c) */
  rlock__refresh refresh;  /* the refresh under way */
  rlock__lreq refresh_req; /* its question in flight */
  int refreshing;
  int64_t refreshed_us; /* when the last one began */
  int master_changed;   /* Sentinel named a new master meanwhile */
  rlock__llist parked;  /* requests waiting for the refresh */
  /* the subscriber (lsub.c) */
  rlock__map chans;        /* channel -> rlock__lchan* */
  rlock__ltimer sub_retry; /* re-subscribing after a subscriber failed */
  int64_t sub_backoff_ms;
  int idle_chans;             /* channels lingering with no waiter */
  atomic_int watches;         /* live rlock_watch objects (lwatch.c): a
                                 blocking client's poll then reads its
                                 subscriber sockets at once (pubsub.c) */
  rlock__ltimer swatch_retry; /* reconnecting the +switch-master watch */
  rlock__ltimer health;       /* PINGs to silent subscribers */
  int64_t swatch_backoff_ms;
  size_t swatch_next; /* the sentinel to try next */
  /* the watchdog (lrenew.c) */
  rlock__ltimer renew; /* the watchdog's tick */
  rlock__llist ticks;  /* ticks with a batch in flight (lrenew.c) */
  /* the registry record (lregistry.c) */
  rlock__ltimer registry; /* the next write */
  rlock__lreq reg_req;    /* the write in flight */
  int reg_busy;           /* reg_req is in flight */
  int reg_warned;         /* a refusal was logged */
} rlock__loop;

/* Make sure the renewal tick is armed (a watchdog hold was recorded). */
void rlock__lrenew_arm(rlock_client *c);
/* The tick (lrenew.c). */
void rlock__lrenew_tick(rlock_client *c, rlock__ltimer *t);
/* Write the registry record now and then once a period (lregistry.c);
 * nothing when the registry is off. */
void rlock__lregistry_start(rlock_client *c);
void rlock__lregistry_tick(rlock_client *c, rlock__ltimer *t);
/* Make sure silent subscribers are PINGed (a timer while any is open). */
void rlock__lsub_health_arm(rlock_client *c);
/* Make `k` a subscriber connection (lsub.c's replies and failures). */
void rlock__lsub_conn_init(rlock__lconn *k);
/* Free every channel (client going away). */
void rlock__lsub_destroy(rlock_client *c);
/* Timer: subscribe again. */
void rlock__lsub_retry(rlock_client *c, rlock__ltimer *t);
/* Sentinel named another master: subscriptions move to it. */
void rlock__lsub_master_changed(rlock_client *c);
/* Sentinel: keep a +switch-master subscription on one sentinel (lswatch
 * in lsub.c), so a failover is followed at once. */
void rlock__lswatch_start(rlock_client *c);
void rlock__lswatch_retry(rlock_client *c, rlock__ltimer *t);

/* The adapter's entry points without the check that the client is a
 * loop client (rlock_loop_io, _timer, _wake refuse a blocking client):
 * for the library's own poll() runner. */
void rlock__loop_io(rlock_client *c, int fd, int events);
void rlock__loop_timer(rlock_client *c);
void rlock__loop_wake(rlock_client *c);

/* ---- a blocking fan-out (lfan.c) ------------------------------------------
 * Several calls at once, each on the loop of its lock's client (a
 * blocking client's background thread, or a loop client's loop run by
 * another thread), waited for by the calling thread:
 *
 *   rlock__lfan *g = rlock__lfan_new(n);        // NULL: out of memory
 *   rlock__call *call = rlock__lfan_call(g, i, lock);  // build it here;
 *                                               // NULL: out of memory
 *   rlock__lfan_run(g, out, deadline_us, decide, arg); // frees g
 */

/* One call's outcome, as the caller sees it. */
typedef struct rlock__fan {
  int done;            /* its outcome is in (always, once run returned) */
  int rc;              /* RLOCK_OK (reply set), a status, or: */
  rlock__reply *reply; /* on RLOCK_OK: the caller's to free */
  char error[256];     /* the message when rc is not RLOCK_OK */
} rlock__fan;

/* Status of a call decide() stopped waiting for before its answer. */
#define RLOCK__EABANDONED (-1001)

typedef struct rlock__lfan rlock__lfan;
rlock__lfan *rlock__lfan_new(size_t n);
/* The call i, to be carried on `l`'s client's loop: the caller builds it
 * (the strings it borrows are copied before it is sent). NULL when out of
 * memory: call i then fails with RLOCK_ENOMEM. */
rlock__call *rlock__lfan_call(rlock__lfan *g, size_t i, struct rlock_lock *l);
/* Send every call and fill out[0..n) as the answers come, until all are
 * in, `deadline_us` passes or the thread's bound ends the wait (those
 * still pending: RLOCK_ETIMEOUT), or decide(arg), asked after each
 * answer, returns nonzero (pending: RLOCK__EABANDONED). Pending calls go
 * on on their loops; their answers are dropped. A call whose client's
 * loop runs on this very thread fails with RLOCK_EDEADLK. Frees g. */
void rlock__lfan_run(rlock__lfan *g, rlock__fan *out, int64_t deadline_us,
                     int (*decide)(void *arg), void *arg);
/* out[0..n) all failed with `rc` (the last error's message): for a
 * fan-out that could not even be made. */
void rlock__lfan_fail(rlock__fan *out, size_t n, int rc);

/* 1 when `c` is a loop client, which the caller's event loop drives: the
 * public `_async` entry points refuse a blocking client, whose loop state
 * belongs to its background thread. */
int rlock__user_loop(const rlock_client *c);

/* ---- a blocking client's loop (core.c) ---------------------------------- */

/* A blocking client has a loop state too, driven by its background thread
 * (blocking/bg.c) through the poll() adapter below; its callers' threads
 * never touch it but through the inbox and rlock__loop_ask_renew.
 * Attach the state with the adapter `table` (the thread that runs it is
 * bound later): RLOCK_OK or RLOCK_ENOMEM, nothing left attached. */
int rlock__loop_attach(rlock_client *c, const rlock_loop *table);
/* The loop's thread is `thread` (before any work is handed to it). */
void rlock__loop_bind(rlock_client *c, pthread_t thread);
/* On the loop's thread, as it starts: with Sentinel, watch for
 * +switch-master (lsub.c), whose refresh tells the blocking subscriber
 * through the topology's on_change. */
void rlock__loop_begin(rlock_client *c);
/* Any thread: a watchdog hold was recorded; arm the renewal tick on the
 * loop's thread. */
void rlock__loop_ask_renew(rlock_client *c);
/* On the loop's thread, as it stops: every pending operation completes
 * with RLOCK_ECLOSED, every connection closes, the timer is disarmed. */
void rlock__loop_shut(rlock_client *c);
/* Free the loop state (its thread has stopped, or never started). */
void rlock__loop_detach(rlock_client *c);

/* ---- the loop engine on poll() (lpoll.c) --------------------------------- */

/* An rlock_loop adapter the library runs itself: the descriptors the
 * engine watches, its one timer, an eventfd for wake(). Not thread-safe
 * but for rlock__lpoll_wake. */
struct rlock__lwatch {
  int fd;
  int events;      /* RLOCK_LOOP_READ | RLOCK_LOOP_WRITE */
  unsigned serial; /* which registration of fd this is */
  unsigned polled; /* the serial the last poll saw */
};

typedef struct rlock__lpoll {
  rlock_client *c;
  int wake_fd;
  struct rlock__lwatch *w;
  size_t nw, capw;
  unsigned serial;
  struct pollfd *pfd; /* the wake-up, the table, then `extra` entries */
  int npfd;           /* entries the last rlock__lpoll_fds filled */
  int extra;
  int64_t timer_us; /* monotonic; INT64_MAX: disarmed */
  /* Told as the engine stops watching fd, before it closes it (the
   * runner's own users of the descriptor let go); may be NULL. */
  void (*unwatch)(void *arg, int fd);
  void *unwatch_arg;
} rlock__lpoll;

/* Set up `p` for client `c`, with room for `extra` pollfd entries of the
 * runner's own after the engine's, and fill `table` for
 * rlock__loop_attach. RLOCK_OK, RLOCK_ENOMEM or RLOCK_EIO (eventfd). */
int rlock__lpoll_init(rlock__lpoll *p, rlock_client *c, int extra,
                      rlock_loop *table);
void rlock__lpoll_destroy(rlock__lpoll *p);
/* Any thread: make the runner's poll() return (nothing in a fork()ed
 * child of the client's process). */
void rlock__lpoll_wake(rlock__lpoll *p);
/* The pollfd array to poll: the engine's *n entries first, then room for
 * `extra`; *next is lowered to the engine's timer. Valid until the next
 * rlock__lpoll_dispatch. */
struct pollfd *rlock__lpoll_fds(rlock__lpoll *p, int *n, int64_t *next);
/* After poll() (polled: it returned > 0, revents set): hand the engine
 * its events, its wake-up and its timer when due. */
void rlock__lpoll_dispatch(rlock__lpoll *p, int polled);

#endif /* RLOCK_LOOP_INT_H */
