/*
 * cmd.c - the command layer: building calls, the request state machine,
 * the error rule, and the blocking driver.
 */
#include "cmd.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    const char **kv = malloc((size_t)cap * sizeof *kv);
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
  rlock__call_arg(call, rlock__call_fmt(call, "%lld", (long long)v));
}

void rlock__call_clear(rlock__call *call) {
  if (call->kv != call->small)
    free(call->kv);
  call->kv = call->small;
  call->cap = RLOCK__CALL_SMALL;
  call->n = call->nkeys = 0;
}

const char *rlock__call_route_key(const rlock__call *call) {
  return call->nkeys > 0 ? call->kv[0] : NULL;
}

/* ---- the error rule ---------------------------------------------------- */

static int starts(const rlock__reply *r, const char *prefix) {
  return strncmp(r->str, prefix, strlen(prefix)) == 0;
}

int rlock__error_status(const char *where, const rlock__reply *err) {
  int code = RLOCK_ESERVER;
  /* Redis puts WRONGTYPE first; a script's error may follow "ERR ...". */
  if (strstr(err->str, "WRONGTYPE") != NULL)
    code = RLOCK_EWRONGTYPE;
  else if (starts(err, "NOAUTH") || starts(err, "WRONGPASS") ||
           starts(err, "NOPERM"))
    code = RLOCK_EAUTH;
  return rlock__err(code, "redis %s: %s", where, err->str);
}

/* ---- requests ---------------------------------------------------------- */

void rlock__req_init(rlock__req *q, rlock__call *call) {
  *q = (rlock__req){.call = call, .rc = RLOCK_OK};
}

long rlock__req_encode(rlock__req *q, char **buf) {
  rlock__call *call = q->call;
  if (call->failed)
    return rlock__err(RLOCK_EINVAL, "a command was too large to build"), -1;
  int head = call->script ? 3 : 1;
  int argc = head + call->n;
  const char *small_argv[RLOCK__CALL_SMALL + 3];
  size_t small_lens[RLOCK__CALL_SMALL + 3];
  const char **argv = small_argv;
  size_t *lens = small_lens;
  if (argc > RLOCK__CALL_SMALL + 3) {
    argv = malloc((size_t)argc * sizeof *argv);
    lens = malloc((size_t)argc * sizeof *lens);
  }
  long len = -1;
  if (argv == NULL || lens == NULL)
    goto out;
  char nk[16];
  if (call->script) {
    snprintf(nk, sizeof nk, "%d", call->nkeys);
    argv[0] = q->eval ? "EVAL" : "EVALSHA";
    argv[1] = q->eval ? call->script->text : call->script->sha;
    lens[1] = q->eval ? call->script->len : 40;
    argv[2] = nk;
    lens[2] = strlen(nk);
  } else {
    argv[0] = call->word;
  }
  lens[0] = strlen(argv[0]);
  for (int i = 0; i < call->n; i++) {
    argv[head + i] = call->kv[i];
    lens[head + i] = strlen(call->kv[i]);
  }
  len = rlock__conn_format(buf, argc, argv, lens);
out:
  if (argv != small_argv) {
    free(argv);
    free(lens);
  }
  if (len < 0)
    rlock__err(RLOCK_ENOMEM, "out of memory encoding a command");
  return len;
}

rlock__step rlock__req_feed(rlock__req *q, const char *where,
                            rlock__reply *r) {
  if (r->type == RLOCK__R_ERROR && q->call->script != NULL && !q->eval &&
      starts(r, "NOSCRIPT")) { /* refused before running: safe to resend */
    rlock__reply_free(r);
    q->eval = 1;
    return RLOCK__STEP_RESEND;
  }
  if (r->type == RLOCK__R_ERROR) {
    q->rc = rlock__error_status(where, r);
    rlock__reply_free(r);
    return RLOCK__STEP_DONE;
  }
  q->reply = r;
  q->rc = RLOCK_OK;
  return RLOCK__STEP_DONE;
}

