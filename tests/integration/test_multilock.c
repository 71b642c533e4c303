/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: MultiLock — all or nothing over locks of any kind, on one
 * or several servers. Taking, failing, waiting and re-letting run on
 * every driver (drivers.h). */
#include "drivers.h"

#include <stdatomic.h>

static void hold_foreign(rt_server *s, const char *name, int lease_ms) {
  freeReplyObject(
      rt_cmd(s, "HSET %s 00000000-0000-4000-8000-000000000000:1 1", name));
  freeReplyObject(rt_cmd(s, "PEXPIRE %s %d", name, lease_ms));
}

/* Subscribers of the unlock channel of lock `name` on `s`. */
static long long subscribers(rt_server *s, const char *name) {
  char channel[256];
  snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
  return fx_subscribers(s, channel);
}

/* Wait until a waiter listens for the release of lock `name` (a loop
 * running meanwhile). */
static void wait_subscribed(rt_server *s, const char *name) {
  char channel[256];
  snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
  dk_wait_subscribers(s, channel, 1, "a MultiLock waiter's subscription");
}

static rlock_multilock *multi(rlock_lock **members, size_t n) {
  rlock_multilock *m;
  OK(rlock_multilock_new(&m, members, n));
  return m;
}

/* Whether every member of `l` (n) is `owner`'s: `want`, the status
 * rlock_lock_check_owner gives each. */
static void check_members(rlock_lock **l, int n, uint64_t owner, int want) {
  for (int i = 0; i < n; i++)
    RC(dk_check(l[i], owner), want);
}

static void test_all_held_then_released(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 0, NULL, NULL);
  rlock_lock *l[3] = {fx_lock(c, "m:a"), fx_lock(c, "m:b"), fx_lock(c, "m:c")};
  rlock_multilock *m = multi(l, 3);
  uint64_t me = dk_me();
  char owner[RLOCK_OWNER_MAX];
  dk_field(c, me, owner);
  OK(dk_multi_acquire(m, me, RLOCK_WAIT_FOREVER, RLOCK_LEASE_WATCHDOG));
  int held;
  if (!dk_loop()) {
    OK(rlock_multilock_is_held(&held, m));
    assert_int_equal(held, 1);
  }
  check_members(l, 3, me, RLOCK_OK);
  assert_int_equal(fx_hget(srv, "m:a", owner), 1);
  assert_int_equal(fx_hget(srv, "m:b", owner), 1);
  assert_int_equal(fx_hget(srv, "m:c", owner), 1);
  OK(dk_multi_release(m, me));
  assert_int_equal(rt_cmd_int(srv, "EXISTS m:a m:b m:c"), 0);
  if (!dk_loop()) {
    OK(rlock_multilock_is_held(&held, m));
    assert_int_equal(held, 0);
  }
  check_members(l, 3, me, RLOCK_ENOTHELD);
  RC(dk_multi_release(m, me), RLOCK_ENOTHELD);
  rlock_multilock_free(m);
  DK_FREE((l[0], l[1], l[2]), (c));
}

