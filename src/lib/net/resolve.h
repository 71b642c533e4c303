/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resolve.h - host name lookup with a deadline.
 *
 * getaddrinfo() has no timeout: with an unreachable DNS server it can
 * block for tens of seconds, far past any connect timeout. A numeric
 * address is converted on the caller's thread; a name is looked up on a
 * small detached thread, which the blocking driver waits for at most until
 * its deadline (rlock__resolve) and which wakes an event loop when done
 * (rlock__resolve_start, for the loop driver). A lookup given up on
 * finishes in the background and frees itself.
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

/* A lookup under way on a thread of its own (rlock__resolve_start). */
typedef struct rlock__lookup rlock__lookup;

/* Resolve without waiting, for an event loop. A numeric address is
 * resolved at once: RLOCK_OK with *out set. A name is looked up on a
 * thread of its own: RLOCK_OK with *pending set, and `wake(arg)` called
 * from that thread once the answer is in (never after the lookup was
 * dropped: a drop waits for a wake under way); then rlock__resolve_take.
 * Otherwise a status with `why` saying what failed. */
int rlock__resolve_start(const char *host, int port, struct addrinfo **out,
                         rlock__lookup **pending, void (*wake)(void *),
                         void *arg, char *why, size_t cap);

/* 0 while the lookup runs; 1 once it is over (the lookup is then freed):
 * *rc RLOCK_OK with *out set (freeaddrinfo() it), or RLOCK_EIO with `why`
 * saying what failed. */
int rlock__resolve_take(rlock__lookup *l, int *rc, struct addrinfo **out,
                        char *why, size_t cap);

/* Give up on a lookup: it is not told any more and frees itself when its
 * thread ends. NULL is ignored. */
void rlock__resolve_drop(rlock__lookup *l);

/* How many lookup threads are still inside getaddrinfo(), given up on or
 * not. A program that must not exit under one (a leak checker sees the
 * resolver's buffers of a thread cut off by exit) waits for 0. */
int rlock__resolve_running(void);

#endif /* RLOCK_RESOLVE_H */
