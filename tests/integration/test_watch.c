/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: channel watches (rlock/watch.h) on a blocking client and on
 * loop clients (drivers.h), against one server and a Redis Cluster with
 * sharded pub/sub: a watch and a waiter on one channel of one client (the
 * waiter woken by every release, as fast as without the watch, and the
 * watch hearing each release); a lost subscription told and its return,
 * also across a Sentinel failover;
 * a semaphore's and a latch's messages; a watch freed from its own
 * callback; bad arguments. */
#include "drivers.h"
#include "rt_cluster.h"
#include "rt_sentinel.h"

#include <stdatomic.h>

#include "rlock/watch.h"

static rt_cluster *cl;
static rt_sentinel_group *grp;

/* What a watch heard, read by the test's thread while the client's loop
 * thread writes it (a blocking client's background thread). */
typedef struct heard {
  atomic_int subscribed, messages, lost, resumed, failed;
  char last[32]; /* the last message's payload (NUL-terminated) */
  atomic_int last_len;
  rlock_watch *free_me; /* freed by the callback at its first message */
} heard;

static void on_watch(void *arg, rlock_watch_event ev, const char *payload,
                     size_t len) {
  heard *h = arg;
  switch (ev) {
  case RLOCK_WATCH_SUBSCRIBED:
    assert_null(payload);
    atomic_fetch_add(&h->subscribed, 1);
    break;
  case RLOCK_WATCH_MESSAGE:
    assert_non_null(payload);
    if (len < sizeof h->last) {
      memcpy(h->last, payload, len);
      h->last[len] = '\0';
      atomic_store(&h->last_len, (int)len);
    }
    if (h->free_me != NULL) {
      rlock_watch *w = h->free_me;
      h->free_me = NULL;
      rlock_watch_free(w); /* from its own callback: at once */
    }
    atomic_fetch_add(&h->messages, 1);
    break;
  case RLOCK_WATCH_LOST:
    atomic_fetch_add(&h->lost, 1);
    break;
  case RLOCK_WATCH_RESUMED:
    atomic_fetch_add(&h->resumed, 1);
    break;
  case RLOCK_WATCH_FAILED:
    atomic_fetch_add(&h->failed, 1);
    break;
  }
}

typedef struct at_least {
  atomic_int *v;
  int n;
  const char *what;
} at_least;

static bool pred_at_least(void *arg, char *why, size_t cap) {
  at_least *a = arg;
  int v = atomic_load(a->v);
  snprintf(why, cap, "%s: %d, want %d", a->what, v, a->n);
  return v >= a->n;
}

static void wait_count(atomic_int *v, int n, const char *what) {
  at_least a = {v, n, what};
  dk_wait(pred_at_least, &a, 5000, what);
}

/* A watch of `l` telling `h` (cleared first), once it is subscribed
 * (`what` names that wait). */
static rlock_watch *watch_lock(rlock_lock *l, heard *h, const char *what) {
  rlock_watch *w;
  memset(h, 0, sizeof *h);
  OK(rlock_watch_lock(&w, l, on_watch, h));
  wait_count(&h->subscribed, 1, what);
  return w;
}

/* The client's waiters gauge (rlock_waiters{kind="reentrant"}) is `n`: an
 * acquisition found the lock held and waits. */
typedef struct waiting {
  rlock_client *c;
  int n;
} waiting;

static bool pred_waiting(void *arg, char *why, size_t cap) {
  waiting *w = arg;
  static char buf[65536];
  if (rlock_client_metrics_text(w->c, buf, sizeof buf, NULL, 0) != RLOCK_OK) {
    snprintf(why, cap, "metrics: %s", rlock_error_last()->message);
    return false;
  }
  char want[64];
  snprintf(want, sizeof want, "rlock_waiters{kind=\"reentrant\"} %d\n", w->n);
  snprintf(why, cap, "no '%s' in the metrics", want);
  return strstr(buf, want) != NULL;
}

