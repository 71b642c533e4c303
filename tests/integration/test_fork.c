/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: a client belongs to the process that created it.
 *  - In a fork()ed child every operation on an inherited client fails at
 *    once with RLOCK_ECLOSED and leaves the parent's connections alone; the
 *    child's own new client works.
 *  - rlock_client_free() from the client's own lost-lock callback (its
 *    background thread) is refused with RLOCK_EDEADLK instead of the
 *    thread joining itself.
 *
 * Unlike the other suites' children (fx_spawn_child re-executes the test
 * binary), the child here must NOT exec before using the inherited client:
 * inheriting it is the point. It only runs rlock code and plain system
 * calls, never cmocka's assertions (their longjmp would land in the
 * parent's copy of the test runner), reports one line per operation
 * through a pipe, and leaves with _exit(). (Under ThreadSanitizer only, it
 * execs itself before creating its own client; see FORK_TEST_TSAN.) */
#include "fixture.h"

#include <stdatomic.h>

/* ---- helpers ------------------------------------------------------------ */

/* One command connection at most per client: any new connection the
 * server sees from it afterwards means it reconnected. */
static int registry_off; /* client_pool1 makes a client without one */

static rlock_client *client_pool1(const char *url, int64_t watchdog,
                                  rlock_lost_fn lost, void *ud) {
  rlock_config *cfg = fx_config(url, watchdog, lost, ud);
  rlock_client *c;
  OK(rlock_config_set_pool_size(cfg, 1));
  if (registry_off)
    OK(rlock_config_set_registry_period(cfg, 0));
  OK(rlock_client_new(&c, cfg));
  rlock_config_free(cfg);
  return c;
}

#define MAX_IDS 64

/* The ids of the server's client connections, but for the harness's own
 * (the one running CLIENT LIST), sorted. */
typedef struct idset {
  long long id[MAX_IDS];
  int n;
} idset;

static int cmp_ll(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return x < y ? -1 : x > y;
}

static void client_ids(idset *out) {
  redisReply *r = rt_cmd(srv, "CLIENT LIST");
  assert_int_equal(r->type, REDIS_REPLY_STRING);
  out->n = 0;
  for (const char *line = r->str; *line != '\0';) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char buf[1024];
    snprintf(buf, sizeof buf, "%.*s", (int)len, line);
    if (strstr(buf, "cmd=client|list") == NULL && strncmp(buf, "id=", 3) == 0) {
      if (out->n == MAX_IDS)
        fail_msg("more than %d client connections", MAX_IDS);
      out->id[out->n++] = atoll(buf + 3);
    }
    line += len;
    if (*line == '\n')
      line++;
  }
  freeReplyObject(r);
  qsort(out->id, (size_t)out->n, sizeof out->id[0], cmp_ll);
}

static int idset_equal(const idset *a, const idset *b) {
  if (a->n != b->n)
    return 0;
  for (int i = 0; i < a->n; i++)
    if (a->id[i] != b->id[i])
      return 0;
  return 1;
}

static void idset_str(const idset *s, char *buf, size_t cap) {
  size_t at = 0;
  buf[0] = '\0';
  for (int i = 0; i < s->n && at < cap; i++)
    at +=
        (size_t)snprintf(buf + at, cap - at, "%s%lld", i ? "," : "", s->id[i]);
}

static bool pred_same_clients(void *arg, char *why, size_t cap) {
  const idset *want = arg;
  idset now;
  client_ids(&now);
  if (idset_equal(&now, want))
    return true;
  char a[256], b[256];
  idset_str(&now, a, sizeof a);
  idset_str(want, b, sizeof b);
  snprintf(why, cap, "connections [%s], want [%s]", a, b);
  return false;
}

static long long connections_received(void) {
  char v[64];
  if (!rt_server_info_field(srv, "stats", "total_connections_received", v,
                            sizeof v))
    fail_msg("INFO stats has no total_connections_received");
  return atoll(v);
}

/* PTTL rose again after having fallen: a renewal happened. */
typedef struct pttl_watch {
  const char *key;
  long long min;
} pttl_watch;

static bool pred_renewed(void *arg, char *why, size_t cap) {
  pttl_watch *w = arg;
  long long p = rt_cmd_int(srv, "PTTL %s", w->key);
  if (p <= 0)
    fail_msg("'%s' has PTTL %lld: the lock is gone", w->key, p);
  if (p > w->min + 100)
    return true;
  if (p < w->min)
    w->min = p;
  snprintf(why, cap, "PTTL %lld, lowest seen %lld", p, w->min);
  return false;
}

/* ---- the child ---------------------------------------------------------- */

