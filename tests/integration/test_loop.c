/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: what exists only for event-loop clients (rlock/loop.h) on
 * a real server, each case run once on libuv and once on libevent
 * (drivers.h's loop groups): cancels from any thread, a client freed with
 * operations pending or inside a callback, 10,000 pending acquisitions,
 * the blocking calls refused on a loop client, the adapter table. The
 * scenarios a blocking client shares run once per driver in the suites
 * of their topics (test_lock_basic, test_lock_wait, test_lock_watchdog,
 * test_multilock, ...).
 */
#include <sched.h>
#include <stdatomic.h>

#include "drivers.h"

/* A loop client of the server with the library's defaults (`watchdog`
 * when not 0). */
static rlock_client *loop_client(int64_t watchdog) {
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, rt_server_url(srv)));
  if (watchdog > 0)
    OK(rlock_config_set_watchdog_timeout_ms(cfg, watchdog));
  rlock_client *c = loop_client_cfg(cfg);
  rlock_config_free(cfg);
  return c;
}

/* Free a case's lock `l`, then its loop client `c`. */
static void lock_done(rlock_client *c, rlock_lock *l) {
  rlock_lock_free(l);
  loop_free(c);
}

/* Run the loop until `cond` holds, failing the test after `ms` (scaled). */
#define RUN_LOOP_UNTIL(cond, ms)                                               \
  do {                                                                         \
    int64_t end_ = rt_now_ms() + rt_scaled_ms(ms);                             \
    while (!(cond)) {                                                          \
      if (rt_now_ms() >= end_)                                                 \
        fail_msg("waited %d ms for %s", (int)(ms), #cond);                     \
      run_once(20);                                                            \
    }                                                                          \
  } while (0)

/* Start an acquisition whose answer lands in `r` (`op`: NULL or where its
 * handle goes). */
static void start_acquire(rlock_lock *l, uint64_t owner, int64_t wait,
                          int64_t lease, result *r, rlock_op **op) {
  rlock_acquire_options o = opts(owner, wait, lease);
  OK(rlock_lock_acquire_async(l, &o, on_done, r, op));
}

/* Run the loop until `r` is answered (within `ms`, scaled), and require
 * the answer `rc`. */
static void await_rc(result *r, int rc, int64_t ms, const char *what) {
  run_until(&r->done, 1, ms, what);
  RC(r->rc, rc);
}

/* ---- cases ----------------------------------------------------------------
 */

/* Scripts are loaded with SCRIPT LOAD ahead of their first EVALSHA on a
 * connection (never EVAL, whose scripts a Redis 7.4 server may evict),
 * and after a SCRIPT FLUSH every pipelined script request is refused
 * alike and sent again in order: a burst of acquisitions and releases
 * still all succeed and leave nothing held. */
static void test_script_load_and_flush(void **state) {
  (void)state;
  rt_cmd_ok(srv, "CONFIG RESETSTAT");
  rlock_client *c = loop_client(0);
  enum { N = 50 };
  rlock_lock *ls[N];
  char name[32];
  for (int i = 0; i < N; i++) {
    snprintf(name, sizeof name, "loop:flush:%d", i);
    ls[i] = fx_lock(c, name);
  }
  uint64_t me = rlock_owner_new();
  OK(dk_acquire(ls[0], me, 0, 10000));
  OK(dk_release(ls[0], me));
  assert_true(fx_calls(srv, "script|load") >= 1);
  assert_int_equal(fx_calls(srv, "eval"), 0);
  rt_cmd_ok(srv, "SCRIPT FLUSH");
  result r[N] = {{0}};
  int done = 0;
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < N; i++) {
      rlock_acquire_options o = opts(me, 0, 10000);
      r[i] = (result){0};
      if (round == 0)
        OK(rlock_lock_acquire_async(ls[i], &o, on_done, &r[i], NULL));
      else
        OK(rlock_lock_release_async(ls[i], me, on_done, &r[i]));
    }
    for (int i = 0; i < N; i++) {
      await_rc(&r[i], RLOCK_OK, 5000, "a script call after SCRIPT FLUSH");
      done++;
    }
  }
  assert_int_equal(done, 2 * N);
  for (int i = 0; i < N; i++) {
    snprintf(name, sizeof name, "EXISTS loop:flush:%d", i);
    assert_int_equal(rt_cmd_int(srv, name), 0);
    rlock_lock_free(ls[i]);
  }
  loop_free(c);
}

static void test_queries(void **state) {
  (void)state;
  rlock_client *c = loop_client(0);
  rlock_lock *l = fx_lock(c, "loop:query");
  uint64_t me = rlock_owner_new();
  result locked = {0}, count = {0}, ttl = {0};
  OK(dk_acquire(l, me, 0, 20000));
  OK(dk_acquire(l, me, 0, 20000));
  OK(rlock_lock_is_locked_async(l, on_done, &locked));
  OK(rlock_lock_hold_count_async(l, me, on_done, &count));
  OK(rlock_lock_ttl_async(l, on_done, &ttl));
  run_until(&ttl.done, 1, 5000, "three queries"); /* answered in order */
  assert_int_equal(locked.done + count.done, 2);
  assert_int_equal(locked.value, 1);
  assert_int_equal(count.value, 2);
  ASSERT_RANGE(ttl.value, 15000, 20000);
  assert_true(locked.order < count.order && count.order < ttl.order);
  result forced = {0};
  OK(rlock_lock_force_release_async(l, on_done, &forced));
  run_until(&forced.done, 1, 5000, "a force release");
  assert_int_equal(forced.value, 1);
  RC(rlock_lock_check_owner(l, me), RLOCK_ELOST);
  RC(dk_release(l, me), RLOCK_ELOST);
  lock_done(c, l);
}

/* Run the loop until an acquisition waits for an unlock message on
 * `chan`: the channel has a subscriber. */
