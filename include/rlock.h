/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlock.h - umbrella header: Redisson-compatible distributed locks for C.
 *
 * Include this one header. See README.md for an example and
 * docs/ARCHITECTURE.md for how the library is put together.
 */
#ifndef RLOCK_H
#define RLOCK_H

#include "rlock/export.h"
#include "rlock/version.h"
#include "rlock/errors.h"
#include "rlock/config.h"
#include "rlock/client.h"
#include "rlock/lock.h"
#include "rlock/multilock.h"
#include "rlock/redlock.h"
#include "rlock/election.h"
#include "rlock/loop.h"
#include "rlock/semaphore.h"
#include "rlock/latch.h"
#include "rlock/watch.h"

#endif /* RLOCK_H */