/* Kept in static storage so that the child's copy stays reachable (the
 * child deliberately cannot free it; valgrind checks children for leaks). */
static rlock_client *inherited;
static rlock_lock *inherited_held, *inherited_other, *inherited_contended;

/* "NAME RC MS MESSAGE\n" */
static void report(int fd, const char *name, int rc, int64_t t0_us) {
  char line[768];
  int n = snprintf(line, sizeof line, "%s %d %lld %s\n", name, rc,
                   (long long)((rt_now_us() - t0_us) / 1000),
                   rc == RLOCK_OK ? "-" : rlock_error_last()->message);
  if (n >= (int)sizeof line) {
    n = (int)sizeof line - 1;
    line[n - 1] = '\n';
  }
  ssize_t w = write(fd, line, (size_t)n);
  (void)w;
}

#define CHILD_OP(fd, name, expr)                                               \
  do {                                                                         \
    int64_t t0_ = rt_now_us();                                                 \
    int rc_ = (expr);                                                          \
    report(fd, name, rc_, t0_);                                                \
  } while (0)

static void child_inherited(int fd) {
  int locked = -1;
  rlock_lock_info *info = NULL;
  int64_t rtt;
  /* The inherited client: every operation fails at once. */
  CHILD_OP(fd, "try_acquire",
           rlock_lock_try_acquire(inherited_other, 0, RLOCK_LEASE_WATCHDOG));
  CHILD_OP(
      fd, "try_acquire_wait",
      rlock_lock_try_acquire(inherited_contended, 5000, RLOCK_LEASE_WATCHDOG));
  CHILD_OP(fd, "check", rlock_lock_check(inherited_held));
  CHILD_OP(fd, "release", rlock_lock_release(inherited_held));
  CHILD_OP(fd, "is_locked", rlock_lock_is_locked(&locked, inherited_held));
  CHILD_OP(fd, "inspect", rlock_lock_inspect(&info, inherited_held));
  CHILD_OP(fd, "ping", rlock_client_ping(inherited, &rtt));
  rlock_lock_free(inherited_held);
  rlock_lock_free(inherited_other);
  rlock_lock_free(inherited_contended);
  inherited_held = inherited_other = inherited_contended = NULL;
  CHILD_OP(fd, "free", rlock_client_free(inherited));
}

/* The child's own client works. */
static void child_own(int fd, const char *url) {
  rlock_client *own = NULL;
  rlock_lock *l = NULL;
  int rc = fx_child_client(&own, url);
  CHILD_OP(fd, "own_new", rc);
  if (rc == RLOCK_OK) {
    CHILD_OP(fd, "own_lock_new", rlock_lock_new(&l, own, "fork:child-own"));
    CHILD_OP(fd, "own_acquire",
             rlock_lock_try_acquire(l, 0, RLOCK_LEASE_WATCHDOG));
    int locked = -1;
    rc = rlock_lock_is_locked(&locked, l);
    CHILD_OP(fd, "own_is_locked", rc == RLOCK_OK && locked != 1 ? -100 : rc);
    CHILD_OP(fd, "own_release", rlock_lock_release(l));
    rlock_lock_free(l);
    CHILD_OP(fd, "own_free", rlock_client_free(own));
  }
  ssize_t w = write(fd, "end\n", 4);
  (void)w;
}

/* ThreadSanitizer cannot follow threads created in the child of a
 * multi-threaded fork (glibc hands the child's new thread a stack, hence a
 * pthread_t, of a parent thread that TSan still counts as alive: "dup
 * thread with used id"). Under TSan the child therefore execs itself
 * (same process, same pipe) before making its own client. */
#if defined(__SANITIZE_THREAD__)
#define FORK_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FORK_TEST_TSAN 1
#endif
#endif

static const char *argv0;

static void child_main(int fd) {
  child_inherited(fd);
#ifdef FORK_TEST_TSAN
  char fdarg[16];
  snprintf(fdarg, sizeof fdarg, "%d", fd);
  const char *argv[] = {argv0, "--child-own", rt_server_url(srv), fdarg, NULL};
  execv(argv0, (char *const *)argv);
  _exit(127);
#else
  child_own(fd, rt_server_url(srv));
#endif
}

/* ---- the parent's waiter ------------------------------------------------ */

typedef struct waiter {
  rlock_lock *lock; /* made by the test's thread: reachable in the child */
  pthread_t thread;
  atomic_int rc;
  atomic_int done;
} waiter;