static void run_until_waiting(const char *chan) {
  dk_wait_subscribers(srv, chan, 1, "a waiter's subscription");
}

/* Run the loop until `field` holds `name` on the server. */
static void run_until_field(const char *name, const char *field) {
  RUN_LOOP_UNTIL(fx_hget(srv, name, field) == 1, 5000);
}

/* Many acquisitions of one lock pending on one loop: each is woken in turn
 * by the previous one's release and they complete in the order they were
 * made. */
typedef struct chain {
  rlock_lock *l;
  int n;
  uint64_t *owners;
  result *res;
  int released;
  int next; /* the waiter whose turn it is */
  int bad;  /* a completion out of order, or a failure */
} chain;

static chain *the_chain;

static void chain_released(void *arg, int rc, int64_t v) {
  (void)v, (void)arg;
  chain *ch = the_chain;
  if (rc != RLOCK_OK)
    ch->bad++;
  ch->released++;
}

static void chain_acquired(void *arg, int rc, int64_t v) {
  result *r = arg;
  on_done(arg, rc, v);
  chain *ch = the_chain;
  int i = (int)(r - ch->res);
  if (rc != RLOCK_OK || i != ch->next++) {
    if (ch->bad++ == 0)
      print_message("waiter %d of %d finished %d-th: %d (%s)\n", i, ch->n,
                    ch->next - 1, rc, r->msg);
  }
  if (rc == RLOCK_OK &&
      rlock_lock_release_async(ch->l, ch->owners[i], chain_released, NULL) !=
          RLOCK_OK)
    ch->bad++;
}

static void run_chain(int n, const char *name) {
  rlock_client *c = loop_client(0);
  chain ch = {.l = fx_lock(c, name), .n = n};
  ch.owners = calloc((size_t)n, sizeof *ch.owners);
  ch.res = calloc((size_t)n, sizeof *ch.res);
  the_chain = &ch;
  completions = 0;
  uint64_t first = rlock_owner_new();
  OK(dk_acquire(ch.l, first, 0, 60000)); /* held while the others queue */
  rt_cmd_ok(srv, "CONFIG RESETSTAT");
  for (int i = 0; i < n; i++) {
    ch.owners[i] = rlock_owner_new();
    rlock_acquire_options o = opts(ch.owners[i], RLOCK_WAIT_FOREVER, 60000);
    OK(rlock_lock_acquire_async(ch.l, &o, chain_acquired, &ch.res[i], NULL));
  }
  /* Release once every waiter has made both its attempts (before and
   * after its subscription was confirmed) and so is asleep: a waiter
   * whose attempt reached the server just after the release would take
   * the lock out of turn, as any non-fair lock allows. */
  int64_t end = rt_now_ms() + rt_scaled_ms(20000 + n);
  while (fx_evalsha_calls(srv) < 2LL * n) {
    assert_true(rt_now_ms() < end);
    run_once(20);
  }
  OK(dk_release(ch.l, first));
  run_until(&ch.released, n, 60000 + n * 10, "every waiter in turn");
  assert_int_equal(ch.bad, 0);
  for (int i = 0; i < n; i++)
    assert_int_equal(ch.res[i].done, 1);
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
  free(ch.owners);
  free(ch.res);
  rlock_lock_free(ch.l);
  loop_free(c);
}

static void test_waiters_in_order(void **state) {
  (void)state;
  run_chain(200, "loop:order");
}

static void test_ten_thousand_pending(void **state) {
  (void)state;
  run_chain(10000, "loop:many");
}

static void test_cancel(void **state) {
  (void)state;
  rlock_client *c = loop_client(0);
  rlock_lock *l = fx_lock(c, "loop:cancel");
  uint64_t a = rlock_owner_new(), b = rlock_owner_new();
  OK(dk_acquire(l, a, 0, 30000));
  result r = {0};
  rlock_op *op;
  rlock_acquire_options o = opts(b, RLOCK_WAIT_FOREVER, 10000);
  OK(rlock_lock_acquire_async(l, &o, on_done, &r, &op));
  assert_non_null(op);
  run_once(50); /* let the first attempt go out and come back, or not */
  OK(rlock_op_cancel(op));
  await_rc(&r, RLOCK_ECANCELED, 5000, "the canceled acquisition");
  char field[RLOCK_OWNER_MAX];
  field_of(c, b, field);
  assert_int_equal(fx_hget(srv, "loop:cancel", field), -1);
  /* Canceled at once, before its attempt could come back. */
  result r2 = {0};
  OK(rlock_lock_acquire_async(l, &o, on_done, &r2, &op));
  OK(rlock_op_cancel(op));
  assert_int_equal(r2.done, 0);
  await_rc(&r2, RLOCK_ECANCELED, 5000, "the canceled acquisition");
  OK(dk_release(l, a));
  /* A cancel that finds the lock granted gives it back. */
  result r3 = {0};
  OK(rlock_lock_acquire_async(l, &o, on_done, &r3, &op));
  OK(rlock_op_cancel(op));
  await_rc(&r3, RLOCK_ECANCELED, 5000, "the canceled acquisition");
  assert_int_equal(rt_cmd_int(srv, "EXISTS loop:cancel"), 0);
  RC(rlock_op_cancel(NULL), RLOCK_EINVAL);
  lock_done(c, l);
}

/* A canceled fair waiter leaves the queue. */
static void test_fair_cancel_leaves_queue(void **state) {
  (void)state;
  rlock_client *c = loop_client(0);
  rlock_lock *l;
  OK(rlock_lock_new_fair(&l, c, "loop:fair"));
  uint64_t a = rlock_owner_new(), b = rlock_owner_new();
  OK(dk_acquire(l, a, 0, 30000));
  result r = {0};
  rlock_op *op;
  start_acquire(l, b, RLOCK_WAIT_FOREVER, 10000, &r, &op);
  RUN_LOOP_UNTIL(rt_cmd_int(srv, "LLEN redisson_lock_queue:{loop:fair}") == 1,
                 5000);
  OK(rlock_op_cancel(op));
  await_rc(&r, RLOCK_ECANCELED, 5000, "the canceled fair waiter");
  assert_int_equal(rt_cmd_int(srv, "LLEN redisson_lock_queue:{loop:fair}"), 0);
  OK(dk_release(l, a));
  lock_done(c, l);
}

