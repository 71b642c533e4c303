/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * setup.h - a client's core, below either driver (setup.c): what
 * rlock_client_new (api/client.c) and rlock_client_new_loop (loop/core.c)
 * both start from, and free last.
 */
#ifndef RLOCK_SETUP_H
#define RLOCK_SETUP_H

#include "client_int.h"

/* A client without its driver: its configuration (a copy of `cfg`, NULL
 * for the defaults), identity, TLS context, topology, hold records and
 * registry record. rlock_client_new starts the background thread on it,
 * rlock_client_new_loop attaches an event loop; each sets c->drv.
 * RLOCK_OK, or the failure (nothing left allocated). */
int rlock__client_setup(rlock_client **out, const rlock_config *cfg);

/* Free what rlock__client_setup made (the driver stopped first). */
void rlock__client_teardown(rlock_client *c);

#endif /* RLOCK_SETUP_H */
