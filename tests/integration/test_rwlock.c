/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: the read-write lock — overlapping readers, exclusive
 * writers, downgrade, the refused upgrade, crashed readers, wake-ups,
 * Redisson's layout, and a multi-process history checked for overlaps. */
#include "fixture.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>

#define WD 600

static rlock_lock *rd(rlock_client *c, const char *name) {
  rlock_lock *l;
  OK(rlock_lock_new_read(&l, c, name));
  return l;
}

static rlock_lock *wr(rlock_client *c, const char *name) {
  rlock_lock *l;
  OK(rlock_lock_new_write(&l, c, name));
  return l;
}

typedef struct job {
  rlock_client *c;
  const char *name;
  int write;
  int64_t wait_ms;
  atomic_int *gate; /* hold the lock until the test sets it (NULL: don't) */
  int rc;
  _Atomic int64_t got_at;
  _Atomic int64_t done_at;
} job;

static void *job_main(void *arg) {
  job *j = arg;
  rlock_lock *l;
  j->rc = j->write ? rlock_lock_new_write(&l, j->c, j->name)
                   : rlock_lock_new_read(&l, j->c, j->name);
  if (j->rc != RLOCK_OK)
    return NULL;
  j->rc = rlock_lock_try_acquire(l, j->wait_ms, 0);
  if (j->rc == RLOCK_OK) {
    atomic_store(&j->got_at, rt_now_ms());
    fx_wait_gate(j->gate);
    atomic_store(&j->done_at, rt_now_ms());
    j->rc = rlock_lock_release(l);
  }
  rlock_lock_free(l);
  return NULL;
}

/* Jobs the test watches: `n` of them at `j`. */
typedef struct jobs {
  job *j;
  int n;
} jobs;

/* Whether every one of them holds its lock. */
static bool pred_all_got(void *arg, char *why, size_t cap) {
  const jobs *js = arg;
  int got = 0;
  for (int i = 0; i < js->n; i++)
    got += atomic_load(&js->j[i].got_at) != 0;
  snprintf(why, cap, "%d of %d hold the lock", got, js->n);
  return got == js->n;
}

static void test_readers_overlap(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  atomic_int gate = 0;
  job j[3];
  pthread_t t[3];
  for (int i = 0; i < 3; i++) {
    j[i] = (job){.c = c, .name = "rw:overlap", .wait_ms = 5000, .gate = &gate};
    pthread_create(&t[i], NULL, job_main, &j[i]);
  }
  /* Each reader holds on until all three are in: only readers that share
   * the lock get there (a writer-like exclusion would time out here). */
  jobs all = {j, 3};
  rt_wait_until(pred_all_got, &all, rt_scaled_ms(5000), "three readers");
  atomic_store(&gate, 1);
  for (int i = 0; i < 3; i++) {
    pthread_join(t[i], NULL);
    OK(j[i].rc);
  }
  int64_t last_got = 0, first_done = INT64_MAX;
  for (int i = 0; i < 3; i++) {
    last_got = j[i].got_at > last_got ? j[i].got_at : last_got;
    first_done = j[i].done_at < first_done ? j[i].done_at : first_done;
  }
  /* All three held it at once: the gate opened only after the last got
   * it, so none was done before then (the same millisecond counts). */
  assert_true(last_got <= first_done);
  assert_int_equal(rt_cmd_int(srv, "EXISTS rw:overlap"), 0);
  rlock_client_free(c);
}

