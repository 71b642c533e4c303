/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault runs of leader election (rlock/election.h) under the history
 * checker (rt_history.h, with faults_kit.h's fenced resource): three
 * campaigners, two blocking clients and one loop client on libuv, each a
 * process of its own, campaign in one election; the leader acts for a
 * while (each step: bump a counter, write its term to the fenced
 * resource, check it still leads), then resigns and campaigns again. While
 * the harness holds a leader on (a "stay" file beside the history), the
 * leader goes on acting until it is told it lost, as a leader with work to
 * do would. Faults on the leader:
 *  - kill9: the leader killed (SIGKILL);
 *  - sigstop: stopped (SIGSTOP) past its lease, then resumed;
 *  - cut / one_way (in a private network namespace, faults_kit.h's
 *    fk_inside(), each campaigner in a namespace of its own, the election's
 *    server in another): the leader's namespace cut from the server's, both
 *    ways or the server's packets to it only, for 1.5 leases while it acts;
 * and on the election's server, a master with one replica under three
 * sentinels, the leader acting throughout:
 *  - failover: SENTINEL FAILOVER, settled (rt_sentinel_failover_settled);
 *  - master_kill: the master killed, the replica promoted, the dead one
 *    back as its replica (fk_sentinel_crash).
 * Judged: no two leaders act at once unless the stale one was told
 * (rlock_election_check: RLOCK_ELOST) or its write refused; every term is
 * issued once; the resource accepts terms in increasing order only. The
 * failover time (the fault on the leader to the next leader's first
 * accepted write; for the server's failovers, to the first accepted write
 * of a term granted after the fault) is printed and bounded. Each
 * scenario runs RLOCK_FAULT_SECONDS (default 3; scripts/soak.sh runs it
 * longer). */
#include "faults_kit.h"

#include "rt_proxy.h"

#define EL_WORKERS 3      /* 0, 1 blocking; 2 a loop client */
#define EL_STEPS 8        /* steps a leader acts before it resigns */
#define EL_STEP_MS 5      /* the work of one step */
#define EL_NAME "fault:E" /* the election (lock 0 of the kit's resource) */
#define EL_CHANNEL "redisson_lock__channel:{" EL_NAME "}"

/* ---- the campaigner process ---------------------------------------------- */

typedef struct el_worker {
  int fd, id;
  rlock_election *e;
  redisContext *rc;
  uint64_t owner;
  uv_loop_t *loop; /* a loop client's, else NULL */
  uv_timer_t *timer;
  char stay[600]; /* the harness's stay file (el_stay) */
} el_worker;

/* Set by SIGTERM: the campaigner steps down for good (el_round). */
static volatile sig_atomic_t el_quit;

static void el_on_term(int sig) {
  (void)sig;
  el_quit = 1;
}

/* The leader's steps: EL_STEPS, and more while the harness's stay file
 * exists, until SIGTERM; record LOST and stop once the check says so. */
static void el_act(el_worker *w, int64_t term) {
  for (int i = 0; !el_quit && (i < EL_STEPS || access(w->stay, F_OK) == 0);
       i++) {
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
  if (el_quit) /* leave, as a leader shutting down does: 0 if resigned */
    _exit(rc == RLOCK_OK ? 0 : 4);
}

/* `elector ID URL PORT HISTORY COUNTER_HOST`: campaigns in the election
 * at URL, with the counter and the fenced resource at COUNTER_HOST:PORT;
 * dies with the test, or leaves on SIGTERM (exit status 0: it was leading
 * and its resignation said RLOCK_OK). */
static int el_main(int argc, char **argv) {
  if (argc != 6 || strcmp(argv[0], "elector") != 0)
    return 64;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  struct sigaction sa = {.sa_handler = el_on_term, .sa_flags = SA_RESTART};
  sigaction(SIGTERM, &sa, NULL);
  el_worker w = {.id = atoi(argv[1]), .owner = rlock_owner_new()};
  w.fd = rt_history_open(argv[4]);
  snprintf(w.stay, sizeof w.stay, "%s.stay", argv[4]);
  fk.counter_host = argv[5];
  rlock_config *cfg = fk_worker_config(argv[2]);
  /* A campaign confirmed on a replica (WAIT) before it returns, where the
   * master has one: the default, stated, since the failover runs rely on
   * it to lose no term granted. */
  if (rlock_config_set_replica_sync(cfg, 1) != RLOCK_OK)
    _exit(3);
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
  while (!el_quit) {
    w.rc = fk_counter_link(w.rc, atoi(argv[3]));
    el_round(&w);
  }
  _exit(5); /* told to leave while not leading */
}

/* ---- the harness's side ----------------------------------------------------
 */

/* Start campaigner `id` (again): its election where fk.url_of or
 * fk.lock_url says (default srv), under fk.prefix_of (faults_kit.h). */
static void el_spawn(int id) {
  char ids[8], port[16];
  snprintf(ids, sizeof ids, "%d", id);
  snprintf(port, sizeof port, "%d", rt_server_port(srv));
  const char *url = fk.url_of     ? fk.url_of(id)
                    : fk.lock_url ? fk.lock_url
                                  : rt_server_url(srv);
  const char *args[] = {
      "elector", ids,          url,
      port,      fk.hist_path, fk.counter_host ? fk.counter_host : "127.0.0.1",
      NULL};
  fk.pids[id] = fk_spawn_args(id, args);
}

/* Hold the leader on (it acts until told it lost), or let it resign. */
static void el_stay(bool on) {
  char path[600];
  snprintf(path, sizeof path, "%s.stay", fk.hist_path);
  int fd = on ? open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644) : -1;
  if (on && fd < 0)
    fail_msg("cannot create %s", path);
  if (on)
    close(fd);
  else
    unlink(path);
}

static int el_begin(const char *scenario) {
  snprintf(fk.hist_path, sizeof fk.hist_path, "%s/%s.history",
           rt_server_dir(srv), scenario);
  unlink(fk.hist_path);
  el_stay(false);
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

/* A term granted after offset `from`: the time (monotonic us) of its
 * leader's first accepted write, or 0 when none yet. */
static int64_t el_new_term_write(off_t from) {
  FILE *f = fopen(fk.hist_path, "rb");
  rt_record rec;
  int64_t at = 0;
  bool granted[EL_WORKERS] = {false};
  if (f != NULL && fseeko(f, from, SEEK_SET) == 0)
    while (at == 0 && fread(&rec, sizeof rec, 1, f) == 1) {
      if (rec.worker < 0 || rec.worker >= EL_WORKERS)
        continue;
      if (rec.ev == RT_EV_ACQUIRED)
        granted[rec.worker] = true;
      else if (rec.ev == RT_EV_RELEASING || rec.ev == RT_EV_KILLED)
        granted[rec.worker] = false;
      else if (rec.ev == RT_EV_WRITE_ACCEPTED && granted[rec.worker])
        at = rec.t_us;
    }
  if (f != NULL)
    fclose(f);
  return at;
}

static bool el_pred_new_term(void *arg, char *why, size_t cap) {
  el_failover *x = arg;
  x->at = el_new_term_write(x->from);
  snprintf(why, cap, "no write in a term granted since the fault");
  return x->at != 0;
}

/* Wait for the first accepted write of a term granted after offset
 * `from`; its time (monotonic us). */
static int64_t el_new_term_at(off_t from) {
  el_failover x = {-1, from, 0};
  rt_wait_until(el_pred_new_term, &x, rt_scaled_ms(30000),
                "a new term's first write");
  return x.at;
}

typedef struct el_lead {
  off_t since;
  int id;
} el_lead;

static bool el_pred_leader(void *arg, char *why, size_t cap) {
  el_lead *x = arg;
  bool wrote[EL_WORKERS] = {false};
  FILE *f = fopen(fk.hist_path, "rb");
  rt_record rec;
  if (f != NULL && fseeko(f, x->since, SEEK_SET) == 0)
    while (fread(&rec, sizeof rec, 1, f) == 1)
      if (rec.ev == RT_EV_WRITE_ACCEPTED && rec.worker >= 0 &&
          rec.worker < EL_WORKERS)
        wrote[rec.worker] = true;
  if (f != NULL)
    fclose(f);
  x->id = fk_in_hold();
  snprintf(why, cap, "no campaigner leads and writes");
  return x->id >= 0 && x->id < EL_WORKERS && wrote[x->id];
}

/* Hold the leader on (el_stay) and wait until one leads; its id. It has
 * written since the stay file was made, so it checks that file only after
 * it was made: it stays, acting until told it lost. */
static int el_held_leader(void) {
  el_stay(true);
  el_lead x = {fk_history_size(), -1};
  rt_wait_until(el_pred_leader, &x, rt_scaled_ms(10000), "a leader acting");
  return x.id;
}

/* Let the election run 10 more terms after the last fault (a short run
 * whose faults took its time still shows terms again, and has the 10 the
 * judge wants), stop every campaigner and judge the history: clean, at
 * least 10 terms, each issued once. */
static rt_verdict el_finish(int fd, const char *scenario) {
  el_stay(false);
  fk_wait_acquisitions(fk_history_size(), 10);
  fk_stop_workers(fd, EL_WORKERS);
  fk_keep_history(scenario);
  rt_verdict v = rt_history_check(fk.hist_path, -1, rt_scaled_ms(3000));
  rt_history_print(scenario, &v);
  if (!rt_history_clean(&v))
    fail_msg("%s: %s", scenario, v.first);
  if (v.acquisitions < 10)
    fail_msg("%s: only %ld terms", scenario, v.acquisitions);
  el_terms_unique();
  return v;
}

static void el_print_failover(const char *scenario, int faults,
                              int64_t worst_ms) {
  print_message("%s: %d faults on the leader, worst failover %lld ms "
                "(fault to the next leader's first accepted write; lease "
                "%d ms)\n",
                scenario, faults, (long long)worst_ms, FK_WATCHDOG_MS);
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
  el_finish(fd, "elect-kill9");
  el_print_failover("elect-kill9", faults, worst);
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
  rt_verdict v = el_finish(fd, "elect-sigstop");
  el_print_failover("elect-sigstop", stale, worst);
  assert_true(stale > 0);
  assert_true(v.writes_refused + v.lost >= stale);
  assert_true(worst <= FK_WATCHDOG_MS + rt_scaled_ms(1000));
}

/* ---- the election's server failed over ---------------------------------- */

/* The election on a master with one replica under three sentinels (the
 * counter and the fenced resource on srv, which no fault touches). Each
 * round holds the leader on (el_stay), so that it acts throughout, then
 * fails the master over: SENTINEL FAILOVER, settled, or the master killed
 * (fk_sentinel_crash); then lets the leader go. A campaign is confirmed
 * on the replica (WAIT: rlock_config_set_replica_sync, on by default)
 * before it returns where the master has one. One granted on a master
 * just promoted, before the old one is attached as its replica, is not
 * (its client saw no replica to wait for), but each failover here is
 * settled: the old master is attached at once, fully synced and seen
 * receiving the stream (rt_sentinel_wait_replicas) before the next one,
 * so no failover loses a term granted and every term must be issued
 * once. (Failovers closer together than that, as the sentinels alone
 * would make them, can lose such terms: the counter goes back, and the
 * fenced resource refuses the repeated terms.) Renewals are not
 * confirmed: the leader may find its lease gone on the promoted replica
 * (SENTINEL FAILOVER: its renewals went to the old master until its
 * client learned of the switch; the master killed: no renewal reaches
 * anyone for the promotion's length), and must then be told (RLOCK_ELOST)
 * or refused by the fenced resource, never overlap unexplained. Printed:
 * how long the sentinels took, and the fault to the first accepted write
 * of a term granted after it; bounded: that write comes within a lease
 * (+1 s) of the leader's release. */
static void el_server_failover(const char *scenario, bool crash) {
  rt_sentinel_group *g =
      rt_sentinel_start(crash ? "elcrashmaster" : "elfailmaster", 1, 3);
  fk.lock_url = rt_sentinel_url(g);
  int fd = el_begin(scenario), faults = 0;
  int64_t worst = 0, worst_after = 0, switch_ms = 0;
  for (int64_t t0 = rt_now_ms(); fk_running(t0); faults++) {
    int id = el_held_leader();
    off_t from = fk_history_size();
    int64_t at = rt_now_us();
    if (crash) {
      fk_sentinel_crash(g, fd);
    } else {
      rt_history_add(fd, -1, -1, RT_EV_FAULT, 'F', id, 0);
      rt_sentinel_failover_settled(g, rt_scaled_ms(30000));
    }
    switch_ms += rt_sentinel_failover_ms(g);
    int64_t let_go = rt_now_us();
    el_stay(false);
    int64_t next = el_new_term_at(from);
    int64_t ms = (next - at) / 1000, after = (next - let_go) / 1000;
    worst = ms > worst ? ms : worst;
    worst_after = after > worst_after ? after : worst_after;
    fk_wait_acquisitions(fk_history_size(), 4);
  }
  rt_verdict v = el_finish(fd, scenario);
  print_message(
      "%s: %d failovers with a leader acting (sentinels: %lld ms "
      "on average); the first write of a new term at worst %lld "
      "ms after the fault, %lld ms after the leader was let go; "
      "%ld RLOCK_ELOST, %ld writes refused\n",
      scenario, faults, (long long)(switch_ms / (faults ? faults : 1)),
      (long long)worst, (long long)worst_after, v.lost, v.writes_refused);
  fk.lock_url = NULL;
  rt_sentinel_free(g);
  assert_true(faults > 0 && v.faults == faults);
  assert_true(worst_after <= FK_WATCHDOG_MS + rt_scaled_ms(1000));
}

static void test_elect_failover(void **state) {
  (void)state;
  el_server_failover("elect-failover", false);
}

static void test_elect_master_kill(void **state) {
  (void)state;
  el_server_failover("elect-master-kill", true);
}

/* ---- partitions: inside a private network namespace ---------------------- */

/* The namespaces: the election's server's, then one per campaigner. srv
 * (the counter, the fenced resource) listens on the router's own address,
 * which no fault touches. */
enum { NS_S, NS_W0 };
static rt_netns *net;
static rt_server *lsrv;          /* the election's server, in NS_S */
static const char *el_relay_url; /* the campaigners' way to it, if not direct */

static const char *el_url_of(int id) {
  (void)id;
  return el_relay_url != NULL ? el_relay_url : rt_server_url(lsrv);
}

static const char *const *el_prefix_of(int id) {
  return rt_netns_prefix(net, NS_W0 + id);
}

static int inner_setup(void **state) {
  (void)state;
  net = rt_netns_new();
  rt_netns_add(net, "srv");
  for (int i = 0; i < EL_WORKERS; i++) {
    char name[16];
    snprintf(name, sizeof name, "w%d", i);
    rt_netns_add(net, name);
  }
  lsrv = fk_netns_servers(net, NS_S);
  fk.url_of = el_url_of;
  fk.prefix_of = el_prefix_of;
  fk.counter_host = rt_netns_router_addr();
  return 0;
}

static int inner_teardown(void **state) {
  (void)state;
  return fk_netns_free(net, lsrv);
}

/* The leader, held on (el_stay), cut from the election's server (both
 * ways, or one way: the server's packets to it dropped, its requests
 * arriving) for 1.5 leases, again and again. It acts on, and must be told
 * (RLOCK_ELOST) within a lease of its last confirmed renewal: the run
 * waits for its LOST record. A campaigner elsewhere leads once the lease
 * runs out (one-way: once its last renewal's, which the server applied
 * unanswered, runs out: up to a third of a lease later). */
static void el_partition(const char *scenario, bool one_way) {
  freeReplyObject(rt_cmd(lsrv, "FLUSHALL"));
  int fd = el_begin(scenario), faults = 0;
  int64_t worst = 0;
  for (int64_t t0 = rt_now_ms(); fk_running(t0); faults++) {
    int id = el_held_leader();
    off_t from = fk_history_size();
    int64_t at = rt_now_us();
    rt_history_add(fd, -1, -1, RT_EV_FAULT, one_way ? 'O' : 'X', id, 0);
    if (one_way)
      rt_netns_drop(net, NS_S, NS_W0 + id, true);
    else
      rt_netns_cut(net, NS_W0 + id, NS_S, true);
    int64_t ms = el_failover_ms(id, from, at);
    worst = ms > worst ? ms : worst;
    fk_wait_record_from(id, from, RT_EV_LOST); /* the deposed one told */
    int64_t left = FK_WATCHDOG_MS * 3 / 2 - (rt_now_us() - at) / 1000;
    rt_sleep_ms(left > 0 ? left : 0); /* the cut itself */
    el_stay(false);
    rt_netns_heal(net);
    fk_wait_acquisitions(fk_history_size(), 4); /* terms again after it */
  }
  rt_verdict v = el_finish(fd, scenario);
  el_print_failover(scenario, faults, worst);
  assert_true(faults > 0 && v.faults == faults && v.lost >= faults);
  assert_true(worst <= FK_WATCHDOG_MS + rt_scaled_ms(1000));
}

static void in_elect_cut(void **state) {
  (void)state;
  el_partition("elect-cut", false);
}

static void in_elect_one_way(void **state) {
  (void)state;
  el_partition("elect-one-way", true);
}

static bool el_pred_standbys(void *arg, char *why, size_t cap) {
  (void)arg;
  long long n = fx_subscribers(lsrv, EL_CHANNEL);
  snprintf(why, cap, "%lld subscribers of the election's channel", n);
  return n >= EL_WORKERS - 1;
}

/* Every campaigner through a relay (rt_proxy.h). With the leader held on
 * and both standbys subscribed, the relay silences every subscriber
 * connection (neither end is told), and the leader steps down for good
 * (SIGTERM: it ends its step, resigns and exits, as a leader shutting
 * down does). Its release's message never reaches the standbys: they
 * must take over anyway, within a lease (a waiting campaign tries again
 * when the lease it last saw runs out); their next subscriptions, sent on
 * the silent connections, go unconfirmed, and the health check replaces
 * those connections. */
static void in_elect_silent(void **state) {
  (void)state;
  freeReplyObject(rt_cmd(lsrv, "FLUSHALL"));
  rt_proxy *px = rt_proxy_start(rt_netns_router_addr(),
                                rt_netns_addr(net, NS_S), rt_server_port(lsrv));
  el_relay_url = rt_proxy_url(px);
  int fd = el_begin("elect-silent"), faults = 0, silenced = 0;
  int64_t worst = 0;
  for (int64_t t0 = rt_now_ms(); fk_running(t0); faults++) {
    int id = el_held_leader();
    rt_wait_until(el_pred_standbys, NULL, rt_scaled_ms(5000),
                  "the standbys' subscriptions");
    off_t from = fk_history_size();
    int64_t at = rt_now_us();
    rt_history_add(fd, -1, -1, RT_EV_FAULT, 'Q', id, 0);
    silenced += rt_proxy_silence_subscribers(px);
    kill(fk.pids[id], SIGTERM);
    assert_int_equal(fx_wait_child(fk.pids[id], rt_scaled_ms(10000)), 0);
    int64_t ms = el_failover_ms(id, from, at);
    worst = ms > worst ? ms : worst;
    el_spawn(id);
    el_stay(false);
    fk_wait_acquisitions(fk_history_size(), 4); /* terms again after it */
  }
  rt_verdict v = el_finish(fd, "elect-silent");
  el_print_failover("elect-silent", faults, worst);
  print_message("elect-silent: %d connections silenced, %d of them closed "
                "by their client\n",
                silenced, rt_proxy_closed_while_silent(px));
  el_relay_url = NULL;
  rt_proxy_free(px);
  assert_true(faults > 0 && v.faults == faults && silenced >= faults);
  assert_true(worst <= FK_WATCHDOG_MS + rt_scaled_ms(1000));
}

static const struct CMUnitTest inner_tests[] = {
    cmocka_unit_test(in_elect_cut),
    cmocka_unit_test(in_elect_one_way),
    cmocka_unit_test(in_elect_silent),
};

FK_OUTER(elect_cut)
FK_OUTER(elect_one_way)
FK_OUTER(elect_silent)

static int child_main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[0], "netns") == 0) { /* fk_inside() */
    cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(inner_tests, inner_setup, inner_teardown);
  }
  return el_main(argc, argv);
}

static const struct CMUnitTest tests_of_elect_faults[] = {
    cmocka_unit_test(test_elect_kill9),
    cmocka_unit_test(test_elect_sigstop),
    cmocka_unit_test(test_elect_cut),
    cmocka_unit_test(test_elect_one_way),
    cmocka_unit_test(test_elect_silent),
    cmocka_unit_test(test_elect_failover),
    cmocka_unit_test(test_elect_master_kill),
};

FX_MAIN(tests_of_elect_faults, fx_setup, fx_teardown, child_main)
