/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_clock.h - redis-server processes whose wall clock a test can move.
 *
 * The server runs with the clock shim preloaded
 * (tests/support/clockshim/rt_clockshim.c: LD_PRELOAD, built without
 * sanitizers) and reads its offset from <dir>/clock.offset. Redis 7.0
 * compares key expiry times with gettimeofday(), which the shim shifts, so
 * moving the clock forward past a key's TTL makes the key expire at once
 * (at its next access, or by the active expiry cycle); TIME answers the
 * shifted clock. The server's monotonic clock is not moved.
 *
 * Same failure contract as rt_server.h (cmocka fail_msg()); call from the
 * test's own thread.
 */
#ifndef RT_CLOCK_H
#define RT_CLOCK_H

#include <stdint.h>

#include "rt_server.h"

/* rt_server_start_opts() with the shim preloaded, at offset 0. opts may be
   NULL; opts->env must be NULL (the shim's variables are its own). */
rt_server *rt_clock_server_start(const rt_server_opts *opts);

/* The server's wall clock offset in ms, as rt_clock_set_offset_ms() last
   wrote it (0 before). */
int64_t rt_clock_offset_ms(const rt_server *s);

/* Set the offset (absolute, from the real wall clock) of a server started
   by rt_clock_server_start(): the file is written anew and renamed into
   place, then this waits (up to 5 s, scaled) until the server's TIME is
   the real wall clock plus the offset, within 500 ms. Works while the
   server is stopped too (it reads the offset when it starts). */
void rt_clock_set_offset_ms(rt_server *s, int64_t offset_ms);

/* rt_clock_set_offset_ms(s, rt_clock_offset_ms(s) + delta_ms). */
void rt_clock_jump_ms(rt_server *s, int64_t delta_ms);

/* The server's TIME minus the real wall clock, in ms (what the shim adds,
   give or take the round trip). */
int64_t rt_clock_skew_ms(rt_server *s);

#endif /* RT_CLOCK_H */