static void *waiter_main(void *arg) {
  waiter *w = arg;
  int rc = rlock_lock_try_acquire(w->lock, 60000, RLOCK_LEASE_WATCHDOG);
  if (rc == RLOCK_OK)
    rc = rlock_lock_release(w->lock);
  atomic_store(&w->rc, rc);
  atomic_store(&w->done, 1);
  return NULL;
}

static bool pred_waiter_done(void *arg, char *why, size_t cap) {
  waiter *w = arg;
  snprintf(why, cap, "the waiter is still waiting");
  return atomic_load(&w->done);
}

/* ---- tests -------------------------------------------------------------- */

static const char *const inherited_ops[] = {"try_acquire", "try_acquire_wait",
                                            "release",     "is_locked",
                                            "inspect",     "ping",
                                            "free",        "check",
                                            NULL};

static int is_inherited_op(const char *name) {
  for (int i = 0; inherited_ops[i] != NULL; i++)
    if (strcmp(inherited_ops[i], name) == 0)
      return 1;
  return 0;
}

static void test_child_refused_parent_undisturbed(void **state) {
  (void)state;
  char owner[RLOCK_OWNER_MAX];
  /* The parent: a watchdog hold (renewed every second) ... */
  inherited = client_pool1(rt_server_url(srv), 3000, NULL, NULL);
  inherited_held = fx_lock(inherited, "fork:held");
  inherited_other = fx_lock(inherited, "fork:other");
  inherited_contended = fx_lock(inherited, "fork:contended");
  OK(rlock_lock_acquire(inherited_held));
  fx_owner(inherited, owner);
  /* ... and a thread waiting, through the subscriber connection, for a
   * lock another client holds. */
  /* Static: reachable in the child too, which leaves them unfreed (an
   * optimised build may keep locals only in registers). */
  static rlock_client *other;
  static rlock_lock *contended;
  /* Its registry off: its write would open its loop's connection at a
   * time of its own (`inherited`'s went on its loop's, counted below). */
  registry_off = 1;
  other = client_pool1(rt_server_url(srv), 0, NULL, NULL);
  registry_off = 0;
  contended = fx_lock(other, "fork:contended");
  OK(rlock_lock_acquire(contended));
  waiter w = {.lock = fx_lock(inherited, "fork:contended")};
  atomic_init(&w.rc, 1);
  atomic_init(&w.done, 0);
  assert_int_equal(pthread_create(&w.thread, NULL, waiter_main, &w), 0);
  fx_wait_subscribers(srv, "redisson_lock__channel:{fork:contended}", 1,
                      "the waiter's subscription");
  OK(rlock_client_ping(inherited, NULL));
  /* A renewal first: it goes on the connection of the background thread's
   * loop, which is then one of the parent's too. */
  pttl_watch pw0 = {.key = "fork:held", .min = 1LL << 40};
  rt_wait_until(pred_renewed, &pw0, rt_scaled_ms(5000), "a first renewal");
  idset before;
  /* pool + subscriber + loop (renewals, registry) of `inherited`, pool
   * of `other` */
  client_ids(&before);
  assert_int_equal(before.n, 4);

  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t parent = getpid();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    rt_forked_child();
    close(fds[0]);
    child_main(fds[1]);
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);

  char expect[64];
  snprintf(expect, sizeof expect, "created in process %ld;", (long)parent);
  int seen = 0;
  for (;;) {
    char line[1024], name[64], msg[800];
    int rc;
    long long ms;
    fx_read_line(fds[0], line, sizeof line, rt_scaled_ms(20000));
    if (strcmp(line, "end") == 0)
      break;
    msg[0] = '\0';
    if (sscanf(line, "%63s %d %lld %799[^\n]", name, &rc, &ms, msg) < 3)
      fail_msg("bad line from the child: '%s'", line);
    print_message("child: %s\n", line);
    if (is_inherited_op(name)) {
      seen++;
      if (rc != RLOCK_ECLOSED)
        fail_msg("child: %s on the inherited client returned %d (%s), "
                 "expected RLOCK_ECLOSED",
                 name, rc, msg);
      if (strstr(msg, expect) == NULL || strstr(msg, "forked child") == NULL)
        fail_msg("child: %s: unclear message '%s'", name, msg);
      ASSERT_BETWEEN(ms, 0, 1000);
    } else if (rc != RLOCK_OK) {
      fail_msg("child: %s on its own client returned %d (%s)", name, rc, msg);
    }
  }
  close(fds[0]);
  assert_int_equal(seen, 8);
  assert_int_equal(fx_wait_child(pid, rt_scaled_ms(10000)), 0);
  /* The lock the child took with its own client is free again. */
  assert_int_equal(rt_cmd_int(srv, "EXISTS fork:child-own"), 0);

  /* The parent's connections are those it had: the child's are gone, the
   * child closed none of the parent's (a connection the server saw closed
   * would be missing here, and the parent would have had to reconnect). */
  rt_wait_until(pred_same_clients, &before, rt_scaled_ms(5000),
                "the child's connections closing");
  long long conns = connections_received();
  /* The hold is still there and renewed after the child left. */
  assert_int_equal(fx_hget(srv, "fork:held", owner), 1);
  pttl_watch pw = {.key = "fork:held", .min = 1LL << 40};
  rt_wait_until(pred_renewed, &pw, rt_scaled_ms(5000), "a renewal");
  OK(rlock_lock_check(inherited_held));
  OK(rlock_client_ping(inherited, NULL));
  /* The waiter is woken by the unlock message, on the parent's subscriber
   * connection, and takes the lock. */
  assert_int_equal(atomic_load(&w.done), 0);
  OK(rlock_lock_release(contended));
  rt_wait_until(pred_waiter_done, &w, rt_scaled_ms(5000), "the waiter");
  pthread_join(w.thread, NULL);
  OK(atomic_load(&w.rc));
  /* All of it on the connections the parent had before the fork. */
  assert_int_equal(connections_received(), conns);
  idset after;
  client_ids(&after);
  assert_true(idset_equal(&after, &before));

  OK(rlock_lock_release(inherited_held));
  rlock_lock_free(w.lock);
  rlock_lock_free(inherited_held);
  rlock_lock_free(inherited_other);
  rlock_lock_free(inherited_contended);
  rlock_lock_free(contended);
  OK(rlock_client_free(inherited));
  OK(rlock_client_free(other));
  inherited = NULL;
}

