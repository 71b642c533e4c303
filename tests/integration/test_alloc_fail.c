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
 * acquisition. Then the same for the allocations of the library's own
 * thread (renewals, the subscriber) and of a loop client's callbacks,
 * with a lock held under the watchdog and a waiter (below). */
#include "loop_fixture.h"

#include "alloc.h"

/* A client of srv made while allocations may fail: 1 when made, 0 when
 * a step was refused (ok_or_nomem's checks). */
static int nomem_client(rlock_client **c, uint64_t n) {
  rlock_config *cfg = NULL;
  int ok = fx_ok_or_nomem(rlock_config_new(&cfg), "config_new", n) &&
           fx_ok_or_nomem(rlock_config_set_url(cfg, rt_server_url(srv)),
                          "set_url", n) &&
           fx_ok_or_nomem(rlock_client_new(c, cfg), "client_new", n);
  rlock_config_free(cfg);
  return ok;
}

typedef int (*lock_new_fn)(rlock_lock **, rlock_client *, const char *);

static const struct kind {
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
static int cycle(const struct kind *k, uint64_t n, int flags) {
  rlock__alloc_fail_at(n, flags);
  rlock_client *c = NULL;
  rlock_lock *l = NULL;
  int held = 0, rc;
  int64_t token = 0;
  if (!nomem_client(&c, n) ||
      !fx_ok_or_nomem(k->make(&l, c, k->name), "lock_new", n))
    goto out;
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = 1000;
  o.token = k->make == rlock_lock_new_fenced ? &token : NULL;
  if (!fx_ok_or_nomem(rlock_lock_acquire_opts(l, &o), "acquire", n))
    goto out;
  held = 1;
  if (!fx_ok_or_nomem(rlock_lock_acquire(l), "re-acquire", n))
    goto out;
  held = 2;
  int locked;
  int64_t count;
  rlock_lock_info *info = NULL;
  if (!fx_ok_or_nomem(rlock_lock_is_locked(&locked, l), "is_locked", n) ||
      !fx_ok_or_nomem(rlock_lock_hold_count(&count, l), "hold_count", n) ||
      !fx_ok_or_nomem(rlock_lock_inspect(&info, l), "inspect", n))
    goto out;
  rlock_lock_info_free(info);
  for (; held > 0; held--)
    if (!fx_ok_or_nomem(rlock_lock_release(l), "release", n))
      goto out;
out:
  rc = rlock__alloc_failed() == 0;
  rlock__alloc_fail_at(0, 0);
  /* Allocation works again: give back what is still held. */
  while (held-- > 0 && l != NULL)
    if (rlock_lock_release(l) != RLOCK_OK)
      break;
  FX_FREE((l), (c));
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

/* One cycle of a walk with the Nth allocation failing (as `flags` say),
 * what is left on the server checked; returns 1 when no allocation was
 * refused. `ctx`: the walk's own. */
typedef int (*cycle_fn)(uint64_t n, int flags, void *ctx);

/* What the walks of a lock's holder and waiter count over their cycles:
 * the waiter got the lock; the holder was told it lost it. */
typedef struct tally {
  const void *what; /* the walk's subject (a kind), if any */
  int got, told;
} tally;

/* Walk N = 1, 2, ... until a cycle refuses no allocation, and say how far
 * (after `label`); at least 10 allocations must have been walked. When
 * `strided`, under valgrind (time scale 8) every third N is walked past
 * the first 40: each such cycle opens connections. */
static void walk_cycles(const char *label, cycle_fn one, int flags, void *ctx,
                        int strided) {
  uint64_t stride = strided && rt_scaled_ms(1) >= 4 ? 3 : 1, n;
  for (n = 1; n < 100000; n += n < 40 ? 1 : stride)
    if (one(n, flags, ctx))
      break;
  print_message("%s, %s: %llu allocations walked\n", label,
                flags & RLOCK__ALLOC_ONCE ? "one failing"
                                          : "all failing from N",
                (unsigned long long)n);
  assert_true(n > 10);
}

static int cycle_kind(uint64_t n, int flags, void *ctx) {
  const struct kind *k = ctx;
  int clean = cycle(k, n, flags);
  nothing_left(k->name, n, flags);
  return clean;
}

/* Both walks of the test thread's allocations: one failing, and all
 * failing from N. */
static void walk_both(const char *label, cycle_fn one, void *ctx, int strided) {
  walk_cycles(label, one, RLOCK__ALLOC_THIS_THREAD | RLOCK__ALLOC_ONCE, ctx,
              strided);
  walk_cycles(label, one, RLOCK__ALLOC_THIS_THREAD, ctx, strided);
}

/* ---- the cases ------------------------------------------------------------
 * Each case is a row: a walk, its subject, and the flags of its walks
 * (BOTH: one failing, then all failing from N). The case's name names
 * the row. */
#define BOTH (-1)

typedef struct walk_row {
  void (*walk)(const void *what, int flags);
  const void *what;
  int flags;
} walk_row;

static void test_row(void **state) {
  const walk_row *r = *state;
  if (r->flags != BOTH) {
    r->walk(r->what, r->flags);
    return;
  }
  r->walk(r->what, RLOCK__ALLOC_ONCE);
  r->walk(r->what, 0);
}

#define ROW(name, walk, what, flags)                                           \
  {                                                                            \
#name, test_row, NULL, NULL, &(walk_row) { walk, what, flags }             \
  }

/* A walk of the test thread's allocations over a kind's cycles. */
static void walk_kind(const void *k, int flags) {
  walk_cycles(((const struct kind *)k)->name, cycle_kind,
              RLOCK__ALLOC_THIS_THREAD | flags, (void *)k, 1);
}

/* One MultiLock cycle (a reentrant and a fair member, each re-acquired
 * by a second MultiLock round), as cycle(). */
static int cycle_multi(uint64_t n, int flags) {
  rlock__alloc_fail_at(n, flags);
  rlock_client *c = NULL;
  rlock_lock *m[2] = {NULL, NULL};
  rlock_multilock *ml = NULL;
  int held = 0;
  if (!nomem_client(&c, n) ||
      !fx_ok_or_nomem(rlock_lock_new(&m[0], c, "alloc:m1"), "lock_new", n) ||
      !fx_ok_or_nomem(rlock_lock_new_fair(&m[1], c, "alloc:m2"), "lock_new",
                      n) ||
      !fx_ok_or_nomem(rlock_multilock_new(&ml, m, 2), "multilock_new", n))
    goto out;
  for (; held < 2; held++)
    if (!fx_ok_or_nomem(rlock_multilock_try_acquire(ml, 1000, 0),
                        "multilock acquire", n))
      goto out;
  for (; held > 0; held--)
    if (!fx_ok_or_nomem(rlock_multilock_release(ml), "multilock release", n))
      goto out;
out:;
  int clean = rlock__alloc_failed() == 0;
  rlock__alloc_fail_at(0, 0);
  while (held-- > 0 && rlock_multilock_release(ml) == RLOCK_OK)
    ;
  rlock_multilock_free(ml);
  FX_FREE((m[0], m[1]), (c));
  return clean;
}

static int cycle_multi_left(uint64_t n, int flags, void *ctx) {
  (void)ctx;
  int clean = cycle_multi(n, flags);
  nothing_left("alloc:m1", n, flags);
  nothing_left("alloc:m2", n, flags);
  return clean;
}

static void test_multilock(void **state) {
  (void)state;
  walk_both("multilock", cycle_multi_left, NULL, 0);
}

/* ---- semaphores and the latch ---------------------------------------------
 * One cycle over the synchronisers (rlock/semaphore.h, rlock/latch.h), as
 * cycle(): a semaphore's permit taken and given back, a watchdog permit
 * of a permit-expirable semaphore taken, checked and released, a latch set,
 * counted down and awaited. With one allocation failing, nothing may be
 * left taken: the semaphore has its 2 permits, no permit is leased. */
static int cycle_sync(uint64_t n, int flags) {
  rlock__alloc_fail_at(n, flags);
  rlock_client *c = NULL;
  rlock_semaphore *s = NULL;
  rlock_psemaphore *p = NULL;
  rlock_latch *x = NULL;
  int took = 0, leased = 0;
  char id[RLOCK_PERMIT_ID_LEN + 1];
  if (!nomem_client(&c, n) ||
      !fx_ok_or_nomem(rlock_semaphore_new(&s, c, "alloc:sem"), "sem_new", n) ||
      !fx_ok_or_nomem(rlock_semaphore_try_set_permits(NULL, s, 2), "sem set",
                      n) ||
      !fx_ok_or_nomem(rlock_semaphore_acquire(s, 1, 1000, NULL), "sem take", n))
    goto out;
  took = 1;
  if (!fx_ok_or_nomem(rlock_semaphore_release(s, 1), "sem release", n))
    goto out;
  took = 0;
  if (!fx_ok_or_nomem(rlock_psemaphore_new(&p, c, "alloc:psem"), "psem_new",
                      n) ||
      !fx_ok_or_nomem(rlock_psemaphore_try_set_permits(NULL, p, 1), "psem set",
                      n) ||
      !fx_ok_or_nomem(
          rlock_psemaphore_acquire(id, p, 1000, RLOCK_LEASE_WATCHDOG, NULL),
          "psem take", n))
    goto out;
  leased = 1;
  if (!fx_ok_or_nomem(rlock_psemaphore_check(p, id), "psem check", n) ||
      !fx_ok_or_nomem(rlock_psemaphore_release(p, id), "psem release", n))
    goto out;
  leased = 0;
  if (!fx_ok_or_nomem(rlock_latch_new(&x, c, "alloc:latch"), "latch_new", n) ||
      !fx_ok_or_nomem(rlock_latch_try_set_count(NULL, x, 1), "latch set", n) ||
      !fx_ok_or_nomem(rlock_latch_count_down(x), "latch down", n) ||
      !fx_ok_or_nomem(rlock_latch_await(x, 1000, NULL), "latch await", n))
    goto out;
out:;
  int clean = rlock__alloc_failed() == 0;
  rlock__alloc_fail_at(0, 0);
  if (took)
    rlock_semaphore_release(s, 1);
  if (leased)
    rlock_psemaphore_release(p, id);
  rlock_semaphore_free(s);
  rlock_psemaphore_free(p);
  rlock_latch_free(x);
  rlock_client_free(c);
  return clean;
}

/* With one failure nothing is left taken; the keys go for the next cycle
 * (with every later allocation failing, a taken permit of the semaphore,
 * which never expires, may be left: nothing can be sent to give it back). */
static void nothing_left_sync(uint64_t n, int flags) {
  redisReply *r = rt_cmd(srv, "GET alloc:sem");
  long long sem = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 2;
  freeReplyObject(r);
  long long leased = rt_cmd_int(srv, "ZCARD {alloc:psem}:timeout");
  if ((flags & RLOCK__ALLOC_ONCE) && (sem != 2 || leased != 0))
    fail_msg("N=%llu (one failure): %lld permits left of 2, %lld leased",
             (unsigned long long)n, sem, leased);
  freeReplyObject(rt_cmd(srv, "DEL alloc:sem alloc:psem {alloc:psem}:timeout "
                              "alloc:latch"));
}

static int cycle_sync_left(uint64_t n, int flags, void *ctx) {
  (void)ctx;
  int clean = cycle_sync(n, flags);
  nothing_left_sync(n, flags);
  return clean;
}

static void test_sync(void **state) {
  (void)state;
  walk_both("semaphores and latch", cycle_sync_left, NULL, 0);
}

/* ---- the background thread ---------------------------------------------
 * The walks above fail the test thread's allocations. These fail those of
 * every other thread instead (RLOCK__ALLOC_OTHER_THREADS): a blocking
 * client's background thread, which renews the watchdog's holds and runs
 * the subscriber (connecting, subscribing, reading unlock messages,
 * unsubscribing). One cycle: the test thread holds a lock under the
 * watchdog, a second thread of the test waits for it on the same client
 * (so it subscribes), the holder keeps it for two renewals (or until it
 * is told it lost it), checks it, lets go, and the waiter must get it or
 * fail with a documented status within its wait. The holder must be told
 * whenever the server no longer has its hold (rlock_lock_check says
 * RLOCK_ELOST, the lost callback runs), and must never be left believing
 * it holds a lock the waiter took. */

/* The watchdog lease of these cycles: renewals every 100 ms. */
#define BG_WATCHDOG_MS 300

static atomic_int bg_lost; /* lost-callback calls in this cycle */

static void bg_on_lost(const char *name, const char *owner, void *ud) {
  (void)name, (void)owner, (void)ud;
  atomic_fetch_add(&bg_lost, 1);
}

typedef struct bg_waiter {
  rlock_lock *l;
  int64_t wait_ms;
  int rc, release_rc;
  int64_t took_ms;   /* how long the acquisition call took */
  int64_t got_at_ms; /* when it returned (rt_now_ms) */
  char msg[320];
} bg_waiter;

static void *bg_wait(void *arg) {
  bg_waiter *w = arg;
  rlock__alloc_mark_thread(); /* a thread of the test: never failed */
  int64_t t0 = rt_now_ms();
  w->rc = rlock_lock_try_acquire(w->l, w->wait_ms, 5000);
  w->got_at_ms = rt_now_ms();
  w->took_ms = w->got_at_ms - t0;
  snprintf(w->msg, sizeof w->msg, "%s", rlock_error_last()->message);
  w->release_rc = w->rc == RLOCK_OK ? rlock_lock_release(w->l) : RLOCK_OK;
  return NULL;
}

static rlock_stats bg_stats(rlock_client *c) {
  rlock_stats st;
  OK(rlock_client_stats(c, &st, sizeof st));
  return st;
}

/* Hold until the watchdog has renewed twice since `base` (or the holder
 * was told it lost the lock) and the waiter has begun waiting, bounded by
 * three leases: renewals that keep failing end it that way. */
static void bg_hold(rlock_client *c, const rlock_stats *base) {
  int64_t end = rt_now_ms() + rt_scaled_ms(3 * BG_WATCHDOG_MS);
  for (;;) {
    rlock_stats st = bg_stats(c);
    if (((st.renewals >= base->renewals + 2 || atomic_load(&bg_lost) > 0) &&
         st.waits > base->waits) ||
        rt_now_ms() >= end)
      return;
    rt_sleep_ms(5);
  }
}

/* The lock kinds the background walks hold and wait for: the holder's
 * and the waiter's constructors. A fair waiter listens on a channel of
 * its own; a read hold is renewed by renew_read.lua, with its timeout
 * key, and a writer waits for it. */
typedef struct bg_kind {
  const char *label;
  const char *name;
  lock_new_fn holder, waiter;
} bg_kind;

static const bg_kind bg_kinds[] = {
    {"reentrant", "alloc:bg", rlock_lock_new, rlock_lock_new},
    {"fair", "alloc:bgfair", rlock_lock_new_fair, rlock_lock_new_fair},
    {"read, a writer waiting", "alloc:bgrw", rlock_lock_new_read,
     rlock_lock_new_write},
};

/* The holder's view after the hold (`check`: its check's status), by
 * `who`, against the server's (`gone`: the server no longer has the
 * hold): told whenever it is gone, its lost callback then called once
 * (`idle` waits a turn meanwhile), never otherwise. 1 when told. */
static int told_ok(int check, int gone, const char *who, uint64_t n,
                   void (*idle)(void)) {
  if (check != RLOCK_OK && check != RLOCK_ELOST)
    fail_msg("N=%llu: %s: the check returned %d (%s)", (unsigned long long)n,
             who, check, rlock_error_last()->message);
  if (gone && check != RLOCK_ELOST)
    fail_msg("N=%llu: %s: the server no longer has the hold, but the check "
             "says it is held",
             (unsigned long long)n, who);
  if (check == RLOCK_ELOST) {
    /* Told by the check; the callback follows at the next tick, which
     * needs no memory to tell it. */
    int64_t end = rt_now_ms() + rt_scaled_ms(BG_WATCHDOG_MS);
    while (atomic_load(&bg_lost) == 0 && rt_now_ms() < end)
      idle();
    if (atomic_load(&bg_lost) != 1)
      fail_msg("N=%llu: %s: hold lost, lost callback called %d times",
               (unsigned long long)n, who, atomic_load(&bg_lost));
  } else if (atomic_load(&bg_lost) != 0) {
    fail_msg("N=%llu: %s: lost callback called, but the check says held",
             (unsigned long long)n, who);
  }
  return check == RLOCK_ELOST;
}

static void bg_idle(void) { rt_sleep_ms(5); }

/* The blocking holder's view (rlock_lock_check): 1 when told. */
static int bg_told(rlock_client *c, rlock_lock *l, const char *name,
                   uint64_t n) {
  char field[RLOCK_OWNER_MAX];
  fx_owner(c, field);
  int check = rlock_lock_check(l);
  return told_ok(check, fx_hget(srv, name, field) == -1, "holder", n, bg_idle);
}

/* The waiter's outcome: the lock, or a documented failure, within its
 * wait; never the lock while the holder, not told, still held it. */
static void bg_waiter_ok(const bg_waiter *w, int64_t released_at, int told,
                         uint64_t n) {
  static const int documented[] = {RLOCK_OK, RLOCK_ELOCKED, RLOCK_ENOMEM,
                                   RLOCK_ETIMEOUT, RLOCK_EIO};
  int known = 0;
  for (size_t i = 0; i < sizeof documented / sizeof *documented; i++)
    known |= w->rc == documented[i];
  if (!known || (w->rc != RLOCK_OK && w->msg[0] == '\0'))
    fail_msg("N=%llu: the waiter's acquisition returned %d (%s)",
             (unsigned long long)n, w->rc, w->msg);
  if (w->took_ms > w->wait_ms + rt_scaled_ms(1000))
    fail_msg("N=%llu: the waiter's %lld ms wait took %lld ms",
             (unsigned long long)n, (long long)w->wait_ms,
             (long long)w->took_ms);
  if (w->rc == RLOCK_OK && w->got_at_ms < released_at && !told)
    fail_msg("N=%llu: the waiter got the lock while the holder, not told, "
             "held it",
             (unsigned long long)n);
  if (w->release_rc != RLOCK_OK)
    fail_msg("N=%llu: the waiter's release returned %d", (unsigned long long)n,
             w->release_rc);
}

/* One cycle with the Nth allocation off the test's threads failing (and,
 * without ONCE, every later one). Returns 1 when none was refused. */
static int cycle_bg(uint64_t n, int flags, void *ctx) {
  tally *tl = ctx;
  const bg_kind *k = tl->what;
  atomic_store(&bg_lost, 0);
  rlock_client *c =
      fx_client_opts(rt_server_url(srv), BG_WATCHDOG_MS, bg_on_lost, NULL);
  rlock_lock *lh, *lw;
  OK(k->holder(&lh, c, k->name));
  OK(k->waiter(&lw, c, k->name));
  OK(rlock_lock_try_acquire(lh, 0, RLOCK_LEASE_WATCHDOG));
  rlock_stats base = bg_stats(c);
  rlock__alloc_fail_at(n, RLOCK__ALLOC_OTHER_THREADS | flags);
  bg_waiter w = {.l = lw, .wait_ms = rt_scaled_ms(8 * BG_WATCHDOG_MS)};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, bg_wait, &w), 0);
  bg_hold(c, &base);
  int told = bg_told(c, lh, k->name, n);
  int64_t released_at = rt_now_ms();
  int rc = rlock_lock_release(lh);
  if (rc != RLOCK_OK && rc != RLOCK_ELOST)
    fail_msg("N=%llu: the holder's release returned %d (%s)",
             (unsigned long long)n, rc, rlock_error_last()->message);
  told |= rc == RLOCK_ELOST;
  pthread_join(t, NULL);
  int clean = rlock__alloc_failed() == 0;
  rlock__alloc_fail_at(0, 0);
  bg_waiter_ok(&w, released_at, told, n);
  tl->got += w.rc == RLOCK_OK;
  tl->told += told;
  rlock_lock_free(lh);
  rlock_lock_free(lw);
  OK(rlock_client_free(c));
  if (rt_cmd_int(srv, "EXISTS %s", k->name) != 0)
    fail_msg("N=%llu: '%s' left held", (unsigned long long)n, k->name);
  return clean;
}

