/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reader.c - fuzz_reader: the bounded reply reader (src/lib/net/reader.c)
 * fed whatever a server might send.
 *
 * Input: one byte that picks how the rest is cut into chunks (0: all at
 * once; n: pieces of 1..n bytes, as recv() might return them), then the
 * bytes from the "server". After each chunk every complete reply is taken,
 * as the transport does. Every reply must be a well-formed rlock__reply
 * tree within the reader's limits, and the same tree hiredis's own reader
 * builds from the same bytes (up to a reply ours refuses as over a limit,
 * which hiredis would have accepted: hiredis never parses that one); a
 * failure must be final and leave nothing behind.
 */
#include <hiredis/hiredis.h>

#include "fuzz.h"
#include "reader.h"

typedef struct budget {
  size_t elements, bytes;
} budget;

/* `r` is a well-formed tree within the limits, and equals hiredis's `h`. */
static void check_tree(const rlock__reply *r, const redisReply *h, int depth,
                       budget *b) {
  FUZZ_CHECK(r != NULL && h != NULL);
  switch (r->type) {
  case RLOCK__R_NIL:
  case RLOCK__R_INT:
    FUZZ_CHECK(r->str == NULL && r->n == 0 && r->elem == NULL);
    FUZZ_CHECK(h->type == (r->type == RLOCK__R_NIL ? REDIS_REPLY_NIL
                                                   : REDIS_REPLY_INTEGER));
    FUZZ_CHECK(r->type == RLOCK__R_NIL || r->integer == h->integer);
    break;
  case RLOCK__R_STR:
  case RLOCK__R_STATUS:
  case RLOCK__R_ERROR:
    FUZZ_CHECK(r->str != NULL && r->str[r->len] == '\0');
    FUZZ_CHECK(r->n == 0 && r->elem == NULL);
    FUZZ_CHECK(r->len <= RLOCK__REPLY_MAX_BULK);
    b->bytes += r->len;
    FUZZ_CHECK(h->type == (r->type == RLOCK__R_STR      ? REDIS_REPLY_STRING
                           : r->type == RLOCK__R_STATUS ? REDIS_REPLY_STATUS
                                                        : REDIS_REPLY_ERROR));
    FUZZ_CHECK(h->len >= 0 && (size_t)h->len == r->len &&
               memcmp(h->str, r->str, r->len) == 0);
    break;
  case RLOCK__R_ARRAY:
    FUZZ_CHECK(depth <= RLOCK__REPLY_MAX_DEPTH);
    FUZZ_CHECK(r->str == NULL && (r->n == 0) == (r->elem == NULL));
    FUZZ_CHECK(r->n <= RLOCK__REPLY_MAX_ELEMENTS);
    FUZZ_CHECK(h->type == REDIS_REPLY_ARRAY && h->elements == r->n);
    b->elements += r->n;
    for (size_t i = 0; i < r->n; i++)
      check_tree(r->elem[i], h->element[i], depth + 1, b);
    break;
  default:
    FUZZ_CHECK(!"a reply type");
  }
}

/* After a failure: it is final, and `rd` hands out nothing more. */
static void check_final(rlock__reader *rd, rlock__read_status st) {
  FUZZ_CHECK(st == RLOCK__READ_TOO_LARGE || st == RLOCK__READ_BAD ||
             st == RLOCK__READ_NOMEM);
  FUZZ_CHECK(rlock__reader_error(rd)[0] != '\0');
  rlock__reply *r = (rlock__reply *)1;
  FUZZ_CHECK(rlock__reader_get(rd, &r) != RLOCK__READ_OK && r == NULL);
  FUZZ_CHECK(rlock__reader_feed(rd, "+OK\r\n", 5) != RLOCK__READ_OK);
}

/* Take every complete reply from ours and hiredis's reader `hr` (which
 * parses only when asked: it never parses what ours refused, whose header
 * may ask for gigabytes); 0 while the reader is still usable. */
static int take_all(rlock__reader *rd, redisReader *hr) {
  for (;;) {
    rlock__reply *r = NULL;
    rlock__read_status st = rlock__reader_get(rd, &r);
    if (st != RLOCK__READ_OK) {
      FUZZ_CHECK(r == NULL);
      if (st == RLOCK__READ_BAD) { /* hiredis says so too */
        void *h = NULL;
        FUZZ_CHECK(redisReaderGetReply(hr, &h) == REDIS_ERR && h == NULL);
      }
      check_final(rd, st);
      return -1;
    }
    void *h = NULL;
    FUZZ_CHECK(redisReaderGetReply(hr, &h) == REDIS_OK);
    FUZZ_CHECK((r == NULL) == (h == NULL));
    if (r == NULL)
      return 0;
    budget b = {0, 0};
    check_tree(r, h, 1, &b);
    FUZZ_CHECK(b.elements <= RLOCK__REPLY_MAX_ELEMENTS);
    FUZZ_CHECK(b.bytes <= RLOCK__REPLY_MAX_BYTES);
    freeReplyObject(h);
    rlock__reply_free(r);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  unsigned cut = data[0], seed = data[0] * 2654435761u;
  const char *in = (const char *)data + 1;
  size_t left = size - 1;
  rlock__reader *rd = rlock__reader_new();
  redisReader *hr = redisReaderCreate();
  FUZZ_CHECK(rd != NULL && hr != NULL);
  while (left > 0) {
    size_t n = left;
    if (cut != 0) {
      seed = seed * 1103515245u + 12345u;
      n = 1 + (seed >> 16) % cut;
      n = n < left ? n : left;
    }
    rlock__read_status st = rlock__reader_feed(rd, in, n);
    if (st != RLOCK__READ_OK) {
      check_final(rd, st);
      break;
    }
    FUZZ_CHECK(rlock__reader_buffered(rd) <= RLOCK__REPLY_MAX_BUFFERED);
    FUZZ_CHECK(redisReaderFeed(hr, in, n) == REDIS_OK); /* only buffers */
    if (take_all(rd, hr) != 0)
      break;
    in += n;
    left -= n;
  }
  rlock__reader_free(rd);
  redisReaderFree(hr);
  return 0;
}