/* A lost-lock callback that frees its own client. */
typedef struct lost_ctx {
  _Atomic(rlock_client *) client;
  atomic_int ran;
  atomic_int rc;
  atomic_int code;
  char message[512]; /* written before `ran` is set */
} lost_ctx;

static void free_in_callback(const char *name, const char *owner, void *ud) {
  (void)name;
  (void)owner;
  lost_ctx *x = ud;
  if (atomic_load(&x->ran))
    return;
  int rc = rlock_client_free(atomic_load(&x->client));
  snprintf(x->message, sizeof x->message, "%s", rlock_error_last()->message);
  atomic_store(&x->code, rlock_error_last()->code);
  atomic_store(&x->rc, rc);
  atomic_store(&x->ran, 1);
}

static bool pred_callback_ran(void *arg, char *why, size_t cap) {
  lost_ctx *x = arg;
  snprintf(why, cap, "the lost-lock callback has not run");
  return atomic_load(&x->ran);
}

static void test_free_from_lost_callback(void **state) {
  (void)state;
  lost_ctx x;
  atomic_init(&x.client, NULL);
  atomic_init(&x.ran, 0);
  atomic_init(&x.rc, 1);
  atomic_init(&x.code, 1);
  x.message[0] = '\0';
  rlock_client *c = client_pool1(rt_server_url(srv), 300, free_in_callback, &x);
  atomic_store(&x.client, c);
  rlock_lock *l = fx_lock(c, "fork:lost");
  OK(rlock_lock_acquire(l));
  /* Lost: deleted behind the watchdog's back; its next renewal finds it
   * gone (within 100 ms) and calls back. */
  assert_int_equal(rt_cmd_int(srv, "DEL fork:lost"), 1);
  rt_wait_until(pred_callback_ran, &x, rt_scaled_ms(5000),
                "the lost-lock callback");
  assert_int_equal(atomic_load(&x.rc), RLOCK_EDEADLK);
  assert_int_equal(atomic_load(&x.code), RLOCK_EDEADLK);
  if (strstr(x.message, "own background thread") == NULL ||
      strstr(x.message, "another thread") == NULL)
    fail_msg("unclear message: '%s'", x.message);
  /* Nothing was torn down: the client still works ... */
  RC(rlock_lock_release(l), RLOCK_ELOST);
  OK(rlock_lock_try_acquire(l, 0, 5000));
  OK(rlock_lock_release(l));
  OK(rlock_client_ping(c, NULL));
  rlock_lock_free(l);
  /* ... and frees from another thread. */
  OK(rlock_client_free(c));
  OK(rlock_client_free(NULL));
}

int main(int argc, char **argv) {
  argv0 = argv[0];
  if (argc == 4 && strcmp(argv[1], "--child-own") == 0) {
    child_own(atoi(argv[3]), argv[2]);
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_child_refused_parent_undisturbed),
      cmocka_unit_test(test_free_from_lost_callback),
  };
  return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
