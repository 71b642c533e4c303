/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resolve.h - host name lookup with a deadline.
 *
 * getaddrinfo() has no timeout: with an unreachable DNS server it can
 * block for tens of seconds, far past any connect timeout. A numeric
 * address is converted on the caller's thread; a name is looked up on a
 * small detached thread while the caller waits at most until its
 * deadline. A lookup given up on finishes in the background and frees
 * itself.
 */
#ifndef RLOCK_RESOLVE_H
#define RLOCK_RESOLVE_H

#include <netdb.h>
#include <stddef.h>
#include <stdint.h>

/* Resolve `host` (a name or a numeric IPv4/IPv6 address) and `port` to
 * stream-socket addresses before `deadline_us` (monotonic; INT64_MAX for
 * none). On success *out is the list (free it with freeaddrinfo()).
 * Otherwise *out is NULL, `why` (cap bytes) says what happened, and the
 * result is RLOCK_EIO ("name did not resolve (Name or service not
 * known)", or the lookup thread could not start) or RLOCK_ETIMEOUT ("name
 * lookup did not finish in time") or RLOCK_ENOMEM. Sets no last error:
 * the caller words it. Thread-safe. */
int rlock__resolve(const char *host, int port, int64_t deadline_us,
                   struct addrinfo **out, char *why, size_t cap);

#endif /* RLOCK_RESOLVE_H */
