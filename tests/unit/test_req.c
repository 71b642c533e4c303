/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: the request state machine (cmd.h: rlock__req_init,
 * rlock__req_encode, rlock__req_feed) fed replies by hand, with no
 * server: redirections read strictly, NOSCRIPT, ASKING and WAIT. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "reader.h"

#define WHERE "127.0.0.1:7000"

static rlock__reply *reply(rlock__rtype type, const char *text) {
  rlock__reply *r = calloc(1, sizeof *r);
  assert_non_null(r);
  r->type = type;
  if (text != NULL) {
    r->str = strdup(text);
    assert_non_null(r->str);
    r->len = strlen(text);
  }
  return r;
}

static rlock__reply *err_reply(const char *text) {
  return reply(RLOCK__R_ERROR, text);
}

static rlock__reply *integer(int64_t v) {
  rlock__reply *r = reply(RLOCK__R_INT, NULL);
  r->integer = v;
  return r;
}

/* A reply reader fed what the request sends next (encoded): its
 * commands read back as arrays. The caller frees it. */
static rlock__reader *sent_reader(rlock__req *q) {
  char *buf = NULL;
  long len = rlock__req_encode(q, &buf);
  assert_true(len > 0);
  rlock__reader *rd = rlock__reader_new();
  assert_non_null(rd);
  assert_int_equal(rlock__reader_feed(rd, buf, (size_t)len), RLOCK__READ_OK);
  free(buf);
  return rd;
}

/* Encode what the request sends next: `count` commands, the first of
 * them `first` (read back with the reply reader). */
static void expect_sent(rlock__req *q, const char *first, int count) {
  rlock__reader *rd = sent_reader(q);
  for (int i = 0;; i++) {
    rlock__reply *r;
    assert_int_equal(rlock__reader_get(rd, &r), RLOCK__READ_OK);
    if (r == NULL) {
      assert_int_equal(i, count);
      break;
    }
    assert_int_equal(r->type, RLOCK__R_ARRAY);
    if (i == 0 && !rlock__reply_is(r->elem[0], first))
      fail_msg("sent %s first, expected %s", r->elem[0]->str, first);
    rlock__reply_free(r);
  }
  rlock__reader_free(rd);
}

static void start_hget(rlock__call *call, rlock__req *q) {
  rlock__call_cmd(call, "HGET");
  rlock__call_key(call, "orders");
  rlock__call_arg(call, "owner");
  rlock__req_init(q, call);
}

/* A lock acquisition (sync: a write to confirm) whose request is to WAIT
 * for one replica for 100 ms. */
static void start_acquire_wait(rlock__call *call, rlock__req *q, int sync) {
  rlock__call_script(call, &rlock__script_lock_acquire);
  rlock__call_key(call, "orders");
  rlock__call_num(call, 30000);
  rlock__call_arg(call, "owner:1");
  call->sync = sync;
  rlock__req_init(q, call);
  q->wait_n = 1;
  q->wait_ms = 100;
}

/* An HGET sent and answered with the error `text`: the step it took. */
static rlock__step hget_answered(rlock__call *call, rlock__req *q,
                                 const char *text) {
  start_hget(call, q);
  expect_sent(q, "HGET", 1);
  return rlock__req_feed(q, WHERE, err_reply(text));
}

/* A redirection's slot is decimal digits below 16384, then one space and
 * an address. Found by fuzz_req (fuzz/corpus/req/crash_moved_*): strtoul
 * also skipped blanks and took a sign, so "MOVED  host:port" (no slot)
 * moved slot 0 there, as did "MOVED -0 host:port". */
