/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: owners. Explicit owners (rlock_owner_new) that acquire on
 * one thread and release on another, owner numbers that are never reused
 * (so a new thread never inherits an exited thread's hold, which expires
 * once the watchdog stops renewing it), the hash field they write, and
 * rlock_acquire_options. */
#include "fixture.h"

#include "client_int.h" /* the hold records: c->wd */
#include "watchdog.h"

#include <inttypes.h>
#include <stdatomic.h>

/* Run fn(arg) on a new thread and wait for it: "another thread". */
static void on_thread(void *(*fn)(void *), void *arg) {
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, fn, arg), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
}

static long long pttl(const char *key) {
  return rt_cmd_int(srv, "PTTL %s", key);
}

/* Acquire with `owner` (watchdog lease, no wait) on its own thread. */
typedef struct owner_job {
  rlock_lock *lock;
  uint64_t owner;
  int rc;          /* the acquisition, or the owner's release */
  int rc_thread;   /* the thread-owned release tried first */
  int held_thread; /* rlock_lock_is_held as seen from the thread */
  int held_owner;
  int64_t count_owner;
  uint64_t thread_number;
} owner_job;

static void *acquire_as_owner(void *arg) {
  owner_job *j = arg;
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = 0;
  o.owner = j->owner;
  j->rc = rlock_lock_acquire_opts(j->lock, &o);
  j->thread_number = rlock_owner_thread();
  if (rlock_lock_is_held(&j->held_thread, j->lock) != RLOCK_OK)
    j->held_thread = -1;
  if (rlock_lock_hold_count_owner(&j->count_owner, j->lock, j->owner) !=
      RLOCK_OK)
    j->count_owner = -1;
  return NULL;
}

static void *release_as_owner(void *arg) {
  owner_job *j = arg;
  j->rc_thread = rlock_lock_release(j->lock); /* this thread holds nothing */
  j->rc = rlock_lock_release_owner(j->lock, j->owner);
  if (rlock_lock_is_held_owner(&j->held_owner, j->lock, j->owner) != RLOCK_OK)
    j->held_owner = -1;
  return NULL;
}

static void test_explicit_owner_released_on_another_thread(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "owners:cross");
  uint64_t owner = rlock_owner_new();
  owner_job a = {.lock = l, .owner = owner};
  on_thread(acquire_as_owner, &a);
  OK(a.rc);
  assert_int_equal(a.held_thread, 0); /* the owner holds, not the thread */
  assert_int_equal(a.count_owner, 1);
  assert_true(a.thread_number != owner);
  char field[RLOCK_OWNER_MAX];
  snprintf(field, sizeof field, "%s:%" PRIu64, rlock_client_id(c), owner);
  assert_int_equal(fx_hget(srv, "owners:cross", field), 1);

  owner_job b = {.lock = l, .owner = owner, .held_owner = -1};
  on_thread(release_as_owner, &b);
  RC(b.rc_thread, RLOCK_ENOTHELD); /* thread B's own release: not its lock */
  OK(b.rc);
  assert_int_equal(b.held_owner, 0);
  assert_int_equal(rt_cmd_int(srv, "EXISTS owners:cross"), 0);
  /* Released once, so a second release finds nothing. */
  RC(rlock_lock_release_owner(l, owner), RLOCK_ENOTHELD);
  rlock_lock_free(l);
  rlock_client_free(c);
}