static void test_one_busy_member_fails_all(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 0, NULL, NULL);
  rlock_lock *l[3] = {fx_lock(c, "m:x1"), fx_lock(c, "m:x2"),
                      fx_lock(c, "m:x3")};
  rlock_multilock *m = multi(l, 3);
  uint64_t me = dk_me();
  hold_foreign(srv, "m:x2", 60000);
  RC(dk_multi_acquire(m, me, 0, 0), RLOCK_ELOCKED);
  assert_non_null(strstr(rlock_error_last()->message, "m:x2"));
  assert_int_equal(rt_cmd_int(srv, "EXISTS m:x1 m:x3"), 0);
  int64_t t0 = rt_now_ms();
  int rc = dk_multi_acquire(m, me, 300, 5000);
  /* "Not in time"; or, on a loaded machine, RLOCK_ETIMEOUT: an attempt
   * sent within the wait (m:x2's first, or the one after subscribing)
   * answered later than the bound's margin, 100 ms past the wait. The
   * wait's end itself sends none (test_lock_wait's
   * test_wait_end_sends_no_attempt). Either way nothing stays held. */
  if (rc != RLOCK_ETIMEOUT)
    RC(rc, RLOCK_ELOCKED);
  /* (a loop's timer may fire up to 10 ms early: its clock is read once a
   * turn) */
  ASSERT_BETWEEN(rt_now_ms() - t0, dk_loop() ? 290 : 300, 1500);
  assert_int_equal(rt_cmd_int(srv, "EXISTS m:x1 m:x3"), 0);
  check_members(l, 3, me, RLOCK_ENOTHELD); /* released locally too */
  freeReplyObject(rt_cmd(srv, "DEL m:x2"));
  rlock_multilock_free(m);
  DK_FREE((l[0], l[1], l[2]), (c));
}

/* A MultiLock acquisition waiting in the background: on a thread of its
 * own (blocking), or by the loop; got_at is when it was answered. */
typedef struct mwaiter {
  rlock_multilock *m;
  uint64_t owner;
  int rc;
  _Atomic int64_t got_at;
  pthread_t thread;
} mwaiter;

static void mwaiter_done(void *arg, int rc, int64_t value) {
  (void)value;
  mwaiter *w = arg;
  w->rc = rc;
  atomic_store(&w->got_at, rt_now_ms());
}

static void *mwaiter_main(void *arg) {
  mwaiter *w = arg;
  rlock_acquire_options o = opts(w->owner, 10000, 0);
  mwaiter_done(w, rlock_multilock_acquire_opts(w->m, &o), 0);
  return NULL;
}

static void mwaiter_start(mwaiter *w) {
  rlock_acquire_options o = opts(w->owner, 10000, 0);
  if (dk_loop())
    OK(rlock_multilock_acquire_async(w->m, &o, mwaiter_done, w, NULL));
  else
    assert_int_equal(pthread_create(&w->thread, NULL, mwaiter_main, w), 0);
}

static bool pred_got(void *arg, char *why, size_t cap) {
  snprintf(why, cap, "the MultiLock waiter has no answer yet");
  return atomic_load(&((mwaiter *)arg)->got_at) != 0;
}

static void test_waiter_wakes_when_blocker_freed(void **state) {
  (void)state;
  const char *url = rt_server_url(srv);
  rlock_client *c = dk_client(url, 0, NULL, NULL);
  rlock_client *other = dk_client(url, 0, NULL, NULL);
  rlock_lock *l[2] = {fx_lock(c, "m:w1"), fx_lock(c, "m:w2")};
  rlock_lock *blocker = fx_lock(other, "m:w2");
  uint64_t ob = dk_me();
  OK(dk_acquire(blocker, ob, 0, 60000));
  rlock_multilock *m = multi(l, 2);
  mwaiter w = {.m = m, .owner = rlock_owner_new()};
  mwaiter_start(&w);
  wait_subscribed(srv, "m:w2");
  int64_t t0 = rt_now_ms();
  OK(dk_release(blocker, ob));
  dk_wait(pred_got, &w, 10000, "the MultiLock waiter");
  if (!dk_loop())
    pthread_join(w.thread, NULL);
  OK(w.rc);
  ASSERT_BETWEEN(atomic_load(&w.got_at) - t0, 0, 300);
  OK(dk_multi_release(m, w.owner));
  assert_int_equal(rt_cmd_int(srv, "EXISTS m:w1 m:w2"), 0);
  rlock_multilock_free(m);
  DK_FREE((l[0], l[1], blocker), (c, other));
}

