/* SPDX-License-Identifier: BSD-3-Clause */
/* version.c - runtime version queries. */
#include "rlock/version.h"

#define STR2(x) #x
#define STR(x) STR2(x)

unsigned rlock_version(void) { return RLOCK_VERSION_HEX; }

const char *rlock_version_string(void) {
  return STR(RLOCK_VERSION_MAJOR) "." STR(RLOCK_VERSION_MINOR) "." STR(
      RLOCK_VERSION_PATCH);
}
