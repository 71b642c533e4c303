/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: allocation failure. The library's allocator (alloc.h) is
 * made to fail the Nth allocation of the calling thread, for N = 1, 2, ...
 * over a full cycle of each lock kind (client, lock objects, acquire with
 * a wait, re-entry, inspection, releases, force release, free), until a
 * cycle runs without a refused allocation. Every call must succeed or
 * fail with RLOCK_ENOMEM and a message; afterwards, with allocation
 * working again, nothing may be left held on the server, and ASan and
 * valgrind (CI) see no leak. A hold whose script ran but whose record
 * could not be made must be given back: the out-of-memory path after an
 * acquisition. */
#include "fixture.h"

#include "alloc.h"

/* Fail the test unless rc is RLOCK_OK or a clean RLOCK_ENOMEM. */
static int ok_or_nomem(int rc, const char *what, uint64_t n) {
  if (rc == RLOCK_OK)
    return 1;
  if (rc != RLOCK_ENOMEM)
    fail_msg("N=%llu: %s returned %d (%s), not RLOCK_OK or RLOCK_ENOMEM",
             (unsigned long long)n, what, rc, rlock_error_last()->message);
  if (rlock_error_last()->message[0] == '\0')
    fail_msg("N=%llu: %s: RLOCK_ENOMEM without a message",
             (unsigned long long)n, what);
  return 0;
}

typedef int (*lock_new_fn)(rlock_lock **, rlock_client *, const char *);

static const struct {
  const char *name;
  lock_new_fn make;
} kinds[] = {
    {"alloc:reentrant", rlock_lock_new},
    {"alloc:fair", rlock_lock_new_fair},
    {"alloc:read", rlock_lock_new_read},
    {"alloc:write", rlock_lock_new_write},
    {"alloc:fenced", rlock_lock_new_fenced},
    {"alloc:spin", rlock_lock_new_spin},
};

/* One cycle with the Nth allocation (and every later one) failing. Stops
 * at the first refusal, undoing what it did with allocation restored.
 * Returns 1 when no allocation was refused. */
static int cycle(size_t k, uint64_t n, int flags) {
  rlock__alloc_fail_at(n, flags);
  rlock_config *cfg = NULL;
  rlock_client *c = NULL;
  rlock_lock *l = NULL;
  int held = 0, rc;
  int64_t token = 0;
  if (!ok_or_nomem(rlock_config_new(&cfg), "rlock_config_new", n))
    goto out;
  if (!ok_or_nomem(rlock_config_set_url(cfg, rt_server_url(srv)),
                   "rlock_config_set_url", n) ||
      !ok_or_nomem(rlock_client_new(&c, cfg), "rlock_client_new", n))
    goto out;
  if (!ok_or_nomem(kinds[k].make(&l, c, kinds[k].name), "lock_new", n))
    goto out;
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = 1000;
  o.token = k == 4 ? &token : NULL;
  if (!ok_or_nomem(rlock_lock_acquire_opts(l, &o), "acquire", n))
    goto out;
  held = 1;
  if (!ok_or_nomem(rlock_lock_acquire(l), "re-acquire", n))
    goto out;
  held = 2;
  int locked;
  int64_t count;
  rlock_lock_info *info = NULL;
  if (!ok_or_nomem(rlock_lock_is_locked(&locked, l), "is_locked", n) ||
      !ok_or_nomem(rlock_lock_hold_count(&count, l), "hold_count", n) ||
      !ok_or_nomem(rlock_lock_inspect(&info, l), "inspect", n))
    goto out;
  rlock_lock_info_free(info);
  for (; held > 0; held--)
    if (!ok_or_nomem(rlock_lock_release(l), "release", n))
      goto out;
out:
  rc = rlock__alloc_failed() == 0;
  rlock__alloc_fail_at(0, 0);
  /* Allocation works again: give back what is still held. */
  while (held-- > 0 && l != NULL)
    if (rlock_lock_release(l) != RLOCK_OK)
      break;
  rlock_lock_free(l);
  rlock_client_free(c);
  rlock_config_free(cfg);
  return rc;
}

/* What a cycle may leave on the server: nothing when one allocation
 * failed (ONCE: the library had memory to undo with); when every later
 * one failed too, at most a hold that expires with its lease (nothing can
 * be sent without memory), removed here for the next cycle. */
static void nothing_left(const char *name, uint64_t n, int flags) {
  if (rt_cmd_int(srv, "EXISTS %s", name) == 0)
    return;
  long long ttl = rt_cmd_int(srv, "PTTL %s", name);
  if ((flags & RLOCK__ALLOC_ONCE) || ttl <= 0)
    fail_msg("N=%llu%s: '%s' left held (PTTL %lld)", (unsigned long long)n,
             flags & RLOCK__ALLOC_ONCE ? " (one failure)" : "", name, ttl);
  freeReplyObject(rt_cmd(srv, "DEL %s", name));
}

