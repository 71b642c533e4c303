/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: the RESP encoder of resp.h (rlock__resp_*, rlock__resp_format),
 * rlock__req_encode_to into a reused buffer, and the reply nodes a thread
 * keeps for reuse (reply.h). The encoder must write exactly what hiredis's
 * redisFormatCommandArgv writes, fail cleanly when memory runs out, and a
 * warm buffer or a warm thread must allocate nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "alloc.h"
#include "cmd.h"
#include "resp.h"
#include "reader.h"
#include "reply.h"

/* The same command through hiredis and through ours, byte for byte, with
 * the lengths given and (when the arguments have no NUL) without. */
static void same_as_hiredis(int argc, const char **argv, const size_t *lens,
                            int nul_free) {
  char *want;
  int wlen = redisFormatCommandArgv(&want, argc, argv, lens);
  assert_true(wlen > 0);
  rlock__buf b = {0};
  assert_int_equal(rlock__resp_command(&b, argc, argv, lens), 0);
  assert_int_equal(b.len, (size_t)wlen);
  assert_memory_equal(b.p, want, (size_t)wlen);
  char *got;
  assert_int_equal(rlock__resp_format(&got, argc, argv, lens), wlen);
  assert_memory_equal(got, want, (size_t)wlen);
  free(got);
  if (nul_free) {
    b.len = 0;
    assert_int_equal(rlock__resp_command(&b, argc, argv, NULL), 0);
    assert_int_equal(b.len, (size_t)wlen);
    assert_memory_equal(b.p, want, (size_t)wlen);
  }
  free(b.p);
  free(want);
}

static void encodes_like_hiredis(void **state) {
  (void)state;
  const char *set[] = {"SET", "key", "value"};
  same_as_hiredis(3, set, NULL, 1);
  const char *empty[] = {"ECHO", ""};
  same_as_hiredis(2, empty, NULL, 1);
  same_as_hiredis(0, NULL, NULL, 1);
  /* Binary: NULs, CR and LF inside arguments. */
  const char *bin[] = {"SET", "a\0b", "\r\n$3\r\n"};
  size_t lens[] = {3, 3, 7};
  same_as_hiredis(3, bin, lens, 0);
  /* Long arguments (more than the first 512 bytes), many arguments. */
  char *big = malloc(100001);
  assert_non_null(big);
  memset(big, 'x', 100000);
  big[100000] = '\0';
  const char *argv[300];
  argv[0] = "DEL";
  for (int i = 1; i < 300; i++)
    argv[i] = i % 7 == 0 ? big : "k";
  same_as_hiredis(300, argv, NULL, 1);
  free(big);
}

/* Commands appended one after the other: a pipeline. */
static void appends(void **state) {
  (void)state;
  rlock__buf b = {0};
  const char *ping[] = {"PING"};
  assert_int_equal(rlock__resp_command(&b, 1, ping, NULL), 0);
  assert_int_equal(rlock__resp_array(&b, 2), 0);
  assert_int_equal(rlock__resp_bulk(&b, "GET", 3), 0);
  assert_int_equal(rlock__resp_bulk(&b, "", 0), 0);
  const char want[] = "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$0\r\n\r\n";
  assert_int_equal(b.len, sizeof want - 1);
  assert_memory_equal(b.p, want, sizeof want - 1);
  free(b.p);
}

/* Out of memory: -1 and the buffer as it was. */
static void encode_nomem(void **state) {
  (void)state;
  rlock__buf b = {0};
  const char *set[] = {"SET", "key", "value"};
  rlock__alloc_fail_at(1, RLOCK__ALLOC_THIS_THREAD);
  assert_int_equal(rlock__resp_command(&b, 3, set, NULL), -1);
  assert_int_equal(rlock__resp_bulk(&b, "x", 1), -1);
  assert_int_equal(rlock__resp_array(&b, 1), -1);
  char *out = NULL;
  assert_int_equal(rlock__resp_format(&out, 3, set, NULL), -1);
  assert_null(out);
  rlock__alloc_fail_at(0, 0);
  assert_null(b.p);
  assert_int_equal(b.len, 0);
  assert_int_equal(b.cap, 0);
  /* Growing an existing buffer fails the same way. */
  assert_int_equal(rlock__resp_command(&b, 3, set, NULL), 0);
  size_t len = b.len;
  char *p = b.p;
  char big[600];
  memset(big, 'y', sizeof big);
  rlock__alloc_fail_at(1, RLOCK__ALLOC_THIS_THREAD);
  assert_int_equal(rlock__resp_bulk(&b, big, sizeof big), -1);
  rlock__alloc_fail_at(0, 0);
  assert_ptr_equal(b.p, p);
  assert_int_equal(b.len, len);
  free(b.p);
}

