/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * endpoint.h - where a server is and how to log in to it, parsed from a
 * redis://, rediss:// (TLS) or unix:// URL.
 */
#ifndef RLOCK_ENDPOINT_H
#define RLOCK_ENDPOINT_H

#include <stddef.h>

typedef struct rlock__endpoint {
  char *host; /* NULL for a unix socket */
  int port;
  char *unix_path; /* NULL for TCP */
  char *user;      /* NULL: AUTH with the password only (or no AUTH) */
  char *password;  /* NULL: no AUTH */
  int db;          /* SELECT db when non-zero */
  int tls;         /* speak TLS to it (rediss://) */
  /* The client's TLS context once it has one (borrowed, shared by every
   * copy; the client frees it): what conn.c connects with. NULL until
   * then, and for plain text. */
  const struct rlock__tls *tls_ctx;
} rlock__endpoint;

/* Parse `url` into `ep` (which must be zeroed or cleared). On failure
 * returns RLOCK_EINVAL with a message naming what is wrong and leaves `ep`
 * empty. */
int rlock__endpoint_parse(rlock__endpoint *ep, const char *url);

/* Deep copy; RLOCK_ENOMEM on failure (dst left empty). */
int rlock__endpoint_copy(rlock__endpoint *dst, const rlock__endpoint *src);

/* Free the strings and zero the struct. */
void rlock__endpoint_clear(rlock__endpoint *ep);

/* "host:port" or the socket path, for messages. Writes into buf. */
const char *rlock__endpoint_str(const rlock__endpoint *ep, char *buf,
                                unsigned size);

/* Pieces of URL parsing, shared with target.c (topology URLs). Each sets
 * the last error (RLOCK_EINVAL, RLOCK_ENOMEM) when it fails. */
/* Copy [s, s+n) decoding %XX escapes; NULL on a bad escape or no memory. */
char *rlock__url_decode(const char *s, size_t n);
/* A decimal in [lo, hi] spanning exactly [s, s+n): 0, else -1 (no error
 * set). */
int rlock__url_int(const char *s, size_t n, long lo, long hi, int *out);
/* "[[user]:password@]" at the front of [*s, end): sets *user (may stay
 * NULL) and *password, advances *s past '@'. Nothing there: RLOCK_OK. */
int rlock__url_userinfo(char **user, char **password, const char **s,
                        const char *end);
/* "host[:port]" or "[v6]:port" spanning [s, end) into ep->host/port. */
int rlock__url_hostport(rlock__endpoint *ep, const char *s, const char *end,
                        int default_port);

#endif /* RLOCK_ENDPOINT_H */
