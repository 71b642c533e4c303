/* SPDX-License-Identifier: BSD-3-Clause AND Apache-2.0 */
/* Integration: the fair lock — strict FIFO across threads and processes,
 * waiters that crash or give up, no spinning, and interop with Redisson's
 * fair-lock scripts as seed 002 quotes them. */
#include "fixture.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>

/* RedissonFairLock.tryLockInnerAsync (seed 002; the article's rendering
 * dropped "redis.call", restored here). KEYS name, queue, timeouts; ARGV
 * lease, owner, wait, now. */
static const char *JAVA_FAIR_LOCK =
    "while true do "
    "local firstThreadId2 = redis.call('lindex', KEYS[2], 0);"
    "if firstThreadId2 == false then break; end;"
    "local timeout = tonumber(redis.call('zscore', KEYS[3], firstThreadId2));"
    "if timeout <= tonumber(ARGV[4]) then "
    "redis.call('zrem', KEYS[3], firstThreadId2);"
    "redis.call('lpop', KEYS[2]);"
    "else break; end; end;"
    "if (redis.call('exists', KEYS[1]) == 0) "
    "and ((redis.call('exists', KEYS[2]) == 0) "
    "or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then "
    "redis.call('lpop', KEYS[2]);"
    "redis.call('zrem', KEYS[3], ARGV[2]);"
    "local keys = redis.call('zrange', KEYS[3], 0, -1);"
    "for i = 1, #keys, 1 do "
    "redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i]);"
    "end;"
    "redis.call('hset', KEYS[1], ARGV[2], 1);"
    "redis.call('pexpire', KEYS[1], ARGV[1]);"
    "return nil;"
    "end;"
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then "
    "redis.call('hincrby', KEYS[1], ARGV[2],1);"
    "redis.call('pexpire', KEYS[1], ARGV[1]);"
    "return nil;"
    "end;"
    "local timeout = redis.call('zscore', KEYS[3], ARGV[2]);"
    "if timeout ~= false then "
    "return timeout - tonumber(ARGV[3]) - tonumber(ARGV[4]);"
    "end;"
    "local lastThreadId = redis.call('lindex', KEYS[2], -1);"
    "local ttl;"
    "if lastThreadId ~= false and lastThreadId ~= ARGV[2] then "
    "ttl = tonumber(redis.call('zscore', KEYS[3], lastThreadId)) - "
    "tonumber(ARGV[4]);"
    "else "
    "ttl = redis.call('pttl', KEYS[1]);"
    "end;"
    "local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]);"
    "if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then "
    "redis.call('rpush', KEYS[2], ARGV[2]);"
    "end;"
    "return ttl;";

/* RedissonFairLock.unlockInnerAsync (seed 002). KEYS name, queue,
 * timeouts, channel; ARGV message, lease, owner, now. */
static const char *JAVA_FAIR_UNLOCK =
    "while true do "
    "local firstThreadId2 = redis.call('lindex', KEYS[2], 0);"
    "if firstThreadId2 == false then break; end; "
    "local timeout = tonumber(redis.call('zscore', KEYS[3], firstThreadId2));"
    "if timeout <= tonumber(ARGV[4]) then "
    "redis.call('zrem', KEYS[3], firstThreadId2); "
    "redis.call('lpop', KEYS[2]); "
    "else break; end; end;"
    "if (redis.call('exists', KEYS[1]) == 0) then "
    "local nextThreadId = redis.call('lindex', KEYS[2], 0); "
    "if nextThreadId ~= false then "
    "redis.call('publish', KEYS[4] .. ':' .. nextThreadId, ARGV[1]); "
    "end; "
    "return 1; "
    "end;"
    "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then "
    "return nil;"
    "end; "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
    "if (counter > 0) then "
    "redis.call('pexpire', KEYS[1], ARGV[2]); "
    "return 0; "
    "end; "
    "redis.call('del', KEYS[1]); "
    "local nextThreadId = redis.call('lindex', KEYS[2], 0); "
    "if nextThreadId ~= false then "
    "redis.call('publish', KEYS[4] .. ':' .. nextThreadId, ARGV[1]); "
    "end; "
    "return 1; ";

#define JAVA_OWNER "6f1e2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b:57"

static long long epoch_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Redisson's fair acquisition of `n` for `owner` (30 s lease, 300 s
 * wait), its reply. */
