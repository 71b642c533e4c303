/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resp.c - the RESP encoder: commands as arrays of bulk strings, written
 * into growable buffers (the decoder is reader.c). Pure: no I/O.
 */
#include "resp.h"

#include <stdint.h>
#include <string.h>

#include "alloc.h"
#include "common.h"

int rlock__buf_reserve(rlock__buf *b, size_t more) {
  if (more <= b->cap - b->len)
    return 0;
  if (more > SIZE_MAX / 2 - b->len)
    return -1;
  size_t cap = b->cap != 0 ? b->cap : 512;
  while (cap < b->len + more)
    cap *= 2;
  char *p = rlock__realloc(b->p, cap);
  if (p == NULL)
    return -1;
  b->p = p;
  b->cap = cap;
  return 0;
}

/* The most a header (`*n\r\n`, `$n\r\n`) takes, with rlock__decimal's
 * NUL, which the CR overwrites. */
#define HEADER_MAX 24

/* Write `kind`, n in decimal and CRLF at p (HEADER_MAX bytes of room);
 * returns the bytes written. */
static size_t put_header(char *p, char kind, size_t n) {
  p[0] = kind;
  size_t k = 1;
  if (n < 10) { /* most are: argument counts, short keys and numbers */
    p[k++] = (char)('0' + n);
  } else if (n < 100) {
    p[k++] = (char)('0' + n / 10);
    p[k++] = (char)('0' + n % 10);
  } else {
    k += rlock__decimal(p + 1, (int64_t)n);
  }
  p[k++] = '\r';
  p[k++] = '\n';
  return k;
}

/* Write a bulk string at the end of b, which has room for it. */
static void put_bulk(rlock__buf *b, const char *s, size_t len) {
  char *p = b->p + b->len;
  size_t k = put_header(p, '$', len);
  memcpy(p + k, s, len);
  p[k + len] = '\r';
  p[k + len + 1] = '\n';
  b->len += k + len + 2;
}

int rlock__resp_array(rlock__buf *b, size_t n) {
  if (rlock__buf_reserve(b, HEADER_MAX) != 0)
    return -1;
  b->len += put_header(b->p + b->len, '*', n);
  return 0;
}

int rlock__resp_bulk(rlock__buf *b, const char *s, size_t len) {
  if (len > SIZE_MAX - HEADER_MAX - 2 ||
      rlock__buf_reserve(b, HEADER_MAX + len + 2) != 0)
    return -1;
  put_bulk(b, s, len);
  return 0;
}

int rlock__resp_command(rlock__buf *b, int argc, const char **argv,
                        const size_t *lens) {
  size_t need = HEADER_MAX; /* room for all of it at once */
  for (int i = 0; i < argc; i++) {
    size_t len = lens ? lens[i] : strlen(argv[i]);
    if (need > SIZE_MAX / 2 || len > SIZE_MAX / 2 - need)
      return -1;
    need += HEADER_MAX + len + 2;
  }
  if (rlock__buf_reserve(b, need) != 0)
    return -1;
  b->len += put_header(b->p + b->len, '*', (size_t)argc);
  for (int i = 0; i < argc; i++)
    put_bulk(b, argv[i], lens ? lens[i] : strlen(argv[i]));
  return 0;
}

long rlock__resp_format(char **out, int argc, const char **argv,
                        const size_t *lens) {
  rlock__buf b = {0};
  if (rlock__resp_command(&b, argc, argv, lens) != 0)
    return -1;
  *out = b.p;
  return (long)b.len;
}
