/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz.h - what the libFuzzer targets of fuzz/ share: a check that crashes
 * (so libFuzzer keeps the input), a NUL-terminated copy of the input, and
 * silencing the CLI's own output.
 */
#ifndef RLOCK_FUZZ_H
#define RLOCK_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A property every input must keep; a violation is a crash to libFuzzer.
 * Written to fd 2, which fuzz_quiet() leaves alone. */
#define FUZZ_CHECK(cond)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      dprintf(2, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);      \
      abort();                                                                 \
    }                                                                          \
  } while (0)

/* The input as a C string (up to its first NUL); free() it. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (s == NULL)
    abort();
  memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

/* Send the CLI's usage and help text to /dev/null; RLOCK_FUZZ_VERBOSE=1
 * keeps it. libFuzzer and the sanitizers still report on the real stderr:
 * they keep their own FILE or write to fd 2. */
static inline void fuzz_quiet(void) {
  const char *v = getenv("RLOCK_FUZZ_VERBOSE");
  if (v != NULL && v[0] == '1')
    return;
  FILE *null = fopen("/dev/null", "w");
  if (null != NULL)
    stdout = stderr = null;
}

#endif /* RLOCK_FUZZ_H */