static redisReply *java_lock(const char *n, const char *owner) {
  return rt_cmd(srv,
                "EVAL %s 3 %s redisson_lock_queue:{%s} "
                "redisson_lock_timeout:{%s} 30000 %s 300000 %lld",
                JAVA_FAIR_LOCK, n, n, n, owner, epoch_ms());
}

/* Redisson's fair release of `n` by JAVA_OWNER, its reply. */
static redisReply *java_unlock(const char *n) {
  return rt_cmd(srv,
                "EVAL %s 4 %s redisson_lock_queue:{%s} "
                "redisson_lock_timeout:{%s} "
                "redisson_lock__channel:{%s} 0 30000 %s %lld",
                JAVA_FAIR_UNLOCK, n, n, n, n, JAVA_OWNER, epoch_ms());
}

/* The clients and fair locks a case makes (client(), fair_lock()), freed
 * after it by free_made, its teardown, whether it passed or failed: a
 * case frees none of them itself. */
static rlock_client *made_c[4];
static rlock_lock *made_l[8];
static int n_c, n_l;

static int free_made(void **state) {
  (void)state;
  while (n_l > 0)
    rlock_lock_free(made_l[--n_l]);
  while (n_c > 0)
    rlock_client_free(made_c[--n_c]);
  return 0;
}

static rlock_client *client(void) {
  assert_true(n_c < 4);
  return made_c[n_c++] = fx_client(srv, 0);
}

static rlock_lock *fair_lock(rlock_client *c, const char *name) {
  assert_true(n_l < 8);
  OK(rlock_lock_new_fair(&made_l[n_l], c, name));
  return made_l[n_l++];
}

static long long queue_len(const char *name) {
  return rt_cmd_int(srv, "LLEN redisson_lock_queue:{%s}", name);
}

static void wait_queue_len(const char *name, long long n) {
  int64_t t0 = rt_now_ms();
  while (queue_len(name) != n) {
    if (rt_now_ms() - t0 > rt_scaled_ms(5000))
      fail_msg("queue of '%s' has %lld waiters, expected %lld", name,
               queue_len(name), n);
    rt_sleep_ms(5);
  }
}

static void assert_no_keys_left(const char *name) {
  assert_int_equal(rt_cmd_int(srv,
                              "EXISTS %s redisson_lock_queue:{%s} "
                              "redisson_lock_timeout:{%s}",
                              name, name, name),
                   0);
}

/* Each waiter, once it holds the lock, appends its index to NAME:order. */
typedef struct fifo_waiter {
  rlock_client *c;
  const char *name;
  int index;
  int rc;
} fifo_waiter;

static void *fifo_thread(void *arg) {
  fifo_waiter *w = arg;
  rlock_lock *l;
  if ((w->rc = rlock_lock_new_fair(&l, w->c, w->name)) != RLOCK_OK)
    return NULL;
  w->rc = rlock_lock_try_acquire(l, 30000, 0);
  if (w->rc == RLOCK_OK) {
    redisContext *raw = rt_server_connect(srv);
    freeReplyObject(redisCommand(raw, "RPUSH %s:order %d", w->name, w->index));
    redisFree(raw);
    rt_sleep_ms(20); /* a hold that takes time, not a synchronisation */
    w->rc = rlock_lock_release(l);
  }
  rlock_lock_free(l);
  return NULL;
}

static void assert_order(const char *name, int n) {
  redisReply *r = rt_cmd(srv, "LRANGE %s:order 0 -1", name);
  assert_int_equal(r->elements, n);
  for (int i = 0; i < n; i++)
    assert_int_equal(atoi(r->element[i]->str), i);
  freeReplyObject(r);
  freeReplyObject(rt_cmd(srv, "DEL %s:order", name));
}

static void test_fifo_threads(void **state) {
  (void)state;
  enum { N = 6 };
  rlock_client *holder = client(), *wc = client();
  rlock_lock *l = fair_lock(holder, "fair:threads");
  for (int round = 0; round < 3; round++) {
    OK(rlock_lock_acquire(l));
    fifo_waiter w[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) { /* arrive one after another */
      w[i] = (fifo_waiter){.c = wc, .name = "fair:threads", .index = i};
      pthread_create(&t[i], NULL, fifo_thread, &w[i]);
      wait_queue_len("fair:threads", i + 1);
    }
    OK(rlock_lock_release(l));
    for (int i = 0; i < N; i++) {
      pthread_join(t[i], NULL);
      OK(w[i].rc);
    }
    assert_order("fair:threads", N);
  }
  assert_no_keys_left("fair:threads");
}

