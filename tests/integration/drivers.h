/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * drivers.h - one scenario, two drivers: a suite (the topology ones,
 * test_replicas, test_sentinel, test_cluster, and the lock's own, e.g.
 * test_lock_basic, test_lock_watchdog, test_multilock) writes each case
 * once, and it runs once per driver, each driver a cmocka group of its
 * own:
 *
 *   "blocking"  a blocking client (rlock_client_new), its calls made on
 *               the test's thread (or, for a call that must wait in the
 *               background, on a thread of its own);
 *   "libuv",    a loop client on the group's libuv or libevent loop
 *   "libevent"  (loop_fixture.h), its _async calls completed by running
 *               the loop on the test's thread until the callback comes.
 *
 * The dk_ calls below are synchronous for the test on every driver: each
 * returns the call's status (rlock_error_last() has its message, for
 * RC()). Waiting for a server-side condition goes through dk_wait, which
 * keeps a loop running meanwhile (a loop client's renewals and unlock
 * messages run only while it runs).
 *
 * Owners: dk_me() is the driver's natural owner, the calling thread
 * (RLOCK_OWNER_THREAD) for a blocking client, a fresh explicit owner for a
 * loop client (whose _async calls refuse the thread's); other owners are
 * rlock_owner_new() on both. A call waiting in the background (dk_op)
 * needs an explicit owner: it runs on another thread.
 *
 * A case that exists for one driver only is listed for that driver only
 * (DK_CASE's mask), so each group's list says what it runs.
 */
#ifndef RLOCK_TEST_DRIVERS_H
#define RLOCK_TEST_DRIVERS_H

#include "loop_topo.h"
#include "rt_proc.h"

/* The drivers (the loop ones are loop_fixture.h's kinds). */
enum { DK_UV = UV, DK_EV = EV, DK_BLOCKING, DK_NDRIVERS };

#define DK_BLOCK (1u << DK_BLOCKING)
#define DK_LOOPS ((1u << DK_UV) | (1u << DK_EV))
#define DK_ALL (DK_BLOCK | DK_LOOPS)

/* The running group's driver. */
static int dk = DK_BLOCKING;

static inline bool dk_loop(void) { return dk != DK_BLOCKING; }

static inline const char *dk_name(void) {
  return dk == DK_BLOCKING ? "blocking" : dk == DK_UV ? "libuv" : "libevent";
}

/* ---- the loop on a thread of its own ------------------------------------ */

/*
 * A case whose test thread blocks in the harness (a failover, a slot
 * migration) while the clients must go on runs its middle in the
 * background mode (dk_bg_begin .. dk_bg_end). A blocking client is
 * unchanged (its renewals and unlock messages run on its own threads). A
 * loop runs on a thread of its own (loop_topo.h's lt) instead of the
 * test's: the loop thread makes and frees the clients (dk_client,
 * dk_free), the dk_ calls hand their _async calls to it from the test's
 * thread and wait for the answer, and nothing runs the loop on the test's
 * thread. Its 10 ms timer must never be more than 20 ms late meanwhile:
 * nothing in the library may block the loop's thread (checked by
 * dk_bg_end).
 */
static lt dk_lt;
static bool dk_bg; /* the background mode is on */
static void (*dk_bg_fn)(void *);
static void *dk_bg_arg;
#define DK_BG_CLIENTS 16
static rlock_client *dk_bg_clients[DK_BG_CLIENTS]; /* made on the loop */

/* Whether the test's thread runs the loop while it waits. */
static inline bool dk_loop_here(void) { return dk_loop() && !dk_bg; }

/* On the loop thread: the posted function, or (LT_STOP) free what the
 * case left. */
static inline void dk_bg_run(lt *x, int cmd) {
  (void)x;
  if (cmd == LT_STOP) {
    for (int i = 0; i < DK_BG_CLIENTS; i++)
      if (dk_bg_clients[i] != NULL)
        rlock_client_free(dk_bg_clients[i]);
    memset(dk_bg_clients, 0, sizeof dk_bg_clients);
  } else if (cmd != LT_INIT) {
    dk_bg_fn(dk_bg_arg);
  }
}

/* Run fn(arg) on the loop's thread (in the background mode) or here. */
static inline void dk_on_loop(void (*fn)(void *), void *arg) {
  static int cmd = LT_INIT;
  if (!(dk_loop() && dk_bg)) {
    fn(arg);
    return;
  }
  dk_bg_fn = fn;
  dk_bg_arg = arg;
  cmd = cmd == 2 ? 3 : 2; /* lt_do wants a command unlike the last */
  lt_do(&dk_lt, cmd);
}

/* Leave a background mode that a failed case left on (its loop thread
 * stopped, its clients freed) and thaw any server it left frozen, so
 * that the next case starts clean. */
static inline int dk_recover(void **state) {
  (void)state;
  rt_proc_continue_all();
  dk_bg = false;
  if (dk_loop())
    lt_abandon();
  return 0;
}

/* Enter the background mode. */
static inline void dk_bg_begin(void) {
  dk_recover(NULL);
  if (dk_loop())
    lt_start(&dk_lt, dk_bg_run, NULL);
  dk_bg = true;
}

/* Measure the loop's lateness from now (not the clients' first
 * connections). */
static inline void dk_bg_measure_from_now(void) {
  if (dk_loop())
    lt_measure_from_now(&dk_lt);
}

/* Leave it: the loop thread frees the clients left and stops, and its
 * timer's worst lateness is judged (`what`: the case). */
static inline void dk_bg_end(const char *what) {
  dk_bg = false;
  if (!dk_loop())
    return;
  int64_t late = lt_stop(&dk_lt);
  lt_check_responsive(&dk_lt, late, what);
}

/* ---- clients ------------------------------------------------------------ */

typedef struct dk_new {
  rlock_config *cfg;
  rlock_client *c;
  int rc;
  char msg[256];
} dk_new;

static inline void dk_new_fn(void *arg) {
  dk_new *n = arg;
  n->rc = kind == UV ? rlock_client_new_uv(&n->c, n->cfg, &uvl)
                     : rlock_client_new_event(&n->c, n->cfg, evb);
  snprintf(n->msg, sizeof n->msg, "%s", rlock_error_last()->message);
  for (int i = 0; n->rc == RLOCK_OK && i < DK_BG_CLIENTS; i++)
    if (dk_bg_clients[i] == NULL) {
      dk_bg_clients[i] = n->c;
      break;
    }
}

/* A client of the running driver from `cfg` (the caller frees cfg). */
static inline rlock_client *dk_client_cfg(rlock_config *cfg) {
  if (dk_loop_here())
    return loop_client_cfg(cfg);
  dk_new n = {.cfg = cfg};
  if (dk_loop())
    dk_on_loop(dk_new_fn, &n);
  else
    n.rc = rlock_client_new(&n.c, cfg);
  if (n.rc != RLOCK_OK)
    fail_msg("a client: %d (%s)", n.rc,
             dk_loop() ? n.msg : rlock_error_last()->message);
  return n.c;
}

/* A client for `url` as fx_client_opts/lt_client make them (connect 1 s,
 * command 2 s; a loop's with $RLOCK_TEST_LOG: its log lines on stderr). */
static inline rlock_client *dk_client(const char *url, int64_t watchdog,
                                      rlock_lost_fn lost, void *ud) {
  rlock_config *cfg = dk_loop() ? lt_config(url, watchdog, lost, ud)
                                : fx_config(url, watchdog, lost, ud);
  rlock_client *c = dk_client_cfg(cfg);
  rlock_config_free(cfg);
  return c;
}

static inline void dk_free_fn(void *arg) {
  for (int i = 0; i < DK_BG_CLIENTS; i++)
    if (dk_bg_clients[i] == arg)
      dk_bg_clients[i] = NULL;
  rlock_client_free(arg);
}

/* Free a client (a loop's: and let the loop close its handles). */
static inline void dk_free(rlock_client *c) {
  if (dk_loop_here())
    loop_free(c);
  else if (dk_loop())
    dk_on_loop(dk_free_fn, c);
  else
    OK(rlock_client_free(c));
}

/* The end of a case: free its `nl` locks and its `nc` clients of the
 * running driver in the order client.h asks of each: blocking clients
 * after their locks, loop clients before them (a loop client's free
 * completes what is still pending on them; rlock_lock_free never touches
 * the client). */
static inline void dk_free_all(rlock_lock *const *locks, size_t nl,
                               rlock_client *const *clients, size_t nc) {
  for (size_t i = 0; dk_loop() && i < nc; i++)
    dk_free(clients[i]);
  for (size_t i = 0; i < nl; i++)
    rlock_lock_free(locks[i]);
  for (size_t i = 0; !dk_loop() && i < nc; i++)
    dk_free(clients[i]);
}

/* DK_FREE((l1, l2), (c1, c2)): dk_free_all of those locks and clients. */
#define DK_FREE(locks, clients)                                                \
  dk_free_all(FX_LIST(rlock_lock, locks), FX_LIST(rlock_client, clients))

/* ---- owners ------------------------------------------------------------- */

static inline uint64_t dk_me(void) {
  return dk_loop() ? rlock_owner_new() : RLOCK_OWNER_THREAD;
}

/* The owner field `owner` of client `c` writes on the server. */
static inline void dk_field(rlock_client *c, uint64_t owner, char *buf) {
  if (owner == RLOCK_OWNER_THREAD)
    fx_owner(c, buf);
  else
    field_of(c, owner, buf);
}

/* ---- waiting ------------------------------------------------------------ */

/* Wait until `pred` holds, up to `ms` (scaled), a loop running meanwhile;
 * fails naming `what` and pred's reason. */
static inline void dk_wait(rt_wait_pred pred, void *arg, int64_t ms,
                           const char *what) {
  if (dk_loop_here())
    run_until_pred(pred, arg, ms, what);
  else
    rt_wait_until(pred, arg, rt_scaled_ms(ms), what);
}

/* One turn of a polling wait: run the loop for up to `ms`, or sleep. */
static inline void dk_idle(int64_t ms) {
  if (dk_loop_here())
    run_once(ms);
  else
    rt_sleep_ms(ms);
}

/* Let `ms` go by, a loop running meanwhile: only where the passage of
 * time is what a case checks (tries that must not succeed meanwhile). */
static inline void dk_let_time_pass(int64_t ms) {
  int64_t end = rt_now_ms() + ms;
  while (rt_now_ms() < end)
    dk_idle(end - rt_now_ms());
}

/* fx_wait_subscribers, a loop running meanwhile. */
static inline void dk_wait_subscribers(rt_server *s, const char *channel,
                                       long long n, const char *what) {
  fx_count_want w = {s, channel, n};
  dk_wait(fx_pred_subscribers, &w, 5000, what);
}

/* A timing, as "[   TIME   ] what (driver): ms". */
static inline void dk_report(const char *what, double ms) {
  printf("[   TIME   ] %s (%s): %.1f ms\n", what, dk_name(), ms);
  fflush(stdout);
}

/* ---- a call answered later ------------------------------------------------
 */

enum { DK_ACQUIRE, DK_RELEASE, DK_COUNT };

/* An acquisition, a release or a hold count started now and answered
 * later: on a thread of its own (blocking) or by the loop. `done` is
 * stored last. */
typedef struct dk_op {
  rlock_lock *l;
  int what;   /* DK_ACQUIRE, DK_RELEASE (of o.owner's hold) or DK_COUNT */
  int fenced; /* DK_ACQUIRE: r.value receives the fencing token */
  rlock_acquire_options o;
  result r;
  atomic_int done;
  int64_t done_us; /* when it was answered */
  pthread_t thread;
} dk_op;

static inline void dk_op_finish(dk_op *op, int rc, int64_t value) {
  op->r.rc = rc;
  op->r.value = value;
  snprintf(op->r.msg, sizeof op->r.msg, "%s",
           rc == RLOCK_OK ? "" : rlock_error_last()->message);
  op->done_us = rt_now_us();
  atomic_store(&op->done, 1);
}

static inline void dk_op_on_done(void *arg, int rc, int64_t value) {
  dk_op_finish(arg, rc, value);
}

/* The blocking call, on the caller's thread. */
static inline void dk_op_call(dk_op *op) {
  int64_t v = 0;
  int rc;
  if (op->what == DK_RELEASE) {
    rc = rlock_lock_release_owner(op->l, op->o.owner);
  } else if (op->what == DK_COUNT) {
    rc = rlock_lock_hold_count_owner(&v, op->l, op->o.owner);
  } else {
    op->o.token = op->fenced ? &v : NULL;
    rc = rlock_lock_acquire_opts(op->l, &op->o);
    op->o.token = NULL;
  }
  dk_op_finish(op, rc, v);
}

static inline void *dk_op_main(void *arg) {
  dk_op_call(arg);
  return NULL;
}

/* Start `what` on `l` for `owner`: on a thread of its own (blocking; an
 * explicit owner), or handed to the loop. */
static inline void dk_op_start(dk_op *op, int what, rlock_lock *l,
                               uint64_t owner, int64_t wait, int64_t lease) {
  op->l = l;
  op->what = what;
  op->o = opts(owner, wait, lease);
  op->r = (result){0};
  atomic_store(&op->done, 0);
  if (!dk_loop()) {
    assert_true(owner != RLOCK_OWNER_THREAD);
    assert_int_equal(pthread_create(&op->thread, NULL, dk_op_main, op), 0);
  } else if (what == DK_RELEASE) {
    OK(rlock_lock_release_async(l, owner, dk_op_on_done, op));
  } else if (what == DK_COUNT) {
    OK(rlock_lock_hold_count_async(l, owner, dk_op_on_done, op));
  } else {
    OK(rlock_lock_acquire_async(l, &op->o, dk_op_on_done, op, NULL));
  }
}

/* Start acquiring `l` for `owner` (explicit) in the background. */
static inline void dk_acquire_start(dk_op *op, rlock_lock *l, uint64_t owner,
                                    int64_t wait, int64_t lease) {
  op->fenced = 0;
  dk_op_start(op, DK_ACQUIRE, l, owner, wait, lease);
}

/* Start releasing one hold of `owner` (explicit) on `l` in the
 * background. */
static inline void dk_release_start(dk_op *op, rlock_lock *l, uint64_t owner) {
  dk_op_start(op, DK_RELEASE, l, owner, 0, 0);
}

static inline bool dk_op_done(dk_op *op) { return atomic_load(&op->done); }

static inline bool dk_pred_op(void *arg, char *why, size_t cap) {
  snprintf(why, cap, "no answer yet");
  return dk_op_done(arg);
}

/* Wait for the answer (up to `ms`, scaled, past the call's own wait:
 * only a library that hangs past it fails here); its status. */
static inline int dk_op_wait(dk_op *op, int64_t ms, const char *what) {
  int64_t wait = op->o.wait_ms > 0 ? op->o.wait_ms : 0;
  dk_wait(dk_pred_op, op, ms + wait, what);
  if (!dk_loop())
    pthread_join(op->thread, NULL);
  if (op->r.rc != RLOCK_OK)
    rlock_loop_error(op->r.rc, op->r.msg);
  return op->r.rc;
}

/* ---- calls, synchronous on every driver ---------------------------------- */

/* `what` on `l` for `owner`, answered: a blocking client's call made
 * here, a loop client's _async call waited for. Its status; *out (if
 * given) the answer. */
static inline int dk_call(int what, rlock_lock *l, uint64_t owner, int64_t wait,
                          int64_t lease, int fenced, result *out) {
  dk_op op = {.l = l, .what = what, .fenced = fenced};
  if (dk_loop()) {
    op.fenced = 0;
    dk_op_start(&op, what, l, owner, wait, lease);
    if (dk_loop_here()) /* the callback never runs inside the call */
      assert_int_equal(dk_op_done(&op), 0);
    dk_op_wait(&op, 10000,
               what == DK_ACQUIRE   ? "an acquisition"
               : what == DK_RELEASE ? "a release"
                                    : "a hold count");
  } else {
    op.o = opts(owner, wait, lease);
    dk_op_call(&op);
  }
  if (out != NULL)
    *out = op.r;
  if (op.r.rc != RLOCK_OK)
    rlock_loop_error(op.r.rc, op.r.msg); /* for RC()'s message */
  return op.r.rc;
}

/* Acquire `l` for `owner`; its status, and in *out (if given) the
 * message. `fenced`: `l` is a fenced lock, and out->value receives the
 * acquisition's fencing token. */
static inline int dk_acquire_x(rlock_lock *l, uint64_t owner, int64_t wait,
                               int64_t lease, int fenced, result *out) {
  return dk_call(DK_ACQUIRE, l, owner, wait, lease, fenced, out);
}

static inline int dk_acquire_r(rlock_lock *l, uint64_t owner, int64_t wait,
                               int64_t lease, result *out) {
  return dk_call(DK_ACQUIRE, l, owner, wait, lease, 0, out);
}

static inline int dk_acquire(rlock_lock *l, uint64_t owner, int64_t wait,
                             int64_t lease) {
  return dk_call(DK_ACQUIRE, l, owner, wait, lease, 0, NULL);
}

static inline int dk_release(rlock_lock *l, uint64_t owner) {
  return dk_call(DK_RELEASE, l, owner, 0, 0, 0, NULL);
}

/* The hold count of `owner` on the server. */
static inline int dk_hold_count(int64_t *n, rlock_lock *l, uint64_t owner) {
  result r;
  int rc = dk_call(DK_COUNT, l, owner, 0, 0, 0, &r);
  *n = r.value;
  return rc;
}

typedef struct dk_check_arg {
  rlock_lock *l;
  uint64_t owner;
  int rc;
  char msg[256];
} dk_check_arg;

static inline void dk_check_fn(void *arg) {
  dk_check_arg *a = arg;
  a->rc = rlock_lock_check_owner(a->l, a->owner);
  snprintf(a->msg, sizeof a->msg, "%s", rlock_error_last()->message);
}

/* rlock_lock_check_owner (local), on the loop's thread where one runs. */
static inline int dk_check(rlock_lock *l, uint64_t owner) {
  dk_check_arg a = {l, owner, 0, ""};
  dk_on_loop(dk_check_fn, &a);
  if (a.rc != RLOCK_OK)
    rlock_loop_error(a.rc, a.msg);
  return a.rc;
}

/* The end of a callback that answers a dk_ wait: its status and message
 * (rlock_error_last's, read on the callback's thread), then `done`, last,
 * after whatever else the callback stored. */
static inline void dk_answered(atomic_int *done, int *rc, char *msg, size_t cap,
                               int code) {
  *rc = code;
  snprintf(msg, cap, "%s", code == RLOCK_OK ? "" : rlock_error_last()->message);
  atomic_store(done, 1);
}

/* A dk_wait predicate: the callback has answered (arg: its `done`). */
static inline bool dk_pred_answered(void *arg, char *why, size_t cap) {
  snprintf(why, cap, "no answer yet");
  return atomic_load((atomic_int *)arg);
}

typedef struct dk_info {
  atomic_int done;
  int rc;
  rlock_lock_info *info;
  char msg[256];
} dk_info;

static inline void dk_on_info(void *arg, int rc, rlock_lock_info *info) {
  dk_info *s = arg;
  s->info = info;
  dk_answered(&s->done, &s->rc, s->msg, sizeof s->msg, rc);
}

/* The lock's snapshot (free it with rlock_lock_info_free). */
static inline int dk_inspect(rlock_lock_info **out, rlock_lock *l) {
  if (!dk_loop())
    return rlock_lock_inspect(out, l);
  dk_info s = {0};
  OK(rlock_lock_inspect_async(l, dk_on_info, &s));
  dk_wait(dk_pred_answered, &s.done, 10000, "an inspection");
  *out = s.info;
  if (s.rc != RLOCK_OK)
    rlock_loop_error(s.rc, s.msg);
  return s.rc;
}

/* ---- who is behind an owner field --------------------------------------- */

typedef struct dk_rec {
  atomic_int done;
  int rc, found;
  rlock_client_record rec;
  char msg[256];
} dk_rec;

static inline void dk_on_record(void *arg, int rc,
                                const rlock_client_record *rec) {
  dk_rec *s = arg;
  s->found = rec != NULL;
  if (rec != NULL)
    s->rec = *rec; /* borrowed for the callback */
  dk_answered(&s->done, &s->rc, s->msg, sizeof s->msg, rc);
}

/* rlock_client_whois's answer (1 found, 0 none, or a status), through
 * rlock_client_whois_async on a loop driver (called from the test's
 * thread: the loop's own, or another one in the background mode). */
static inline int dk_whois(rlock_client *c, const char *owner,
                           rlock_client_record *out) {
  if (!dk_loop())
    return rlock_client_whois(c, owner, out);
  dk_rec s = {0};
  memset(out, 0, sizeof *out);
  int rc = rlock_client_whois_async(c, owner, dk_on_record, &s);
  if (rc != RLOCK_OK)
    return rc;
  dk_wait(dk_pred_answered, &s.done, 10000, "a whois answer");
  if (s.rc != RLOCK_OK)
    return rlock_loop_error(s.rc, s.msg);
  *out = s.rec;
  return s.found;
}

/* ---- other calls answered by a callback --------------------------------- */

/* A loop client's _async call (other than dk_op's) and its callback. */
typedef struct dk_cb {
  atomic_int done;
  int rc;
  int64_t value;
  char msg[256];
} dk_cb;

static inline void dk_on_cb(void *arg, int rc, int64_t value) {
  dk_cb *s = arg;
  s->value = value;
  dk_answered(&s->done, &s->rc, s->msg, sizeof s->msg, rc);
}

/* The status of an _async call that returned `started`: that, when it
 * refused, or its callback's, waited for up to `ms` (scaled). */
static inline int dk_cb_wait(dk_cb *s, int started, int64_t ms,
                             const char *what) {
  if (started != RLOCK_OK)
    return started;
  dk_wait(dk_pred_answered, &s->done, ms, what);
  if (s->rc != RLOCK_OK)
    rlock_loop_error(s->rc, s->msg); /* for RC()'s message */
  return s->rc;
}

/* rlock_lock_extend_owner, synchronous on every driver. */
static inline int dk_extend(rlock_lock *l, uint64_t owner, int64_t lease) {
  if (!dk_loop())
    return rlock_lock_extend_owner(l, owner, lease);
  dk_cb s = {0};
  int rc = rlock_lock_extend_async(l, owner, lease, dk_on_cb, &s);
  return dk_cb_wait(&s, rc, 10000, "an extension");
}

/* rlock_multilock_acquire_opts for `owner`, synchronous on every driver. */
static inline int dk_multi_acquire(rlock_multilock *m, uint64_t owner,
                                   int64_t wait, int64_t lease) {
  rlock_acquire_options o = opts(owner, wait, lease);
  if (!dk_loop())
    return rlock_multilock_acquire_opts(m, &o);
  dk_cb s = {0};
  int rc = rlock_multilock_acquire_async(m, &o, dk_on_cb, &s, NULL);
  return dk_cb_wait(&s, rc, 10000 + (wait > 0 ? wait : 0), "a MultiLock");
}

/* rlock_multilock_release_owner, synchronous on every driver. */
static inline int dk_multi_release(rlock_multilock *m, uint64_t owner) {
  if (!dk_loop())
    return rlock_multilock_release_owner(m, owner);
  dk_cb s = {0};
  int rc = rlock_multilock_release_async(m, owner, dk_on_cb, &s);
  return dk_cb_wait(&s, rc, 10000, "a MultiLock release");
}

/* The client's renewals so far (rlock_client_stats). */
static inline uint64_t dk_renewals(rlock_client *c) {
  rlock_stats st;
  OK(rlock_client_stats(c, &st, sizeof st));
  return st.renewals;
}

/* The client's failed connection attempts so far (rlock_client_stats). */
static inline uint64_t dk_connect_failures(rlock_client *c) {
  rlock_stats st;
  OK(rlock_client_stats(c, &st, sizeof st));
  return st.connect_failures;
}

/* ---- the groups --------------------------------------------------------- */

/* A case and the drivers it runs on (DK_ALL, DK_BLOCK, DK_LOOPS). */
typedef struct dk_case {
  struct CMUnitTest test;
  unsigned drivers;
} dk_case;

#define DK_CASE(fn, drivers)                                                   \
  { cmocka_unit_test_setup(fn, dk_recover), drivers }
/* ... with a setup and a teardown of its own (e.g. its own servers; its
 * setup calls dk_recover first). */
#define DK_CASE_ST(fn, setup, teardown, drivers)                               \
  { cmocka_unit_test_setup_teardown(fn, setup, teardown), drivers }

static int (*dk_file_setup)(void);
static void (*dk_file_teardown)(void);

/* A group's setup: the file's servers (each file starts them once), then
 * the loop of a loop driver. */
static inline int dk_group_setup(void **state) {
  (void)state;
  if (dk_file_setup != NULL && dk_file_setup() != 0)
    return -1;
  if (dk_loop())
    loop_open();
  return 0;
}

/* A group's teardown: a loop thread a failed case left running stopped,
 * the file's cleanup, then the loop. */
static inline int dk_group_teardown(void **state) {
  dk_recover(state);
  if (dk_file_teardown != NULL)
    dk_file_teardown();
  if (dk_loop())
    loop_close();
  return 0;
}

/* Run each driver's group: its cases from `cases`, in their order.
 * `setup` runs before each group (start the file's servers once, it
 * returns nonzero when it cannot); `teardown` after each (undo what a
 * failed case may have left, e.g. a frozen server). The number of
 * failed cases. */
static inline int dk_run(const dk_case *cases, size_t n, int (*setup)(void),
                         void (*teardown)(void)) {
  struct CMUnitTest *list = calloc(n, sizeof *list);
  int failed = 0;
  assert_non_null(list);
  dk_file_setup = setup;
  dk_file_teardown = teardown;
  const int order[] = {DK_BLOCKING, DK_UV, DK_EV};
  for (int d = 0; d < DK_NDRIVERS; d++) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
      if (cases[i].drivers & (1u << order[d]))
        list[k++] = cases[i].test;
    if (k == 0)
      continue;
    dk = order[d];
    if (dk_loop())
      kind = dk;
    failed +=
        rt_run_group(dk_name(), list, k, dk_group_setup, dk_group_teardown);
  }
  free(list);
  return failed;
}

#define DK_RUN(cases, setup, teardown)                                         \
  dk_run(cases, sizeof(cases) / sizeof((cases)[0]), setup, teardown)

/* A suite on fixture.h's one server (srv): the first group's setup
 * starts it, each later one empties it (FLUSHALL: a driver's cases find
 * no key the previous driver's left), dk_main frees it at the end. */
static inline int dk_srv_setup(void) {
  if (srv == NULL) {
    srv = rt_server_start(NULL);
  } else {
    if (rt_server_pid(srv) == 0) /* a case left it stopped */
      rt_server_start_again(srv);
    rt_cmd_ok(srv, "FLUSHALL");
  }
  return srv == NULL;
}

/* main() for a suite on fixture.h's one server whose cases may start
 * children of the test binary (fx_spawn_child): "--child ROLE ..." runs
 * `child_fn` (NULL: none), anything else each driver's group of
 * `cases`. */
static inline int dk_main(int argc, char **argv, const dk_case *cases, size_t n,
                          int (*child_fn)(int, char **)) {
  fx_argv0 = argv[0];
  if (child_fn != NULL && argc > 2 && strcmp(argv[1], "--child") == 0)
    return child_fn(argc - 2, argv + 2);
  int failed = dk_run(cases, n, dk_srv_setup, NULL);
  rt_server_free(srv);
  srv = NULL;
  return failed;
}

#define DK_MAIN(cases, child_fn)                                               \
  int main(int argc, char **argv) {                                            \
    return dk_main(argc, argv, cases, sizeof(cases) / sizeof((cases)[0]),      \
                   child_fn);                                                  \
  }

#endif /* RLOCK_TEST_DRIVERS_H */