static void test_explicit_owners_exclude_each_other(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "owners:two");
  uint64_t o1 = rlock_owner_new(), o2 = rlock_owner_new();
  assert_true(o1 != o2);
  rlock_acquire_options a = RLOCK_ACQUIRE_OPTIONS_INIT;
  a.wait_ms = 0;
  a.owner = o1;
  rlock_acquire_options b = a;
  b.owner = o2;
  OK(rlock_lock_acquire_opts(l, &a));
  RC(rlock_lock_acquire_opts(l, &b), RLOCK_ELOCKED); /* same thread */
  /* The calling thread is a third owner: excluded too. */
  RC(rlock_lock_try_acquire(l, 0, 0), RLOCK_ELOCKED);
  /* A bounded wait by the second owner waits it out, then gives up. */
  b.wait_ms = 200;
  int64_t t0 = rt_now_ms();
  RC(rlock_lock_acquire_opts(l, &b), RLOCK_ELOCKED);
  ASSERT_BETWEEN(rt_now_ms() - t0, 200, 2000);
  /* The first owner re-enters: its count goes up. */
  OK(rlock_lock_acquire_opts(l, &a));
  int64_t n;
  OK(rlock_lock_hold_count_owner(&n, l, o1));
  assert_int_equal(n, 2);
  OK(rlock_lock_hold_count_owner(&n, l, o2));
  assert_int_equal(n, 0);
  OK(rlock_lock_hold_count(&n, l));
  assert_int_equal(n, 0);
  int held;
  OK(rlock_lock_is_held_owner(&held, l, o1));
  assert_int_equal(held, 1);
  OK(rlock_lock_is_held_owner(&held, l, o2));
  assert_int_equal(held, 0);
  RC(rlock_lock_release_owner(l, o2), RLOCK_ENOTHELD);
  RC(rlock_lock_release(l), RLOCK_ENOTHELD);
  assert_int_equal(rt_cmd_int(srv, "EXISTS owners:two"), 1);
  OK(rlock_lock_release_owner(l, o1));
  OK(rlock_lock_hold_count_owner(&n, l, o1));
  assert_int_equal(n, 1);
  OK(rlock_lock_release_owner(l, o1));
  assert_int_equal(rt_cmd_int(srv, "EXISTS owners:two"), 0);
  /* Now the second owner gets it at once. */
  b.wait_ms = 0;
  OK(rlock_lock_acquire_opts(l, &b));
  OK(rlock_lock_release_owner(l, o2));
  rlock_lock_free(l);
  rlock_client_free(c);
}

static void expect_single_field(const char *key, const char *field) {
  redisReply *r = rt_cmd(srv, "HGETALL %s", key);
  assert_int_equal(r->type, REDIS_REPLY_ARRAY);
  assert_int_equal(r->elements, 2);
  assert_string_equal(r->element[0]->str, field);
  assert_string_equal(r->element[1]->str, "1");
  freeReplyObject(r);
}

static void test_owner_field_layout(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "owners:field");
  char field[RLOCK_OWNER_MAX], mine[RLOCK_OWNER_MAX];
  /* An explicit owner from rlock_owner_new. */
  uint64_t owner = rlock_owner_new();
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.owner = owner;
  OK(rlock_lock_acquire_opts(l, &o));
  snprintf(field, sizeof field, "%s:%" PRIu64, rlock_client_id(c), owner);
  expect_single_field("owners:field", field);
  rlock_lock_info *info;
  OK(rlock_lock_inspect(&info, l));
  assert_int_equal(rlock_lock_info_holder_count(info), 1);
  assert_string_equal(rlock_lock_info_holder_owner(info, 0), field);
  rlock_lock_info_free(info);
  OK(rlock_lock_release_owner(l, owner));
  /* Any other number is used as given (acting for a Java thread id). */
  o.owner = 4242;
  OK(rlock_lock_acquire_opts(l, &o));
  snprintf(field, sizeof field, "%s:4242", rlock_client_id(c));
  expect_single_field("owners:field", field);
  OK(rlock_lock_release_owner(l, 4242));
  /* The calling thread: its own number, what rlock_client_owner says. */
  OK(rlock_lock_acquire(l));
  snprintf(field, sizeof field, "%s:%" PRIu64, rlock_client_id(c),
           rlock_owner_thread());
  fx_owner(c, mine);
  assert_string_equal(mine, field);
  expect_single_field("owners:field", field);
  /* RLOCK_OWNER_THREAD and the thread's own number are one owner. */
  int64_t n;
  OK(rlock_lock_hold_count_owner(&n, l, RLOCK_OWNER_THREAD));
  assert_int_equal(n, 1);
  OK(rlock_lock_hold_count_owner(&n, l, rlock_owner_thread()));
  assert_int_equal(n, 1);
  OK(rlock_lock_release(l));
  assert_int_equal(rt_cmd_int(srv, "EXISTS owners:field"), 0);
  rlock_lock_free(l);
  rlock_client_free(c);
}

#define NEW_PER_THREAD 10000
#define NUMBER_THREADS 4

typedef struct numbers {
  uint64_t thread_first, thread_again, thread_last;
  uint64_t *fresh; /* NEW_PER_THREAD numbers from rlock_owner_new */
} numbers;