/* Say what a walk's tally counted; from N = 1 on (not ONCE), no renewal
 * can be sent: the lease runs out, and the holder must have been told. */
static void tally_check(const char *label, const tally *t, int flags) {
  print_message("%s: the waiter got the lock in %d cycles; the holder was "
                "told it lost it in %d\n",
                label, t->got, t->told);
  if (!(flags & RLOCK__ALLOC_ONCE))
    assert_true(t->told > 0);
}

static void walk_bg(const void *what, int flags) {
  const bg_kind *k = what;
  char label[96];
  snprintf(label, sizeof label, "background thread, %s", k->label);
  tally t = {.what = k};
  walk_cycles(label, cycle_bg, flags, &t, 1);
  tally_check(label, &t, flags);
}

/* ---- a loop client's renewals and subscriber ----------------------------
 * A loop client has no thread of its own: its renewals and its subscriber
 * run in the loop's callbacks, on the loop's thread (here the test's, on
 * libuv). The same cycle with everything allocated on that thread from
 * the waiter's start on failing (THIS_THREAD: the waiter's operation, its
 * attempts and subscription, the renewal ticks, the holder's release):
 * every call and callback ends with a documented status, the holder is
 * told whenever the server lost its hold, and the waiter ends within its
 * wait. */

typedef struct lp_done {
  int done, rc;
  int64_t at_ms; /* when the callback ran */
  char msg[320];
} lp_done;