static void test_writer_waits_for_readers_and_excludes(void **state) {
  (void)state;
  rlock_client *a = fx_client(srv, 0), *b = fx_client(srv, 0);
  rlock_lock *r1 = rd(a, "rw:excl"), *r2 = rd(b, "rw:excl");
  OK(rlock_lock_acquire_lease(r1, 60000));
  OK(rlock_lock_acquire_lease(r2, 60000));
  atomic_int gate = 0;
  job w = {
      .c = a, .name = "rw:excl", .write = 1, .wait_ms = 10000, .gate = &gate};
  pthread_t t;
  pthread_create(&t, NULL, job_main, &w);
  fx_wait_subscribers(srv, "redisson_rwlock:{rw:excl}", 1,
                      "the writer's subscription");
  OK(rlock_lock_release(r1));
  /* Time is the point: no message is due while r2 reads, and a writer let
   * in anyway would be in within a few ms. */
  rt_sleep_ms(300);
  assert_int_equal(atomic_load(&w.got_at), 0); /* one reader is left */
  int64_t released = rt_now_ms();
  OK(rlock_lock_release(r2));
  jobs writer = {&w, 1};
  rt_wait_until(pred_all_got, &writer, rt_scaled_ms(3000), "the writer");
  ASSERT_BETWEEN(atomic_load(&w.got_at) - released, 0, 300);
  RC(rlock_lock_try_acquire(r2, 0, 0), RLOCK_ELOCKED); /* writer excludes */
  atomic_store(&gate, 1); /* the writer lets go; r2 waits for that */
  int64_t t0 = rt_now_ms();
  OK(rlock_lock_try_acquire(r2, 5000, 0)); /* after the writer leaves */
  ASSERT_BETWEEN(rt_now_ms() - atomic_load(&w.done_at), 0, 300);
  assert_true(rt_now_ms() >= t0);
  pthread_join(t, NULL);
  OK(w.rc);
  OK(rlock_lock_release(r2));
  FX_FREE((r1, r2), (a, b));
}

static void test_downgrade_keeps_read_holds(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0), *o = fx_client(srv, 0);
  rlock_lock *w = wr(c, "rw:down"), *r = rd(c, "rw:down");
  rlock_lock *other = rd(o, "rw:down");
  OK(rlock_lock_acquire(w));
  OK(rlock_lock_acquire(r)); /* the writer may read too */
  int flag;
  OK(rlock_lock_is_locked(&flag, w));
  assert_int_equal(flag, 1);
  OK(rlock_lock_is_locked(&flag, r));
  assert_int_equal(flag, 1);
  job j = {.c = o, .name = "rw:down", .wait_ms = 5000};
  pthread_t t;
  pthread_create(&t, NULL, job_main, &j);
  fx_wait_subscribers(srv, "redisson_rwlock:{rw:down}", 1,
                      "the reader's subscription");
  assert_int_equal(atomic_load(&j.got_at), 0);
  int64_t t0 = rt_now_ms();
  OK(rlock_lock_release(w)); /* downgrade: the read hold stays */
  redisReply *m = rt_cmd(srv, "HGET rw:down mode");
  assert_string_equal(m->str, "read");
  freeReplyObject(m);
  OK(rlock_lock_is_held(&flag, r));
  assert_int_equal(flag, 1);
  OK(rlock_lock_is_locked(&flag, w));
  assert_int_equal(flag, 0);
  pthread_join(t, NULL); /* the other reader got in at once */
  OK(j.rc);
  ASSERT_BETWEEN(atomic_load(&j.got_at) - t0, 0, 300);
  OK(rlock_lock_release(r));
  assert_int_equal(rt_cmd_int(srv, "EXISTS rw:down"), 0);
  FX_FREE((w, r, other), (c, o));
}

static void test_upgrade_is_refused(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *w = wr(c, "rw:upgrade"), *r = rd(c, "rw:upgrade");
  OK(rlock_lock_acquire(r));
  int64_t t0 = rt_now_ms();
  RC(rlock_lock_try_acquire(w, 5000, 0), RLOCK_EDEADLK);
  ASSERT_BETWEEN(rt_now_ms() - t0, 0, 500);
  assert_non_null(strstr(rlock_error_last()->message, "read holds"));
  RC(rlock_lock_acquire(w), RLOCK_EDEADLK);
  OK(rlock_lock_release(r));
  OK(rlock_lock_try_acquire(w, 0, 0)); /* fine once the reads are gone */
  OK(rlock_lock_release(w));
  FX_FREE((w, r), (c));
}