static void test_kinds_and_servers_mixed(void **state) {
  (void)state;
  rt_server *srv2 = rt_server_start(NULL);
  rlock_client *c1 = fx_client(srv, 0), *c2 = fx_client(srv2, 0);
  rlock_lock *l[4];
  OK(rlock_lock_new(&l[0], c1, "m:plain"));
  OK(rlock_lock_new_fair(&l[1], c2, "m:fair"));
  OK(rlock_lock_new_read(&l[2], c1, "m:rw"));
  OK(rlock_lock_new_write(&l[3], c2, "m:rw")); /* the same name elsewhere */
  rlock_multilock *m = multi(l, 4);
  OK(rlock_multilock_try_acquire(m, 1000, 20000));
  assert_int_equal(rt_cmd_int(srv, "EXISTS m:plain m:rw"), 2);
  assert_int_equal(rt_cmd_int(srv2, "EXISTS m:fair m:rw"), 2);
  redisReply *r = rt_cmd(srv2, "HGET m:rw mode");
  assert_string_equal(r->str, "write");
  freeReplyObject(r);
  ASSERT_RANGE(rt_cmd_int(srv2, "PTTL m:fair"), 19000, 20000);
  OK(rlock_multilock_release(m));
  assert_int_equal(rt_cmd_int(srv, "EXISTS m:plain m:rw"), 0);
  assert_int_equal(rt_cmd_int(srv2, "EXISTS m:fair m:rw"), 0);
  rlock_multilock_free(m);
  FX_FREE((l[0], l[1], l[2], l[3]), (c1, c2));
  rt_server_free(srv2);
}

static void test_failures_leave_nothing_held(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l[3] = {fx_lock(c, "m:f1"), fx_lock(c, "m:f2"),
                      fx_lock(c, "m:f3")};
  rlock_multilock *m = multi(l, 3);
  freeReplyObject(rt_cmd(srv, "SET m:f3 precious")); /* wrong type last */
  RC(rlock_multilock_try_acquire(m, 0, 0), RLOCK_EWRONGTYPE);
  assert_non_null(strstr(rlock_error_last()->message, "m:f3"));
  assert_int_equal(rt_cmd_int(srv, "EXISTS m:f1 m:f2"), 0);
  freeReplyObject(rt_cmd(srv, "DEL m:f3"));
  /* A lease too short for a member that needs waiting for. */
  hold_foreign(srv, "m:f2", 600);
  RC(rlock_multilock_try_acquire(m, 3000, 300), RLOCK_ELOCKED);
  assert_non_null(strstr(rlock_error_last()->message, "lease"));
  assert_int_equal(rt_cmd_int(srv, "EXISTS m:f1 m:f2 m:f3"), 0);
  /* A fired cancel token. */
  hold_foreign(srv, "m:f2", 60000);
  rlock_cancel *tok;
  OK(rlock_cancel_new(&tok));
  rlock_cancel_fire(tok);
  RC(rlock_multilock_try_acquire_cancel(m, 5000, 0, tok), RLOCK_ECANCELED);
  assert_int_equal(rt_cmd_int(srv, "EXISTS m:f1 m:f3"), 0);
  rlock_cancel_free(tok);
  freeReplyObject(rt_cmd(srv, "DEL m:f2"));
  rlock_multilock_free(m);
  FX_FREE((l[0], l[1], l[2]), (c));
}

/* Holds a MultiLock's member from another client on its own thread, and
 * lets it go once the MultiLock's waiter listens for it and the
 * MultiLock's first member has aged on the server (its PTTL is at most
 * lease - age_ms): conditions it observes, not a fixed sleep. With `drop`,
 * it first deletes that member behind the MultiLock's back. */
typedef struct blocker {
  rlock_client *c;
  rt_server *s;
  const char *name;  /* the member it holds */
  const char *first; /* the MultiLock's first member */
  const char *drop;  /* NULL, or a member to DEL before letting go */
  int64_t lease, age_ms;
  _Atomic int state; /* 0 starting, 1 holding, 2 let go, -1 failed */
} blocker;

