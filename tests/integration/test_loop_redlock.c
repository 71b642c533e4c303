/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: a RedLock over three loop clients (rlock_redlock_acquire_async,
 * _release_async), each on its own redis-server, every case once on libuv
 * and once on libevent.
 */
#include "loop_fixture.h"

#define N 3

typedef struct trio {
  rt_server *srv[N];
  rlock_client *c[N];
  rlock_lock *l[N];
  rlock_redlock *r;
} trio;

static void up(trio *k, const char *name) {
  for (int i = 0; i < N; i++) {
    k->srv[i] = rt_server_start(NULL);
    rlock_config *cfg;
    OK(rlock_config_new(&cfg));
    OK(rlock_config_set_url(cfg, rt_server_url(k->srv[i])));
    k->c[i] = loop_client_cfg(cfg);
    rlock_config_free(cfg);
    k->l[i] = fx_lock(k->c[i], name);
  }
  OK(rlock_redlock_new(&k->r, k->l, N));
}

/* Free what is left (a client already freed is NULL): the clients before
 * their locks, since a member's canceled attempt may still be pending
 * (freeing its client completes it; it reads its lock). */
static void down(trio *k) {
  rlock_redlock_free(k->r);
  for (int i = 0; i < N; i++)
    if (k->c[i] != NULL)
      loop_free(k->c[i]);
  for (int i = 0; i < N; i++) {
    rlock_lock_free(k->l[i]);
    rt_server_free(k->srv[i]);
  }
}

static int acquire(trio *k, uint64_t owner, int64_t wait, int64_t lease,
                   int64_t *validity) {
  result r = {0};
  rlock_acquire_options o = opts(owner, wait, lease);
  OK(rlock_redlock_acquire_async(k->r, &o, on_done, &r, NULL));
  assert_int_equal(r.done, 0); /* never from inside the call */
  run_until(&r.done, 1, 5000 + (wait > 0 ? wait : 0), "a RedLock acquisition");
  if (validity != NULL)
    *validity = r.value;
  return r.rc;
}

static int release(trio *k, uint64_t owner) {
  result r = {0};
  OK(rlock_redlock_release_async(k->r, owner, on_done, &r));
  run_until(&r.done, 1, 5000, "a RedLock release");
  return r.rc;
}

/* The hold count of `owner` on member i, as its server stores it (-1:
 * none). */
static long long held(trio *k, int i, const char *name, uint64_t owner) {
  char field[RLOCK_OWNER_MAX];
  snprintf(field, sizeof field, "%s:%llu", rlock_client_id(k->c[i]),
           (unsigned long long)owner);
  return fx_hget(k->srv[i], name, field);
}

static void hold_foreign(rt_server *s, const char *name) {
  freeReplyObject(
      rt_cmd(s, "HSET %s 00000000-0000-4000-8000-000000000000:1 1", name));
  freeReplyObject(rt_cmd(s, "PEXPIRE %s 60000", name));
}

/* Run the loop until `name` is gone from server s (a member's client
 * giving back a grant on its own). */
static void run_until_gone(rt_server *s, const char *name) {
  int64_t end = rt_now_ms() + rt_scaled_ms(5000);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "EXISTS %s", name);
  while (rt_cmd_int(s, cmd) != 0) {
    if (rt_now_ms() > end)
      fail_msg("%s is still held on its server", name);
    run_once(10);
  }
}