static void *take_numbers(void *arg) {
  numbers *n = arg;
  n->thread_first = rlock_owner_thread();
  n->thread_again = rlock_owner_thread();
  for (int i = 0; i < NEW_PER_THREAD; i++)
    n->fresh[i] = rlock_owner_new();
  n->thread_last = rlock_owner_thread();
  return NULL;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void test_owner_numbers_never_repeat(void **state) {
  (void)state;
  uint64_t mine = rlock_owner_thread();
  assert_true(mine != RLOCK_OWNER_THREAD);
  assert_int_equal(rlock_owner_thread(), mine);
  size_t total = NUMBER_THREADS * (NEW_PER_THREAD + 1) + 1;
  uint64_t *all = calloc(total, sizeof *all);
  assert_non_null(all);
  numbers n[NUMBER_THREADS];
  pthread_t t[NUMBER_THREADS];
  for (int i = 0; i < NUMBER_THREADS; i++) {
    n[i] = (numbers){.fresh = all + i * NEW_PER_THREAD};
    assert_int_equal(pthread_create(&t[i], NULL, take_numbers, &n[i]), 0);
  }
  for (int i = 0; i < NUMBER_THREADS; i++)
    assert_int_equal(pthread_join(t[i], NULL), 0);
  size_t k = NUMBER_THREADS * NEW_PER_THREAD;
  for (int i = 0; i < NUMBER_THREADS; i++) {
    /* Stable on its thread, different from every other thread's. */
    assert_int_equal(n[i].thread_first, n[i].thread_again);
    assert_int_equal(n[i].thread_first, n[i].thread_last);
    assert_true(n[i].thread_first != mine);
    all[k++] = n[i].thread_first;
  }
  all[k++] = mine;
  assert_int_equal(k, total);
  qsort(all, total, sizeof *all, cmp_u64);
  assert_true(all[0] != RLOCK_OWNER_THREAD);
  for (size_t i = 1; i < total; i++)
    if (all[i] == all[i - 1])
      fail_msg("owner number %" PRIu64 " handed out twice", all[i]);
  /* A thread started after those exited gets a number none of them had. */
  numbers late = {.fresh = calloc(NEW_PER_THREAD, sizeof(uint64_t))};
  assert_non_null(late.fresh);
  on_thread(take_numbers, &late);
  assert_null(bsearch(&late.thread_first, all, total, sizeof *all, cmp_u64));
  assert_true(late.thread_first > all[total - 1]);
  free(late.fresh);
  assert_int_equal(rlock_owner_thread(), mine);
  free(all);
}

/* ---- a thread that exits holding a watchdog lock ------------------------ */

static atomic_int lost_calls;
static void count_lost(const char *name, const char *owner, void *ud) {
  (void)name, (void)owner, (void)ud;
  atomic_fetch_add(&lost_calls, 1);
}

typedef struct exiting {
  rlock_lock *lock;
  uint64_t owner; /* RLOCK_OWNER_THREAD, or an explicit owner */
  int rc;
  int held;
  uint64_t thread_number;
  long tid;
  pthread_t self;
} exiting;

/* Acquire with a watchdog lease and exit without releasing. */
static void *acquire_and_exit(void *arg) {
  exiting *e = arg;
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.owner = e->owner;
  e->rc = rlock_lock_acquire_opts(e->lock, &o);
  if (rlock_lock_is_held_owner(&e->held, e->lock, e->owner) != RLOCK_OK)
    e->held = -1;
  e->thread_number = rlock_owner_thread();
  e->tid = (long)syscall(SYS_gettid);
  e->self = pthread_self();
  return NULL;
}

typedef struct successor {
  rlock_lock *lock;
  int held, rc_try, rc_release, rc_check;
  int64_t count;
  uint64_t thread_number;
  long tid;
  pthread_t self;
} successor;

static void *look_as_successor(void *arg) {
  successor *s = arg;
  s->thread_number = rlock_owner_thread();
  s->tid = (long)syscall(SYS_gettid);
  s->self = pthread_self();
  if (rlock_lock_is_held(&s->held, s->lock) != RLOCK_OK)
    s->held = -1;
  if (rlock_lock_hold_count(&s->count, s->lock) != RLOCK_OK)
    s->count = -1;
  s->rc_try = rlock_lock_try_acquire(s->lock, 0, 0);
  s->rc_release = rlock_lock_release(s->lock);
  s->rc_check = rlock_lock_check(s->lock);
  return NULL;
}

#define SHORT_WATCHDOG 1500

/* Watches a key's PTTL: counts the samples where it went up (a renewal). */
typedef struct ttl_watch {
  const char *key;
  long long last;
  int rises;
  int gone;
  int want_rises;   /* done once this many rises were seen */
  int64_t until_ms; /* ... and (when not 0) this time has passed */
} ttl_watch;

static bool key_gone(void *arg, char *why, size_t cap) {
  ttl_watch *w = arg;
  long long t = pttl(w->key);
  if (t == -2)
    return true;
  if (t > w->last)
    w->rises++;
  w->last = t;
  snprintf(why, cap, "'%s' still there (PTTL %lld, rose %d times)", w->key, t,
           w->rises);
  return false;
}

static bool renewed_enough(void *arg, char *why, size_t cap) {
  ttl_watch *w = arg;
  long long t = pttl(w->key);
  if (t == -2)
    fail_msg("'%s' expired: its hold was not renewed (%d renewals seen)",
             w->key, w->rises);
  if (t > w->last)
    w->rises++;
  w->last = t;
  snprintf(why, cap, "'%s': %d renewals seen, PTTL %lld", w->key, w->rises, t);
  return w->rises >= w->want_rises &&
         (w->until_ms == 0 || rt_now_ms() >= w->until_ms);
}

static void test_exited_thread_hold_is_not_inherited(void **state) {
  (void)state;
  atomic_store(&lost_calls, 0);
  rlock_client *c =
      fx_client_opts(rt_server_url(srv), SHORT_WATCHDOG, count_lost, NULL);
  rlock_lock *l = fx_lock(c, "owners:exited");
  exiting a = {.lock = l, .owner = RLOCK_OWNER_THREAD};
  on_thread(acquire_and_exit, &a);
  int64_t exited = rt_now_ms();
  OK(a.rc);
  assert_int_equal(a.held, 1);
  char field[RLOCK_OWNER_MAX];
  snprintf(field, sizeof field, "%s:%" PRIu64, rlock_client_id(c),
           a.thread_number);
  assert_int_equal(fx_hget(srv, "owners:exited", field), 1);

  /* A new thread (often with A's pthread_t, sometimes A's Linux tid) has
   * a number of its own and inherits nothing. */
  successor b = {.lock = l, .held = -1, .count = -1};
  on_thread(look_as_successor, &b);
  print_message("thread A tid %ld, thread B tid %ld (%s); pthread_t %s\n",
                a.tid, b.tid, a.tid == b.tid ? "reused" : "not reused",
                pthread_equal(a.self, b.self) ? "reused" : "not reused");
  assert_true(b.thread_number != a.thread_number);
  assert_int_equal(b.held, 0);
  assert_int_equal(b.count, 0);
  RC(b.rc_try, RLOCK_ELOCKED);
  RC(b.rc_release, RLOCK_ENOTHELD);
  RC(b.rc_check, RLOCK_ENOTHELD);
  assert_int_equal(fx_hget(srv, "owners:exited", field), 1);

  /* Nobody renews it any more: it expires within about one watchdog
   * lease (plus the tick that notices, plus at most one renewal that was
   * already under way when A exited). Renewed for ever, it would not. */
  ttl_watch w = {.key = "owners:exited", .last = pttl("owners:exited")};
  assert_true(w.last > 0);
  rt_wait_until(key_gone, &w, rt_scaled_ms(2 * SHORT_WATCHDOG + 500),
                "the exited thread's lock to expire");
  int64_t gone_after = rt_now_ms() - exited;
  print_message("abandoned watchdog lock expired %lld ms after its thread "
                "exited (watchdog %d ms; PTTL rose %d times meanwhile)\n",
                (long long)gone_after, SHORT_WATCHDOG, w.rises);
  ASSERT_RANGE(w.rises, 0, 1);
  ASSERT_BETWEEN(gone_after, 0, 2 * SHORT_WATCHDOG + 500);

  /* The lock is free now. Taking it and seeing it renewed proves renewal
   * ticks ran after the abandoned lock expired: none reported it lost. */
  OK(rlock_lock_try_acquire(l, 0, 0));
  ttl_watch mine = {
      .key = "owners:exited", .last = pttl("owners:exited"), .want_rises = 2};
  rt_wait_until(renewed_enough, &mine, rt_scaled_ms(4 * SHORT_WATCHDOG),
                "renewals of the new holder");
  assert_int_equal(atomic_load(&lost_calls), 0);
  OK(rlock_lock_release(l));
  assert_int_equal(rt_cmd_int(srv, "EXISTS owners:exited"), 0);
  rlock_lock_free(l);
  rlock_client_free(c);
}

static void *take_fixed_and_exit(void *arg) {
  /* A fixed lease: no renewal tick is ever armed for it. */
  return (void *)(intptr_t)rlock_lock_try_acquire(arg, 0, 60000);
}

static size_t hold_records(rlock_client *c) {
  pthread_mutex_lock(&c->wd->mu);
  size_t n = c->wd->holds.count;
  pthread_mutex_unlock(&c->wd->mu);
  return n;
}

/* A thread that exits holding fixed-lease locks leaves records no
 * renewal tick will reap (a client with only fixed leases has none):
 * they go at the client's next acquisition after the exit, and the lock
 * itself expires on its own, not released by anyone. */
static void test_exited_thread_records_freed(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "own:exited:fixed");
  pthread_t t;
  void *rc;
  assert_int_equal(pthread_create(&t, NULL, take_fixed_and_exit, l), 0);
  assert_int_equal(pthread_join(t, &rc), 0);
  OK((int)(intptr_t)rc);
  assert_int_equal(hold_records(c), 1); /* the exited thread's */
  rlock_lock *m = fx_lock(c, "own:exited:next");
  OK(rlock_lock_try_acquire(m, 0, 10000));
  assert_int_equal(hold_records(c), 1); /* only this thread's */
  OK(rlock_lock_release(m));
  assert_int_equal(hold_records(c), 0);
  assert_int_equal(rt_cmd_int(srv, "EXISTS own:exited:fixed"), 1);
  rlock_lock_free(m);
  rlock_lock_free(l);
  rlock_client_free(c);
}