/* Fair waiters are served in arrival order; a read lock is shared and a
 * write lock waits for it: every kind runs on the loop. */
static void test_kinds(void **state) {
  (void)state;
  rlock_client *c = loop_client(0);
  rlock_lock *fair, *rd, *wr;
  OK(rlock_lock_new_fair(&fair, c, "loop:fairq"));
  OK(rlock_lock_new_read(&rd, c, "loop:rw"));
  OK(rlock_lock_new_write(&wr, c, "loop:rw"));
  uint64_t o[4];
  for (int i = 0; i < 4; i++)
    o[i] = rlock_owner_new();
  OK(dk_acquire(fair, o[0], 0, 30000));
  result w[3] = {{0}};
  completions = 0;
  for (int i = 1; i < 4; i++) {
    rlock_acquire_options ao = opts(o[i], 20000, 30000);
    OK(rlock_lock_acquire_async(fair, &ao, on_done, &w[i - 1], NULL));
  }
  RUN_LOOP_UNTIL(rt_cmd_int(srv, "LLEN redisson_lock_queue:{loop:fairq}") == 3,
                 5000);
  OK(dk_release(fair, o[0]));
  for (int i = 0; i < 3; i++) {
    await_rc(&w[i], RLOCK_OK, 10000, "the next fair waiter");
    for (int j = i + 1; j < 3; j++)
      assert_int_equal(w[j].done, 0); /* served in arrival order */
    OK(dk_release(fair, o[i + 1]));
  }
  OK(dk_acquire(rd, o[0], 0, 30000));
  OK(dk_acquire(rd, o[1], 0, 30000)); /* shared */
  result wres = {0};
  start_acquire(wr, o[2], 20000, 30000, &wres, NULL);
  run_once(50);
  OK(dk_release(rd, o[0]));
  if (wres.done)
    fail_msg("writer finished early: %d %s", wres.rc, wres.msg);
  OK(dk_release(rd, o[1]));
  await_rc(&wres, RLOCK_OK, 10000, "the writer");
  OK(dk_release(wr, o[2]));
  /* A spin lock's waiter backs off and tries again: no subscription. */
  rlock_lock *spin;
  OK(rlock_lock_new_spin(&spin, c, "loop:spin"));
  OK(dk_acquire(spin, o[0], 0, 30000));
  result sres = {0};
  start_acquire(spin, o[1], 20000, 30000, &sres, NULL);
  run_once(50);
  assert_int_equal(sres.done, 0);
  OK(dk_release(spin, o[0]));
  await_rc(&sres, RLOCK_OK, 10000, "the spinning waiter");
  redisReply *n =
      rt_cmd(srv, "PUBSUB NUMSUB redisson_lock__channel:{loop:spin}");
  assert_int_equal(n->element[1]->integer, 0);
  freeReplyObject(n);
  OK(dk_release(spin, o[1]));
  rlock_lock_free(spin);
  rlock_lock_free(fair);
  rlock_lock_free(rd);
  lock_done(c, wr);
}

static rlock_multilock *three(rlock_client *c, rlock_lock **l) {
  static const char *names[] = {"loop:m0", "loop:m1", "loop:m2"};
  for (int i = 0; i < 3; i++)
    l[i] = fx_lock(c, names[i]);
  rlock_multilock *m;
  OK(rlock_multilock_new(&m, l, 3));
  return m;
}

static int multi_acquire(rlock_multilock *m, uint64_t owner, int64_t wait,
                         int64_t lease) {
  result r = {0};
  rlock_acquire_options o = opts(owner, wait, lease);
  OK(rlock_multilock_acquire_async(m, &o, on_done, &r, NULL));
  run_until(&r.done, 1, 10000 + (wait > 0 ? wait : 0), "a MultiLock");
  return r.rc;
}

static int multi_release(rlock_multilock *m, uint64_t owner) {
  result r = {0};
  OK(rlock_multilock_release_async(m, owner, on_done, &r));
  run_until(&r.done, 1, 10000, "a MultiLock release");
  return r.rc;
}

/* A MultiLock canceled while it waits for member 1 gives member 0 back
 * (taking, waiting and re-letting run on every driver in
 * test_multilock). */
static void test_multilock_canceled(void **state) {
  (void)state;
  rlock_client *c = loop_client(0);
  rlock_lock *l[3];
  rlock_multilock *m = three(c, l);
  uint64_t a = rlock_owner_new(), b = rlock_owner_new();
  char fb[RLOCK_OWNER_MAX];
  field_of(c, b, fb);
  OK(dk_acquire(l[1], a, 0, 30000));
  result r = {0};
  rlock_op *op;
  rlock_acquire_options o = opts(b, RLOCK_WAIT_FOREVER, 20000);
  OK(rlock_multilock_acquire_async(m, &o, on_done, &r, &op));
  run_until_field("loop:m0", fb);
  OK(rlock_op_cancel(op));
  await_rc(&r, RLOCK_ECANCELED, 5000, "the canceled MultiLock");
  assert_int_equal(fx_hget(srv, "loop:m0", fb), -1);
  OK(dk_release(l[1], a));
  RC(multi_release(m, b), RLOCK_ENOTHELD);
  rlock_multilock_free(m);
  for (int i = 0; i < 3; i++)
    rlock_lock_free(l[i]);
  loop_free(c);
}

