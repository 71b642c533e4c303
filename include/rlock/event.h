/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlock/event.h - a loop client on a libevent event_base (library
 * rlock_event, pkg-config rlock-event; links libevent).
 *
 * The client watches its sockets with persistent events, and two file
 * descriptors of its own with two more: a timerfd for its one timer and
 * an eventfd that wakes it from other threads (so the base need not be
 * made thread-aware). Everything of rlock/loop.h applies; the loop's
 * thread is the one that calls rlock_client_new_event(). The wake-up
 * event is persistent, so event_base_dispatch() does not return while the
 * client exists. rlock_client_free() deletes and frees the events and
 * closes the descriptors at once; the base must outlive the client.
 *
 * Timers: the client's timer (bounded waits, retries, the watchdog's
 * renewals) is a timerfd on CLOCK_MONOTONIC, armed from the moment it is
 * set, so it fires no earlier than asked and is as precise whatever
 * flags the base was made with. The program's own evtimers are not: on
 * Linux a base made by event_base_new() keeps time with
 * CLOCK_MONOTONIC_COARSE, one kernel tick (4 ms at HZ=250), so that an
 * evtimer fires up to a tick late or more (a 2 ms one after about 4 ms).
 * For precise timers of its own, make the base with
 *
 *   struct event_config *ec = event_config_new();
 *   event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
 *   struct event_base *base = event_base_new_with_config(ec);
 *   event_config_free(ec);
 *
 * (or set EVENT_PRECISE_TIMER=1 in the environment, for a base made
 * without EVENT_BASE_FLAG_IGNORE_ENV). The client's own timer does not
 * depend on it.
 */
#ifndef RLOCK_EVENT_H
#define RLOCK_EVENT_H

#include <event2/event.h>

#include "loop.h"

RLOCK_BEGIN_DECLS

/**
 * Create a client driven by `base` (rlock_client_new_loop's rules).
 * @return RLOCK_OK, RLOCK_EINVAL (NULL argument), RLOCK_EIO (no eventfd
 *         or timerfd, or libevent refused an event), RLOCK_ENOMEM, or
 *         rlock_client_new_loop's errors.
 */
RLOCK_EXTERN int rlock_client_new_event(rlock_client **out,
                                        const rlock_config *cfg,
                                        struct event_base *base);

/**
 * Deprecated: the former name of rlock_client_new_event() (the
 * constructors are all rlock_client_new*), kept so programs built against
 * it still link and run; it does exactly what rlock_client_new_event()
 * does.
 */
RLOCK_EXTERN int rlock_event_client_new(rlock_client **out,
                                        const rlock_config *cfg,
                                        struct event_base *base);

RLOCK_END_DECLS

#endif /* RLOCK_EVENT_H */
