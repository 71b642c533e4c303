/* SPDX-License-Identifier: BSD-3-Clause */
/* Partitions (issue 22): the lock server, sentinels and clients in network
 * namespaces the test creates (rt_netns.h), links cut by silent blackhole
 * rules in the router between them, a subscriber silenced by a relay
 * (rt_proxy.h). Each test runs the binary again under `unshare --net
 * --mount` (a private network of its own: nothing reaches the machine's)
 * and is skipped, saying why, where the kernel or the user cannot do that.
 *
 * Direct scenarios, with a blocking and with a loop client each (client
 * programs: this binary's "holder" and "waiter" roles, in namespaces):
 *  - client_cut: the holder's namespace cut from the server's, both ways,
 *    for 2.5 leases: the holder is told RLOCK_ELOST within one lease (and
 *    never believes it holds after another client got the lock), a waiter
 *    elsewhere gets the lock within its wait, a waiter on the cut side
 *    gets it after the heal or, when an attempt of its was in flight at
 *    the cut, ends with RLOCK_ETIMEOUT: either within its wait;
 *  - one_way: the server's packets to the holder dropped, the holder's to
 *    the server arriving (seen with MONITOR): the same promises;
 *  - connect_unanswered: the server's packets to A dropped from the start,
 *    so every connect from A times out: a holder there waiting 5 s rides
 *    that out and takes the lock once the drop is healed;
 *  - silent_sub: the waiter's subscriber connection silenced without being
 *    closed: the waiter wakes by the lock's TTL, and its health check
 *    drops the silent connection when a new subscription is not confirmed.
 *  - split_brain (Sentinel) and cluster_minority: a holder on the old
 *    master's side of a partition, a client of the majority's side taking
 *    the lock on the promoted replica: the stale holder told or refused
 *    by the fenced resource (see their comments).
 * Checker scenarios (faults_kit.h's workers and history checker, blocking
 * and loop): the same faults under the fault-run workload. */
#include "faults_kit.h"

#include <poll.h>

#include "rt_cluster.h"
#include "rt_netns.h"
#include "rt_proxy.h"
#include "rt_sentinel.h"

#define LEASE_MS FK_WATCHDOG_MS
#define CUT_MS 2500
#define SLACK_MS 500
#define LOCK "part:L"
#define LOCK2 "part:L2"
#define CHANNEL(name) "redisson_lock__channel:{" name "}"

/* ---- the client programs ------------------------------------------------ */

typedef struct role {
  fk_mode mode;
  rlock_client *c;
  uv_loop_t loop;
  uv_timer_t timer;
  uint64_t owner;
} role;

static _Atomic int64_t lost_cb_us;

static void on_lost(const char *name, const char *owner, void *ud) {
  (void)name, (void)owner, (void)ud;
  int64_t zero = 0;
  atomic_compare_exchange_strong(&lost_cb_us, &zero, rt_now_us());
}

static void role_open(role *r, const char *mode, const char *url) {
  r->mode = strcmp(mode, "loop") == 0 ? FK_LOOP : FK_BLOCKING;
  rlock_config *cfg = fk_worker_config(url);
  if (rlock_config_set_lost_callback(cfg, on_lost, NULL) != RLOCK_OK)
    _exit(3);
  if (r->mode == FK_LOOP) {
    uv_loop_init(&r->loop);
    uv_timer_init(&r->loop, &r->timer);
    r->owner = rlock_owner_new();
  }
  if ((r->mode == FK_LOOP ? rlock_client_new_uv(&r->c, cfg, &r->loop)
                          : rlock_client_new(&r->c, cfg)) != RLOCK_OK)
    _exit(3);
  rlock_config_free(cfg);
}

/* Free the client (and a loop client's loop), so that a role that ends by
 * itself leaves nothing behind for LeakSanitizer. */
static void role_close(role *r) {
  rlock_client_free(r->c);
  if (r->mode == FK_LOOP) {
    uv_close((uv_handle_t *)&r->timer, NULL);
    for (int i = 0; i < 10 && uv_loop_close(&r->loop) == UV_EBUSY; i++)
      uv_run(&r->loop, UV_RUN_NOWAIT);
  }
}

static int role_acquire(role *r, rlock_lock *l, int64_t wait_ms,
                        int64_t *token) {
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = wait_ms;
  if (r->mode == FK_BLOCKING) {
    o.token = token;
    return rlock_lock_acquire_opts(l, &o);
  }
  o.owner = r->owner; /* a fenced lock's token is the callback's value */
  fk_call call = {0};
  int rc = rlock_lock_acquire_async(l, &o, fk_on_done, &call, NULL);
  if (rc != RLOCK_OK)
    return rc;
  fk_run_until(&r->loop, &call.done);
  if (token != NULL)
    *token = call.value;
  return call.rc;
}

static int role_release(role *r, rlock_lock *l) {
  if (r->mode == FK_BLOCKING)
    return rlock_lock_release(l);
  fk_call call = {0};
  int rc = rlock_lock_release_async(l, r->owner, fk_on_done, &call);
  if (rc != RLOCK_OK)
    return rc;
  fk_run_until(&r->loop, &call.done);
  return call.rc;
}

static int role_check(role *r, rlock_lock *l) {
  return r->mode == FK_BLOCKING ? rlock_lock_check(l)
                                : rlock_lock_check_owner(l, r->owner);
}

/* Let `ms` pass; a loop client's loop runs meanwhile (its renewals). */
static void role_pause(role *r, int ms) {
  if (r->mode == FK_BLOCKING)
    rt_sleep_ms(ms);
  else
    fk_loop_sleep(&r->loop, &r->timer, ms);
}

static void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

static bool stdin_ready(void) {
  struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
  return poll(&p, 1, 0) > 0;
}

/* The fenced resource at "HOST:PORT" (FK_FENCED_WRITE): 1 the token was
 * accepted, 0 refused, -1 not reached. */
static int fenced_write(const char *fence, int64_t token) {
  char host[64];
  int port = 0;
  if (sscanf(fence, "%63[^:]:%d", host, &port) != 2)
    return -1;
  struct timeval tv = {1, 0};
  redisContext *c = redisConnectWithTimeout(host, port, tv);
  if (c != NULL && !c->err)
    redisSetTimeout(c, tv);
  redisReply *rep = c && !c->err
                        ? redisCommand(c,
                                       "EVAL %s 2 fault:res:{part} "
                                       "fault:seq:{part} %lld",
                                       FK_FENCED_WRITE, (long long)token)
                        : NULL;
  int ok = rep && rep->type == REDIS_REPLY_INTEGER ? rep->integer > 0 : -1;
  freeReplyObject(rep);
  redisFree(c);
  return ok;
}

static rlock_lock *role_lock(role *r, const char *fence, const char *name) {
  rlock_lock *l;
  int rc = strcmp(fence, "-") != 0 ? rlock_lock_new_fenced(&l, r->c, name)
                                   : rlock_lock_new(&l, r->c, name);
  if (rc != RLOCK_OK)
    _exit(3);
  return l;
}