/* A loop table that does nothing, for a client made (and freed) on a
 * thread that runs no loop: creating a loop client does no I/O. */
static int idle_watch(void *d, int fd, int ev) {
  (void)d, (void)fd, (void)ev;
  return 0;
}
static void idle_timer(void *d, int64_t ms) { (void)d, (void)ms; }
static void idle_wake(void *d) { (void)d; }

static void *client_elsewhere(void *arg) {
  rlock_client **c = arg;
  rlock_loop table = {.version = RLOCK_LOOP_VERSION,
                      .watch = idle_watch,
                      .timer = idle_timer,
                      .wake = idle_wake};
  if (*c == NULL)
    OK(rlock_client_new_loop(c, NULL, &table));
  else
    OK(rlock_client_free(*c));
  return NULL;
}

/* A MultiLock over two loop clients of this loop thread: loop:x0 and
 * loop:x2 on the first, loop:x1 on the second. */
typedef struct duo {
  rlock_client *c[2];
  rlock_lock *l[3];
  rlock_multilock *m;
} duo;

static void duo_up(duo *d) {
  d->c[0] = loop_client(0);
  d->c[1] = loop_client(0);
  d->l[0] = fx_lock(d->c[0], "loop:x0");
  d->l[1] = fx_lock(d->c[1], "loop:x1");
  d->l[2] = fx_lock(d->c[0], "loop:x2");
  OK(rlock_multilock_new(&d->m, d->l, 3));
}

/* Free what is left (a client already freed is NULL). */
static void duo_down(duo *d) {
  rlock_multilock_free(d->m);
  for (int i = 0; i < 2; i++)
    if (d->c[i] != NULL)
      loop_free(d->c[i]);
  for (int i = 0; i < 3; i++)
    rlock_lock_free(d->l[i]);
}

/* A MultiLock's members on two loop clients of this loop thread: taken
 * all or none, each by its own client; waiting, re-letting and canceling
 * as with one client. */
static void test_multilock_clients(void **state) {
  (void)state;
  duo d;
  duo_up(&d);
  uint64_t a = rlock_owner_new(), b = rlock_owner_new();
  char fa[2][RLOCK_OWNER_MAX], fb[2][RLOCK_OWNER_MAX];
  for (int i = 0; i < 2; i++) {
    field_of(d.c[i], a, fa[i]);
    field_of(d.c[i], b, fb[i]);
  }
  OK(multi_acquire(d.m, a, 0, 20000));
  assert_int_equal(fx_hget(srv, "loop:x0", fa[0]), 1);
  assert_int_equal(fx_hget(srv, "loop:x1", fa[1]), 1); /* c[1]'s field */
  assert_int_equal(fx_hget(srv, "loop:x2", fa[0]), 1);
  for (int i = 0; i < 3; i++)
    OK(rlock_lock_check_owner(d.l[i], a)); /* recorded on its own client */
  int rc = multi_acquire(d.m, b, 300, 5000);
  /* "Not in time"; or, on a loaded machine, RLOCK_ETIMEOUT: an attempt
   * sent within the wait answered later than the bound's margin, 100 ms
   * past the wait (the wait's end sends none: test_lock_wait). Either way
   * nothing of b's stays held. */
  if (rc != RLOCK_ETIMEOUT)
    RC(rc, RLOCK_ELOCKED);
  assert_int_equal(fx_hget(srv, "loop:x0", fb[0]), -1);
  assert_int_equal(fx_hget(srv, "loop:x1", fb[1]), -1);
  assert_int_equal(fx_hget(srv, "loop:x2", fb[0]), -1);
  OK(multi_release(d.m, a));
  assert_int_equal(rt_cmd_int(srv, "EXISTS loop:x0 loop:x1 loop:x2"), 0);
  /* B waits for member 1 (on c[1]), held by A for 300 ms; then the
   * earlier member (on c[0]) gets its full lease again. */
  OK(dk_acquire(d.l[1], a, 0, 300));
  OK(multi_acquire(d.m, b, 10000, 20000));
  ASSERT_RANGE(rt_cmd_int(srv, "PTTL loop:x0"), 15000, 20000);
  assert_int_equal(fx_hget(srv, "loop:x1", fb[1]), 1);
  OK(multi_release(d.m, b));
  /* Canceled while waiting for member 1: member 0 is given back. */
  OK(dk_acquire(d.l[1], a, 0, 30000));
  result r = {0};
  rlock_op *op;
  rlock_acquire_options o = opts(b, RLOCK_WAIT_FOREVER, 20000);
  OK(rlock_multilock_acquire_async(d.m, &o, on_done, &r, &op));
  run_until_field("loop:x0", fb[0]);
  OK(rlock_op_cancel(op));
  await_rc(&r, RLOCK_ECANCELED, 5000, "the canceled MultiLock");
  assert_int_equal(fx_hget(srv, "loop:x0", fb[0]), -1);
  assert_int_equal(fx_hget(srv, "loop:x1", fb[1]), -1);
  OK(dk_release(d.l[1], a));
  duo_down(&d);
}

/* Member 0's client freed while member 1 is awaited on the other client:
 * the callback runs inside the free, and the other client gives up its
 * waiter (which would otherwise take member 1 for no one). */
