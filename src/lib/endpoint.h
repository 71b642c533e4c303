/*
 * endpoint.h - where a server is and how to log in to it, parsed from a
 * redis:// or unix:// URL.
 */
#ifndef RLOCK_ENDPOINT_H
#define RLOCK_ENDPOINT_H

typedef struct rlock__endpoint {
  char *host;      /* NULL for a unix socket */
  int port;
  char *unix_path; /* NULL for TCP */
  char *user;      /* NULL: AUTH with the password only (or no AUTH) */
  char *password;  /* NULL: no AUTH */
  int db;          /* SELECT db when non-zero */
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

#endif /* RLOCK_ENDPOINT_H */
