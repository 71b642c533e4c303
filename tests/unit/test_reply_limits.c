/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: the bounded reply reader (reader.h). Byte strings go
 * straight into it: ordinary replies must come out exactly as hiredis's
 * own reader builds them, and replies over a limit must be refused before
 * they cost what they announce. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "reader.h"

/* A growable byte string for building replies. */
typedef struct buf {
  char *p;
  size_t len, cap;
} buf;

/* Room for n more bytes. */
static void reserve(buf *b, size_t n) {
  if (b->len + n <= b->cap)
    return;
  b->cap = (b->len + n) * 2;
  b->p = realloc(b->p, b->cap);
  assert_non_null(b->p);
}

static void put(buf *b, const char *s, size_t n) {
  reserve(b, n);
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

static void puts_(buf *b, const char *s) { put(b, s, strlen(s)); }

static void put_repeated(buf *b, const char *s, size_t times) {
  for (size_t i = 0; i < times; i++)
    puts_(b, s);
}

/* An array of RLOCK__REPLY_MAX_ELEMENTS copies of `element`. */
static void put_full_array(buf *b, const char *element) {
  char head[32];
  snprintf(head, sizeof head, "*%d\r\n", RLOCK__REPLY_MAX_ELEMENTS);
  puts_(b, head);
  put_repeated(b, element, RLOCK__REPLY_MAX_ELEMENTS);
}

/* "$<n>\r\n", n bytes of 'x', "\r\n". */
static void put_bulk(buf *b, size_t n) {
  char head[32];
  snprintf(head, sizeof head, "$%zu\r\n", n);
  puts_(b, head);
  reserve(b, n);
  memset(b->p + b->len, 'x', n);
  b->len += n;
  puts_(b, "\r\n");
}

/* Feed `len` bytes in chunks of `chunk`, taking replies as they complete
 * (as conn.c does). Stores at most one reply in *out (later ones are
 * freed) and returns the first failure, or RLOCK__READ_OK. */
static rlock__read_status feed_all(rlock__reader *rd, const char *p, size_t len,
                                   size_t chunk, rlock__reply **out,
                                   int *nreplies) {
  *out = NULL;
  *nreplies = 0;
  for (size_t off = 0; off < len; off += chunk) {
    size_t n = len - off < chunk ? len - off : chunk;
    rlock__read_status st = rlock__reader_feed(rd, p + off, n);
    if (st != RLOCK__READ_OK)
      return st;
    for (;;) {
      rlock__reply *r;
      if ((st = rlock__reader_get(rd, &r)) != RLOCK__READ_OK)
        return st;
      if (r == NULL)
        break;
      ++*nreplies;
      if (*out == NULL)
        *out = r;
      else
        rlock__reply_free(r);
    }
  }
  return RLOCK__READ_OK;
}

/* Parse one whole reply with the bounded reader, in chunks. */
static rlock__read_status bounded(const char *p, size_t len, size_t chunk,
                                  rlock__reply **out, char *why, size_t cap) {
  rlock__reader *rd = rlock__reader_new();
  assert_non_null(rd);
  int n;
  rlock__read_status st = feed_all(rd, p, len, chunk, out, &n);
  snprintf(why, cap, "%s", rlock__reader_error(rd));
  rlock__reader_free(rd);
  if (st == RLOCK__READ_OK)
    assert_int_equal(n, 1);
  return st;
}

/* The one reply in p..len, which must parse. */
static rlock__reply *parse_ok(const char *p, size_t len, size_t chunk) {
  rlock__reply *r;
  char why[128];
  if (bounded(p, len, chunk, &r, why, sizeof why) != RLOCK__READ_OK)
    fail_msg("refused: %s", why);
  return r;
}

static void expect_refused(const char *p, size_t len, const char *needle) {
  rlock__reply *r;
  char why[128];
  assert_int_equal(bounded(p, len, 65536, &r, why, sizeof why),
                   RLOCK__READ_TOO_LARGE);
  assert_null(r);
  if (strstr(why, needle) == NULL)
    fail_msg("refused for '%s', expected '%s'", why, needle);
}

/* hiredis's reply type for ours. */
static int hiredis_type(rlock__rtype t) {
  static const int map[] = {REDIS_REPLY_NIL,    REDIS_REPLY_INTEGER,
                            REDIS_REPLY_STRING, REDIS_REPLY_STATUS,
                            REDIS_REPLY_ERROR,  REDIS_REPLY_ARRAY};
  return map[t];
}

/* Our tree `a` holds what hiredis's own reader built as `b`. */
static void same_tree(const rlock__reply *a, const redisReply *b) {
  assert_int_equal(hiredis_type(a->type), b->type);
  assert_true(a->integer == b->integer);
  assert_int_equal(a->len, b->len);
  assert_int_equal(a->n, b->elements);
  if (a->str != NULL || b->str != NULL) {
    assert_non_null(a->str);
    assert_non_null(b->str);
    assert_memory_equal(a->str, b->str, a->len + 1); /* NUL included */
  }
  for (size_t i = 0; i < a->n; i++)
    same_tree(a->elem[i], b->element[i]);
}

static void test_ordinary_replies_parse_as_before(void **state) {
  (void)state;
  static const struct {
    const char *bytes;
    size_t len;
  } cases[] = {
#define C(s) {s, sizeof s - 1}
      C("+OK\r\n"),
      C("-ERR wrong\r\n"),
      C(":-42\r\n"),
      C(":0\r\n"),
      C("$-1\r\n"),
      C("*-1\r\n"),
      C("$0\r\n\r\n"),
      C("*0\r\n"),
      C("$5\r\nhe\0lo\r\n"), /* binary, NUL inside */
      C("*3\r\n$7\r\nmessage\r\n$3\r\nch1\r\n$1\r\n0\r\n"),
      C("*5\r\n$4\r\nhash\r\n:1234\r\n:1\r\n$3\r\nu:1\r\n$1\r\n2\r\n"),
      C("*2\r\n*2\r\n$-1\r\n+x\r\n*1\r\n*1\r\n*1\r\n:7\r\n"), /* depth 4 */
#undef C
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    redisReader *ref = redisReaderCreate();
    void *want = NULL;
    assert_int_equal(redisReaderFeed(ref, cases[i].bytes, cases[i].len),
                     REDIS_OK);
    assert_int_equal(redisReaderGetReply(ref, &want), REDIS_OK);
    assert_non_null(want);
    for (size_t chunk = 1; chunk <= cases[i].len; chunk *= 3) {
      rlock__reply *got = parse_ok(cases[i].bytes, cases[i].len, chunk);
      same_tree(got, want);
      rlock__reply_free(got);
    }
    freeReplyObject(want);
    redisReaderFree(ref);
  }
}

static void test_depth_limit(void **state) {
  (void)state;
  buf b = {0};
  put_repeated(&b, "*1\r\n", RLOCK__REPLY_MAX_DEPTH);
  puts_(&b, ":1\r\n");
  rlock__reply *r = parse_ok(b.p, b.len, 3);
  const rlock__reply *e = r;
  for (int d = 0; d < RLOCK__REPLY_MAX_DEPTH; d++)
    e = e->elem[0];
  assert_int_equal(e->type, RLOCK__R_INT);
  rlock__reply_free(r);
  b.len = 0;
  put_repeated(&b, "*1\r\n", RLOCK__REPLY_MAX_DEPTH + 1);
  puts_(&b, ":1\r\n");
  char why_depth[64];
  snprintf(why_depth, sizeof why_depth, "nested over %d deep",
           RLOCK__REPLY_MAX_DEPTH);
  expect_refused(b.p, b.len, why_depth);
  free(b.p);
}

static void test_array_at_and_over_the_limit(void **state) {
  (void)state;
  buf b = {0};
  put_full_array(&b, ":1\r\n");
  rlock__reply *r = parse_ok(b.p, b.len, 16384);
  assert_int_equal(r->n, RLOCK__REPLY_MAX_ELEMENTS);
  rlock__reply_free(r);
  /* Over it: refused from the header alone, nothing else sent. */
  char head[32];
  snprintf(head, sizeof head, "*%d\r\n", RLOCK__REPLY_MAX_ELEMENTS + 1);
  expect_refused(head, strlen(head), "array of 1048577 elements");
  expect_refused("*2147483647\r\n", 13, "array of 2147483647 elements");
  free(b.p);
}

static void test_elements_of_one_reply_together(void **state) {
  (void)state;
  buf b = {0};
  puts_(&b, "*2\r\n*600000\r\n");
  put_repeated(&b, ":1\r\n", 600000);
  puts_(&b, "*600000\r\n"); /* 1,200,000 elements in all */
  expect_refused(b.p, b.len, "over 1048576 array elements");
  free(b.p);
}

static void test_each_reply_gets_its_own_budget(void **state) {
  (void)state;
  buf b = {0};
  for (int i = 0; i < 2; i++)
    put_full_array(&b, "$1\r\nx\r\n");
  rlock__reader *rd = rlock__reader_new();
  rlock__reply *r;
  int n;
  assert_int_equal(feed_all(rd, b.p, b.len, 65536, &r, &n), RLOCK__READ_OK);
  assert_int_equal(n, 2);
  assert_int_equal(rlock__reader_buffered(rd), 0);
  rlock__reply_free(r);
  rlock__reader_free(rd);
  free(b.p);
}

static void test_string_limits(void **state) {
  (void)state;
  buf b = {0};
  put_bulk(&b, RLOCK__REPLY_MAX_BULK);
  rlock__reply *r = parse_ok(b.p, b.len, 1 << 20);
  assert_int_equal(r->len, RLOCK__REPLY_MAX_BULK);
  rlock__reply_free(r);
  b.len = 0;
  put_bulk(&b, RLOCK__REPLY_MAX_BULK + 1);
  expect_refused(b.p, b.len, "string of 16777217 bytes");
  /* Three strings within the per-string limit, over the per-reply one. */
  b.len = 0;
  puts_(&b, "*3\r\n");
  for (int i = 0; i < 3; i++)
    put_bulk(&b, 12 << 20);
  expect_refused(b.p, b.len, "over 33554432 bytes of strings");
  free(b.p);
}

/* A header promising 2 GB, then a flood: refused once the unparsed bytes
 * pass the limit, long before 2 GB. */
static void test_bulk_header_then_flood(void **state) {
  (void)state;
  rlock__reader *rd = rlock__reader_new();
  rlock__reply *r;
  assert_int_equal(rlock__reader_feed(rd, "$2147483647\r\n", 13),
                   RLOCK__READ_OK);
  assert_int_equal(rlock__reader_get(rd, &r), RLOCK__READ_OK);
  assert_null(r);
  static char flood[65536];
  memset(flood, 'x', sizeof flood);
  size_t fed = 13;
  rlock__read_status st;
  while ((st = rlock__reader_feed(rd, flood, sizeof flood)) == RLOCK__READ_OK) {
    fed += sizeof flood;
    assert_int_equal(rlock__reader_get(rd, &r), RLOCK__READ_OK);
    assert_null(r);
    assert_true(fed <= RLOCK__REPLY_MAX_BUFFERED);
  }
  assert_int_equal(st, RLOCK__READ_TOO_LARGE);
  assert_true(fed > RLOCK__REPLY_MAX_BUFFERED - sizeof flood);
  assert_non_null(strstr(rlock__reader_error(rd), "unparsed"));
  /* Final: nothing is accepted or returned any more. */
  assert_int_equal(rlock__reader_feed(rd, "+OK\r\n", 5), RLOCK__READ_TOO_LARGE);
  assert_int_equal(rlock__reader_get(rd, &r), RLOCK__READ_TOO_LARGE);
  assert_null(r);
  rlock__reader_free(rd);
}

static void test_not_resp(void **state) {
  (void)state;
  rlock__reply *r;
  char why[128];
  assert_int_equal(bounded("!bogus\r\n", 8, 8, &r, why, sizeof why),
                   RLOCK__READ_BAD);
  assert_null(r);
  assert_non_null(strstr(why, "Protocol error"));
}

/* A reply refused half-built, and one abandoned half-read, are freed
 * (ASan and valgrind check). */
static void test_partial_replies_are_freed(void **state) {
  (void)state;
  rlock__reader *rd = rlock__reader_new();
  rlock__reply *r;
  int n;
  static const char refused[] = "*3\r\n$2\r\nab\r\n*2\r\n:1\r\n*9999999\r\n";
  assert_int_equal(feed_all(rd, refused, sizeof refused - 1, 5, &r, &n),
                   RLOCK__READ_TOO_LARGE);
  rlock__reader_free(rd);
  rd = rlock__reader_new();
  static const char partial[] = "*3\r\n$2\r\nab\r\n*2\r\n:1\r\n$10\r\nabc";
  assert_int_equal(feed_all(rd, partial, sizeof partial - 1, 7, &r, &n),
                   RLOCK__READ_OK);
  assert_int_equal(n, 0);
  assert_true(rlock__reader_buffered(rd) > 0);
  rlock__reader_free(rd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ordinary_replies_parse_as_before),
      cmocka_unit_test(test_depth_limit),
      cmocka_unit_test(test_array_at_and_over_the_limit),
      cmocka_unit_test(test_elements_of_one_reply_together),
      cmocka_unit_test(test_each_reply_gets_its_own_budget),
      cmocka_unit_test(test_string_limits),
      cmocka_unit_test(test_bulk_header_then_flood),
      cmocka_unit_test(test_not_resp),
      cmocka_unit_test(test_partial_replies_are_freed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
