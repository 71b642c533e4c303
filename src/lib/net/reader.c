/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reader.c - hiredis's RESP parser with object functions of our own that
 * count what a reply costs and refuse it past the limits.
 *
 * hiredis calls one create function per item, with the item's task: its
 * parent task (NULL for the root of a reply), its index in the parent
 * array, and the reader's privdata (our budget). A function returns the
 * new object and must store it in its parent array itself; returning NULL
 * makes hiredis fail the reply ("Out of memory") and free the partial
 * tree with freeObject, so a refusal is told apart by `refused`.
 */
#include "reader.h"

#include <hiredis/hiredis.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

struct rlock__reader {
  redisReader *r;
  size_t elements; /* array elements announced in the current reply */
  size_t bytes;    /* string bytes in the current reply */
  int refused;     /* a limit was hit (sticky) */
  char why[128];
};

static void *refuse(rlock__reader *rd, const char *fmt, ...) RLOCK_PRINTF(2, 3);

static void *refuse(rlock__reader *rd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rd->why, sizeof rd->why, fmt, ap);
  va_end(ap);
  rd->refused = 1;
  return NULL;
}

/* The budget of the reply `t` belongs to; the root of a reply starts a
 * fresh one. */
static rlock__reader *budget(const redisReadTask *t) {
  rlock__reader *rd = t->privdata;
  if (t->parent == NULL)
    rd->elements = rd->bytes = 0;
  return rd;
}

/* A new object of `type`, stored in its parent array (if any). */
static rlock__reply *new_object(const redisReadTask *t, rlock__rtype type) {
  rlock__reply *o = rlock__reply_new(type); /* a spare when there is one */
  if (o == NULL)
    return NULL;
  if (t->parent != NULL) {
    rlock__reply *parent = t->parent->obj;
    parent->elem[t->idx] = o;
  }
  return o;
}

/* hiredis's string-like task types as ours. */
static rlock__rtype string_type(int type) {
  return type == REDIS_REPLY_STATUS  ? RLOCK__R_STATUS
         : type == REDIS_REPLY_ERROR ? RLOCK__R_ERROR
                                     : RLOCK__R_STR;
}

static void *create_string(const redisReadTask *t, char *s, size_t len) {
  rlock__reader *rd = budget(t);
  if (len > RLOCK__REPLY_MAX_BULK)
    return refuse(rd, "string of %zu bytes", len);
  if (len > RLOCK__REPLY_MAX_BYTES - rd->bytes)
    return refuse(rd, "over %d bytes of strings", RLOCK__REPLY_MAX_BYTES);
  char *copy = rlock__strndup(s, len);
  if (copy == NULL)
    return NULL;
  rlock__reply *o = new_object(t, string_type(t->type));
  if (o == NULL) {
    free(copy);
    return NULL;
  }
  rd->bytes += len;
  o->str = copy;
  o->len = len;
  return o;
}

static int depth_of(const redisReadTask *t) {
  int d = 1;
  for (const redisReadTask *p = t->parent; p != NULL; p = p->parent)
    d++;
  return d;
}

static void *create_array(const redisReadTask *t, int n) {
  rlock__reader *rd = budget(t);
  if (depth_of(t) > RLOCK__REPLY_MAX_DEPTH)
    return refuse(rd, "arrays nested over %d deep", RLOCK__REPLY_MAX_DEPTH);
  if (n < 0 || n > RLOCK__REPLY_MAX_ELEMENTS)
    return refuse(rd, "array of %d elements", n);
  if ((size_t)n > RLOCK__REPLY_MAX_ELEMENTS - rd->elements)
    return refuse(rd, "over %d array elements", RLOCK__REPLY_MAX_ELEMENTS);
  rlock__reply **elem = NULL;
  if (n > 0 && (elem = rlock__calloc((size_t)n, sizeof *elem)) == NULL)
    return NULL;
  rlock__reply *o = new_object(t, RLOCK__R_ARRAY);
  if (o == NULL) {
    free(elem);
    return NULL;
  }
  rd->elements += (size_t)n;
  o->elem = elem;
  o->n = (size_t)n;
  return o;
}

static void *create_integer(const redisReadTask *t, long long v) {
  budget(t);
  rlock__reply *o = new_object(t, RLOCK__R_INT);
  if (o != NULL)
    o->integer = v;
  return o;
}

static void *create_nil(const redisReadTask *t) {
  budget(t);
  return new_object(t, RLOCK__R_NIL);
}

static void free_object(void *o) { rlock__reply_free(o); }

static redisReplyObjectFunctions bounded_functions = {
    create_string, create_array, create_integer, create_nil, free_object,
};

rlock__reader *rlock__reader_new(void) {
  rlock__reader *rd = rlock__calloc(1, sizeof *rd);
  if (rd == NULL)
    return NULL;
  rd->r = redisReaderCreateWithFunctions(&bounded_functions);
  if (rd->r == NULL) {
    free(rd);
    return NULL;
  }
  rd->r->privdata = rd;
  return rd;
}

void rlock__reader_free(rlock__reader *rd) {
  if (rd == NULL)
    return;
  redisReaderFree(rd->r);
  free(rd);
}

size_t rlock__reader_buffered(const rlock__reader *rd) {
  return rd->r->len - rd->r->pos;
}

/* Classify a failure hiredis reported. */
static rlock__read_status failed(rlock__reader *rd) {
  if (rd->refused)
    return RLOCK__READ_TOO_LARGE;
  if (rd->r->err == REDIS_ERR_OOM) {
    snprintf(rd->why, sizeof rd->why, "out of memory");
    return RLOCK__READ_NOMEM;
  }
  snprintf(rd->why, sizeof rd->why, "%s", rd->r->errstr);
  return RLOCK__READ_BAD;
}

rlock__read_status rlock__reader_feed(rlock__reader *rd, const char *buf,
                                      size_t len) {
  if (rd->refused)
    return RLOCK__READ_TOO_LARGE;
  size_t buffered = rlock__reader_buffered(rd);
  if (len > RLOCK__REPLY_MAX_BUFFERED - buffered) {
    refuse(rd, "over %d bytes unparsed", RLOCK__REPLY_MAX_BUFFERED);
    return RLOCK__READ_TOO_LARGE;
  }
  return redisReaderFeed(rd->r, buf, len) == REDIS_OK ? RLOCK__READ_OK
                                                      : failed(rd);
}

rlock__read_status rlock__reader_get(rlock__reader *rd, rlock__reply **out) {
  void *reply = NULL;
  *out = NULL;
  if (rd->refused)
    return RLOCK__READ_TOO_LARGE;
  if (redisReaderGetReply(rd->r, &reply) != REDIS_OK)
    return failed(rd);
  *out = reply;
  return RLOCK__READ_OK;
}

const char *rlock__reader_error(const rlock__reader *rd) { return rd->why; }