/* `holder MODE URL FENCE NAME...`: take each lock (fenced when FENCE, the
 * fenced resource's "HOST:PORT", is not "-"), say "held TOKEN"; then
 * watch the first with rlock_lock_check every 2 ms, saying "told RC T
 * LAST_OK" (µs, CLOCK_MONOTONIC: the first answer other than RLOCK_OK,
 * and when the last RLOCK_OK was asked) once it stops holding. Each line
 * of stdin: "w" writes the first lock's token to the fenced resource,
 * saying "wrote ACCEPTED CHECK"; anything else releases the next lock,
 * saying "released RC T LOST_CALLBACK_T". */
static int holder_main(int argc, char **argv) {
  role r = {0};
  role_open(&r, argv[1], argv[2]);
  const char *fence = argv[3];
  int n = argc - 4;
  rlock_lock *l[4];
  int64_t token = 0;
  for (int i = 0; i < n && i < 4; i++) {
    l[i] = role_lock(&r, fence, argv[4 + i]);
    bool fenced = i == 0 && strcmp(fence, "-") != 0;
    int rc = role_acquire(&r, l[i], 5000, fenced ? &token : NULL);
    if (rc != RLOCK_OK) { /* the harness shows this line */
      say("failed %d %s\n", rc, rlock_error_last()->message);
      return 1;
    }
  }
  say("held %lld\n", (long long)token);
  int64_t last_ok = 0, told = 0;
  for (int i = 0; i < n;) {
    int64_t t0 = rt_now_us();
    int rc = i == 0 ? role_check(&r, l[0]) : RLOCK_OK;
    if (rc == RLOCK_OK)
      last_ok = t0;
    else if (told == 0)
      say("told %d %lld %lld\n", rc, (long long)(told = rt_now_us()),
          (long long)last_ok);
    char line[64] = "";
    if (stdin_ready() && fgets(line, sizeof line, stdin) == NULL)
      return 1;
    if (line[0] == 'w')
      say("wrote %d %d\n", fenced_write(fence, token), role_check(&r, l[0]));
    else if (line[0] != '\0')
      say("released %d %lld %lld\n", role_release(&r, l[i++]),
          (long long)rt_now_us(), (long long)atomic_load(&lost_cb_us));
    role_pause(&r, 2);
  }
  for (int i = 0; i < n && i < 4; i++)
    rlock_lock_free(l[i]);
  role_close(&r);
  return 0;
}

/* `waiter MODE URL FENCE WAIT_MS NAME...`: take each lock in turn (write
 * its token to the fenced resource when FENCE is not "-", hold 20 ms,
 * release), saying "acquired RC T ELAPSED_MS TOKEN ACCEPTED" for each,
 * then "done". */
static int waiter_main(int argc, char **argv) {
  role r = {0};
  role_open(&r, argv[1], argv[2]);
  const char *fence = argv[3];
  int64_t wait_ms = atoll(argv[4]);
  for (int i = 5; i < argc; i++) {
    rlock_lock *l = role_lock(&r, fence, argv[i]);
    int64_t t0 = rt_now_us(), token = 0;
    int rc =
        role_acquire(&r, l, wait_ms, strcmp(fence, "-") != 0 ? &token : NULL);
    int64_t t1 = rt_now_us();
    int accepted = rc == RLOCK_OK && strcmp(fence, "-") != 0
                       ? fenced_write(fence, token)
                       : -1;
    say("acquired %d %lld %lld %lld %d\n", rc, (long long)t1,
        (long long)((t1 - t0) / 1000), (long long)token, accepted);
    if (rc == RLOCK_OK) {
      role_pause(&r, 20);
      role_release(&r, l);
    }
    rlock_lock_free(l);
  }
  role_close(&r);
  say("done\n");
  return 0;
}

/* `probe HOST PORT KEY [wait]`: SET KEY on a fresh connection (500 ms
 * timeouts), saying "ok" or "err WHY"; with "wait", connect first, say
 * "connected" and send only once a line comes on stdin. */
static int probe_main(int argc, char **argv) {
  struct timeval tv = {0, 500000};
  redisContext *c = redisConnectWithTimeout(argv[1], atoi(argv[2]), tv);
  if (c != NULL && !c->err)
    redisSetTimeout(c, tv);
  char line[16];
  if (argc == 5 && c != NULL && !c->err) {
    say("connected\n");
    if (fgets(line, sizeof line, stdin) == NULL)
      return 1;
  }
  redisReply *rep = c && !c->err ? redisCommand(c, "SET %s 1", argv[3]) : NULL;
  if (rep != NULL)
    say("ok\n");
  else
    say("err %s\n", c ? c->errstr : "out of memory");
  freeReplyObject(rep);
  redisFree(c);
  return 0;
}

/* Inner case in_<name>: `scenario`, an expression of `mode`, run with
 * blocking clients, then with loop clients. */
#define IN_BOTH_DRIVERS(name, scenario)                                        \
  static void in_##name(void **state) {                                        \
    (void)state;                                                               \
    const fk_mode modes[] = {FK_BLOCKING, FK_LOOP};                            \
    for (int i_ = 0; i_ < 2; i_++) {                                           \
      fk_mode mode = modes[i_];                                                \
      scenario;                                                                \
    }                                                                          \
  }

/* ---- inside the private namespace: the topology ------------------------- */

/* The namespaces of every scenario: the lock server's, and two sides of
 * clients. srv (the fixture's: counters, fenced resource) listens on the
 * router's own address, which no fault touches. */
enum { NS_S, NS_A, NS_B };
static rt_netns *net;
static rt_server *lsrv; /* the locks' server, in NS_S */

static int inner_setup(void **state) {
  (void)state;
  net = rt_netns_new();
  rt_netns_add(net, "srv");
  rt_netns_add(net, "a");
  rt_netns_add(net, "b");
  lsrv = fk_netns_servers(net, NS_S);
  return 0;
}

static int inner_teardown(void **state) {
  (void)state;
  return fk_netns_free(net, lsrv);
}

/* A client program in namespace `ns`: this binary with `args`. */
typedef struct prog {
  pid_t pid;
  int in, out;
  char what[24];  /* its role and mode, for failure messages */
  char last[256]; /* the last line it said */
} prog;

