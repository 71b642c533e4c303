/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: waiting for a lock (pub/sub wake-ups, timing bounds) and
 * mutual exclusion under contention from threads and processes. The
 * wait's bounds run on every driver (drivers.h). */
#include "drivers.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>

/* Hold `name` from a foreign owner (as another process would) with a long
 * lease, straight in Redis. */
static void hold_foreign(const char *name, int lease_ms) {
  freeReplyObject(
      rt_cmd(srv, "HSET %s 00000000-0000-4000-8000-000000000000:1 1", name));
  freeReplyObject(rt_cmd(srv, "PEXPIRE %s %d", name, lease_ms));
}

/* A wait for a held lock runs out after the time asked (a loop's timer
 * may fire up to 10 ms early: its clock is read once a turn), no try
 * waits at all; each says who holds it. */
static void test_try_acquire_timing(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 0, NULL, NULL);
  rlock_lock *l = fx_lock(c, "wait:timing");
  uint64_t me = dk_me();
  hold_foreign("wait:timing", 60000);
  int64_t t0 = rt_now_ms();
  RC(dk_acquire(l, me, 500, 0), RLOCK_ELOCKED);
  ASSERT_BETWEEN(rt_now_ms() - t0, dk_loop() ? 490 : 500, 2000);
  assert_non_null(strstr(rlock_error_last()->message, "held by another"));
  t0 = rt_now_ms();
  RC(dk_acquire(l, me, 0, 0), RLOCK_ELOCKED);
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 500);
  assert_non_null(strstr(rlock_error_last()->message, "held by another"));
  freeReplyObject(rt_cmd(srv, "DEL wait:timing"));
  DK_FREE((l), (c));
}

typedef struct waiter {
  rlock_client *client;
  const char *name;
  int64_t wait_ms;
  atomic_int *gate; /* hold the lock until the test sets it (NULL: don't) */
  int rc;
  _Atomic int64_t acquired_at; /* read by the test while the waiter runs */
} waiter;

static void *waiter_main(void *arg) {
  waiter *w = arg;
  rlock_lock *l;
  if (rlock_lock_new(&l, w->client, w->name) != RLOCK_OK) {
    w->rc = -999;
    return NULL;
  }
  w->rc = rlock_lock_try_acquire(l, w->wait_ms, 0);
  if (w->rc == RLOCK_OK) {
    atomic_store(&w->acquired_at, rt_now_ms());
    fx_wait_gate(w->gate);
    w->rc = rlock_lock_release(l);
  }
  rlock_lock_free(l);
  return NULL;
}

/* A waiter (of the running driver) sleeps until the holder (a blocking
 * client, another process's as far as it knows) releases, woken by the
 * unlock message; then the holder's client waits for the waiter's hold
 * in turn. */
static void test_unlock_message_wakes_waiter(void **state) {
  (void)state;
  rlock_client *holder = fx_client(srv, 0);
  rlock_client *wc = dk_client(rt_server_url(srv), 0, NULL, NULL);
  rlock_lock *l = fx_lock(holder, "wait:wake"), *wl = fx_lock(wc, "wait:wake");
  OK(rlock_lock_acquire_lease(l, 60000)); /* long TTL: polling would show */
  uint64_t me = rlock_owner_new();
  dk_op w;
  dk_acquire_start(&w, wl, me, 20000, 10000);
  dk_wait_subscribers(srv, "redisson_lock__channel:{wait:wake}", 1,
                      "the waiter's subscription");
  assert_false(dk_op_done(&w));
  int64_t released = rt_now_ms();
  OK(rlock_lock_release(l));
  OK(dk_op_wait(&w, 5000, "the woken waiter"));
  ASSERT_BETWEEN(w.done_us / 1000 - released, 0, 250);
  char field[RLOCK_OWNER_MAX];
  dk_field(wc, me, field);
  assert_int_equal(fx_hget(srv, "wait:wake", field), 1);
  RC(rlock_lock_try_acquire(l, 0, 1000), RLOCK_ELOCKED);
  OK(dk_release(wl, me));
  OK(rlock_lock_try_acquire(l, 0, 1000));
  OK(rlock_lock_release(l));
  rlock_lock_free(wl);
  rlock_lock_free(l);
  rlock_client_free(holder);
  dk_free(wc);
}

/* The subscriber's connection is killed while a waiter sleeps: it is
 * subscribed again, and the release's message still wakes the waiter (the
 * holder's lease, 60 s, is not what ends the wait). */