static void test_multilock_clients_free(void **state) {
  (void)state;
  duo d;
  duo_up(&d);
  uint64_t a = rlock_owner_new(), b = rlock_owner_new();
  char fb[2][RLOCK_OWNER_MAX];
  for (int i = 0; i < 2; i++)
    field_of(d.c[i], b, fb[i]);
  OK(dk_acquire(d.l[1], a, 0, 30000));
  result f = {0};
  rlock_acquire_options o = opts(b, RLOCK_WAIT_FOREVER, 20000);
  OK(rlock_multilock_acquire_async(d.m, &o, on_done, &f, NULL));
  run_until_field("loop:x0", fb[0]);
  loop_free(d.c[0]);
  d.c[0] = NULL;
  assert_int_equal(f.done, 1);
  RC(f.rc, RLOCK_ECLOSED);
  /* The waiter left: its channel is given up once it has lingered. */
  dk_wait_subscribers(srv, "redisson_lock__channel:{loop:x1}", 0,
                      "the channel given up");
  OK(dk_release(d.l[1], a));
  assert_int_equal(fx_hget(srv, "loop:x1", fb[1]), -1);
  rt_cmd_int(srv, "DEL loop:x0"); /* c[0]'s hold, never released */
  duo_down(&d);
}

/* Members on another loop thread, or mixing blocking and loop clients,
 * are refused with a message naming the member. */
static void test_multilock_clients_refused(void **state) {
  (void)state;
  duo d;
  duo_up(&d);
  rlock_client *other = NULL;
  pthread_t t;
  pthread_create(&t, NULL, client_elsewhere, &other);
  pthread_join(t, NULL);
  rlock_client *bc = fx_client(srv, 0);
  rlock_lock *lo = fx_lock(other, "loop:x0"), *lb = fx_lock(bc, "loop:x0");
  rlock_lock *bad[2][2] = {{d.l[1], lo}, {lb, d.l[1]}};
  const char *needle[2] = {"one loop thread", "member 0's client was not"};
  result r = {0};
  uint64_t b = rlock_owner_new();
  rlock_acquire_options o = opts(b, 0, 20000);
  for (int i = 0; i < 2; i++) {
    rlock_multilock *m;
    OK(rlock_multilock_new(&m, bad[i], 2));
    RC(rlock_multilock_acquire_async(m, &o, on_done, &r, NULL), RLOCK_EINVAL);
    assert_non_null(strstr(rlock_error_last()->message, needle[i]));
    RC(rlock_multilock_release_async(m, b, on_done, &r), RLOCK_EINVAL);
    rlock_multilock_free(m);
  }
  assert_int_equal(r.done, 0);
  rlock_lock_free(lo);
  rlock_lock_free(lb);
  rlock_client_free(bc);
  pthread_create(&t, NULL, client_elsewhere, &other); /* frees it there */
  pthread_join(t, NULL);
  duo_down(&d);
}

/* A blocking release called on a loop client's lock is refused before it
 * touches the hold record: the watchdog hold of an explicit owner goes on
 * being renewed, past several watchdog timeouts, and is then released by
 * the async call. So are the other blocking calls that could touch it. */
static void test_blocking_refused_keeps_hold(void **state) {
  (void)state;
  int64_t wd = rt_scaled_ms(600);
  rlock_client *c = loop_client(wd);
  rlock_lock *l = fx_lock(c, "loop:refused");
  rlock_lock *other = fx_lock(c, "loop:refused2");
  uint64_t me = rlock_owner_new();
  OK(dk_acquire(l, me, 0, RLOCK_LEASE_WATCHDOG));
  RC(rlock_lock_release_owner(l, me), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "event loop"));
  int deleted;
  RC(rlock_lock_force_release(&deleted, l), RLOCK_EINVAL);
  rlock_lock *pair[2] = {l, other};
  rlock_multilock *m;
  OK(rlock_multilock_new(&m, pair, 2));
  RC(rlock_multilock_release_owner(m, me), RLOCK_EINVAL);
  RC(rlock_multilock_try_acquire(m, 0, 1000), RLOCK_EINVAL);
  rlock_multilock_free(m);
  int64_t n;
  RC(rlock_lock_hold_count_owner(&n, l, me), RLOCK_EINVAL);
  OK(rlock_lock_check_owner(l, me)); /* still recorded */
  rlock_stats before, after;
  OK(rlock_client_stats(c, &before, sizeof before));
  /* Time passing is the behaviour under test: three watchdog timeouts. */
  int64_t end = rt_now_ms() + 3 * wd;
  while (rt_now_ms() < end)
    run_once(end - rt_now_ms());
  assert_int_equal(rt_cmd_int(srv, "EXISTS loop:refused"), 1);
  ASSERT_RANGE(rt_cmd_int(srv, "PTTL loop:refused"), 1, wd);
  OK(rlock_client_stats(c, &after, sizeof after));
  assert_true(after.renewals >= before.renewals + 2);
  OK(rlock_lock_check_owner(l, me));
  OK(dk_release(l, me));
  assert_int_equal(rt_cmd_int(srv, "EXISTS loop:refused"), 0);
  RC(rlock_lock_check_owner(l, me), RLOCK_ENOTHELD);
  rlock_lock_free(other);
  lock_done(c, l);
}

/* Freeing the client with operations pending completes each once, inside
 * rlock_client_free, with RLOCK_ECLOSED; nothing runs after. */
static void test_free_with_pending(void **state) {
  (void)state;
  rlock_client *c = loop_client(0);
  rlock_lock *l = fx_lock(c, "loop:free");
  uint64_t a = rlock_owner_new();
  OK(dk_acquire(l, a, 0, 5000));
  result r[3] = {{0}};
  for (int i = 0; i < 3; i++) {
    start_acquire(l, rlock_owner_new(), 30000, 5000, &r[i], NULL);
  }
  run_once(50);
  OK(rlock_client_free(c)); /* the lock after: its operations were pending */
  for (int i = 0; i < 3; i++) {
    assert_int_equal(r[i].done, 1);
    RC(r[i].rc, RLOCK_ECLOSED);
  }
  if (kind == UV)
    uv_run(&uvl, UV_RUN_NOWAIT);
  run_once(10);
  for (int i = 0; i < 3; i++)
    assert_int_equal(r[i].done, 1);
  rlock_lock_free(l);
  rt_cmd_int(srv, "DEL loop:free");
}