static void lp_on_done(void *arg, int rc, int64_t value) {
  (void)value;
  lp_done *d = arg;
  d->done++;
  d->rc = rc;
  d->at_ms = rt_now_ms();
  snprintf(d->msg, sizeof d->msg, "%s",
           rc == RLOCK_OK ? "" : rlock_error_last()->message);
}

/* Run the loop until `cond` holds or `ms` (scaled) pass. */
#define LP_RUN_UNTIL(cond, ms)                                                 \
  do {                                                                         \
    int64_t end_ = rt_now_ms() + rt_scaled_ms(ms);                             \
    while (!(cond) && rt_now_ms() < end_)                                      \
      run_once(5);                                                             \
  } while (0)

/* Start an operation; one refused at once (out of memory) counts as done
 * with that status, which must be documented. */
static void lp_started(int rc, lp_done *d, const char *what, uint64_t n) {
  if (rc == RLOCK_OK)
    return;
  if (rc != RLOCK_ENOMEM)
    fail_msg("N=%llu: %s returned %d (%s)", (unsigned long long)n, what, rc,
             rlock_error_last()->message);
  d->done = 1;
  d->rc = rc;
  d->at_ms = rt_now_ms();
  snprintf(d->msg, sizeof d->msg, "%s", rlock_error_last()->message);
}