static const char *url_of(int cluster) {
  static char url[1024];
  if (cluster)
    snprintf(url, sizeof url, "%s?pubsub=sharded", rt_cluster_url(cl));
  else
    snprintf(url, sizeof url, "%s", rt_server_url(srv));
  return url;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* `rounds` handoffs from `holder` (another client) to a waiter of `wc`:
 * each round the holder takes the lock, the waiter starts waiting (the
 * gauge says so), the holder releases; the median time from the release
 * to the waiter's hold, in µs. Every release is a message on the channel
 * (the holder's and the waiter's own). */
static int64_t handoffs(rlock_client *wc, rlock_lock *waiter_lock,
                        rlock_lock *holder_lock, int rounds) {
  int64_t lat[32];
  uint64_t me = dk_me(), other = rlock_owner_new();
  assert_true(rounds <= 32);
  for (int i = 0; i < rounds; i++) {
    OK(dk_acquire(holder_lock, other, 0, RLOCK_LEASE_WATCHDOG));
    dk_op op;
    dk_acquire_start(&op, waiter_lock, dk_loop() ? me : rlock_owner_new(),
                     20000, RLOCK_LEASE_WATCHDOG);
    waiting w = {wc, 1};
    dk_wait(pred_waiting, &w, 5000, "the waiter waits");
    int64_t t0 = rt_now_us();
    OK(dk_release(holder_lock, other));
    OK(dk_op_wait(&op, 5000, "the waiter's acquisition"));
    lat[i] = op.done_us - t0;
    /* The watchdog's TTL (30 s) bounds a waiter no message woke. */
    assert_true(lat[i] < 2000 * 1000);
    OK(dk_call(DK_RELEASE, waiter_lock, op.o.owner, 0, 0, 0, NULL));
  }
  qsort(lat, (size_t)rounds, sizeof *lat, cmp_i64);
  return lat[rounds / 2];
}

/* A watch and a waiter on one channel of one client: the waiter is woken
 * by each release (never waiting for the holder's lease), no slower than
 * without the watch, and the watch hears every release. */
static void waiter_and_watch(int cluster) {
  rlock_client *wc = dk_client(url_of(cluster), 30000, NULL, NULL);
  rlock_client *hc = dk_client(url_of(cluster), 30000, NULL, NULL);
  char name[64]; /* a name per driver: a failed case leaves it held */
  snprintf(name, sizeof name, cluster ? "watch:{w1-%s}" : "watch:w1-%s",
           dk_name());
  rlock_lock *wl, *hl;
  OK(rlock_lock_new(&wl, wc, name));
  OK(rlock_lock_new(&hl, hc, name));
  enum { ROUNDS = 15 };
  int64_t bare = handoffs(wc, wl, hl, ROUNDS);
  static heard h;
  rlock_watch *w = watch_lock(wl, &h, "the watch subscribed");
  assert_non_null(strstr(rlock_watch_channel(w), "redisson_lock__channel:"));
  int64_t watched = handoffs(wc, wl, hl, ROUNDS);
  /* Each round: the holder's release and the waiter's. */
  wait_count(&h.messages, 2 * ROUNDS, "the watch heard every release");
  dk_report("handoff median without a watch", (double)bare / 1000.0);
  dk_report("handoff median with a watch", (double)watched / 1000.0);
  assert_true(watched <= 3 * bare + 20000);
  rlock_watch_free(w); /* its callback is done: what it wrote can be read */
  /* Up to two more: the channel lingered after the rounds without the
   * watch, their last two releases still unread (rlock/watch.h). */
  ASSERT_RANGE(atomic_load(&h.messages), 2 * ROUNDS, 2 * ROUNDS + 2);
  assert_string_equal(h.last, "0");
  assert_int_equal(atomic_load(&h.lost), 0);
  assert_int_equal(atomic_load(&h.failed), 0);
  rlock_lock_free(wl);
  rlock_lock_free(hl);
  dk_free(wc);
  dk_free(hc);
}

static void test_waiter_and_watch_single(void **state) {
  (void)state;
  waiter_and_watch(0);
}

static void test_waiter_and_watch_cluster(void **state) {
  (void)state;
  waiter_and_watch(1);
}

/* The subscriber's connection killed: the watch is told it lost its
 * subscription, then that it is back, and hears what follows. */
static void test_lost_and_resumed(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 30000, NULL, NULL);
  rlock_lock *l;
  OK(rlock_lock_new(&l, c, "watch:lost"));
  static heard h;
  rlock_watch *w = watch_lock(l, &h, "the watch subscribed");
  assert_true(rt_cmd_int(srv, "CLIENT KILL TYPE pubsub") >= 1);
  wait_count(&h.lost, 1, "the watch told its loss");
  wait_count(&h.resumed, 1, "the watch told its return");
  assert_int_equal(atomic_load(&h.lost), 1);
  assert_int_equal(atomic_load(&h.subscribed), 1);
  rt_cmd_int(srv, "PUBLISH %s 0", rlock_watch_channel(w));
  wait_count(&h.messages, 1, "the watch heard a message after its return");
  rlock_watch_free(w);
  rlock_lock_free(l);
  dk_free(c);
}