static void test_subscriber_killed(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 0, NULL, NULL);
  rlock_lock *l = fx_lock(c, "wait:resub");
  uint64_t a = dk_me(), b = rlock_owner_new();
  OK(dk_acquire(l, a, 0, 60000));
  dk_op w;
  dk_acquire_start(&w, l, b, 30000, 10000);
  const char *chan = "redisson_lock__channel:{wait:resub}";
  dk_wait_subscribers(srv, chan, 1, "the waiter's subscription");
  assert_true(rt_cmd_int(srv, "CLIENT KILL TYPE pubsub") >= 1);
  if (dk_loop()) /* the loop has not run since */
    assert_int_equal(fx_subscribers(srv, chan), 0);
  dk_wait_subscribers(srv, chan, 1, "the subscription again");
  int64_t t0 = rt_now_ms();
  OK(dk_release(l, a));
  OK(dk_op_wait(&w, 10000, "the waiter after re-subscribing"));
  ASSERT_BETWEEN(w.done_us / 1000 - t0, 0, 3000);
  OK(dk_release(l, b));
  DK_FREE((l), (c));
}

static bool pred_attempts(void *arg, char *why, size_t cap) {
  long long want = *(long long *)arg, got = fx_evalsha_calls(srv);
  snprintf(why, cap, "%lld attempts of %lld", got, want);
  return got >= want;
}

/* A wait on `name` (held by another owner for a minute) of 1 s: once the
 * server has answered `attempts` attempts, it freezes until the wait
 * ends, so nothing is in flight then; the wait must end "not in time"
 * with no attempt more. */
static void expect_quiet_end(rlock_lock *l, const char *name,
                             long long attempts, const char *what) {
  uint64_t me = dk_me();
  OK(dk_acquire(l, me, 0, 5000)); /* connected, the script loaded */
  OK(dk_release(l, me));
  hold_foreign(name, 60000);
  freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
  dk_op w;
  dk_acquire_start(&w, l, rlock_owner_new(), rt_scaled_ms(1000), 5000);
  long long want = attempts;
  dk_wait(pred_attempts, &want, 5000, what);
  /* The last answer may still wait in the server's output, behind that of
   * the INFO just answered: one more round trip lets it out. */
  freeReplyObject(rt_cmd(srv, "PING"));
  rt_server_freeze(srv);
  int rc = dk_op_wait(&w, 5000, "the wait's end");
  rt_server_thaw(srv);
  RC(rc, RLOCK_ELOCKED);
  assert_non_null(strstr(w.r.msg, "held by another"));
  assert_int_equal(fx_evalsha_calls(srv), attempts);
  freeReplyObject(rt_cmd(srv, "DEL %s", name));
}

/* A wait nothing wakes (no message; the holder's lease, 60 s, outlasts
 * it) ends at its end "not in time" without a last attempt: one sent then
 * would race the call's bound, which leaves its answer 100 ms only, so a
 * slow but healthy server (a loaded machine) turned RLOCK_ELOCKED into
 * RLOCK_ETIMEOUT. The server freezes once the attempt after subscribing
 * (the second) has been answered. */
static void test_wait_end_sends_no_attempt(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 0, NULL, NULL);
  rlock_lock *l = fx_lock(c, "wait:end");
  expect_quiet_end(l, "wait:end", 2, "the attempt after subscribing");
  DK_FREE((l), (c));
}

/* The same for a spin lock: its back-off (constant, 2/5 of the wait)
 * attempts at 0, 2/5 and 4/5 of the wait; the next pause, cut at the
 * wait's end, ends the wait without a fourth attempt. */
static void test_spin_wait_end_sends_no_attempt(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 0, NULL, NULL);
  rlock_spin_options o = RLOCK_SPIN_OPTIONS_INIT;
  o.backoff = RLOCK_SPIN_CONSTANT;
  o.delay_ms = rt_scaled_ms(400);
  rlock_lock *l;
  OK(rlock_lock_new_spin_opts(&l, c, "wait:spin-end", &o));
  expect_quiet_end(l, "wait:spin-end", 3, "the third attempt");
  DK_FREE((l), (c));
}

static bool pred_one_acquired(void *arg, char *why, size_t cap) {
  waiter *w = arg;
  snprintf(why, cap, "none of the three waiters holds the lock");
  for (int i = 0; i < 3; i++)
    if (atomic_load(&w[i].acquired_at) != 0)
      return true;
  return false;
}