static void test_fifo_processes(void **state) {
  (void)state;
  enum { N = 4 };
  rlock_client *holder = client();
  rlock_lock *l = fair_lock(holder, "fair:procs");
  for (int round = 0; round < 2; round++) {
    OK(rlock_lock_acquire(l));
    pid_t pids[N];
    char idx[N][8];
    for (int i = 0; i < N; i++) {
      snprintf(idx[i], sizeof idx[i], "%d", i);
      const char *args[] = {"fifo", rt_server_url(srv), "fair:procs", idx[i],
                            NULL};
      pids[i] = fx_spawn_child(args, NULL);
      wait_queue_len("fair:procs", i + 1);
    }
    OK(rlock_lock_release(l));
    for (int i = 0; i < N; i++) {
      int status;
      assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
      assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    assert_order("fair:procs", N);
  }
  assert_no_keys_left("fair:procs");
}

static void test_crashed_waiter_is_purged(void **state) {
  (void)state;
  rlock_client *holder = client(), *wc = client();
  rlock_lock *l = fair_lock(holder, "fair:crash");
  OK(rlock_lock_acquire_lease(l, 800));
  int out;
  const char *args[] = {"queue-and-hang", rt_server_url(srv), "fair:crash",
                        "700", NULL};
  pid_t pid = fx_spawn_child(args, &out);
  wait_queue_len("fair:crash", 1);
  fifo_waiter w = {.c = wc, .name = "fair:crash", .index = 0};
  pthread_t t;
  pthread_create(&t, NULL, fifo_thread, &w);
  wait_queue_len("fair:crash", 2);
  kill(pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
  close(out);
  int64_t t0 = rt_now_ms();
  pthread_join(t, NULL); /* the dead head's deadline is ~800 + 700 ms out */
  OK(w.rc);
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 3000);
  assert_order("fair:crash", 1);
  assert_no_keys_left("fair:crash");
  RC(rlock_lock_release(l), RLOCK_ELOST); /* its lease ran out long ago */
}

static void test_give_up_leaves_queue_at_once(void **state) {
  (void)state;
  rlock_client *holder = client(), *wc = client();
  rlock_lock *l = fair_lock(holder, "fair:giveup"),
             *w = fair_lock(wc, "fair:giveup");
  OK(rlock_lock_acquire_lease(l, 60000));
  RC(rlock_lock_try_acquire(w, 0, 0), RLOCK_ELOCKED); /* never queues */
  /* The script's answer is a sleep bound, never reported as a lease. */
  assert_null(strstr(rlock_error_last()->message, "remaining lease"));
  assert_non_null(strstr(rlock_error_last()->message, "fair:giveup"));
  assert_int_equal(queue_len("fair:giveup"), 0);
  RC(rlock_lock_try_acquire(w, 300, 0), RLOCK_ELOCKED);
  assert_int_equal(rt_cmd_int(srv, "EXISTS redisson_lock_queue:{fair:giveup} "
                                   "redisson_lock_timeout:{fair:giveup}"),
                   0);
  OK(rlock_lock_release(l));
  assert_no_keys_left("fair:giveup");
}

typedef struct cancel_arg {
  rlock_lock *lock;
  rlock_cancel *cancel;
  int rc;
} cancel_arg;

static void *cancel_thread(void *arg) {
  cancel_arg *a = arg;
  a->rc =
      rlock_lock_try_acquire_cancel(a->lock, RLOCK_WAIT_FOREVER, 0, a->cancel);
  return NULL;
}

static void test_canceled_waiter_leaves_queue(void **state) {
  (void)state;
  rlock_client *holder = client(), *wc = client();
  rlock_lock *l = fair_lock(holder, "fair:cancel");
  rlock_lock *w = fair_lock(wc, "fair:cancel");
  OK(rlock_lock_acquire_lease(l, 60000));
  rlock_cancel *tok;
  OK(rlock_cancel_new(&tok));
  cancel_arg a = {.lock = w, .cancel = tok};
  pthread_t t;
  pthread_create(&t, NULL, cancel_thread, &a);
  wait_queue_len("fair:cancel", 1);
  rlock_cancel_fire(tok);
  pthread_join(t, NULL);
  RC(a.rc, RLOCK_ECANCELED);
  assert_int_equal(queue_len("fair:cancel"), 0);
  OK(rlock_lock_release(l));
  assert_no_keys_left("fair:cancel");
  rlock_cancel_free(tok);
}

static void test_second_in_line_does_not_spin(void **state) {
  (void)state;
  /* A dead waiter heads the queue of a free lock for 1.5 s more. */
  freeReplyObject(rt_cmd(srv, "RPUSH redisson_lock_queue:{fair:spin} dead:1"));
  freeReplyObject(rt_cmd(srv,
                         "ZADD redisson_lock_timeout:{fair:spin} %lld dead:1",
                         epoch_ms() + 1500));
  rlock_client *c = client();
  rlock_lock *l = fair_lock(c, "fair:spin");
  freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
  int64_t t0 = rt_now_ms();
  OK(rlock_lock_try_acquire(l, 10000, 0));
  ASSERT_BETWEEN(rt_now_ms() - t0, 1000, 3000);
  ASSERT_RANGE(fx_evalsha_calls(srv), 1, 10); /* not a tight loop */
  OK(rlock_lock_release(l));
  assert_no_keys_left("fair:spin");
}

/* A waiter that never releases: it takes the lock with a lease and
 * leaves it to run out, as in Redisson's RedissonFairLockTest. */
typedef struct lease_waiter {
  rlock_client *c;
  const char *name;
  int64_t lease_ms;
  atomic_int *turns; /* shared: the order of acquisition */
  char owner[RLOCK_OWNER_MAX];
  atomic_int started; /* owner is filled in */
  atomic_int done;
  int rc;
  char why[256]; /* the thread's last error, when rc says one */
  int turn;
  _Atomic int64_t acquired_at;
} lease_waiter;

static void *lease_thread(void *arg) {
  lease_waiter *w = arg;
  rlock_lock *l = NULL;
  w->rc = rlock_client_owner(w->owner, sizeof w->owner, w->c);
  if (w->rc == RLOCK_OK)
    w->rc = rlock_lock_new_fair(&l, w->c, w->name);
  atomic_store(&w->started, 1);
  if (w->rc == RLOCK_OK)
    w->rc = rlock_lock_try_acquire(l, 10000, w->lease_ms);
  if (w->rc == RLOCK_OK) {
    w->turn = atomic_fetch_add(w->turns, 1);
    atomic_store(&w->acquired_at, rt_now_ms());
  } else {
    snprintf(w->why, sizeof w->why, "%s", rlock_error_last()->message);
  }
  rlock_lock_free(l);
  atomic_store(&w->done, 1);
  return NULL;
}

/* Whether the waiter is in the queue, holds the lock, or is done. */
static bool lease_waiter_arrived(void *arg, char *why, size_t cap) {
  lease_waiter *w = arg;
  if (!atomic_load(&w->started)) {
    snprintf(why, cap, "thread not started");
    return false;
  }
  if (atomic_load(&w->done) ||
      rt_cmd_int(srv, "HEXISTS %s %s", w->name, w->owner) == 1)
    return true;
  redisReply *r = rt_cmd(srv, "LRANGE redisson_lock_queue:{%s} 0 -1", w->name);
  bool queued = false;
  for (size_t i = 0; i < r->elements && !queued; i++)
    queued = strcmp(r->element[i]->str, w->owner) == 0;
  freeReplyObject(r);
  snprintf(why, cap, "%s neither queued nor holding", w->owner);
  return queued;
}

/* Start n lease waiters on `name`, each once the one before has arrived,
 * join them, and check they took turns in order, each as the lease
 * before ran out. Returns ms from the first start to the last turn. */
static int64_t run_lease_waiters(rlock_client *c, const char *name,
                                 lease_waiter *w, int n, int64_t lease_ms) {
  pthread_t t[16];
  assert_true(n <= 16);
  atomic_int turns = 0;
  int64_t t0 = rt_now_ms();
  for (int i = 0; i < n; i++) {
    w[i] = (lease_waiter){
        .c = c, .name = name, .lease_ms = lease_ms, .turns = &turns};
    pthread_create(&t[i], NULL, lease_thread, &w[i]);
    rt_wait_until(lease_waiter_arrived, &w[i], rt_scaled_ms(5000),
                  "the waiter to queue");
  }
  for (int i = 0; i < n; i++)
    pthread_join(t[i], NULL);
  for (int i = 0; i < n; i++) {
    if (w[i].rc != RLOCK_OK)
      fail_msg("waiter %d: %s (%s)", i, rlock_strerror(w[i].rc), w[i].why);
    assert_int_equal(w[i].turn, i);
  }
  /* Each waits out the lease before it (less the time its predecessor's
   * reply took to come back), and no longer than that lease plus slack:
   * lease expiry is announced to nobody. */
  for (int i = 1; i < n; i++) {
    int64_t gap =
        atomic_load(&w[i].acquired_at) - atomic_load(&w[i - 1].acquired_at);
    ASSERT_BETWEEN(gap, lease_ms - 100, lease_ms + 400);
  }
  return atomic_load(&w[n - 1].acquired_at) - t0;
}

static void test_leases_run_out_in_turn(void **state) {
  (void)state;
  enum { N = 8, LEASE_MS = 500 };
  const char *name = "fair:leases";
  rlock_client *c = client();
  lease_waiter w[N];
  int64_t took = run_lease_waiters(c, name, w, N, LEASE_MS);
  print_message("%d lease waiters (lease %d ms): the last took its turn "
                "after %lld ms\n",
                N, LEASE_MS, (long long)took);
  ASSERT_BETWEEN(took, (N - 1) * LEASE_MS - 100, N * LEASE_MS + 2000);
  fx_wait_exists(srv, name, 0, rt_scaled_ms(2 * LEASE_MS));
  assert_no_keys_left(name);
}

/* Two waiters behind a holder that never releases: the second in line
 * sleeps through both leases, waking only when one runs out or when it
 * becomes the head, never polling. */
static void test_second_waiter_sleeps_through_leases(void **state) {
  (void)state;
  enum { LEASE_MS = 600 };
  const char *name = "fair:behind";
  rlock_client *holder = client(), *c = client();
  rlock_lock *l = fair_lock(holder, name);
  OK(rlock_lock_acquire_lease(l, LEASE_MS));
  freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
  lease_waiter w[2];
  run_lease_waiters(c, name, w, 2, LEASE_MS);
  /* Per waiter: the queueing attempt, the one after subscribing, one or
   * two as each lease before its turn runs out (a wake-up a millisecond
   * early tries again), and for the second one more when it becomes the
   * head: 8 to 12 in all. A poll would be hundreds. */
  ASSERT_RANGE(fx_evalsha_calls(srv), 4, 16);
  fx_wait_exists(srv, name, 0, rt_scaled_ms(2 * LEASE_MS));
  assert_no_keys_left(name);
  RC(rlock_lock_release(l), RLOCK_ELOST);
}

typedef struct timed_waiter {
  rlock_client *c;
  const char *name;
  int rc;
  _Atomic int64_t acquired_at;
} timed_waiter;

static void *timed_thread(void *arg) {
  timed_waiter *w = arg;
  rlock_lock *l;
  if ((w->rc = rlock_lock_new_fair(&l, w->c, w->name)) != RLOCK_OK)
    return NULL;
  w->rc = rlock_lock_try_acquire(l, 20000, 0);
  atomic_store(&w->acquired_at, rt_now_ms());
  if (w->rc == RLOCK_OK)
    w->rc = rlock_lock_release(l);
  rlock_lock_free(l);
  return NULL;
}

static void test_force_release_wakes_head(void **state) {
  (void)state;
  rlock_client *a = client(), *b = client();
  rlock_lock *l = fair_lock(a, "fair:force");
  OK(rlock_lock_acquire_lease(l, 60000));
  timed_waiter w = {.c = b, .name = "fair:force"};
  pthread_t t;
  pthread_create(&t, NULL, timed_thread, &w);
  wait_queue_len("fair:force", 1);
  fx_wait_fair_head_subscribed(srv, "fair:force");
  rlock_lock *other = fair_lock(b, "fair:force");
  int deleted;
  int64_t t0 = rt_now_ms();
  OK(rlock_lock_force_release(&deleted, other));
  assert_int_equal(deleted, 1);
  pthread_join(t, NULL);
  OK(w.rc);
  ASSERT_BETWEEN(atomic_load(&w.acquired_at) - t0, 0, 300);
  RC(rlock_lock_release(l), RLOCK_ELOST);
  assert_no_keys_left("fair:force");
}

static void test_reentrancy_and_non_holder(void **state) {
  (void)state;
  rlock_client *a = client(), *b = client();
  rlock_lock *la = fair_lock(a, "fair:re"), *lb = fair_lock(b, "fair:re");
  OK(rlock_lock_acquire(la));
  OK(rlock_lock_try_acquire(la, 0, 0));
  int64_t n;
  OK(rlock_lock_hold_count(&n, la));
  assert_int_equal(n, 2);
  RC(rlock_lock_release(lb), RLOCK_ENOTHELD);
  OK(rlock_lock_release(la));
  OK(rlock_lock_release(la));
  RC(rlock_lock_release(la), RLOCK_ENOTHELD);
  assert_no_keys_left("fair:re");
}

static void test_wrong_type_and_names(void **state) {
  (void)state;
  rlock_client *c = client();
  rlock_lock *l;
  RC(rlock_lock_new_fair(&l, c, ""), RLOCK_EINVAL);
  RC(rlock_lock_new_fair(&l, c, NULL), RLOCK_EINVAL);
  RC(rlock_lock_new_fair(&l, c, "x{}"), RLOCK_EINVAL);
  RC(rlock_lock_new_fair(NULL, c, "x"), RLOCK_EINVAL);
  freeReplyObject(rt_cmd(srv, "SET fair:string precious"));
  l = fair_lock(c, "fair:string");
  RC(rlock_lock_try_acquire(l, 0, 0), RLOCK_EWRONGTYPE);
  assert_non_null(strstr(rlock_error_last()->message,
                         "key 'fair:string' holds a string, not a lock"));
  RC(rlock_lock_try_acquire(l, 200, 0), RLOCK_EWRONGTYPE);
  RC(rlock_lock_force_release(NULL, l), RLOCK_EWRONGTYPE);
  rlock_lock_info *info;
  RC(rlock_lock_inspect(&info, l), RLOCK_EWRONGTYPE);
  redisReply *r = rt_cmd(srv, "GET fair:string");
  assert_string_equal(r->str, "precious");
  freeReplyObject(r);
}

static void test_inspect_shows_queue(void **state) {
  (void)state;
  rlock_client *holder = client(), *wc = client();
  rlock_lock *l = fair_lock(holder, "fair:inspect");
  OK(rlock_lock_acquire_lease(l, 10000));
  timed_waiter w[2] = {{.c = wc, .name = "fair:inspect"},
                       {.c = wc, .name = "fair:inspect"}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) {
    pthread_create(&t[i], NULL, timed_thread, &w[i]);
    wait_queue_len("fair:inspect", i + 1);
  }
  rlock_lock_info *info;
  OK(rlock_lock_inspect(&info, l));
  assert_int_equal(rlock_lock_info_locked(info), 1);
  assert_int_equal(rlock_lock_info_holder_count(info), 1);
  assert_int_equal(rlock_lock_info_queue_count(info), 2);
  /* Deadlines: lease left + 20 s wait, then 20 s more for the second. */
  ASSERT_RANGE(rlock_lock_info_queue_deadline_ms(info, 0), 28000, 30000);
  ASSERT_RANGE(rlock_lock_info_queue_deadline_ms(info, 1) -
                   rlock_lock_info_queue_deadline_ms(info, 0),
               19900, 20100);
  redisReply *r = rt_cmd(srv, "LINDEX redisson_lock_queue:{fair:inspect} 0");
  assert_string_equal(rlock_lock_info_queue_owner(info, 0), r->str);
  freeReplyObject(r);
  rlock_lock_info_free(info);
  OK(rlock_lock_release(l));
  for (int i = 0; i < 2; i++) {
    pthread_join(t[i], NULL);
    OK(w[i].rc);
  }
}

static void test_lease_expiry_with_waiters(void **state) {
  (void)state;
  rlock_client *holder = client(), *wc = client();
  rlock_lock *l = fair_lock(holder, "fair:expiry");
  OK(rlock_lock_acquire_lease(l, 500));
  fifo_waiter w[2];
  pthread_t t[2];
  for (int i = 0; i < 2; i++) {
    w[i] = (fifo_waiter){.c = wc, .name = "fair:expiry", .index = i};
    pthread_create(&t[i], NULL, fifo_thread, &w[i]);
    wait_queue_len("fair:expiry", i + 1);
  }
  for (int i = 0; i < 2; i++) {
    pthread_join(t[i], NULL);
    OK(w[i].rc);
  }
  assert_order("fair:expiry", 2);
  RC(rlock_lock_release(l), RLOCK_ELOST);
  assert_no_keys_left("fair:expiry");
}

static void test_interop_rlock_waits_behind_redisson(void **state) {
  (void)state;
  const char *n = "fair:java-holds";
  redisReply *r = java_lock(n, JAVA_OWNER);
  assert_int_equal(r->type, REDIS_REPLY_NIL);
  freeReplyObject(r);
  rlock_client *c = client();
  timed_waiter w = {.c = c, .name = n};
  pthread_t t;
  pthread_create(&t, NULL, timed_thread, &w);
  wait_queue_len(n, 1);
  fx_wait_fair_head_subscribed(srv, n);
  int64_t t0 = rt_now_ms();
  r = java_unlock(n);
  assert_int_equal(r->integer, 1);
  freeReplyObject(r);
  pthread_join(t, NULL);
  OK(w.rc);
  ASSERT_BETWEEN(atomic_load(&w.acquired_at) - t0, 0, 250);
  assert_no_keys_left(n);
}

static void test_interop_redisson_waits_behind_rlock(void **state) {
  (void)state;
  const char *n = "fair:rlock-holds";
  rlock_client *c = client();
  rlock_lock *l = fair_lock(c, n);
  OK(rlock_lock_acquire(l));
  redisReply *r = java_lock(n, JAVA_OWNER);
  assert_int_equal(r->type, REDIS_REPLY_INTEGER); /* queued, with a ttl */
  freeReplyObject(r);
  assert_int_equal(queue_len(n), 1);
  redisContext *sub = rt_server_connect(srv);
  freeReplyObject(redisCommand(sub, "SUBSCRIBE redisson_lock__channel:{%s}:%s",
                               n, JAVA_OWNER));
  OK(rlock_lock_release(l));
  assert_int_equal(redisGetReply(sub, (void **)&r), REDIS_OK);
  assert_string_equal(r->element[0]->str, "message");
  assert_string_equal(r->element[2]->str, "0");
  freeReplyObject(r);
  redisFree(sub);
  r = java_lock(n, JAVA_OWNER);
  assert_int_equal(r->type, REDIS_REPLY_NIL); /* its turn */
  freeReplyObject(r);
  assert_int_equal(fx_hget(srv, n, JAVA_OWNER), 1);
  freeReplyObject(rt_cmd(srv, "DEL %s", n));
}

/* The deadlines rlock leaves are Redisson's: a Java holder, an rlock
 * waiter at the head and two Java waiters behind it; when the rlock
 * waiter takes the lock (wait 20 s) Redisson moves each deadline left
 * earlier by that wait. By default rlock does so at once: right after the
 * acquisition each Java waiter's deadline is its old one minus 20000
 * exactly and nothing is pending. With the deferred shift
 * (rlock_config_set_fair_deferred_shift) the deadlines are unchanged and
 * the shift pending until the next fair script, here the release: after
 * it they are the same as Redisson's, and nothing is pending. */
static long long deadline_of(const char *name, const char *owner) {
  redisReply *r =
      rt_cmd(srv, "ZSCORE redisson_lock_timeout:{%s} %s", name, owner);
  long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
  freeReplyObject(r);
  return v;
}

typedef struct owned_waiter {
  rlock_lock *l;
  uint64_t owner;
  int rc;
} owned_waiter;

static void *owned_thread(void *arg) {
  owned_waiter *w = arg;
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = 20000;
  o.owner = w->owner;
  w->rc = rlock_lock_acquire_opts(w->l, &o);
  return NULL;
}

static void shift_as_redisson(int deferred) {
  const char *n = "fair:shift";
  const char *java[2] = {"0b1e2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b:1",
                         "0b1e2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b:2"};
  freeReplyObject(java_lock(n, JAVA_OWNER));
  rlock_config *cfg;
  rlock_client *c;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, rt_server_url(srv)));
  OK(rlock_config_set_fair_deferred_shift(cfg, deferred));
  OK(rlock_client_new(&c, cfg));
  made_c[n_c++] = c; /* freed after the case, as client()'s are */
  rlock_config_free(cfg);
  owned_waiter w = {.l = fair_lock(c, n), .owner = rlock_owner_new()};
  pthread_t t;
  pthread_create(&t, NULL, owned_thread, &w);
  wait_queue_len(n, 1);
  fx_wait_fair_head_subscribed(srv, n);
  long long before[2];
  for (int i = 0; i < 2; i++) {
    freeReplyObject(java_lock(n, java[i]));
    before[i] = deadline_of(n, java[i]);
  }
  freeReplyObject(java_unlock(n));
  pthread_join(t, NULL); /* it holds the lock now */
  OK(w.rc);
  for (int i = 0; i < 2; i++)
    assert_int_equal(deadline_of(n, java[i]),
                     deferred ? before[i] : before[i] - 20000);
  assert_int_equal(
      rt_cmd_int(srv, "EXISTS redisson_lock_timeout:{%s}:shift", n), deferred);
  OK(rlock_lock_release_owner(w.l, w.owner));
  for (int i = 0; i < 2; i++)
    assert_int_equal(deadline_of(n, java[i]), before[i] - 20000);
  assert_int_equal(
      rt_cmd_int(srv, "EXISTS redisson_lock_timeout:{%s}:shift", n), 0);
  freeReplyObject(rt_cmd(srv,
                         "DEL %s redisson_lock_queue:{%s} "
                         "redisson_lock_timeout:{%s}",
                         n, n, n));
}

