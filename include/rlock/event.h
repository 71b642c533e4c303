/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlock/event.h - a loop client on a libevent event_base (library
 * rlock_event, pkg-config rlock-event; links libevent).
 *
 * The client watches its sockets with persistent events, keeps one timer
 * event, and is woken from other threads through an eventfd of its own
 * (so the base need not be made thread-aware). Everything of rlock/loop.h
 * applies; the loop's thread is the one that calls
 * rlock_client_new_event(). The wake-up event is persistent, so
 * event_base_dispatch() does not return while the client exists.
 * rlock_client_free() deletes and frees the events at once; the base must
 * outlive the client.
 */
#ifndef RLOCK_EVENT_H
#define RLOCK_EVENT_H

#include <event2/event.h>

#include "loop.h"

RLOCK_BEGIN_DECLS

/**
 * Create a client driven by `base` (rlock_client_new_loop's rules).
 * @return RLOCK_OK, RLOCK_EINVAL (NULL argument), RLOCK_EIO (no eventfd,
 *         or libevent refused an event), RLOCK_ENOMEM, or
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