static void *blocker_main(void *arg) {
  blocker *b = arg;
  rlock_lock *l;
  if (rlock_lock_new(&l, b->c, b->name) != RLOCK_OK ||
      rlock_lock_try_acquire(l, 0, 60000) != RLOCK_OK) {
    atomic_store(&b->state, -1);
    return NULL;
  }
  atomic_store(&b->state, 1);
  int64_t give_up = rt_now_ms() + rt_scaled_ms(15000);
  int seen = 0;
  while (!seen && rt_now_ms() < give_up) {
    long long ttl = rt_cmd_int(b->s, "PTTL %s", b->first);
    seen = subscribers(b->s, b->name) >= 1 && ttl > 0 &&
           ttl <= b->lease - b->age_ms;
    if (!seen)
      rt_sleep_ms(10);
  }
  if (seen && b->drop != NULL)
    freeReplyObject(rt_cmd(b->s, "DEL %s", b->drop));
  int rc = rlock_lock_release(l);
  rlock_lock_free(l);
  atomic_store(&b->state, seen && rc == RLOCK_OK ? 2 : -1);
  return NULL;
}

static bool pred_holding(void *arg, char *why, size_t cap) {
  blocker *b = arg;
  snprintf(why, cap, "blocker state %d", atomic_load(&b->state));
  return atomic_load(&b->state) != 0;
}

static void blocker_start(blocker *b, pthread_t *t) {
  pthread_create(t, NULL, blocker_main, b);
  rt_wait_until(pred_holding, b, rt_scaled_ms(5000), "the blocker's hold");
  assert_int_equal(atomic_load(&b->state), 1);
}

static bool pred_aged(void *arg, char *why, size_t cap) {
  const char *key = arg;
  long long ttl = rt_cmd_int(srv, "PTTL %s", key);
  snprintf(why, cap, "PTTL %s = %lld", key, ttl);
  return ttl < 800;
}

/* Redisson's tryLock step 5: once the last member is taken, every member
 * has the full lease again, also the first, taken a second earlier. */
static void test_lease_renewed_on_every_member(void **state) {
  (void)state;
  const int64_t lease = 3000, delay = 1000;
  const char *url = rt_server_url(srv);
  rlock_client *c = dk_client(url, 0, NULL, NULL);
  rlock_client *c3 = dk_client(url, 0, NULL, NULL);
  rlock_client *other = fx_client(srv, 0); /* the blocker's: blocking */
  uint64_t me = dk_me();
  rlock_lock *l[3];
  OK(rlock_lock_new_read(&l[0], c, "m:L1"));   /* renew_read.lua */
  OK(rlock_lock_new(&l[1], c, "m:L2"));        /* the one waited for */
  OK(rlock_lock_new_write(&l[2], c3, "m:L3")); /* another client */
  rlock_multilock *m = multi(l, 3);
  blocker b = {.c = other,
               .s = srv,
               .name = "m:L2",
               .first = "m:L1",
               .lease = lease,
               .age_ms = delay};
  pthread_t t;
  blocker_start(&b, &t);
  int64_t t0 = rt_now_ms();
  OK(dk_multi_acquire(m, me, 10000, lease));
  int64_t took = rt_now_ms() - t0;
  pthread_join(t, NULL);
  assert_int_equal(atomic_load(&b.state), 2);
  assert_true(took >= delay);
  char owner[RLOCK_OWNER_MAX], tkey[256];
  dk_field(c, me, owner);
  snprintf(tkey, sizeof tkey, "{m:L1}:%s:rwlock_timeout:1", owner);
  long long ttl[3] = {rt_cmd_int(srv, "PTTL m:L1"),
                      rt_cmd_int(srv, "PTTL m:L2"),
                      rt_cmd_int(srv, "PTTL m:L3")};
  print_message("acquired in %lld ms; PTTL m:L1 %lld, timeout key %lld, "
                "m:L2 %lld, m:L3 %lld\n",
                (long long)took, ttl[0], rt_cmd_int(srv, "PTTL %s", tkey),
                ttl[1], ttl[2]);
  long long slack = rt_scaled_ms(400);
  for (int i = 0; i < 3; i++)
    ASSERT_RANGE(ttl[i], lease - slack, lease);
  ASSERT_RANGE(rt_cmd_int(srv, "PTTL %s", tkey), lease - slack, lease);
  /* Not shorter than the last member's by the time the first waited. */
  assert_true(ttl[0] > ttl[2] - delay / 2);
  /* The local record knows the new end: past the first member's original
   * lease (the server's PTTL tells), it still vouches for it. */
  char first[] = "m:L1";
  dk_wait(pred_aged, first, 5000, "m:L1 to age");
  assert_true(rt_now_ms() - t0 > lease);
  OK(dk_check(l[0], me));
  OK(dk_check(l[2], me));
  OK(dk_multi_release(m, me));
  assert_int_equal(rt_cmd_int(srv, "EXISTS m:L1 m:L2 m:L3 %s", tkey), 0);
  rlock_multilock_free(m);
  for (int i = 0; i < 3; i++)
    rlock_lock_free(l[i]);
  dk_free(c);
  dk_free(c3);
  rlock_client_free(other);
}