static void test_all_members(void **state) {
  (void)state;
  trio k;
  up(&k, "lrl:all");
  uint64_t a = rlock_owner_new(), b = rlock_owner_new();
  int64_t validity;
  OK(acquire(&k, a, 0, 10000, &validity));
  ASSERT_RANGE(validity, 9000, 10000 - 102);
  for (int i = 0; i < N; i++) /* every member, not just a quorum */
    assert_int_equal(held(&k, i, "lrl:all", a), 1);
  RC(acquire(&k, b, 0, 10000, NULL), RLOCK_ELOCKED);
  RC(acquire(&k, b, 200, 10000, NULL), RLOCK_ELOCKED); /* rounds retried */
  for (int i = 0; i < N; i++)
    assert_int_equal(held(&k, i, "lrl:all", b), -1);
  OK(acquire(&k, a, 0, 10000, NULL)); /* reentrant on every member */
  assert_int_equal(held(&k, 1, "lrl:all", a), 2);
  OK(release(&k, a));
  OK(release(&k, a));
  for (int i = 0; i < N; i++)
    assert_int_equal(rt_cmd_int(k.srv[i], "EXISTS lrl:all"), 0);
  RC(release(&k, a), RLOCK_ENOTHELD);
  /* Watchdog lease: the members' clients renew; validity from it. */
  OK(acquire(&k, b, 0, RLOCK_LEASE_WATCHDOG, &validity));
  ASSERT_RANGE(validity, 20000, 30000);
  OK(rlock_lock_check_owner(k.l[2], b));
  /* The blocking release refuses loop clients before touching any
   * member's hold record: every member stays recorded (and renewed). */
  RC(rlock_redlock_release_owner(k.r, b), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "event loop"));
  for (int i = 0; i < N; i++)
    OK(rlock_lock_check_owner(k.l[i], b));
  OK(release(&k, b));
  down(&k);
}

static void test_minority_down(void **state) {
  (void)state;
  trio k;
  up(&k, "lrl:minority");
  rt_server_stop(k.srv[2]);
  uint64_t a = rlock_owner_new();
  OK(acquire(&k, a, 0, 10000, NULL));
  assert_int_equal(held(&k, 0, "lrl:minority", a), 1);
  assert_int_equal(held(&k, 1, "lrl:minority", a), 1);
  OK(release(&k, a));
  rt_server_stop(k.srv[1]); /* a majority down: a transport error */
  int rc = acquire(&k, a, 0, 10000, NULL);
  assert_true(rc == RLOCK_EIO || rc == RLOCK_ETIMEOUT);
  assert_int_equal(rt_cmd_int(k.srv[0], "EXISTS lrl:minority"), 0);
  down(&k);
}

/* A majority held by someone else: no round reaches the quorum, and
 * what the free member granted is given back. */
static void test_majority_held_elsewhere(void **state) {
  (void)state;
  trio k;
  up(&k, "lrl:held");
  hold_foreign(k.srv[0], "lrl:held");
  hold_foreign(k.srv[1], "lrl:held");
  uint64_t a = rlock_owner_new();
  RC(acquire(&k, a, 0, 10000, NULL), RLOCK_ELOCKED);
  /* Member 2 was not waited for once two had refused: its client gives
   * back a late grant on its own. */
  run_until_gone(k.srv[2], "lrl:held");
  /* Waiting: the rounds go on until the others let go. */
  result r = {0};
  rlock_acquire_options o = opts(a, 10000, 10000);
  OK(rlock_redlock_acquire_async(k.r, &o, on_done, &r, NULL));
  run_once(20);
  assert_int_equal(r.done, 0);
  assert_int_equal(rt_cmd_int(k.srv[0], "DEL lrl:held"), 1);
  assert_int_equal(rt_cmd_int(k.srv[1], "DEL lrl:held"), 1);
  run_until(&r.done, 1, 10000, "the RedLock after the others let go");
  OK(r.rc);
  for (int i = 0; i < N; i++)
    assert_int_equal(held(&k, i, "lrl:held", a), 1);
  OK(release(&k, a));
  down(&k);
}

/* The outcome of an operation with each member's (the _result calls). */
typedef struct outcome {
  int done;
  int rc;
  int64_t validity;
  rlock_redlock_result *res;
} outcome;

static void on_result(void *arg, int rc, int64_t validity,
                      rlock_redlock_result *res) {
  outcome *o = arg;
  o->done++;
  o->rc = rc;
  o->validity = validity;
  o->res = res;
}

static outcome acquire_result(trio *k, uint64_t owner, int64_t wait,
                              int64_t lease) {
  outcome out = {0};
  rlock_acquire_options o = opts(owner, wait, lease);
  OK(rlock_redlock_acquire_async_result(k->r, &o, on_result, &out, NULL));
  assert_int_equal(out.done, 0);
  run_until(&out.done, 1, 5000 + (wait > 0 ? wait : 0), "a RedLock result");
  assert_non_null(out.res);
  assert_int_equal(rlock_redlock_result_count(out.res), N);
  return out;
}