static prog run_in(int ns, const char *const *args) {
  const char *argv[16] = {fx_argv0, "--child"};
  int n = 2;
  for (int i = 0; args[i] != NULL && n < 15; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  prog p = {0};
  p.pid = rt_netns_spawn(net, ns, argv, &p.in, &p.out);
  snprintf(p.what, sizeof p.what, "%s %s", args[0],
           args[1] != NULL ? args[1] : "");
  return p;
}

static void prog_end(prog *p) {
  kill(p->pid, SIGKILL);
  waitpid(p->pid, NULL, 0);
  close(p->in);
  close(p->out);
}

/* What the program is doing, for a failure message: exited (how) or its
 * scheduler state and where it sleeps in the kernel. */
static void prog_state(const prog *p, char *buf, size_t size) {
  int status;
  pid_t got = waitpid(p->pid, &status, WNOHANG);
  if (got == p->pid) {
    snprintf(buf, size, "exited %d",
             WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    return;
  }
  char path[64], stat[256] = "", wchan[64] = "";
  snprintf(path, sizeof path, "/proc/%d/stat", (int)p->pid);
  FILE *f = fopen(path, "r");
  if (f != NULL && fgets(stat, sizeof stat, f) == NULL)
    stat[0] = '\0';
  if (f != NULL)
    fclose(f);
  snprintf(path, sizeof path, "/proc/%d/wchan", (int)p->pid);
  f = fopen(path, "r");
  if (f != NULL && fgets(wchan, sizeof wchan, f) == NULL)
    wchan[0] = '\0';
  if (f != NULL)
    fclose(f);
  const char *st = strrchr(stat, ')'); /* after "PID (COMM)" */
  snprintf(buf, size, "running, state %c, in %s", st && st[1] ? st[2] : '?',
           wchan[0] ? wchan : "?");
}

/* Read the program's next line, which must start with `word`; the numbers
 * after it into v (up to 5). When none comes within `ms` (scaled), the
 * failure says which program, what it said last and what it is doing. */
static void expect_line(prog *p, const char *word, long long v[5], int64_t ms) {
  char line[256];
  struct pollfd pf = {.fd = p->out, .events = POLLIN};
  int64_t deadline = rt_now_ms() + rt_scaled_ms(ms), left;
  while ((left = deadline - rt_now_ms()) > 0 && poll(&pf, 1, (int)left) < 0 &&
         errno == EINTR)
    ;
  if (left <= 0 || !(pf.revents & (POLLIN | POLLHUP))) {
    char state[160];
    prog_state(p, state, sizeof state);
    fail_msg("no '%s' line from the %s client (pid %d) within %lld ms; it "
             "last said '%s'; %s",
             word, p->what, (int)p->pid, (long long)rt_scaled_ms(ms), p->last,
             state);
  }
  fx_read_line(p->out, line, sizeof line, rt_scaled_ms(ms));
  snprintf(p->last, sizeof p->last, "%s", line);
  size_t wl = strlen(word);
  if (strncmp(line, word, wl) != 0 || (line[wl] != ' ' && line[wl] != '\0'))
    fail_msg("expected '%s ...' from the client, got '%s'", word, line);
  memset(v, 0, 5 * sizeof *v);
  if (line[wl] != '\0')
    sscanf(line + wl + 1, "%lld %lld %lld %lld %lld", &v[0], &v[1], &v[2],
           &v[3], &v[4]);
}

static void wait_subscribers(const char *channel, long long n) {
  fx_wait_subscribers(lsrv, channel, n, "the waiters' subscriptions");
}

static const char *mode_name(fk_mode m) {
  return m == FK_LOOP ? "loop" : "blocking";
}

/* ---- the harness's own test --------------------------------------------- */

static void probe_expect(int ns, const char *key, bool reaches) {
  char port[16];
  snprintf(port, sizeof port, "%d", rt_server_port(lsrv));
  const char *args[] = {"probe", rt_netns_addr(net, NS_S), port, key, NULL};
  prog p = run_in(ns, args);
  char line[256];
  fx_read_line(p.out, line, sizeof line, rt_scaled_ms(5000));
  prog_end(&p);
  if (reaches != (strcmp(line, "ok") == 0))
    fail_msg("probe from namespace %d: '%s', expected %s", ns, line,
             reaches ? "ok" : "a failure");
}

/* A one-way drop from the server to A: a request on a connection opened
 * before it arrives (its key is written), its answer does not. */
static void one_way_request(void) {
  char port[16];
  snprintf(port, sizeof port, "%d", rt_server_port(lsrv));
  prog p = run_in(NS_A, (const char *[]){"probe", rt_netns_addr(net, NS_S),
                                         port, "k:ow", "wait", NULL});
  long long v[5];
  expect_line(&p, "connected", v, 5000);
  rt_netns_drop(net, NS_S, NS_A, true);
  assert_int_equal(write(p.in, "go\n", 3), 3);
  expect_line(&p, "err", v, 5000); /* no answer within 500 ms */
  assert_int_equal(rt_cmd_int(lsrv, "EXISTS k:ow"), 1); /* but it arrived */
  rt_netns_heal(net);
  prog_end(&p);
}

/* The namespaces reach the server; a cut silences both ways, a one-way
 * drop lets a request in but not its answer (nor a new connection's
 * SYN-ACK); isolation cuts a namespace from everyone but the harness,
 * which reaches the server throughout (unix socket); healing restores. */
static void in_harness(void **state) {
  (void)state;
  freeReplyObject(rt_cmd(lsrv, "FLUSHALL"));
  probe_expect(NS_A, "k:a0", true);
  probe_expect(NS_B, "k:b0", true);
  rt_netns_cut(net, NS_A, NS_S, true);
  probe_expect(NS_A, "k:a1", false);
  probe_expect(NS_B, "k:b1", true);
  assert_int_equal(rt_cmd_int(lsrv, "EXISTS k:a1"), 0);
  rt_netns_heal(net);
  rt_netns_drop(net, NS_S, NS_A, true); /* answers to A are lost */
  assert_int_equal(rt_netns_rules(net), 1);
  probe_expect(NS_A, "k:a2", false);
  rt_netns_heal(net);
  probe_expect(NS_A, "k:a3", true);
  assert_int_equal(rt_cmd_int(lsrv, "EXISTS k:a0 k:b0 k:b1 k:a3"), 4);
  assert_int_equal(rt_cmd_int(lsrv, "EXISTS k:a2"), 0); /* never connected */
  one_way_request();
  rt_netns_isolate(net, NS_B, true);
  probe_expect(NS_B, "k:b2", false);
  redisReply *r = rt_cmd(lsrv, "PING"); /* the harness still gets in */
  assert_true(r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0);
  freeReplyObject(r);
  rt_netns_heal(net);
  probe_expect(NS_B, "k:b3", true);
}

static bool readable(int fd, int ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, ms) > 0;
}

static bool pred_closed_silent(void *arg, char *why, size_t cap) {
  int n = rt_proxy_closed_while_silent(arg);
  snprintf(why, cap, "%d silent connections closed by their client", n);
  return n >= 1;
}

/* The relay silences a subscriber connection without closing it: a
 * message published meanwhile does not arrive; after resume it does; a
 * silent connection its client closes is counted, and closed upstream. */
static void in_proxy(void **state) {
  (void)state;
  rt_proxy *px = rt_proxy_start(rt_netns_router_addr(),
                                rt_netns_addr(net, NS_S), rt_server_port(lsrv));
  struct timeval tv = {2, 0};
  redisContext *sub =
      redisConnectWithTimeout(rt_netns_router_addr(), rt_proxy_port(px), tv);
  assert_true(sub != NULL && !sub->err);
  redisSetTimeout(sub, tv);
  redisContext *plain =
      redisConnectWithTimeout(rt_netns_router_addr(), rt_proxy_port(px), tv);
  assert_true(plain != NULL && !plain->err);
  redisSetTimeout(plain, tv);
  redisReply *r = redisCommand(sub, "SUBSCRIBE px:ch");
  assert_non_null(r);
  freeReplyObject(r);
  assert_int_equal(rt_proxy_silence_subscribers(px), 1); /* not `plain` */
  assert_int_equal(rt_cmd_int(lsrv, "PUBLISH px:ch m1"), 1);
  assert_false(readable(sub->fd, 300)); /* nothing may come: a wait */
  r = redisCommand(plain, "PING");      /* the other connection still works */
  assert_true(r != NULL && r->type == REDIS_REPLY_STATUS);
  freeReplyObject(r);
  rt_proxy_resume(px);
  r = NULL;
  assert_int_equal(redisGetReply(sub, (void **)&r), REDIS_OK);
  assert_true(r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
              strcmp(r->element[2]->str, "m1") == 0);
  freeReplyObject(r);
  assert_int_equal(rt_proxy_silence_subscribers(px), 1);
  redisFree(sub);
  rt_wait_until(pred_closed_silent, px, rt_scaled_ms(5000),
                "the silent connection's close seen");
  fx_wait_subscribers(lsrv, "px:ch", 0, "the upstream side closed too");
  redisFree(plain);
  rt_proxy_free(px);
}

/* ---- direct scenarios: a holder cut off, a one-way cut ------------------ */

typedef struct renewal_seen {
  rt_server *s;
  const char *key;
  long long last;
} renewal_seen;

static bool pred_renewed(void *arg, char *why, size_t cap) {
  renewal_seen *w = arg;
  long long ttl = rt_cmd_int(w->s, "PTTL %s", w->key);
  bool up = w->last > 0 && ttl > w->last + 100;
  snprintf(why, cap, "PTTL %s went from %lld to %lld", w->key, w->last, ttl);
  w->last = ttl;
  return up;
}

/* Wait until the lock's PTTL goes up: a renewal reached the server (so
 * the holder's connections and scripts are in place before a fault). */
static void wait_renewed(rt_server *s, const char *key) {
  renewal_seen w = {s, key, 0};
  rt_wait_until(pred_renewed, &w, rt_scaled_ms(5000), "a renewal");
}

/* The MONITOR lines after the "part-monitor-cut" mark (cut_begin's) and
 * before the end mark (sent now through the harness's connection) that
 * came from `addr`: requests the server ran while its answers to `addr`
 * were being dropped. */
static int monitor_count_from(fx_monitor *m, const char *addr) {
  freeReplyObject(rt_cmd(lsrv, "ECHO part-monitor-end"));
  char who[40];
  snprintf(who, sizeof who, " %s:", addr);
  int n = 0;
  bool cut = false;
  for (;;) {
    redisReply *r = NULL;
    if (redisGetReply(m->c, (void **)&r) != REDIS_OK || r == NULL)
      fail_msg("MONITOR: no end mark");
    bool status = r->type == REDIS_REPLY_STATUS;
    bool end = status && strstr(r->str, "part-monitor-end") != NULL;
    n += cut && status && strstr(r->str, who) != NULL;
    cut = cut || (status && strstr(r->str, "part-monitor-cut") != NULL);
    freeReplyObject(r);
    if (end)
      break;
  }
  redisFree(m->c);
  return n;
}

/* Cut A from the server: both ways, or (one_way) only the server's
 * packets to A, with a MONITOR started before the rule and a mark sent
 * after it (monitor_count_from counts what A sent after the mark). The
 * rule is a program run in the router (rt_netns_drop), which can take a
 * while on a loaded machine: *asked is when it was asked for, the
 * returned time when it was in place; the cut began in between. */
static int64_t cut_begin(bool one_way, fx_monitor *mon, int64_t *asked) {
  if (one_way)
    fx_monitor_start(mon, lsrv);
  *asked = rt_now_us();
  if (one_way)
    rt_netns_drop(net, NS_S, NS_A, true);
  else
    rt_netns_cut(net, NS_A, NS_S, true);
  int64_t in_place = rt_now_us();
  if (one_way)
    freeReplyObject(rt_cmd(lsrv, "ECHO part-monitor-cut"));
  return in_place;
}

/* The holder, told at `told` (µs) that it lost the lock: one lease after
 * its last confirmed renewal, which was sent at most a renewal period
 * before the cut began (between `asked` and `in_place`) and answered
 * before it. */
static void told_within(int64_t told, int64_t asked, int64_t in_place) {
  long long after_asked = (told - asked) / 1000;
  long long after_in_place = (told - in_place) / 1000;
  if (after_asked < LEASE_MS / 2 ||
      after_in_place > rt_scaled_ms(LEASE_MS + SLACK_MS))
    fail_msg("the holder was told %lld ms after the cut was asked for and "
             "%lld ms after it was in place: expected at least %d ms after "
             "the first, at most %lld ms after the second",
             after_asked, after_in_place, LEASE_MS / 2,
             (long long)rt_scaled_ms(LEASE_MS + SLACK_MS));
}

/* A holder in A, a waiter in B and one in A (both waiting, subscribed);
 * then A is cut from the server (both ways, or only the server's packets
 * to A) for CUT_MS. The holder must be told within one lease, and must
 * not have believed it held the lock once B had it; both waiters get the
 * lock within their waits; the holder's release says RLOCK_ELOST and the
 * lost-lock callback ran. */
static void holder_partition(fk_mode mode, bool one_way) {
  freeReplyObject(rt_cmd(lsrv, "FLUSHALL"));
  const char *url = rt_server_url(lsrv), *m = mode_name(mode);
  char wb_wait[16], wa_wait[16];
  snprintf(wb_wait, sizeof wb_wait, "%d", 5000);
  snprintf(wa_wait, sizeof wa_wait, "%d", CUT_MS + 4000);
  prog h = run_in(NS_A, (const char *[]){"holder", m, url, "-", LOCK, NULL});
  long long v[5];
  expect_line(&h, "held", v, 10000);
  prog wb = run_in(
      NS_B, (const char *[]){"waiter", m, url, "-", wb_wait, LOCK, NULL});
  prog wa = run_in(
      NS_A, (const char *[]){"waiter", m, url, "-", wa_wait, LOCK, NULL});
  wait_subscribers(CHANNEL(LOCK), 2);
  wait_renewed(lsrv, LOCK);
  fx_monitor mon;
  int64_t asked, cut = cut_begin(one_way, &mon, &asked);
  expect_line(&h, "told", v, LEASE_MS + 2000);
  assert_int_equal(v[0], RLOCK_ELOST);
  long long told_ms = (v[1] - cut) / 1000, last_ok = v[2];
  told_within(v[1], asked, cut);
  expect_line(&wb, "acquired", v, 5000 + 2000);
  assert_int_equal(v[0], RLOCK_OK);
  ASSERT_BETWEEN(v[2], 0, 5000 + SLACK_MS);
  if (last_ok >= v[1])
    fail_msg("the holder still held at %lld us, after B got it at %lld",
             last_ok, v[1]);
  long long b_ms = (v[1] - cut) / 1000;
  rt_sleep_ms(CUT_MS - (rt_now_us() - cut) / 1000); /* the cut itself */
  int arrived =
      one_way ? monitor_count_from(&mon, rt_netns_addr(net, NS_A)) : -1;
  int64_t healed = rt_now_us();
  rt_netns_heal(net);
  /* A waiter on the cut side gets the lock after the heal, or, when an
   * attempt of its was in flight as the link went silent, RLOCK_ETIMEOUT:
   * that attempt may have been applied (in a one-way cut it was), so it
   * is not sent blindly again. Either within its wait. */
  expect_line(&wa, "acquired", v, CUT_MS + 4000 + 2000);
  if (v[0] != RLOCK_OK && v[0] != RLOCK_ETIMEOUT)
    fail_msg("waiter A: %lld (%s)", v[0], rlock_strerror((int)v[0]));
  ASSERT_BETWEEN(v[2], 0, CUT_MS + 4000 + SLACK_MS);
  long long a_rc = v[0], a_ms = (v[1] - (a_rc ? cut : healed)) / 1000;
  expect_line(&wb, "done", v, 5000);
  expect_line(&wa, "done", v, 5000);
  assert_int_equal(write(h.in, "r\n", 2), 2);
  expect_line(&h, "released", v, 5000);
  assert_int_equal(v[0], RLOCK_ELOST);
  assert_true(v[2] != 0); /* the lost-lock callback ran */
  long long cb_ms = (v[2] - cut) / 1000;
  ASSERT_BETWEEN(cb_ms, 0, LEASE_MS + LEASE_MS / 3 + SLACK_MS);
  print_message("[ PARTITION] %s %s: cut in place after %lld ms; holder "
                "told after %lld ms (callback %lld ms), waiter B got the "
                "lock after %lld ms, waiter A %s %lld ms after the %s",
                one_way ? "one-way" : "client-cut", m,
                (long long)(cut - asked) / 1000, told_ms, cb_ms, b_ms,
                a_rc == RLOCK_OK ? "got it" : "timed out (RLOCK_ETIMEOUT)",
                a_ms, a_rc == RLOCK_OK ? "heal" : "cut");
  if (one_way)
    print_message("; %d requests from A arrived during the cut", arrived);
  print_message("\n");
  if (one_way && arrived < 1)
    fail_msg("no request from A arrived: not a one-way cut");
  prog_end(&h);
  prog_end(&wa);
  prog_end(&wb);
}

IN_BOTH_DRIVERS(client_cut, holder_partition(mode, false))

IN_BOTH_DRIVERS(one_way, holder_partition(mode, true))

/* ---- direct scenario: no answer to a connect ---------------------------- */

/* The server's packets to A dropped from the start, so a client in A
 * that connects gets no SYN-ACK: each connect times out (the roles'
 * connect timeout is 500 ms). A holder started there with a 5 s wait
 * rides this outage out as it rides out a refused connection
 * (rlock_config_set_unreachable_retry_ms), saying nothing during the
 * CUT_MS the drop lasts, and takes the lock once it is healed. */
static void connect_unanswered(fk_mode mode) {
  freeReplyObject(rt_cmd(lsrv, "FLUSHALL"));
  rt_netns_drop(net, NS_S, NS_A, true);
  prog h = run_in(NS_A, (const char *[]){"holder", mode_name(mode),
                                         rt_server_url(lsrv), "-", LOCK, NULL});
  struct pollfd pf = {.fd = h.out, .events = POLLIN};
  int64_t end = rt_now_ms() + CUT_MS, left;
  while ((left = end - rt_now_ms()) > 0 && poll(&pf, 1, (int)left) <= 0)
    ;
  long long v[5];
  if (left > 0) { /* it said something during the outage: show it */
    expect_line(&h, "held", v, 1000);
    fail_msg("the %s holder took the lock through a one-way drop",
             mode_name(mode));
  }
  rt_netns_heal(net);
  int64_t healed = rt_now_us();
  expect_line(&h, "held", v, 5000);
  print_message("[ PARTITION] connects unanswered %s: held %lld ms after "
                "the heal\n",
                mode_name(mode), (long long)(rt_now_us() - healed) / 1000);
  assert_int_equal(write(h.in, "r\n", 2), 2);
  expect_line(&h, "released", v, 5000);
  assert_int_equal(v[0], RLOCK_OK);
  prog_end(&h);
}

IN_BOTH_DRIVERS(connect_unanswered, connect_unanswered(mode))

/* ---- direct scenario: a subscriber gone silent -------------------------- */

/* Through the relay: a holder in A holds LOCK and LOCK2; a waiter in B
 * waits for LOCK, then LOCK2. Its subscriber connection is silenced; the
 * holder releases LOCK (the message never arrives): the waiter wakes by
 * the lock's TTL, within a lease. Its subscription to LOCK2 then goes to
 * the silent connection, is never confirmed, and the health check drops
 * that connection (the relay sees its client close it) and subscribes
 * again on a new one, where LOCK2's release reaches it. */
static void silent_subscriber(fk_mode mode) {
  freeReplyObject(rt_cmd(lsrv, "FLUSHALL"));
  rt_proxy *px = rt_proxy_start(rt_netns_router_addr(),
                                rt_netns_addr(net, NS_S), rt_server_port(lsrv));
  const char *url = rt_proxy_url(px), *m = mode_name(mode);
  prog h =
      run_in(NS_A, (const char *[]){"holder", m, url, "-", LOCK, LOCK2, NULL});
  long long v[5];
  expect_line(&h, "held", v, 10000);
  prog w = run_in(
      NS_B, (const char *[]){"waiter", m, url, "-", "8000", LOCK, LOCK2, NULL});
  wait_subscribers(CHANNEL(LOCK), 1);
  int silenced = rt_proxy_silence_subscribers(px);
  assert_true(silenced >= 1);
  assert_int_equal(write(h.in, "r\n", 2), 2);
  expect_line(&h, "released", v, 5000);
  assert_int_equal(v[0], RLOCK_OK);
  long long released = v[1];
  expect_line(&w, "acquired", v, LEASE_MS + 5000);
  assert_int_equal(v[0], RLOCK_OK);
  long long ttl_wake_ms = (v[1] - released) / 1000;
  ASSERT_BETWEEN(ttl_wake_ms, 0, LEASE_MS + SLACK_MS);
  int64_t t0 = rt_now_ms();
  rt_wait_until(pred_closed_silent, px, rt_scaled_ms(5000),
                "the silent subscriber dropped by its client");
  long long drop_ms = rt_now_ms() - t0;
  wait_subscribers(CHANNEL(LOCK2), 1); /* on a new connection */
  assert_int_equal(write(h.in, "r\n", 2), 2);
  expect_line(&h, "released", v, 5000);
  released = v[1];
  expect_line(&w, "acquired", v, 5000);
  assert_int_equal(v[0], RLOCK_OK);
  long long wake2_ms = (v[1] - released) / 1000;
  ASSERT_BETWEEN(wake2_ms, 0, LEASE_MS + SLACK_MS);
  expect_line(&w, "done", v, 5000);
  print_message("[ PARTITION] silent-subscriber %s: %d connection(s) "
                "silenced; woken by the TTL %lld ms after the release; the "
                "silent connection dropped %lld ms after, the next waiter "
                "woken %lld ms after its release\n",
                m, silenced, ttl_wake_ms, drop_ms, wake2_ms);
  prog_end(&h);
  prog_end(&w);
  rt_proxy_free(px);
}

IN_BOTH_DRIVERS(silent_sub, silent_subscriber(mode))

/* ---- checker scenarios ----------------------------------------------------
 */

static const char *kit_url;
static const char *kit_url_of(int id) {
  (void)id;
  return kit_url;
}
/* Workers 0 and 1 on side A (the side the faults hit), 2 and 3 on B. */
static const char *const *kit_prefix_of(int id) {
  return rt_netns_prefix(net, id < FK_WORKERS / 2 ? NS_A : NS_B);
}

static void kit_use(const char *url) {
  freeReplyObject(rt_cmd(lsrv, "FLUSHALL"));
  kit_url = url;
  fk.url_of = kit_url_of;
  fk.prefix_of = kit_prefix_of;
  fk.counter_host = rt_netns_router_addr();
}

/* Print the failed acquisitions of the history just judged, by side (A:
 * workers 0 and 1) and status: which side the fault kept from the locks,
 * and how it was told. */
static void print_failures(const char *name) {
  int count[2][32] = {{0}};
  FILE *f = fopen(fk.hist_path, "rb");
  rt_record rec;
  while (f != NULL && fread(&rec, sizeof rec, 1, f) == 1)
    if (rec.ev == RT_EV_ACQUIRE_FAILED && rec.a < 0 && rec.a > -32 &&
        rec.worker >= 0 && rec.worker < FK_WORKERS)
      count[rec.worker >= FK_WORKERS / 2][-rec.a]++;
  if (f != NULL)
    fclose(f);
  print_message("[ PARTITION] %s%s failed calls:", name,
                fk.mode == FK_LOOP ? " (loop)" : "");
  for (int side = 0; side < 2; side++)
    for (int k = 1; k < 32; k++)
      if (count[side][k] > 0)
        print_message(" side %c %d %s;", side ? 'B' : 'A', count[side][k],
                      rlock_strerror(-k));
  print_message("\n");
}

static unsigned seed = 2222;

/* Side A cut from the server (both ways, or one way: the server's packets
 * to A dropped) for 1.5 leases, again and again. */
static void kit_cut(const char *name, fk_mode mode, bool one_way) {
  kit_use(rt_server_url(lsrv));
  int fd = fk_begin(name, mode), faults = 0;
  for (int64_t t0 = rt_now_ms(); fk_running(t0); faults++) {
    rt_sleep_ms(300 + rand_r(&seed) % 300); /* the faults' rhythm */
    rt_history_add(fd, -1, -1, RT_EV_FAULT, one_way ? 'O' : 'X', 0, 0);
    if (one_way)
      rt_netns_drop(net, NS_S, NS_A, true);
    else
      rt_netns_cut(net, NS_A, NS_S, true);
    rt_sleep_ms(LEASE_MS * 3 / 2); /* the cut itself */
    rt_netns_heal(net);
  }
  rt_verdict v = fk_finish(fd, name, 1);
  print_failures(name);
  assert_true(faults > 0 && v.faults == faults);
}

IN_BOTH_DRIVERS(kit_cut, kit_cut("partition-cut", mode, false))

IN_BOTH_DRIVERS(kit_one_way, kit_cut("partition-one-way", mode, true))

/* Every worker through the relay; its subscriber connections silenced
 * every 0.3-0.6 s (never resumed: a forgotten flow). */
static void kit_silent(fk_mode mode) {
  rt_proxy *px = rt_proxy_start(rt_netns_router_addr(),
                                rt_netns_addr(net, NS_S), rt_server_port(lsrv));
  kit_use(rt_proxy_url(px));
  int fd = fk_begin("silent-subscriber", mode), silenced = 0;
  for (int64_t t0 = rt_now_ms(); fk_running(t0);) {
    rt_sleep_ms(300 + rand_r(&seed) % 300);
    rt_history_add(fd, -1, -1, RT_EV_FAULT, 'Q', 0, 0);
    silenced += rt_proxy_silence_subscribers(px);
  }
  rt_verdict v = fk_finish(fd, "silent-subscriber", 1);
  print_failures("silent-subscriber");
  print_message("[ PARTITION] silent-subscriber %s: %d connections "
                "silenced, %d of them closed by their client\n",
                mode_name(mode), silenced, rt_proxy_closed_while_silent(px));
  rt_proxy_free(px);
  assert_true(silenced > 0 && v.faults > 0);
}

IN_BOTH_DRIVERS(kit_silent, kit_silent(mode))

/* Wait until the workers have recorded `n` more acquisitions: the
 * workload is at work (before a fault, or again after it). */
static void wait_acquisitions(int n) {
  fk_wait_acquisitions(fk_history_size(), n);
}

/* ---- Sentinel: split brain ---------------------------------------------- */

/* More namespaces: the Sentinel master's (with side A: the minority), its
 * two replicas' and the three sentinels' (with side B: the majority). */
enum { NS_M = 3, NS_R, NS_SEN };

static rt_sentinel_group *split_group(void) {
  if (rt_netns_count(net) == NS_M) {
    rt_netns_add(net, "m");
    rt_netns_add(net, "r");
    rt_netns_add(net, "sen");
  }
  rt_sentinel_place pl = {{NULL}};
  for (int i = 0; i < 3; i++) {
    int ns = i == 0 ? NS_M : NS_R;
    pl.server_host[i] = rt_netns_addr(net, ns);
    pl.server_prefix[i] = rt_netns_prefix(net, ns);
    pl.sentinel_host[i] = rt_netns_addr(net, NS_SEN);
    pl.sentinel_prefix[i] = rt_netns_prefix(net, NS_SEN);
  }
  return rt_sentinel_start_placed("splitmaster", 2, 3, &pl);
}

/* The master and side A on one side, everything else on the other. */
static void split(void) {
  const int minority[] = {NS_M, NS_A}, majority[] = {NS_R, NS_SEN, NS_B};
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      rt_netns_cut(net, minority[i], majority[j], true);
}

/* min-replicas-to-write 1, min-replicas-max-lag 1 on every data server:
 * a master that has heard from no replica for a second refuses writes. */
static void min_replicas(rt_sentinel_group *g) {
  for (int i = 0; i < rt_sentinel_nservers(g); i++) {
    rt_cmd_ok(rt_sentinel_server(g, i), "CONFIG SET min-replicas-to-write 1");
    rt_cmd_ok(rt_sentinel_server(g, i), "CONFIG SET min-replicas-max-lag 1");
  }
}

static const char *fence_addr(void) {
  static char buf[64];
  snprintf(buf, sizeof buf, "%s:%d", rt_netns_router_addr(),
           rt_server_port(srv));
  return buf;
}

/* What the two holders of a split showed (times in µs, from the cut). */
typedef struct stale_end {
  long long b_at, b_ms, token_b; /* B's acquisition: when, ms after the cut,
                                    and its token */
  long long told_at, last_ok;    /* the old holder told RLOCK_ELOST (0:
                                    not), and its last confirmed renewal */
  long long accepted;            /* the old holder's late write accepted */
} stale_end;

/* Once the cut at `cut` has let a new holder in: a waiter on side B
 * (driver `m`, `url`) takes `name` and writes its token (accepted), then
 * the old holder `h` writes its own; its "told" line may come first.
 * Returns B, to end. */
static prog stale_writes(prog *h, const char *m, const char *url,
                         const char *name, int64_t cut, stale_end *o) {
  long long v[5], check = 0;
  prog b = run_in(NS_B, (const char *[]){"waiter", m, url, fence_addr(),
                                         "20000", name, NULL});
  expect_line(&b, "acquired", v, 25000);
  assert_int_equal(v[0], RLOCK_OK);
  *o = (stale_end){v[1], (v[1] - cut) / 1000, v[3], 0, 0, -1};
  assert_int_equal(v[4], 1); /* B's write accepted */
  assert_int_equal(write(h->in, "w\n", 2), 2);
  char line[256];
  while (o->accepted < 0) {
    fx_read_line(h->out, line, sizeof line, rt_scaled_ms(5000));
    if (sscanf(line, "told %*d %lld %lld", &o->told_at, &o->last_ok) == 2)
      continue;
    if (sscanf(line, "wrote %lld %lld", &o->accepted, &check) != 2)
      fail_msg("unexpected line from the holder: '%s'", line);
  }
  return b;
}

/* The old holder must be told within `ms` if it was not yet. */
static void stale_told(prog *h, stale_end *o, int ms) {
  char line[256];
  if (o->told_at != 0)
    return;
  fx_read_line(h->out, line, sizeof line, rt_scaled_ms(ms));
  if (sscanf(line, "told %*d %lld %lld", &o->told_at, &o->last_ok) != 2)
    fail_msg("the old holder was not told: '%s'", line);
}

/* A holder on side A holds a fenced lock through the partition; the
 * majority's sentinels promote a replica; then a client on side B takes
 * the lock there and writes its token to the fenced resource (on the
 * router, which both sides reach); then the old holder writes its own.
 * Counted: whether the two holds overlapped (the old holder still held by
 * its own account once B had the lock), and whether the stale holder was
 * told (RLOCK_ELOST) or refused by the fenced resource: one of them is
 * required. */
static void split_brain(fk_mode mode, bool guarded) {
  rt_sentinel_group *g = split_group();
  if (guarded)
    min_replicas(g);
  freeReplyObject(rt_cmd(srv, "DEL fault:res:{part} fault:seq:{part}"));
  const char *url = rt_sentinel_url(g), *m = mode_name(mode);
  prog h = run_in(NS_A,
                  (const char *[]){"holder", m, url, fence_addr(), LOCK, NULL});
  long long v[5];
  expect_line(&h, "held", v, 10000);
  long long token_a = v[0];
  wait_renewed(rt_sentinel_master(g), LOCK);
  int64_t cut = rt_now_us();
  split();
  rt_sentinel_wait_failover(g, rt_scaled_ms(30000));
  long long failover_ms = (rt_now_us() - cut) / 1000;
  stale_end o;
  prog b = stale_writes(&h, m, url, LOCK, cut, &o);
  if (guarded) /* refused renewals: told within a lease */
    stale_told(&h, &o, LEASE_MS + 3000);
  bool overlap = o.told_at == 0 || o.last_ok >= o.b_at;
  print_message("[ PARTITION] split-brain %s%s: failover after %lld ms; B "
                "got the lock after %lld ms (token %lld, accepted); the old "
                "holder (token %lld) %s, its late write %s: %s\n",
                m, guarded ? " (min-replicas-to-write 1)" : "", failover_ms,
                o.b_ms, o.token_b, token_a,
                o.told_at ? "was told RLOCK_ELOST" : "was never told",
                o.accepted ? "ACCEPTED" : "refused",
                overlap ? "1 overlap" : "no overlap");
  if (o.told_at)
    print_message("[ PARTITION]   told %lld ms after the cut\n",
                  (o.told_at - cut) / 1000);
  if (o.accepted && o.told_at == 0)
    fail_msg("the stale holder was neither told nor refused");
  rt_netns_heal(net);
  prog_end(&h);
  prog_end(&b);
  rt_sentinel_free(g);
}

/* The checker's run: workers 0 and 1 on the master's side, 2 and 3 on
 * the majority's; the partition begins once they have taken the locks 50
 * times and lasts until the sentinels have promoted a replica, the
 * majority's workers have taken the locks 20 times there, and the run's
 * time is up. */
static void kit_split(fk_mode mode) {
  rt_sentinel_group *g = split_group();
  kit_use(rt_sentinel_url(g));
  int fd = fk_begin("split-brain", mode);
  int64_t t0 = rt_now_ms();
  wait_acquisitions(50); /* the workload first */
  rt_history_add(fd, -1, -1, RT_EV_FAULT, 'S', 0, 0);
  split();
  rt_sentinel_wait_failover(g, rt_scaled_ms(30000));
  long long failover_ms = rt_sentinel_failover_ms(g);
  wait_acquisitions(20); /* the majority at work on the new master */
  while (fk_running(t0))
    rt_sleep_ms(100); /* the partition lasts the run */
  rt_verdict v = fk_finish(fd, "split-brain", 0);
  print_failures("split-brain");
  rt_netns_heal(net);
  rt_sentinel_free(g);
  print_message("[ PARTITION] split-brain %s: failover after %lld ms\n",
                mode_name(mode), failover_ms);
  assert_true(v.faults == 1);
}

IN_BOTH_DRIVERS(kit_split, kit_split(mode))

IN_BOTH_DRIVERS(split_brain, split_brain(mode, false))

IN_BOTH_DRIVERS(split_brain_guarded, split_brain(mode, true))

/* ---- Cluster: a master on the minority side ------------------------------ */

/* Three masters with a replica each: master 0 alone in one namespace (with
 * side A), the five other nodes in another (with side B). */
enum { NS_C0 = 3, NS_C1 };
#define CL_REPLICA_OF_0 3 /* rt_cluster's index of master 0's replica */

static rt_cluster *minority_cluster(void) {
  if (rt_netns_count(net) == NS_C0) {
    rt_netns_add(net, "c0");
    rt_netns_add(net, "c1");
  }
  const char *host[6];
  const char *const *prefix[6];
  for (int i = 0; i < 6; i++) {
    host[i] = rt_netns_addr(net, i == 0 ? NS_C0 : NS_C1);
    prefix[i] = rt_netns_prefix(net, i == 0 ? NS_C0 : NS_C1);
  }
  return rt_cluster_start_placed(3, 1, host, prefix);
}

static void cluster_split(void) {
  const int minority[] = {NS_C0, NS_A}, majority[] = {NS_C1, NS_B};
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      rt_netns_cut(net, minority[i], majority[j], true);
}

static bool pred_promoted(void *arg, char *why, size_t cap) {
  snprintf(why, cap, "node %d is not a master yet", CL_REPLICA_OF_0);
  return rt_cluster_is_master(arg, CL_REPLICA_OF_0);
}

/* Master 0's replica promoted by the majority (past cluster-node-timeout
 * and its election); how long it took from `cut` (µs). */
static long long wait_promoted(rt_cluster *cl, int64_t cut) {
  rt_wait_until(pred_promoted, cl, rt_scaled_ms(30000),
                "the minority master's replica promoted");
  return (rt_now_us() - cut) / 1000;
}

/* A holder on side A holds a fenced lock on master 0; side A and master 0
 * are cut from the rest past cluster-node-timeout. Master 0, seeing no
 * majority, refuses writes after the node timeout, so the holder's
 * renewals fail and it is told; the majority promotes the replica, where
 * a client on side B takes the lock and writes its token, then the old
 * holder writes its own. The stale holder must be told or refused. */
static void cluster_minority(fk_mode mode) {
  rt_cluster *cl = minority_cluster();
  char name[64];
  rt_cluster_key_on(cl, 0, "part:", name, sizeof name);
  freeReplyObject(rt_cmd(srv, "DEL fault:res:{part} fault:seq:{part}"));
  const char *url = rt_cluster_url(cl), *m = mode_name(mode);
  prog h = run_in(NS_A,
                  (const char *[]){"holder", m, url, fence_addr(), name, NULL});
  long long v[5];
  expect_line(&h, "held", v, 10000);
  long long token_a = v[0];
  wait_renewed(rt_cluster_node(cl, 0), name);
  int64_t cut = rt_now_us();
  cluster_split();
  long long promoted_ms = wait_promoted(cl, cut);
  stale_end o;
  prog b = stale_writes(&h, m, url, name, cut, &o);
  stale_told(&h, &o, LEASE_MS + 5000); /* master 0 refuses its renewals */
  bool overlap = o.last_ok >= o.b_at;
  print_message("[ PARTITION] cluster-minority %s: replica promoted after "
                "%lld ms; B got the lock after %lld ms (token %lld); the old "
                "holder (token %lld) told after %lld ms, its late write %s: "
                "%s\n",
                m, promoted_ms, o.b_ms, o.token_b, token_a,
                (o.told_at - cut) / 1000, o.accepted ? "ACCEPTED" : "refused",
                overlap ? "1 overlap" : "no overlap");
  if (overlap && o.accepted)
    fail_msg("an overlap whose stale holder was neither told in time nor "
             "refused");
  rt_netns_heal(net);
  prog_end(&h);
  prog_end(&b);
  rt_cluster_free(cl);
}

IN_BOTH_DRIVERS(cluster_minority, cluster_minority(mode))

/* The checker's run: workers 0 and 1 with master 0, 2 and 3 with the
 * rest; the partition from the workers' 50th acquisition until the
 * replica is promoted, 20 more acquisitions were made, and the run's
 * time is up. */
static void kit_cluster(fk_mode mode) {
  rt_cluster *cl = minority_cluster();
  kit_use(rt_cluster_url(cl));
  int fd = fk_begin("cluster-minority", mode);
  int64_t t0 = rt_now_ms();
  wait_acquisitions(50); /* the workload first */
  rt_history_add(fd, -1, -1, RT_EV_FAULT, 'M', 0, 0);
  int64_t cut = rt_now_us();
  cluster_split();
  long long promoted_ms = wait_promoted(cl, cut);
  wait_acquisitions(20); /* the majority at work on the new master */
  while (fk_running(t0))
    rt_sleep_ms(100); /* the partition lasts the run */
  rt_verdict v = fk_finish(fd, "cluster-minority", 0);
  print_failures("cluster-minority");
  rt_netns_heal(net);
  rt_cluster_free(cl);
  print_message("[ PARTITION] cluster-minority %s: replica promoted after "
                "%lld ms\n",
                mode_name(mode), promoted_ms);
  assert_true(v.faults == 1);
}

IN_BOTH_DRIVERS(kit_cluster, kit_cluster(mode))

/* ---- running the inner tests -------------------------------------------- */

/* The scenarios, in their order: each inner case in_<name> runs in the
 * private namespace; the outer case test_<name> (the name the ctest shards
 * select) runs it there. */
#define PARTITION_CASES(X)                                                     \
  X(harness)                                                                   \
  X(proxy)                                                                     \
  X(client_cut)                                                                \
  X(one_way)                                                                   \
  X(connect_unanswered)                                                        \
  X(silent_sub)                                                                \
  X(kit_cut)                                                                   \
  X(kit_one_way)                                                               \
  X(kit_silent)                                                                \
  X(split_brain)                                                               \
  X(split_brain_guarded)                                                       \
  X(kit_split)                                                                 \
  X(cluster_minority)                                                          \
  X(kit_cluster)
#define INNER_CASE(name) cmocka_unit_test(in_##name),
static const struct CMUnitTest inner_tests[] = {PARTITION_CASES(INNER_CASE)};

/* `netns TEST`: the inner test TEST, in the private namespace. */
static int netns_main(const char *name) {
  cmocka_set_test_filter(name);
  return cmocka_run_group_tests(inner_tests, inner_setup, inner_teardown);
}

static int child_main(int argc, char **argv) {
  int rc = fk_child_main(argc, argv);
  if (rc >= 0)
    return rc;
  if (argc >= 5 && strcmp(argv[0], "holder") == 0)
    return holder_main(argc, argv);
  if (argc >= 6 && strcmp(argv[0], "waiter") == 0)
    return waiter_main(argc, argv);
  if ((argc == 4 || argc == 5) && strcmp(argv[0], "probe") == 0)
    return probe_main(argc, argv);
  if (argc == 2 && strcmp(argv[0], "netns") == 0)
    return netns_main(argv[1]);
  return 64;
}

PARTITION_CASES(FK_OUTER)

#define OUTER_CASE(name) cmocka_unit_test(test_##name),
static const struct CMUnitTest tests[] = {PARTITION_CASES(OUTER_CASE)};

/* FX_MAIN, except that a machine that cannot make the namespaces skips
 * the whole file with exit status 77 (ctest: SKIP_RETURN_CODE), saying
 * why. */
int main(int argc, char **argv) {
  fx_argv0 = argv[0];
  if (argc > 2 && strcmp(argv[1], "--child") == 0)
    return child_main(argc - 2, argv + 2);
  const char *why = rt_netns_unavailable();
  if (why != NULL) {
    printf("test_faults_partition: %s: every scenario skipped\n", why);
    return 77;
  }
  return RT_RUN_GROUP("tests", tests, NULL, NULL);
}