static void test_deadlines_shift_as_redisson(void **state) {
  (void)state;
  shift_as_redisson(0);
}

static void test_deadlines_shift_deferred(void **state) {
  (void)state;
  shift_as_redisson(1);
}

/* Child roles: "fifo URL NAME INDEX" (queue, record the turn, release) and
 * "queue-and-hang URL NAME FAIR_WAIT_MS" (queue, then hang until killed). */
static int child_main(int argc, char **argv) {
  if (argc != 4)
    return 64;
  rlock_config *cfg;
  rlock_client *c;
  rlock_lock *l;
  int hang = strcmp(argv[0], "queue-and-hang") == 0;
  if (rlock_config_new(&cfg) || rlock_config_set_url(cfg, argv[1]) ||
      (hang && rlock_config_set_fair_wait_timeout_ms(cfg, atoll(argv[3]))) ||
      rlock_client_new(&c, cfg) || rlock_lock_new_fair(&l, c, argv[2]))
    return 1;
  rlock_config_free(cfg);
  int rc = rlock_lock_try_acquire(l, hang ? RLOCK_WAIT_FOREVER : 30000, 0);
  if (rc != RLOCK_OK)
    return 2;
  int port = atoi(strrchr(argv[1], ':') + 1);
  redisContext *raw = redisConnect("127.0.0.1", port);
  freeReplyObject(redisCommand(raw, "RPUSH %s:order %s", argv[2], argv[3]));
  redisFree(raw);
  rt_sleep_ms(20); /* a hold that takes time, not a synchronisation */
  rc = rlock_lock_release(l);
  rlock_lock_free(l);
  rlock_client_free(c);
  return rc == RLOCK_OK ? 0 : 3;
}

/* Each case, its clients and locks freed after it. */
#define CASE(fn) cmocka_unit_test_teardown(fn, free_made)

static const struct CMUnitTest tests[] = {
    CASE(test_fifo_threads),
    CASE(test_fifo_processes),
    CASE(test_crashed_waiter_is_purged),
    CASE(test_give_up_leaves_queue_at_once),
    CASE(test_canceled_waiter_leaves_queue),
    CASE(test_second_in_line_does_not_spin),
    CASE(test_second_waiter_sleeps_through_leases),
    CASE(test_leases_run_out_in_turn),
    CASE(test_force_release_wakes_head),
    CASE(test_reentrancy_and_non_holder),
    CASE(test_wrong_type_and_names),
    CASE(test_inspect_shows_queue),
    CASE(test_lease_expiry_with_waiters),
    CASE(test_interop_rlock_waits_behind_redisson),
    CASE(test_interop_redisson_waits_behind_rlock),
    CASE(test_deadlines_shift_as_redisson),
    CASE(test_deadlines_shift_deferred),
};

FX_MAIN(tests, fx_setup, fx_teardown, child_main)