static void test_layout_matches_redisson(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  char owner[RLOCK_OWNER_MAX];
  fx_owner(c, owner);
  const char *names[2] = {"rw:layout", "{t}:rwlayout"};
  const char *bases[2] = {"{rw:layout}", "{t}:rwlayout"};
  for (int k = 0; k < 2; k++) {
    rlock_lock *r = rd(c, names[k]), *w = wr(c, names[k]);
    OK(rlock_lock_acquire_lease(r, 20000));
    OK(rlock_lock_acquire_lease(r, 10000));
    redisReply *h = rt_cmd(srv, "HGET %s mode", names[k]);
    assert_string_equal(h->str, "read");
    freeReplyObject(h);
    assert_int_equal(rt_cmd_int(srv, "HLEN %s", names[k]), 2);
    assert_int_equal(fx_hget(srv, names[k], owner), 2);
    h = rt_cmd(srv, "GET %s:%s:rwlock_timeout:1", bases[k], owner);
    assert_string_equal(h->str, "1");
    freeReplyObject(h);
    ASSERT_RANGE(
        rt_cmd_int(srv, "PTTL %s:%s:rwlock_timeout:1", bases[k], owner), 19000,
        20000);
    ASSERT_RANGE(
        rt_cmd_int(srv, "PTTL %s:%s:rwlock_timeout:2", bases[k], owner), 9000,
        10000);
    ASSERT_RANGE(rt_cmd_int(srv, "PTTL %s", names[k]), 19000, 20000);
    OK(rlock_lock_release(r)); /* deletes hold 2's key, TTL from hold 1 */
    assert_int_equal(
        rt_cmd_int(srv, "EXISTS %s:%s:rwlock_timeout:2", bases[k], owner), 0);
    ASSERT_RANGE(rt_cmd_int(srv, "PTTL %s", names[k]), 18000, 20000);
    OK(rlock_lock_release(r));
    assert_int_equal(rt_cmd_int(srv, "EXISTS %s", names[k]), 0);
    OK(rlock_lock_acquire_lease(w, 10000));
    OK(rlock_lock_acquire_lease(w, 10000)); /* re-entry adds the lease */
    h = rt_cmd(srv, "HGET %s mode", names[k]);
    assert_string_equal(h->str, "write");
    freeReplyObject(h);
    char wfield[RLOCK_OWNER_MAX + 8];
    snprintf(wfield, sizeof wfield, "%s:write", owner);
    assert_int_equal(fx_hget(srv, names[k], wfield), 2);
    ASSERT_RANGE(rt_cmd_int(srv, "PTTL %s", names[k]), 19000, 20000);
    OK(rlock_lock_release(w));
    OK(rlock_lock_release(w));
    assert_int_equal(rt_cmd_int(srv, "EXISTS %s", names[k]), 0);
    rlock_lock_free(r);
    rlock_lock_free(w);
  }
  rlock_client_free(c);
}

static void test_messages_wake_readers_and_writers(void **state) {
  (void)state;
  rlock_client *a = fx_client(srv, 0), *b = fx_client(srv, 0);
  rlock_lock *w = wr(a, "rw:wake");
  OK(rlock_lock_acquire_lease(w, 60000));
  freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
  atomic_int gate = 0;
  job j[3];
  pthread_t t[3];
  for (int i = 0; i < 3; i++) {
    j[i] = (job){.c = b, .name = "rw:wake", .wait_ms = 20000, .gate = &gate};
    pthread_create(&t[i], NULL, job_main, &j[i]);
  }
  fx_wait_evalsha(srv, 3 * 2, "every reader's attempt once subscribed");
  int64_t t0 = rt_now_ms();
  OK(rlock_lock_release(w)); /* "1": every waiting reader */
  jobs readers = {j, 3};
  rt_wait_until(pred_all_got, &readers, rt_scaled_ms(5000), "three readers");
  atomic_store(&gate, 1);
  for (int i = 0; i < 3; i++) {
    pthread_join(t[i], NULL);
    OK(j[i].rc);
    ASSERT_BETWEEN(atomic_load(&j[i].got_at) - t0, 0, 300);
  }
  /* A writer waiting on a reader with a long lease: woken by "0". */
  rlock_lock *r = rd(a, "rw:wake");
  OK(rlock_lock_acquire_lease(r, 60000));
  fx_wait_subscribers(srv, "redisson_rwlock:{rw:wake}", 0,
                      "the readers' leaving");
  job wj = {.c = b, .name = "rw:wake", .write = 1, .wait_ms = 20000};
  pthread_t wt;
  pthread_create(&wt, NULL, job_main, &wj);
  fx_wait_subscribers(srv, "redisson_rwlock:{rw:wake}", 1,
                      "the writer's subscription");
  t0 = rt_now_ms();
  OK(rlock_lock_release(r));
  pthread_join(wt, NULL);
  OK(wj.rc);
  ASSERT_BETWEEN(atomic_load(&wj.got_at) - t0, 0, 300);
  FX_FREE((w, r), (a, b));
}

