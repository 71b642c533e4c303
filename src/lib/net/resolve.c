/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resolve.c - getaddrinfo() bounded by a deadline.
 *
 * A lookup of a name runs on its own detached thread and owns a request
 * shared with the caller: two references, the thread's and the caller's.
 * The caller waits on the request's condition variable until the answer
 * or its deadline; whichever side lets go last frees the request (and an
 * answer nobody took). So a caller that gave up returns at once, and the
 * thread never touches freed memory.
 */
#include "resolve.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

typedef struct rlock__lookup {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs; /* the caller's and the thread's */
  int done;
  int rc;        /* getaddrinfo()'s */
  int sys_errno; /* errno, for EAI_SYSTEM */
  struct addrinfo *res;
  void (*wake)(void *); /* rlock__resolve_start: told once done, unless */
  void *wake_arg;       /* dropped first */
  char port[8];
  char host[]; /* NUL-terminated */
} lookup;

/* Lookup threads started and not yet past getaddrinfo(). */
static atomic_int running;

int rlock__resolve_running(void) { return atomic_load(&running); }

static int lookup_addrinfo(const char *host, const char *port, int flags,
                           struct addrinfo **out) {
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = flags};
  return getaddrinfo(host, port, &hints, out);
}

static void lookup_unref(lookup *l) {
  pthread_mutex_lock(&l->mu);
  int last = --l->refs == 0;
  pthread_mutex_unlock(&l->mu);
  if (!last)
    return;
  if (l->res != NULL)
    freeaddrinfo(l->res);
  pthread_cond_destroy(&l->cv);
  pthread_mutex_destroy(&l->mu);
  free(l);
}

static void *lookup_main(void *arg) {
  lookup *l = arg;
  struct addrinfo *res = NULL;
  int rc = lookup_addrinfo(l->host, l->port, 0, &res);
  int e = errno;
  atomic_fetch_sub(&running, 1);
  pthread_mutex_lock(&l->mu);
  l->rc = rc;
  l->sys_errno = e;
  l->res = res;
  l->done = 1;
  pthread_cond_signal(&l->cv);
  if (l->wake != NULL) /* under the mutex: a drop waits for it */
    l->wake(l->wake_arg);
  pthread_mutex_unlock(&l->mu);
  lookup_unref(l);
  return NULL;
}

static lookup *lookup_new(const char *host, const char *port) {
  size_t n = strlen(host);
  lookup *l = rlock__calloc(1, sizeof *l + n + 1);
  if (l == NULL)
    return NULL;
  memcpy(l->host, host, n + 1);
  snprintf(l->port, sizeof l->port, "%s", port);
  l->refs = 2;
  pthread_mutex_init(&l->mu, NULL);
  rlock__cond_init(&l->cv);
  return l;
}

/* Start the lookup thread detached, with every signal blocked so that
 * signals keep reaching the application's threads. Returns 0 or an
 * errno. */
static int lookup_start(lookup *l) {
  pthread_attr_t attr;
  sigset_t all, old;
  pthread_t tid;
  int rc = pthread_attr_init(&attr);
  if (rc != 0)
    return rc;
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  atomic_fetch_add(&running, 1);
  rc = pthread_create(&tid, &attr, lookup_main, l);
  if (rc != 0)
    atomic_fetch_sub(&running, 1);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  return rc;
}

static void describe_failure(int rc, int sys_errno, char *why, size_t cap) {
  snprintf(why, cap, "name did not resolve (%s)",
           rc == EAI_SYSTEM ? strerror(sys_errno) : gai_strerror(rc));
}

/* A numeric address needs no lookup (no thread, no waiting): RLOCK_OK
 * with *out set, 1 when `host` is a name to look up, or RLOCK_EIO with
 * `why` said. `service` receives the port as text. */
static int resolve_numeric(const char *host, int port, char service[8],
                           struct addrinfo **out, char *why, size_t cap) {
  snprintf(service, 8, "%d", port);
  *out = NULL;
  int rc = lookup_addrinfo(host, service, AI_NUMERICHOST | AI_NUMERICSERV, out);
  if (rc == 0)
    return RLOCK_OK;
  *out = NULL;
  if (rc == EAI_NONAME)
    return 1;
  describe_failure(rc, errno, why, cap);
  return RLOCK_EIO;
}

/* ---- without waiting ------------------------------------------------------
 */

int rlock__resolve_start(const char *host, int port, struct addrinfo **out,
                         rlock__lookup **pending, void (*wake)(void *),
                         void *arg, char *why, size_t cap) {
  char service[8];
  *pending = NULL;
  int rc = resolve_numeric(host, port, service, out, why, cap);
  if (rc != 1)
    return rc;
  lookup *l = lookup_new(host, service);
  if (l == NULL) {
    snprintf(why, cap, "out of memory");
    return RLOCK_ENOMEM;
  }
  l->wake = wake;
  l->wake_arg = arg;
  int err = lookup_start(l);
  if (err != 0) {
    free(l); /* never shared */
    snprintf(why, cap, "name lookup could not start (%s)", strerror(err));
    return RLOCK_EIO;
  }
  *pending = l;
  return RLOCK_OK;
}

int rlock__resolve_take(rlock__lookup *p, int *rc, struct addrinfo **out,
                        char *why, size_t cap) {
  lookup *l = p;
  pthread_mutex_lock(&l->mu);
  int done = l->done, gai = l->rc, sys_errno = l->sys_errno;
  if (done && gai == 0) {
    *out = l->res;
    l->res = NULL;
  }
  pthread_mutex_unlock(&l->mu);
  if (!done)
    return 0;
  *rc = RLOCK_OK;
  if (gai != 0) {
    describe_failure(gai, sys_errno, why, cap);
    *rc = RLOCK_EIO;
  }
  rlock__resolve_drop(p);
  return 1;
}

void rlock__resolve_drop(rlock__lookup *p) {
  lookup *l = p;
  if (l == NULL)
    return;
  pthread_mutex_lock(&l->mu);
  l->wake = NULL;
  pthread_mutex_unlock(&l->mu);
  lookup_unref(l);
}

/* A name is looked up on a thread (rlock__resolve_start), waited for
 * until `deadline_us`, then taken, or dropped for the thread to free. */
int rlock__resolve(const char *host, int port, int64_t deadline_us,
                   struct addrinfo **out, char *why, size_t cap) {
  lookup *l;
  int rc = rlock__resolve_start(host, port, out, &l, NULL, NULL, why, cap);
  if (rc != RLOCK_OK || l == NULL)
    return rc; /* failed, or a numeric address */
  pthread_mutex_lock(&l->mu);
  while (!l->done)
    if (rlock__cond_wait_until(&l->cv, &l->mu, deadline_us) == ETIMEDOUT)
      break;
  pthread_mutex_unlock(&l->mu);
  if (rlock__resolve_take(l, &rc, out, why, cap))
    return rc;
  rlock__resolve_drop(l);
  snprintf(why, cap, "name lookup did not finish in time");
  return RLOCK_ETIMEOUT;
}
