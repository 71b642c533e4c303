/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common.c - last-error storage, monotonic time, thread ids.
 */
#include "common.h"
#include "owner.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define ERRBUF_SIZE 512

static _Thread_local char errbuf[ERRBUF_SIZE];
static _Thread_local rlock_error last_error = {RLOCK_OK, ""};
static _Thread_local int last_final; /* rlock__error_final */

int rlock__err(int code, const char *fmt, ...) {
  /* Formatted aside first: an argument may be the last error itself
   * (wording a lower layer's message), and vsnprintf into its own source
   * is undefined. */
  char tmp[sizeof errbuf];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  memcpy(errbuf, tmp, sizeof errbuf);
  last_error.code = code;
  last_error.message = errbuf;
  last_final = 0;
  return code;
}

void rlock__error_final(void) { last_final = 1; }

int rlock__error_is_final(void) { return last_final; }

void rlock__error_save(rlock__saved_error *s) {
  s->code = last_error.code;
  s->final = last_final;
  snprintf(s->message, sizeof s->message, "%s",
           last_error.message ? last_error.message : "");
}

int rlock__error_restore(const rlock__saved_error *s) {
  rlock__err(s->code, "%s", s->message);
  last_final = s->final;
  return s->code;
}

const rlock_error *rlock_error_last(void) {
  if (last_error.message == NULL)
    last_error.message = "";
  return &last_error;
}

const char *rlock_strerror(int code) {
  switch (code) {
  case RLOCK_OK:
    return "success";
  case RLOCK_EINVAL:
    return "invalid argument";
  case RLOCK_ENOMEM:
    return "out of memory";
  case RLOCK_EIO:
    return "server unreachable or connection lost";
  case RLOCK_ETIMEOUT:
    return "server did not answer in time";
  case RLOCK_EPROTO:
    return "unexpected reply from server";
  case RLOCK_ESERVER:
    return "server returned an error";
  case RLOCK_EAUTH:
    return "authentication or database selection refused";
  case RLOCK_EWRONGTYPE:
    return "key holds a value that is not a lock";
  case RLOCK_ELOCKED:
    return "lock is held by another owner";
  case RLOCK_ENOTHELD:
    return "lock is not held by the caller";
  case RLOCK_ELOST:
    return "lock was lost while held";
  case RLOCK_ECLOSED:
    return "client closed: being freed, or made by another process";
  case RLOCK_ECANCELED:
    return "wait canceled";
  case RLOCK_EDEADLK:
    return "would deadlock (a read hold's upgrade, or a client freed on its "
           "background thread)";
  case RLOCK_EREPLICA:
    return "no replica confirmed the write in time";
  case RLOCK_EHELD:
    return "a non-reentrant lock is already held by this owner";
  default:
    return "unknown error";
  }
}

int64_t rlock__now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t rlock__epoch_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t rlock__deadline_after_ms(int64_t ms) {
  if (ms < 0)
    return INT64_MAX;
  return rlock__now_us() + ms * 1000;
}

int64_t rlock__ms_left(int64_t deadline_us) {
  if (deadline_us == INT64_MAX)
    return INT64_MAX;
  int64_t left = deadline_us - rlock__now_us();
  return left <= 0 ? 0 : (left + 999) / 1000;
}

int64_t rlock__doubled(int64_t ms, int64_t max_ms) {
  return ms * 2 < max_ms ? ms * 2 : max_ms;
}

int rlock__cond_init(pthread_cond_t *cv) {
  pthread_condattr_t attr;
  int rc = pthread_condattr_init(&attr);
  if (rc == 0)
    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  if (rc == 0)
    rc = pthread_cond_init(cv, &attr);
  pthread_condattr_destroy(&attr);
  return rc;
}

int rlock__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                           int64_t deadline_us) {
  if (deadline_us == INT64_MAX)
    return pthread_cond_wait(cv, mu);
  if (rlock__now_us() >= deadline_us)
    return ETIMEDOUT;
  struct timespec ts = {.tv_sec = deadline_us / 1000000,
                        .tv_nsec = (deadline_us % 1000000) * 1000};
  int rc = pthread_cond_timedwait(cv, mu, &ts);
  return rc == ETIMEDOUT ? ETIMEDOUT : 0;
}

char *rlock__strndup(const char *s, size_t n) {
  char *p = rlock__malloc(n + 1);
  if (p == NULL)
    return NULL;
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

char *rlock__strdup(const char *s) { return rlock__strndup(s, strlen(s)); }

size_t rlock__decimal(char *buf, int64_t v) {
  char tmp[20];
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  size_t n = 0, len = 0;
  do
    tmp[n++] = (char)('0' + u % 10);
  while ((u /= 10) != 0);
  if (v < 0)
    buf[len++] = '-';
  while (n > 0)
    buf[len++] = tmp[--n];
  buf[len] = '\0';
  return len;
}

uint64_t rlock__thread_id(void) { return rlock__thread_owner(); }

void rlock__sleep_ms(int64_t ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
  while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

int rlock__random_hex(char *out, size_t n) {
  unsigned char b[64];
  size_t got = 0;
  if (n > sizeof b)
    return rlock__err(RLOCK_EINVAL, "rlock__random_hex: %zu bytes", n);
  while (got < n) {
    ssize_t k = getrandom(b + got, n - got, 0);
    if (k < 0 && errno != EINTR)
      return rlock__err(RLOCK_EIO, "getrandom failed: %s", strerror(errno));
    if (k > 0)
      got += (size_t)k;
  }
  for (size_t i = 0; i < n; i++)
    snprintf(out + 2 * i, 3, "%02x", b[i]);
  return RLOCK_OK;
}