typedef struct freer {
  rlock_client *c;
  rlock_lock *l;
  result other;
  int done;
} freer;

static void free_inside(void *arg, int rc, int64_t v) {
  (void)v;
  freer *f = arg;
  assert_int_equal(rc, RLOCK_OK);
  rlock_lock_free(f->l);
  assert_int_equal(rlock_client_free(f->c), RLOCK_OK);
  f->done = 1;
}

/* The client may be freed from inside a callback. */
static void test_free_inside_callback(void **state) {
  (void)state;
  freer f = {0};
  f.c = loop_client(0);
  f.l = fx_lock(f.c, "loop:freecb");
  rlock_acquire_options o = opts(rlock_owner_new(), 0, 2000);
  OK(rlock_lock_acquire_async(f.l, &o, free_inside, &f, NULL));
  run_until(&f.done, 1, 5000, "the callback that frees the client");
  if (kind == UV)
    uv_run(&uvl, UV_RUN_NOWAIT);
  rt_cmd_int(srv, "DEL loop:freecb");
}

typedef struct submitter {
  rlock_lock *l;
  uint64_t owner;
  result r;
  int rc;
} submitter;

static void *submit_elsewhere(void *arg) {
  submitter *s = arg;
  rlock_acquire_options o = opts(s->owner, 0, 5000);
  rlock_op *op = NULL;
  s->rc = rlock_lock_acquire_async(s->l, &o, on_done, &s->r, &op);
  if (op == NULL)
    s->rc = -100; /* a handle off the loop's thread too */
  return NULL;
}

/* An operation started on another thread runs, and calls back, on the
 * loop's thread. */
static void test_other_thread(void **state) {
  (void)state;
  rlock_client *c = loop_client(0);
  submitter s = {.l = fx_lock(c, "loop:thread"), .owner = rlock_owner_new()};
  pthread_t t;
  pthread_create(&t, NULL, submit_elsewhere, &s);
  pthread_join(t, NULL);
  OK(s.rc);
  await_rc(&s.r, RLOCK_OK, 5000, "the acquisition started elsewhere");
  assert_true(pthread_equal(s.r.thread, pthread_self()));
  OK(dk_release(s.l, s.owner));
  rlock_lock_free(s.l);
  loop_free(c);
}

/* A thread other than the loop's starts acquisitions and cancels them:
 * the loop is not running while it does (this thread waits for it), so no
 * callback can run meanwhile, as rlock_op_cancel asks. */
enum { AT_ONCE, ON_GO, NEVER };

typedef struct canceler {
  rlock_lock *l;
  uint64_t owner;
  int mode; /* AT_ONCE, ON_GO or NEVER: when this thread cancels */
  rlock_op *op;
  result r;
  int rc, cancel_rc;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int started, go;
} canceler;

static void *start_and_cancel(void *arg) {
  canceler *k = arg;
  rlock_acquire_options o = opts(k->owner, RLOCK_WAIT_FOREVER, 10000);
  k->rc = rlock_lock_acquire_async(k->l, &o, on_done, &k->r, &k->op);
  if (k->mode != ON_GO) {
    if (k->mode == AT_ONCE)
      k->cancel_rc = rlock_op_cancel(k->op);
    return NULL;
  }
  pthread_mutex_lock(&k->mu);
  k->started = 1;
  pthread_cond_signal(&k->cv);
  while (!k->go)
    pthread_cond_wait(&k->cv, &k->mu);
  k->cancel_rc = rlock_op_cancel(k->op);
  pthread_mutex_unlock(&k->mu);
  return NULL;
}

/* A thread that starts an acquisition holding its mutex, and cancels it
 * once the loop is inside the callback (which waits for that mutex). */
typedef struct late {
  rlock_lock *l;
  uint64_t owner;
  rlock_op *op;
  result r;
  pthread_mutex_t mu;
  atomic_int entered;
  int rc, cancel_rc;
} late;

static void late_done(void *arg, int rc, int64_t v) {
  late *k = arg;
  atomic_store(&k->entered, 1);
  pthread_mutex_lock(&k->mu);
  on_done(&k->r, rc, v);
  pthread_mutex_unlock(&k->mu);
}

static void *start_then_cancel_late(void *arg) {
  late *k = arg;
  rlock_acquire_options o = opts(k->owner, 0, 10000);
  pthread_mutex_lock(&k->mu);
  k->rc = rlock_lock_acquire_async(k->l, &o, late_done, k, &k->op);
  while (k->rc == RLOCK_OK && !atomic_load(&k->entered))
    sched_yield(); /* until the loop is inside the callback */
  k->cancel_rc = rlock_op_cancel(k->op);
  pthread_mutex_unlock(&k->mu);
  return NULL;
}

/* An acquisition started off the loop's thread can be canceled from that
 * thread: its callback gets RLOCK_ECANCELED and nothing is left held (a
 * grant that came first is given back). */