/* ---- the blocking driver ----------------------------------------------- */

rlock__pool *rlock__route(rlock_client *c, const char *key) {
  (void)key; /* one server today; Cluster routes by slot here */
  return &c->pool;
}

/* TEMPORARY until the reader builds rlock__reply trees itself. */
static rlock__reply *from_hiredis(const redisReply *h) {
  rlock__reply *r = calloc(1, sizeof *r);
  if (r == NULL)
    return NULL;
  switch (h->type) {
  case REDIS_REPLY_INTEGER: r->type = RLOCK__R_INT; r->integer = h->integer; return r;
  case REDIS_REPLY_NIL: r->type = RLOCK__R_NIL; return r;
  case REDIS_REPLY_ARRAY:
    r->type = RLOCK__R_ARRAY;
    r->elem = calloc(h->elements ? h->elements : 1, sizeof *r->elem);
    if (r->elem == NULL) { free(r); return NULL; }
    for (size_t i = 0; i < h->elements; i++) {
      if ((r->elem[i] = from_hiredis(h->element[i])) == NULL) {
        rlock__reply_free(r);
        return NULL;
      }
      r->n++;
    }
    return r;
  default:
    r->type = h->type == REDIS_REPLY_STATUS ? RLOCK__R_STATUS
              : h->type == REDIS_REPLY_ERROR ? RLOCK__R_ERROR : RLOCK__R_STR;
    r->str = rlock__strndup(h->str, h->len);
    r->len = h->len;
    if (r->str == NULL) { free(r); return NULL; }
    return r;
  }
}

/* Send the request's next command and read its reply on `conn`, within
 * one command timeout. */
static int exchange(rlock__conn *conn, rlock__req *q, rlock__reply **r) {
  char *buf;
  long len = rlock__req_encode(q, &buf);
  if (len < 0)
    return rlock_error_last()->code;
  conn->io_deadline_us = rlock__deadline_after_ms(conn->timeout_ms);
  int rc = rlock__conn_send(conn, buf, (size_t)len);
  free(buf);
  redisReply *h = NULL;
  if (rc == RLOCK_OK)
    rc = rlock__conn_recv(conn, &h);
  conn->io_deadline_us = 0;
  if (rc == RLOCK_OK && (*r = from_hiredis(h)) == NULL)
    rc = rlock__err(RLOCK_ENOMEM, "out of memory");
  if (h != NULL)
    freeReplyObject(h);
  return rc;
}

int rlock__conn_take(rlock__conn *conn, rlock__reply **r) {
  redisReply *h = NULL;
  *r = NULL;
  int rc = rlock__conn_take_reply(conn, &h);
  if (rc == RLOCK_OK && h != NULL && (*r = from_hiredis(h)) == NULL)
    rc = rlock__err(RLOCK_ENOMEM, "out of memory");
  if (h != NULL)
    freeReplyObject(h);
  return rc;
}

int rlock__call_run(rlock_client *c, rlock__call *call, rlock__reply **out) {
  rlock__req q;
  rlock__req_init(&q, call);
  *out = NULL;
  rlock__pool *pool = rlock__route(c, rlock__call_route_key(call));
  rlock__conn *conn;
  int rc = rlock__pool_get(pool, &conn);
  if (rc != RLOCK_OK) {
    rlock__call_clear(call);
    return rc;
  }
  for (;;) {
    rlock__reply *r;
    if ((rc = exchange(conn, &q, &r)) != RLOCK_OK)
      break;
    if (rlock__req_feed(&q, conn->where, r) == RLOCK__STEP_DONE) {
      rc = q.rc;
      *out = q.reply;
      break;
    }
  }
  rlock__pool_put(pool, conn);
  rlock__call_clear(call);
  return rc;
}

const char *rlock__publish_cmd(const rlock_client *c) {
  (void)c; /* SPUBLISH comes with sharded pub/sub in a cluster */
  return "PUBLISH";
}