static void lp_idle(void) { run_once(5); }

/* The loop holder's view (rlock_lock_check_owner), as bg_told. */
static int lp_told(rlock_client *c, rlock_lock *l, uint64_t owner, uint64_t n) {
  char field[RLOCK_OWNER_MAX];
  snprintf(field, sizeof field, "%s:%llu", rlock_client_id(c),
           (unsigned long long)owner);
  int check = rlock_lock_check_owner(l, owner);
  return told_ok(check, fx_hget(srv, "alloc:loop", field) == -1, "loop client",
                 n, lp_idle);
}

static void lp_waiter_ok(const lp_done *w, int64_t t0, int64_t wait_ms,
                         int64_t released_at, int told, uint64_t n) {
  bg_waiter b = {.wait_ms = wait_ms,
                 .rc = w->rc,
                 .took_ms = w->at_ms - t0,
                 .got_at_ms = w->at_ms};
  snprintf(b.msg, sizeof b.msg, "%s", w->msg);
  bg_waiter_ok(&b, released_at, told, n);
}

/* After the holder's release was started (its answer `r`): both it and
 * the waiter's (`w`) answer once, the release as documented. Whether the
 * holder was told it lost the lock: `told`, or by the release. */
static int lp_ends(const lp_done *r, const lp_done *w, int told, uint64_t n) {
  LP_RUN_UNTIL(r->done && w->done, 5000 + 8 * BG_WATCHDOG_MS);
  if (r->done != 1 ||
      (r->rc != RLOCK_OK && r->rc != RLOCK_ELOST && r->rc != RLOCK_ENOMEM))
    fail_msg("N=%llu: the holder's release: %d callbacks, status %d (%s)",
             (unsigned long long)n, r->done, r->rc, r->msg);
  if (w->done != 1)
    fail_msg("N=%llu: the waiter's callback ran %d times",
             (unsigned long long)n, w->done);
  return told | (r->rc == RLOCK_ELOST);
}