/* A member gone by the time the last is taken fails the MultiLock (it is
 * not re-created), naming that member; nothing stays held. */
static void test_member_gone_before_the_last_fails(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0), *other = fx_client(srv, 0);
  rlock_lock *l[3] = {fx_lock(c, "m:g1"), fx_lock(c, "m:g2"),
                      fx_lock(c, "m:g3")};
  rlock_multilock *m = multi(l, 3);
  blocker b = {.c = other,
               .s = srv,
               .name = "m:g2",
               .first = "m:g1",
               .drop = "m:g1",
               .lease = 5000};
  pthread_t t;
  blocker_start(&b, &t);
  RC(rlock_multilock_try_acquire(m, 10000, 5000), RLOCK_ELOCKED);
  pthread_join(t, NULL);
  assert_int_equal(atomic_load(&b.state), 2);
  assert_non_null(strstr(rlock_error_last()->message, "'m:g1'"));
  assert_non_null(strstr(rlock_error_last()->message, "gone"));
  assert_int_equal(rt_cmd_int(srv, "EXISTS m:g1 m:g2 m:g3"), 0);
  for (int i = 0; i < 3; i++)
    RC(rlock_lock_check(l[i]), RLOCK_ENOTHELD);
  /* Usable again at once. */
  OK(rlock_multilock_try_acquire(m, 0, 5000));
  OK(rlock_multilock_release(m));
  rlock_multilock_free(m);
  FX_FREE((l[0], l[1], l[2]), (c, other));
}

typedef struct releaser {
  rlock_multilock *m;
  uint64_t owner;
  int held_here; /* the releasing thread's own holds: none */
  int rc;
} releaser;

static void *release_elsewhere(void *arg) {
  releaser *x = arg;
  OK(rlock_multilock_is_held(&x->held_here, x->m));
  x->rc = rlock_multilock_release_owner(x->m, x->owner);
  return NULL;
}

/* An explicit owner takes every member on this thread (one of them from
 * another client); another thread releases them by that owner. */
static void test_explicit_owner_across_threads(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0), *c2 = fx_client(srv, 0);
  rlock_lock *l[3] = {fx_lock(c, "m:o1"), fx_lock(c2, "m:o2"),
                      fx_lock(c, "m:o3")};
  rlock_multilock *m = multi(l, 3);
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.owner = rlock_owner_new();
  o.lease_ms = 20000;
  OK(rlock_multilock_acquire_opts(m, &o));
  int held;
  OK(rlock_multilock_is_held_owner(&held, m, o.owner));
  assert_int_equal(held, 1);
  OK(rlock_multilock_is_held(&held, m)); /* the thread holds nothing */
  assert_int_equal(held, 0);
  char field[RLOCK_OWNER_MAX + 32];
  snprintf(field, sizeof field, "%s:%llu", rlock_client_id(c2),
           (unsigned long long)o.owner);
  assert_int_equal(fx_hget(srv, "m:o2", field), 1);
  releaser x = {m, o.owner, -1, -1};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, release_elsewhere, &x), 0);
  pthread_join(t, NULL);
  assert_int_equal(x.held_here, 0);
  OK(x.rc);
  for (int i = 0; i < 3; i++)
    assert_int_equal(rt_cmd_int(srv, "EXISTS m:o%d", i + 1), 0);
  int64_t token;
  o.token = &token;
  RC(rlock_multilock_acquire_opts(m, &o), RLOCK_EINVAL);
  assert_int_equal(rt_cmd_int(srv, "EXISTS m:o1"), 0);
  rlock_multilock_free(m);
  FX_FREE((l[0], l[1], l[2]), (c, c2));
}

