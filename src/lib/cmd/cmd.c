/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd.c - the command layer: building calls, the request state machine,
 * the error rule, and the blocking driver.
 */
#include "cmd.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "client_int.h"

/* ---- building calls ---------------------------------------------------- */

static void call_start(rlock__call *call, const rlock__script *s,
                       const char *word) {
  call->script = s;
  call->word = word;
  call->nkeys = call->n = 0;
  call->kv = call->small;
  call->cap = RLOCK__CALL_SMALL;
  call->failed = 0;
  call->used = 0;
  call->served_by = "";
  call->sync = 0;
  call->replicas = 0;
  call->acked = -1;
  call->transient = 0;
  call->in_flight = 0;
  call->sent_us = 0;
  call->stamped_us = 0;
  call->then = NULL;
  call->nbytes = 0;
}

void rlock__call_script(rlock__call *call, const rlock__script *s) {
  call_start(call, s, NULL);
}

void rlock__call_cmd(rlock__call *call, const char *word) {
  call_start(call, NULL, word);
}

static void push(rlock__call *call, const char *s) {
  if (call->n == call->cap) {
    int cap = call->cap * 2;
    const char **kv = rlock__malloc((size_t)cap * sizeof *kv);
    if (kv == NULL) {
      call->failed = 1;
      return;
    }
    memcpy(kv, call->kv, (size_t)call->n * sizeof *kv);
    if (call->kv != call->small)
      free(call->kv);
    call->kv = kv;
    call->cap = cap;
  }
  call->kv[call->n++] = s;
}

void rlock__call_key(rlock__call *call, const char *key) {
  if (call->n != call->nkeys) /* keys first: a bug in the caller */
    call->failed = 1;
  push(call, key);
  call->nkeys++;
}

void rlock__call_arg(rlock__call *call, const char *arg) { push(call, arg); }

const char *rlock__call_fmt(rlock__call *call, const char *fmt, ...) {
  size_t room = sizeof call->store - call->used;
  char *at = call->store + call->used;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(at, room, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= room) {
    call->failed = 1;
    return "";
  }
  call->used += (size_t)n + 1;
  return at;
}

void rlock__call_num(rlock__call *call, int64_t v) {
  if (sizeof call->store - call->used < 21) {
    call->failed = 1;
    rlock__call_arg(call, "");
    return;
  }
  char *at = call->store + call->used;
  call->used += rlock__decimal(at, v) + 1;
  rlock__call_arg(call, at);
}

void rlock__call_bytes(rlock__call *call, const void *p, size_t n) {
  if (call->nbytes == RLOCK__CALL_BYTES ||
      sizeof call->store - call->used < n + 1) {
    call->failed = 1;
    rlock__call_arg(call, "");
    return;
  }
  char *at = call->store + call->used;
  memcpy(at, p, n);
  at[n] = '\0'; /* not its end: bytes_len is */
  call->used += n + 1;
  call->bytes_at[call->nbytes] = call->n;
  call->bytes_len[call->nbytes++] = n;
  rlock__call_arg(call, at);
}

void rlock__call_clear(rlock__call *call) {
  if (call->kv != call->small)
    free(call->kv);
  call->kv = call->small;
  call->cap = RLOCK__CALL_SMALL;
  call->n = call->nkeys = 0;
  call->nbytes = 0;
}

int rlock__call_unconfirmed(const rlock__call *call) {
  return call->replicas > 0 && call->acked == 0;
}

const char *rlock__call_route_key(const rlock__call *call) {
  return call->nkeys > 0 ? call->kv[0] : NULL;
}

/* ---- requests ---------------------------------------------------------- */

void rlock__req_init(rlock__req *q, rlock__call *call) {
  *q = (rlock__req){
      .call = call, .rc = RLOCK_OK, .step = RLOCK__STEP_ROUTE, .acked = -1};
}

/* The length of the call's entry i: a C string's, or that of the bytes
 * rlock__call_bytes added. */
static size_t entry_len(const rlock__call *call, int i) {
  for (int k = 0; k < call->nbytes; k++)
    if (call->bytes_at[k] == i)
      return call->bytes_len[k];
  return strlen(call->kv[i]);
}

/* Append `call` (as EVAL when `eval`) in RESP. 0, or -1 when out of
 * memory. */
