/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fault.h - helpers shared by the fault tests: status assertions that
 * print the library's message, and the end of a fake server's script.
 */
#ifndef RLOCK_TEST_FAULT_H
#define RLOCK_TEST_FAULT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "rlock.h"
#include "rt_fake.h"

/* Fail unless `rc` is `code` and (when not NULL) the last error message
 * contains `needle`. */
static inline void expect_rc(int rc, int code, const char *needle) {
  if (rc != code)
    fail_msg("got %d (%s), expected %d", rc, rlock_error_last()->message, code);
  if (needle && strstr(rlock_error_last()->message, needle) == NULL)
    fail_msg("message '%s' lacks '%s'", rlock_error_last()->message, needle);
}

/* Wait (5 s at most) until the fake's script has come to `step`: the
 * steps before it have run. */
static inline void wait_step(rt_fake *f, size_t step) {
  if (rt_fake_wait_step(f, step, 5000) != 0)
    fail_msg("fake server script, waiting for step %zu: %s", step,
             rt_fake_error(f));
}

/* Check that the fake's whole script ran without error, then free the
 * client and the fake. */
static inline void finish(rt_fake *f, rlock_client *c) {
  if (rt_fake_wait(f, 5000) != 0)
    fail_msg("fake server script: %s", rt_fake_error(f));
  rlock_client_free(c);
  rt_fake_free(f);
}

#endif /* RLOCK_TEST_FAULT_H */