static void test_redirect_parsing(void **state) {
  (void)state;
  static const struct {
    const char *text;
    rlock__step step;
    unsigned slot;
    const char *addr;
  } ok[] = {
      {"MOVED 3999 127.0.0.1:6381", RLOCK__STEP_MOVED, 3999, "127.0.0.1:6381"},
      {"ASK 0 [::1]:7000", RLOCK__STEP_ASK, 0, "[::1]:7000"},
      {"MOVED 16383 h:1", RLOCK__STEP_MOVED, 16383, "h:1"},
      {"MOVED 007 h:1", RLOCK__STEP_MOVED, 7, "h:1"},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    rlock__call call;
    rlock__req q;
    assert_int_equal(hget_answered(&call, &q, ok[i].text), ok[i].step);
    assert_int_equal(q.slot, ok[i].slot);
    assert_string_equal(q.addr, ok[i].addr);
    assert_int_equal(q.rc, RLOCK_ESERVER); /* if it cannot be followed */
    rlock__call_clear(&call);
  }
  char long_addr[160] = "MOVED 1 ";
  memset(long_addr + 8, 'h', 128);
  const char *bad[] = {
      "MOVED  Arequi", "MOVED -0 10.0.0.8:7000",
      "MOVED +12 h:1", "MOVED \t12 h:1",
      "ASK  12 h:1",   "MOVED 16384 h:1",
      "MOVED 3999",    "MOVED 3999 ",
      "ASK x h:1",     "MOVED 99999999999999999999 h:1",
      long_addr,
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    rlock__call call;
    rlock__req q;
    rlock__step step = hget_answered(&call, &q, bad[i]);
    if (step != RLOCK__STEP_DONE)
      fail_msg("'%s' was followed (step %d, slot %u, addr '%s')", bad[i], step,
               q.slot, q.addr);
    assert_int_equal(q.rc, RLOCK_ESERVER);
    assert_null(q.reply);
    assert_non_null(strstr(rlock_error_last()->message, bad[i]));
    rlock__call_clear(&call);
  }
}

/* The error rule, and refusals that pass. */
static void test_errors(void **state) {
  (void)state;
  static const struct {
    const char *text;
    rlock__step step;
    int rc;
  } cases[] = {
      {"WRONGTYPE Operation against a key", RLOCK__STEP_DONE, RLOCK_EWRONGTYPE},
      {"ERR Error running script: WRONGTYPE x", RLOCK__STEP_DONE,
       RLOCK_EWRONGTYPE},
      {"NON_REENTRANT_REACQUIRE", RLOCK__STEP_DONE, RLOCK_EHELD},
      {"ERR user_script:1: NON_REENTRANT_REACQUIRE script: x", RLOCK__STEP_DONE,
       RLOCK_EHELD},
      {"NOAUTH Authentication required.", RLOCK__STEP_DONE, RLOCK_EAUTH},
      {"NOPERM this user has no permissions", RLOCK__STEP_DONE, RLOCK_EAUTH},
      {"TRYAGAIN Multiple keys request", RLOCK__STEP_RETRY, RLOCK_ESERVER},
      {"CLUSTERDOWN The cluster is down", RLOCK__STEP_RETRY, RLOCK_ESERVER},
      {"NOSCRIPT not a script call", RLOCK__STEP_DONE, RLOCK_ESERVER},
      {"ERR unknown command", RLOCK__STEP_DONE, RLOCK_ESERVER},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    rlock__call call;
    rlock__req q;
    assert_int_equal(hget_answered(&call, &q, cases[i].text), cases[i].step);
    assert_int_equal(q.rc, cases[i].rc);
    rlock__call_clear(&call);
  }
}

/* NOSCRIPT: EVAL once; WAIT's reply read after the command's, whatever
 * the command's was; ASKING's +OK skipped. */
static void test_noscript_wait_asking(void **state) {
  (void)state;
  rlock__call call;
  rlock__req q;
  start_acquire_wait(&call, &q, 0);
  q.asking = 1;
  expect_sent(&q, "ASKING", 3);
  assert_int_equal(rlock__req_feed(&q, WHERE, reply(RLOCK__R_STATUS, "OK")),
                   RLOCK__STEP_MORE);
  assert_int_equal(rlock__req_feed(&q, WHERE, err_reply("NOSCRIPT No script")),
                   RLOCK__STEP_MORE); /* WAIT's reply first */
  assert_int_equal(rlock__req_feed(&q, WHERE, integer(0)), RLOCK__STEP_RESEND);
  expect_sent(&q, "EVAL", 2);
  assert_int_equal(rlock__req_feed(&q, WHERE, reply(RLOCK__R_NIL, NULL)),
                   RLOCK__STEP_MORE);
  assert_int_equal(rlock__req_feed(&q, WHERE, integer(1)), RLOCK__STEP_DONE);
  assert_int_equal(q.rc, RLOCK_OK);
  assert_int_equal(q.acked, 1);
  assert_non_null(q.reply);
  assert_int_equal(q.reply->type, RLOCK__R_NIL);
  rlock__reply_free(q.reply);
  rlock__call_clear(&call);
}

