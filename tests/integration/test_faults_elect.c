/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault run of leader election (rlock/election.h) under the history
 * checker (rt_history.h, with faults_kit.h's fenced resource): three
 * campaigners, two blocking clients and one loop client on libuv, each a
 * process of its own, campaign in one election; the leader acts for a
 * while (each step: bump a counter, write its term to the fenced
 * resource, check it still leads), then resigns and campaigns again. The
 * harness kills the leader with SIGKILL, or stops it (SIGSTOP) past its
 * lease and resumes it. Judged: no two leaders act at once unless the
 * stale one was told (rlock_election_check: RLOCK_ELOST) or its write
 * refused; every term is issued once; the resource accepts terms in
 * increasing order only. The failover time (the fault on the leader to
 * the next leader's first accepted write) is printed and bounded. Each
 * scenario runs RLOCK_FAULT_SECONDS (default 3; scripts/soak.sh runs it
 * longer). */
#include "faults_kit.h"

#define EL_WORKERS 3      /* 0, 1 blocking; 2 a loop client */
#define EL_STEPS 8        /* steps a leader acts before it resigns */
#define EL_STEP_MS 5      /* the work of one step */
#define EL_NAME "fault:E" /* the election (lock 0 of the kit's resource) */

/* ---- the campaigner process ---------------------------------------------- */

typedef struct el_worker {
  int fd, id;
  rlock_election *e;
  redisContext *rc;
  uint64_t owner;
  uv_loop_t *loop; /* a loop client's, else NULL */
  uv_timer_t *timer;
} el_worker;

/* The leader's steps: record LOST and stop once the check says so. */
static void el_act(el_worker *w, int64_t term) {
  for (int i = 0; i < EL_STEPS; i++) {
    fk_work(w->fd, w->id, 0, term, w->rc);
    if (w->loop != NULL)
      fk_loop_sleep(w->loop, w->timer, EL_STEP_MS);
    else
      usleep(EL_STEP_MS * 1000);
    if (rlock_election_check(w->e, w->owner) == RLOCK_ELOST) {
      rt_history_add(w->fd, w->id, 0, RT_EV_LOST, 0, 0, 0);
      return;
    }
  }
}

/* Campaign (blocking, or async with the loop running), act, resign. */
static void el_round(el_worker *w) {
  int64_t term = 0, t0 = rt_now_us();
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = FK_WAIT_MS;
  o.owner = w->owner;
  char value[32];
  snprintf(value, sizeof value, "worker-%d", w->id);
  int rc;
  if (w->loop == NULL) {
    rc = rlock_election_campaign(w->e, value, &o, &term);
  } else {
    fk_call c = {0};
    rc = rlock_election_campaign_async(w->e, value, &o, fk_on_done, &c, NULL);
    if (rc == RLOCK_OK) {
      fk_run_until(w->loop, &c.done);
      rc = c.rc;
      term = c.value;
    }
  }
  if (!fk_acquired(w->fd, w->id, 0, rc, term, t0))
    return;
  el_act(w, term);
  rt_history_add(w->fd, w->id, 0, RT_EV_RELEASING, 0, 0, 0);
  if (w->loop == NULL) {
    rc = rlock_election_resign(w->e, w->owner);
  } else {
    fk_call c = {0};
    rc = rlock_election_resign_async(w->e, w->owner, fk_on_done, &c);
    if (rc == RLOCK_OK)
      fk_run_until(w->loop, &c.done);
    rc = rc == RLOCK_OK ? c.rc : rc;
  }
  if (rc == RLOCK_ELOST)
    rt_history_add(w->fd, w->id, 0, RT_EV_LOST, 0, 0, 0);
}

/* `elector ID URL PORT HISTORY`: never returns; dies with the test. */
static int el_main(int argc, char **argv) {
  if (argc != 5 || strcmp(argv[0], "elector") != 0)
    return 64;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  el_worker w = {.id = atoi(argv[1]), .owner = rlock_owner_new()};
  w.fd = rt_history_open(argv[4]);
  rlock_config *cfg = fk_worker_config(argv[2]);
  rlock_client *c;
  uv_loop_t loop;
  uv_timer_t timer;
  if (w.id == 2) {
    uv_loop_init(&loop);
    uv_timer_init(&loop, &timer);
    w.loop = &loop;
    w.timer = &timer;
  }
  if ((w.loop ? rlock_client_new_uv(&c, cfg, &loop)
              : rlock_client_new(&c, cfg)) != RLOCK_OK ||
      rlock_election_new(&w.e, c, EL_NAME) != RLOCK_OK)
    _exit(3);
  rlock_config_free(cfg);
  for (;;) {
    w.rc = fk_counter_link(w.rc, atoi(argv[3]));
    el_round(&w);
  }
}

/* ---- the harness's side ----------------------------------------------------
 */

static void el_spawn(int id) {
  char ids[8], port[16];
  snprintf(ids, sizeof ids, "%d", id);
  snprintf(port, sizeof port, "%d", rt_server_port(srv));
  const char *args[] = {"elector", ids,          rt_server_url(srv),
                        port,      fk.hist_path, NULL};
  fk.pids[id] = fx_spawn_child(args, NULL);
}

static int el_begin(const char *scenario) {
  snprintf(fk.hist_path, sizeof fk.hist_path, "%s/%s.history",
           rt_server_dir(srv), scenario);
  unlink(fk.hist_path);
  freeReplyObject(rt_cmd(srv, "FLUSHALL"));
  int fd = rt_history_open(fk.hist_path);
  for (int i = 0; i < EL_WORKERS; i++)
    el_spawn(i);
  return fd;
}

/* Read the history: every term issued once (no two leaders share one). */
static void el_terms_unique(void) {
  FILE *f = fopen(fk.hist_path, "rb");
  assert_non_null(f);
  static int64_t terms[100000];
  size_t n = 0;
  rt_record rec;
  while (fread(&rec, sizeof rec, 1, f) == 1)
    if (rec.ev == RT_EV_ACQUIRED && n < 100000)
      terms[n++] = rec.a;
  fclose(f);
  for (size_t i = 0; i < n; i++) {
    assert_true(terms[i] > 0);
    for (size_t j = i + 1; j < n; j++)
      if (terms[i] == terms[j])
        fail_msg("term %lld was issued twice", (long long)terms[i]);
  }
}

/* The first accepted write by a worker other than `id` after offset
 * `from`: its time (monotonic us), or 0 when none yet. */
static int64_t el_next_write(int id, off_t from) {
  FILE *f = fopen(fk.hist_path, "rb");
  rt_record rec;
  int64_t at = 0;
  if (f != NULL && fseeko(f, from, SEEK_SET) == 0)
    while (at == 0 && fread(&rec, sizeof rec, 1, f) == 1)
      if (rec.ev == RT_EV_WRITE_ACCEPTED && rec.worker != id)
        at = rec.t_us;
  if (f != NULL)
    fclose(f);
  return at;
}

typedef struct el_failover {
  int id;
  off_t from;
  int64_t at;
} el_failover;

static bool el_pred_failover(void *arg, char *why, size_t cap) {
  el_failover *x = arg;
  x->at = el_next_write(x->id, x->from);
  snprintf(why, cap, "no write by another leader since worker %d's fault",
           x->id);
  return x->at != 0;
}

/* Wait for the next leader's first accepted write after the fault on
 * `id` at `fault_us` (offset `from`); the failover time in ms. */
static int64_t el_failover_ms(int id, off_t from, int64_t fault_us) {
  el_failover x = {id, from, 0};
  rt_wait_until(el_pred_failover, &x, rt_scaled_ms(10000),
                "the next leader's first write");
  return (x.at - fault_us) / 1000;
}

/* Stop every campaigner and judge the history. */
static rt_verdict el_finish(int fd, const char *scenario, int64_t worst_ms,
                            int faults) {
  for (int i = 0; i < EL_WORKERS; i++) {
    kill(fk.pids[i], SIGCONT);
    fk_kill_worker(fd, i);
  }
  close(fd);
  rt_verdict v = rt_history_check(fk.hist_path, -1, rt_scaled_ms(3000));
  rt_history_print(scenario, &v);
  print_message("%s: %d faults on the leader, worst failover %lld ms "
                "(fault to the next leader's first accepted write; lease "
                "%d ms)\n",
                scenario, faults, (long long)worst_ms, FK_WATCHDOG_MS);
  if (!rt_history_clean(&v))
    fail_msg("%s: %s", scenario, v.first);
  if (v.acquisitions < 10)
    fail_msg("%s: only %ld terms", scenario, v.acquisitions);
  el_terms_unique();
  return v;
}

/* The leader killed (kill -9): a standby leads within the lease left
 * (at most one lease) plus its wake-up. */
static void test_elect_kill9(void **state) {
  (void)state;
  int fd = el_begin("elect-kill9"), faults = 0;
  int64_t worst = 0;
  for (int64_t t0 = rt_now_ms(); fk_running(t0);) {
    int id = fk_in_hold();
    if (id < 0) {
      rt_sleep_ms(5);
      continue;
    }
    off_t from = fk_history_size();
    int64_t at = rt_now_us();
    rt_history_add(fd, -1, -1, RT_EV_FAULT, SIGKILL, id, 0);
    fk_kill_worker(fd, id);
    int64_t ms = el_failover_ms(id, from, at);
    worst = ms > worst ? ms : worst;
    faults++;
    el_spawn(id);
    fk_wait_acquisitions(from, 4); /* a few terms before the next fault */
  }
  assert_true(faults > 0);
  el_finish(fd, "elect-kill9", worst, faults);
  assert_true(worst <= FK_WATCHDOG_MS + rt_scaled_ms(1000));
}

/* The leader stopped past its lease, then resumed: a standby leads
 * meanwhile with a larger term; the resumed one is told or refused. */
static void test_elect_sigstop(void **state) {
  (void)state;
  int fd = el_begin("elect-sigstop"), stale = 0;
  int64_t worst = 0;
  for (int64_t t0 = rt_now_ms(); fk_running(t0);) {
    off_t from = fk_history_size();
    int id = fk_stop_a_holder();
    if (id < 0)
      continue;
    int64_t at = rt_now_us();
    stale++;
    rt_history_add(fd, -1, -1, RT_EV_FAULT, SIGSTOP, id, 0);
    int64_t ms = el_failover_ms(id, from, at);
    worst = ms > worst ? ms : worst;
    rt_sleep_ms(FK_WATCHDOG_MS / 2); /* the stopped one is well past it */
    off_t seen = fk_history_size();
    kill(fk.pids[id], SIGCONT);
    fk_wait_record_from(id, seen, RT_EV_RELEASING);
    fk_wait_acquisitions(seen, 4);
  }
  rt_verdict v = el_finish(fd, "elect-sigstop", worst, stale);
  assert_true(stale > 0);
  assert_true(v.writes_refused + v.lost >= stale);
  assert_true(worst <= FK_WATCHDOG_MS + rt_scaled_ms(1000));
}

static int child_main(int argc, char **argv) { return el_main(argc, argv); }

static const struct CMUnitTest tests_of_elect_faults[] = {
    cmocka_unit_test(test_elect_kill9),
    cmocka_unit_test(test_elect_sigstop),
};

FX_MAIN(tests_of_elect_faults, fx_setup, fx_teardown, child_main)
