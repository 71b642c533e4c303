/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fault.h - helpers shared by the fault tests: status assertions that
 * print the library's message, the end of a fake server's script, and
 * clients configured for the fake's scripts.
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

/* A configuration for the server at `url` as the fake's scripts need it:
 * they play exact command sequences, so no INFO replication probe and no
 * registry record; `command_ms`, `connect_ms`: the timeouts (0: the
 * defaults). NULL when the library refuses a setting: no assertion, so
 * that a child process may call it too. The caller frees it. */
static inline rlock_config *fault_config(const char *url, int64_t command_ms,
                                         int64_t connect_ms) {
  rlock_config *cfg;
  if (rlock_config_new(&cfg) != RLOCK_OK)
    return NULL;
  if (rlock_config_set_url(cfg, url) != RLOCK_OK ||
      rlock_config_set_replica_sync(cfg, 0) != RLOCK_OK ||
      rlock_config_set_registry_period(cfg, 0) != RLOCK_OK ||
      (command_ms > 0 &&
       rlock_config_set_command_timeout_ms(cfg, command_ms) != RLOCK_OK) ||
      (connect_ms > 0 &&
       rlock_config_set_connect_timeout_ms(cfg, connect_ms) != RLOCK_OK)) {
    rlock_config_free(cfg);
    return NULL;
  }
  return cfg;
}

/* A blocking client with fault_config(url, command_ms, connect_ms), or
 * NULL (no assertion either). */
static inline rlock_client *fault_client(const char *url, int64_t command_ms,
                                         int64_t connect_ms) {
  rlock_config *cfg = fault_config(url, command_ms, connect_ms);
  rlock_client *c = NULL;
  if (cfg != NULL && rlock_client_new(&c, cfg) != RLOCK_OK)
    c = NULL;
  rlock_config_free(cfg);
  return c;
}

/* The same for the fake `f`, failing the test when it cannot be made. */
static inline rlock_client *fake_client(rt_fake *f, int64_t command_ms,
                                        int64_t connect_ms) {
  rlock_client *c = fault_client(rt_fake_url(f), command_ms, connect_ms);
  if (c == NULL)
    fail_msg("no client for the fake: %s", rlock_error_last()->message);
  return c;
}

/* What most fault cases start from: a fake playing `s`, a blocking
 * client of it (fake_client: `command_ms`, `connect_ms`), and that
 * client's lock `name`. fake_lock_end() frees the lock, then finish()es. */
typedef struct fake_lock {
  rt_fake *f;
  rlock_client *c;
  rlock_lock *l;
} fake_lock;

static inline void fake_lock_start(fake_lock *k, const rt_fake_step *s,
                                   int64_t command_ms, int64_t connect_ms,
                                   const char *name) {
  k->f = rt_fake_start(s);
  k->c = fake_client(k->f, command_ms, connect_ms);
  if (rlock_lock_new(&k->l, k->c, name) != RLOCK_OK)
    fail_msg("no lock '%s': %s", name, rlock_error_last()->message);
}

static inline void fake_lock_end(fake_lock *k) {
  rlock_lock_free(k->l);
  finish(k->f, k->c);
}

#endif /* RLOCK_TEST_FAULT_H */
