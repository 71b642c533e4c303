/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * owner.c - never-reused owner numbers and thread liveness records.
 */
#include "owner.h"

#include "rlock/lock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "alloc.h"

struct rlock__life {
  atomic_int gone;
  atomic_int refs; /* the thread's own, plus one per hold record */
};

static atomic_uint_fast64_t next_number = 1;

/* The thread's number and liveness record, made on first use. The key's
 * destructor runs when the thread exits and marks the record gone. */
static _Thread_local uint64_t thread_number;
static _Thread_local rlock__life *thread_life;
static pthread_key_t life_key;
static pthread_once_t life_once = PTHREAD_ONCE_INIT;
static int life_key_ok;

uint64_t rlock__owner_next(void) {
  return (uint64_t)atomic_fetch_add(&next_number, 1);
}

uint64_t rlock__thread_owner(void) {
  if (thread_number == 0)
    thread_number = rlock__owner_next();
  return thread_number;
}

/* Threads that exited (while owning a liveness record), ever. */
static atomic_uint exits;

unsigned rlock__thread_exits(void) { return atomic_load(&exits); }

static void thread_exits(void *arg) {
  rlock__life *life = arg;
  atomic_store(&life->gone, 1);
  atomic_fetch_add(&exits, 1);
  thread_life = NULL;
  rlock__life_unref(life);
}

static void make_key(void) {
  life_key_ok = pthread_key_create(&life_key, thread_exits) == 0;
}

rlock__life *rlock__thread_life_ref(void) {
  if (thread_life == NULL) {
    pthread_once(&life_once, make_key);
    rlock__life *life = rlock__malloc(sizeof *life);
    if (!life_key_ok || life == NULL) {
      free(life);
      return NULL;
    }
    atomic_init(&life->gone, 0);
    atomic_init(&life->refs, 1);
    if (pthread_setspecific(life_key, life) != 0) {
      free(life);
      return NULL;
    }
    thread_life = life;
  }
  atomic_fetch_add(&thread_life->refs, 1);
  return thread_life;
}

void rlock__life_unref(rlock__life *life) {
  if (life != NULL && atomic_fetch_sub(&life->refs, 1) == 1)
    free(life);
}

int rlock__life_gone(const rlock__life *life) {
  return life != NULL && atomic_load(&life->gone);
}

uint64_t rlock_owner_new(void) { return rlock__owner_next(); }

uint64_t rlock_owner_thread(void) { return rlock__thread_owner(); }
