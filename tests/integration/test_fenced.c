/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: the fenced lock (Redisson's RFencedLock). Every
 * acquisition, re-entries included, increments the counter
 * redisson_lock_token:{NAME} and hands back its new value; tokens only
 * ever grow, across clients and processes. The count of every
 * acquisition runs on every driver (drivers.h): a loop client's token
 * comes as its callback's value. */
#include "drivers.h"

#include <inttypes.h>

static rlock_lock *fenced(rlock_client *c, const char *name) {
  rlock_lock *l;
  OK(rlock_lock_new_fenced(&l, c, name));
  return l;
}

/* Acquire `l` as the calling thread, wait 0 or for ever, with `lease`,
 * and return the token it was given. */
static int64_t take(rlock_lock *l, int64_t wait_ms, int64_t lease_ms) {
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  int64_t token = -1;
  o.wait_ms = wait_ms;
  o.lease_ms = lease_ms;
  o.token = &token;
  OK(rlock_lock_acquire_opts(l, &o));
  return token;
}

static int64_t latest(rlock_lock *l) {
  int64_t t = -1;
  OK(rlock_lock_token(&t, l));
  return t;
}

static long long token_key(const char *key) {
  redisReply *r = rt_cmd(srv, "GET %s", key);
  long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
  freeReplyObject(r);
  return v;
}

/* `owner`'s acquisition of `l` (a blocking client's own thread, or
 * not), with its token. */
static int64_t take_as(rlock_lock *l, uint64_t owner, int64_t wait_ms,
                       int64_t lease_ms) {
  result r;
  OK(dk_acquire_x(l, owner, wait_ms, lease_ms, 1, &r));
  return r.value;
}

/* The latest token issued: rlock_lock_token (blocking), the counter on
 * the server (a loop client has no call for it). */
static int64_t latest_of(rlock_lock *l, const char *name) {
  if (!dk_loop())
    return latest(l);
  char key[256];
  snprintf(key, sizeof key, "redisson_lock_token:{%s}", name);
  long long v = token_key(key);
  return v < 0 ? 0 : v;
}

/* An acquisition that asks for no token: a blocking client's short forms
 * (the acquisition, with a lease, a try), a loop client's own. */
static void take_untokened(rlock_lock *l, uint64_t me, int form) {
  if (dk_loop())
    OK(dk_acquire(l, me, 0, form == 1 ? 10000 : 0));
  else if (form == 0)
    OK(rlock_lock_acquire(l));
  else if (form == 1)
    OK(rlock_lock_acquire_lease(l, 10000));
  else
    OK(rlock_lock_try_acquire(l, 0, 0));
}

/* Redisson's RedissonFencedLockTest, adapted: tokens 1, 2, 3, ... from
 * every way of acquiring, and the latest one readable at any time. */
static void test_tokens_count_every_acquisition(void **state) {
  (void)state;
  rlock_client *c = dk_client(rt_server_url(srv), 0, NULL, NULL);
  rlock_lock *l = fenced(c, "fenced:seq");
  uint64_t me = dk_me();
  assert_int_equal(latest_of(l, "fenced:seq"), 0); /* none issued yet */
  int64_t t0 = rt_now_ms();
  assert_int_equal(take_as(l, me, RLOCK_WAIT_FOREVER, 0), 1);
  int64_t first_ms = rt_now_ms() - t0;
  assert_int_equal(latest_of(l, "fenced:seq"), 1);
  OK(dk_release(l, me));
  assert_int_equal(take_as(l, me, RLOCK_WAIT_FOREVER, 0), 2);
  OK(dk_release(l, me));
  /* Acquisitions that ask for no token still take one. */
  for (int form = 0; form < 3; form++) {
    take_untokened(l, me, form);
    assert_int_equal(latest_of(l, "fenced:seq"), 3 + form);
    if (form < 2)
      OK(dk_release(l, me));
  }
  /* Re-entries: each a new, larger token; the count goes up with them. */
  int64_t prev = 5;
  for (int i = 2; i <= 4; i++) {
    int64_t t = take_as(l, me, 0, 0);
    assert_true(t > prev);
    assert_int_equal(t, prev + 1);
    assert_int_equal(latest_of(l, "fenced:seq"), t);
    int64_t n;
    OK(dk_hold_count(&n, l, me));
    assert_int_equal(n, i);
    prev = t;
  }
  for (int i = 0; i < 4; i++)
    OK(dk_release(l, me));
  assert_int_equal(rt_cmd_int(srv, "EXISTS fenced:seq"), 0);
  /* Releases never touch the counter. */
  assert_int_equal(latest_of(l, "fenced:seq"), prev);
  assert_int_equal(token_key("redisson_lock_token:{fenced:seq}"), prev);
  /* Any kind of lock object reads the same counter. */
  if (!dk_loop()) {
    rlock_lock *plain = fx_lock(c, "fenced:seq");
    int64_t via_plain;
    OK(rlock_lock_token(&via_plain, plain));
    assert_int_equal(via_plain, prev);
    rlock_lock_free(plain);
  }
  /* Timing: one acquisition is one round trip. */
  int64_t t1 = rt_now_ms();
  for (int i = 0; i < 100; i++) {
    assert_int_equal(take_as(l, me, 0, 0), prev + 1 + i);
    OK(dk_release(l, me));
  }
  int64_t cycles_ms = rt_now_ms() - t1;
  print_message("first fenced acquisition %lld ms; 100 acquire/release "
                "cycles %lld ms (%s)\n",
                (long long)first_ms, (long long)cycles_ms, dk_name());
  ASSERT_BETWEEN(cycles_ms, 0, 5000);
  RC(rlock_lock_token(NULL, l), RLOCK_EINVAL);
  DK_FREE((l), (c));
}

static void test_tokens_grow_across_clients_and_processes(void **state) {
  (void)state;
  rlock_client *a = fx_client(srv, 0), *b = fx_client(srv, 0);
  rlock_lock *la = fenced(a, "fenced:shared"), *lb = fenced(b, "fenced:shared");
  int64_t ta = take(la, RLOCK_WAIT_FOREVER, 0);
  assert_int_equal(ta, 1);
  /* B waits its turn; its token is larger. */
  RC(rlock_lock_try_acquire(lb, 0, 0), RLOCK_ELOCKED);
  OK(rlock_lock_release(la));
  int64_t tb = take(lb, RLOCK_WAIT_FOREVER, 0);
  assert_true(tb > ta);
  OK(rlock_lock_release(lb));
  /* A process of its own, with its own client, reports its token. */
  int fd;
  const char *args[] = {"token", rt_server_url(srv), "fenced:shared", NULL};
  pid_t pid = fx_spawn_child(args, &fd);
  char line[64];
  fx_read_line(fd, line, sizeof line, rt_scaled_ms(10000));
  close(fd);
  assert_int_equal(fx_wait_child(pid, rt_scaled_ms(10000)), 0);
  char *end;
  long long tc = strtoll(line, &end, 10);
  if (*end != '\0' || end == line)
    fail_msg("the child reported '%s', not a token", line);
  assert_true(tc > tb);
  assert_int_equal(latest(la), tc);
  int64_t after = take(la, RLOCK_WAIT_FOREVER, 0);
  assert_true(after > tc);
  assert_int_equal(after, tc + 1);
  OK(rlock_lock_release(la));
  print_message("tokens: client A %" PRId64 ", client B %" PRId64
                ", child process %lld, client A again %" PRId64 "\n",
                ta, tb, tc, after);
  FX_FREE((la, lb), (a, b));
}

static void test_held_lock_issues_no_token(void **state) {
  (void)state;
  rlock_client *a = fx_client(srv, 0), *b = fx_client(srv, 0);
  rlock_lock *la = fenced(a, "fenced:held"), *lb = fenced(b, "fenced:held");
  assert_int_equal(take(la, 0, 60000), 1);
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  int64_t token = -7;
  o.wait_ms = 0;
  o.token = &token;
  int64_t t0 = rt_now_ms();
  RC(rlock_lock_acquire_opts(lb, &o), RLOCK_ELOCKED);
  int64_t try_ms = rt_now_ms() - t0;
  ASSERT_BETWEEN(try_ms, 0, 500);
  assert_true(token == -7); /* not written */
  assert_int_equal(latest(lb), 1);
  /* A bounded wait that runs out: still no token taken. */
  o.wait_ms = 300;
  t0 = rt_now_ms();
  RC(rlock_lock_acquire_opts(lb, &o), RLOCK_ELOCKED);
  ASSERT_BETWEEN(rt_now_ms() - t0, 300, 2000);
  assert_true(token == -7);
  assert_int_equal(latest(lb), 1);
  assert_int_equal(token_key("redisson_lock_token:{fenced:held}"), 1);
  print_message("immediate try on a held fenced lock: %lld ms\n",
                (long long)try_ms);
  OK(rlock_lock_release(la));
  FX_FREE((la, lb), (a, b));
}

static void test_fenced_and_reentrant_exclude(void **state) {
  (void)state;
  rlock_client *a = fx_client(srv, 0), *b = fx_client(srv, 0);
  rlock_lock *fa = fenced(a, "fenced:mix"), *rb = fx_lock(b, "fenced:mix");
  /* The fenced lock holds: a reentrant lock of the same name waits. */
  assert_int_equal(take(fa, 0, 0), 1);
  RC(rlock_lock_try_acquire(rb, 0, 0), RLOCK_ELOCKED);
  RC(rlock_lock_try_acquire(rb, 200, 0), RLOCK_ELOCKED);
  OK(rlock_lock_release(fa));
  /* The reentrant lock holds: the fenced lock waits, takes no token. */
  OK(rlock_lock_try_acquire(rb, 0, 0));
  assert_int_equal(latest(fa), 1); /* a reentrant acquisition takes none */
  RC(rlock_lock_try_acquire(fa, 0, 0), RLOCK_ELOCKED);
  assert_int_equal(latest(fa), 1);
  /* Same layout: the hash field is B's owner field, one hold. */
  char owner[RLOCK_OWNER_MAX];
  fx_owner(b, owner);
  assert_int_equal(fx_hget(srv, "fenced:mix", owner), 1);
  /* The fenced lock's waiter wakes on the reentrant lock's release. */
  OK(rlock_lock_release(rb));
  assert_int_equal(take(fa, 5000, 0), 2);
  /* The same thread through the reentrant lock object: a re-entry, no
   * token. */
  rlock_lock *ra = fx_lock(a, "fenced:mix");
  OK(rlock_lock_try_acquire(ra, 0, 0));
  int64_t n;
  OK(rlock_lock_hold_count(&n, fa));
  assert_int_equal(n, 2);
  assert_int_equal(latest(fa), 2);
  OK(rlock_lock_release(ra));
  OK(rlock_lock_release(fa));
  assert_int_equal(rt_cmd_int(srv, "EXISTS fenced:mix"), 0);
  FX_FREE((ra, fa, rb), (a, b));
}

/* DUMP of `key`, for a byte-exact before/after comparison. */
typedef struct dump {
  char *bytes;
  size_t len;
} dump;

static dump dump_key(const char *key) {
  redisReply *r = rt_cmd(srv, "DUMP %s", key);
  assert_int_equal(r->type, REDIS_REPLY_STRING);
  dump d = {malloc(r->len), r->len};
  assert_non_null(d.bytes);
  memcpy(d.bytes, r->str, r->len);
  freeReplyObject(r);
  return d;
}

static void expect_same_dump(const char *key, dump before) {
  dump now = dump_key(key);
  assert_int_equal(now.len, before.len);
  assert_memory_equal(now.bytes, before.bytes, before.len);
  free(now.bytes);
  free(before.bytes);
}

static void expect_token_refused(rlock_lock *l, const char *name,
                                 const char *token_key_name) {
  dump before = dump_key(token_key_name);
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  int64_t token = -7;
  o.wait_ms = 0;
  o.token = &token;
  RC(rlock_lock_acquire_opts(l, &o), RLOCK_EWRONGTYPE);
  if (strstr(rlock_error_last()->message, token_key_name) == NULL)
    fail_msg("message '%s' does not name %s", rlock_error_last()->message,
             token_key_name);
  /* Also with a wait: refused at once, not waited on. */
  o.wait_ms = RLOCK_WAIT_FOREVER;
  RC(rlock_lock_acquire_opts(l, &o), RLOCK_EWRONGTYPE);
  assert_true(token == -7);
  RC(rlock_lock_acquire(l), RLOCK_EWRONGTYPE);
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
  int64_t t = 12345;
  RC(rlock_lock_token(&t, l), RLOCK_EWRONGTYPE);
  expect_same_dump(token_key_name, before);
  assert_int_equal(rt_cmd_int(srv, "PTTL %s", token_key_name), -1);
}

static void test_token_key_of_another_type(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l = fenced(c, "fenced:wt");
  const char *key = "redisson_lock_token:{fenced:wt}";
  /* A hash. */
  assert_int_equal(rt_cmd_int(srv, "HSET %s counter 3", key), 1);
  expect_token_refused(l, "fenced:wt", key);
  /* A string that is not a number. */
  freeReplyObject(rt_cmd(srv, "DEL %s", key));
  rt_cmd_ok(srv, "SET %s not-a-number", key);
  expect_token_refused(l, "fenced:wt", key);
  /* Strings INCR refuses, though strtoll would read a number in them. */
  const char *not_counters[] = {
      " 5", "+5", "007", "5 ", "-0", "", "99999999999999999999"};
  for (size_t i = 0; i < sizeof not_counters / sizeof *not_counters; i++) {
    rt_cmd_ok(srv, "SET %s %s", key, not_counters[i]);
    expect_token_refused(l, "fenced:wt", key);
  }
  /* A counter at its maximum: readable, but no token is left to issue. */
  rt_cmd_ok(srv, "SET %s 9223372036854775807", key);
  int64_t top;
  OK(rlock_lock_token(&top, l));
  assert_true(top == INT64_MAX);
  RC(rlock_lock_try_acquire(l, 0, 0), RLOCK_EWRONGTYPE);
  assert_int_equal(rt_cmd_int(srv, "EXISTS fenced:wt"), 0);
  OK(rlock_lock_token(&top, l));
  assert_true(top == INT64_MAX);
  /* A lock key that is not a lock: refused before a token is taken. */
  freeReplyObject(rt_cmd(srv, "DEL %s", key));
  rt_cmd_ok(srv, "SET fenced:wt precious");
  RC(rlock_lock_try_acquire(l, 0, 0), RLOCK_EWRONGTYPE);
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", key), 0);
  assert_int_equal(rt_cmd_int(srv, "PTTL fenced:wt"), -1);
  freeReplyObject(rt_cmd(srv, "DEL fenced:wt"));
  /* A re-entry refused the same way leaves the hold as it was. */
  freeReplyObject(rt_cmd(srv, "DEL %s", key));
  assert_int_equal(take(l, 0, 0), 1);
  rt_cmd_ok(srv, "SET %s nope", key);
  RC(rlock_lock_try_acquire(l, 0, 0), RLOCK_EWRONGTYPE);
  int64_t n;
  OK(rlock_lock_hold_count(&n, l));
  assert_int_equal(n, 1);
  OK(rlock_lock_release(l));
  assert_int_equal(rt_cmd_int(srv, "EXISTS fenced:wt"), 0);
  /* A counter again: tokens go on from it. */
  rt_cmd_ok(srv, "SET %s 41", key);
  assert_int_equal(take(l, 0, 0), 42);
  OK(rlock_lock_release(l));
  freeReplyObject(rt_cmd(srv, "DEL %s", key));
  FX_FREE((l), (c));
}

static void test_token_key_layout(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  /* names.c: "redisson_lock_token:{NAME}", or, for a name that carries a
   * hash tag, "redisson_lock_token:NAME" (the name's own tag decides the
   * slot). */
  rlock_lock *l = fenced(c, "{t}x");
  assert_int_equal(take(l, 0, 0), 1);
  assert_int_equal(rt_cmd_int(srv, "EXISTS {t}x"), 1);
  assert_int_equal(token_key("redisson_lock_token:{t}x"), 1);
  assert_int_equal(rt_cmd_int(srv, "EXISTS redisson_lock_token:{{t}x}"), 0);
  /* A plain counter with no expiry, while held and after release. */
  redisReply *r = rt_cmd(srv, "TYPE redisson_lock_token:{t}x");
  assert_string_equal(r->str, "string");
  freeReplyObject(r);
  assert_int_equal(rt_cmd_int(srv, "PTTL redisson_lock_token:{t}x"), -1);
  ASSERT_RANGE(rt_cmd_int(srv, "PTTL {t}x"), 29000, 30000);
  OK(rlock_lock_release(l));
  assert_int_equal(rt_cmd_int(srv, "EXISTS {t}x"), 0);
  assert_int_equal(rt_cmd_int(srv, "PTTL redisson_lock_token:{t}x"), -1);
  assert_int_equal(token_key("redisson_lock_token:{t}x"), 1);
  rlock_lock_free(l);

  /* A name without a tag: the name braced. */
  l = fenced(c, "fenced:layout");
  assert_int_equal(take(l, 0, 7000), 1);
  assert_int_equal(token_key("redisson_lock_token:{fenced:layout}"), 1);
  assert_int_equal(rt_cmd_int(srv, "PTTL redisson_lock_token:{fenced:layout}"),
                   -1);
  ASSERT_RANGE(rt_cmd_int(srv, "PTTL fenced:layout"), 6000, 7000);
  char owner[RLOCK_OWNER_MAX];
  fx_owner(c, owner);
  assert_int_equal(fx_hget(srv, "fenced:layout", owner), 1);
  OK(rlock_lock_release(l));
  FX_FREE((l), (c));
}

/* Child role "token URL NAME": acquire NAME's fenced lock with a client
 * of its own, print the token, release. */
static int child_main(int argc, char **argv) {
  if (argc != 3 || strcmp(argv[0], "token") != 0)
    return 64;
  rlock_client *c = NULL;
  rlock_lock *l = NULL;
  int rc = fx_child_client(&c, argv[1]);
  if (rc == RLOCK_OK)
    rc = rlock_lock_new_fenced(&l, c, argv[2]);
  int64_t token = -1;
  if (rc == RLOCK_OK) {
    rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
    o.wait_ms = 10000;
    o.token = &token;
    rc = rlock_lock_acquire_opts(l, &o);
  }
  if (rc == RLOCK_OK) {
    printf("%" PRId64 "\n", token);
    fflush(stdout);
    rc = rlock_lock_release(l);
  }
  if (rc != RLOCK_OK)
    fprintf(stderr, "child: %s\n", rlock_error_last()->message);
  FX_FREE((l), (c));
  return rc == RLOCK_OK ? 0 : 1;
}

static const dk_case cases[] = {
    DK_CASE(test_tokens_count_every_acquisition, DK_ALL),
    DK_CASE(test_tokens_grow_across_clients_and_processes, DK_BLOCK),
    DK_CASE(test_held_lock_issues_no_token, DK_BLOCK),
    DK_CASE(test_fenced_and_reentrant_exclude, DK_BLOCK),
    DK_CASE(test_token_key_of_another_type, DK_BLOCK),
    DK_CASE(test_token_key_layout, DK_BLOCK),
};

DK_MAIN(cases, child_main)