static void test_bad_input_and_sort(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *a = fx_lock(c, "m:dup"), *a2 = fx_lock(c, "m:dup"), *f;
  OK(rlock_lock_new_fair(&f, c, "m:dup"));
  rlock_multilock *m;
  rlock_lock *dup[2] = {a, a2}, *withnull[2] = {a, NULL}, *kinds[2] = {a, f};
  RC(rlock_multilock_new(&m, NULL, 0), RLOCK_EINVAL);
  RC(rlock_multilock_new(&m, dup, 0), RLOCK_EINVAL);
  RC(rlock_multilock_new(NULL, dup, 1), RLOCK_EINVAL);
  RC(rlock_multilock_new(&m, withnull, 2), RLOCK_EINVAL);
  RC(rlock_multilock_new(&m, dup, 2), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "same"));
  RC(rlock_multilock_new(&m, dup, RLOCK_MAX_MEMBERS + 1), RLOCK_EINVAL);
  OK(rlock_multilock_new(&m, kinds, 2)); /* different kinds: allowed */
  RC(rlock_multilock_try_acquire(m, -7, 0), RLOCK_EINVAL);
  RC(rlock_multilock_try_acquire(m, 0, -7), RLOCK_EINVAL);
  RC(rlock_multilock_try_acquire(NULL, 0, 0), RLOCK_EINVAL);
  RC(rlock_multilock_release(NULL), RLOCK_EINVAL);
  int held;
  RC(rlock_multilock_is_held(NULL, m), RLOCK_EINVAL);
  RC(rlock_multilock_is_held(&held, NULL), RLOCK_EINVAL);
  rlock_multilock_free(m);
  rlock_multilock_free(NULL);
  const char *names[4] = {"orders", "Orders", "inventory", "{t}:a"};
  OK(rlock_names_sort(names, 4));
  assert_string_equal(names[0], "Orders");
  assert_string_equal(names[1], "inventory");
  assert_string_equal(names[2], "orders");
  assert_string_equal(names[3], "{t}:a");
  const char *bad[2] = {"x", NULL};
  RC(rlock_names_sort(bad, 2), RLOCK_EINVAL);
  RC(rlock_names_sort(NULL, 2), RLOCK_EINVAL);
  OK(rlock_names_sort(NULL, 0));
  FX_FREE((a, a2, f), (c));
}

static const dk_case cases[] = {
    DK_CASE(test_all_held_then_released, DK_ALL),
    DK_CASE(test_one_busy_member_fails_all, DK_ALL),
    DK_CASE(test_waiter_wakes_when_blocker_freed, DK_ALL),
    DK_CASE(test_kinds_and_servers_mixed, DK_BLOCK),
    DK_CASE(test_failures_leave_nothing_held, DK_BLOCK),
    DK_CASE(test_lease_renewed_on_every_member, DK_ALL),
    DK_CASE(test_member_gone_before_the_last_fails, DK_BLOCK),
    DK_CASE(test_explicit_owner_across_threads, DK_BLOCK),
    DK_CASE(test_bad_input_and_sort, DK_BLOCK),
};

DK_MAIN(cases, NULL)