static outcome release_result(trio *k, uint64_t owner) {
  outcome out = {0};
  OK(rlock_redlock_release_async_result(k->r, owner, on_result, &out));
  run_until(&out.done, 1, 5000, "a RedLock release's result");
  assert_non_null(out.res);
  assert_int_equal(rlock_redlock_result_count(out.res), N);
  assert_int_equal(rlock_redlock_result_validity_ms(out.res), 0);
  return out;
}

static void expect_member(const rlock_redlock_result *res, size_t i, int rc,
                          const char *needle) {
  const char *msg = rlock_redlock_result_message(res, i);
  if (rlock_redlock_result_status(res, i) != rc ||
      (needle != NULL && strstr(msg, needle) == NULL) ||
      (rc == RLOCK_OK) != (msg[0] == '\0'))
    fail_msg("member %zu: %d '%s', expected %d '%s'", i,
             rlock_redlock_result_status(res, i), msg, rc,
             needle ? needle : "");
}

/* Each member's outcome after an async acquisition and release, as the
 * blocking RedLock's result tells it. */
static void test_results(void **state) {
  (void)state;
  trio k;
  up(&k, "lrl:res");
  uint64_t a = rlock_owner_new(), b = rlock_owner_new();
  outcome o = acquire_result(&k, a, 0, 10000);
  OK(o.rc);
  assert_int_equal(rlock_redlock_result_validity_ms(o.res), o.validity);
  ASSERT_RANGE(o.validity, 9000, 10000 - 102);
  for (size_t i = 0; i < N; i++)
    expect_member(o.res, i, RLOCK_OK, NULL);
  rlock_redlock_result_free(o.res);
  /* Held by A everywhere: B's round misses, every member says why. */
  o = acquire_result(&k, b, 0, 10000);
  RC(o.rc, RLOCK_ELOCKED);
  assert_int_equal(o.validity, 0);
  assert_int_equal(rlock_redlock_result_validity_ms(o.res), 0);
  int locked = 0;
  for (size_t i = 0; i < N; i++) {
    int st = rlock_redlock_result_status(o.res, i);
    if (st == RLOCK_ELOCKED)
      expect_member(o.res, i, RLOCK_ELOCKED, "held by another");
    else /* the quorum was out of reach before it answered */
      expect_member(o.res, i, RLOCK_ETIMEOUT, "not waited for");
    locked += st == RLOCK_ELOCKED;
  }
  assert_true(locked >= 2);
  rlock_redlock_result_free(o.res);
  o = release_result(&k, a);
  OK(o.rc);
  for (size_t i = 0; i < N; i++)
    expect_member(o.res, i, RLOCK_OK, NULL);
  rlock_redlock_result_free(o.res);
  o = release_result(&k, a); /* nothing held now */
  RC(o.rc, RLOCK_ENOTHELD);
  for (size_t i = 0; i < N; i++)
    expect_member(o.res, i, RLOCK_ENOTHELD, "not held");
  rlock_redlock_result_free(o.res);
  down(&k);
}

/* A member down: the quorum is taken, that member says why not; its
 * release fails too, and does not count (it was never taken). A round
 * canceled in flight: every member says so. */
