/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * req.c - fuzz_req: the request state machine (src/lib/cmd.h:
 * rlock__req_init / rlock__req_encode / rlock__req_feed) answered by a
 * "server" that says anything.
 *
 * Input: one byte of options (bit 0: a script call, else a plain
 * command; bit 1: the call is confirmed with WAIT, bits 4-5 its replica
 * count; bit 2: it starts after an ASK, with ASKING; bit 3: more
 * arguments than a call holds inline; bit 6: a call that failed while
 * being built), then the replies, in RESP, parsed by the reply reader.
 * The driver does what rlock__req_run and its converse() do, without a
 * network: send what rlock__req_encode asks for (checked by reading it
 * back), feed each reply, follow MOVED and ASK to "another node" (at most
 * RLOCK__MAX_REDIRECTS), retry a RETRY a few times, and when the replies
 * run out treat it as the connection failing.
 *
 * Checked: the encoded bytes are the commands asked for; each step agrees
 * with what the reply said, by a reference reading of it: the error rule
 * (rlock__error_status), NOSCRIPT, the transient refusals, and MOVED/ASK
 * "<slot> <host:port>" parsed strictly; WAIT's count lands in acked; a
 * request done with RLOCK_OK has a reply that is not an error, and
 * everything is freed.
 */
#include <ctype.h>

#include "cmd.h"
#include "fuzz.h"
#include "reader.h"

#define WHERE "10.0.0.7:7002"
#define MAX_REPLIES 1000
#define MAX_RETRIES 4

/* ---- reading what was sent back --------------------------------------- */

/* The next command in the encoded bytes: an array of strings whose first
 * is `word`; returns it (the caller frees it). */
static rlock__reply *sent(rlock__reader *rd, const char *word) {
  rlock__reply *r = NULL;
  FUZZ_CHECK(rlock__reader_get(rd, &r) == RLOCK__READ_OK && r != NULL);
  FUZZ_CHECK(r->type == RLOCK__R_ARRAY && r->n >= 1);
  for (size_t i = 0; i < r->n; i++)
    FUZZ_CHECK(r->elem[i]->type == RLOCK__R_STR);
  FUZZ_CHECK(rlock__reply_is(r->elem[0], word));
  return r;
}

/* `buf` holds [ASKING] the call [WAIT n ms], as the request stands. */
static void check_encoded(const rlock__req *q, int asking, const char *buf,
                          long len) {
  const rlock__call *call = q->call;
  rlock__reader *rd = rlock__reader_new();
  FUZZ_CHECK(rd != NULL);
  FUZZ_CHECK(rlock__reader_feed(rd, buf, (size_t)len) == RLOCK__READ_OK);
  if (asking)
    rlock__reply_free(sent(rd, "ASKING"));
  const char *word = call->script == NULL ? call->word
                     : q->eval            ? "EVAL"
                                          : "EVALSHA";
  rlock__reply *r = sent(rd, word);
  size_t head = call->script ? 3 : 1;
  FUZZ_CHECK(r->n == head + (size_t)call->n);
  if (call->script) {
    const char *body = q->eval ? call->script->text : call->script->sha;
    FUZZ_CHECK(r->elem[1]->len == (q->eval ? call->script->len : 40) &&
               memcmp(r->elem[1]->str, body, r->elem[1]->len) == 0);
    char nk[16];
    snprintf(nk, sizeof nk, "%d", call->nkeys);
    FUZZ_CHECK(rlock__reply_is(r->elem[2], nk));
  }
  for (int i = 0; i < call->n; i++)
    FUZZ_CHECK(rlock__reply_is(r->elem[head + (size_t)i], call->kv[i]));
  rlock__reply_free(r);
  if (q->wait_n > 0) {
    r = sent(rd, "WAIT");
    char n[16], ms[24];
    snprintf(n, sizeof n, "%d", q->wait_n);
    snprintf(ms, sizeof ms, "%lld", (long long)q->wait_ms);
    FUZZ_CHECK(r->n == 3 && rlock__reply_is(r->elem[1], n) &&
               rlock__reply_is(r->elem[2], ms));
    rlock__reply_free(r);
  }
  FUZZ_CHECK(rlock__reader_get(rd, &r) == RLOCK__READ_OK && r == NULL);
  FUZZ_CHECK(rlock__reader_buffered(rd) == 0);
  rlock__reader_free(rd);
}

/* ---- the reference reading of an error reply --------------------------- */