static void test_one_message_wakes_one_waiter(void **state) {
  (void)state;
  rlock_client *holder = fx_client(srv, 0), *wc = fx_client(srv, 0);
  rlock_lock *l = fx_lock(holder, "wait:one");
  OK(rlock_lock_acquire_lease(l, 60000));
  freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
  atomic_int gate = 0; /* the winner holds on until the counts are taken */
  waiter w[3];
  pthread_t t[3];
  for (int i = 0; i < 3; i++) {
    w[i] = (waiter){
        .client = wc, .name = "wait:one", .wait_ms = 30000, .gate = &gate};
    pthread_create(&t[i], NULL, waiter_main, &w[i]);
  }
  fx_wait_evalsha(srv, 3 * 2, "every waiter's attempt once subscribed");
  freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
  OK(rlock_lock_release(l));
  rt_wait_until(pred_one_acquired, w, rt_scaled_ms(5000),
                "a waiter woken by the release");
  /* The passage of time is the point here: a waiter the message should not
   * have woken would try within a few ms; give it 300 (the winner holds on
   * meanwhile, so no later release can wake anyone). */
  rt_sleep_ms(rt_scaled_ms(300));
  int acquired = 0;
  for (int i = 0; i < 3; i++)
    acquired += atomic_load(&w[i].acquired_at) != 0;
  assert_int_equal(acquired, 1);
  /* The release plus one attempt: the other two waiters slept on. */
  assert_int_equal(fx_evalsha_calls(srv), 2);
  atomic_store(&gate, 1);
  for (int i = 0; i < 3; i++) {
    pthread_join(t[i], NULL);
    OK(w[i].rc);
  }
  FX_FREE((l), (holder, wc));
}

static void test_subscription_shared_and_released(void **state) {
  (void)state;
  rlock_client *holder = fx_client(srv, 0), *wc = fx_client(srv, 0);
  rlock_lock *l = fx_lock(holder, "wait:shared");
  OK(rlock_lock_acquire_lease(l, 60000));
  freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
  waiter w[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (waiter){.client = wc, .name = "wait:shared", .wait_ms = 30000};
    pthread_create(&t[i], NULL, waiter_main, &w[i]);
  }
  /* All four subscribed (each tried again after that): one subscription. */
  fx_wait_evalsha(srv, 4 * 2, "every waiter's attempt once subscribed");
  assert_int_equal(fx_subscribers(srv, "redisson_lock__channel:{wait:shared}"),
                   1);
  OK(rlock_lock_release(l));
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    OK(w[i].rc);
  }
  fx_wait_subscribers(srv, "redisson_lock__channel:{wait:shared}", 0,
                      "the end of the subscription after the last waiter");
  FX_FREE((l), (holder, wc));
}

typedef struct cancel_waiter {
  rlock_lock *lock;
  rlock_cancel *cancel;
  int rc;
  _Atomic int64_t done_at;
} cancel_waiter;

static void *cancel_waiter_main(void *arg) {
  cancel_waiter *w = arg;
  w->rc =
      rlock_lock_try_acquire_cancel(w->lock, RLOCK_WAIT_FOREVER, 0, w->cancel);
  atomic_store(&w->done_at, rt_now_ms());
  return NULL;
}

static rlock_cancel *signal_token;
static void fire_on_signal(int sig) {
  (void)sig;
  rlock_cancel_fire(signal_token);
}

#define CANCEL_CHANNEL "redisson_lock__channel:{wait:cancel}"

static void test_cancel_ends_a_wait(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fx_lock(c, "wait:cancel");
  hold_foreign("wait:cancel", 60000);
  rlock_cancel *tok;
  OK(rlock_cancel_new(&tok));
  /* From another thread. */
  cancel_waiter w = {.lock = l, .cancel = tok};
  pthread_t t;
  pthread_create(&t, NULL, cancel_waiter_main, &w);
  fx_wait_subscribers(srv, CANCEL_CHANNEL, 1, "the waiter's subscription");
  int64_t fired = rt_now_ms();
  rlock_cancel_fire(tok);
  pthread_join(t, NULL);
  RC(w.rc, RLOCK_ECANCELED);
  ASSERT_BETWEEN(atomic_load(&w.done_at) - fired, 0, 200);
  assert_int_equal(rlock_cancel_fired(tok), 1);
  /* Already fired: gives up before trying. */
  RC(rlock_lock_try_acquire_cancel(l, 1000, 0, tok), RLOCK_ECANCELED);
  /* From a signal handler, the case it is made for. */
  rlock_cancel_reset(tok);
  assert_int_equal(rlock_cancel_fired(tok), 0);
  signal_token = tok;
  struct sigaction sa = {.sa_handler = fire_on_signal}, old;
  sigaction(SIGUSR1, &sa, &old);
  w = (cancel_waiter){.lock = l, .cancel = tok};
  fx_wait_subscribers(srv, CANCEL_CHANNEL, 0, "the first waiter's leaving");
  pthread_create(&t, NULL, cancel_waiter_main, &w);
  fx_wait_subscribers(srv, CANCEL_CHANNEL, 1, "the waiter's subscription");
  fired = rt_now_ms();
  pthread_kill(t, SIGUSR1);
  pthread_join(t, NULL);
  sigaction(SIGUSR1, &old, NULL);
  RC(w.rc, RLOCK_ECANCELED);
  ASSERT_BETWEEN(atomic_load(&w.done_at) - fired, 0, 200);
  /* A token that never fires changes nothing. */
  rlock_cancel_reset(tok);
  freeReplyObject(rt_cmd(srv, "DEL wait:cancel"));
  OK(rlock_lock_try_acquire_cancel(l, 1000, 0, tok));
  OK(rlock_lock_release(l));
  RC(rlock_cancel_new(NULL), RLOCK_EINVAL);
  rlock_cancel_free(tok);
  rlock_cancel_free(NULL);
  FX_FREE((l), (c));
}

