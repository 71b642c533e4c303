/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common.h - internal helpers shared by every library source: error
 * recording, monotonic time, allocation and small string utilities.
 * Internal functions are named rlock__*; nothing here is public API.
 */
#ifndef RLOCK_COMMON_H
#define RLOCK_COMMON_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "rlock/errors.h"

#if defined(__GNUC__)
#define RLOCK_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define RLOCK_PRINTF(a, b)
#endif

/* Record `code` and a formatted message as the calling thread's last
 * error; returns `code` so callers can `return rlock__err(...)`. The
 * arguments may include the last error's own message. */
int rlock__err(int code, const char *fmt, ...) RLOCK_PRINTF(2, 3);

/* A copy of the calling thread's last error, for code that must run
 * cleanup calls (which may overwrite it) and then report the original. */
typedef struct rlock__saved_error {
  int code;
  char message[512];
  int final; /* rlock__error_final() */
} rlock__saved_error;

void rlock__error_save(rlock__saved_error *s);

/* Make `s` the last error again; returns its code. */
int rlock__error_restore(const rlock__saved_error *s);

/* Mark the calling thread's last error final: trying again cannot mend
 * it (a host name that does not resolve, a certificate refused), so an
 * acquisition does not wait it out as it does a server it cannot reach
 * for now. rlock__err clears the mark; rlock__error_save and _restore
 * keep it. */
void rlock__error_final(void);

/* Whether the last error is marked final. */
int rlock__error_is_final(void);

/* Monotonic clock. Every lease, TTL and timeout in the library uses it. */
int64_t rlock__now_us(void);

/* Wall-clock epoch milliseconds. Used only where Redis needs it: the fair
 * lock's queue deadlines, which Java clients share. */
int64_t rlock__epoch_ms(void);

/* A deadline `ms` from now in monotonic microseconds; ms < 0 means none
 * (INT64_MAX). */
int64_t rlock__deadline_after_ms(int64_t ms);

/* Sleep `ms` milliseconds (all of them, across signal handlers). */
void rlock__sleep_ms(int64_t ms);

/* Milliseconds left until `deadline_us`, rounded up, never negative. */
int64_t rlock__ms_left(int64_t deadline_us);

/* A back-off's pause after `ms`: doubled, at most `max_ms`. */
int64_t rlock__doubled(int64_t ms, int64_t max_ms);

/* Initialise a condition variable that waits on the monotonic clock. */
int rlock__cond_init(pthread_cond_t *cv);

/* Wait on `cv` until signalled or `deadline_us` (monotonic, INT64_MAX for
 * none) passes. Returns 0 when signalled (possibly spuriously), ETIMEDOUT
 * once the deadline has passed. */
int rlock__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                           int64_t deadline_us);

char *rlock__strdup(const char *s);
/* *dst = a copy of src (NULL stays NULL): 0, or -1 when out of memory
 * (*dst NULL). For the optional strings of configurations and
 * endpoints. */
int rlock__dup_opt(char **dst, const char *src);

/* v in decimal into buf (at least 21 bytes), NUL-terminated; returns the
 * length. What snprintf("%lld") gives, at a tenth of its cost: numbers
 * go into every script call. */
size_t rlock__decimal(char *buf, int64_t v);
char *rlock__strndup(const char *s, size_t n);

/* 2 * n random hex digits (n <= 256; from getrandom, through a pool of
 * the calling thread's that a fork()ed child refills) and a NUL into out.
 * RLOCK_OK, RLOCK_EINVAL for n too large, or RLOCK_EIO when the kernel
 * gives no randomness. */
int rlock__random_hex(char *out, size_t n);
/* The n bytes that 2 * n hex digits (either case) spell, into out: 0, or
 * -1 when one of them is not a hex digit (reading stops there). */
int rlock__hex_bytes(const char *hex, unsigned char *out, size_t n);
/* Each hex digit's value plus one (either case), 0 for any other byte. */
extern const unsigned char rlock__hex1[256];
/* 1 when c is a hex digit (either case), whatever the locale; else 0. */
static inline int rlock__is_hex(char c) {
  return rlock__hex1[(unsigned char)c] != 0;
}

/* The calling thread's owner number (owner.h): never reused in the
 * process, unlike a Linux thread id. */
uint64_t rlock__thread_id(void);

#endif /* RLOCK_COMMON_H */
