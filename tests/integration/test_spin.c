/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: the spin lock (Redisson's RSpinLock). The reentrant lock's
 * layout, but a waiter never subscribes: it retries after a back-off (1 ms
 * doubling to 128 ms, with jitter, or what rlock_lock_new_spin_opts
 * chose) bounded by the holder's TTL and the wait. Its release publishes,
 * so a reentrant lock's waiters wake. The back-off policies run on every
 * driver (drivers.h). */
#include "drivers.h"
#include "spin_checks.h"

#include <math.h>
#include <stdatomic.h>

static rlock_lock *spin_lock(rlock_client *c, const char *name) {
  rlock_lock *l;
  OK(rlock_lock_new_spin(&l, c, name));
  return l;
}

/* ---- mutual exclusion -------------------------------------------------- */

#define SPIN_THREADS 4
#define SPIN_ROUNDS 50

/* Read, pause, write: loses updates unless the lock excludes. Relaxed
 * atomics so that ThreadSanitizer, which cannot see the exclusion Redis
 * provides, has no data race to report; the increment is still two
 * separate steps. */
static atomic_long counter;
static atomic_int inside, overlaps;

typedef struct spinner {
  rlock_client *c;
  int rc;
} spinner;

static void *spin_increments(void *arg) {
  spinner *s = arg;
  rlock_lock *l = NULL;
  s->rc = rlock_lock_new_spin(&l, s->c, "spin:mutex");
  for (int i = 0; s->rc == RLOCK_OK && i < SPIN_ROUNDS; i++) {
    if ((s->rc = rlock_lock_acquire(l)) != RLOCK_OK)
      break;
    if (atomic_fetch_add(&inside, 1) != 0)
      atomic_fetch_add(&overlaps, 1);
    long v = atomic_load_explicit(&counter, memory_order_relaxed);
    rt_sleep_ms(1); /* a small critical section */
    atomic_store_explicit(&counter, v + 1, memory_order_relaxed);
    atomic_fetch_sub(&inside, 1);
    s->rc = rlock_lock_release(l);
  }
  rlock_lock_free(l);
  return NULL;
}

static void test_mutual_exclusion(void **state) {
  (void)state;
  atomic_store(&counter, 0);
  atomic_store(&inside, 0);
  atomic_store(&overlaps, 0);
  /* Two clients, two threads each: exclusion between processes' worth of
   * clients and between threads of one. */
  rlock_client *c[2] = {fx_client(srv, 0), fx_client(srv, 0)};
  spinner s[SPIN_THREADS];
  pthread_t t[SPIN_THREADS];
  int64_t t0 = rt_now_ms();
  for (int i = 0; i < SPIN_THREADS; i++) {
    s[i] = (spinner){.c = c[i % 2]};
    assert_int_equal(pthread_create(&t[i], NULL, spin_increments, &s[i]), 0);
  }
  for (int i = 0; i < SPIN_THREADS; i++) {
    assert_int_equal(pthread_join(t[i], NULL), 0);
    OK(s[i].rc);
  }
  print_message("%d spin-locked increments in %lld ms\n",
                SPIN_THREADS * SPIN_ROUNDS, (long long)(rt_now_ms() - t0));
  assert_int_equal(atomic_load(&overlaps), 0);
  assert_int_equal(atomic_load(&counter), SPIN_THREADS * SPIN_ROUNDS);
  assert_int_equal(rt_cmd_int(srv, "EXISTS spin:mutex"), 0);
  rlock_client_free(c[0]);
  rlock_client_free(c[1]);
}

static void test_spin_and_reentrant_exclude(void **state) {
  (void)state;
  rlock_client *a = fx_client(srv, 0), *b = fx_client(srv, 0);
  rlock_lock *sa = spin_lock(a, "spin:mix"), *ra = fx_lock(a, "spin:mix");
  rlock_lock *sb = spin_lock(b, "spin:mix"), *rb = fx_lock(b, "spin:mix");
  /* Spin holds: a reentrant lock of the same name is refused. */
  OK(rlock_lock_try_acquire(sa, 0, 0));
  char owner[RLOCK_OWNER_MAX];
  fx_owner(a, owner);
  assert_int_equal(fx_hget(srv, "spin:mix", owner), 1); /* the same hash */
  RC(rlock_lock_try_acquire(rb, 0, 0), RLOCK_ELOCKED);
  RC(rlock_lock_try_acquire(sb, 0, 0), RLOCK_ELOCKED);
  /* The same thread through the reentrant object: a re-entry. */
  OK(rlock_lock_try_acquire(ra, 0, 0));
  assert_int_equal(fx_hget(srv, "spin:mix", owner), 2);
  OK(rlock_lock_release(ra));
  OK(rlock_lock_release(sa));
  assert_int_equal(rt_cmd_int(srv, "EXISTS spin:mix"), 0);
  /* Reentrant holds: the spin lock is refused, also after a short wait. */
  OK(rlock_lock_try_acquire(rb, 0, 0));
  RC(rlock_lock_try_acquire(sa, 0, 0), RLOCK_ELOCKED);
  RC(rlock_lock_try_acquire(sa, 100, 0), RLOCK_ELOCKED);
  OK(rlock_lock_release(rb));
  OK(rlock_lock_try_acquire(sa, 0, 0));
  OK(rlock_lock_release(sa));
  rlock_lock_free(sa);
  rlock_lock_free(ra);
  rlock_lock_free(sb);
  rlock_lock_free(rb);
  rlock_client_free(a);
  rlock_client_free(b);
}

/* ---- one waiter on its own thread --------------------------------------- */

typedef struct waiter {
  rlock_lock *lock;
  int64_t wait_ms;
  rlock_cancel *cancel;
  int rc;
  _Atomic int64_t done_at; /* when the call returned (acquired or not) */
} waiter;

static void *wait_for_lock(void *arg) {
  waiter *w = arg;
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = w->wait_ms;
  o.cancel = w->cancel;
  w->rc = rlock_lock_acquire_opts(w->lock, &o);
  atomic_store(&w->done_at, rt_now_ms());
  if (w->rc == RLOCK_OK)
    w->rc = rlock_lock_release(w->lock);
  return NULL;
}

static void start_waiter(pthread_t *t, waiter *w) {
  assert_int_equal(pthread_create(t, NULL, wait_for_lock, w), 0);
}

/* The spin waiter's attempts: EVALSHA calls since CONFIG RESETSTAT, with
 * no other client sending scripts meanwhile (fixed leases: no renewals). */
typedef struct attempts {
  waiter *w;
  long long want;
  const char *channel;
  long long max_subs; /* highest PUBSUB NUMSUB seen on `channel` */
  int samples;
} attempts;

static bool attempted(void *arg, char *why, size_t cap) {
  attempts *a = arg;
  if (atomic_load(&a->w->done_at) != 0)
    fail_msg("the waiter returned (%d) while the lock was held", a->w->rc);
  long long n = fx_evalsha_calls(srv);
  if (a->channel != NULL) {
    long long subs = fx_subscribers(srv, a->channel);
    a->max_subs = subs > a->max_subs ? subs : a->max_subs;
    a->samples++;
  }
  snprintf(why, cap, "%lld attempts seen, want %lld", n, a->want);
  return n >= a->want;
}

/* Wait until the waiter has made `n` more attempts. */
static void await_attempts(attempts *a, long long n) {
  a->want = n;
  rt_wait_until(attempted, a, rt_scaled_ms(10000), "spin waiter attempts");
}

static void test_waiter_never_subscribes(void **state) {
  (void)state;
  rlock_client *holder = fx_client(srv, 0), *wc = fx_client(srv, 0);
  rlock_lock *h = spin_lock(holder, "spin:nosub");
  rlock_lock *l = spin_lock(wc, "spin:nosub");
  const char *channel = "redisson_lock__channel:{spin:nosub}";
  OK(rlock_lock_acquire_lease(h, 60000));
  freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
  waiter w = {.lock = l, .wait_ms = RLOCK_WAIT_FOREVER};
  pthread_t t;
  int64_t t0 = rt_now_ms();
  start_waiter(&t, &w);
  /* Sample the channel's subscribers while the waiter is seen retrying:
   * its first attempts (1, 2, 4 ms apart), then past the 128 ms cap. */
  attempts a = {.w = &w, .channel = channel};
  await_attempts(&a, 3);
  assert_int_equal(fx_subscribers(srv, channel), 0);
  await_attempts(&a, 12);
  int64_t twelve = rt_now_ms() - t0;
  assert_int_equal(fx_subscribers(srv, channel), 0);
  assert_int_equal(a.max_subs, 0);
  assert_true(a.samples > 0);
  /* Nor on any channel at all. */
  redisReply *r = rt_cmd(srv, "PUBSUB CHANNELS *");
  assert_int_equal(r->elements, 0);
  freeReplyObject(r);
  assert_int_equal(rt_cmd_int(srv, "PUBSUB NUMPAT"), 0);
  /* It backs off: attempt n comes after at least 1 + 2 + 4 + ... ms
   * (doubling, capped at 128): 12 attempts take over 639 ms... */
  ASSERT_RANGE(twelve, 600, rt_scaled_ms(10000));
  /* ... and at the cap, 5 more take at least 5 x 128 ms. */
  int64_t t1 = rt_now_ms();
  long long from = fx_evalsha_calls(srv);
  await_attempts(&a, from + 5);
  int64_t five = rt_now_ms() - t1;
  print_message("spin waiter: 12 attempts in %lld ms, then 5 more in %lld "
                "ms; never subscribed (%d samples)\n",
                (long long)twelve, (long long)five, a.samples);
  /* (the first of them ends a sleep already under way) */
  ASSERT_RANGE(five, 4 * 128 - 12, rt_scaled_ms(5000));
  assert_int_equal(a.max_subs, 0);
  OK(rlock_lock_release(h));
  assert_int_equal(pthread_join(t, NULL), 0);
  OK(w.rc);
  rlock_lock_free(h);
  rlock_lock_free(l);
  rlock_client_free(holder);
  rlock_client_free(wc);
}

static void test_waiter_acquires_promptly_after_release(void **state) {
  (void)state;
  rlock_client *holder = fx_client(srv, 0), *wc = fx_client(srv, 0);
  rlock_lock *h = spin_lock(holder, "spin:prompt");
  rlock_lock *l = spin_lock(wc, "spin:prompt");
  int64_t worst = 0, sum = 0;
  enum { ROUNDS = 5 };
  for (int i = 0; i < ROUNDS; i++) {
    OK(rlock_lock_acquire_lease(h, 10000));
    freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
    waiter w = {.lock = l, .wait_ms = RLOCK_WAIT_FOREVER};
    pthread_t t;
    start_waiter(&t, &w);
    /* Past the cap: 1+2+4+...+128 ms of back-off. */
    attempts a = {.w = &w};
    await_attempts(&a, 9 + i);
    int64_t released = rt_now_ms();
    OK(rlock_lock_release(h));
    assert_int_equal(pthread_join(t, NULL), 0);
    OK(w.rc);
    int64_t latency = atomic_load(&w.done_at) - released;
    ASSERT_BETWEEN(latency, 0, 1000);
    worst = latency > worst ? latency : worst;
    sum += latency;
  }
  print_message("spin waiter latency after release: mean %lld ms, worst "
                "%lld ms (holder's lease 10000 ms)\n",
                (long long)(sum / ROUNDS), (long long)worst);
  rlock_lock_free(h);
  rlock_lock_free(l);
  rlock_client_free(holder);
  rlock_client_free(wc);
}

static void test_bounded_wait_times_out(void **state) {
  (void)state;
  rlock_client *holder = fx_client(srv, 0), *wc = fx_client(srv, 0);
  rlock_lock *h = spin_lock(holder, "spin:bounded");
  rlock_lock *l = spin_lock(wc, "spin:bounded");
  OK(rlock_lock_acquire_lease(h, 60000));
  int64_t t0 = rt_now_us();
  RC(rlock_lock_try_acquire(l, 300, 0), RLOCK_ELOCKED);
  int64_t took = (rt_now_us() - t0) / 1000;
  print_message("spin try with wait 300 ms gave up after %lld ms\n",
                (long long)took);
  ASSERT_BETWEEN(took, 290, 1000);
  assert_non_null(strstr(rlock_error_last()->message, "held"));
  /* An immediate try is immediate. */
  t0 = rt_now_us();
  RC(rlock_lock_try_acquire(l, 0, 0), RLOCK_ELOCKED);
  ASSERT_BETWEEN((rt_now_us() - t0) / 1000, 0, 200);
  int held;
  OK(rlock_lock_is_held(&held, l));
  assert_int_equal(held, 0);
  OK(rlock_lock_release(h));
  rlock_lock_free(h);
  rlock_lock_free(l);
  rlock_client_free(holder);
  rlock_client_free(wc);
}

static void test_cancel_ends_a_spin_wait(void **state) {
  (void)state;
  rlock_client *holder = fx_client(srv, 0), *wc = fx_client(srv, 0);
  rlock_lock *h = spin_lock(holder, "spin:cancel");
  rlock_lock *l = spin_lock(wc, "spin:cancel");
  OK(rlock_lock_acquire_lease(h, 60000));
  rlock_cancel *tok;
  OK(rlock_cancel_new(&tok));
  freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
  waiter w = {.lock = l, .wait_ms = RLOCK_WAIT_FOREVER, .cancel = tok};
  pthread_t t;
  start_waiter(&t, &w);
  attempts a = {.w = &w};
  await_attempts(&a, 9); /* sleeping 128 ms at a time by now */
  int64_t fired = rt_now_ms();
  rlock_cancel_fire(tok);
  assert_int_equal(pthread_join(t, NULL), 0);
  RC(w.rc, RLOCK_ECANCELED);
  int64_t took = atomic_load(&w.done_at) - fired;
  print_message("spin wait canceled %lld ms after the token fired\n",
                (long long)took);
  ASSERT_BETWEEN(took, 0, 500);
  assert_int_equal(rt_cmd_int(srv, "HLEN spin:cancel"), 1); /* the holder */
  OK(rlock_lock_release(h));
  rlock_cancel_free(tok);
  rlock_lock_free(h);
  rlock_lock_free(l);
  rlock_client_free(holder);
  rlock_client_free(wc);
}

static void test_waiter_takes_lapsed_lease(void **state) {
  (void)state;
  rlock_client *holder = fx_client(srv, 0), *wc = fx_client(srv, 0);
  rlock_lock *h = spin_lock(holder, "spin:lapse");
  rlock_lock *l = spin_lock(wc, "spin:lapse");
  int64_t t0 = rt_now_ms();
  OK(rlock_lock_acquire_lease(h, 500)); /* and never released */
  waiter w = {.lock = l, .wait_ms = 10000};
  pthread_t t;
  start_waiter(&t, &w);
  assert_int_equal(pthread_join(t, NULL), 0);
  OK(w.rc);
  int64_t after = atomic_load(&w.done_at) - t0;
  print_message("spin waiter took the lapsed 500 ms lease %lld ms after it "
                "was granted\n",
                (long long)after);
  ASSERT_BETWEEN(after, 490, 2000);
  RC(rlock_lock_check(h), RLOCK_ELOST);
  /* The waiter released it; the old holder finds it gone. */
  RC(rlock_lock_release(h), RLOCK_ELOST);
  assert_int_equal(rt_cmd_int(srv, "EXISTS spin:lapse"), 0);
  rlock_lock_free(h);
  rlock_lock_free(l);
  rlock_client_free(holder);
  rlock_client_free(wc);
}

static void test_release_wakes_reentrant_waiter(void **state) {
  (void)state;
  rlock_client *holder = fx_client(srv, 0), *wc = fx_client(srv, 0);
  rlock_lock *h = spin_lock(holder, "spin:wake");
  rlock_lock *l = fx_lock(wc, "spin:wake"); /* a reentrant lock's waiter */
  const char *channel = "redisson_lock__channel:{spin:wake}";
  /* A raw subscriber too, to see the message itself. */
  redisContext *sub = rt_server_connect(srv);
  struct timeval tv = {.tv_sec = 10};
  assert_int_equal(redisSetTimeout(sub, tv), REDIS_OK);
  redisReply *r = redisCommand(sub, "SUBSCRIBE %s", channel);
  assert_non_null(r);
  freeReplyObject(r);
  OK(rlock_lock_acquire_lease(h, 60000)); /* no wake-up by TTL */
  waiter w = {.lock = l, .wait_ms = RLOCK_WAIT_FOREVER};
  pthread_t t;
  start_waiter(&t, &w);
  /* The waiter has subscribed: NUMSUB counts it and the raw one. */
  fx_wait_subscribers(srv, channel, 2, "the reentrant waiter's subscription");
  assert_int_equal(atomic_load(&w.done_at), 0);
  int64_t released = rt_now_ms();
  OK(rlock_lock_release(h));
  assert_int_equal(pthread_join(t, NULL), 0);
  OK(w.rc);
  int64_t latency = atomic_load(&w.done_at) - released;
  print_message("reentrant waiter woken by the spin lock's release after "
                "%lld ms (holder's lease 60000 ms)\n",
                (long long)latency);
  ASSERT_BETWEEN(latency, 0, 1000);
  /* The unlock message, as a reentrant lock publishes it. */
  r = NULL;
  assert_int_equal(redisGetReply(sub, (void **)&r), REDIS_OK);
  assert_int_equal(r->type, REDIS_REPLY_ARRAY);
  assert_int_equal(r->elements, 3);
  assert_string_equal(r->element[0]->str, "message");
  assert_string_equal(r->element[1]->str, channel);
  assert_string_equal(r->element[2]->str, "0");
  freeReplyObject(r);
  redisFree(sub);
  rlock_lock_free(h);
  rlock_lock_free(l);
  rlock_client_free(holder);
  rlock_client_free(wc);
}

/* ---- back-off policies (rlock_lock_new_spin_opts) ----------------------- */

/* The server times of a spin waiter's attempts on `name` (held by another
 * client for a minute) during one wait of SC_WAIT_MS, as MONITOR saw
 * them. */
static size_t spin_attempts(const rlock_spin_options *o, const char *name,
                            int64_t *us) {
  const char *url = rt_server_url(srv);
  rlock_client *holder = dk_client(url, 0, NULL, NULL);
  rlock_client *wc = dk_client(url, 0, NULL, NULL);
  rlock_lock *h = spin_lock(holder, name), *l;
  OK(rlock_lock_new_spin_opts(&l, wc, name, o));
  uint64_t held_by = dk_me(), me = dk_me();
  OK(dk_acquire(h, held_by, 0, 60000)); /* the script is loaded now */
  fx_monitor m;
  fx_monitor_start(&m, srv);
  RC(dk_acquire(l, me, SC_WAIT_MS, 1000), RLOCK_ELOCKED);
  size_t n =
      fx_monitor_end(&m, srv, "EVALSHA", "EVAL", name, us, SC_MAX_ATTEMPTS);
  OK(dk_release(h, held_by));
  rlock_lock_free(h);
  rlock_lock_free(l);
  dk_free(holder);
  dk_free(wc);
  return n;
}

static void test_constant_backoff(void **state) {
  (void)state;
  rlock_spin_options o = sc_constant();
  int64_t us[SC_MAX_ATTEMPTS];
  sc_check_constant(us, spin_attempts(&o, "spin:constant", us));
}

static void test_exponential_backoff(void **state) {
  (void)state;
  rlock_spin_options o = sc_exponential();
  int64_t us[SC_MAX_ATTEMPTS];
  sc_check_exponential(us, spin_attempts(&o, "spin:exponential", us));
}

/* Options the constructor refuses, each with a message naming what. */
static void test_options_checked(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = (rlock_lock *)&l; /* set to NULL on failure */
  struct {
    rlock_spin_options o;
    const char *why;
  } bad[12];
  for (size_t i = 0; i < 12; i++)
    bad[i].o = (rlock_spin_options)RLOCK_SPIN_OPTIONS_INIT;
  bad[0].o.version = 0, bad[0].why = "version";
  bad[1].o.version = 99, bad[1].why = "version";
  bad[2].o.backoff = 7, bad[2].why = "backoff";
  bad[3].o.initial_ms = -5, bad[3].why = "initial_ms";
  bad[4].o.initial_ms = 0, bad[4].why = "initial_ms";
  bad[5].o.max_ms = -1, bad[5].why = "max_ms";
  bad[6].o.initial_ms = 200, bad[6].why = "below initial_ms";
  bad[7].o.delay_ms = -64, bad[7].why = "delay_ms";
  bad[8].o.multiplier = 0.5, bad[8].why = "multiplier";
  bad[9].o.multiplier = NAN, bad[9].why = "multiplier";
  bad[10].o.jitter = 2, bad[10].why = "jitter";
  bad[11].o.delay_ms = RLOCK_MAX_DURATION_MS + 1, bad[11].why = "delay_ms";
  for (size_t i = 0; i < 12; i++) {
    RC(rlock_lock_new_spin_opts(&l, c, "spin:opts", &bad[i].o), RLOCK_EINVAL);
    assert_null(l);
    if (strstr(rlock_error_last()->message, bad[i].why) == NULL)
      fail_msg("case %zu: '%s' does not name '%s'", i,
               rlock_error_last()->message, bad[i].why);
  }
  rlock_spin_options o;
  RC(rlock_spin_options_init(NULL, RLOCK_SPIN_OPTIONS_VERSION), RLOCK_EINVAL);
  RC(rlock_spin_options_init(&o, 2), RLOCK_EINVAL);
  OK(rlock_spin_options_init(&o, RLOCK_SPIN_OPTIONS_VERSION));
  assert_int_equal(o.backoff, RLOCK_SPIN_EXPONENTIAL);
  assert_int_equal(o.initial_ms, 1); /* Redisson's defaults */
  assert_int_equal(o.max_ms, 128);
  assert_true(o.multiplier == 2.0);
  assert_int_equal(o.jitter, 1);
  assert_int_equal(o.delay_ms, 64);
  o.multiplier = 1; /* the edges are accepted */
  o.initial_ms = o.max_ms = 1;
  OK(rlock_lock_new_spin_opts(&l, c, "spin:opts", &o));
  rlock_lock_free(l);
  OK(rlock_lock_new_spin_opts(&l, c, "spin:opts", NULL));
  rlock_lock_free(l);
  RC(rlock_lock_new_spin_opts(NULL, c, "spin:opts", NULL), RLOCK_EINVAL);
  RC(rlock_lock_new_spin_opts(&l, NULL, "spin:opts", NULL), RLOCK_EINVAL);
  RC(rlock_lock_new_spin_opts(&l, c, "", NULL), RLOCK_EINVAL);
  rlock_client_free(c);
}

static const dk_case cases[] = {
    DK_CASE(test_mutual_exclusion, DK_BLOCK),
    DK_CASE(test_spin_and_reentrant_exclude, DK_BLOCK),
    DK_CASE(test_waiter_never_subscribes, DK_BLOCK),
    DK_CASE(test_waiter_acquires_promptly_after_release, DK_BLOCK),
    DK_CASE(test_bounded_wait_times_out, DK_BLOCK),
    DK_CASE(test_cancel_ends_a_spin_wait, DK_BLOCK),
    DK_CASE(test_waiter_takes_lapsed_lease, DK_BLOCK),
    DK_CASE(test_release_wakes_reentrant_waiter, DK_BLOCK),
    DK_CASE(test_constant_backoff, DK_ALL),
    DK_CASE(test_exponential_backoff, DK_ALL),
    DK_CASE(test_options_checked, DK_BLOCK),
};

static int no_child(int argc, char **argv) {
  (void)argc, (void)argv;
  return 64;
}

DK_MAIN(cases, no_child)
