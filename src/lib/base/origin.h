/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * origin.h - the process a client belongs to (base layer: every layer
 * above checks it, none below needs it).
 */
#ifndef RLOCK_ORIGIN_H
#define RLOCK_ORIGIN_H

#include <stdatomic.h>
#include <sys/types.h>

/* ---- the process a client belongs to ------------------------------------
 *
 * A fork()ed child inherits copies of a client's sockets and structures but
 * not its background thread, and the copies of the sockets carry the
 * parent's conversations: the child must never use them. A pthread_atfork()
 * child handler (registered once per process, by the first
 * rlock__origin_here()) bumps a process-wide generation; an origin records
 * the generation and pid it was taken in. Every socket a blocking client
 * uses for commands is borrowed through rlock__pool_get(), which compares
 * its pool's origin with the current generation (an atomic load: no system
 * call) and refuses with RLOCK_ECLOSED in any other process. The client
 * checks its own origin where the pool is not involved (every blocking
 * entry point, subscribing, waking the background thread,
 * rlock_client_free, and every _async entry point of a loop client, whose
 * connections are not pooled). Only fork() runs the handler:
 * a child made by vfork(), posix_spawn() or clone() must exec. */
typedef struct rlock__origin {
  unsigned gen; /* the fork generation it was taken in */
  pid_t pid;    /* for messages */
} rlock__origin;

/* The fork generation; internal to rlock__origin_ok(). */
extern atomic_uint rlock__fork_gen;

/* Record the calling process (registering the fork handler first). */
void rlock__origin_here(rlock__origin *o);

/* Whether the caller runs in the process `o` was taken in (not in a
 * fork()ed child of it). Cheap enough for every command. */
static inline int rlock__origin_ok(const rlock__origin *o) {
  return atomic_load_explicit(&rlock__fork_gen, memory_order_relaxed) == o->gen;
}

/* Set the last error to say why a client from another process is refused,
 * and return RLOCK_ECLOSED. */
int rlock__origin_refuse(const rlock__origin *o);

#endif /* RLOCK_ORIGIN_H */