static void walk(size_t k, int flags) {
  /* Under valgrind (time scale 8) every third N is walked past the first
   * 40: each cycle opens connections. */
  uint64_t stride = rt_scaled_ms(1) >= 4 ? 3 : 1, n;
  for (n = 1; n < 100000; n += n < 40 ? 1 : stride) {
    int clean = cycle(k, n, flags);
    nothing_left(kinds[k].name, n, flags);
    if (clean)
      break;
  }
  print_message("%s, %s: %llu allocations walked\n", kinds[k].name,
                flags & RLOCK__ALLOC_ONCE ? "one failing"
                                          : "all failing from N",
                (unsigned long long)n);
  assert_true(n > 10);
}

#define BOTH(k)                                                                \
  do {                                                                         \
    walk(k, RLOCK__ALLOC_THIS_THREAD | RLOCK__ALLOC_ONCE);                     \
    walk(k, RLOCK__ALLOC_THIS_THREAD);                                         \
  } while (0)

static void test_reentrant(void **state) {
  (void)state;
  BOTH(0);
}
static void test_fair(void **state) {
  (void)state;
  BOTH(1);
}
static void test_read(void **state) {
  (void)state;
  BOTH(2);
}
static void test_write(void **state) {
  (void)state;
  BOTH(3);
}
static void test_fenced(void **state) {
  (void)state;
  BOTH(4);
}
static void test_spin(void **state) {
  (void)state;
  BOTH(5);
}

/* One MultiLock cycle (a reentrant and a fair member, each re-acquired
 * by a second MultiLock round), as cycle(). */
static int cycle_multi(uint64_t n, int flags) {
  rlock__alloc_fail_at(n, flags);
  rlock_client *c = NULL;
  rlock_lock *m[2] = {NULL, NULL};
  rlock_multilock *ml = NULL;
  int held = 0;
  rlock_config *cfg = NULL;
  int ok = ok_or_nomem(rlock_config_new(&cfg), "config_new", n) &&
           ok_or_nomem(rlock_config_set_url(cfg, rt_server_url(srv)), "set_url",
                       n) &&
           ok_or_nomem(rlock_client_new(&c, cfg), "client_new", n);
  rlock_config_free(cfg);
  if (!ok ||
      !ok_or_nomem(rlock_lock_new(&m[0], c, "alloc:m1"), "lock_new", n) ||
      !ok_or_nomem(rlock_lock_new_fair(&m[1], c, "alloc:m2"), "lock_new", n) ||
      !ok_or_nomem(rlock_multilock_new(&ml, m, 2), "multilock_new", n))
    goto out;
  for (; held < 2; held++)
    if (!ok_or_nomem(rlock_multilock_try_acquire(ml, 1000, 0),
                     "multilock acquire", n))
      goto out;
  for (; held > 0; held--)
    if (!ok_or_nomem(rlock_multilock_release(ml), "multilock release", n))
      goto out;
out:;
  int clean = rlock__alloc_failed() == 0;
  rlock__alloc_fail_at(0, 0);
  while (held-- > 0 && rlock_multilock_release(ml) == RLOCK_OK)
    ;
  rlock_multilock_free(ml);
  rlock_lock_free(m[0]);
  rlock_lock_free(m[1]);
  rlock_client_free(c);
  return clean;
}

static void test_multilock(void **state) {
  (void)state;
  static const int modes[2] = {RLOCK__ALLOC_THIS_THREAD | RLOCK__ALLOC_ONCE,
                               RLOCK__ALLOC_THIS_THREAD};
  for (int f = 0; f < 2; f++) {
    uint64_t n;
    for (n = 1; n < 100000; n++) {
      int clean = cycle_multi(n, modes[f]);
      nothing_left("alloc:m1", n, modes[f]);
      nothing_left("alloc:m2", n, modes[f]);
      if (clean)
        break;
    }
    print_message("multilock: %llu allocations walked\n",
                  (unsigned long long)n);
    assert_true(n > 10);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reentrant), cmocka_unit_test(test_fair),
      cmocka_unit_test(test_read),      cmocka_unit_test(test_write),
      cmocka_unit_test(test_fenced),    cmocka_unit_test(test_spin),
      cmocka_unit_test(test_multilock),
  };
  if (getenv("RLOCK_TEST_FILTER") != NULL)
    cmocka_set_test_filter(getenv("RLOCK_TEST_FILTER"));
  return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
