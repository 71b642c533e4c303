/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * origin.c - the fork generation behind rlock__origin (origin.h).
 */
#include "origin.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "common.h"

atomic_uint rlock__fork_gen;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* Runs in the child of every fork(), before fork() returns there: one
 * lock-free atomic add, async-signal-safe. */
static void forked_child(void) {
  atomic_fetch_add_explicit(&rlock__fork_gen, 1, memory_order_relaxed);
}

static void register_fork_handler(void) {
  pthread_atfork(NULL, NULL, forked_child);
}

void rlock__origin_here(rlock__origin *o) {
  pthread_once(&fork_once, register_fork_handler);
  o->gen = atomic_load_explicit(&rlock__fork_gen, memory_order_relaxed);
  o->pid = getpid();
}

int rlock__origin_refuse(const rlock__origin *o) {
  return rlock__err(RLOCK_ECLOSED,
                    "client was created in process %ld; this "
                    "is a forked child (process %ld), which must create its "
                    "own client (RLOCK_ECLOSED)",
                    (long)o->pid, (long)getpid());
}