static const rlock__script script = {
    "test", "0123456789012345678901234567890123456789", "return 1", 8};

/* A script call with ASKING before and WAIT after: the exact bytes, the
 * same through rlock__req_encode (malloc'ed) and rlock__req_encode_to
 * (appended), and the state each success moves on. */
static void req_encode_to(void **state) {
  (void)state;
  rlock__call call;
  rlock__req q;
  rlock__call_script(&call, &script);
  rlock__call_key(&call, "orders");
  rlock__call_num(&call, 30000);
  rlock__call_arg(&call, "");
  rlock__req_init(&q, &call);
  q.asking = 1;
  q.wait_n = 2;
  q.wait_ms = 150;
  const char want[] = "*1\r\n$6\r\nASKING\r\n"
                      "*6\r\n$7\r\nEVALSHA\r\n"
                      "$40\r\n0123456789012345678901234567890123456789\r\n"
                      "$1\r\n1\r\n$6\r\norders\r\n$5\r\n30000\r\n$0\r\n\r\n"
                      "*3\r\n$4\r\nWAIT\r\n$1\r\n2\r\n$3\r\n150\r\n";
  rlock__req saved = q;
  char *buf;
  long len = rlock__req_encode(&q, &buf);
  assert_int_equal(len, sizeof want - 1);
  assert_memory_equal(buf, want, sizeof want - 1);
  free(buf);
  assert_int_equal(q.asking, 0);
  assert_int_equal(q.asking_reply, 1);
  assert_int_equal(q.wait_due, 1);

  /* Appended after what the buffer holds; EVAL once asked for. */
  q = saved;
  rlock__buf b = {0};
  assert_int_equal(rlock__resp_bulk(&b, "x", 1), 0);
  assert_int_equal(rlock__req_encode_to(&q, &b), sizeof want - 1);
  assert_memory_equal(b.p + 7, want, sizeof want - 1);
  q.eval = 1;
  b.len = 0;
  assert_true(rlock__req_encode_to(&q, &b) > 0);
  const char eval[] = "*6\r\n$4\r\nEVAL\r\n$8\r\nreturn 1\r\n$1\r\n1\r\n";
  assert_memory_equal(b.p, eval, sizeof eval - 1);

  /* Out of memory: -1, the buffer's length as it was, the request not
   * moved on (ASKING still to send). */
  q = saved;
  size_t cap = b.cap;
  b.len = cap - 10; /* the next bytes need more room */
  rlock__alloc_fail_at(1, RLOCK__ALLOC_THIS_THREAD);
  assert_int_equal(rlock__req_encode_to(&q, &b), -1);
  assert_int_equal(rlock__req_encode(&q, &buf), -1);
  rlock__alloc_fail_at(0, 0);
  assert_int_equal(rlock_error_last()->code, RLOCK_ENOMEM);
  assert_int_equal(b.len, cap - 10);
  assert_int_equal(q.asking, 1);
  assert_int_equal(q.asking_reply, 0);
  assert_int_equal(q.wait_due, 0);

  /* A warm buffer: no allocation at all. */
  b.len = 0;
  rlock__alloc_fail_at(1, RLOCK__ALLOC_THIS_THREAD);
  assert_int_equal(rlock__req_encode_to(&q, &b), sizeof want - 1);
  rlock__alloc_fail_at(0, 0);
  assert_int_equal(rlock__alloc_failed(), 0);
  free(b.p);

  /* A call that failed while being built is refused. */
  call.failed = 1;
  q = saved;
  b = (rlock__buf){0};
  assert_int_equal(rlock__req_encode_to(&q, &b), -1);
  assert_int_equal(rlock_error_last()->code, RLOCK_EINVAL);
  assert_int_equal(b.len, 0);
  rlock__call_clear(&call);
}

/* A freed node comes back zeroed from rlock__reply_new; a thread keeps at
 * most RLOCK__REPLY_SPARE of them. */