static int starts(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* "MOVED <slot> <addr>" / "ASK <slot> <addr>": the slot in decimal
 * digits below 16384, one space, an address of 1..127 bytes. */
static rlock__step redirect(const char *s, unsigned *slot, const char **addr) {
  rlock__step kind = starts(s, "MOVED ") ? RLOCK__STEP_MOVED
                     : starts(s, "ASK ") ? RLOCK__STEP_ASK
                                         : RLOCK__STEP_DONE;
  if (kind == RLOCK__STEP_DONE)
    return kind;
  const char *p = strchr(s, ' ') + 1;
  unsigned long v = 0;
  if (!isdigit((unsigned char)*p))
    return RLOCK__STEP_DONE;
  for (; isdigit((unsigned char)*p); p++)
    if ((v = v * 10 + (unsigned long)(*p - '0')) >= 16384)
      return RLOCK__STEP_DONE;
  if (*p != ' ' || p[1] == '\0' || strlen(p + 1) >= 128)
    return RLOCK__STEP_DONE;
  *slot = (unsigned)v;
  *addr = p + 1;
  return kind;
}

/* The status code the error rule gives `s`. */
static int error_code(const char *s) {
  if (strstr(s, "WRONGTYPE") != NULL)
    return RLOCK_EWRONGTYPE;
  if (strstr(s, "NON_REENTRANT_REACQUIRE") != NULL)
    return RLOCK_EHELD;
  if (starts(s, "NOAUTH") || starts(s, "WRONGPASS") || starts(s, "NOPERM") ||
      strstr(s, "The user executing the script can't") != NULL ||
      strstr(s, "ACL failure in script") != NULL) /* ACL inside a script */
    return RLOCK_EAUTH;
  return RLOCK_ESERVER;
}

static int transient(const char *s) {
  return starts(s, "TRYAGAIN") || starts(s, "CLUSTERDOWN") ||
         starts(s, "LOADING") || starts(s, "READONLY") ||
         starts(s, "MASTERDOWN");
}

/* What the command's own reply `text` (an error's, or NULL for any other
 * reply) should make of the request. */
static void check_step(const rlock__req *q, rlock__step step, int was_eval,
                       const char *text) {
  if (text == NULL) { /* a reply that is not an error */
    FUZZ_CHECK(step == RLOCK__STEP_DONE && q->rc == RLOCK_OK);
    return;
  }
  unsigned slot = 0;
  const char *addr = NULL;
  rlock__step want = redirect(text, &slot, &addr);
  if (q->call->script != NULL && !was_eval && starts(text, "NOSCRIPT")) {
    FUZZ_CHECK(step == RLOCK__STEP_RESEND && q->eval);
    return;
  }
  FUZZ_CHECK(q->rc == error_code(text));
  FUZZ_CHECK(strstr(rlock_error_last()->message, WHERE) != NULL);
  if (want != RLOCK__STEP_DONE) {
    FUZZ_CHECK(step == want && q->slot == slot && strcmp(q->addr, addr) == 0);
    return;
  }
  FUZZ_CHECK(step == (transient(text) ? RLOCK__STEP_RETRY : RLOCK__STEP_DONE));
}

/* ---- the driver ------------------------------------------------------- */

typedef struct server {
  rlock__reader *rd;
  int n; /* replies handed out */
} server;

/* The next reply, or NULL: the connection failed. */
static rlock__reply *next_reply(server *s) {
  rlock__reply *r = NULL;
  if (s->n == MAX_REPLIES || rlock__reader_get(s->rd, &r) != RLOCK__READ_OK)
    return NULL;
  s->n += r != NULL;
  return r;
}

/* converse(): send, then feed replies until another node is needed or
 * the request is done. 0, or -1 when the connection failed. */
static int converse(rlock__req *q, server *s) {
  rlock__step step = RLOCK__STEP_RESEND;
  while (step == RLOCK__STEP_RESEND || step == RLOCK__STEP_MORE) {
    if (step == RLOCK__STEP_RESEND) {
      int asking = q->asking;
      char *buf = NULL;
      long len = rlock__req_encode(q, &buf);
      if (q->call->failed) {
        FUZZ_CHECK(len == -1 && rlock_error_last()->code == RLOCK_EINVAL);
        return -1;
      }
      FUZZ_CHECK(len > 0 && buf != NULL);
      FUZZ_CHECK(q->asking == 0 && q->asking_reply == asking);
      FUZZ_CHECK(q->wait_due == (q->wait_n > 0));
      check_encoded(q, asking, buf, len);
      free(buf);
    }
    rlock__reply *r = next_reply(s);
    if (r == NULL)
      return -1;
    /* Which reply this is, as the request should see it. */
    int asking_ok = q->asking_reply && r->type != RLOCK__R_ERROR;
    int wait_reply = !asking_ok && q->wait_due == 2;
    int was_eval = q->eval, wait_due = q->wait_due;
    int64_t acked = r->type == RLOCK__R_INT ? (int)r->integer : 0;
    char *text = r->type == RLOCK__R_ERROR ? rlock__strdup(r->str) : NULL;
    FUZZ_CHECK(r->type != RLOCK__R_ERROR || text != NULL);
    rlock__reply *value = r->type == RLOCK__R_ERROR ? NULL : r;
    step = rlock__req_feed(q, WHERE, r);
    FUZZ_CHECK(step == q->step && q->asking_reply == 0);
    if (asking_ok) {
      FUZZ_CHECK(step == RLOCK__STEP_MORE);
    } else if (wait_reply) {
      FUZZ_CHECK(q->acked == acked && q->wait_due == 0);
      FUZZ_CHECK(step == q->deferred);
    } else {
      if (wait_due == 1) { /* WAIT's reply comes next, whatever this was */
        FUZZ_CHECK(step == RLOCK__STEP_MORE && q->wait_due == 2);
        step = q->deferred;
      }
      check_step(q, step, was_eval, text);
      FUZZ_CHECK(q->reply == value);
      step = q->step;
    }
    free(text);
  }
  return 0;
}

/* A call as the lock kinds build them. */
static void build(rlock__call *call, unsigned opts) {
  if (opts & 1) {
    rlock__call_script(call, &rlock__script_lock_acquire);
    rlock__call_key(call, "{orders}");
    rlock__call_num(call, 30000);
    rlock__call_arg(call, "6f1c2a9e-3f4b-4a51-9c1e-2b7d8e9f0a1b:1");
  } else {
    rlock__call_cmd(call, "HGET");
    rlock__call_key(call, "orders");
    rlock__call_arg(call, "owner");
  }
  if (opts & 8) /* past RLOCK__CALL_SMALL: kv grows onto the heap */
    for (int i = 0; i < 40; i++)
      rlock__call_num(call, i);
  if (opts & 64) { /* more than the call's store holds */
    char big[RLOCK__CALL_STORE + 1];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    rlock__call_arg(call, rlock__call_fmt(call, "%s", big));
  }
  call->sync = (opts & 2) != 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  unsigned opts = data[0];
  server s = {rlock__reader_new(), 0};
  FUZZ_CHECK(s.rd != NULL);
  if (rlock__reader_feed(s.rd, (const char *)data + 1, size - 1) !=
      RLOCK__READ_OK) {
    rlock__reader_free(s.rd);
    return 0;
  }
  rlock__call call;
  build(&call, opts);
  rlock__req q;
  rlock__req_init(&q, &call);
  FUZZ_CHECK(q.step == RLOCK__STEP_ROUTE && q.acked == -1 && q.reply == NULL);
  /* What rlock__req_run sets from the node before each conversation. */
  q.wait_n = call.sync ? 1 + (int)((opts >> 4) & 3) : 0;
  q.wait_ms = q.wait_n > 0 ? 250 : 0;
  q.asking = (opts & 4) != 0;
  int retries = 0;
  while (converse(&q, &s) == 0) {
    if (q.step == RLOCK__STEP_DONE) {
      FUZZ_CHECK((q.rc == RLOCK_OK) == (q.reply != NULL));
      FUZZ_CHECK(q.reply == NULL || q.reply->type != RLOCK__R_ERROR);
      FUZZ_CHECK(q.wait_due == 0 && q.asking == 0);
      break;
    }
    FUZZ_CHECK(q.rc != RLOCK_OK && q.reply == NULL);
    if (q.step == RLOCK__STEP_RETRY) { /* next_node(): route again */
      if (++retries > MAX_RETRIES)
        break;
      q.redirects = 0;
      continue;
    }
    FUZZ_CHECK(q.step == RLOCK__STEP_MOVED || q.step == RLOCK__STEP_ASK);
    FUZZ_CHECK(q.slot < 16384 && q.addr[0] != '\0');
    if (++q.redirects > RLOCK__MAX_REDIRECTS)
      break;
    q.asking = q.step == RLOCK__STEP_ASK;
  }
  rlock__reply_free(q.reply); /* lost_wait_reply() keeps or drops it */
  rlock__call_clear(&call);
  rlock__reader_free(s.rd);
  return 0;
}
