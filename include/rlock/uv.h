/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlock/uv.h - a loop client on a libuv loop (library rlock_uv, pkg-config
 * rlock-uv; links libuv).
 *
 * The client watches its sockets with uv_poll_t handles, keeps one
 * uv_timer_t and wakes the loop from other threads with a uv_async_t (not
 * counted as keeping the loop alive). Everything of rlock/loop.h applies;
 * the loop's thread is the one that calls rlock_client_new_uv().
 * rlock_client_free() closes the handles; their memory is released by the
 * loop's next iteration, so run the loop once more after freeing the
 * client before uv_loop_close(). (libuv's own header needs POSIX's
 * declarations: a strict C program, -std=c99, defines _POSIX_C_SOURCE
 * 200809L before its first #include.)
 */
#ifndef RLOCK_UV_H
#define RLOCK_UV_H

#include <uv.h>

#include "loop.h"

RLOCK_BEGIN_DECLS

/**
 * Create a client driven by `loop` (rlock_client_new_loop's rules).
 * @return RLOCK_OK, RLOCK_EINVAL (NULL argument, or libuv refused a
 *         handle), RLOCK_ENOMEM, or rlock_client_new_loop's errors.
 */
RLOCK_EXTERN int rlock_client_new_uv(rlock_client **out,
                                     const rlock_config *cfg, uv_loop_t *loop);

/**
 * Deprecated: the former name of rlock_client_new_uv() (the constructors
 * are all rlock_client_new*), kept so programs built against it still
 * link and run; it does exactly what rlock_client_new_uv() does.
 */
RLOCK_EXTERN int rlock_uv_client_new(rlock_client **out,
                                     const rlock_config *cfg, uv_loop_t *loop);

RLOCK_END_DECLS

#endif /* RLOCK_UV_H */