/* A semaphore's released permits and a latch's count reaching zero, each
 * heard by its watch (payloads: the count, "0"). */
static void test_semaphore_and_latch(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 30000, NULL, NULL);
  rlock_client *o = dk_client(rt_server_url(srv), 30000, NULL, NULL);
  rt_cmd_int(srv, "DEL watch:sem watch:latch");
  rlock_semaphore *s;
  rlock_latch *la;
  OK(rlock_semaphore_new(&s, c, "watch:sem"));
  OK(rlock_latch_new(&la, c, "watch:latch"));
  static heard hs, hl;
  memset(&hs, 0, sizeof hs);
  memset(&hl, 0, sizeof hl);
  rlock_watch *ws, *wl;
  OK(rlock_watch_semaphore(&ws, s, on_watch, &hs));
  OK(rlock_watch_latch(&wl, la, on_watch, &hl));
  wait_count(&hs.subscribed, 1, "the semaphore's watch subscribed");
  wait_count(&hl.subscribed, 1, "the latch's watch subscribed");
  /* Another client's writes, as Redisson's would publish them. */
  assert_string_equal(rlock_watch_channel(ws), "redisson_sc:{watch:sem}");
  assert_string_equal(rlock_watch_channel(wl),
                      "redisson_countdownlatch__channel__{watch:latch}");
  rt_cmd_int(srv, "PUBLISH %s 3", rlock_watch_channel(ws));
  wait_count(&hs.messages, 1, "the semaphore's watch heard a release");
  assert_string_equal(hs.last, "3");
  rt_cmd_int(srv, "PUBLISH %s 0", rlock_watch_channel(wl));
  wait_count(&hl.messages, 1, "the latch's watch heard it reach zero");
  assert_string_equal(hl.last, "0");
  assert_int_equal(atomic_load(&hs.messages), 1);
  rlock_watch_free(ws);
  rlock_watch_free(wl);
  rlock_semaphore_free(s);
  rlock_latch_free(la);
  dk_free(c);
  dk_free(o);
}

/* A watch freed from its own callback hears nothing more; another watch
 * of the channel goes on hearing. */
static void test_free_in_callback(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 30000, NULL, NULL);
  rlock_lock *l;
  OK(rlock_lock_new(&l, c, "watch:self"));
  static heard h1, h2;
  h1.free_me = watch_lock(l, &h1, "the first watch subscribed");
  rlock_watch *w2 = watch_lock(l, &h2, "the second watch subscribed");
  for (int i = 1; i <= 3; i++) {
    rt_cmd_int(srv, "PUBLISH %s 0", rlock_watch_channel(w2));
    wait_count(&h2.messages, i, "the second watch heard each message");
  }
  assert_int_equal(atomic_load(&h1.messages), 1);
  rlock_watch_free(w2);
  rlock_lock_free(l);
  dk_free(c);
}