static void test_explicit_owner_outlives_its_thread(void **state) {
  (void)state;
  atomic_store(&lost_calls, 0);
  rlock_client *c =
      fx_client_opts(rt_server_url(srv), SHORT_WATCHDOG, count_lost, NULL);
  rlock_lock *l = fx_lock(c, "owners:outlives");
  uint64_t owner = rlock_owner_new();
  exiting a = {.lock = l, .owner = owner};
  int64_t t0 = rt_now_ms();
  on_thread(acquire_and_exit, &a);
  OK(a.rc);
  assert_int_equal(a.held, 1);
  /* Renewed after the thread exited: PTTL goes back up, again and again,
   * and the key outlives two whole watchdog leases. */
  ttl_watch w = {.key = "owners:outlives",
                 .last = pttl("owners:outlives"),
                 .want_rises = 3,
                 .until_ms = t0 + 2 * SHORT_WATCHDOG};
  rt_wait_until(renewed_enough, &w, rt_scaled_ms(6 * SHORT_WATCHDOG),
                "renewals of the explicit owner's hold");
  OK(rlock_lock_check_owner(l, owner));
  int held;
  OK(rlock_lock_is_held_owner(&held, l, owner));
  assert_int_equal(held, 1);
  /* Released from yet another thread. */
  owner_job b = {.lock = l, .owner = owner, .held_owner = -1};
  on_thread(release_as_owner, &b);
  RC(b.rc_thread, RLOCK_ENOTHELD);
  OK(b.rc);
  assert_int_equal(rt_cmd_int(srv, "EXISTS owners:outlives"), 0);
  RC(rlock_lock_check_owner(l, owner), RLOCK_ENOTHELD);
  assert_int_equal(atomic_load(&lost_calls), 0);
  rlock_lock_free(l);
  rlock_client_free(c);
}

