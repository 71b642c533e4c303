/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reply.h - the typed result the command layer hands to everything above
 * it: nil, integer, string, status, error or array.
 *
 * Only the transport (net/) knows hiredis: its reader builds these trees
 * directly, so lock kinds, the watchdog, pub/sub and RedLock never see a
 * redisReply. Strings are NUL-terminated and may also contain NULs (use
 * len). A tree is owned by whoever received it and freed with
 * rlock__reply_free().
 *
 * rlock__error_status() is the one rule from an error reply to a status
 * code, used by every path that reads replies.
 */
#ifndef RLOCK_REPLY_H
#define RLOCK_REPLY_H

#include <stddef.h>
#include <stdint.h>

typedef enum rlock__rtype {
  RLOCK__R_NIL,
  RLOCK__R_INT,
  RLOCK__R_STR,    /* a bulk string */
  RLOCK__R_STATUS, /* a simple string: +OK */
  RLOCK__R_ERROR,  /* an error reply: -ERR ... */
  RLOCK__R_ARRAY
} rlock__rtype;

typedef struct rlock__reply {
  rlock__rtype type;
  int64_t integer;            /* RLOCK__R_INT */
  char *str;                  /* STR, STATUS, ERROR; NUL-terminated */
  size_t len;                 /* of str */
  size_t n;                   /* RLOCK__R_ARRAY: number of elements */
  struct rlock__reply **elem; /* RLOCK__R_ARRAY */
} rlock__reply;

/* Spare nodes kept per thread for reuse (reply.c: how they stay reachable
 * in a fork()ed child). */
#define RLOCK__REPLY_SPARE 8

/* A zeroed node of `type`: a spare of the calling thread's, else newly
 * allocated (rlock__calloc); NULL when out of memory. */
rlock__reply *rlock__reply_new(rlock__rtype type);

/* Free a tree (its nodes may become the calling thread's spares). Nodes
 * must come from rlock__reply_new() or malloc(); NULL is ignored. */
void rlock__reply_free(rlock__reply *r);

/* 1 when `r` is a string or status equal to `s`. */
int rlock__reply_is(const rlock__reply *r, const char *s);

/* 1 when `r` has text (string, status, error) starting with `prefix`. */
int rlock__reply_starts(const rlock__reply *r, const char *prefix);

/* A name for a reply type, for messages ("nil", "integer", ...). */
const char *rlock__reply_type_name(const rlock__reply *r);

/* The one rule from an error reply to a status code: WRONGTYPE ->
 * RLOCK_EWRONGTYPE; NOAUTH, WRONGPASS, NOPERM -> RLOCK_EAUTH; anything
 * else -> RLOCK_ESERVER. Sets the last error to "redis <where>: <text>".
 * Every path that reads a reply (commands, fan-out, the subscriber) uses
 * it. */
int rlock__error_status(const char *where, const rlock__reply *err);

#endif /* RLOCK_REPLY_H */