static void reply_spares(void **state) {
  (void)state;
  /* Start from a known count: take every spare there is. */
  rlock__reply *held[RLOCK__REPLY_SPARE * 2 + 1];
  size_t n = sizeof held / sizeof held[0];
  for (size_t i = 0; i < n; i++)
    assert_non_null(held[i] = rlock__reply_new(RLOCK__R_NIL));
  rlock__reply *arr = rlock__reply_new(RLOCK__R_ARRAY);
  assert_non_null(arr);
  arr->elem = calloc(n, sizeof *arr->elem);
  assert_non_null(arr->elem);
  arr->n = n;
  for (size_t i = 0; i < n; i++) {
    held[i]->type = RLOCK__R_STR;
    held[i]->str = strdup("spare");
    held[i]->len = 5;
    arr->elem[i] = held[i];
  }
  rlock__reply_free(arr); /* keeps RLOCK__REPLY_SPARE, frees the rest */

  rlock__alloc_fail_at(UINT64_MAX, RLOCK__ALLOC_THIS_THREAD); /* count */
  rlock__reply *o[RLOCK__REPLY_SPARE + 1];
  for (size_t i = 0; i < RLOCK__REPLY_SPARE + 1; i++) {
    assert_non_null(o[i] = rlock__reply_new(RLOCK__R_INT));
    assert_int_equal(o[i]->type, RLOCK__R_INT);
    assert_null(o[i]->str);
    assert_null(o[i]->elem);
    assert_int_equal(o[i]->n, 0);
    assert_int_equal(o[i]->len, 0);
    assert_int_equal(o[i]->integer, 0);
  }
  uint64_t allocated = rlock__alloc_count();
  rlock__alloc_fail_at(0, 0);
  assert_int_equal(allocated, 1); /* the spares, then one new node */
  for (size_t i = 0; i < RLOCK__REPLY_SPARE + 1; i++)
    rlock__reply_free(o[i]);

  /* Out of memory with no spare: NULL. */
  for (size_t i = 0; i < RLOCK__REPLY_SPARE; i++)
    o[i] = rlock__reply_new(RLOCK__R_NIL);
  rlock__alloc_fail_at(1, RLOCK__ALLOC_THIS_THREAD);
  assert_null(rlock__reply_new(RLOCK__R_NIL));
  rlock__alloc_fail_at(0, 0);
  for (size_t i = 0; i < RLOCK__REPLY_SPARE; i++)
    rlock__reply_free(o[i]);
}

/* The reader, read and freed reply after reply, reuses its nodes: after
 * the first, a scalar reply costs no allocation of ours. */
static void reader_reuses_nodes(void **state) {
  (void)state;
  rlock__reader *rd = rlock__reader_new();
  assert_non_null(rd);
  static const char *const replies[] = {":1\r\n", "$-1\r\n", ":-42\r\n",
                                        "*-1\r\n"};
  for (int round = 0; round < 2; round++) {
    if (round == 1)
      rlock__alloc_fail_at(1, RLOCK__ALLOC_THIS_THREAD);
    for (int i = 0; i < 1000; i++) {
      const char *s = replies[i % 4];
      assert_int_equal(rlock__reader_feed(rd, s, strlen(s)), RLOCK__READ_OK);
      rlock__reply *r;
      assert_int_equal(rlock__reader_get(rd, &r), RLOCK__READ_OK);
      assert_non_null(r);
      assert_int_equal(r->type, i % 2 ? RLOCK__R_NIL : RLOCK__R_INT);
      if (i % 2 == 0)
        assert_int_equal(r->integer, i % 4 ? -42 : 1);
      rlock__reply_free(r);
    }
  }
  rlock__alloc_fail_at(0, 0);
  assert_int_equal(rlock__alloc_failed(), 0);
  rlock__reader_free(rd);
}

/* A thread's spares go when it exits (ASan and valgrind would call them
 * leaks otherwise). */
static void *make_spares(void *arg) {
  (void)arg;
  for (int i = 0; i < RLOCK__REPLY_SPARE + 2; i++)
    rlock__reply_free(rlock__reply_new(RLOCK__R_NIL));
  rlock__reply *o[RLOCK__REPLY_SPARE + 2];
  for (int i = 0; i < RLOCK__REPLY_SPARE + 2; i++)
    o[i] = rlock__reply_new(RLOCK__R_INT);
  for (int i = 0; i < RLOCK__REPLY_SPARE + 2; i++)
    rlock__reply_free(o[i]);
  return NULL;
}

static void spares_freed_at_thread_exit(void **state) {
  (void)state;
  for (int i = 0; i < 4; i++) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, make_spares, NULL), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(encodes_like_hiredis),
      cmocka_unit_test(appends),
      cmocka_unit_test(encode_nomem),
      cmocka_unit_test(req_encode_to),
      cmocka_unit_test(reply_spares),
      cmocka_unit_test(reader_reuses_nodes),
      cmocka_unit_test(spares_freed_at_thread_exit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