/* ---- rlock_acquire_options ---------------------------------------------- */

static void expect_message(const char *part) {
  const char *msg = rlock_error_last()->message;
  if (strstr(msg, part) == NULL)
    fail_msg("message '%s' does not mention '%s'", msg, part);
}

static void test_options_defaults_and_versions(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "owners:opts");
  char mine[RLOCK_OWNER_MAX];
  fx_owner(c, mine);

  rlock_acquire_options d = RLOCK_ACQUIRE_OPTIONS_INIT;
  assert_int_equal(d.version, RLOCK_ACQUIRE_OPTIONS_VERSION);
  assert_true(d.wait_ms == RLOCK_WAIT_FOREVER);
  assert_true(d.lease_ms == RLOCK_LEASE_WATCHDOG);
  assert_null(d.cancel);
  assert_true(d.owner == RLOCK_OWNER_THREAD);
  assert_null(d.token);
  /* The defaults: the calling thread, the watchdog's 30 s lease. */
  OK(rlock_lock_acquire_opts(l, &d));
  expect_single_field("owners:opts", mine);
  ASSERT_RANGE(pttl("owners:opts"), 29000, 30000);
  OK(rlock_lock_release(l));
  /* NULL options: the same defaults. */
  OK(rlock_lock_acquire_opts(l, NULL));
  expect_single_field("owners:opts", mine);
  ASSERT_RANGE(pttl("owners:opts"), 29000, 30000);
  OK(rlock_lock_check_owner(l, RLOCK_OWNER_THREAD));
  OK(rlock_lock_release(l));

  /* rlock_acquire_options_init fills the same defaults. */
  rlock_acquire_options o;
  memset(&o, 0x5a, sizeof o);
  OK(rlock_acquire_options_init(&o, RLOCK_ACQUIRE_OPTIONS_VERSION));
  assert_int_equal(o.version, RLOCK_ACQUIRE_OPTIONS_VERSION);
  assert_true(o.wait_ms == RLOCK_WAIT_FOREVER);
  assert_true(o.lease_ms == RLOCK_LEASE_WATCHDOG);
  assert_null(o.cancel);
  assert_true(o.owner == RLOCK_OWNER_THREAD);
  assert_null(o.token);
  RC(rlock_acquire_options_init(&o, 0), RLOCK_EINVAL);
  RC(rlock_acquire_options_init(&o, 999), RLOCK_EINVAL);
  expect_message("999");
  RC(rlock_acquire_options_init(NULL, RLOCK_ACQUIRE_OPTIONS_VERSION),
     RLOCK_EINVAL);

  /* An unknown version is refused before anything is sent. */
  OK(rlock_acquire_options_init(&o, RLOCK_ACQUIRE_OPTIONS_VERSION));
  o.wait_ms = 0;
  o.version = 0;
  RC(rlock_lock_acquire_opts(l, &o), RLOCK_EINVAL);
  expect_message("version 0");
  o.version = 999;
  RC(rlock_lock_acquire_opts(l, &o), RLOCK_EINVAL);
  expect_message("version 999");
  assert_int_equal(rt_cmd_int(srv, "EXISTS owners:opts"), 0);

  /* A lease in the options. */
  o.version = RLOCK_ACQUIRE_OPTIONS_VERSION;
  o.lease_ms = 5000;
  OK(rlock_lock_acquire_opts(l, &o));
  ASSERT_RANGE(pttl("owners:opts"), 4000, 5000);
  OK(rlock_lock_release(l));
  rlock_lock_free(l);
  rlock_client_free(c);
}