static int encode_call(const rlock__call *call, int eval, rlock__buf *b) {
  int head = call->script ? 3 : 1;
  if (rlock__resp_array(b, (size_t)(head + call->n)) != 0)
    return -1;
  if (call->script) {
    char nk[24];
    size_t nkl = rlock__decimal(nk, call->nkeys);
    const char *verb = eval ? "EVAL" : "EVALSHA";
    const char *body = eval ? call->script->text : call->script->sha;
    size_t body_len = eval ? call->script->len : 40;
    if (rlock__resp_bulk(b, verb, strlen(verb)) != 0 ||
        rlock__resp_bulk(b, body, body_len) != 0 ||
        rlock__resp_bulk(b, nk, nkl) != 0)
      return -1;
  } else if (rlock__resp_bulk(b, call->word, strlen(call->word)) != 0) {
    return -1;
  }
  for (int i = 0; i < call->n; i++)
    if (rlock__resp_bulk(b, call->kv[i], entry_len(call, i)) != 0)
      return -1;
  return 0;
}

/* Append "WAIT <n> <ms>". 0, or -1 when out of memory. */
static int encode_wait(const rlock__req *q, rlock__buf *b) {
  char n[24], ms[24];
  size_t nl = rlock__decimal(n, q->wait_n),
         msl = rlock__decimal(ms, q->wait_ms);
  return rlock__resp_array(b, 3) || rlock__resp_bulk(b, "WAIT", 4) ||
                 rlock__resp_bulk(b, n, nl) || rlock__resp_bulk(b, ms, msl)
             ? -1
             : 0;
}

long rlock__req_encode_to(rlock__req *q, rlock__buf *out) {
  if (q->call->failed)
    return rlock__err(RLOCK_EINVAL, "a command was too large to build"), -1;
  static const char asking[] = "*1\r\n$6\r\nASKING\r\n";
  size_t start = out->len;
  int bad = 0;
  if (q->asking && (bad = rlock__buf_reserve(out, sizeof asking - 1)) == 0) {
    memcpy(out->p + out->len, asking, sizeof asking - 1);
    out->len += sizeof asking - 1;
  }
  bad = bad || encode_call(q->call, q->eval, out) != 0 ||
        (q->wait_n > 0 && encode_wait(q, out) != 0);
  if (bad) {
    out->len = start;
    return rlock__err(RLOCK_ENOMEM, "out of memory encoding a command"), -1;
  }
  q->asking_reply = q->asking;
  q->asking = 0;
  q->wait_due = q->wait_n > 0;
  return (long)(out->len - start);
}

long rlock__req_encode(rlock__req *q, char **buf) {
  rlock__buf b = {0};
  long len = rlock__req_encode_to(q, &b);
  if (len < 0) {
    free(b.p);
    return -1;
  }
  *buf = b.p;
  return len;
}

/* "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381". The slot is
 * digits only: strtoul alone would also take " 12", "+12" and "-0", and
 * read "MOVED  host:port" (no slot) as slot 0. */
static int parse_redirect(rlock__req *q, const rlock__reply *r) {
  const char *p = strchr(r->str, ' ');
  if (p == NULL || p[1] < '0' || p[1] > '9')
    return -1;
  char *end;
  unsigned long slot = strtoul(p + 1, &end, 10);
  if (*end != ' ' || slot >= 16384 || strlen(end + 1) >= sizeof q->addr ||
      end[1] == '\0')
    return -1;
  q->slot = (unsigned)slot;
  snprintf(q->addr, sizeof q->addr, "%s", end + 1);
  return 0;
}