/* Give back what the cycle may have left, with allocation working: the
 * release `started` (its status) answers `d`. */
static void lp_given_back(int started, lp_done *d) {
  OK(started);
  LP_RUN_UNTIL(d->done, 5000);
  if (d->done != 1 ||
      (d->rc != RLOCK_OK && d->rc != RLOCK_ELOST && d->rc != RLOCK_ENOTHELD))
    fail_msg("cleaning up: a release returned %d (%s)", d->rc, d->msg);
}

static void lp_clean(rlock_lock *l, uint64_t owner) {
  lp_done d = {0};
  lp_given_back(rlock_lock_release_async(l, owner, lp_on_done, &d), &d);
}

/* A loop client under the cycles' watchdog, its losses counted in
 * bg_lost (reset). */
static rlock_client *lp_client(void) {
  atomic_store(&bg_lost, 0);
  rlock_config *cfg;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, rt_server_url(srv)));
  OK(rlock_config_set_watchdog_timeout_ms(cfg, BG_WATCHDOG_MS));
  OK(rlock_config_set_lost_callback(cfg, bg_on_lost, NULL));
  rlock_client *c = loop_client_cfg(cfg);
  rlock_config_free(cfg);
  return c;
}

static int cycle_loop(uint64_t n, int flags, void *ctx) {
  tally *tl = ctx;
  rlock_client *c = lp_client();
  rlock_lock *lh = fx_lock(c, "alloc:loop"), *lw = fx_lock(c, "alloc:loop");
  uint64_t oh = rlock_owner_new(), ow = rlock_owner_new();
  lp_done h = {0}, w = {0}, r = {0};
  rlock_acquire_options o = opts(oh, 0, RLOCK_LEASE_WATCHDOG);
  OK(rlock_lock_acquire_async(lh, &o, lp_on_done, &h, NULL));
  LP_RUN_UNTIL(h.done, 5000);
  assert_int_equal(h.rc, RLOCK_OK);
  rlock_stats base = bg_stats(c);
  int64_t wait_ms = rt_scaled_ms(8 * BG_WATCHDOG_MS), t0 = rt_now_ms();
  rlock__alloc_fail_at(n, RLOCK__ALLOC_THIS_THREAD | flags);
  o = opts(ow, wait_ms, 5000);
  lp_started(rlock_lock_acquire_async(lw, &o, lp_on_done, &w, NULL), &w,
             "the waiter's acquire_async", n);
  LP_RUN_UNTIL((bg_stats(c).renewals >= base.renewals + 2 ||
                atomic_load(&bg_lost) > 0) &&
                   (bg_stats(c).waits > base.waits || w.done),
               3 * BG_WATCHDOG_MS);
  int told = lp_told(c, lh, oh, n);
  int64_t released_at = rt_now_ms();
  lp_started(rlock_lock_release_async(lh, oh, lp_on_done, &r), &r,
             "the holder's release_async", n);
  told = lp_ends(&r, &w, told, n);
  int clean = rlock__alloc_failed() == 0;
  rlock__alloc_fail_at(0, 0);
  lp_waiter_ok(&w, t0, wait_ms, released_at, told, n);
  if (r.rc == RLOCK_ENOMEM)
    lp_clean(lh, oh);
  if (w.rc == RLOCK_OK)
    lp_clean(lw, ow);
  tl->got += w.rc == RLOCK_OK;
  tl->told += told;
  rlock_lock_free(lh);
  rlock_lock_free(lw);
  loop_free(c);
  /* Without ONCE, a hold whose give-back could not be sent may be left
   * to expire with its lease, as in the walks above. */
  nothing_left("alloc:loop", n, flags);
  return clean;
}