static void test_options_refused(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "owners:bad");
  rlock_lock *spin;
  OK(rlock_lock_new_spin(&spin, c, "owners:bad"));
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  const int64_t bad_waits[] = {-2, -1000, RLOCK_MAX_DURATION_MS + 1};
  for (size_t i = 0; i < sizeof bad_waits / sizeof *bad_waits; i++) {
    o.wait_ms = bad_waits[i];
    RC(rlock_lock_acquire_opts(l, &o), RLOCK_EINVAL);
    expect_message("wait");
  }
  o.wait_ms = 0;
  const int64_t bad_leases[] = {-1, -30000, RLOCK_MAX_DURATION_MS + 1};
  for (size_t i = 0; i < sizeof bad_leases / sizeof *bad_leases; i++) {
    o.lease_ms = bad_leases[i];
    RC(rlock_lock_acquire_opts(l, &o), RLOCK_EINVAL);
    expect_message("lease");
  }
  o.lease_ms = RLOCK_LEASE_WATCHDOG;
  /* A token asked of a lock that issues none: refused, nothing written. */
  int64_t token = -7;
  o.token = &token;
  RC(rlock_lock_acquire_opts(l, &o), RLOCK_EINVAL);
  expect_message("fenced");
  RC(rlock_lock_acquire_opts(spin, &o), RLOCK_EINVAL);
  assert_true(token == -7);
  assert_int_equal(rt_cmd_int(srv, "EXISTS owners:bad"), 0);
  assert_int_equal(rt_cmd_int(srv, "EXISTS redisson_lock_token:{owners:bad}"),
                   0);
  RC(rlock_lock_acquire_opts(NULL, NULL), RLOCK_EINVAL);
  rlock_lock_free(spin);
  rlock_lock_free(l);
  rlock_client_free(c);
}