static void test_read_release_keeps_write_renewal(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, WD);
  rlock_lock *w = wr(c, "rw:renew"), *r = rd(c, "rw:renew");
  OK(rlock_lock_acquire(w));
  OK(rlock_lock_acquire(r));
  OK(rlock_lock_release(r)); /* Redisson stops the write renewal here */
  /* Time is the point: four leases, which only renewal outlasts. */
  rt_sleep_ms(4 * WD);
  OK(rlock_lock_check(w));
  ASSERT_RANGE(rt_cmd_int(srv, "PTTL rw:renew"), 1, WD);
  /* Read holds are renewed too, timeout keys included. */
  OK(rlock_lock_acquire(r));
  rt_sleep_ms(4 * WD);
  OK(rlock_lock_check(r));
  char owner[RLOCK_OWNER_MAX];
  fx_owner(c, owner);
  ASSERT_RANGE(rt_cmd_int(srv, "PTTL {rw:renew}:%s:rwlock_timeout:1", owner), 1,
               WD);
  OK(rlock_lock_release(r));
  OK(rlock_lock_release(w));
  assert_int_equal(rt_cmd_int(srv, "EXISTS rw:renew"), 0);
  FX_FREE((w, r), (c));
}

static void test_crashed_reader_expires_while_others_renew(void **state) {
  (void)state;
  int out;
  const char *args[] = {"read-and-hang", rt_server_url(srv), "rw:zombie", NULL};
  pid_t pid = fx_spawn_child(args, &out);
  char b;
  assert_int_equal(read(out, &b, 1), 1);
  close(out);
  rlock_client *c = fx_client(srv, WD);
  rlock_lock *r = rd(c, "rw:zombie"), *w = wr(c, "rw:zombie");
  OK(rlock_lock_acquire(r));
  char owner[RLOCK_OWNER_MAX], theirs[128] = "";
  fx_owner(c, owner);
  redisReply *h = rt_cmd(srv, "HKEYS rw:zombie");
  for (size_t i = 0; i < h->elements; i++)
    if (strcmp(h->element[i]->str, "mode") != 0 &&
        strcmp(h->element[i]->str, owner) != 0)
      snprintf(theirs, sizeof theirs, "%s", h->element[i]->str);
  freeReplyObject(h);
  assert_true(theirs[0] != '\0');
  kill(pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
  /* Its hold's key expires within its lease although we keep renewing. */
  int64_t t0 = rt_now_ms();
  while (rt_cmd_int(srv, "EXISTS {rw:zombie}:%s:rwlock_timeout:1", theirs))
    if (rt_now_ms() - t0 > rt_scaled_ms(3000))
      fail_msg("the crashed reader's hold is still renewed");
    else
      rt_sleep_ms(20);
  /* Time is the point: a whole lease more, which our own hold's key
   * outlives only by being renewed. */
  rt_sleep_ms(WD);
  assert_int_equal(
      rt_cmd_int(srv, "EXISTS {rw:zombie}:%s:rwlock_timeout:1", owner), 1);
  OK(rlock_lock_release(r)); /* the zombie's field no longer keeps it */
  assert_int_equal(rt_cmd_int(srv, "EXISTS rw:zombie"), 0);
  OK(rlock_lock_try_acquire(w, 0, 0));
  OK(rlock_lock_release(w));
  FX_FREE((r, w), (c));
}

static void test_force_release_and_queries(void **state) {
  (void)state;
  rlock_client *a = fx_client(srv, 0), *b = fx_client(srv, 0);
  rlock_lock *r = rd(a, "rw:force"), *w = wr(b, "rw:force");
  int deleted, flag;
  OK(rlock_lock_acquire(r));
  OK(rlock_lock_force_release(&deleted, w)); /* a write force: not read */
  assert_int_equal(deleted, 0);
  OK(rlock_lock_check(r));
  OK(rlock_lock_is_locked(&flag, w));
  assert_int_equal(flag, 0);
  RC(rlock_lock_release(w), RLOCK_ENOTHELD);
  rlock_lock *rb = rd(b, "rw:force");
  RC(rlock_lock_release(rb), RLOCK_ENOTHELD);
  OK(rlock_lock_force_release(&deleted, rb));
  assert_int_equal(deleted, 1);
  RC(rlock_lock_release(r), RLOCK_ELOST);
  OK(rlock_lock_acquire(w));
  OK(rlock_lock_is_locked(&flag, r));
  assert_int_equal(flag, 0); /* a writer without read holds */
  rlock_lock_info *info;
  OK(rlock_lock_inspect(&info, r));
  assert_string_equal(rlock_lock_info_mode(info), "write");
  assert_int_equal(rlock_lock_info_holder_count(info), 1);
  assert_non_null(strstr(rlock_lock_info_holder_owner(info, 0), ":write"));
  rlock_lock_info_free(info);
  int64_t n;
  OK(rlock_lock_hold_count(&n, w));
  assert_int_equal(n, 1);
  OK(rlock_lock_hold_count(&n, rb));
  assert_int_equal(n, 0);
  OK(rlock_lock_release(w));
  FX_FREE((r, rb, w), (a, b));
}

/* Read holds each keep their own lease: after the later one is released,
 * the lock lives only as long as the earlier one, and check says so. */
static void test_check_follows_read_levels(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *r = rd(c, "rw:levels");
  OK(rlock_lock_acquire_lease(r, 1000));
  /* Time is the point: the second hold must end later than the first. */
  rt_sleep_ms(500);
  int64_t second = rt_now_ms();
  OK(rlock_lock_acquire_lease(r, 1000));
  OK(rlock_lock_release(r)); /* the later hold goes; the first ends at 1 s */
  OK(rlock_lock_check(r));
  /* The lock goes with the first hold's lease (about 500 ms from now), not
   * with the released second one's (1000 ms from `second`). */
  fx_wait_exists(srv, "rw:levels", 0, rt_scaled_ms(3000));
  ASSERT_RANGE(rt_now_ms() - second, 0, 900);
  RC(rlock_lock_check(r), RLOCK_ELOST);
  assert_int_equal(rt_cmd_int(srv, "EXISTS rw:levels"), 0);
  RC(rlock_lock_release(r), RLOCK_ELOST);
  FX_FREE((r), (c));
}

static void test_bad_input(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l;
  RC(rlock_lock_new_read(&l, c, ""), RLOCK_EINVAL);
  RC(rlock_lock_new_write(&l, c, NULL), RLOCK_EINVAL);
  RC(rlock_lock_new_read(NULL, c, "x"), RLOCK_EINVAL);
  RC(rlock_lock_new_write(&l, NULL, "x"), RLOCK_EINVAL);
  RC(rlock_lock_new_read(&l, c, "a{}"), RLOCK_EINVAL);
  freeReplyObject(rt_cmd(srv, "SET rw:string precious"));
  rlock_lock *r = rd(c, "rw:string"), *w = wr(c, "rw:string");
  RC(rlock_lock_try_acquire(r, 0, 0), RLOCK_EWRONGTYPE);
  RC(rlock_lock_try_acquire(w, 100, 0), RLOCK_EWRONGTYPE);
  RC(rlock_lock_force_release(NULL, r), RLOCK_EWRONGTYPE);
  RC(rlock_lock_force_release(NULL, w), RLOCK_EWRONGTYPE);
  RC(rlock_lock_release(r), RLOCK_EWRONGTYPE);
  int flag;
  RC(rlock_lock_is_locked(&flag, r), RLOCK_EWRONGTYPE);
  redisReply *v = rt_cmd(srv, "GET rw:string");
  assert_string_equal(v->str, "precious");
  freeReplyObject(v);
  RC(rlock_lock_try_acquire(r, -5, 0), RLOCK_EINVAL);
  RC(rlock_lock_try_acquire(w, 0, -5), RLOCK_EINVAL);
  FX_FREE((r, w), (c));
}

/* Several processes read and write at random; each records the interval
 * it held the lock (monotonic clock, shared by all processes); no write
 * interval may overlap any other. */
static void test_history_has_no_overlaps(void **state) {
  (void)state;
  enum { PROCS = 4 };
  pid_t pids[PROCS];
  const char *args[] = {"history", rt_server_url(srv), "rw:history", NULL};
  for (int i = 0; i < PROCS; i++)
    pids[i] = fx_spawn_child(args, NULL);
  for (int i = 0; i < PROCS; i++) {
    int status;
    assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  redisReply *h = rt_cmd(srv, "LRANGE rw:history:log 0 -1");
  assert_int_equal(h->elements, PROCS * 40);
  int writes = 0;
  for (size_t i = 0; i < h->elements; i++) {
    char mi;
    long long si, ei;
    assert_int_equal(sscanf(h->element[i]->str, "%c %lld %lld", &mi, &si, &ei),
                     3);
    writes += mi == 'w';
    for (size_t j = 0; j < h->elements; j++) {
      char mj;
      long long sj, ej;
      sscanf(h->element[j]->str, "%c %lld %lld", &mj, &sj, &ej);
      if (i != j && (mi == 'w' || mj == 'w') && si < ej && sj < ei)
        fail_msg("overlap: '%s' and '%s'", h->element[i]->str,
                 h->element[j]->str);
    }
  }
  assert_true(writes > 0 && writes < PROCS * 40);
  freeReplyObject(h);
}

/* Child roles: "read-and-hang URL NAME" and "history URL NAME". */
static int child_main(int argc, char **argv) {
  if (argc != 3)
    return 64;
  rlock_config *cfg;
  rlock_client *c;
  rlock_lock *r, *w;
  if (rlock_config_new(&cfg) || rlock_config_set_url(cfg, argv[1]) ||
      rlock_config_set_watchdog_timeout_ms(cfg, WD) ||
      rlock_client_new(&c, cfg) || rlock_lock_new_read(&r, c, argv[2]) ||
      rlock_lock_new_write(&w, c, argv[2]))
    return 1;
  rlock_config_free(cfg);
  if (strcmp(argv[0], "read-and-hang") == 0) {
    if (rlock_lock_acquire(r) != RLOCK_OK || write(1, "x", 1) != 1)
      return 2;
    for (;;)
      pause();
  }
  int port = atoi(strrchr(argv[1], ':') + 1);
  redisContext *raw = redisConnect("127.0.0.1", port);
  srand((unsigned)getpid());
  for (int i = 0; i < 40; i++) {
    int is_write = rand() % 3 == 0;
    rlock_lock *l = is_write ? w : r;
    if (rlock_lock_acquire(l) != RLOCK_OK)
      return 3;
    int64_t start = rt_now_us();
    rt_sleep_ms(rand() % 4);
    int64_t end = rt_now_us();
    if (rlock_lock_release(l) != RLOCK_OK)
      return 4;
    char entry[64];
    snprintf(entry, sizeof entry, "%c %lld %lld", is_write ? 'w' : 'r',
             (long long)start, (long long)end);
    freeReplyObject(redisCommand(raw, "RPUSH %s:log %s", argv[2], entry));
  }
  redisFree(raw);
  FX_FREE((r, w), (c));
  return 0;
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_readers_overlap),
    cmocka_unit_test(test_writer_waits_for_readers_and_excludes),
    cmocka_unit_test(test_downgrade_keeps_read_holds),
    cmocka_unit_test(test_upgrade_is_refused),
    cmocka_unit_test(test_layout_matches_redisson),
    cmocka_unit_test(test_messages_wake_readers_and_writers),
    cmocka_unit_test(test_read_release_keeps_write_renewal),
    cmocka_unit_test(test_crashed_reader_expires_while_others_renew),
    cmocka_unit_test(test_force_release_and_queries),
    cmocka_unit_test(test_check_follows_read_levels),
    cmocka_unit_test(test_bad_input),
    cmocka_unit_test(test_history_has_no_overlaps),
};

FX_MAIN(tests, fx_setup, fx_teardown, child_main)
