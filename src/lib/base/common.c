/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common.c - last-error storage, monotonic time, thread ids, decimals,
 * hex and random ids.
 */
#include "common.h"
#include "origin.h"
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

int rlock__dup_opt(char **dst, const char *src) {
  *dst = NULL;
  return src == NULL || (*dst = rlock__strdup(src)) != NULL ? 0 : -1;
}

size_t rlock__decimal(char *buf, int64_t v) {
  /* Two digits a division: a call's numbers (epoch ms, deadlines) have
   * thirteen. */
  static const char pairs[] =
      "00010203040506070809101112131415161718192021222324"
      "25262728293031323334353637383940414243444546474849"
      "50515253545556575859606162636465666768697071727374"
      "75767778798081828384858687888990919293949596979899";
  char tmp[20];
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  size_t n = sizeof tmp, len = 0;
  while (u >= 100) {
    const char *d = pairs + 2 * (u % 100);
    u /= 100;
    tmp[--n] = d[1];
    tmp[--n] = d[0];
  }
  if (u >= 10) {
    tmp[--n] = pairs[2 * u + 1];
    tmp[--n] = pairs[2 * u];
  } else {
    tmp[--n] = (char)('0' + u);
  }
  if (v < 0)
    buf[len++] = '-';
  memcpy(buf + len, tmp + n, sizeof tmp - n);
  len += sizeof tmp - n;
  buf[len] = '\0';
  return len;
}

uint64_t rlock__thread_id(void) { return rlock__thread_owner(); }

void rlock__sleep_ms(int64_t ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
  while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

const unsigned char rlock__hex1[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,
    ['6'] = 7,  ['7'] = 8,  ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12,
    ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16, ['A'] = 11, ['B'] = 12,
    ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16};

int rlock__hex_bytes(const char *hex, unsigned char *out, size_t n) {
  /* Table lookups, a predictable branch a digit: a permit id is decoded
   * on every acquire and release. A NUL is no digit, so the string is
   * never read past it. */
  for (size_t i = 0; i < n; i++) {
    unsigned hi = rlock__hex1[(unsigned char)hex[2 * i]];
    if (hi == 0)
      return -1;
    unsigned lo = rlock__hex1[(unsigned char)hex[2 * i + 1]];
    if (lo == 0)
      return -1;
    out[i] = (unsigned char)((hi - 1) << 4 | (lo - 1));
  }
  return 0;
}

/* Random bytes from a pool of the calling thread's, filled by one
 * getrandom() call for sixteen permit ids: an id is made for every
 * acquisition of a permit, and a system call each was a percent of an
 * uncontended pair. The pool is dropped when the process is a fork()ed
 * child of the one that filled it (origin.h's generation; the first fill
 * registers the fork handler), so a child never repeats its parent's ids.
 * RLOCK_OK, or RLOCK_EIO when the kernel gives no randomness. */
static _Thread_local struct {
  unsigned char b[256];
  size_t left; /* unused bytes, at the end of b */
  unsigned gen;
} pool;

static int random_fill(void) {
  rlock__origin here;
  rlock__origin_here(&here);
  size_t got = 0;
  while (got < sizeof pool.b) {
    ssize_t k = getrandom(pool.b + got, sizeof pool.b - got, 0);
    if (k < 0 && errno != EINTR) {
      pool.left = 0;
      return rlock__err(RLOCK_EIO, "getrandom failed: %s", strerror(errno));
    }
    if (k > 0)
      got += (size_t)k;
  }
  pool.left = sizeof pool.b;
  pool.gen = here.gen;
  return RLOCK_OK;
}

int rlock__random_hex(char *out, size_t n) {
  if (n > sizeof pool.b)
    return rlock__err(RLOCK_EINVAL, "rlock__random_hex: %zu bytes", n);
  if (pool.left < n || !rlock__origin_ok(&(rlock__origin){.gen = pool.gen})) {
    int rc = random_fill();
    if (rc != RLOCK_OK)
      return rc;
  }
  const unsigned char *b = pool.b + sizeof pool.b - pool.left;
  pool.left -= n;
  /* A table, not snprintf: a permit id is made on every acquisition, and
   * sixteen snprintf calls cost more than the rest of it together. */
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[b[i] >> 4];
    out[2 * i + 1] = digits[b[i] & 15];
  }
  out[2 * n] = '\0';
  return RLOCK_OK;
}