/* Refusals a server gives before running anything, which pass. */
static int is_transient(const rlock__reply *r) {
  static const char *const words[] = {"TRYAGAIN", "CLUSTERDOWN", "LOADING",
                                      "READONLY", "MASTERDOWN"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (rlock__reply_starts(r, words[i]))
      return 1;
  return 0;
}

static rlock__step feed_error(rlock__req *q, const char *where,
                              rlock__reply *r) {
  rlock__step step = RLOCK__STEP_DONE;
  if (q->call->script != NULL && !q->eval &&
      rlock__reply_starts(r, "NOSCRIPT")) {
    q->eval = 1;
    step = RLOCK__STEP_RESEND;
  } else if ((rlock__reply_starts(r, "MOVED ") ||
              rlock__reply_starts(r, "ASK ")) &&
             parse_redirect(q, r) == 0) {
    step =
        rlock__reply_starts(r, "MOVED ") ? RLOCK__STEP_MOVED : RLOCK__STEP_ASK;
    q->rc = rlock__error_status(where, r); /* if it cannot be followed */
  } else {
    q->rc = rlock__error_status(where, r);
    if (is_transient(r))
      step = RLOCK__STEP_RETRY;
  }
  rlock__reply_free(r);
  return step;
}

rlock__step rlock__req_feed(rlock__req *q, const char *where, rlock__reply *r) {
  if (q->asking_reply) { /* ASKING's +OK; the command's reply follows */
    q->asking_reply = 0;
    if (r->type != RLOCK__R_ERROR) {
      rlock__reply_free(r);
      return q->step = RLOCK__STEP_MORE;
    }
  }
  if (q->wait_due == 2) { /* WAIT's reply: how many replicas confirmed */
    q->wait_due = 0;
    /* Any other answer confirmed nothing: -UNBLOCKED when the master was
     * made a replica while WAIT was blocked (Sentinel demoting an old
     * master), and the new master may not have the write. */
    q->acked = r->type == RLOCK__R_INT ? (int)r->integer : 0;
    rlock__reply_free(r);
    return q->step = q->deferred;
  }
  rlock__step step = RLOCK__STEP_DONE;
  if (r->type == RLOCK__R_ERROR) {
    step = feed_error(q, where, r);
  } else {
    q->reply = r;
    q->rc = RLOCK_OK;
  }
  if (q->wait_due == 1) { /* WAIT's reply follows on the same connection */
    q->wait_due = 2;
    q->deferred = step;
    return q->step = RLOCK__STEP_MORE;
  }
  return q->step = step;
}

/* ---- the blocking driver ----------------------------------------------- */

int rlock__req_wait_reply_lost(rlock__req *q) {
  if (q->wait_due != 2 || q->deferred != RLOCK__STEP_DONE)
    return 0;
  q->wait_due = 0;
  q->acked = 0;
  q->step = RLOCK__STEP_DONE;
  return 1;
}

/* rlock__req_wait_reply_lost, or the request fails with the connection. */
static int lost_wait_reply(rlock__req *q, int rc) {
  if (rlock__req_wait_reply_lost(q))
    return RLOCK_OK;
  rlock__reply_free(q->reply);
  q->reply = NULL;
  return rc;
}

/* Send what the request wants and read replies on `conn` until it needs
 * another node or is done. Each send has one command timeout. RLOCK_OK
 * with q->step set, or a failure: *unsent is set when it is that nothing
 * could be encoded (no memory), so nothing new went out (and what went
 * before on this connection was refused unrun: only NOSCRIPT resends). */
static int converse(rlock__conn *conn, rlock__req *q, int *unsent) {
  rlock__step step = RLOCK__STEP_RESEND;
  int rc = RLOCK_OK;
  *unsent = 0;
  while (rc == RLOCK_OK &&
         (step == RLOCK__STEP_RESEND || step == RLOCK__STEP_MORE)) {
    if (step == RLOCK__STEP_RESEND) {
      /* Into the connection's own buffer: no allocation once warm. */
      if (rlock__req_encode_to(q, &conn->out) < 0) {
        rc = rlock_error_last()->code;
        *unsent = 1;
        break;
      }
      conn->io_deadline_us =
          rlock__deadline_after_ms(conn->timeout_ms + q->wait_ms);
      q->call->sent_us = rlock__now_us();
      rc = rlock__conn_send_out(conn);
    }
    rlock__reply *r;
    if (rc == RLOCK_OK && (rc = rlock__conn_recv(conn, &r)) == RLOCK_OK)
      step = rlock__req_feed(q, conn->where, r);
  }
  conn->io_deadline_us = 0;
  return rc == RLOCK_OK ? rc : lost_wait_reply(q, rc);
}

/* A short pause before retrying a refusal: 10, 20, 40 ... 500 ms, never
 * past the deadline. */
static int64_t retry_pause_ms(int attempt, int64_t deadline_us) {
  int64_t ms = 10LL << (attempt < 6 ? attempt : 6);
  ms = ms > 500 ? 500 : ms;
  int64_t left = rlock__ms_left(deadline_us);
  return ms < left ? ms : left;
}

rlock__next rlock__req_next(rlock__topo *t, rlock__req *q, int64_t deadline_us,
                            int *attempt, rlock__node **node,
                            int64_t *pause_ms) {
  int can_move = t->target.kind != RLOCK__TOPO_SINGLE;
  *node = NULL;
  *pause_ms = 0;
  switch (q->step) {
  case RLOCK__STEP_MOVED:
  case RLOCK__STEP_ASK:
    if (!can_move || ++q->redirects > RLOCK__MAX_REDIRECTS) {
      q->rc = can_move ? rlock__err(RLOCK_ESERVER,
                                    "redirected more than %d times; last: %s",
                                    RLOCK__MAX_REDIRECTS,
                                    rlock_error_last()->message)
                       : rlock__err(q->rc,
                                    "%s (a cluster node: use a "
                                    "redis-cluster:// URL)",
                                    rlock_error_last()->message);
      return RLOCK__NEXT_FAIL;
    }
    if (rlock__topo_node_at(t, q->addr, node) != RLOCK_OK) {
      q->rc = rlock_error_last()->code;
      return RLOCK__NEXT_FAIL;
    }
    rlock__obs_count(t->obs, RLOCK__STAT_REDIRECTIONS);
    if (q->step == RLOCK__STEP_MOVED)
      rlock__topo_set_slot(t, q->slot, *node);
    q->asking = q->step == RLOCK__STEP_ASK;
    return q->step == RLOCK__STEP_MOVED ? RLOCK__NEXT_MOVED : RLOCK__NEXT_GO;
  case RLOCK__STEP_RETRY:
    if (!can_move || rlock__now_us() >= deadline_us)
      return RLOCK__NEXT_FAIL;
    q->redirects = 0; /* a migration may ASK, TRYAGAIN, ASK ...: the
                         deadline bounds those, not the redirect count */
    *pause_ms = retry_pause_ms((*attempt)++, deadline_us);
    return RLOCK__NEXT_PAUSE;
  default:
    return RLOCK__NEXT_ROUTE;
  }
}

/* Follow q->step to the node to try next (rlock__req_next, carried out
 * on the calling thread). RLOCK_OK with *node set, or the status to give
 * up with. */
static int next_node(rlock_client *c, rlock__req *q, int64_t deadline_us,
                     int *attempt, rlock__node **node) {
  rlock__topo *t = &c->topo;
  int64_t pause_ms;
  switch (rlock__req_next(t, q, deadline_us, attempt, node, &pause_ms)) {
  case RLOCK__NEXT_FAIL:
    return q->rc;
  case RLOCK__NEXT_MOVED:
    rlock__topo_refresh(t);
    return RLOCK_OK;
  case RLOCK__NEXT_GO:
    return RLOCK_OK;
  case RLOCK__NEXT_PAUSE:
    rlock__topo_refresh(t);
    rlock__bound_sleep_ms(pause_ms);
    if (rlock__bound_reached())
      return q->rc;
    break;
  default:
    break;
  }
  return rlock__topo_route(t, rlock__call_route_key(q->call), node);
}

/* A connection that could not be made (or a pool slot not had) in time,
 * and might be later: not a host name that does not resolve or a
 * certificate refused (rlock__error_final). */
static int transport_failure(int rc) {
  return (rc == RLOCK_EIO || rc == RLOCK_ETIMEOUT) && !rlock__error_is_final();
}

void rlock__req_final_if_unknown_master(const rlock__topo *t, int rc) {
  if ((rc == RLOCK_EIO || rc == RLOCK_ETIMEOUT) && atomic_load(&t->no_master))
    rlock__error_final();
}

int rlock__req_retry_unsent(const rlock__topo *t, rlock__req *q, int rc,
                            int64_t deadline_us) {
  if (t->target.kind == RLOCK__TOPO_SINGLE || !transport_failure(rc) ||
      atomic_load(&t->no_master) || rlock__now_us() >= deadline_us)
    return 0;
  q->step = RLOCK__STEP_RETRY;
  q->rc = rc;
  return 1;
}

/* The call's follow-up (rlock__call.then), sent on `conn` unawaited.
 * Its failure costs nothing but the follow-up: the call's own answer
 * stands, the connection is dropped when given back (logged with the
 * failure), and the caller then restores its last error from `saved`
 * (returns 1). */
static int then_send(rlock__conn *conn, rlock__req *q,
                     rlock__saved_error *saved) {
  rlock__call *call = q->call;
  size_t was = conn->out.len;
  int n = call->then(call->then_arg, call, q->reply, &conn->out);
  if (n <= 0) {
    conn->out.len = was;
    return 0;
  }
  rlock__error_save(saved);
  return rlock__conn_send_skip(conn, n) != RLOCK_OK;
}

int rlock__req_run(rlock_client *c, rlock__req *q, int64_t deadline_us) {
  int attempt = 0;
  rlock__node *node;
  int rc;
  for (;;) {
    if ((rc = next_node(c, q, deadline_us, &attempt, &node)) != RLOCK_OK) {
      if (rlock__req_retry_unsent(&c->topo, q, rc, deadline_us))
        continue;
      rlock__req_final_if_unknown_master(&c->topo, rc);
      /* refusals and redirections ran nothing */
      q->call->transient = transport_failure(rc) ||
                           (q->step == RLOCK__STEP_RETRY && rc == q->rc);
      break;
    }
    /* Asked before borrowing: the count may need the pool's connection. */
    q->wait_n =
        q->call->sync && c->cfg.sync_replicas ? rlock__node_replicas(node) : 0;
    q->wait_ms = q->wait_n > 0 ? c->cfg.replica_sync_timeout_ms : 0;
    rlock__conn *conn;
    if ((rc = q->wait_n < 0
                  ? rlock_error_last()->code
                  : rlock__pool_get(&node->pool, &conn)) != RLOCK_OK) {
      if (rlock__req_retry_unsent(&c->topo, q, rc, deadline_us))
        continue;
      rlock__req_final_if_unknown_master(&c->topo, rc);
      q->call->transient = transport_failure(rc);
      break;
    }
    int unsent;
    rc = converse(conn, q, &unsent);
    rlock__saved_error saved;
    int restore = 0;
    if (rc == RLOCK_OK && q->step == RLOCK__STEP_DONE) {
      q->call->served_by = node->where;
      q->call->replicas = q->wait_n;
      q->call->acked = q->acked;
      if (q->rc == RLOCK_OK && q->call->then != NULL)
        restore = then_send(conn, q, &saved);
    }
    rlock__pool_put(&node->pool, conn);
    if (restore)
      rlock__error_restore(&saved);
    if (rc != RLOCK_OK) {
      q->call->in_flight = !unsent; /* a script may have run; never resend */
      break;
    }
    if (q->step == RLOCK__STEP_DONE) {
      if (q->wait_n > 0 && q->acked != q->wait_n)
        rlock__node_replicas_stale(node); /* one left or came: ask again */
      return q->rc;
    }
  }
  q->rc = rc;
  return rc;
}

int rlock__call_run_until(rlock_client *c, rlock__call *call,
                          int64_t deadline_us, rlock__reply **out) {
  int64_t floor = rlock__deadline_after_ms(c->cfg.connect_timeout_ms +
                                           c->cfg.command_timeout_ms);
  rlock__req q;
  rlock__req_init(&q, call);
  int rc = rlock__req_run(
      c, &q, rlock__bound_clip(deadline_us > floor ? deadline_us : floor));
  *out = rc == RLOCK_OK ? q.reply : NULL;
  rlock__call_clear(call);
  return rc;
}

int rlock__call_run(rlock_client *c, rlock__call *call, rlock__reply **out) {
  return rlock__call_run_until(c, call, 0, out);
}

int64_t rlock__call_granted_from(const rlock__call *call) {
  if (call->stamped_us != 0 && call->stamped_us < call->sent_us)
    return call->stamped_us;
  return call->sent_us;
}

const char *rlock__publish_cmd(rlock_client *c) {
  return rlock__topo_sharded(&c->topo) ? "SPUBLISH" : "PUBLISH";
}