static void walk_loop(const void *what, int flags) {
  (void)what;
  tally t = {0};
  kind = UV;
  loop_open();
  walk_cycles("loop client", cycle_loop, flags, &t, 1);
  loop_close();
  tally_check("loop client", &t, flags);
}

/* ---- a loop client's permits ---------------------------------------------
 * cycle_loop for a permit-expirable semaphore of one permit: the holder
 * takes it under the watchdog (renewed by psem_renew.lua on the loop),
 * a waiter waits for it, the loop thread's allocations fail from N; the
 * holder must be told whenever its permit is gone, and the waiter gets it
 * or fails with a documented status within its wait. */
typedef struct lp_permit {
  lp_done d;
  char id[RLOCK_PERMIT_ID_LEN + 1];
} lp_permit;

static void lp_on_permit(void *arg, int rc, const char *id) {
  lp_permit *p = arg;
  if (id != NULL)
    snprintf(p->id, sizeof p->id, "%s", id);
  lp_on_done(&p->d, rc, 0);
}

/* The permit holder's view (rlock_psemaphore_check), as bg_told. */
static int lp_permit_told(rlock_psemaphore *s, const char *id, uint64_t n) {
  int check = rlock_psemaphore_check(s, id);
  return told_ok(check, rt_cmd_int(srv, "ZCARD {alloc:lpsem}:timeout") == 0,
                 "loop client's permit", n, lp_idle);
}