static void test_cancel_other_thread(void **state) {
  (void)state;
  rlock_client *c = loop_client(0);
  rlock_lock *l = fx_lock(c, "loop:xcancel");
  uint64_t a = rlock_owner_new();
  char field[RLOCK_OWNER_MAX];
  /* A free lock, then a held one: started and canceled at once. */
  for (int held = 0; held < 2; held++) {
    if (held)
      OK(dk_acquire(l, a, 0, 30000));
    canceler k = {.l = l, .owner = rlock_owner_new(), .mode = AT_ONCE};
    pthread_t t;
    pthread_create(&t, NULL, start_and_cancel, &k);
    pthread_join(t, NULL);
    OK(k.rc);
    OK(k.cancel_rc);
    assert_non_null(k.op);
    await_rc(&k.r, RLOCK_ECANCELED, 5000, "the acquisition canceled elsewhere");
    field_of(c, k.owner, field);
    assert_int_equal(fx_hget(srv, "loop:xcancel", field), -1);
    assert_int_equal(rt_cmd_int(srv, "EXISTS loop:xcancel"), held);
  }
  /* Started, then canceled once it waits for the unlock message. */
  canceler k = {.l = l, .owner = rlock_owner_new(), .mode = ON_GO};
  pthread_mutex_init(&k.mu, NULL);
  pthread_cond_init(&k.cv, NULL);
  pthread_t t;
  pthread_create(&t, NULL, start_and_cancel, &k);
  pthread_mutex_lock(&k.mu);
  while (!k.started)
    pthread_cond_wait(&k.cv, &k.mu);
  pthread_mutex_unlock(&k.mu);
  run_until_waiting("redisson_lock__channel:{loop:xcancel}");
  pthread_mutex_lock(&k.mu);
  k.go = 1;
  pthread_cond_signal(&k.cv);
  pthread_mutex_unlock(&k.mu);
  pthread_join(t, NULL);
  OK(k.rc);
  OK(k.cancel_rc);
  assert_int_equal(k.r.done, 0);
  await_rc(&k.r, RLOCK_ECANCELED, 5000, "the waiter canceled elsewhere");
  assert_true(pthread_equal(k.r.thread, pthread_self()));
  field_of(c, k.owner, field);
  assert_int_equal(fx_hget(srv, "loop:xcancel", field), -1);
  pthread_mutex_destroy(&k.mu);
  pthread_cond_destroy(&k.cv);
  OK(dk_release(l, a));
  lock_done(c, l);
}

/* An acquisition started off the loop's thread (that thread is gone),
 * canceled on the loop's: before the loop has even started it, and while
 * it waits. */
static void test_cancel_started_elsewhere(void **state) {
  (void)state;
  rlock_client *c = loop_client(0);
  rlock_lock *l = fx_lock(c, "loop:xcancel4");
  uint64_t a = rlock_owner_new();
  char field[RLOCK_OWNER_MAX];
  OK(dk_acquire(l, a, 0, 30000));
  for (int wait = 0; wait < 2; wait++) {
    canceler k = {.l = l, .owner = rlock_owner_new(), .mode = NEVER};
    pthread_t t;
    pthread_create(&t, NULL, start_and_cancel, &k);
    pthread_join(t, NULL);
    OK(k.rc);
    if (wait)
      run_until_waiting("redisson_lock__channel:{loop:xcancel4}");
    OK(rlock_op_cancel(k.op));
    assert_int_equal(k.r.done, 0);
    await_rc(&k.r, RLOCK_ECANCELED, 5000, "the waiter canceled on the loop");
    field_of(c, k.owner, field);
    assert_int_equal(fx_hget(srv, "loop:xcancel4", field), -1);
  }
  OK(dk_release(l, a));
  assert_int_equal(rt_cmd_int(srv, "EXISTS loop:xcancel4"), 0);
  lock_done(c, l);
}

/* A cancel from another thread that comes while the callback runs (the
 * callback waits for that thread's mutex): nothing changes, it keeps the
 * lock, and the operation outlives its callback until the request is
 * handled (ASan and valgrind check the memory). */
static void test_cancel_while_called(void **state) {
  (void)state;
  rlock_client *c = loop_client(0);
  rlock_lock *l = fx_lock(c, "loop:xcancel5");
  late k = {.l = l, .owner = rlock_owner_new()};
  pthread_mutex_init(&k.mu, NULL);
  pthread_t t;
  pthread_create(&t, NULL, start_then_cancel_late, &k);
  run_until(&k.r.done, 1, 5000, "the callback the cancel came in");
  pthread_join(t, NULL);
  OK(k.rc);
  OK(k.cancel_rc);
  OK(k.r.rc);
  OK(dk_release(l, k.owner)); /* the cancel request is handled meanwhile */
  assert_int_equal(rt_cmd_int(srv, "EXISTS loop:xcancel5"), 0);
  pthread_mutex_destroy(&k.mu);
  lock_done(c, l);
}

static void test_bad_input(void **state) {
  (void)state;
  rlock_client *c = loop_client(0);
  rlock_lock *l = fx_lock(c, "loop:bad");
  result r = {0};
  rlock_acquire_options o = opts(RLOCK_OWNER_THREAD, 0, 1000);
  RC(rlock_lock_acquire_async(l, &o, on_done, &r, NULL), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "explicit owner"));
  o.owner = rlock_owner_new();
  RC(rlock_lock_acquire_async(NULL, &o, on_done, &r, NULL), RLOCK_EINVAL);
  RC(rlock_lock_acquire_async(l, &o, NULL, &r, NULL), RLOCK_EINVAL);
  RC(rlock_lock_acquire_async(l, NULL, on_done, &r, NULL), RLOCK_EINVAL);
  o.wait_ms = -5;
  RC(rlock_lock_acquire_async(l, &o, on_done, &r, NULL), RLOCK_EINVAL);
  o.wait_ms = 0;
  o.lease_ms = RLOCK_MAX_DURATION_MS + 1;
  RC(rlock_lock_acquire_async(l, &o, on_done, &r, NULL), RLOCK_EINVAL);
  o.lease_ms = 1000;
  rlock_cancel *tok;
  OK(rlock_cancel_new(&tok));
  o.cancel = tok;
  RC(rlock_lock_acquire_async(l, &o, on_done, &r, NULL), RLOCK_EINVAL);
  rlock_cancel_free(tok);
  RC(rlock_lock_release_async(l, RLOCK_OWNER_THREAD, on_done, &r),
     RLOCK_EINVAL);
  /* The blocking functions refuse a loop client. */
  RC(rlock_lock_try_acquire(l, 0, 1000), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "event loop"));
  int locked;
  RC(rlock_lock_is_locked(&locked, l), RLOCK_EINVAL);
  RC(rlock_client_ping(c, NULL), RLOCK_EINVAL);
  /* And the async functions refuse a blocking client. */
  rlock_client *bc = fx_client(srv, 0);
  rlock_lock *bl = fx_lock(bc, "loop:bad");
  RC(rlock_lock_acquire_async(bl, &o, on_done, &r, NULL), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "rlock_client_new_loop"));
  rlock_lock_free(bl);
  rlock_client_free(bc);
  assert_int_equal(r.done, 0);
  lock_done(c, l);
}