/* Lock, GET, SET +1, unlock: loses updates unless the lock excludes. */
static int increment_loop(rlock_client *c, const char *url, const char *name,
                          int n) {
  rlock_lock *l;
  int port = atoi(strrchr(url, ':') + 1);
  redisContext *raw = redisConnect("127.0.0.1", port);
  int rc = rlock_lock_new(&l, c, name);
  for (int i = 0; rc == RLOCK_OK && i < n; i++) {
    if ((rc = rlock_lock_acquire(l)) != RLOCK_OK)
      break;
    redisReply *r = redisCommand(raw, "GET %s:counter", name);
    long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    freeReplyObject(redisCommand(raw, "SET %s:counter %lld", name, v + 1));
    rc = rlock_lock_release(l);
  }
  rlock_lock_free(l);
  redisFree(raw);
  return rc;
}

typedef struct incr_arg {
  rlock_client *c;
  int rc;
} incr_arg;

static void *incr_thread(void *arg) {
  incr_arg *a = arg;
  a->rc = increment_loop(a->c, rt_server_url(srv), "wait:mutex-threads", 100);
  return NULL;
}

static void test_mutual_exclusion_threads(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  incr_arg a[8];
  pthread_t t[8];
  for (int i = 0; i < 8; i++) {
    a[i] = (incr_arg){.c = c};
    pthread_create(&t[i], NULL, incr_thread, &a[i]);
  }
  for (int i = 0; i < 8; i++) {
    pthread_join(t[i], NULL);
    OK(a[i].rc);
  }
  redisReply *r = rt_cmd(srv, "GET wait:mutex-threads:counter");
  assert_string_equal(r->str, "800");
  freeReplyObject(r);
  rlock_client_free(c);
}

static void test_mutual_exclusion_processes(void **state) {
  (void)state;
  pid_t pids[4];
  const char *args[] = {"increment", rt_server_url(srv), NULL};
  for (int i = 0; i < 4; i++)
    pids[i] = fx_spawn_child(args, NULL);
  for (int i = 0; i < 4; i++) {
    int status;
    assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
  }
  redisReply *r = rt_cmd(srv, "GET wait:mutex-procs:counter");
  assert_string_equal(r->str, "400");
  freeReplyObject(r);
}

/* Child role "increment URL": 100 locked increments from a new client. */
static int child_main(int argc, char **argv) {
  if (argc != 2 || strcmp(argv[0], "increment") != 0)
    return 64;
  rlock_client *c;
  int rc = fx_child_client(&c, argv[1]);
  if (rc == RLOCK_OK) {
    rc = increment_loop(c, argv[1], "wait:mutex-procs", 100);
    rlock_client_free(c);
  }
  if (rc != RLOCK_OK)
    fprintf(stderr, "child: %s\n", rlock_error_last()->message);
  return rc == RLOCK_OK ? 0 : 1;
}

static const dk_case cases[] = {
    DK_CASE(test_try_acquire_timing, DK_ALL),
    DK_CASE(test_unlock_message_wakes_waiter, DK_ALL),
    DK_CASE(test_subscriber_killed, DK_ALL),
    DK_CASE(test_wait_end_sends_no_attempt, DK_ALL),
    DK_CASE(test_spin_wait_end_sends_no_attempt, DK_ALL),
    DK_CASE(test_one_message_wakes_one_waiter, DK_BLOCK),
    DK_CASE(test_subscription_shared_and_released, DK_BLOCK),
    DK_CASE(test_cancel_ends_a_wait, DK_BLOCK),
    DK_CASE(test_mutual_exclusion_threads, DK_BLOCK),
    DK_CASE(test_mutual_exclusion_processes, DK_BLOCK),
};

DK_MAIN(cases, child_main)
