/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reader.h - a RESP reply reader that bounds what one reply may cost.
 *
 * hiredis 0.14's reader trusts the server: "*2147483647" makes it allocate
 * two billion element pointers, and a bulk header promising 2 GB makes it
 * buffer whatever follows until that much has arrived. A wrong port, a
 * proxy or a broken server must not be able to take the process down, so
 * this reader builds replies with its own object functions and refuses
 * anything over the limits below before allocating for it.
 *
 * The replies are rlock__reply trees (reply.h), built directly by the
 * object functions, so nothing above the transport sees a redisReply:
 * free them with rlock__reply_free(). The limits are far above anything rlock
 * needs (its largest reply is the inspection of a fair lock with a long queue:
 * a flat array of two strings per waiter), so no legitimate reply comes near
 * them. Worst case one reply costs roughly 1M objects of ~64 bytes each plus
 * their pointers (~72 MB), 32 MiB of strings and the unparsed buffer (~17 MiB):
 * bounded, if not small.
 *
 * A reader is used by one thread at a time.
 */
#ifndef RLOCK_READER_H
#define RLOCK_READER_H

#include <stddef.h>

#include "reply.h"

/* Elements of one array, and of all the arrays of one reply together
 * (counted when an array's header arrives, before anything is allocated
 * for it). */
#define RLOCK__REPLY_MAX_ELEMENTS (1 << 20)
/* Arrays nested in one another (a flat array is depth 1). hiredis 0.14
 * refuses deeper than 8 by itself; rlock's replies are depth 1. */
#define RLOCK__REPLY_MAX_DEPTH 4
/* Bytes of one string (bulk, status or error). */
#define RLOCK__REPLY_MAX_BULK (16 << 20)
/* Bytes of all the strings of one reply together. */
#define RLOCK__REPLY_MAX_BYTES (32 << 20)
/* Bytes received but not yet parsed. Only a reply's item still arriving
 * is unparsed (a whole bulk, its header and CRLF), so this is the longest
 * string plus slack; it is what stops a bulk header promising gigabytes. */
#define RLOCK__REPLY_MAX_BUFFERED (RLOCK__REPLY_MAX_BULK + (64 << 10))

typedef enum rlock__read_status {
  RLOCK__READ_OK = 0,
  RLOCK__READ_TOO_LARGE, /* over a limit; rlock__reader_error() says which */
  RLOCK__READ_BAD,   /* not RESP; rlock__reader_error() has hiredis's text */
  RLOCK__READ_NOMEM, /* an allocation failed */
} rlock__read_status;

typedef struct rlock__reader rlock__reader;

/* A new reader, or NULL when out of memory. */
rlock__reader *rlock__reader_new(void);

/* Free the reader and any partial reply it holds. NULL is ignored. */
void rlock__reader_free(rlock__reader *rd);

/* Append len received bytes. Refuses them (RLOCK__READ_TOO_LARGE, nothing
 * appended) when the unparsed bytes would exceed RLOCK__REPLY_MAX_BUFFERED:
 * call rlock__reader_get() until it has no reply before feeding more. Any
 * failure is final: the reader refuses everything after it. */
rlock__read_status rlock__reader_feed(rlock__reader *rd, const char *buf,
                                      size_t len);

/* Take the next complete reply: *out is the reply (the caller frees it
 * with rlock__reply_free), or NULL when none is complete yet. On failure
 * *out is NULL, the partial reply is freed, and the failure is final. */
rlock__read_status rlock__reader_get(rlock__reader *rd, rlock__reply **out);

/* Why the last call failed: "array of 2147483647 elements", hiredis's
 * "Protocol error, got ..." text, ... Valid until the next call. */
const char *rlock__reader_error(const rlock__reader *rd);

/* Bytes received and not yet parsed (part of a reply still arriving, or
 * replies not taken yet). */
size_t rlock__reader_buffered(const rlock__reader *rd);

#endif /* RLOCK_READER_H */