static void test_results_member_down(void **state) {
  (void)state;
  trio k;
  up(&k, "lrl:resdown");
  uint64_t a = rlock_owner_new(), b = rlock_owner_new();
  outcome o;
  rt_server_stop(k.srv[2]);
  o = acquire_result(&k, a, 0, 10000);
  OK(o.rc);
  expect_member(o.res, 0, RLOCK_OK, NULL);
  expect_member(o.res, 1, RLOCK_OK, NULL);
  int st = rlock_redlock_result_status(o.res, 2);
  assert_true(st == RLOCK_EIO || st == RLOCK_ETIMEOUT);
  expect_member(o.res, 2, st, NULL);
  rlock_redlock_result_free(o.res);
  o = release_result(&k, a);
  OK(o.rc);
  expect_member(o.res, 0, RLOCK_OK, NULL);
  expect_member(o.res, 1, RLOCK_OK, NULL);
  st = rlock_redlock_result_status(o.res, 2);
  assert_true(st == RLOCK_EIO || st == RLOCK_ETIMEOUT);
  expect_member(o.res, 2, st, NULL);
  rlock_redlock_result_free(o.res);
  /* Canceled with its first round in flight: every member says so (or
   * that it was not waited for). */
  outcome c = {0};
  rlock_op *op;
  rlock_acquire_options ao = opts(b, RLOCK_WAIT_FOREVER, 10000);
  OK(rlock_redlock_acquire_async_result(k.r, &ao, on_result, &c, &op));
  OK(rlock_op_cancel(op));
  run_until(&c.done, 1, 5000, "the canceled RedLock's result");
  RC(c.rc, RLOCK_ECANCELED);
  assert_int_equal(rlock_redlock_result_count(c.res), N);
  for (size_t i = 0; i < N; i++) {
    st = rlock_redlock_result_status(c.res, i);
    assert_true(st == RLOCK_ECANCELED || st == RLOCK_ETIMEOUT);
    expect_member(c.res, i, st, NULL);
  }
  rlock_redlock_result_free(c.res);
  RC(rlock_redlock_acquire_async_result(k.r, &ao, NULL, &c, NULL),
     RLOCK_EINVAL);
  RC(rlock_redlock_release_async_result(k.r, RLOCK_OWNER_THREAD, on_result, &c),
     RLOCK_EINVAL);
  down(&k);
}

static void test_cancel(void **state) {
  (void)state;
  trio k;
  up(&k, "lrl:cancel");
  hold_foreign(k.srv[0], "lrl:cancel");
  hold_foreign(k.srv[1], "lrl:cancel");
  uint64_t a = rlock_owner_new();
  result r = {0};
  rlock_op *op = NULL;
  rlock_acquire_options o = opts(a, RLOCK_WAIT_FOREVER, 10000);
  OK(rlock_redlock_acquire_async(k.r, &o, on_done, &r, &op));
  assert_non_null(op);
  OK(rlock_op_cancel(op)); /* with the first round in flight */
  run_until(&r.done, 1, 5000, "the canceled RedLock");
  RC(r.rc, RLOCK_ECANCELED);
  /* Given back before the callback: nothing of ours on the free member. */
  assert_int_equal(rt_cmd_int(k.srv[2], "EXISTS lrl:cancel"), 0);
  run_once(50);
  assert_int_equal(r.done, 1);
  down(&k);
}

typedef struct elsewhere {
  rlock_redlock *r;
  uint64_t owner;
  rlock_op *op;
  result res;
  int rc, cancel_rc;
} elsewhere;

/* Started and canceled at once on a thread that is not the loop's (the
 * loop is not running meanwhile, so no callback can). */
static void *start_cancel_elsewhere(void *arg) {
  elsewhere *e = arg;
  rlock_acquire_options o = opts(e->owner, RLOCK_WAIT_FOREVER, 10000);
  e->rc = rlock_redlock_acquire_async(e->r, &o, on_done, &e->res, &e->op);
  e->cancel_rc = e->rc == RLOCK_OK ? rlock_op_cancel(e->op) : e->rc;
  return NULL;
}

/* A RedLock acquisition started and canceled off the loop's thread. */
static void test_cancel_other_thread(void **state) {
  (void)state;
  trio k;
  up(&k, "lrl:xcancel");
  hold_foreign(k.srv[0], "lrl:xcancel");
  hold_foreign(k.srv[1], "lrl:xcancel");
  elsewhere e = {.r = k.r, .owner = rlock_owner_new()};
  pthread_t t;
  pthread_create(&t, NULL, start_cancel_elsewhere, &e);
  pthread_join(t, NULL);
  OK(e.rc);
  OK(e.cancel_rc);
  run_until(&e.res.done, 1, 5000, "the RedLock canceled elsewhere");
  RC(e.res.rc, RLOCK_ECANCELED);
  run_until_gone(k.srv[2], "lrl:xcancel");
  assert_int_equal(held(&k, 2, "lrl:xcancel", e.owner), -1);
  down(&k);
}

/* Member 0's client (the operation's) freed with the acquisition pending:
 * its callback runs once, inside the free, with RLOCK_ECLOSED; the other
 * members' clients give back what they were granted. */