static void lp_permit_release(rlock_psemaphore *s, const char *id) {
  lp_done d = {0};
  lp_given_back(rlock_psemaphore_release_async(s, id, lp_on_done, &d), &d);
}

static int cycle_loop_permit(uint64_t n, int flags, void *ctx) {
  tally *tl = ctx;
  rlock_client *c = lp_client();
  rlock_psemaphore *s;
  OK(rlock_psemaphore_new(&s, c, "alloc:lpsem"));
  lp_permit h = {0}, w = {0};
  lp_done set = {0}, r = {0};
  OK(rlock_psemaphore_try_set_permits_async(s, 1, lp_on_done, &set));
  LP_RUN_UNTIL(set.done, 5000);
  OK(rlock_psemaphore_acquire_async(s, 0, RLOCK_LEASE_WATCHDOG, lp_on_permit,
                                    &h, NULL));
  LP_RUN_UNTIL(h.d.done, 5000);
  assert_int_equal(h.d.rc, RLOCK_OK);
  rlock_stats base = bg_stats(c);
  int64_t wait_ms = rt_scaled_ms(8 * BG_WATCHDOG_MS), t0 = rt_now_ms();
  rlock__alloc_fail_at(n, RLOCK__ALLOC_THIS_THREAD | flags);
  lp_started(
      rlock_psemaphore_acquire_async(s, wait_ms, 5000, lp_on_permit, &w, NULL),
      &w.d, "the waiter's acquire_async", n);
  LP_RUN_UNTIL((bg_stats(c).renewals >= base.renewals + 2 ||
                atomic_load(&bg_lost) > 0) &&
                   (bg_stats(c).waits > base.waits || w.d.done),
               3 * BG_WATCHDOG_MS);
  int told = lp_permit_told(s, h.id, n);
  int64_t released_at = rt_now_ms();
  lp_started(rlock_psemaphore_release_async(s, h.id, lp_on_done, &r), &r,
             "the holder's release_async", n);
  told = lp_ends(&r, &w.d, told, n);
  int clean = rlock__alloc_failed() == 0;
  rlock__alloc_fail_at(0, 0);
  lp_waiter_ok(&w.d, t0, wait_ms, released_at, told, n);
  if (r.rc == RLOCK_ENOMEM)
    lp_permit_release(s, h.id);
  if (w.d.rc == RLOCK_OK)
    lp_permit_release(s, w.id);
  tl->told += told;
  rlock_psemaphore_free(s);
  loop_free(c);
  /* With one failure nothing is left leased; otherwise a permit whose
   * release could not be sent comes back after its lease. */
  long long leased = rt_cmd_int(srv, "ZCARD {alloc:lpsem}:timeout");
  if ((flags & RLOCK__ALLOC_ONCE) && leased != 0)
    fail_msg("N=%llu (one failure): %lld permits left leased",
             (unsigned long long)n, leased);
  freeReplyObject(rt_cmd(srv, "DEL alloc:lpsem {alloc:lpsem}:timeout"));
  return clean;
}