typedef struct cancel_job {
  rlock_lock *lock;
  rlock_cancel *cancel;
  uint64_t owner;
  int rc;
  _Atomic int64_t done_at;
} cancel_job;

static void *wait_with_cancel(void *arg) {
  cancel_job *j = arg;
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.cancel = j->cancel;
  o.owner = j->owner;
  j->rc = rlock_lock_acquire_opts(j->lock, &o);
  atomic_store(&j->done_at, rt_now_ms());
  return NULL;
}

static void test_options_cancel_and_check(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "owners:cancel");
  rlock_cancel *tok;
  OK(rlock_cancel_new(&tok));
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  /* Fired before the call: refused before any attempt, on a free lock. */
  rlock_cancel_fire(tok);
  o.cancel = tok;
  RC(rlock_lock_acquire_opts(l, &o), RLOCK_ECANCELED);
  assert_int_equal(rt_cmd_int(srv, "EXISTS owners:cancel"), 0);
  rlock_cancel_reset(tok);

  /* An explicit owner holds; check_owner answers for each owner. */
  uint64_t holder = rlock_owner_new(), other = rlock_owner_new();
  o = (rlock_acquire_options)RLOCK_ACQUIRE_OPTIONS_INIT;
  o.owner = holder;
  OK(rlock_lock_acquire_opts(l, &o));
  OK(rlock_lock_check_owner(l, holder));
  RC(rlock_lock_check_owner(l, other), RLOCK_ENOTHELD);
  RC(rlock_lock_check_owner(l, RLOCK_OWNER_THREAD), RLOCK_ENOTHELD);
  RC(rlock_lock_check(l), RLOCK_ENOTHELD);

  /* Another owner waits for ever; the token fired mid-wait ends it. */
  cancel_job j = {.lock = l, .cancel = tok, .owner = other};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, wait_with_cancel, &j), 0);
  fx_wait_subscribers(srv, "redisson_lock__channel:{owners:cancel}", 1,
                      "the waiter's subscription");
  int64_t fired = rt_now_ms();
  rlock_cancel_fire(tok);
  assert_int_equal(pthread_join(t, NULL), 0);
  RC(j.rc, RLOCK_ECANCELED);
  ASSERT_BETWEEN(atomic_load(&j.done_at) - fired, 0, 500);
  int held;
  OK(rlock_lock_is_held_owner(&held, l, other));
  assert_int_equal(held, 0);
  OK(rlock_lock_release_owner(l, holder));
  RC(rlock_lock_check_owner(l, holder), RLOCK_ENOTHELD);
  assert_int_equal(rt_cmd_int(srv, "EXISTS owners:cancel"), 0);
  rlock_cancel_free(tok);
  rlock_lock_free(l);
  rlock_client_free(c);
}

static int no_child(int argc, char **argv) {
  (void)argc, (void)argv;
  return 64;
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_explicit_owner_released_on_another_thread),
    cmocka_unit_test(test_explicit_owners_exclude_each_other),
    cmocka_unit_test(test_owner_field_layout),
    cmocka_unit_test(test_owner_numbers_never_repeat),
    cmocka_unit_test(test_exited_thread_hold_is_not_inherited),
    cmocka_unit_test(test_exited_thread_records_freed),
    cmocka_unit_test(test_explicit_owner_outlives_its_thread),
    cmocka_unit_test(test_options_defaults_and_versions),
    cmocka_unit_test(test_options_refused),
    cmocka_unit_test(test_options_cancel_and_check),
};

FX_MAIN(tests, fx_setup, fx_teardown, no_child)
