/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resp.h - the RESP encoder every connection writes with (the blocking
 * connections of conn.c, the loop's lconn.c, the command layer's
 * requests); the decoder is reader.h.
 */
#ifndef RLOCK_RESP_H
#define RLOCK_RESP_H

#include <stddef.h>

/* A growable byte buffer: p is rlock__realloc'ed (release with free()),
 * len bytes in use out of cap. {0} is an empty one. */
typedef struct rlock__buf {
  char *p;
  size_t len, cap;
} rlock__buf;

/* Make room for `more` bytes past b->len (growing by doubling, from 512
 * bytes). 0, or -1 when out of memory (b unchanged). */
int rlock__buf_reserve(rlock__buf *b, size_t more);

/* Append one command, an array of argc bulk strings, in RESP
 * (`*N\r\n$len\r\narg\r\n...`). lens NULL: the arguments are
 * NUL-terminated. 0, or -1 when out of memory (b unchanged). */
int rlock__resp_command(rlock__buf *b, int argc, const char **argv,
                        const size_t *lens);

/* Append RESP's pieces: an array header `*n\r\n`, and a bulk string
 * `$len\r\ns\r\n`. 0, or -1 when out of memory (b unchanged). */
int rlock__resp_array(rlock__buf *b, size_t n);
int rlock__resp_bulk(rlock__buf *b, const char *s, size_t len);

/* Encode a command into a malloc'ed RESP buffer (free with free()).
 * Returns its length, or -1 when out of memory. Commands sent often go
 * through a connection's own buffer instead (rlock__conn_send_out), which
 * allocates nothing once warm. */
long rlock__resp_format(char **out, int argc, const char **argv,
                        const size_t *lens);

#endif /* RLOCK_RESP_H */