static void walk_loop_permit(const void *what, int flags) {
  (void)what;
  tally t = {0};
  kind = UV;
  loop_open();
  walk_cycles("loop client, permits", cycle_loop_permit, flags, &t, 1);
  loop_close();
  print_message("loop client, permits: the holder was told it lost its "
                "permit in %d cycles\n",
                t.told);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      ROW(test_reentrant, walk_kind, &kinds[0], BOTH),
      ROW(test_fair, walk_kind, &kinds[1], BOTH),
      ROW(test_read, walk_kind, &kinds[2], BOTH),
      ROW(test_write, walk_kind, &kinds[3], BOTH),
      ROW(test_fenced, walk_kind, &kinds[4], BOTH),
      ROW(test_spin, walk_kind, &kinds[5], BOTH),
      cmocka_unit_test(test_multilock),
      cmocka_unit_test(test_sync),
      ROW(test_background_once, walk_bg, &bg_kinds[0], RLOCK__ALLOC_ONCE),
      ROW(test_background_all, walk_bg, &bg_kinds[0], 0),
      ROW(test_background_fair, walk_bg, &bg_kinds[1], BOTH),
      ROW(test_background_rw, walk_bg, &bg_kinds[2], BOTH),
      ROW(test_loop_once, walk_loop, NULL, RLOCK__ALLOC_ONCE),
      ROW(test_loop_all, walk_loop, NULL, 0),
      ROW(test_loop_permit_once, walk_loop_permit, NULL, RLOCK__ALLOC_ONCE),
      ROW(test_loop_permit_all, walk_loop_permit, NULL, 0),
  };
  return RT_RUN_GROUP("tests", tests, fx_setup, fx_teardown);
}