static void test_free_with_pending(void **state) {
  (void)state;
  trio k;
  up(&k, "lrl:free");
  hold_foreign(k.srv[0], "lrl:free");
  hold_foreign(k.srv[1], "lrl:free");
  uint64_t a = rlock_owner_new();
  result r = {0};
  rlock_acquire_options o = opts(a, RLOCK_WAIT_FOREVER, 10000);
  OK(rlock_redlock_acquire_async(k.r, &o, on_done, &r, NULL));
  outcome out = {0}; /* and one telling each member's outcome */
  o.owner = rlock_owner_new();
  OK(rlock_redlock_acquire_async_result(k.r, &o, on_result, &out, NULL));
  run_once(20);
  loop_free(k.c[0]);
  k.c[0] = NULL;
  assert_int_equal(r.done, 1);
  RC(r.rc, RLOCK_ECLOSED);
  assert_int_equal(out.done, 1);
  RC(out.rc, RLOCK_ECLOSED);
  assert_int_equal(rlock_redlock_result_count(out.res), N);
  for (size_t i = 0; i < N; i++) /* taken, or why not */
    assert_true(rlock_redlock_result_status(out.res, i) <= RLOCK_OK);
  rlock_redlock_result_free(out.res);
  run_until_gone(k.srv[2], "lrl:free");
  assert_int_equal(r.done, 1);
  down(&k);
}

static void test_bad_input(void **state) {
  (void)state;
  trio k;
  up(&k, "lrl:bad");
  result r = {0};
  rlock_acquire_options o = opts(rlock_owner_new(), 0, 10000);
  RC(rlock_redlock_acquire_async(NULL, &o, on_done, &r, NULL), RLOCK_EINVAL);
  RC(rlock_redlock_acquire_async(k.r, &o, NULL, &r, NULL), RLOCK_EINVAL);
  RC(rlock_redlock_acquire_async(k.r, NULL, on_done, &r, NULL), RLOCK_EINVAL);
  o.owner = RLOCK_OWNER_THREAD;
  RC(rlock_redlock_acquire_async(k.r, &o, on_done, &r, NULL), RLOCK_EINVAL);
  o = opts(rlock_owner_new(), -5, 10000);
  RC(rlock_redlock_acquire_async(k.r, &o, on_done, &r, NULL), RLOCK_EINVAL);
  RC(rlock_redlock_release_async(k.r, RLOCK_OWNER_THREAD, on_done, &r),
     RLOCK_EINVAL);
  RC(rlock_redlock_release_async(NULL, 1, on_done, &r), RLOCK_EINVAL);
  /* The blocking RedLock refuses loop clients, the async one blocking
   * clients. */
  RC(rlock_redlock_try_acquire(NULL, k.r, 0, 10000), RLOCK_EINVAL);
  rlock_client *blocking = fx_client(k.srv[0], 0);
  rlock_lock *bl = fx_lock(blocking, "lrl:bad");
  rlock_lock *mixed[N] = {bl, k.l[1], k.l[2]};
  rlock_redlock *m;
  OK(rlock_redlock_new(&m, mixed, N));
  o = opts(rlock_owner_new(), 0, 10000);
  RC(rlock_redlock_acquire_async(m, &o, on_done, &r, NULL), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "rlock_client_new_loop"));
  rlock_redlock_free(m);
  rlock_lock_free(bl);
  rlock_client_free(blocking);
  assert_int_equal(r.done, 0);
  down(&k);
}

#define CASES                                                                  \
  cmocka_unit_test(test_all_members), cmocka_unit_test(test_minority_down),    \
      cmocka_unit_test(test_results),                                          \
      cmocka_unit_test(test_results_member_down),                              \
      cmocka_unit_test(test_majority_held_elsewhere),                          \
      cmocka_unit_test(test_cancel),                                           \
      cmocka_unit_test(test_cancel_other_thread),                              \
      cmocka_unit_test(test_free_with_pending),                                \
      cmocka_unit_test(test_bad_input)

static int setup(void **state) {
  (void)state;
  loop_open();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  loop_close();
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {CASES};
  int failed = 0;
  kind = UV;
  failed += cmocka_run_group_tests_name("libuv", tests, setup, teardown);
  kind = EV;
  failed += cmocka_run_group_tests_name("libevent", tests, setup, teardown);
  return failed;
}