static bool pred_key_exists(void *arg, char *why, size_t cap) {
  redisReply *r = rt_cmd(srv, "EXISTS %s", (const char *)arg);
  bool there = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
  freeReplyObject(r);
  snprintf(why, cap, "'%s' not on the server", (const char *)arg);
  return there;
}

/* The loop's thread kept away past the command timeout (another process
 * had the CPU, or a callback ran long) while the answer came: the answer
 * waiting in the socket is read and the call succeeds, never failed "no
 * answer in time" by the connection's timer (libuv runs the timers due
 * before it polls the sockets). */
static void test_late_loop_reads_answer(void **state) {
  (void)state;
  rlock_config *cfg = fx_config(rt_server_url(srv), 0, NULL, NULL);
  OK(rlock_config_set_command_timeout_ms(cfg, 300));
  rlock_client *c = loop_client_cfg(cfg);
  rlock_config_free(cfg);
  rlock_lock *l = fx_lock(c, "loop:late");
  uint64_t me = rlock_owner_new();
  result r = {0};
  start_acquire(l, me, 0, 30000, &r, NULL); /* connected, script loaded */
  await_rc(&r, RLOCK_OK, 5000, "the first acquisition");
  OK(rlock_lock_release_async(l, me, on_done, &r));
  await_rc(&r, RLOCK_OK, 5000, "its release"); /* done: 2 */
  start_acquire(l, me, 0, 30000, &r, NULL);
  /* Sent without the loop running: the server ran it. */
  rt_wait_until(pred_key_exists, (void *)"loop:late", rt_scaled_ms(5000),
                "the acquisition sent");
  /* The loop thread late: the command timeout passes before it runs. */
  int64_t until = rt_now_ms() + 300 + 200;
  while (rt_now_ms() < until)
    rt_sleep_ms(until - rt_now_ms());
  run_until(&r.done, 3, 5000, "the late acquisition");
  if (r.rc != RLOCK_OK)
    fail_msg("the answer in the socket was not read: %d %s", r.rc, r.msg);
  OK(rlock_lock_release_async(l, me, on_done, &r));
  run_until(&r.done, 4, 5000, "its release");
  RC(r.rc, RLOCK_OK);
  lock_done(c, l);
}

/* A bad adapter table; every topology is accepted (a cluster's seeds are
 * asked on the loop, later), by the adapters' constructors under both
 * their names. */
static void test_bad_table(void **state) {
  (void)state;
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, "redis-cluster://127.0.0.1:1"));
  rlock_client *bad;
  rlock_loop table = {.version = RLOCK_LOOP_VERSION};
  RC(rlock_client_new_loop(&bad, NULL, &table), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "watch, timer and wake"));
  RC(rlock_client_new_loop(&bad, NULL, NULL), RLOCK_EINVAL);
  /* The table's version: one this library knows. */
  table =
      (rlock_loop){.watch = idle_watch, .timer = idle_timer, .wake = idle_wake};
  RC(rlock_client_new_loop(&bad, NULL, &table), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "version 0"));
  table.version = RLOCK_LOOP_VERSION + 1;
  RC(rlock_client_new_loop(&bad, NULL, &table), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "RLOCK_LOOP_VERSION"));
  table.version = RLOCK_LOOP_VERSION;
  OK(rlock_client_new_loop(&bad, NULL, &table)); /* no I/O, nothing called */
  OK(rlock_client_free(bad));
  for (int alias = 0; alias < 2; alias++) {
    if (kind == UV)
      OK(alias ? rlock_uv_client_new(&bad, cfg, &uvl)
               : rlock_client_new_uv(&bad, cfg, &uvl));
    else
      OK(alias ? rlock_event_client_new(&bad, cfg, evb)
               : rlock_client_new_event(&bad, cfg, evb));
    loop_free(bad);
  }
  rlock_config_free(cfg);
}

static const dk_case cases[] = {
    DK_CASE(test_script_load_and_flush, DK_LOOPS),
    DK_CASE(test_queries, DK_LOOPS),
    DK_CASE(test_waiters_in_order, DK_LOOPS),
    DK_CASE(test_ten_thousand_pending, DK_LOOPS),
    DK_CASE(test_cancel, DK_LOOPS),
    DK_CASE(test_fair_cancel_leaves_queue, DK_LOOPS),
    DK_CASE(test_kinds, DK_LOOPS),
    DK_CASE(test_multilock_canceled, DK_LOOPS),
    DK_CASE(test_multilock_clients, DK_LOOPS),
    DK_CASE(test_multilock_clients_free, DK_LOOPS),
    DK_CASE(test_multilock_clients_refused, DK_LOOPS),
    DK_CASE(test_blocking_refused_keeps_hold, DK_LOOPS),
    DK_CASE(test_free_with_pending, DK_LOOPS),
    DK_CASE(test_free_inside_callback, DK_LOOPS),
    DK_CASE(test_other_thread, DK_LOOPS),
    DK_CASE(test_cancel_other_thread, DK_LOOPS),
    DK_CASE(test_cancel_started_elsewhere, DK_LOOPS),
    DK_CASE(test_cancel_while_called, DK_LOOPS),
    DK_CASE(test_bad_input, DK_LOOPS),
    DK_CASE(test_bad_table, DK_LOOPS),
    DK_CASE(test_late_loop_reads_answer, DK_LOOPS),
};

DK_MAIN(cases, NULL)
