/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_util.h - small helpers shared by the test-support library and tests:
 * monotonic time, sleeping, and free loopback ports.
 *
 * Everything here is thread-safe.
 */
#ifndef RT_UTIL_H
#define RT_UTIL_H

#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds / microseconds (arbitrary epoch). */
int64_t rt_now_ms(void);
int64_t rt_now_us(void);

/* Sleep for ms milliseconds (<= 0: return at once). Sleeps the full time even
   when a signal handler interrupts it. */
void rt_sleep_ms(int64_t ms);

/* An upper bound for a timing assertion: ms times $RLOCK_TEST_TIME_SCALE
   (a positive integer, default 1), which slow instrumented builds set.
   Lower bounds must not be scaled. */
int64_t rt_scaled_ms(int64_t ms);

/*
 * A TCP port on 127.0.0.1 that was free a moment ago: the kernel picks it for
 * a socket bound to port 0, which is then closed. Another process may take
 * it before the caller binds it, so callers must cope with EADDRINUSE
 * (rt_server retries with another port). Within one process a port is never
 * handed out twice, so two servers started back to back cannot collide.
 * Returns -1 (with errno set) only if no socket can be bound at all.
 */
int rt_free_port(void);

/* Whether the process runs under valgrind (where threads take turns and
 * some bounds cannot be asked for); 0 where valgrind.h was not found. */
int rt_on_valgrind(void);

/* Wait (at most 90 s, longer than glibc's retries against a silent DNS
 * server) until no name-lookup thread of the library is still inside
 * getaddrinfo: a lookup given up on runs on, and a process that exits
 * under one leaves the resolver's buffers to the leak checkers (valgrind,
 * LeakSanitizer). Call before exiting a test that looked a name up. */
void rt_lookups_drain(void);

#endif /* RT_UTIL_H */