/* WAIT answered with an error (-UNBLOCKED: the master was made a replica
 * while WAIT was blocked) confirmed nothing: acked is 0, so the write is
 * unconfirmed, and the command's own answer stands. */
static void test_wait_error_confirms_nothing(void **state) {
  (void)state;
  rlock__call call;
  rlock__req q;
  start_acquire_wait(&call, &q, 1);
  expect_sent(&q, "EVALSHA", 2);
  assert_int_equal(rlock__req_feed(&q, WHERE, reply(RLOCK__R_NIL, NULL)),
                   RLOCK__STEP_MORE);
  assert_int_equal(
      rlock__req_feed(&q, WHERE,
                      err_reply("UNBLOCKED force unblock from blocking "
                                "operation, instance state changed (master "
                                "-> replica?)")),
      RLOCK__STEP_DONE);
  assert_int_equal(q.rc, RLOCK_OK);
  assert_int_equal(q.acked, 0);
  call.replicas = q.wait_n;
  call.acked = q.acked;
  assert_true(rlock__call_unconfirmed(&call));
  rlock__reply_free(q.reply);
  rlock__call_clear(&call);
}

/* An argument of raw bytes (a permit id's 16, which may hold NUL) goes
 * out whole, beside C-string arguments, as EVALSHA and again as EVAL; a
 * third one, or one past the call's store, fails the call. */
static void test_bytes_argument(void **state) {
  (void)state;
  static const unsigned char id[16] = {
      0x00, 0x01, 0xff, 0x00, 'a', '\r', '\n', 0x80, 0, 0, 0, 0, 0, 0, 0, 7};
  rlock__call call;
  rlock__req q;
  rlock__call_script(&call, &rlock__script_psem_release);
  rlock__call_key(&call, "orders");
  rlock__call_num(&call, 1700000000000);
  rlock__call_bytes(&call, id, sizeof id);
  rlock__call_arg(&call, "PUBLISH");
  rlock__req_init(&q, &call);
  for (int pass = 0; pass < 2; pass++) {
    rlock__reader *rd = sent_reader(&q);
    rlock__reply *r;
    assert_int_equal(rlock__reader_get(rd, &r), RLOCK__READ_OK);
    assert_non_null(r);
    assert_int_equal(r->n, 7); /* verb, body, 1, key, now, id, PUBLISH */
    assert_true(rlock__reply_is(r->elem[0], pass == 0 ? "EVALSHA" : "EVAL"));
    assert_int_equal(r->elem[5]->len, sizeof id);
    assert_memory_equal(r->elem[5]->str, id, sizeof id);
    assert_true(rlock__reply_is(r->elem[6], "PUBLISH"));
    rlock__reply_free(r);
    rlock__reader_free(rd);
    if (pass == 0)
      assert_int_equal(
          rlock__req_feed(&q, WHERE, err_reply("NOSCRIPT No script")),
          RLOCK__STEP_RESEND);
  }
  rlock__call_clear(&call);
  rlock__call_script(&call, &rlock__script_psem_release);
  rlock__call_key(&call, "orders");
  for (int i = 0; i < RLOCK__CALL_BYTES; i++)
    rlock__call_bytes(&call, id, sizeof id);
  assert_false(call.failed);
  rlock__call_bytes(&call, id, sizeof id);
  assert_true(call.failed);
  rlock__call_clear(&call);
  rlock__call_script(&call, &rlock__script_psem_release);
  static char big[RLOCK__CALL_STORE];
  rlock__call_bytes(&call, big, sizeof big);
  assert_true(call.failed);
  rlock__call_clear(&call);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_redirect_parsing),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_noscript_wait_asking),
      cmocka_unit_test(test_wait_error_confirms_nothing),
      cmocka_unit_test(test_bytes_argument),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
