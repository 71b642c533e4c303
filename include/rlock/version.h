/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlock/version.h - the library version, defined once.
 *
 * CMake parses the three RLOCK_VERSION_* lines below; the shared library's
 * SONAME is the major version. Within one major version the ABI only grows:
 * functions and error codes are added, never removed or renumbered.
 */
#ifndef RLOCK_VERSION_H
#define RLOCK_VERSION_H

#include "export.h"

#define RLOCK_VERSION_MAJOR 0
#define RLOCK_VERSION_MINOR 9
#define RLOCK_VERSION_PATCH 0

#define RLOCK_VERSION_HEX                                                      \
  ((RLOCK_VERSION_MAJOR << 16) | (RLOCK_VERSION_MINOR << 8) |                  \
   RLOCK_VERSION_PATCH)

RLOCK_BEGIN_DECLS

/** The runtime version as RLOCK_VERSION_HEX would spell it. */
RLOCK_EXTERN unsigned rlock_version(void);

/** The runtime version as "MAJOR.MINOR.PATCH"; a static string. */
RLOCK_EXTERN const char *rlock_version_string(void);

RLOCK_END_DECLS

#endif /* RLOCK_VERSION_H */
