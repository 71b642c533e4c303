/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reply.c - freeing and reading typed replies.
 */
#include "reply.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* Spare nodes, a list per thread through their `elem` pointers. Each
 * list hangs off a header in a registry that only grows (a lock-free
 * stack): a thread claims an idle header at its first spare, and the key's
 * destructor frees its nodes and makes the header idle again when the
 * thread exits. Headers are reused, never freed, so there are at most as
 * many as threads ever alive at once. Why not plain thread-local lists:
 * in a fork()ed child the other threads are gone and nothing could reach
 * their nodes (valgrind calls them lost); from the registry, a global,
 * they stay reachable (as the parent's clients do in a child). */
typedef struct spare_list {
  rlock__reply *head;
  int n;
  atomic_int busy; /* claimed by a live thread */
  struct spare_list *next;
} spare_list;

static _Atomic(spare_list *) registry;
static _Thread_local spare_list *mine;
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;
static int spare_key_ok;

static void spare_drop(void *arg) {
  spare_list *s = arg;
  while (s->head != NULL) {
    rlock__reply *o = s->head;
    s->head = (rlock__reply *)o->elem;
    free(o);
  }
  s->n = 0;
  mine = NULL;
  atomic_store(&s->busy, 0);
}

static void spare_make_key(void) {
  spare_key_ok = pthread_key_create(&spare_key, spare_drop) == 0;
}

/* An idle header, or a new one pushed on the registry; NULL without
 * memory. */
static spare_list *spare_claim(void) {
  for (spare_list *s = atomic_load(&registry); s != NULL; s = s->next) {
    int idle = 0;
    if (atomic_compare_exchange_strong(&s->busy, &idle, 1))
      return s;
  }
  spare_list *s = rlock__calloc(1, sizeof *s);
  if (s == NULL)
    return NULL;
  atomic_init(&s->busy, 1);
  s->next = atomic_load(&registry);
  while (!atomic_compare_exchange_weak(&registry, &s->next, s))
    ;
  return s;
}

/* The calling thread's list, registered for its exit; NULL on failure. */
static spare_list *spare_mine(void) {
  if (mine != NULL)
    return mine;
  pthread_once(&spare_once, spare_make_key);
  if (!spare_key_ok)
    return NULL;
  spare_list *s = spare_claim();
  if (s == NULL)
    return NULL;
  if (pthread_setspecific(spare_key, s) != 0) {
    atomic_store(&s->busy, 0);
    return NULL;
  }
  return mine = s;
}

rlock__reply *rlock__reply_new(rlock__rtype type) {
  spare_list *s = mine;
  rlock__reply *o = s != NULL ? s->head : NULL;
  if (o != NULL) {
    s->head = (rlock__reply *)o->elem;
    s->n--;
    memset(o, 0, sizeof *o);
  } else if ((o = rlock__calloc(1, sizeof *o)) == NULL) {
    return NULL;
  }
  o->type = type;
  return o;
}

/* Keep `o` (its contents freed) as a spare, or free it. */
static void recycle(rlock__reply *o) {
  spare_list *s = mine;
  if (s == NULL && (s = spare_mine()) == NULL) {
    free(o);
    return;
  }
  if (s->n >= RLOCK__REPLY_SPARE) {
    free(o);
    return;
  }
  o->elem = (rlock__reply **)s->head;
  s->head = o;
  s->n++;
}

void rlock__reply_free(rlock__reply *r) {
  if (r == NULL)
    return;
  for (size_t i = 0; i < r->n; i++)
    rlock__reply_free(r->elem[i]);
  free(r->elem);
  free(r->str);
  recycle(r);
}

int rlock__reply_is(const rlock__reply *r, const char *s) {
  return r != NULL && (r->type == RLOCK__R_STR || r->type == RLOCK__R_STATUS) &&
         r->len == strlen(s) && memcmp(r->str, s, r->len) == 0;
}

const char *rlock__reply_type_name(const rlock__reply *r) {
  static const char *const names[] = {"nil",    "integer", "string",
                                      "status", "error",   "array"};
  return r == NULL ? "none" : names[r->type];
}

int rlock__reply_starts(const rlock__reply *r, const char *prefix) {
  return r->str != NULL && strncmp(r->str, prefix, strlen(prefix)) == 0;
}

int rlock__error_status(const char *where, const rlock__reply *err) {
  int code = RLOCK_ESERVER;
  /* Redis puts WRONGTYPE first; a script's error may follow "ERR ...". */
  if (strstr(err->str, "WRONGTYPE") != NULL)
    code = RLOCK_EWRONGTYPE;
  else if (strstr(err->str, "NON_REENTRANT_REACQUIRE") != NULL)
    code = RLOCK_EHELD; /* a non-reentrant lock's script, ours or Java's */
  else if (rlock__reply_starts(err, "NOAUTH") ||
           rlock__reply_starts(err, "WRONGPASS") ||
           rlock__reply_starts(err, "NOPERM") ||
           /* a command a script ran, refused by ACL (an "ERR" reply):
            * Redis 7.0-7.1's words, then 7.2's */
           strstr(err->str, "The user executing the script can't") != NULL ||
           strstr(err->str, "ACL failure in script") != NULL)
    code = RLOCK_EAUTH;
  return rlock__err(code, "redis %s: %s", where, err->str);
}