/* Sentinel: a failover moves the watch's subscription to the new master
 * (lost, then resumed), where it hears what is published. */
static void test_sentinel_failover(void **state) {
  (void)state;
  if (grp == NULL)
    grp = rt_sentinel_start("watch-master", 1, 3);
  rlock_client *c = dk_client(rt_sentinel_url(grp), 30000, NULL, NULL);
  rlock_lock *l;
  OK(rlock_lock_new(&l, c, "watch:sentinel"));
  static heard h;
  rlock_watch *w = watch_lock(l, &h, "the watch subscribed");
  rt_cmd_int(rt_sentinel_master(grp), "PUBLISH %s 0", rlock_watch_channel(w));
  wait_count(&h.messages, 1, "the watch heard the first master");
  rt_sentinel_failover(grp, rt_scaled_ms(30000));
  dk_report("SENTINEL FAILOVER", (double)rt_sentinel_failover_ms(grp));
  wait_count(&h.lost, 1, "the watch told its loss");
  wait_count(&h.resumed, 1, "the watch subscribed on the new master");
  dk_wait_subscribers(rt_sentinel_master(grp), rlock_watch_channel(w), 1,
                      "the subscription on the new master");
  rt_cmd_int(rt_sentinel_master(grp), "PUBLISH %s 0", rlock_watch_channel(w));
  wait_count(&h.messages, 2, "the watch heard the new master");
  assert_int_equal(atomic_load(&h.failed), 0);
  rlock_watch_free(w);
  rlock_lock_free(l);
  dk_free(c);
}

static void test_bad_arguments(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 30000, NULL, NULL);
  rlock_lock *l;
  OK(rlock_lock_new(&l, c, "watch:args"));
  rlock_watch *w = (rlock_watch *)1;
  assert_int_equal(rlock_watch_lock(&w, NULL, on_watch, NULL), RLOCK_EINVAL);
  assert_null(w);
  assert_non_null(strstr(rlock_error_last()->message, "lock is NULL"));
  assert_int_equal(rlock_watch_lock(&w, l, NULL, NULL), RLOCK_EINVAL);
  assert_int_equal(rlock_watch_lock(NULL, l, on_watch, NULL), RLOCK_EINVAL);
  assert_int_equal(rlock_watch_semaphore(&w, NULL, on_watch, NULL),
                   RLOCK_EINVAL);
  assert_int_equal(rlock_watch_psemaphore(&w, NULL, on_watch, NULL),
                   RLOCK_EINVAL);
  assert_int_equal(rlock_watch_latch(&w, NULL, on_watch, NULL), RLOCK_EINVAL);
  assert_int_equal(rlock_watch_election(&w, NULL, on_watch, NULL),
                   RLOCK_EINVAL);
  assert_null(rlock_watch_channel(NULL));
  assert_int_equal(rlock_error_last()->code, RLOCK_EINVAL);
  rlock_watch_free(NULL);
  rlock_lock_free(l);
  dk_free(c);
}

static int setup(void) {
  if (srv == NULL)
    srv = rt_server_start(NULL);
  if (cl == NULL)
    cl = rt_cluster_start(3, 0);
  return srv != NULL && cl != NULL ? 0 : -1;
}

int main(void) {
  static const dk_case cases[] = {
      DK_CASE(test_bad_arguments, DK_ALL),
      DK_CASE(test_waiter_and_watch_single, DK_ALL),
      DK_CASE(test_lost_and_resumed, DK_ALL),
      DK_CASE(test_semaphore_and_latch, DK_ALL),
      DK_CASE(test_free_in_callback, DK_ALL),
      DK_CASE(test_waiter_and_watch_cluster, DK_ALL),
      DK_CASE(test_sentinel_failover, DK_ALL),
  };
  int failed = DK_RUN(cases, setup, NULL);
  rt_sentinel_free(grp);
  rt_cluster_free(cl);
  rt_server_free(srv);
  return failed;
}
