/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: every public function validates its arguments without any
 * server (the client never connects until an operation needs it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <string.h>

#include "rlock.h"
#include "rlock/loop.h"

/* Check a status code and that the message mentions `needle` (if any). */
static void check_rc(int rc, int code, const char *needle, const char *expr) {
  if (rc != code)
    fail_msg("%s returned %d (%s), expected %d", expr, rc,
             rlock_error_last()->message, code);
  if (needle != NULL && strstr(rlock_error_last()->message, needle) == NULL)
    fail_msg("%s: message '%s' does not mention '%s'", expr,
             rlock_error_last()->message, needle);
}

#define ASSERT_RC(expr, code, needle) check_rc((expr), (code), (needle), #expr)

static void test_config_setters(void **state) {
  (void)state;
  rlock_config *cfg;
  ASSERT_RC(rlock_config_new(NULL), RLOCK_EINVAL, "NULL");
  assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
  ASSERT_RC(rlock_config_set_url(NULL, "redis://h"), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_config_set_url(cfg, NULL), RLOCK_EINVAL, "empty");
  ASSERT_RC(rlock_config_set_url(cfg, "nope"), RLOCK_EINVAL, "redis://");
  ASSERT_RC(rlock_config_set_connect_timeout_ms(cfg, 0), RLOCK_EINVAL,
            "between");
  ASSERT_RC(rlock_config_set_connect_timeout_ms(cfg, -5), RLOCK_EINVAL, "-5");
  ASSERT_RC(rlock_config_set_command_timeout_ms(cfg, INT64_MAX), RLOCK_EINVAL,
            NULL);
  ASSERT_RC(rlock_config_set_watchdog_timeout_ms(cfg, 10), RLOCK_EINVAL,
            "watchdog");
  ASSERT_RC(
      rlock_config_set_watchdog_timeout_ms(cfg, RLOCK_MAX_DURATION_MS + 1),
      RLOCK_EINVAL, NULL);
  ASSERT_RC(rlock_config_set_pool_size(cfg, 0), RLOCK_EINVAL, "pool");
  ASSERT_RC(rlock_config_set_pool_size(cfg, 5000), RLOCK_EINVAL, "pool");
  ASSERT_RC(rlock_config_set_unreachable_retry_ms(NULL, 10), RLOCK_EINVAL,
            "NULL");
  ASSERT_RC(rlock_config_set_unreachable_retry_ms(cfg, -2), RLOCK_EINVAL,
            "RLOCK_RETRY_FOREVER");
  ASSERT_RC(
      rlock_config_set_unreachable_retry_ms(cfg, RLOCK_MAX_DURATION_MS + 1),
      RLOCK_EINVAL, "unreachable retry");
  ASSERT_RC(rlock_config_set_unreachable_retry_ms(cfg, 0), RLOCK_OK, NULL);
  ASSERT_RC(rlock_config_set_unreachable_retry_ms(cfg, RLOCK_RETRY_FOREVER),
            RLOCK_OK, NULL);
  ASSERT_RC(rlock_config_set_url(cfg, "redis://127.0.0.1:1"), RLOCK_OK, NULL);
  ASSERT_RC(rlock_config_set_watchdog_timeout_ms(cfg, 1000), RLOCK_OK, NULL);
  ASSERT_RC(rlock_config_set_pool_size(cfg, 8), RLOCK_OK, NULL);
  ASSERT_RC(rlock_config_set_lost_callback(cfg, NULL, NULL), RLOCK_OK, NULL);
  rlock_config_free(cfg);
  rlock_config_free(NULL);
}

static void test_client_identity(void **state) {
  (void)state;
  rlock_client *c;
  ASSERT_RC(rlock_client_new(NULL, NULL), RLOCK_EINVAL, NULL);
  assert_int_equal(rlock_client_new(&c, NULL), RLOCK_OK);
  const char *id = rlock_client_id(c);
  assert_int_equal(strlen(id), 36);
  for (int i = 0; i < 36; i++) {
    if (i == 8 || i == 13 || i == 18 || i == 23)
      assert_int_equal(id[i], '-');
    else
      assert_non_null(strchr("0123456789abcdef", id[i]));
  }
  assert_int_equal(id[14], '4'); /* version 4 */
  assert_non_null(strchr("89ab", id[19]));
  char owner[RLOCK_OWNER_MAX];
  assert_int_equal(rlock_client_owner(owner, sizeof owner, c), RLOCK_OK);
  assert_memory_equal(owner, id, 36);
  assert_int_equal(owner[36], ':');
  ASSERT_RC(rlock_client_owner(owner, 10, c), RLOCK_EINVAL, "small");
  ASSERT_RC(rlock_client_owner(NULL, 10, c), RLOCK_EINVAL, NULL);
  rlock_client *c2;
  assert_int_equal(rlock_client_new(&c2, NULL), RLOCK_OK);
  assert_string_not_equal(rlock_client_id(c2), id);
  rlock_client_free(c2);
  rlock_client_free(c);
  rlock_client_free(NULL);
}

/* Each refusal of rlock_client_metrics_text names its own cause: an
 * unknown flag is named even when buf is NULL with size 0 (a size
 * query). */
static void test_metrics_text_args(void **state) {
  (void)state;
  rlock_client *c;
  assert_int_equal(rlock_client_new(&c, NULL), RLOCK_OK);
  size_t needed = 0;
  ASSERT_RC(rlock_client_metrics_text(NULL, NULL, 0, &needed, 0), RLOCK_EINVAL,
            "client is NULL");
  ASSERT_RC(rlock_client_metrics_text(c, NULL, 10, &needed, 0), RLOCK_EINVAL,
            "buf is NULL");
  ASSERT_RC(rlock_client_metrics_text(c, NULL, 0, &needed, 2), RLOCK_EINVAL,
            "unknown flags");
  char buf[64];
  ASSERT_RC(rlock_client_metrics_text(c, buf, sizeof buf, &needed, 2),
            RLOCK_EINVAL, "unknown flags");
  ASSERT_RC(rlock_client_metrics_text(c, NULL, 0, &needed, 0), RLOCK_EINVAL,
            "bytes needed");
  assert_true(needed > 1);
  rlock_client_free(c);
}

static void test_lock_names(void **state) {
  (void)state;
  rlock_client *c;
  rlock_lock *l;
  assert_int_equal(rlock_client_new(&c, NULL), RLOCK_OK);
  ASSERT_RC(rlock_lock_new(NULL, c, "x"), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_lock_new(&l, NULL, "x"), RLOCK_EINVAL, "client");
  ASSERT_RC(rlock_lock_new(&l, c, NULL), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_lock_new(&l, c, ""), RLOCK_EINVAL, "empty");
  char big[RLOCK_MAX_NAME_LEN + 2];
  memset(big, 'n', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  ASSERT_RC(rlock_lock_new(&l, c, big), RLOCK_EINVAL, "longer");
  ASSERT_RC(rlock_lock_new(&l, c, "a{}b"), RLOCK_EINVAL, "tag");
  ASSERT_RC(rlock_lock_new(&l, c, "a{b"), RLOCK_EINVAL, "tag");
  ASSERT_RC(rlock_lock_new(&l, c, "a}b"), RLOCK_EINVAL, "tag"); /* lone } */
  big[RLOCK_MAX_NAME_LEN] = '\0';
  ASSERT_RC(rlock_lock_new(&l, c, big), RLOCK_OK, NULL);
  rlock_lock_free(l);
  ASSERT_RC(rlock_lock_new(&l, c, "{user42}:orders"), RLOCK_OK, NULL);
  assert_string_equal(rlock_lock_name(l), "{user42}:orders");
  rlock_lock_free(l);
  rlock_lock_free(NULL);
  rlock_client_free(c);
}

static void test_lock_durations(void **state) {
  (void)state;
  rlock_client *c;
  rlock_lock *l;
  assert_int_equal(rlock_client_new(&c, NULL), RLOCK_OK);
  assert_int_equal(rlock_lock_new(&l, c, "durations"), RLOCK_OK);
  ASSERT_RC(rlock_lock_try_acquire(l, -2, 0), RLOCK_EINVAL, "wait");
  ASSERT_RC(rlock_lock_try_acquire(l, RLOCK_MAX_DURATION_MS + 1, 0),
            RLOCK_EINVAL, "wait");
  ASSERT_RC(rlock_lock_try_acquire(l, 0, -1), RLOCK_EINVAL, "lease");
  ASSERT_RC(rlock_lock_try_acquire(l, 0, INT64_MAX), RLOCK_EINVAL, "lease");
  /* acquire_lease(l, 0) is a watchdog lease, as try_acquire's: accepted
   * (test_lock_basic.c takes one against a server). */
  ASSERT_RC(rlock_lock_acquire_lease(l, -100), RLOCK_EINVAL, "lease");
  ASSERT_RC(rlock_lock_acquire_lease(l, RLOCK_MAX_DURATION_MS + 1),
            RLOCK_EINVAL, "lease");
  ASSERT_RC(rlock_lock_try_acquire(NULL, 0, 0), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_lock_release(NULL), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_lock_force_release(NULL, NULL), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_lock_check(NULL), RLOCK_EINVAL, "NULL");
  int flag;
  int64_t n;
  rlock_lock_info *info;
  ASSERT_RC(rlock_lock_is_locked(NULL, l), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_lock_is_locked(&flag, NULL), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_lock_is_held(NULL, l), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_lock_hold_count(NULL, l), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_lock_hold_count(&n, NULL), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_lock_ttl(NULL, l), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_lock_inspect(NULL, l), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_lock_inspect(&info, NULL), RLOCK_EINVAL, "NULL");
  /* Nothing held locally: answered without a server. */
  ASSERT_RC(rlock_lock_check(l), RLOCK_ENOTHELD, "not held");
  assert_int_equal(rlock_lock_info_holder_count(NULL), 0);
  assert_null(rlock_lock_info_holder_owner(NULL, 0));
  rlock_lock_info_free(NULL);
  rlock_lock_free(l);
  rlock_client_free(c);
}

/* A caller built against version 1 of rlock_acquire_options owns only
 * version 1's bytes: the library reads and initialises no more (a heap
 * block of exactly that size, so ASan flags any access past it). */
static void test_options_version(void **state) {
  (void)state;
  size_t v1 = offsetof(rlock_acquire_options, token) + sizeof(int64_t *);
  rlock_acquire_options *o = malloc(v1);
  assert_non_null(o);
  ASSERT_RC(rlock_acquire_options_init(o, 1), RLOCK_OK, NULL);
  assert_int_equal(o->version, 1);
  assert_true(o->wait_ms == RLOCK_WAIT_FOREVER);
  assert_true(o->lease_ms == RLOCK_LEASE_WATCHDOG);
  assert_true(o->owner == RLOCK_OWNER_THREAD);
  assert_null(o->cancel);
  assert_null(o->token);
  ASSERT_RC(rlock_acquire_options_init(o, 0), RLOCK_EINVAL, "version 0");
  ASSERT_RC(rlock_acquire_options_init(o, RLOCK_ACQUIRE_OPTIONS_VERSION + 1),
            RLOCK_EINVAL, "version");
  ASSERT_RC(rlock_acquire_options_init(NULL, 1), RLOCK_EINVAL, "NULL");
  rlock_client *c;
  rlock_lock *l;
  assert_int_equal(rlock_client_new(&c, NULL), RLOCK_OK);
  assert_int_equal(rlock_lock_new(&l, c, "options"), RLOCK_OK);
  o->wait_ms = -5; /* read whole, then refused: no server needed */
  ASSERT_RC(rlock_lock_acquire_opts(l, o), RLOCK_EINVAL, "wait");
  o->wait_ms = 0;
  o->version = 0;
  ASSERT_RC(rlock_lock_acquire_opts(l, o), RLOCK_EINVAL, "version 0");
  o->version = RLOCK_ACQUIRE_OPTIONS_VERSION + 1;
  ASSERT_RC(rlock_lock_acquire_opts(l, o), RLOCK_EINVAL, "version");
  free(o);
  rlock_lock_free(l);
  rlock_client_free(c);
}

/* The semaphores and the latch: every argument checked before any I/O. */
static void noop(void *arg, int rc, int64_t v) { (void)arg, (void)rc, (void)v; }

static void test_sync_args(void **state) {
  (void)state;
  rlock_config *cfg;
  rlock_client *c;
  assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
  assert_int_equal(rlock_config_set_url(cfg, "redis://127.0.0.1:1"), RLOCK_OK);
  assert_int_equal(rlock_client_new(&c, cfg), RLOCK_OK);
  rlock_config_free(cfg);
  rlock_semaphore *s;
  rlock_psemaphore *p;
  rlock_latch *x;
  ASSERT_RC(rlock_semaphore_new(NULL, c, "s"), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_semaphore_new(&s, NULL, "s"), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_psemaphore_new(&p, c, ""), RLOCK_EINVAL, "empty");
  ASSERT_RC(rlock_latch_new(&x, c, "a{}b"), RLOCK_EINVAL, "tag");
  assert_int_equal(rlock_semaphore_new(&s, c, "s"), RLOCK_OK);
  assert_int_equal(rlock_psemaphore_new(&p, c, "p"), RLOCK_OK);
  assert_int_equal(rlock_latch_new(&x, c, "x"), RLOCK_OK);
  assert_string_equal(rlock_semaphore_name(s), "s");
  assert_null(rlock_latch_name(NULL));
  /* NULL objects */
  ASSERT_RC(rlock_semaphore_acquire(NULL, 1, 0, NULL), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_semaphore_release(NULL, 1), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_psemaphore_check(NULL, "x"), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_latch_count_down(NULL), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_semaphore_available(NULL, s), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_latch_count(NULL, x), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_psemaphore_acquire(NULL, p, 0, 0, NULL), RLOCK_EINVAL,
            "NULL");
  /* counts and durations */
  ASSERT_RC(rlock_semaphore_acquire(s, 0, 0, NULL), RLOCK_EINVAL, "permits");
  ASSERT_RC(rlock_semaphore_acquire(s, RLOCK_MAX_PERMITS + 1, 0, NULL),
            RLOCK_EINVAL, "permits");
  ASSERT_RC(rlock_semaphore_acquire(s, 1, -5, NULL), RLOCK_EINVAL, "wait");
  ASSERT_RC(rlock_semaphore_release(s, -1), RLOCK_EINVAL, "permits");
  ASSERT_RC(rlock_semaphore_try_set_permits(NULL, s, -1), RLOCK_EINVAL,
            "permits");
  ASSERT_RC(rlock_semaphore_add_permits(s, 0), RLOCK_EINVAL, "delta");
  ASSERT_RC(rlock_psemaphore_set_permits(p, RLOCK_MAX_PERMITS + 1),
            RLOCK_EINVAL, "permits");
  char id[RLOCK_PERMIT_ID_LEN + 1];
  ASSERT_RC(rlock_psemaphore_acquire(id, p, 0, -1, NULL), RLOCK_EINVAL,
            "lease");
  ASSERT_RC(rlock_psemaphore_acquire(id, p, 0, RLOCK_MAX_DURATION_MS + 1, NULL),
            RLOCK_EINVAL, "lease");
  ASSERT_RC(rlock_psemaphore_release(p, NULL), RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_psemaphore_release(p, "0123"), RLOCK_EINVAL, "hex");
  ASSERT_RC(rlock_psemaphore_release(p, "0123456789abcdef0123456789abcdeg"),
            RLOCK_EINVAL, "hex");
  ASSERT_RC(rlock_psemaphore_release(p, "0123456789abcdef0123456789abcdef0"),
            RLOCK_EINVAL, "hex");
  ASSERT_RC(rlock_psemaphore_check(p, "g123456789abcdef0123456789abcdef"),
            RLOCK_EINVAL, "hex");
  ASSERT_RC(
      rlock_psemaphore_update_lease(p, "0123456789abcdef0123456789abcdef", 0),
      RLOCK_EINVAL, "lease");
  ASSERT_RC(rlock_psemaphore_check(p, "0123456789abcdef0123456789abcdef"),
            RLOCK_ENOTHELD, NULL);
  ASSERT_RC(rlock_psemaphore_inspect(NULL, p), RLOCK_EINVAL, "NULL");
  rlock_permits_info *info = NULL;
  ASSERT_RC(rlock_psemaphore_inspect(&info, NULL), RLOCK_EINVAL, "NULL");
  assert_null(info);
  assert_int_equal(rlock_permits_info_leased(NULL), 0);
  assert_null(rlock_permits_info_id(NULL, 0));
  rlock_permits_info_free(NULL);
  ASSERT_RC(rlock_psemaphore_inspect_async(p, NULL, NULL), RLOCK_EINVAL,
            "NULL");
  ASSERT_RC(rlock_latch_try_set_count(NULL, x, 0), RLOCK_EINVAL, "count");
  ASSERT_RC(rlock_latch_try_set_count(NULL, x, -3), RLOCK_EINVAL, "count");
  ASSERT_RC(rlock_latch_await(x, -2, NULL), RLOCK_EINVAL, "wait");
  /* the _async forms need a loop client */
  ASSERT_RC(rlock_semaphore_release_async(s, 1, noop, NULL), RLOCK_EINVAL,
            "rlock_client_new_loop");
  ASSERT_RC(rlock_semaphore_acquire_async(s, 1, 0, NULL, NULL, NULL),
            RLOCK_EINVAL, "NULL");
  ASSERT_RC(rlock_latch_await_async(x, 0, noop, NULL, NULL), RLOCK_EINVAL,
            "rlock_client_new_loop");
  ASSERT_RC(rlock_psemaphore_release_async(p, NULL, noop, NULL), RLOCK_EINVAL,
            "NULL");
  rlock_semaphore_free(s);
  rlock_psemaphore_free(p);
  rlock_latch_free(x);
  rlock_semaphore_free(NULL);
  assert_int_equal(rlock_client_free(c), RLOCK_OK);
}

static void test_strerror(void **state) {
  (void)state;
  for (int code = RLOCK_EDEADLK; code <= RLOCK_OK; code++)
    assert_string_not_equal(rlock_strerror(code), "unknown error");
  assert_string_equal(rlock_strerror(-999), "unknown error");
  assert_non_null(rlock_error_last());
  assert_non_null(rlock_error_last()->message);
  assert_int_equal(rlock_version(), RLOCK_VERSION_HEX);
  assert_non_null(strchr(rlock_version_string(), '.'));
}

static void ignore_result(void *arg, int rc, int64_t value) {
  (void)arg, (void)rc, (void)value;
  fail_msg("a refused operation's callback ran");
}

/* A blocking client runs the loop engine on its background thread: the
 * adapter's entry points must not reach it from a user's thread, and the
 * _async functions must still refuse it. */
static void test_blocking_not_a_loop_client(void **state) {
  (void)state;
  rlock_client *c;
  rlock_lock *l;
  assert_int_equal(rlock_client_new(&c, NULL), RLOCK_OK);
  assert_int_equal(rlock_lock_new(&l, c, "api-args"), RLOCK_OK);
  rlock_loop_io(c, 0, RLOCK_LOOP_READ); /* ignored */
  rlock_loop_timer(c);
  rlock_loop_wake(c);
  rlock_acquire_options o;
  rlock_acquire_options_init(&o, RLOCK_ACQUIRE_OPTIONS_VERSION);
  o.owner = rlock_owner_new();
  ASSERT_RC(rlock_lock_acquire_async(l, &o, ignore_result, NULL, NULL),
            RLOCK_EINVAL, "rlock_client_new_loop");
  ASSERT_RC(rlock_lock_release_async(l, o.owner, ignore_result, NULL),
            RLOCK_EINVAL, "rlock_client_new_loop");
  rlock_lock_free(l);
  assert_int_equal(rlock_client_free(c), RLOCK_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_config_setters),
      cmocka_unit_test(test_client_identity),
      cmocka_unit_test(test_metrics_text_args),
      cmocka_unit_test(test_lock_names),
      cmocka_unit_test(test_lock_durations),
      cmocka_unit_test(test_options_version),
      cmocka_unit_test(test_strerror),
      cmocka_unit_test(test_blocking_not_a_loop_client),
      cmocka_unit_test(test_sync_args),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
