/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: the `rlock` command-line tool, run as a subprocess
 * ($RLOCK_TEST_BINDIR/rlock) against a real redis-server. Each test uses
 * its own lock names on one shared server. */
#include "fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

/* srv: the binary's shared server (fixture.h) */
static char cli[4096];    /* path of the rlock binary */
static char url[64];      /* the server */
static char dead_url[64]; /* a port where nothing listens */
static double time_scale = 1;

/* Upper bounds of timing assertions stretch for slow instrumented builds. */
#define SCALED(ms) ((int64_t)((ms)*time_scale))
/* A NULL-terminated argument list (without the program name). */
#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
/* Such a list that starts with "-u URL" (the shared server). */
#define ON_URL(...) ARGS("-u", url, __VA_ARGS__)

#define OUT_MAX 16384

/* One rlock subprocess: stdout and stderr are captured through pipes. */
typedef struct proc {
  pid_t pid;
  int fd[2];            /* read ends for stdout, stderr; -1 when closed */
  char out[2][OUT_MAX]; /* what was read, NUL-terminated */
  size_t len[2];
  int status; /* shell style: exit status, or 128+N */
  int64_t started, ended;
} proc;

/* How to start one: NULL/-1/0 fields mean the defaults. */
typedef struct proc_opts {
  const char *rlock_url; /* value for $RLOCK_URL; NULL: unset */
  int stderr_fd;         /* give the child this fd as stderr, if >= 0 */
  int ignore_hup;        /* start rlock with SIGHUP ignored, as nohup does */
  int huge_stack;        /* RLIMIT_STACK of 1 TiB: glibc's threads ask for that
                            much stack, which the kernel refuses to map */
} proc_opts;

/* ---- subprocess plumbing ------------------------------------------------ */

/* environ without RLOCK_URL, plus RLOCK_URL=`value` if not NULL. Built in
 * the parent: the child of a threaded process must not call malloc. */
static char **make_env(const char *value, char *slot, size_t size) {
  size_t n = 0, k = 0;
  while (environ[n] != NULL)
    n++;
  char **env = calloc(n + 2, sizeof *env);
  assert_non_null(env);
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "RLOCK_URL=", 10) != 0)
      env[k++] = environ[i];
  if (value != NULL) {
    snprintf(slot, size, "RLOCK_URL=%s", value);
    env[k++] = slot;
  }
  return env;
}

/* Known signal state for rlock, whatever the test was started with (a
 * shell's background job starts with SIGINT ignored): default dispositions
 * of the signals rlock handles, nothing blocked. Async-signal-safe. */
static void child_signals(int ignore_hup) {
  const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction sa = {.sa_handler = SIG_DFL};
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 3; i++) {
    sa.sa_handler = sigs[i] == SIGHUP && ignore_hup ? SIG_IGN : SIG_DFL;
    sigaction(sigs[i], &sa, NULL);
  }
  sigprocmask(SIG_SETMASK, &sa.sa_mask, NULL);
}

static void child_setup(int out_w, int err_w, const proc_opts *o) {
  if (dup2(out_w, STDOUT_FILENO) < 0 ||
      dup2(o->stderr_fd >= 0 ? o->stderr_fd : err_w, STDERR_FILENO) < 0)
    _exit(126);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull < 0 || dup2(devnull, STDIN_FILENO) < 0)
    _exit(126);
  child_signals(o->ignore_hup);
  if (o->huge_stack) {
    struct rlimit rl = {(rlim_t)1 << 40, (rlim_t)1 << 40};
    getrlimit(RLIMIT_STACK, &rl);
    rl.rlim_cur = (rlim_t)1 << 40;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < rl.rlim_cur)
      rl.rlim_max = rl.rlim_cur; /* root may raise it */
    setrlimit(RLIMIT_STACK, &rl);
  }
}

static void proc_start_opts(proc *p, const proc_opts *o,
                            const char *const *args) {
  const char *argv[64] = {cli};
  size_t n = 1;
  for (; args[n - 1] != NULL; n++) {
    assert_true(n < 63);
    argv[n] = args[n - 1];
  }
  int pout[2], perr[2];
  char slot[256];
  assert_int_equal(pipe2(pout, O_CLOEXEC), 0);
  assert_int_equal(pipe2(perr, O_CLOEXEC), 0);
  char **env = make_env(o->rlock_url, slot, sizeof slot);
  memset(p, 0, sizeof *p);
  p->started = rt_now_ms();
  p->pid = fork();
  assert_true(p->pid >= 0);
  if (p->pid == 0) {
    child_setup(pout[1], perr[1], o);
    execve(cli, (char *const *)argv, env);
    _exit(127);
  }
  free(env);
  close(pout[1]);
  close(perr[1]);
  p->fd[0] = pout[0];
  p->fd[1] = perr[0];
  fcntl(p->fd[0], F_SETFL, O_NONBLOCK);
  fcntl(p->fd[1], F_SETFL, O_NONBLOCK);
}

static void proc_start(proc *p, const char *const *args) {
  proc_opts o = {NULL, -1, 0};
  proc_start_opts(p, &o, args);
}

/* Read what pipe i has now (keeping up to OUT_MAX - 1 bytes); closes it
 * at EOF. */
static void drain_one(proc *p, int i) {
  while (p->fd[i] >= 0) {
    char tmp[4096];
    ssize_t n = read(p->fd[i], tmp, sizeof tmp);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      return;
    if (n <= 0) {
      close(p->fd[i]);
      p->fd[i] = -1;
      return;
    }
    size_t keep = OUT_MAX - 1 - p->len[i];
    keep = (size_t)n < keep ? (size_t)n : keep;
    memcpy(p->out[i] + p->len[i], tmp, keep);
    p->len[i] += keep;
    p->out[i][p->len[i]] = '\0';
  }
}

static void proc_drain(proc *p) {
  drain_one(p, 0);
  drain_one(p, 1);
}

static void proc_close_fds(proc *p) {
  for (int i = 0; i < 2; i++)
    if (p->fd[i] >= 0)
      close(p->fd[i]), p->fd[i] = -1;
}

/* Wait for the process to exit (not for EOF: a command's background job may
 * keep the pipes open), collecting its output. A process still running
 * after timeout_ms is SIGKILLed and fails the test. Returns p->status. */
static int proc_wait(proc *p, int64_t timeout_ms) {
  int64_t deadline = rt_now_ms() + timeout_ms;
  int st;
  for (;;) {
    proc_drain(p);
    pid_t r = waitpid(p->pid, &st, WNOHANG);
    assert_true(r >= 0);
    if (r == p->pid)
      break;
    if (rt_now_ms() > deadline) {
      kill(p->pid, SIGKILL);
      waitpid(p->pid, &st, 0);
      proc_close_fds(p);
      fail_msg("rlock did not exit within %lld ms; stdout: %s; stderr: %s",
               (long long)timeout_ms, p->out[0], p->out[1]);
    }
    struct pollfd fds[2] = {{.fd = p->fd[0], .events = POLLIN},
                            {.fd = p->fd[1], .events = POLLIN}};
    poll(fds, 2, 10);
  }
  p->ended = rt_now_ms();
  proc_drain(p);
  proc_close_fds(p);
  p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return p->status;
}

/* Run to completion (20 s at most, scaled). */
static int run(proc *p, const char *const *args) {
  proc_start(p, args);
  return proc_wait(p, SCALED(20000));
}

/* Run and require `status`; prints the output when it differs. */
static void run_expect(proc *p, int status, const char *const *args) {
  if (run(p, args) != status)
    fail_msg("rlock %s ... exited %d, expected %d; stdout: %s; stderr: %s",
             args[0], p->status, status, p->out[0], p->out[1]);
}

/* Send `sig` to rlock `p` and require its exit `status` within 5 s. */
static void signal_expect(proc *p, int sig, int status) {
  assert_int_equal(kill(p->pid, sig), 0);
  if (proc_wait(p, SCALED(5000)) != status)
    fail_msg("rlock exited %d after signal %d, expected %d; stderr: %s",
             p->status, sig, status, p->out[1]);
}

/* ---- small helpers ------------------------------------------------------ */

static int count_lines(const char *s) {
  int n = 0;
  for (; *s != '\0'; s++)
    n += *s == '\n';
  return n;
}

/* Run and require `status` and one line on stderr (rlock saying why),
 * holding `want` (any line: NULL). */
static void run_one_line(proc *p, int status, const char *want,
                         const char *const *args) {
  run_expect(p, status, args);
  if (count_lines(p->out[1]) != 1 ||
      (want != NULL && strstr(p->out[1], want) == NULL))
    fail_msg("rlock %s ...: stderr '%s', expected one line saying '%s'",
             args[0], p->out[1], want != NULL ? want : "");
}

/* rlock's own lines ("rlock: ...") among a stderr that COMMAND shares
 * (a shell there may say "Terminated" of a child the job signal killed). */
static int count_rlock_lines(const char *s) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, "rlock: ")) != NULL; p += 7)
    n += p == s || p[-1] == '\n';
  return n;
}

static int file_exists(const char *path) { return access(path, F_OK) == 0; }

/* A COMMAND that runs until the test lets it end: it leaves `ready` once it
 * runs, then waits for the test to create `go`. What the test checks while
 * COMMAND runs (or while others wait for it) then cannot race COMMAND's
 * end, however slow the machine: no COMMAND here lasts a fixed time unless
 * the time is what the test is about. */
typedef struct gate {
  char ready[512], go[512];
  char script[2400]; /* the COMMAND's shell text, from gate_script */
} gate;

static void gate_init(gate *g, const char *tag) {
  char file[128];
  snprintf(file, sizeof file, "%s.ready", tag);
  fx_tmp_path(g->ready, sizeof g->ready, file);
  snprintf(file, sizeof file, "%s.go", tag);
  fx_tmp_path(g->go, sizeof g->go, file);
}

/* The shell text of such a COMMAND (kept in g->script): `before`, the
 * ready mark, the wait for go (polled every 20 ms), then `after`. */
static const char *gate_script(gate *g, const char *before, const char *after) {
  int n = snprintf(g->script, sizeof g->script,
                   "%s touch %s; while [ ! -e %s ]; do sleep 0.02; done; %s",
                   before, g->ready, g->go, after);
  assert_true(n > 0 && (size_t)n < sizeof g->script);
  return g->script;
}

/* Start `rlock ARGS -- sh -c SCRIPT`. */
static void proc_start_sh(proc *p, const char *const *args,
                          const char *script) {
  const char *argv[64];
  size_t n = 0;
  for (; args[n] != NULL; n++) {
    assert_true(n < 59);
    argv[n] = args[n];
  }
  const char *tail[] = {"--", "sh", "-c", script, NULL};
  memcpy(argv + n, tail, sizeof tail);
  proc_start(p, argv);
}

/* Start `rlock ARGS -- sh -c` a gated COMMAND (gate_script's `before`
 * and `after`) whose files are named after `tag`. */
static void gate_start(proc *p, gate *g, const char *tag,
                       const char *const *args, const char *before,
                       const char *after) {
  gate_init(g, tag);
  proc_start_sh(p, args, gate_script(g, before, after));
}

/* The usual holder: such a COMMAND that does nothing else, started, and
 * running once this returns. */
static void gate_hold(proc *p, gate *g, const char *tag,
                      const char *const *args) {
  gate_start(p, g, tag, args, "", ":");
  fx_wait_file(g->ready, SCALED(5000));
}

/* Let the gated COMMAND of `p` end, and require rlock's `status`. */
static void gate_open(proc *p, gate *g, int status) {
  fx_touch(g->go);
  assert_int_equal(proc_wait(p, SCALED(10000)), status);
}

/* Hold `name` as a foreign Redisson client would, straight in Redis. */
static void hold_foreign(const char *name, const char *owner, int count,
                         int lease_ms) {
  freeReplyObject(rt_cmd(srv, "HSET %s %s %d", name, owner, count));
  freeReplyObject(rt_cmd(srv, "PEXPIRE %s %d", name, lease_ms));
}

#define FOREIGN "00000000-0000-4000-8000-000000000000:1"

/* The single owner field of the lock hash `name` (static buffer). */
static const char *only_field(const char *name) {
  static char field[RLOCK_OWNER_MAX];
  redisReply *r = rt_cmd(srv, "HGETALL %s", name);
  assert_int_equal(r->type, REDIS_REPLY_ARRAY);
  assert_int_equal(r->elements, 2);
  snprintf(field, sizeof field, "%s", r->element[0]->str);
  assert_string_equal(r->element[1]->str, "1");
  freeReplyObject(r);
  return field;
}

/* "<36-char uuid>:<thread id>" */
static void assert_owner_shape(const char *f) {
  assert_true(strlen(f) > 37);
  assert_int_equal(f[8], '-');
  assert_int_equal(f[36], ':');
  for (const char *p = f + 37; *p != '\0'; p++)
    assert_true(*p >= '0' && *p <= '9');
}

/* ---- fixture ------------------------------------------------------------ */

static int setup(void **state) {
  (void)state;
  const char *dir = getenv("RLOCK_TEST_BINDIR");
  const char *scale = getenv("RLOCK_TEST_TIME_SCALE");
  if (scale != NULL && atof(scale) >= 1)
    time_scale = atof(scale);
  snprintf(cli, sizeof cli, "%s/rlock", dir != NULL ? dir : ".");
  if (access(cli, X_OK) != 0) {
    fprintf(stderr, "no rlock binary at %s (set RLOCK_TEST_BINDIR)\n", cli);
    return -1;
  }
  fx_setup(state);
  snprintf(url, sizeof url, "%s", rt_server_url(srv));
  snprintf(dead_url, sizeof dead_url, "redis://127.0.0.1:%d", rt_free_port());
  return 0;
}

static int teardown(void **state) { return fx_teardown(state); }

/* ---- exec ---------------------------------------------------------------- */

/* The command runs while the lock is held (watchdog lease), its output is
 * its own, its status is rlock's, and the lock is gone afterwards. */
static void test_exec_holds_lock_while_command_runs(void **state) {
  (void)state;
  const char *name = "cli:exec";
  gate g;
  proc p;
  gate_start(&p, &g, "exec", ON_URL("exec", name), "echo out; echo err >&2;",
             "exit 3");
  fx_wait_file(g.ready, SCALED(5000));
  assert_owner_shape(only_field(name));
  ASSERT_BETWEEN(rt_cmd_int(srv, "PTTL %s", name), 20000, 30000);
  gate_open(&p, &g, 3);
  assert_string_equal(p.out[0], "out\n");
  assert_string_equal(p.out[1], "err\n");
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
}

static void test_exec_exit_statuses(void **state) {
  (void)state;
  const char *name = "cli:status";
  char noexec[512];
  proc p;
  run_expect(&p, 0, ON_URL("exec", name, "--", "true"));
  run_expect(&p, 128 + SIGKILL,
             ON_URL("exec", name, "--", "sh", "-c", "kill -KILL $$"));
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);

  /* Not runnable: reported at once, without waiting for the lock (held
   * elsewhere here, for a minute). */
  hold_foreign(name, FOREIGN, 1, 60000);
  run_one_line(&p, 127, "no-such-cmd-xyz",
               ON_URL("exec", name, "--", "no-such-cmd-xyz"));
  ASSERT_BETWEEN(p.ended - p.started, 0, SCALED(1000));

  fx_tmp_path(noexec, sizeof noexec, "not-executable");
  FILE *f = fopen(noexec, "w");
  assert_non_null(f);
  fputs("#!/bin/sh\nexit 0\n", f);
  fclose(f);
  chmod(noexec, 0644);
  run_one_line(&p, 126, NULL, ON_URL("exec", name, "--", noexec));
  run_expect(&p, 126, ON_URL("exec", name, "--", rt_server_dir(srv)));
  assert_int_equal(fx_hget(srv, name, FOREIGN), 1);
  freeReplyObject(rt_cmd(srv, "DEL %s", name));
}

/* -l gives a fixed lease; when it runs out under the command, rlock warns
 * but keeps the command's status. The command goes on until the key has
 * expired, however long rlock took to start it. */
static void test_exec_lease_expiry_warns(void **state) {
  (void)state;
  const char *name = "cli:lease";
  gate g;
  proc p;
  gate_start(&p, &g, "lease", ON_URL("exec", "-l", "400ms", name), "", ":");
  fx_wait_exists(srv, name, 1, SCALED(5000));
  ASSERT_BETWEEN(rt_cmd_int(srv, "PTTL %s", name), 1, 400);
  fx_wait_exists(srv, name, 0, SCALED(5000)); /* the lease ran out */
  gate_open(&p, &g, 0);
  assert_string_equal(p.out[1], "rlock: warning: lock 'cli:lease' was lost "
                                "while 'sh' ran\n");
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
}

/* --watchdog sets the lease, which the watchdog keeps renewing: the TTL
 * seen to go back up three times, the lock there all along. */
static void test_exec_watchdog_renews(void **state) {
  (void)state;
  const char *name = "cli:watchdog";
  gate g;
  proc p;
  gate_start(&p, &g, "watchdog", ON_URL("--watchdog", "1500ms", "exec", name),
             "", ":");
  fx_wait_exists(srv, name, 1, SCALED(5000));
  long long last = rt_cmd_int(srv, "PTTL %s", name);
  ASSERT_BETWEEN(last, 1, 1500);
  int renewed = 0;
  int64_t t0 = rt_now_ms();
  while (renewed < 3) {
    long long ttl = rt_cmd_int(srv, "PTTL %s", name);
    assert_true(ttl > 0); /* never let go while COMMAND runs */
    renewed += ttl > last + 50;
    last = ttl;
    if (rt_now_ms() - t0 > SCALED(10000))
      fail_msg("renewed %d times in 10 s", renewed);
    rt_sleep_ms(20);
  }
  gate_open(&p, &g, 0);
  assert_string_equal(p.out[1], "");
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
}

/* ---- waiting --------------------------------------------------------------
 */

static void test_exec_wait_bounds(void **state) {
  (void)state;
  const char *name = "cli:busy";
  char ran[512];
  proc p;
  fx_tmp_path(ran, sizeof ran, "busy-ran");
  hold_foreign(name, FOREIGN, 1, 60000);

  run_one_line(&p, 75, NULL,
               ON_URL("exec", "-w", "0", name, "--", "touch", ran));
  ASSERT_BETWEEN(p.ended - p.started, 0, SCALED(1000));

  run_expect(&p, 75, ON_URL("exec", "-w", "500ms", name, "--", "touch", ran));
  ASSERT_BETWEEN(p.ended - p.started, 500, SCALED(2500));
  assert_int_equal(count_lines(p.out[1]), 1); /* not a terminal: silent */
  assert_string_equal(p.out[0], "");

  assert_false(file_exists(ran));
  assert_int_equal(fx_hget(srv, name, FOREIGN), 1);
  freeReplyObject(rt_cmd(srv, "DEL %s", name));
}

/* Several processes on one lock: each command runs alone, all of them run. */
static void test_exec_processes_take_turns(void **state) {
  (void)state;
  enum { N = 4 };
  char log[512], script[1200];
  static proc p[N];
  fx_tmp_path(log, sizeof log, "turns.log");
  /* The 0.2 s inside is no synchronisation: it is the window in which a
   * second COMMAND let in would show between a start and its end. */
  snprintf(script, sizeof script,
           "echo start $0 >> %s; sleep 0.2; echo end $0 >> %s", log, log);
  const char *ids[N] = {"a", "b", "c", "d"};
  for (int i = 0; i < N; i++)
    proc_start(&p[i],
               ON_URL("exec", "cli:turns", "--", "sh", "-c", script, ids[i]));
  for (int i = 0; i < N; i++)
    assert_int_equal(proc_wait(&p[i], SCALED(20000)), 0);

  const char *s = fx_slurp(log);
  char seen[64] = "";
  for (int i = 0; i < N; i++) {
    char a[8], b[8];
    int used = 0;
    assert_int_equal(sscanf(s, "start %7s\nend %7s\n%n", a, b, &used), 2);
    assert_string_equal(a, b); /* no other start between start and end */
    assert_null(strstr(seen, a));
    strcat(seen, a);
    s += used;
  }
  assert_string_equal(s, "");
}

/* A waiting exec wakes when the holder releases, not at its lease's end. */
static void test_exec_waiter_acquires_promptly(void **state) {
  (void)state;
  const char *name = "cli:handoff";
  gate g;
  proc holder, waiter;
  gate_hold(&holder, &g, "handoff", ON_URL("exec", name));
  proc_start(&waiter, ON_URL("exec", name, "--", "true"));
  fx_wait_subscribers(srv, "redisson_lock__channel:{cli:handoff}", 1,
                      "the waiting exec's subscription");
  gate_open(&holder, &g, 0);
  assert_int_equal(proc_wait(&waiter, SCALED(10000)), 0);
  ASSERT_BETWEEN(waiter.ended - holder.ended, 0, SCALED(1500));
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
}

/* `status --json NAME` into p once it shows every holder's and waiter's
 * client (5 s at most): each client's registry record is written by its
 * background thread as it starts, beside its acquisition. */
static void status_with_clients(proc *p, const char *name) {
  int64_t t0 = rt_now_ms();
  do
    run_expect(p, 0, ON_URL("status", "--json", name));
  while (strstr(p->out[0], "\"client\": null") != NULL &&
         rt_now_ms() - t0 < SCALED(5000));
}

static long long fair_queue_len(const char *name) {
  return rt_cmd_int(srv, "LLEN redisson_lock_queue:{%s}", name);
}

static void wait_fair_queue(const char *name, long long n) {
  int64_t t0 = rt_now_ms();
  while (fair_queue_len(name) != n) {
    if (rt_now_ms() - t0 > SCALED(5000))
      fail_msg("fair queue of %s has %lld waiters, expected %lld", name,
               fair_queue_len(name), n);
    rt_sleep_ms(5);
  }
}

/* exec --fair: waiters run in the order they queued; status shows the
 * queue; a waiter stopped by a signal leaves the queue at once. */
static void test_exec_fair_order_and_queue(void **state) {
  (void)state;
  const char *name = "cli:fair";
  char log[512], script[700];
  gate g;
  proc holder, w[4], p;
  fx_tmp_path(log, sizeof log, "fair.log");
  snprintf(script, sizeof script, "echo $0 >> %s", log);
  gate_hold(&holder, &g, "fair", ON_URL("exec", "--fair", name));
  const char *ids[4] = {"a", "b", "x", "c"};
  for (int i = 0; i < 4; i++) {
    proc_start(&w[i], ON_URL("exec", "--fair", name, "--", "sh", "-c", script,
                             ids[i]));
    wait_fair_queue(name, i + 1);
  }
  status_with_clients(&p, name); /* each waiter's client */
  const char *q = strstr(p.out[0], "\"queue\": [{\"owner\": \"");
  assert_non_null(q);
  redisReply *r = rt_cmd(srv, "LRANGE redisson_lock_queue:{%s} 0 -1", name);
  assert_int_equal(r->elements, 4);
  const char *at = q;
  for (size_t i = 0; i < r->elements; i++) { /* the same owners, in order */
    at = strstr(at, r->element[i]->str);
    assert_non_null(at);
  }
  freeReplyObject(r);
  assert_non_null(strstr(p.out[0], "\"deadline_ms\": "));
  for (int i = 0; i < 4; i++) { /* each waiter's client: its rlock's pid */
    char pid[64];
    snprintf(pid, sizeof pid, "\"pid\": %ld, \"program\": \"sh -c ",
             (long)w[i].pid);
    if (strstr(q, pid) == NULL)
      fail_msg("waiter %d: no '%s' in %s", i, pid, q);
  }
  /* top shows the queue in its order, each waiter's client. */
  run_expect(&p, 0, ON_URL("top", "--once", name));
  at = p.out[0];
  for (int i = 0; i < 4; i++) {
    char line[64];
    snprintf(line, sizeof line, "queued %d: %ld@", i + 1, (long)w[i].pid);
    if ((at = strstr(at, line)) == NULL)
      fail_msg("top: no '%s', in order, in '%s'", line, p.out[0]);
  }
  assert_int_equal(kill(w[2].pid, SIGTERM), 0); /* "x" gives up */
  assert_int_equal(proc_wait(&w[2], SCALED(5000)), 128 + SIGTERM);
  assert_int_equal(fair_queue_len(name), 3);
  gate_open(&holder, &g, 0);
  for (int i = 0; i < 4; i++)
    if (i != 2)
      assert_int_equal(proc_wait(&w[i], SCALED(10000)), 0);
  assert_string_equal(fx_slurp(log), "a\nb\nc\n");
  assert_int_equal(rt_cmd_int(srv,
                              "EXISTS %s redisson_lock_queue:{%s} "
                              "redisson_lock_timeout:{%s}",
                              name, name, name),
                   0);
}

/* unlock --force on a fair lock wakes the head of its queue at once. */
static void test_unlock_force_fair_wakes_head(void **state) {
  (void)state;
  const char *name = "cli:fair-force";
  gate g; /* never opened: the test ends the holder with SIGTERM */
  proc holder, waiter, p;
  gate_hold(&holder, &g, "fair-force", ON_URL("exec", "--fair", name));
  proc_start(&waiter, ON_URL("exec", "--fair", name, "--", "true"));
  wait_fair_queue(name, 1);
  fx_wait_fair_head_subscribed(srv, name);
  run_expect(&p, 0, ON_URL("unlock", "--force", name));
  assert_int_equal(proc_wait(&waiter, SCALED(5000)), 0);
  ASSERT_BETWEEN(waiter.ended - p.ended, 0, SCALED(1000));
  /* The holder learns of the loss at its release at the latest: 76. */
  signal_expect(&holder, SIGTERM, 76);
  assert_int_equal(
      rt_cmd_int(srv, "EXISTS %s redisson_lock_queue:{%s}", name, name), 0);
}

/* exec --read: readers share; exec --write waits for them and excludes
 * them; status shows the mode and who reads. */
static void test_exec_read_write(void **state) {
  (void)state;
  const char *name = "cli:rw";
  char log[512], start[600], end[600];
  gate g; /* the readers read until the test has seen them both, and the
             writer waiting */
  gate_init(&g, "rw");
  proc r1, r2, w, p;
  fx_tmp_path(log, sizeof log, "rw.log");
  snprintf(start, sizeof start, "echo start $0 >> %s;", log);
  snprintf(end, sizeof end, "echo end $0 >> %s", log);
  const char *script = gate_script(&g, start, end);
  proc_start(&r1,
             ON_URL("exec", "--read", name, "--", "sh", "-c", script, "r1"));
  proc_start(&r2,
             ON_URL("exec", "--read", name, "--", "sh", "-c", script, "r2"));
  int64_t t0 = rt_now_ms();
  while (rt_cmd_int(srv, "HLEN %s", name) != 3) { /* mode + two readers */
    if (rt_now_ms() - t0 > SCALED(5000))
      fail_msg("the two readers did not hold the lock together");
    rt_sleep_ms(5);
  }
  run_expect(&p, 0, ON_URL("status", "--json", name));
  assert_non_null(strstr(p.out[0], "\"mode\": \"read\""));
  run_expect(&p, 0, ON_URL("status", name));
  assert_non_null(strstr(p.out[0], "locked for reading"));
  assert_non_null(strstr(p.out[0], "  reader "));
  proc_start(&w,
             ON_URL("exec", "--write", name, "--", "sh", "-c", script, "w"));
  fx_wait_subscribers(srv, "redisson_rwlock:{cli:rw}", 1,
                      "the waiting writer's subscription");
  gate_open(&r1, &g, 0);
  assert_int_equal(proc_wait(&r2, SCALED(10000)), 0);
  assert_int_equal(proc_wait(&w, SCALED(10000)), 0);
  const char *s = fx_slurp(log);
  /* Both readers start before either ends; the writer runs alone, last. */
  const char *first_end = strstr(s, "end r");
  assert_non_null(first_end);
  assert_true(strstr(s, "start r1") < first_end);
  assert_true(strstr(s, "start r2") < first_end);
  const char *ws = strstr(s, "start w\nend w\n");
  assert_non_null(ws);
  assert_string_equal(ws, "start w\nend w\n");
  run_expect(&p, 64, ON_URL("exec", "--read", "--write", name, "--", "true"));
  assert_non_null(strstr(p.out[1], "exclude each other"));
}

/* Several NAMEs: a MultiLock, all held while COMMAND runs, or none. */
static void test_exec_several_names(void **state) {
  (void)state;
  char out_file[512], script[1200];
  proc p;
  fx_tmp_path(out_file, sizeof out_file, "multi.out");
  snprintf(script, sizeof script,
           "redis-cli -p %d exists cli:m1 cli:m2 "
           "cli:m3 > %s",
           rt_server_port(srv), out_file);
  run_expect(
      &p, 0,
      ON_URL("exec", "cli:m1", "cli:m2", "cli:m3", "--", "sh", "-c", script));
  assert_string_equal(fx_slurp(out_file), "3\n");
  assert_int_equal(rt_cmd_int(srv, "EXISTS cli:m1 cli:m2 cli:m3"), 0);
  hold_foreign("cli:m2", FOREIGN, 1, 60000);
  run_one_line(&p, 75, "cli:m2",
               ON_URL("exec", "-w", "200ms", "cli:m1", "cli:m2", "cli:m3", "--",
                      "true"));
  assert_int_equal(rt_cmd_int(srv, "EXISTS cli:m1 cli:m3"), 0);
  freeReplyObject(rt_cmd(srv, "DEL cli:m2"));
  run_expect(&p, 65, ON_URL("exec", "cli:m1", "cli:m1", "--", "true"));
  run_expect(&p, 64, ON_URL("exec", "cli:m1", "-w", "--", "true"));
}

/* GET redisson_lock_token:{name} (the fenced lock's counter); -1 when
 * absent. */
static long long token_key(const char *name) {
  redisReply *r = rt_cmd(srv, "GET redisson_lock_token:{%s}", name);
  long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
  freeReplyObject(r);
  return v;
}

/* The token a COMMAND wrote to `path` as "<digits>\n". */
static long long file_token(const char *path) {
  const char *s = fx_slurp(path);
  char *end;
  long long v = strtoll(s, &end, 10);
  if (end == s || strcmp(end, "\n") != 0 || v <= 0)
    fail_msg("'%s' holds '%s', not a token", path, s);
  return v;
}

/* exec --fenced: COMMAND gets the acquisition's token in $RLOCK_TOKEN,
 * the counter's new value, larger on every run, also for a waiter;
 * status shows the latest. */
static void test_exec_fenced_token(void **state) {
  (void)state;
  const char *name = "cli:fenced";
  char file[512], script[1200], hfile[512], hbefore[600], wfile[512],
      waiter_script[1200], want[256];
  gate g;
  proc p, holder, waiter;
  fx_tmp_path(file, sizeof file, "fenced.token");
  snprintf(script, sizeof script, "echo \"$RLOCK_TOKEN\" > %s", file);
  run_expect(&p, 0, ON_URL("exec", "--fenced", name, "--", "sh", "-c", script));
  long long t1 = file_token(file);
  assert_int_equal(t1, token_key(name));
  run_expect(
      &p, 0,
      ON_URL("exec", "--fenced", "-l", "10s", name, "--", "sh", "-c", script));
  long long t2 = file_token(file);
  assert_true(t2 > t1);
  assert_int_equal(t2, token_key(name));
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);

  /* A waiter gets its token from the waiting call: the next one. */
  gate_init(&g, "fenced");
  fx_tmp_path(hfile, sizeof hfile, "fenced.holder");
  fx_tmp_path(wfile, sizeof wfile, "fenced.waiter");
  snprintf(hbefore, sizeof hbefore, "echo \"$RLOCK_TOKEN\" > %s;", hfile);
  const char *holder_script = gate_script(&g, hbefore, ":");
  snprintf(waiter_script, sizeof waiter_script, "echo \"$RLOCK_TOKEN\" > %s",
           wfile);
  proc_start(&holder,
             ON_URL("exec", "--fenced", name, "--", "sh", "-c", holder_script));
  fx_wait_file(g.ready, SCALED(5000));
  long long th = file_token(hfile);
  assert_int_equal(th, token_key(name));
  run_expect(&p, 0, ON_URL("status", name));
  snprintf(want, sizeof want,
           "\n  token %lld (the latest fencing token "
           "issued)\n",
           th);
  assert_non_null(strstr(p.out[0], want));
  run_expect(&p, 0, ON_URL("status", "--json", name));
  snprintf(want, sizeof want, ", \"token\": %lld}\n", th);
  assert_non_null(strstr(p.out[0], want));
  proc_start(&waiter,
             ON_URL("exec", "--fenced", name, "--", "sh", "-c", waiter_script));
  fx_wait_subscribers(srv, "redisson_lock__channel:{cli:fenced}", 1,
                      "the waiting exec --fenced's subscription");
  gate_open(&holder, &g, 0);
  assert_int_equal(proc_wait(&waiter, SCALED(10000)), 0);
  assert_int_equal(file_token(wfile), th + 1);
  assert_int_equal(token_key(name), th + 1);

  /* A plain lock of the same name excludes it; no token is used up. */
  hold_foreign(name, FOREIGN, 1, 60000);
  run_one_line(&p, 75, NULL,
               ON_URL("exec", "--fenced", "-w", "0", name, "--", "true"));
  assert_int_equal(token_key(name), th + 1);
  freeReplyObject(rt_cmd(srv, "DEL %s", name));

  /* A token key that is not a counter: refused (65), left as it was. */
  freeReplyObject(rt_cmd(srv, "SET redisson_lock_token:{%s} abc", name));
  run_one_line(&p, 65, "not a counter",
               ON_URL("exec", "--fenced", name, "--", "true"));
  run_one_line(&p, 65, "not a counter", ON_URL("status", name));
  assert_string_equal(p.out[0], "");
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
  redisReply *r = rt_cmd(srv, "GET redisson_lock_token:{%s}", name);
  assert_string_equal(r->str, "abc");
  freeReplyObject(r);
  freeReplyObject(rt_cmd(srv, "DEL redisson_lock_token:{%s}", name));
}

/* exec --spin: holds the lock while COMMAND runs; a waiter retries with
 * back-off instead of subscribing, a signal still ends its wait, and it
 * gets the lock soon after the holder is done. Several NAMEs make a
 * MultiLock of spin locks. */
static void test_exec_spin(void **state) {
  (void)state;
  const char *name = "cli:spin";
  char ran[512], ran2[512];
  gate g;
  proc holder, waiter, p;
  fx_tmp_path(ran, sizeof ran, "spin.ran");
  fx_tmp_path(ran2, sizeof ran2, "spin.ran2");
  gate_hold(&holder, &g, "spin", ON_URL("exec", "--spin", name));
  assert_owner_shape(only_field(name));
  run_one_line(&p, 75, "is held by another owner",
               ON_URL("exec", "--spin", "-w", "0", name, "--", "touch", ran));

  /* A waiter that keeps trying, unsubscribed, until SIGINT ends it. */
  freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
  proc_start(&p, ON_URL("exec", "--spin", name, "--", "touch", ran2));
  fx_wait_evalsha(srv, 4, "the waiting exec --spin's first tries");
  assert_int_equal(fx_subscribers(srv, "redisson_lock__channel:{cli:spin}"), 0);
  int64_t t1 = rt_now_ms();
  signal_expect(&p, SIGINT, 128 + SIGINT);
  ASSERT_BETWEEN(p.ended - t1, 0, SCALED(1500));
  assert_false(file_exists(ran2));

  /* A waiter that gets the lock once the holder is done. */
  freeReplyObject(rt_cmd(srv, "CONFIG RESETSTAT"));
  proc_start(&waiter, ON_URL("exec", "--spin", name, "--", "touch", ran));
  fx_wait_evalsha(srv, 4, "the waiting exec --spin's first tries");
  gate_open(&holder, &g, 0);
  assert_int_equal(proc_wait(&waiter, SCALED(10000)), 0);
  ASSERT_BETWEEN(waiter.ended - holder.ended, 0, SCALED(1500));
  assert_true(file_exists(ran));
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);

  run_expect(&p, 0,
             ON_URL("exec", "--spin", "cli:spin1", "cli:spin2", "--", "true"));
}

/* Several -u: a RedLock on NAME over independent servers. */
static void test_exec_redlock(void **state) {
  (void)state;
  rt_server *s2 = rt_server_start(NULL), *s3 = rt_server_start(NULL);
  const char *u2 = rt_server_url(s2), *u3 = rt_server_url(s3);
  char out_file[512], script[1200];
  proc p;
  fx_tmp_path(out_file, sizeof out_file, "redlock.out");
  snprintf(script, sizeof script,
           "for p in %d %d %d; do redis-cli -p $p exists cli:rl; done > %s",
           rt_server_port(srv), rt_server_port(s2), rt_server_port(s3),
           out_file);
  run_expect(
      &p, 0,
      ON_URL("-u", u2, "-u", u3, "exec", "cli:rl", "--", "sh", "-c", script));
  const char *seen = fx_slurp(out_file);
  int held = (seen[0] == '1') + (seen[2] == '1') + (seen[4] == '1');
  assert_true(held >= 2);
  assert_int_equal(rt_cmd_int(srv, "EXISTS cli:rl"), 0);
  assert_int_equal(rt_cmd_int(s2, "EXISTS cli:rl"), 0);
  assert_int_equal(rt_cmd_int(s3, "EXISTS cli:rl"), 0);
  hold_foreign("cli:rl", FOREIGN, 1, 60000); /* held on srv */
  freeReplyObject(rt_cmd(s2, "HSET cli:rl " FOREIGN " 1"));
  freeReplyObject(rt_cmd(s2, "PEXPIRE cli:rl 60000"));
  run_one_line(&p, 75, NULL,
               ON_URL("-u", u2, "-u", u3, "exec", "-w", "200ms", "cli:rl", "--",
                      "true"));
  assert_int_equal(rt_cmd_int(s3, "EXISTS cli:rl"), 0); /* nothing left */
  freeReplyObject(rt_cmd(srv, "DEL cli:rl"));
  rt_server_stop(s2);
  rt_server_stop(s3);
  run_expect(
      &p, 69,
      ON_URL("-u", u2, "-u", u3, "exec", "-w", "0", "cli:rl", "--", "true"));
  assert_int_equal(count_lines(p.out[1]), 1);
  run_expect(&p, 64, ON_URL("-u", url, "exec", "cli:rl", "--", "true"));
  run_expect(&p, 64,
             ON_URL("-u", u2, "exec", "--fair", "cli:rl", "--", "true"));
  run_expect(&p, 64, ON_URL("-u", u2, "status", "cli:rl"));
  rt_server_free(s2);
  rt_server_free(s3);
}

/* A new pty: its master side (close-on-exec), and in `slave` (at least
 * 128 bytes) the path of its slave side. */
static int pty_open(char *slave, size_t size) {
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  assert_true(master >= 0);
  assert_int_equal(grantpt(master), 0);
  assert_int_equal(unlockpt(master), 0);
  snprintf(slave, size, "%s", ptsname(master));
  return master;
}

/* A terminal gets a progress line naming the holder; it is cleared. */
/* Run rlock with stderr on a terminal (a pty); `buf` gets what it
 * showed there. Returns the exit status. */
static int run_on_terminal(const char *const *args, char *buf, size_t size) {
  char slave_path[128];
  int master = pty_open(slave_path, sizeof slave_path);
  int slave = open(slave_path, O_RDWR | O_NOCTTY | O_CLOEXEC);
  assert_true(slave >= 0);
  proc p;
  proc_opts o = {NULL, slave, 0};
  proc_start_opts(&p, &o, args);
  close(slave);
  int st = proc_wait(&p, SCALED(10000));
  size_t len = 0;
  ssize_t n;
  while (len < size - 1 && (n = read(master, buf + len, size - 1 - len)) > 0)
    len += (size_t)n; /* ends with EIO once the slave side is all closed */
  close(master);
  buf[len] = '\0';
  return st;
}

static void test_exec_progress_on_terminal(void **state) {
  (void)state;
  const char *name = "cli:tty";
  hold_foreign(name, FOREIGN, 1, 60000);
  char buf[8192];
  assert_int_equal(
      run_on_terminal(ON_URL("exec", "-w", "1500ms", name, "--", "true"), buf,
                      sizeof buf),
      75);
  assert_non_null(strstr(buf, "\rrlock: waiting for 'cli:tty' held by "));
  assert_non_null(strstr(buf, "(expires in "));
  assert_non_null(strstr(buf, "is held by another owner"));
  freeReplyObject(rt_cmd(srv, "DEL %s", name));
  /* While Redis cannot be reached, the line says so. */
  assert_int_equal(run_on_terminal(ARGS("-u", dead_url, "--retry-for", "1500ms",
                                        "exec", name, "--", "true"),
                                   buf, sizeof buf),
                   69);
  if (strstr(buf, "\rrlock: waiting for 'cli:tty': cannot connect") == NULL)
    fail_msg("terminal: %s", buf);
}

/* ---- signals ----------------------------------------------------------------
 */

static bool has_exited(pid_t pid);

/* Wait up to `ms` for rlock to exit after SIG`sig` was sent to it; past
 * that, say which signal it outlived (proc_wait then kills it and fails
 * with its output). Returns its exit status. */
static int wait_after_signal(proc *p, const char *sig, int64_t ms) {
  for (int64_t t0 = rt_now_ms(); !has_exited(p->pid); rt_sleep_ms(10)) {
    proc_drain(p);
    if (rt_now_ms() - t0 > ms) {
      print_message("rlock still runs %lld ms after SIG%s\n", (long long)ms,
                    sig);
      break;
    }
  }
  return proc_wait(p, 0);
}

/* TERM and HUP sent to rlock reach the command, and INT queued to it
 * (a SIGINT kill()ed to rlock alone is taken for the process group's,
 * which COMMAND got itself: see group_sigint_case); rlock exits with
 * COMMAND's status and releases the lock.
 *
 * COMMAND idles in short foreground sleeps, not in `sleep 30 & wait`: a
 * signal that reaches the job while sh forks the background sleep is
 * caught, in the child, by the trap handler inherited from sh, and lost
 * when the child resets its traps to exec sleep (so is the trap's
 * `kill $!`, sent in the same window); that sleep then outlives sh by 30
 * s, and rlock rightly holds the lock until it exits. A short sleep that
 * misses the signal ends by itself. */
static void test_exec_forwards_signals(void **state) {
  (void)state;
  const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
  const char *names[] = {"TERM", "INT", "HUP"};
  const char *name = "cli:signal";
  for (int i = 0; i < 3; i++) {
    char got[512], ready[600], script[2048];
    fx_tmp_path(got, sizeof got, names[i]);
    snprintf(ready, sizeof ready, "%s.ready", got);
    snprintf(script, sizeof script,
             "trap 'echo got > %s; exit 7' %s; touch %s; "
             "while :; do sleep 0.05; done",
             got, names[i], ready);
    proc p;
    proc_start(&p, ON_URL("exec", name, "--", "sh", "-c", script));
    fx_wait_file(ready, SCALED(5000));
    if (sigs[i] == SIGINT)
      assert_int_equal(sigqueue(p.pid, SIGINT, (union sigval){0}), 0);
    else
      assert_int_equal(kill(p.pid, sigs[i]), 0);
    assert_int_equal(wait_after_signal(&p, names[i], SCALED(5000)), 7);
    assert_string_equal(fx_slurp(got), "got\n");
    assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
  }
}

/* ---- lost locks ------------------------------------------------------------
 */

/* The script for COMMAND: trap TERM into `got` (then `on_term`), say
 * `ready`, then idle in short sleeps (so that a trap runs promptly). */
static void idle_script(char *buf, size_t size, const char *got,
                        const char *on_term, const char *ready) {
  snprintf(buf, size,
           "trap 'echo term >> %s; %s' TERM; touch %s; "
           "while :; do sleep 0.05; done",
           got, on_term, ready);
}

/* A COMMAND that idles until its TERM trap ends it (idle_script), its
 * files named after a tag: got, "<tag>-term"; ready, "<tag>-ready". */
typedef struct idler {
  char got[512], ready[512], script[2048];
} idler;

/* Start `rlock ARGS -- sh -c` such a COMMAND, its TERM trap running
 * `on_term`; returns once COMMAND runs. */
static void idle_start(proc *p, idler *x, const char *tag, const char *on_term,
                       const char *const *args) {
  char file[128];
  snprintf(file, sizeof file, "%s-term", tag);
  fx_tmp_path(x->got, sizeof x->got, file);
  snprintf(file, sizeof file, "%s-ready", tag);
  fx_tmp_path(x->ready, sizeof x->ready, file);
  idle_script(x->script, sizeof x->script, x->got, on_term, x->ready);
  proc_start_sh(p, args, x->script);
  fx_wait_file(x->ready, SCALED(5000));
}

/* DEL `name` while `p`'s COMMAND runs: rlock must find the loss and exit
 * 76. Returns how long after the DEL it exited (printed after `label`). */
static int64_t del_until_lost(proc *p, const char *name, const char *label) {
  int64_t t0 = rt_now_ms();
  freeReplyObject(rt_cmd(srv, "DEL %s", name));
  assert_int_equal(proc_wait(p, SCALED(5000)), 76);
  print_message("%s: COMMAND ended %lld ms after the DEL\n", label,
                (long long)(p->ended - t0));
  return p->ended - t0;
}

/* The key deleted while COMMAND runs: at the next renewal (every 200 ms
 * with --watchdog 600ms) COMMAND gets SIGTERM, one line names the lock,
 * and rlock exits 76. The bound allows a loaded machine a second's delay
 * (600 ms seen with load 13 on 2 cores); a loss noticed only at the end
 * would never end COMMAND. */
static void test_exec_lost_lock_terminates_command(void **state) {
  (void)state;
  const char *name = "cli:lost";
  idler x;
  proc p;
  idle_start(&p, &x, "lost", "exit 9",
             ON_URL("--watchdog", "600ms", "exec", name));
  ASSERT_BETWEEN(del_until_lost(&p, name, "exec"), 0, 200 + SCALED(1000));
  assert_string_equal(fx_slurp(x.got), "term\n");
  assert_int_equal(count_rlock_lines(p.out[1]), 1);
  assert_non_null(strstr(p.out[1], "lock 'cli:lost' was lost"));
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
}

/* `rlock exec NAME -- touch RAN` waiting (subscribed) for NAME, which a
 * foreign owner holds for `lease_ms`; RAN is a fresh path that exists
 * once COMMAND ran. */
static void start_waiting_exec(proc *p, const char *name, int lease_ms,
                               char *ran, size_t size) {
  char file[128], channel[256];
  snprintf(file, sizeof file, "%s-ran", name + 4); /* after "cli:" */
  fx_tmp_path(ran, size, file);
  hold_foreign(name, FOREIGN, 1, lease_ms);
  proc_start(p, ON_URL("exec", name, "--", "touch", ran));
  snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
  fx_wait_subscribers(srv, channel, 1, "the waiting exec's subscription");
}

/* A waiting exec without -w outlives an outage longer than the holder's
 * lease (it used to exit 69): it tries again until the server is back,
 * then runs COMMAND. */
static void test_exec_waits_through_outage(void **state) {
  (void)state;
  char ran[512];
  proc p;
  start_waiting_exec(&p, "cli:outage", 1000, ran, sizeof ran);
  rt_server_stop(srv);
  rt_sleep_ms(2000); /* time is the point: twice the holder's lease */
  assert_false(file_exists(ran));
  int64_t back = rt_now_ms();
  rt_server_start_again(srv);
  assert_int_equal(proc_wait(&p, SCALED(10000)), 0);
  ASSERT_BETWEEN(p.ended - back, 0, SCALED(1000 + 3000));
  assert_true(file_exists(ran));
}

/* The server restarted without persistence while COMMAND runs: the lock
 * is gone with the data; the first renewal after the restart finds it so,
 * and COMMAND is terminated as for a deleted key. */
static void test_exec_server_restart_terminates_command(void **state) {
  (void)state;
  const char *name = "cli:lost-restart";
  idler x;
  proc p;
  idle_start(&p, &x, "restart", "exit 9",
             ON_URL("--watchdog", "600ms", "exec", name));
  rt_server_restart(srv); /* same port, no data */
  int64_t t0 = rt_now_ms();
  assert_int_equal(proc_wait(&p, SCALED(5000)), 76);
  print_message("exec: COMMAND ended %lld ms after the restart\n",
                (long long)(p.ended - t0));
  /* One renewal period (200 ms), a reconnect, and slack. */
  ASSERT_BETWEEN(p.ended - t0, 0, 200 + 800);
  assert_string_equal(fx_slurp(x.got), "term\n");
  assert_int_equal(count_rlock_lines(p.out[1]), 1);
  assert_non_null(strstr(p.out[1], "lock 'cli:lost-restart' was lost"));
}

/* DEL `name` and CONFIG RESETSTAT in one transaction: every EVALSHA
 * counted from now on came after the DEL. */
static void del_and_resetstat(const char *name) {
  redisContext *c = rt_server_connect(srv);
  redisAppendCommand(c, "MULTI");
  redisAppendCommand(c, "DEL %s", name);
  redisAppendCommand(c, "CONFIG RESETSTAT");
  redisAppendCommand(c, "EXEC");
  for (int i = 0; i < 4; i++) {
    redisReply *r = NULL;
    assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
    assert_int_equal(r->type, i < 3 ? REDIS_REPLY_STATUS : REDIS_REPLY_ARRAY);
    freeReplyObject(r);
  }
  redisFree(c);
}

/* --on-lost ignore: COMMAND runs on past the loss and its status stays. */
static void test_exec_on_lost_ignore_keeps_command(void **state) {
  (void)state;
  const char *name = "cli:lost-ignore";
  gate g;
  proc p;
  gate_start(&p, &g, "ignore",
             ON_URL("--watchdog", "600ms", "exec", "--on-lost", "ignore", name),
             "", "exit 5");
  fx_wait_file(g.ready, SCALED(5000));
  del_and_resetstat(name);
  /* The loss is seen: a renewal ran on the deleted key (the only EVALSHA
   * rlock sends while COMMAND runs). */
  fx_wait_evalsha(srv, 1, "a renewal after the DEL");
  /* Time is the point: COMMAND must still run two renewal periods later,
   * when a terminated one would have been gone. */
  rt_sleep_ms(2 * 200);
  assert_int_equal(waitpid(p.pid, NULL, WNOHANG), 0); /* still running */
  fx_touch(g.go);
  assert_int_equal(proc_wait(&p, SCALED(5000)), 5);
  assert_int_equal(count_lines(p.out[1]), 1);
  assert_non_null(strstr(p.out[1], "warning: lock 'cli:lost-ignore' was "
                                   "lost"));
}

/* A COMMAND that shrugs SIGTERM off is SIGKILLed --kill-after later. */
static void test_exec_kill_after_escalates(void **state) {
  (void)state;
  const char *name = "cli:lost-kill";
  idler x;
  proc p;
  idle_start(
      &p, &x, "kill", ":",
      ON_URL("--watchdog", "600ms", "exec", "--kill-after", "500ms", name));
  /* At least --kill-after; the loss is seen at the next renewal tick
   * (200 ms), later on a loaded machine. */
  ASSERT_BETWEEN(del_until_lost(&p, name, "kill-after"), 500,
                 500 + SCALED(1500));
  assert_string_equal(fx_slurp(x.got),
                      "term\n"); /* TERM came, and was shrugged */
  assert_int_equal(count_rlock_lines(p.out[1]), 1);
}

/* rlock SIGKILLed: COMMAND gets SIGTERM (PR_SET_PDEATHSIG). */
static void test_exec_command_dies_with_rlock(void **state) {
  (void)state;
  const char *name = "cli:pdeath";
  idler x;
  proc p;
  idle_start(&p, &x, "pdeath", "exit 9", ON_URL("exec", name));
  int64_t t0 = rt_now_ms();
  signal_expect(&p, SIGKILL, 128 + SIGKILL);
  fx_wait_file(x.got, SCALED(2000));
  print_message("pdeath: COMMAND trapped TERM %lld ms after the kill\n",
                (long long)(rt_now_ms() - t0));
  freeReplyObject(rt_cmd(srv, "DEL %s", name));
}

/* Start `rlock exec NAME -- sh -c SCRIPT` in a new session (a new process
 * group, led by rlock), its standard streams on /dev/null; with `slave`
 * not "", that pty (pty_open) becomes its controlling terminal (the first
 * terminal a session leader opens). Returns rlock's pid. */
static pid_t session_exec(const char *name, const char *script,
                          const char *slave) {
  const char *argv[] = {cli,  "-u", url,  "exec", name,
                        "--", "sh", "-c", script, NULL};
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    child_signals(0);
    setsid();
    int devnull = open("/dev/null", O_RDWR);
    if (devnull < 0 || (slave[0] != '\0' && open(slave, O_RDWR) < 0) ||
        dup2(devnull, STDIN_FILENO) < 0 || dup2(devnull, STDOUT_FILENO) < 0 ||
        dup2(devnull, STDERR_FILENO) < 0)
      _exit(126);
    execv(cli, (char *const *)argv);
    _exit(127);
  }
  return pid;
}

/* Ctrl-C on a terminal: rlock runs in a new session with a pty as its
 * controlling terminal; ^C written to the master signals the foreground
 * process group, rlock and COMMAND alike. COMMAND counts one SIGINT per
 * ^C. */
static void test_exec_ctrl_c_reaches_command_once(void **state) {
  (void)state;
  const char *name = "cli:ctrlc";
  char got[512], trap[600];
  gate g;
  gate_init(&g, "ctrlc");
  fx_tmp_path(got, sizeof got, "ctrlc-int");
  snprintf(trap, sizeof trap, "trap 'echo int >> %s' INT;", got);
  const char *script = gate_script(&g, trap, "exit 3");
  char slave_path[128];
  int master = pty_open(slave_path, sizeof slave_path);
  pid_t pid = session_exec(name, script, slave_path);
  fx_wait_file(g.ready, SCALED(5000));
  /* A forwarded copy sent while the terminal's is still pending merges
   * with it: repeat, so that a double delivery would show. */
  for (int i = 1; i <= 10; i++) {
    assert_int_equal(write(master, "\x03", 1), 1);
    int64_t t1 = rt_now_ms();
    while (count_lines(fx_slurp(got)) < i && rt_now_ms() - t1 < SCALED(2000))
      rt_sleep_ms(5);
    /* Time is the point: a forwarded second SIGINT would have come by now
     * (and one later still shows in the final count). */
    rt_sleep_ms(50);
    assert_int_equal(count_lines(fx_slurp(got)), i);
  }
  fx_touch(g.go);
  int status = fx_wait_child(pid, SCALED(5000));
  close(master);
  assert_int_equal(count_lines(fx_slurp(got)), 10);
  assert_int_equal(status, 3);
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
}

/* Whether `sig` is pending for process `pid` (/proc: process-directed
 * ShdPnd, or its main thread's SigPnd). Once it is not, the process has
 * taken it: its handler has run or is running. */
static bool signal_pending(pid_t pid, int sig) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return false;
  unsigned long long mask = 0, m;
  while (fgets(line, sizeof line, f) != NULL)
    if (sscanf(line, "SigPnd: %llx", &m) == 1 ||
        sscanf(line, "ShdPnd: %llx", &m) == 1)
      mask |= m;
  fclose(f);
  return (mask >> (sig - 1)) & 1;
}

/* Whether process `pid` is stopped (/proc state T). */
static bool proc_stopped(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  bool stopped = false;
  while (f != NULL && fgets(line, sizeof line, f) != NULL)
    if (strncmp(line, "State:", 6) == 0)
      stopped = strchr(line, 'T') != NULL;
  if (f != NULL)
    fclose(f);
  return stopped;
}

typedef struct sigint_wait {
  pid_t rlock;
  const char *file; /* a count file COMMAND appends to */
  int want;
  int stopped; /* also wait for rlock to be stopped (1) or to have taken
                  its SIGINT (0) */
} sigint_wait;

static bool pred_sigint(void *arg, char *why, size_t cap) {
  sigint_wait *w = arg;
  int n = count_lines(fx_slurp(w->file));
  bool ok =
      w->stopped ? proc_stopped(w->rlock) : !signal_pending(w->rlock, SIGINT);
  snprintf(why, cap, "%s: %d lines (want %d); rlock %s", w->file, n, w->want,
           ok           ? "ready"
           : w->stopped ? "not stopped"
                        : "has SIGINT pending");
  if (n > w->want)
    fail_msg("%s: %d lines, expected %d", w->file, n, w->want);
  return n >= w->want && ok;
}

static void wait_sigint(pid_t rlock, const char *file, int want, int stopped,
                        const char *what) {
  sigint_wait w = {rlock, file, want, stopped};
  rt_wait_until(pred_sigint, &w, SCALED(5000), what);
}

/* COMMAND runs in a process group of its own: a SIGINT that reaches
 * rlock, sent to rlock alone, to rlock's group (kill -INT -PGID) or
 * queued (sigqueue), is passed on to COMMAND's group, and COMMAND gets
 * each once. rlock runs in a new session, as its group's leader, with a
 * pty as its controlling terminal (then COMMAND's group is the terminal's
 * foreground group: Ctrl-C reaches it directly, see
 * test_exec_ctrl_c_reaches_command_once) or with none. COMMAND appends a
 * line to `got` per SIGINT, and one to `marks` per SIGTERM; rlock
 * forwards a TERM sent after each SIGINT it took (its handler blocks
 * both), so once COMMAND marked that TERM, a second SIGINT would have
 * been counted. */
static void group_sigint_case(const char *name, int use_pty) {
  char got[512], marks[512], trap[1400], slave_path[128] = "";
  gate g;
  gate_init(&g, use_pty ? "grpint-pty" : "grpint");
  fx_tmp_path(got, sizeof got, use_pty ? "grpint-pty-int" : "grpint-int");
  fx_tmp_path(marks, sizeof marks, use_pty ? "grpint-pty-term" : "grpint-term");
  snprintf(trap, sizeof trap,
           "trap 'echo int >> %s' INT; trap 'echo term >> %s' TERM;", got,
           marks);
  const char *script = gate_script(&g, trap, "exit 3");
  int master = use_pty ? pty_open(slave_path, sizeof slave_path) : -1;
  pid_t pid = session_exec(name, script, slave_path);
  fx_wait_file(g.ready, SCALED(5000));
  if (use_pty) { /* the terminal is COMMAND's group's, not rlock's */
    pid_t fg = tcgetpgrp(master);
    assert_true(fg > 0 && fg != pid);
  }
  for (int i = 1; i <= 3; i++) {
    assert_int_equal(kill(pid, SIGINT), 0); /* to rlock alone */
    wait_sigint(pid, got, 2 * i - 1, 0, "a SIGINT to rlock, passed on");
    assert_int_equal(kill(-pid, SIGINT), 0); /* to rlock's group */
    wait_sigint(pid, got, 2 * i, 0, "a group SIGINT, passed on");
    assert_int_equal(kill(pid, SIGTERM), 0);
    wait_sigint(pid, marks, i, 0, "a forwarded TERM");
    assert_int_equal(count_lines(fx_slurp(got)), 2 * i);
  }
  assert_int_equal(sigqueue(pid, SIGINT, (union sigval){0}), 0);
  wait_sigint(pid, got, 7, 0, "a queued SIGINT forwarded");
  fx_touch(g.go);
  int status = fx_wait_child(pid, SCALED(5000));
  if (master >= 0)
    close(master);
  assert_int_equal(count_lines(fx_slurp(got)), 7);
  assert_int_equal(status, 3);
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
}

static void test_exec_group_sigint_once_pty(void **state) {
  (void)state;
  group_sigint_case("cli:grpint-pty", 1);
}

static void test_exec_group_sigint_once_no_pty(void **state) {
  (void)state;
  group_sigint_case("cli:grpint", 0);
}

/* A signal while waiting ends the wait: 128+N, and COMMAND never runs. */
static void test_exec_signal_while_waiting(void **state) {
  (void)state;
  const char *name = "cli:sigwait";
  char ran[512];
  proc p;
  start_waiting_exec(&p, name, 60000, ran, sizeof ran);
  int64_t t0 = rt_now_ms();
  signal_expect(&p, SIGINT, 128 + SIGINT);
  ASSERT_BETWEEN(p.ended - t0, 0, SCALED(1500));
  assert_false(file_exists(ran));
  assert_int_equal(fx_hget(srv, name, FOREIGN), 1);
  freeReplyObject(rt_cmd(srv, "DEL %s", name));
}

/* A signal ignored when rlock starts (nohup) stays ignored, for rlock and
 * for the command: neither dies of it, and the lock is used normally. */
static void test_exec_keeps_ignored_signal_ignored(void **state) {
  (void)state;
  const char *name = "cli:nohup";
  gate g;
  gate_init(&g, "nohup");
  proc p;
  proc_opts o = {NULL, -1, 1};
  proc_start_opts(
      &p, &o,
      ON_URL("exec", name, "--", "sh", "-c", gate_script(&g, "", "exit 5")));
  fx_wait_file(g.ready, SCALED(5000)); /* the HUP comes while COMMAND runs */
  assert_int_equal(kill(p.pid, SIGHUP), 0);
  fx_touch(g.go);
  assert_int_equal(proc_wait(&p, SCALED(5000)), 5);
  assert_string_equal(p.out[1], "");
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
}

/* ---- status
 * ------------------------------------------------------------------ */

static void test_status_free(void **state) {
  (void)state;
  proc p;
  run_expect(&p, 0, ON_URL("status", "--json", "cli:free"));
  char want[256];
  snprintf(want, sizeof want,
           "{\"name\": \"cli:free\", \"locked\": false, \"ttl_ms\": -2, "
           "\"mode\": null, \"holders\": [], \"queue\": [], "
           "\"node\": \"127.0.0.1:%d\", \"topology\": \"single\"}\n",
           rt_server_port(srv));
  assert_string_equal(p.out[0], want);
  assert_string_equal(p.out[1], "");
  run_expect(&p, 0, ON_URL("status", "cli:free"));
  assert_string_equal(p.out[0], "cli:free: free\n");
}

/* A holder whose client was made a moment ago shows its age ("client up
 * 0.1s"), not "?": the age is read on the wall clock to the millisecond,
 * as the record's start is written. The record is made here, started now,
 * once the wall clock is early in a second, so a clock read in whole
 * seconds would come out before the start. */
static void test_status_young_client(void **state) {
  (void)state;
  const char *name = "cli:young";
  const char *id = "11111111-2222-4333-8444-555555555555";
  struct timespec ts;
  do { /* polls the wall clock's phase, at most a second */
    clock_gettime(CLOCK_REALTIME, &ts);
  } while (ts.tv_nsec >= 200000000L);
  long long started = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  char key[64], rec[128];
  snprintf(key, sizeof key, "rlock:client:%s", id);
  snprintf(rec, sizeof rec,
           "rlock-client 1\nhost=h\npid=1\nprogram=p\nversion=0.9.0\n"
           "started=%lld\n",
           started);
  freeReplyObject(rt_cmd(srv, "SET %s %s PX 30000", key, rec));
  char owner[64];
  snprintf(owner, sizeof owner, "%s:1", id);
  hold_foreign(name, owner, 1, 30000);
  proc p;
  run_expect(&p, 0, ON_URL("status", name));
  if (strstr(p.out[0], "client: pid 1 on h, p (rlock 0.9.0, client up ") ==
          NULL ||
      strstr(p.out[0], "client up ?") != NULL)
    fail_msg("no age of the young client in %s", p.out[0]);
  freeReplyObject(rt_cmd(srv, "DEL %s %s", name, key));
}

/* The "ttl_ms" value of a status --json line. */
static long long json_ttl(const char *json) {
  const char *t = strstr(json, "\"ttl_ms\": ");
  assert_non_null(t);
  return strtoll(t + 10, NULL, 10);
}

/* While exec holds the lock, status reports exactly its owner field. */
static void test_status_of_exec_holder(void **state) {
  (void)state;
  const char *name = "cli:held";
  char want[1024];
  gate g;
  proc holder, p;
  gate_hold(&holder, &g, "held", ON_URL("exec", name));
  const char *field = only_field(name);
  /* the holder's client, from exec's registry record: rlock's pid and
   * COMMAND */
  status_with_clients(&p, name);
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  snprintf(want, sizeof want,
           "\"holders\": [{\"owner\": \"%s\", \"count\": 1, "
           "\"client\": {\"host\": \"%s\", \"pid\": %ld, "
           "\"program\": \"sh -c ",
           field, host, (long)holder.pid);
  assert_non_null(
      strstr(p.out[0], "{\"name\": \"cli:held\", \"locked\": true"));
  if (strstr(p.out[0], want) == NULL)
    fail_msg("no '%s' in %s", want, p.out[0]);
  snprintf(want, sizeof want,
           "\"queue\": [], \"node\": \"127.0.0.1:%d\", "
           "\"topology\": \"single\"}\n",
           rt_server_port(srv));
  assert_non_null(strstr(p.out[0], want));
  ASSERT_BETWEEN(json_ttl(p.out[0]), 20000, 30000);
  assert_int_equal(count_lines(p.out[0]), 1);
  run_expect(&p, 0, ON_URL("status", name));
  snprintf(want, sizeof want, "    client: pid %ld on %s, sh -c ",
           (long)holder.pid, host);
  if (strstr(p.out[0], want) == NULL)
    fail_msg("no '%s' in %s", want, p.out[0]);
  gate_open(&holder, &g, 0);
}

/* ---- rlock top in a real terminal (tmux) ---------------------------------
 * A tmux server of the test's own (-L: its socket), so no other tmux is
 * touched; stopped with kill-server on that socket. */

static char tmux_sock[64];

/* Run `tmux -L SOCK ARGS` quietly: its exit status. */
static int tmux(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int tmux(const char *fmt, ...) {
  char args[2048], cmd[2300];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, "tmux -L %s %s >/dev/null 2>&1", tmux_sock, args);
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The pane's text now, into out. */
static void tmux_screen(char *out, size_t size) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "tmux -L %s capture-pane -p -t top 2>/dev/null",
           tmux_sock);
  FILE *f = popen(cmd, "r");
  size_t n = f ? fread(out, 1, size - 1, f) : 0;
  out[n] = '\0';
  if (f)
    pclose(f);
}

/* Wait up to ms for `text` on the pane: elapsed ms, or -1. */
static int64_t tmux_wait_for(const char *text, int64_t ms, char *screen,
                             size_t size) {
  int64_t t0 = rt_now_ms();
  do {
    tmux_screen(screen, size);
    if (strstr(screen, text) != NULL)
      return rt_now_ms() - t0;
    rt_sleep_ms(20);
  } while (rt_now_ms() - t0 < ms);
  return -1;
}

/* rlock top on `server_url` in a 200x30 tmux pane, then "EXITED <status>". */
static void tmux_top(const char *server_url) {
  assert_int_equal(tmux("new-session -d -s top -x 200 -y 30 "
                        "\"'%s' -u '%s' top --interval 250ms; "
                        "echo EXITED \\$?; sleep 60\"",
                        cli, server_url),
                   0);
}

/* top shows a holder another process takes within 2 s (its pid, from the
 * registry), quits with q (exit 0), and ends with a message and 69 when
 * its server goes away. */
static void test_top_in_a_terminal(void **state) {
  (void)state;
  if (system("command -v tmux >/dev/null 2>&1") != 0) {
    print_message("no tmux: rlock top's terminal test skipped\n");
    return;
  }
  snprintf(tmux_sock, sizeof tmux_sock, "rlock-test-%ld", (long)getpid());
  static char screen[16384];
  tmux_top(url);
  assert_true(tmux_wait_for("sorted by waiters", SCALED(5000), screen,
                            sizeof screen) >= 0);
  const char *name = "cli:top";
  char pid[64];
  gate g;
  proc holder;
  int64_t t0 = rt_now_ms();
  gate_start(&holder, &g, "top", ON_URL("exec", name), "", ":");
  snprintf(pid, sizeof pid, "%ld@", (long)holder.pid);
  if (tmux_wait_for(pid, SCALED(5000), screen, sizeof screen) < 0)
    fail_msg("no holder %s on the screen:\n%s", pid, screen);
  int64_t seen = rt_now_ms() - t0;
  print_message("top showed the holder's pid %lld ms after it started\n",
                (long long)seen);
  ASSERT_BETWEEN(seen, 0, 2000);
  assert_non_null(strstr(screen, name));
  assert_int_equal(tmux("send-keys -t top q"), 0);
  assert_true(tmux_wait_for("EXITED 0", SCALED(5000), screen, sizeof screen) >=
              0);
  gate_open(&holder, &g, 0);
  tmux("kill-session -t top");

  rt_server *s = rt_server_start(NULL); /* one to lose */
  tmux_top(rt_server_url(s));
  assert_true(tmux_wait_for("sorted by waiters", SCALED(5000), screen,
                            sizeof screen) >= 0);
  rt_server_kill(s);
  if (tmux_wait_for("EXITED 69", SCALED(10000), screen, sizeof screen) < 0)
    fail_msg("top did not end with 69 on a lost server:\n%s", screen);
  assert_non_null(strstr(screen, "rlock: top: lost the server: "));
  rt_server_free(s);
  tmux("kill-server");
}

static void test_top_once(void **state) {
  (void)state;
  hold_foreign("cli:top1", FOREIGN, 1, 60000);
  proc p;
  run_expect(&p, 0, ON_URL("top", "--once", "cli:top*"));
  assert_non_null(strstr(p.out[0], "1 lock, 0 semaphores and latches, "
                                   "sorted by waiters\n"));
  assert_non_null(strstr(p.out[0], " reentrant  cli:top1 "));
  run_expect(&p, 0, ON_URL("top", "--once", "--json", "cli:top*"));
  assert_non_null(strstr(p.out[0], "{\"name\": \"cli:top1\", \"kind\": "
                                   "\"reentrant\", \"ttl_ms\": "));
  assert_non_null(strstr(p.out[0], "\"holders\": 1, \"holder\": null}\n"));
  rt_cmd_ok(srv, "SET cli:top:sem 3");
  run_expect(&p, 0, ON_URL("top", "--once", "--counts", "cli:top*"));
  assert_non_null(strstr(p.out[0], "1 lock, 0 semaphores and latches, 1 "
                                   "count, sorted by waiters\n"));
  assert_non_null(strstr(p.out[0], "    0    3        -        - count      "
                                   "cli:top:sem "));
  freeReplyObject(rt_cmd(srv, "DEL cli:top:sem"));
  run_expect(&p, 64, ON_URL("top", "--json", "cli:top*"));
  run_expect(&p, 64, ON_URL("top", "--interval", "10ms"));
  run_expect(&p, 69, ARGS("-u", dead_url, "top", "--once"));
  freeReplyObject(rt_cmd(srv, "DEL cli:top1"));
}

/* python3's json module must accept the output, names escaped right. */
static void check_json_with_python(const char *json_file, const char *name) {
  if (access("/usr/bin/python3", X_OK) != 0) {
    print_message("no /usr/bin/python3: the JSON check by python3's json "
                  "module skipped (the C-side checks ran)\n");
    return;
  }
  const char *prog =
      "import json,sys\n"
      "d = json.load(open(sys.argv[1], encoding='utf-8'))\n"
      "name = sys.argv[2].encode('utf-8', 'surrogateescape').decode()\n"
      "assert d['name'] == name, d\n"
      "assert d['locked'] is True and 50000 < d['ttl_ms'] <= 60000, d\n"
      "assert d['holders'] == [{'owner': sys.argv[3], 'count': 2,\n"
      "                         'client': None}], d\n"
      "assert d['queue'] == [], d\n"
      "assert d['node'].startswith('127.0.0.1:'), d\n"
      "assert d['topology'] == 'single', d\n";
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    execl("/usr/bin/python3", "python3", "-c", prog, json_file, name, FOREIGN,
          (char *)NULL);
    _exit(127);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_status_json_escaping(void **state) {
  (void)state;
  const char *name = "cli:q\"b\\s\tc\x01 \xc3\xbc/\xe2\x82\xac";
  char file[512];
  proc p;
  hold_foreign(name, FOREIGN, 2, 60000);
  run_expect(&p, 0, ON_URL("status", "--json", name));
  assert_non_null(strstr(p.out[0],
                         "{\"name\": \"cli:q\\\"b\\\\s\\tc\\u0001 "
                         "\xc3\xbc/\xe2\x82\xac\", \"locked\": true"));
  assert_non_null(strstr(p.out[0], "\"holders\": [{\"owner\": \"" FOREIGN
                                   "\", \"count\": 2, \"client\": null}], "
                                   "\"queue\": [], "
                                   "\"node\": \"127.0.0.1:"));
  FILE *f = fopen(fx_tmp_path(file, sizeof file, "status.json"), "w");
  assert_non_null(f);
  fputs(p.out[0], f);
  fclose(f);
  check_json_with_python(file, name);

  run_expect(&p, 0, ON_URL("status", name));
  assert_non_null(strstr(p.out[0], ": locked, expires in "));
  assert_non_null(strstr(p.out[0], "\n  holder " FOREIGN
                                   " (2 holds)\n    client: Redisson or "
                                   "unknown client (no registry record)\n"));
  freeReplyObject(rt_cmd(srv, "DEL %s", name));
}

/* ---- unlock --force --------------------------------------------------------
 */

static void test_unlock_force(void **state) {
  (void)state;
  const char *name = "cli:force";
  gate g; /* never opened: the test ends the holder with SIGTERM */
  proc holder, waiter, p;
  gate_hold(&holder, &g, "force", ON_URL("exec", name));
  proc_start(&waiter, ON_URL("exec", name, "--", "true"));
  fx_wait_subscribers(srv, "redisson_lock__channel:{cli:force}", 1,
                      "the waiting exec's subscription");
  run_expect(&p, 0, ON_URL("unlock", "--force", name));
  assert_int_equal(count_lines(p.out[0]), 1);
  int64_t unlocked = p.ended;
  assert_int_equal(proc_wait(&waiter, SCALED(5000)), 0);
  ASSERT_BETWEEN(waiter.ended - unlocked, 0, SCALED(1500));

  /* The holder's command goes on (the deletion comes long before the
   * next renewal); when it ends, the release finds the lock lost: one
   * line, and 76, as for a loss seen while COMMAND ran. */
  signal_expect(&holder, SIGTERM, 76);
  assert_string_equal(holder.out[1], "rlock: lock 'cli:force' was lost while "
                                     "'sh' ran (found at its release)\n");

  run_expect(&p, 1, ON_URL("unlock", "--force", name));
  assert_int_equal(count_lines(p.out[0]) + count_lines(p.out[1]), 1);
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
}

/* ---- failures -------------------------------------------------------------
 */

static void test_unreachable_server(void **state) {
  (void)state;
  char ran[512];
  proc p;
  fx_tmp_path(ran, sizeof ran, "unreachable-ran");
  const char *const *cases[] = {
      ARGS("-u", dead_url, "--retry-for", "0", "exec", "cli:x", "--", "touch",
           ran),
      ARGS("-u", dead_url, "exec", "-w", "0", "cli:x", "--", "touch", ran),
      ARGS("-u", dead_url, "status", "cli:x"),
      ARGS("-u", dead_url, "status", "--json", "cli:x"),
      ARGS("-u", dead_url, "unlock", "--force", "cli:x"),
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_one_line(&p, 69, NULL, cases[i]);
    assert_int_equal(strncmp(p.out[1], "rlock: ", 7), 0);
    assert_string_equal(p.out[0], "");
  }
  assert_false(file_exists(ran));
}

/* exec -w 5s started while the server is down (not up yet) takes the
 * lock once it comes up a second later: the wait covers the outage from
 * its first try. */
static void test_exec_meets_server_not_up_yet(void **state) {
  (void)state;
  rt_server *late = rt_server_start(NULL);
  rt_server_stop(late);
  char ran[512];
  fx_tmp_path(ran, sizeof ran, "late-ran");
  proc p;
  proc_start(&p, ARGS("-u", rt_server_url(late), "exec", "-w", "5s", "cli:late",
                      "--", "touch", ran));
  /* Time is the point: the server comes up a second later, which exec
   * must outlast (it used to exit 69 at once). */
  rt_sleep_ms(1000);
  assert_int_equal(waitpid(p.pid, NULL, WNOHANG), 0); /* still waiting */
  int64_t back = rt_now_ms();
  rt_server_start_again(late);
  if (proc_wait(&p, SCALED(10000)) != 0)
    fail_msg("exit %d; stderr: %s", p.status, p.out[1]);
  ASSERT_BETWEEN(p.ended - back, 0, SCALED(1000 + 3000));
  assert_true(file_exists(ran));
  assert_int_equal(rt_cmd_int(late, "EXISTS cli:late"), 0); /* released */
  rt_server_free(late);
}

/* --retry-for bounds how long a wait (here one without a bound) tries a
 * server that stays down; a host name that does not resolve fails at
 * once, with its message. */
static void test_exec_retry_for(void **state) {
  (void)state;
  char ran[512];
  fx_tmp_path(ran, sizeof ran, "retry-ran");
  proc p;
  run_expect(&p, 69,
             ARGS("-u", dead_url, "--retry-for", "700ms", "exec", "cli:retry",
                  "--", "touch", ran));
  ASSERT_BETWEEN(p.ended - p.started, 700, SCALED(700 + 2500));
  /* The first failure, said once while it keeps trying; then the end. */
  assert_int_equal(count_lines(p.out[1]), 2);
  if (strncmp(p.out[1], "rlock: waiting for 'cli:retry': cannot connect", 46) !=
          0 ||
      strstr(p.out[1], "; still trying\n") == NULL ||
      strstr(p.out[1], "tried again for") == NULL)
    fail_msg("stderr: %s", p.out[1]);
  assert_false(file_exists(ran));
  /* elect and latch wait wait too, so --retry-for bounds them as well. */
  run_expect(&p, 69,
             ARGS("-u", dead_url, "--retry-for", "700ms", "elect",
                  "cli:retry-elect", "--", "touch", ran));
  ASSERT_BETWEEN(p.ended - p.started, 700, SCALED(700 + 2500));
  assert_non_null(strstr(p.out[1], "tried again for"));
  assert_false(file_exists(ran));
  run_expect(&p, 69,
             ARGS("-u", dead_url, "--retry-for", "700ms", "latch", "wait",
                  "cli:retry-latch"));
  ASSERT_BETWEEN(p.ended - p.started, 700, SCALED(700 + 2500));
  assert_non_null(strstr(p.out[1], "tried again for"));
  proc_start(&p, ARGS("-u", "redis://no-such-host.invalid:6379", "exec", "-w",
                      "5s", "cli:retry", "--", "touch", ran));
  int st = proc_wait(&p, SCALED(10000));
  if (strstr(p.out[1], "did not finish in time") != NULL) {
    print_message("note: this machine's resolver did not answer for "
                  "no-such-host.invalid in time; not checked: %s",
                  p.out[1]);
  } else {
    assert_int_equal(st, 69);
    ASSERT_BETWEEN(p.ended - p.started, 0, SCALED(2000 + 500));
    assert_int_equal(count_lines(p.out[1]), 1);
    if (strstr(p.out[1], "no-such-host.invalid") == NULL ||
        strstr(p.out[1], "did not resolve") == NULL)
      fail_msg("stderr: %s", p.out[1]);
  }
  assert_false(file_exists(ran));
}

/* Every command on `name` exits 65 with one line naming the key and
 * saying `why`, prints nothing on stdout, and leaves the key as it was
 * (compared with DUMP) and Redis answering. */
static void refuse_key(const char *name, const char *why) {
  redisReply *before = rt_cmd(srv, "DUMP %s", name);
  assert_int_equal(before->type, REDIS_REPLY_STRING);
  const char *const *cases[] = {
      ON_URL("exec", name, "--", "true"),
      ON_URL("exec", "-w", "0", name, "--", "true"),
      ON_URL("exec", "--fair", "-w", "0", name, "--", "true"),
      ON_URL("exec", "--read", "-w", "0", name, "--", "true"),
      ON_URL("exec", "--write", "-w", "0", name, "--", "true"),
      ON_URL("exec", "--read", name, "--", "true"),
      ON_URL("status", name),
      ON_URL("status", "--json", name),
      ON_URL("unlock", "--force", name),
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    proc p;
    run_expect(&p, 65, cases[i]);
    if (count_lines(p.out[1]) != 1 || strstr(p.out[1], name) == NULL ||
        strstr(p.out[1], why) == NULL || p.len[0] != 0)
      fail_msg("case %zu on '%s': stdout '%s', stderr '%s' (want '%s')", i,
               name, p.out[0], p.out[1], why);
    redisReply *after = rt_cmd(srv, "DUMP %s", name);
    assert_int_equal(after->type, REDIS_REPLY_STRING);
    if (after->len != before->len ||
        memcmp(after->str, before->str, before->len) != 0)
      fail_msg("case %zu changed key '%s'", i, name);
    freeReplyObject(after);
  }
  freeReplyObject(before);
  redisReply *pong = rt_cmd(srv, "PING");
  assert_string_equal(pong->str, "PONG");
  freeReplyObject(pong);
  freeReplyObject(rt_cmd(srv, "DEL %s", name));
}

static void test_wrong_type_key(void **state) {
  (void)state;
  freeReplyObject(rt_cmd(srv, "SET cli:string not-a-lock"));
  refuse_key("cli:string", "holds a string, not a lock");
  freeReplyObject(rt_cmd(srv, "HSET user:42 name alice balance 20"));
  refuse_key("user:42", "not a lock");
  freeReplyObject(rt_cmd(srv, "HSET user:44 balance 99999999999"));
  refuse_key("user:44", "no expiry, not a lock");
}

/* A plain lock and a read-write lock never share a name: the second
 * family is refused (65), not queued behind the first or let in. */
static void test_families_refused(void **state) {
  (void)state;
  const char *name = "cli:family";
  proc p;
  hold_foreign(name, FOREIGN, 1, 30000);
  run_expect(&p, 65, ON_URL("exec", "--read", "-w", "1s", name, "--", "true"));
  assert_non_null(strstr(p.out[1], "not a read-write lock"));
  freeReplyObject(rt_cmd(srv, "DEL %s", name));
  freeReplyObject(rt_cmd(srv, "HSET %s mode write %s:write 1", name, FOREIGN));
  freeReplyObject(rt_cmd(srv, "PEXPIRE %s 30000", name));
  run_expect(&p, 65, ON_URL("exec", "-w", "1s", name, "--", "true"));
  assert_non_null(strstr(p.out[1], "holds a read-write lock"));
  run_expect(&p, 0, ON_URL("status", name));
  assert_non_null(strstr(p.out[0], "locked for writing"));
  run_expect(&p, 0, ON_URL("unlock", "--force", name));
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
}

/* Each is a usage error: 64, a reason and "Try 'rlock --help'.", nothing
 * on stdout. $RLOCK_URL is a dead server, so none of them can get as far
 * as doing anything. */
static void test_usage_errors(void **state) {
  (void)state;
  static const char *const cases[][12] = {
      {NULL},
      {"frobnicate", "n"},
      {"--bogus", "status", "n"},
      {"-u", "redis://127.0.0.1:1", "-u", "redis://127.0.0.1:2", "status", "n"},
      {"-u", "ftp://x", "status", "n"},
      {"-u"},
      {"--watchdog", "10ms", "status", "n"},
      {"--watchdog", "0", "status", "n"},
      {"--retry-for", "5x", "exec", "n", "--", "true"},
      {"--retry-for", "-1s", "exec", "n", "--", "true"},
      {"--retry-for"},
      {"exec"},
      {"exec", "n"},
      {"exec", "n", "--"},
      {"exec", "--", "true"},
      {"exec", "n", "true"},
      {"exec", "n", "-w", "1s", "--", "true"},
      {"exec", "-w", "5x", "n", "--", "true"},
      {"exec", "-w", "-1s", "n", "--", "true"},
      {"exec", "-w", "5y", "n", "--", "true"},
      {"exec", "-w", "1.5.5s", "n", "--", "true"},
      {"exec", "-w", ".", "n", "--", "true"},
      {"exec", "-E", "256", "n", "--", "true"},
      {"exec", "-E", "x", "n", "--", "true"},
      {"exec", "-E", "-1", "n", "--", "true"},
      {"exec", "--check-every", "0", "n", "--", "true"},
      {"exec", "--check-every", "1s", "-l", "5s", "n", "--", "true"},
      {"exec", "--check-every", "1s", "--on-lost", "ignore", "n", "--", "true"},
      {"--retry-for", "1s", "status", "n"},
      {"--retry-for", "1s", "list"},
      {"--retry-for", "1s", "unlock", "--force", "n"},
      {"--connect-timeout", "0", "status", "n"},
      {"--command-timeout", "2h", "status", "n"},
      {"list", "x*", "--json"},
      {"exec", "-w", "", "n", "--", "true"},
      {"exec", "-w", "99999999999999999999999ms", "n", "--", "true"},
      {"exec", "-w", "8761h", "n", "--", "true"},
      {"exec", "-l", "0", "n", "--", "true"},
      {"exec", "-x", "n", "--", "true"},
      {"exec", "--wait"},
      {"exec", "--on-lost", "kill", "n", "--", "true"},
      {"exec", "--on-lost"},
      {"exec", "--kill-after", "5x", "n", "--", "true"},
      {"exec", "--fenced", "--fair", "n", "--", "true"},
      {"exec", "--spin", "--read", "n", "--", "true"},
      {"exec", "--fenced", "--spin", "n", "--", "true"},
      {"exec", "--write", "--spin", "n", "--", "true"},
      {"exec", "--fenced", "a", "b", "--", "true"},
      {"-u", "redis://127.0.0.1:1", "-u", "redis://127.0.0.1:2", "exec",
       "--fenced", "n", "--", "true"},
      {"-u", "redis://127.0.0.1:1", "-u", "redis://127.0.0.1:2", "exec",
       "--spin", "n", "--", "true"},
      {"exec", "--permits", "0", "n", "--", "true"},
      {"exec", "--permits", "2147483648", "n", "--", "true"},
      {"exec", "--permits", "x", "n", "--", "true"},
      {"exec", "--permits", "2", "--fair", "n", "--", "true"},
      {"exec", "--permits", "2", "a", "b", "--", "true"},
      {"-u", "redis://127.0.0.1:1", "-u", "redis://127.0.0.1:2", "exec",
       "--permits", "2", "n", "--", "true"},
      {"latch"},
      {"latch", "open", "n"},
      {"latch", "set", "n"},
      {"latch", "set", "n", "0"},
      {"latch", "set", "n", "-1"},
      {"latch", "set", "n", "9223372036854775808"},
      {"latch", "down"},
      {"latch", "down", "a", "b"},
      {"latch", "-w", "1s", "down", "n"},
      {"latch", "wait", "n", "-w", "1s"},
      {"latch", "wait", "-w", "5x", "n"},
      {"--retry-for", "1s", "latch", "down", "n"},
      {"--retry-for", "1s", "latch", "set", "n", "1"},
      {"--retry-for", "1s", "top", "--once"},
      {"--retry-for", "1s", "leader", "n"},
      {"top", "x*", "--once"},
      {"leader", "n", "--json"},
      {"-u", "redis://127.0.0.1:1", "-u", "redis://127.0.0.1:2", "leader", "n"},
      {"-u", "redis://127.0.0.1:1", "-u", "redis://127.0.0.1:2", "elect", "n",
       "--", "true"},
      {"-u", "redis://127.0.0.1:1", "-u", "redis://127.0.0.1:2", "top"},
      {"-u", "redis://127.0.0.1:1", "-u", "redis://127.0.0.1:2", "latch",
       "down", "n"},
      {"status"},
      {"status", "a", "--json"},
      {"status", "--json=yes", "a"},
      {"list", "a", "b"},
      {"list", ""},
      {"list", "--bogus"},
      {"-u", "redis://127.0.0.1:1", "-u", "redis://127.0.0.1:2", "list"},
      {"unlock", "n"},
      {"unlock", "--force"},
  };
  proc_opts o = {dead_url, -1, 0};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    proc p;
    proc_start_opts(&p, &o, cases[i]);
    proc_wait(&p, SCALED(10000));
    if (p.status != 64 || count_lines(p.out[1]) != 2 ||
        strstr(p.out[1], "\nTry 'rlock --help'.\n") == NULL || p.len[0] != 0)
      fail_msg("case %zu (%s %s): exit %d; stdout: %s; stderr: %s", i,
               cases[i][0] ? cases[i][0] : "",
               cases[i][0] && cases[i][1] ? cases[i][1] : "", p.status,
               p.out[0], p.out[1]);
  }
}

/* ---- help, version, environment
 * ----------------------------------------------- */

static void test_help_and_version(void **state) {
  (void)state;
  static const char *const cases[][3] = {
      {"--help"},           {"-h"},
      {"exec", "--help"},   {"exec", "-h"},
      {"status", "--help"}, {"unlock", "--help"},
      {"list", "--help"},
  };
  proc p;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_expect(&p, 0, cases[i]);
    assert_string_equal(p.out[1], "");
    assert_non_null(strstr(p.out[0], "Usage: rlock"));
    assert_non_null(strstr(p.out[0], "Exit status:"));
    assert_non_null(strstr(p.out[0], "  64 "));
    assert_non_null(strstr(p.out[0], "  69 "));
  }
  run_expect(&p, 0, ARGS("--help"));
  for (const char *const *s =
           ARGS("--fair|--read|--write", "NAME [NAME...]", "[-u URL]...");
       *s; s++)
    assert_non_null(strstr(p.out[0], *s));
  run_expect(&p, 0, ARGS("exec", "--help"));
  for (const char *const *s = ARGS("  75 ", "126", "127", "128+N", "--fenced",
                                   "$RLOCK_TOKEN", "--spin");
       *s; s++)
    assert_non_null(strstr(p.out[0], *s));
}

/* The first line `cmd` prints, without its newline, into buf ("" when it
 * fails or prints nothing). */
static void first_line_of(const char *cmd, char *buf, size_t size) {
  buf[0] = '\0';
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  if (fgets(buf, (int)size, f) == NULL)
    buf[0] = '\0';
  buf[strcspn(buf, "\n")] = '\0';
  if (pclose(f) != 0)
    buf[0] = '\0';
}

/* The commit a build of `src` names (cmake/git_commit.cmake's rule): `git
 * rev-parse --short HEAD` where src is the top of a git checkout, else "". */
static void source_commit(const char *src, char *buf, size_t size) {
  char cmd[4200], top[4096], real_top[PATH_MAX], real_src[PATH_MAX];
  buf[0] = '\0';
  snprintf(cmd, sizeof cmd, "git -C '%s' rev-parse --show-toplevel 2>/dev/null",
           src);
  first_line_of(cmd, top, sizeof top);
  if (top[0] == '\0' || realpath(top, real_top) == NULL ||
      realpath(src, real_src) == NULL || strcmp(real_top, real_src) != 0)
    return;
  snprintf(cmd, sizeof cmd, "git -C '%s' rev-parse --short HEAD 2>/dev/null",
           src);
  first_line_of(cmd, buf, size);
}

/* --version prints include/rlock/version.h's version (which the man page's
 * title names too) and, built from a git checkout, the commit of the source
 * tree it was built from: the one checked out now, unless a commit was made
 * since the build. */
static void test_version(void **state) {
  (void)state;
  char version[32], want[128], commit[64], th[512] = "";
  snprintf(version, sizeof version, "%d.%d.%d", RLOCK_VERSION_MAJOR,
           RLOCK_VERSION_MINOR, RLOCK_VERSION_PATCH);
  assert_string_equal(rlock_version_string(), version);
  source_commit(RLOCK_TEST_SRCDIR, commit, sizeof commit);
  if (commit[0] != '\0')
    snprintf(want, sizeof want, "rlock %s (git %s)\n", version, commit);
  else
    snprintf(want, sizeof want, "rlock %s\n", version);
  proc p;
  run_expect(&p, 0, ARGS("--version"));
  assert_string_equal(p.out[0], want);
  assert_string_equal(p.out[1], "");

  snprintf(want, sizeof want, "\"rlock %s\"", version);
  FILE *f = fopen(RLOCK_TEST_SRCDIR "/docs/rlock.1", "r");
  assert_non_null(f);
  while (fgets(th, sizeof th, f) != NULL && strncmp(th, ".TH ", 4) != 0)
    ;
  fclose(f);
  if (strstr(th, want) == NULL)
    fail_msg("docs/rlock.1's title line does not name %s: %s", want, th);
}

static void test_url_from_environment(void **state) {
  (void)state;
  proc p;
  proc_opts env_ok = {url, -1, 0}, env_dead = {dead_url, -1, 0};
  proc_start_opts(&p, &env_ok, ARGS("status", "cli:env"));
  assert_int_equal(proc_wait(&p, SCALED(10000)), 0);
  assert_string_equal(p.out[0], "cli:env: free\n");
  proc_start_opts(&p, &env_dead, ARGS("status", "cli:env"));
  assert_int_equal(proc_wait(&p, SCALED(10000)), 69);
  proc_start_opts(&p, &env_dead, ON_URL("status", "cli:env"));
  assert_int_equal(proc_wait(&p, SCALED(10000)), 0); /* -u wins */
}

/* ---- COMMAND as a job ------------------------------------------------------
 */

/* The pid written in `path`, once it is there. */
static pid_t pid_in(const char *path) {
  fx_wait_file(path, SCALED(5000));
  long pid = 0;
  for (int64_t t0 = rt_now_ms(); pid <= 0 && rt_now_ms() - t0 < 5000;) {
    pid = atol(fx_slurp(path));
    if (pid <= 0)
      rt_sleep_ms(5);
  }
  assert_true(pid > 0);
  return (pid_t)pid;
}

static bool pid_gone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

/* A job script: a background `sleep 300` whose pid goes to `pidfile`,
 * then `ready`, then waiting for it. */
static const char *job_script(char *buf, size_t size, const char *pidfile,
                              const char *ready) {
  snprintf(buf, size, "sleep 300 & echo $! > %s; touch %s; wait", pidfile,
           ready);
  return buf;
}

/* A lost lock terminates the whole job, not just COMMAND: the job's
 * `sleep 300` is gone once rlock has exited 76; and a TERM sent to rlock
 * reaches the job's children too. (A QUIT or INT is passed on as such,
 * and a shell's background children ignore those: see
 * test_exec_sigquit_releases.) */
static void test_exec_signals_whole_job(void **state) {
  (void)state;
  const int sigs[] = {0, SIGTERM};
  for (int i = 0; i < 2; i++) {
    char name[64], pidfile[512], ready[512], tag[64], script[2048];
    snprintf(name, sizeof name, "cli:job%d", i);
    snprintf(tag, sizeof tag, "job%d-pid", i);
    fx_tmp_path(pidfile, sizeof pidfile, tag);
    snprintf(tag, sizeof tag, "job%d-ready", i);
    fx_tmp_path(ready, sizeof ready, tag);
    proc p;
    proc_start(&p, ON_URL("--watchdog", "600ms", "exec", name, "--", "sh", "-c",
                          job_script(script, sizeof script, pidfile, ready)));
    pid_t child = pid_in(pidfile);
    fx_wait_file(ready, SCALED(5000));
    if (sigs[i] == 0)
      freeReplyObject(rt_cmd(srv, "DEL %s", name));
    else
      assert_int_equal(kill(p.pid, sigs[i]), 0);
    int st = proc_wait(&p, SCALED(5000));
    assert_int_equal(st, sigs[i] == 0 ? 76 : 128 + sigs[i]);
    if (!pid_gone(child))
      fail_msg("case %d: the job's sleep %d still runs", i, (int)child);
    assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
  }
}

/* Whether process `pid`'s parent is `parent` (/proc/PID/stat). */
static bool parent_is(pid_t pid, pid_t parent) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return false;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* comm may hold spaces */
  int ppid = 0;
  return p != NULL && sscanf(p + 1, " %*c %d", &ppid) == 1 && ppid == parent;
}

typedef struct reparent_wait {
  pid_t pid, parent;
} reparent_wait;

static bool pred_reparented(void *arg, char *why, size_t cap) {
  reparent_wait *w = arg;
  snprintf(why, cap, "process %d not yet a child of rlock %d", (int)w->pid,
           (int)w->parent);
  return parent_is(w->pid, w->parent);
}

/* `sh -c 'job &'`: sh exits at once, its background job goes on, and so
 * does the lock: rlock (a subreaper: the job becomes its child) releases
 * it only when the job has exited, as flock's lock lasts while any
 * process of the job holds it. */
static void test_exec_holds_lock_until_job_ends(void **state) {
  (void)state;
  const char *name = "cli:bg-job";
  char pidfile[512], script[2048];
  gate g;
  gate_init(&g, "bg-job");
  fx_tmp_path(pidfile, sizeof pidfile, "bg-job-pid");
  snprintf(script, sizeof script,
           "(touch %s; while [ ! -e %s ]; do sleep 0.02; done) & "
           "echo $! > %s; exit 4",
           g.ready, g.go, pidfile);
  proc p;
  proc_start(&p, ON_URL("exec", name, "--", "sh", "-c", script));
  pid_t job = pid_in(pidfile);
  reparent_wait w = {job, p.pid};
  rt_wait_until(pred_reparented, &w, SCALED(5000),
                "sh exited, job re-parented");
  assert_int_equal(waitpid(p.pid, NULL, WNOHANG), 0); /* rlock still runs */
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 1);
  int64_t t0 = rt_now_ms();
  fx_touch(g.go);
  assert_int_equal(proc_wait(&p, SCALED(5000)), 4); /* COMMAND's status */
  ASSERT_BETWEEN(p.ended - t0, 0, SCALED(1500));
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
  assert_true(pid_gone(job));
}

/* Once COMMAND has exited, a signal to rlock (a second Ctrl-C, say) ends
 * what it left behind, even a process that ignores INT (as a shell's
 * background jobs do) or is stopped: SIGTERM (and SIGCONT), well before
 * --kill-after's SIGKILL; rlock then releases the lock and keeps
 * COMMAND's status. */
static void test_exec_signal_ends_leftovers(void **state) {
  (void)state;
  const char *name = "cli:leftover";
  char pidfile[512], stopfile[512], script[2048];
  fx_tmp_path(pidfile, sizeof pidfile, "leftover-pid");
  fx_tmp_path(stopfile, sizeof stopfile, "leftover-stopped-pid");
  snprintf(script, sizeof script,
           "(trap '' INT QUIT; while :; do sleep 0.05; done) & "
           "echo $! > %s; sh -c 'kill -STOP $$; exec sleep 300' & "
           "echo $! > %s; exit 3",
           pidfile, stopfile);
  proc p;
  proc_start(&p, ON_URL("exec", "--kill-after", "60s", name, "--", "sh", "-c",
                        script));
  pid_t left = pid_in(pidfile), stopped = pid_in(stopfile);
  reparent_wait w = {left, p.pid};
  rt_wait_until(pred_reparented, &w, SCALED(5000),
                "sh exited, job re-parented");
  for (int64_t t0 = rt_now_ms(); !proc_stopped(stopped);) {
    if (rt_now_ms() - t0 > SCALED(5000))
      fail_msg("process %d did not stop", (int)stopped);
    rt_sleep_ms(5);
  }
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 1);
  signal_expect(&p, SIGINT, 3);
  assert_true(pid_gone(left));
  assert_true(pid_gone(stopped));
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
}

/* SIGQUIT (Ctrl-\) is handled as TERM: a fair holder releases at once
 * (its waiter gets the lock), and a fair waiter leaves the queue at once
 * instead of blocking it for the fair-wait timeout. */
static void test_exec_sigquit_releases(void **state) {
  (void)state;
  const char *name = "cli:quit";
  char ran[512];
  gate g;
  fx_tmp_path(ran, sizeof ran, "quit-ran");
  proc holder, waiter, late;
  gate_hold(&holder, &g, "quit", ON_URL("exec", "--fair", name));
  proc_start(&waiter, ON_URL("exec", "--fair", name, "--", "true"));
  wait_fair_queue(name, 1);
  proc_start(&late, ON_URL("exec", "--fair", name, "--", "touch", ran));
  wait_fair_queue(name, 2);
  signal_expect(&waiter, SIGQUIT, 128 + SIGQUIT); /* a waiter: leaves */
  assert_int_equal(fair_queue_len(name), 1);
  signal_expect(&holder, SIGQUIT, 128 + SIGQUIT); /* the holder: releases */
  assert_int_equal(proc_wait(&late, SCALED(5000)), 0);
  assert_true(file_exists(ran));
  assert_int_equal(
      rt_cmd_int(srv, "EXISTS %s redisson_lock_queue:{%s}", name, name), 0);
}

/* A lock deleted while COMMAND runs but found lost only at the release
 * (no renewal came in between: 30 s watchdog) is exit 76 with one line,
 * as a loss seen earlier would be; --check-every finds it while COMMAND
 * runs, and terminates it. */
/* `rlock ARGS... -- sh -c GATE` where the test deletes `name` while
 * COMMAND runs, then lets it exit 0; returns rlock's exit status. */
static int run_deleted_meanwhile(proc *p, const char *tag, const char *name,
                                 const char *const *args) {
  gate g;
  gate_hold(p, &g, tag, args);
  freeReplyObject(rt_cmd(srv, "DEL %s", name));
  fx_touch(g.go);
  return proc_wait(p, SCALED(5000));
}

static void test_exec_loss_found_late_or_checked(void **state) {
  (void)state;
  const char *name = "cli:late-loss";
  proc p;
  assert_int_equal(
      run_deleted_meanwhile(&p, "late1", name, ON_URL("exec", name)), 76);
  assert_string_equal(p.out[1], "rlock: lock 'cli:late-loss' was lost while "
                                "'sh' ran (found at its release)\n");
  /* --on-lost ignore keeps COMMAND's status, with a warning. */
  assert_int_equal(
      run_deleted_meanwhile(&p, "late2", name,
                            ON_URL("exec", "--on-lost", "ignore", name)),
      0);
  assert_non_null(strstr(p.out[1], "warning: lock 'cli:late-loss' was lost"));

  idler x;
  idle_start(&p, &x, "checked", "exit 9",
             ON_URL("exec", "--check-every", "200ms", name));
  ASSERT_BETWEEN(del_until_lost(&p, name, "--check-every 200ms"), 0,
                 SCALED(200 + 800));
  assert_int_equal(count_rlock_lines(p.out[1]), 1);
}

/* A server that stops answering while COMMAND runs (SIGSTOPped: it still
 * accepts connections): the lock counts as lost after a lease, COMMAND
 * is terminated, and the release is given the command timeout, no more. */
static void test_exec_release_bounded_on_hung_server(void **state) {
  (void)state;
  rt_server *hung = rt_server_start(NULL);
  idler x;
  proc p;
  idle_start(&p, &x, "hung", "exit 9",
             ARGS("-u", rt_server_url(hung), "--watchdog", "600ms",
                  "--command-timeout", "400ms", "exec", "cli:hung"));
  assert_int_equal(kill(rt_server_pid(hung), SIGSTOP), 0);
  int64_t t0 = rt_now_ms();
  int st = proc_wait(&p, SCALED(10000));
  assert_int_equal(kill(rt_server_pid(hung), SIGCONT), 0);
  print_message("hung server: rlock exited %lld ms after the stop\n",
                (long long)(p.ended - t0));
  assert_int_equal(st, 76);
  /* A lease (600 ms), the 400 ms bound on the release, and slack. */
  ASSERT_BETWEEN(p.ended - t0, 0, SCALED(600 + 400 + 1000));
  assert_string_equal(fx_slurp(x.got), "term\n");
  rt_server_free(hung);
}

/* A server that takes connections and never answers: exec's -w bounds
 * the whole wait, and -w 0 (a single try) takes one command timeout, not
 * one per command it needs (issue 29: 6.2 s for -w 2s, 6.1 s for -w 0);
 * rlock says what is wrong in one line and exits 69. */
static void test_exec_wait_bounded_on_hung_server(void **state) {
  (void)state;
  rt_server *hung = rt_server_start(NULL);
  assert_int_equal(kill(rt_server_pid(hung), SIGSTOP), 0);
  static const char *const waits[] = {"500ms", "0"};
  const int64_t bounds[] = {500, 800}; /* -w, or the command timeout */
  for (int i = 0; i < 2; i++) {
    proc p;
    run_expect(&p, 69,
               ARGS("-u", rt_server_url(hung), "--command-timeout", "800ms",
                    "--connect-timeout", "800ms", "exec", "-w", waits[i],
                    "cli:hung-wait", "--", "true"));
    print_message("hung server, -w %s: exit 69 after %lld ms\n", waits[i],
                  (long long)(p.ended - p.started));
    ASSERT_BETWEEN(p.ended - p.started, bounds[i] - 50,
                   bounds[i] + SCALED(200 + 500));
    assert_int_equal(count_lines(p.out[1]), 1);
  }
  assert_int_equal(kill(rt_server_pid(hung), SIGCONT), 0);
  rt_server_free(hung);
}

/* flock's spellings and the other conveniences: -n and --timeout, -E for
 * the conflict status, seconds with a fraction, -v saying what the wait is
 * for, $RLOCK_NAME. */
static void test_exec_flock_options(void **state) {
  (void)state;
  const char *name = "cli:flockish";
  proc p;
  hold_foreign(name, FOREIGN, 1, 60000);
  run_expect(&p, 75, ON_URL("exec", "-n", name, "--", "true"));
  run_expect(&p, 9, ON_URL("exec", "-n", "-E", "9", name, "--", "true"));
  run_expect(&p, 75, ON_URL("exec", "--timeout", "0.3", name, "--", "true"));
  ASSERT_BETWEEN(p.ended - p.started, 300, SCALED(300 + 1500));
  run_expect(&p, 0,
             ON_URL("exec", "-E", "0", "--nonblock", name, "--", "true"));
  run_expect(&p, 75, ON_URL("exec", "-v", "-w", "400ms", name, "--", "true"));
  if (strstr(p.out[1], "rlock: waiting for 'cli:flockish' held by " FOREIGN
                       " (expires in ") == NULL)
    fail_msg("stderr: %s", p.out[1]);
  freeReplyObject(rt_cmd(srv, "DEL %s", name));
  run_expect(&p, 0, ON_URL("exec", "-w", "1.5", name, "--", "true"));
  run_expect(&p, 0,
             ON_URL("--connect-timeout", "1.5", "--command-timeout", "2s",
                    "exec", "-v", "-w", "1d", name, "--", "sh", "-c",
                    "echo \"$RLOCK_NAME\""));
  assert_string_equal(p.out[0], "cli:flockish\n");
  assert_string_equal(p.out[1], "rlock: acquired 'cli:flockish'\n"
                                "rlock: released 'cli:flockish'\n");
}

/* Messages: every secret of a refused URL hidden; durations refused for
 * the same reason whatever their size; names with control characters
 * escaped; one line for one lost lock of several. */
static void test_messages(void **state) {
  (void)state;
  proc p;
  run_expect(&p, 64,
             ARGS("-u",
                  "redis-sentinel://u:pw1@h:1?sentinel_password=pw2&x=1#m",
                  "status", "n"));
  if (strstr(p.out[1], "pw1") != NULL || strstr(p.out[1], "pw2") != NULL ||
      strstr(p.out[1], "sentinel_password=***&x=1#m") == NULL)
    fail_msg("stderr: %s", p.out[1]);
  run_expect(&p, 64, ARGS("exec", "-w", "99999999999y", "n", "--", "true"));
  assert_non_null(strstr(p.out[1], "expected a number"));
  run_expect(&p, 64, ARGS("exec", "-w", "99999999999d", "n", "--", "true"));
  assert_non_null(strstr(p.out[1], "at most 365 days"));
  run_expect(&p, 64, ARGS("list", "x*", "--json"));
  assert_non_null(strstr(p.out[1], "options go before PATTERN"));
  run_expect(&p, 64, ARGS("unlock", "n", "--force"));
  assert_non_null(strstr(p.out[1], "unlock: options go before NAME"));

  const char *odd = "cli:nl\n\x1b[31mx";
  assert_int_equal(run_deleted_meanwhile(&p, "odd", odd, ON_URL("exec", odd)),
                   76);
  assert_string_equal(p.out[1], "rlock: lock 'cli:nl\\n\\x1b[31mx' was lost "
                                "while 'sh' ran (found at its release)\n");
  /* An invalid name is bad data (65), as rlock(1) says: a lone '}' too. */
  static const char *const bad[] = {"cli:a}b", "cli:a{b", "cli:a{}b", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    run_one_line(&p, 65, NULL, ON_URL("status", bad[i]));
  /* The same escapes in what status, list and unlock print on stdout. */
  hold_foreign(odd, FOREIGN, 1, 60000);
  run_expect(&p, 0, ON_URL("status", odd));
  assert_ptr_equal(strstr(p.out[0], "cli:nl\\n\\x1b[31mx: locked, "), p.out[0]);
  run_expect(&p, 0, ON_URL("list", "cli:nl*"));
  assert_ptr_equal(strstr(p.out[0], "cli:nl\\n\\x1b[31mx: reentrant, "),
                   p.out[0]);
  run_expect(&p, 0, ON_URL("unlock", "--force", odd));
  assert_string_equal(p.out[0], "rlock: deleted lock 'cli:nl\\n\\x1b[31mx'\n");

  /* One lock of several lost while COMMAND runs: one line. */
  idler x;
  idle_start(&p, &x, "multi", "exit 9",
             ON_URL("--watchdog", "600ms", "exec", "cli:m1", "cli:m2"));
  freeReplyObject(rt_cmd(srv, "DEL cli:m2"));
  assert_int_equal(proc_wait(&p, SCALED(5000)), 76);
  assert_int_equal(count_rlock_lines(p.out[1]), 1);
  assert_non_null(strstr(p.out[1], "lock 'cli:m2' was lost"));
  assert_int_equal(rt_cmd_int(srv, "EXISTS cli:m1 cli:m2"), 0);
}

/* Whether process `pid` (a child) has exited, without reaping it. */
static bool has_exited(pid_t pid) {
  siginfo_t info;
  memset(&info, 0, sizeof info);
  return waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

/* Wait until rlock's stderr holds a line (true), or it exits. */
static bool wait_stderr_line(proc *p, int64_t ms) {
  for (int64_t t0 = rt_now_ms(); rt_now_ms() - t0 < ms; rt_sleep_ms(10)) {
    proc_drain(p);
    if (strchr(p->out[1], '\n') != NULL)
      return true;
    if (has_exited(p->pid))
      return proc_drain(p), strchr(p->out[1], '\n') != NULL;
  }
  return false;
}

/* exec without -w keeps trying a server it cannot reach: it says so once,
 * then nothing more while it tries; and rediss:// pointed at a plain-text
 * port is never met with silence either (refused at once, or said once
 * while tried again). */
static void test_exec_says_once_what_is_wrong(void **state) {
  (void)state;
  proc p;
  proc_start(&p, ARGS("-u", dead_url, "exec", "cli:silent", "--", "true"));
  assert_true(wait_stderr_line(&p, SCALED(3000)));
  /* Time is the point: a second line would have come by now (the wait
   * tries again every second at the latest). */
  rt_sleep_ms(2500);
  signal_expect(&p, SIGTERM, 128 + SIGTERM);
  assert_int_equal(count_lines(p.out[1]), 1);
  if (strstr(p.out[1], "rlock: waiting for 'cli:silent': cannot connect") !=
          p.out[1] ||
      strstr(p.out[1], "; still trying\n") == NULL)
    fail_msg("stderr: %s", p.out[1]);

  char tls_url[128];
  snprintf(tls_url, sizeof tls_url, "rediss://127.0.0.1:%d",
           rt_server_port(srv));
  proc_start(&p, ARGS("-u", tls_url, "--tls-insecure", "exec", "cli:silent",
                      "--", "true"));
  /* A handshake the server never answers: the connect timeout (2 s),
   * then the first retry; or a refusal at once. */
  assert_true(wait_stderr_line(&p, SCALED(2000 + 3000)));
  if (!has_exited(p.pid))
    kill(p.pid, SIGTERM);
  int st = proc_wait(&p, SCALED(5000));
  print_message("rediss:// to a plain port: exit %d, %s", st, p.out[1]);
  assert_true(st == 69 || st == 128 + SIGTERM);
  assert_int_equal(count_lines(p.out[1]), 1);
}

/* A thread the library cannot start is a system error, 71 as documented,
 * not an unreachable server (69). */
static void test_thread_that_cannot_start(void **state) {
  (void)state;
  proc p;
  proc_opts o = {NULL, -1, 0, 1};
  proc_start_opts(&p, &o, ON_URL("status", "cli:thread"));
  int st = proc_wait(&p, SCALED(10000));
  if (st == 0) { /* the kernel mapped the stack after all (overcommit) */
    print_message("note: a 1 TiB thread stack was mapped; not checked\n");
    return;
  }
  /* ThreadSanitizer cannot lay out its memory under such a stack limit
   * (it refuses to start, with its own message): nothing to check. */
  if (st != 71 && strstr(p.out[1], "ThreadSanitizer") != NULL) {
    print_message("note: ThreadSanitizer does not start with a 1 TiB stack "
                  "limit; not checked\n");
    return;
  }
  if (st != 71 || strstr(p.out[1], "cannot start") == NULL ||
      count_rlock_lines(p.out[1]) != 1)
    fail_msg("exit %d; stderr: %s", st, p.out[1]);
}

/* ---- job control on a terminal ---------------------------------------------
 */

typedef struct ctrlz {
  int master;      /* the pty's master side, drained while waiting */
  pid_t rlock, sh; /* rlock, and COMMAND (its group's leader) */
  int phase;       /* what pred_ctrlz waits for, see below */
} ctrlz;

static void pty_drain(int master) {
  char buf[4096];
  while (read(master, buf, sizeof buf) > 0)
    ;
}

/* Phase 0: the job stopped whole (rlock and COMMAND), the terminal back
 * with the shell. Phase 1: both continued, the terminal COMMAND's. */
static bool pred_ctrlz(void *arg, char *why, size_t cap) {
  ctrlz *z = arg;
  pty_drain(z->master);
  pid_t fg = tcgetpgrp(z->master);
  bool r = proc_stopped(z->rlock), c = proc_stopped(z->sh);
  snprintf(why, cap, "rlock %s, COMMAND %s, terminal's group %d",
           r ? "stopped" : "running", c ? "stopped" : "running", (int)fg);
  return z->phase == 0 ? r && c && fg != z->sh && fg != z->rlock
                       : !r && !c && fg == z->sh;
}

/* An interactive bash on a pty runs rlock exec: COMMAND's group gets the
 * terminal (COMMAND reads from it); Ctrl-Z stops the job whole, rlock
 * included, so that bash sees it stopped and takes the terminal back;
 * the lock stays held; `fg` continues it and hands the terminal to
 * COMMAND again, which reads its line; then the lock is released. */
static void test_exec_ctrl_z_stops_whole_job(void **state) {
  (void)state;
  const char *name = "cli:ctrlz";
  char ids[512], ready[512], got[512], status[512], line[8192];
  fx_tmp_path(ids, sizeof ids, "ctrlz-ids");
  fx_tmp_path(ready, sizeof ready, "ctrlz-ready");
  fx_tmp_path(got, sizeof got, "ctrlz-got");
  fx_tmp_path(status, sizeof status, "ctrlz-status");
  char slave_path[128];
  int master = pty_open(slave_path, sizeof slave_path);
  fcntl(master, F_SETFL, O_NONBLOCK);
  pid_t bash = fork();
  assert_true(bash >= 0);
  if (bash == 0) {
    child_signals(0);
    setsid();
    int slave = open(slave_path, O_RDWR); /* the controlling terminal */
    if (slave < 0 || dup2(slave, STDIN_FILENO) < 0 ||
        dup2(slave, STDOUT_FILENO) < 0 || dup2(slave, STDERR_FILENO) < 0)
      _exit(126);
    execlp("bash", "bash", "--norc", "--noprofile", "-i", (char *)NULL);
    _exit(127);
  }
  snprintf(line, sizeof line,
           "%s -u %s exec %s -- sh -c 'echo $PPID $$ > %s; touch %s; "
           "read x; echo \"$x\" > %s'\n",
           cli, url, name, ids, ready, got);
  assert_int_equal(write(master, line, strlen(line)), (ssize_t)strlen(line));
  fx_wait_file(ready, SCALED(5000));
  long r = 0, c = 0;
  assert_int_equal(sscanf(fx_slurp(ids), "%ld %ld", &r, &c), 2);
  ctrlz z = {master, (pid_t)r, (pid_t)c, 0};
  assert_int_equal(tcgetpgrp(master), z.sh); /* COMMAND's group has it */

  assert_int_equal(write(master, "\x1a", 1), 1); /* Ctrl-Z */
  rt_wait_until(pred_ctrlz, &z, SCALED(5000), "the job stopped whole");
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 1);
  assert_int_equal(write(master, "fg\n", 3), 3);
  z.phase = 1;
  rt_wait_until(pred_ctrlz, &z, SCALED(5000), "the job continued");
  assert_int_equal(write(master, "hello\n", 6), 6);
  fx_wait_file(got, SCALED(5000));
  assert_string_equal(fx_slurp(got), "hello\n");
  fx_wait_exists(srv, name, 0, SCALED(5000));
  snprintf(line, sizeof line, "echo $? > %s; exit\n", status);
  assert_int_equal(write(master, line, strlen(line)), (ssize_t)strlen(line));
  for (int64_t t0 = rt_now_ms();
       waitpid(bash, NULL, WNOHANG) == 0 && rt_now_ms() - t0 < SCALED(5000);)
    pty_drain(master), rt_sleep_ms(10);
  kill(bash, SIGKILL); /* if it did not exit (then status is missing) */
  waitpid(bash, NULL, 0);
  close(master);
  assert_string_equal(fx_slurp(status), "0\n");
}

/* ---- semaphores and latches --------------------------------------------- */

/* The number a semaphore's or latch's string key holds (-1: absent). */
static long long get_count(const char *name) {
  redisReply *r = rt_cmd(srv, "GET %s", name);
  long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
  freeReplyObject(r);
  return v;
}

/* exec --permits 2: two COMMANDs run at once, each with its permit's id;
 * a third finds none within -w 0 (75); status shows the permits leased;
 * each release gives its permit back. */
static void test_exec_permits(void **state) {
  (void)state;
  const char *name = "cli:permits";
  char idfile[2][512], tag[32];
  gate g[2];
  proc p[2], third, st;
  for (int i = 0; i < 2; i++) {
    snprintf(tag, sizeof tag, "permits%d.id", i);
    fx_tmp_path(idfile[i], sizeof idfile[i], tag);
    char before[1100];
    snprintf(before, sizeof before, "echo \"$RLOCK_PERMIT_ID\" > %s;",
             idfile[i]);
    snprintf(tag, sizeof tag, "permits%d", i);
    gate_start(&p[i], &g[i], tag, ON_URL("exec", "--permits", "2", name),
               before, "exit 0");
    fx_wait_file(g[i].ready, SCALED(5000));
  }
  char id0[64];
  snprintf(id0, sizeof id0, "%s", fx_slurp(idfile[0]));   /* static buffer */
  assert_int_equal(strlen(id0), RLOCK_PERMIT_ID_LEN + 1); /* and '\n' */
  assert_string_not_equal(id0, fx_slurp(idfile[1]));
  assert_int_equal(get_count(name), 0);
  assert_int_equal(rt_cmd_int(srv, "ZCARD {%s}:timeout", name), 2);
  run_expect(&third, 75,
             ON_URL("exec", "--permits", "2", "-w", "0", name, "--", "true"));
  run_expect(&st, 0, ON_URL("status", name));
  assert_non_null(strstr(st.out[0], "cli:permits: permit-expirable "
                                    "semaphore, 0 available of 2 (2 leased)"));
  char line[128];
  id0[RLOCK_PERMIT_ID_LEN] = '\0'; /* without its '\n' */
  snprintf(line, sizeof line, "  permit %s, lease ", id0);
  assert_non_null(strstr(st.out[0], line)); /* each permit, with its lease */
  run_expect(&st, 0, ON_URL("status", "--json", name));
  assert_non_null(strstr(st.out[0], "{\"name\": \"cli:permits\", \"kind\": "
                                    "\"permit-expirable-semaphore\", "
                                    "\"available\": 0, \"permits\": 2, "
                                    "\"leased\": 2, \"permit_leases\": [{"));
  snprintf(line, sizeof line, "{\"id\": \"%s\", \"lease_ms\": ", id0);
  assert_non_null(strstr(st.out[0], line));
  /* a third, waiting (subscribed), runs once the first gives its permit
   * back, with -l's fixed lease */
  char ran[512], channel[128];
  fx_tmp_path(ran, sizeof ran, "permits-third-ran");
  snprintf(channel, sizeof channel, "redisson_sc:{%s}", name);
  proc_start(&third, ON_URL("exec", "--permits", "2", "-w", "20s", "-l", "20s",
                            name, "--", "touch", ran));
  fx_wait_subscribers(srv, channel, 1, "the third exec's subscription");
  assert_false(file_exists(ran));
  fx_touch(g[0].go);
  assert_int_equal(proc_wait(&p[0], SCALED(10000)), 0);
  assert_int_equal(proc_wait(&third, SCALED(10000)), 0);
  assert_true(file_exists(ran));
  assert_int_equal(get_count(name), 1);
  fx_touch(g[1].go);
  assert_int_equal(proc_wait(&p[1], SCALED(10000)), 0);
  assert_int_equal(get_count(name), 2);
  assert_int_equal(rt_cmd_int(srv, "ZCARD {%s}:timeout", name), 0);
  run_expect(&st, 0, ON_URL("status", name));
  assert_string_equal(st.out[0], "cli:permits: count 2 (a semaphore's "
                                 "available permits or a latch's count)\n");
  /* the count stands once set: --permits 5 does not change it */
  run_expect(&third, 0, ON_URL("exec", "--permits", "5", name, "--", "true"));
  assert_int_equal(get_count(name), 2);
}

/* The deadline (ms since the epoch) of the one permit leased in `name`'s
 * timeout set; -1 when there is none. */
static long long permit_deadline(const char *name) {
  redisReply *r = rt_cmd(srv, "ZRANGE {%s}:timeout 0 -1 WITHSCORES", name);
  long long v = r->type == REDIS_REPLY_ARRAY && r->elements == 2
                    ? atoll(r->element[1]->str)
                    : -1;
  freeReplyObject(r);
  return v;
}

typedef struct deadline_wait {
  const char *name;
  long long after;
} deadline_wait;

static bool deadline_moved(void *arg, char *why, size_t cap) {
  deadline_wait *w = arg;
  long long now = permit_deadline(w->name);
  snprintf(why, cap, "deadline %lld, first %lld", now, w->after);
  return now > w->after;
}

/* The permit's key deleted while COMMAND runs: COMMAND is terminated and
 * rlock exits 76, naming the permit; a key that is not a semaphore is
 * refused (65) and left alone. */
static void test_exec_permit_lost(void **state) {
  (void)state;
  const char *name = "cli:permit-lost";
  idler x;
  proc p;
  idle_start(&p, &x, "permit-lost", "exit 9",
             ON_URL("--watchdog", "600ms", "exec", "--permits", "1", name));
  /* the watchdog renews it: its deadline moves on */
  deadline_wait dw = {name, permit_deadline(name)};
  assert_true(dw.after > 0);
  rt_wait_until(deadline_moved, &dw, SCALED(5000), "a renewal of the permit");
  freeReplyObject(rt_cmd(srv, "DEL %s {%s}:timeout", name, name));
  assert_int_equal(proc_wait(&p, SCALED(5000)), 76);
  assert_string_equal(fx_slurp(x.got), "term\n");
  assert_int_equal(count_rlock_lines(p.out[1]), 1);
  assert_non_null(strstr(p.out[1], "of semaphore 'cli:permit-lost' was "
                                   "lost"));
  hold_foreign(name, FOREIGN, 1, 30000);
  run_expect(&p, 65,
             ON_URL("exec", "--permits", "1", "-w", "0", name, "--", "true"));
  assert_int_equal(rt_cmd_int(srv, "HLEN %s", name), 1);
  freeReplyObject(rt_cmd(srv, "DEL %s", name));
}

/* latch set, down and wait: a waiter (subscribed) goes on when the count
 * reaches zero; -w bounds a wait (75); a signal ends one (128+N); a latch
 * never set is open. */
static void test_latch(void **state) {
  (void)state;
  const char *name = "cli:latch";
  char channel[128];
  snprintf(channel, sizeof channel, "redisson_countdownlatch__channel__{%s}",
           name);
  proc p, w, s;
  run_expect(&p, 0, ON_URL("latch", "wait", "-w", "0", name));
  run_expect(&p, 0, ON_URL("latch", "set", name, "2"));
  assert_string_equal(p.out[0], "rlock: latch 'cli:latch' set to 2\n");
  run_expect(&p, 1, ON_URL("latch", "set", name, "7"));
  assert_string_equal(p.out[0],
                      "rlock: latch 'cli:latch' already counts 2; left as "
                      "it is\n");
  assert_int_equal(get_count(name), 2);
  run_expect(&p, 0, ON_URL("status", name));
  assert_non_null(strstr(p.out[0], "cli:latch: count 2"));
  int64_t t0 = rt_now_ms();
  run_expect(&p, 75, ON_URL("latch", "wait", "-w", "200ms", name));
  ASSERT_BETWEEN(p.ended - t0, 200, 5000);
  proc_start(&s, ON_URL("latch", "wait", name));
  proc_start(&w, ON_URL("latch", "-w", "1m", "wait", name));
  fx_wait_subscribers(srv, channel, 2, "the latch waiters");
  kill(s.pid, SIGTERM);
  assert_int_equal(proc_wait(&s, SCALED(5000)), 128 + SIGTERM);
  run_expect(&p, 0, ON_URL("latch", "down", name));
  assert_int_equal(get_count(name), 1);
  run_expect(&p, 0, ON_URL("latch", "down", name));
  assert_int_equal(proc_wait(&w, SCALED(5000)), 0);
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
  run_expect(&p, 0, ON_URL("latch", "down", name)); /* no count */
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
  freeReplyObject(rt_cmd(srv, "SET %s not-a-count", name));
  run_expect(&p, 65, ON_URL("latch", "down", name));
  run_expect(&p, 65, ON_URL("latch", "set", name, "1"));
  assert_int_equal(p.len[0], 0);
  freeReplyObject(rt_cmd(srv, "DEL %s", name));
}

/* ---- elect and leader ------------------------------------------------------
 */

/* elect runs COMMAND while leader, with the term in $RLOCK_TERM and its
 * value readable by `leader` (text and JSON) meanwhile; then resigns. Bad
 * input is a usage error with nothing written. */
static void test_elect_and_leader(void **state) {
  (void)state;
  const char *name = "cli:elect";
  char file[512], before[700], script[5000], want[256];
  gate g;
  proc p, leader;
  run_expect(&p, 1, ON_URL("leader", name));
  assert_string_equal(p.out[0], "cli:elect: no leader\n");
  run_expect(&p, 1, ON_URL("leader", "--json", name));
  assert_string_equal(p.out[0], "{\"name\":\"cli:elect\",\"leader\":false}\n");
  fx_tmp_path(file, sizeof file, "elect.term");
  snprintf(before, sizeof before, "echo \"$RLOCK_TERM\" > %s;", file);
  gate_start(&leader, &g, "elect", ON_URL("elect", "--value", "host-a:1", name),
             before, ":");
  fx_wait_file(g.ready, SCALED(5000));
  long long term = file_token(file);
  assert_int_equal(term, token_key(name));
  run_expect(&p, 0, ON_URL("leader", name));
  snprintf(want, sizeof want, "cli:elect: host-a:1 (term %lld, lease ", term);
  assert_ptr_equal(strstr(p.out[0], want), p.out[0]);
  run_expect(&p, 0, ON_URL("leader", "--json", name));
  snprintf(want, sizeof want,
           "{\"name\":\"cli:elect\",\"leader\":true,\"value\":\"host-a:1\","
           "\"term\":%lld,\"ttl_ms\":",
           term);
  assert_ptr_equal(strstr(p.out[0], want), p.out[0]);
  /* A second campaign waits; with -n it is not leading: 75. */
  run_expect(&p, 75, ON_URL("elect", "-n", name, "--", "true"));
  assert_int_equal(token_key(name), term);
  gate_open(&leader, &g, 0);
  assert_int_equal(rt_cmd_int(srv, "EXISTS %s", name), 0);
  assert_int_equal(rt_cmd_int(srv, "EXISTS rlock_leader:{%s}", name), 0);
  run_expect(&p, 1, ON_URL("leader", name));
  /* The default value: HOST:PID of rlock. */
  snprintf(script, sizeof script, "%s -u %s leader --json %s", cli, url, name);
  run_expect(&p, 0, ON_URL("elect", name, "--", "sh", "-c", script));
  assert_non_null(strstr(p.out[0], "\"leader\":true,\"value\":\""));
  assert_non_null(strstr(p.out[0], ":")); /* HOST:PID */
  /* Usage errors: nothing written. */
  run_expect(&p, 64, ON_URL("elect", "--value", "", name, "--", "true"));
  run_expect(&p, 64, ON_URL("elect", name));
  run_expect(&p, 64, ON_URL("elect", name, "other", "--", "true"));
  run_expect(&p, 64, ON_URL("leader", "--interval", "1s", name));
  run_expect(&p, 64, ON_URL("leader"));
  assert_int_equal(token_key(name), term + 1);
}

/* A standby elect takes over once the leader's rlock is stopped past its
 * lease (SIGSTOP), with a larger term; the deposed leader, resumed, finds
 * its leadership lost and exits 76 (its COMMAND terminated). */
static void test_elect_standby_takes_over(void **state) {
  (void)state;
  const char *name = "cli:elect:standby";
  char tfile[512], sscript[700];
  idler x;
  fx_tmp_path(tfile, sizeof tfile, "elect-standby.term");
  proc leader, standby;
  idle_start(&leader, &x, "elect", "exit 9",
             ON_URL("--watchdog", "600ms", "elect", "--value", "A", name));
  long long t1 = token_key(name);
  snprintf(sscript, sizeof sscript, "echo \"$RLOCK_TERM\" > %s", tfile);
  proc_start(&standby, ON_URL("--watchdog", "600ms", "elect", "--value", "B",
                              name, "--", "sh", "-c", sscript));
  fx_wait_subscribers(srv, "redisson_lock__channel:{cli:elect:standby}", 1,
                      "the standby's subscription");
  int64_t t0 = rt_now_ms();
  assert_int_equal(kill(leader.pid, SIGSTOP), 0);
  assert_int_equal(proc_wait(&standby, SCALED(5000)), 0);
  print_message("elect: the standby led and ended %lld ms after the "
                "leader's SIGSTOP (lease 600 ms)\n",
                (long long)(standby.ended - t0));
  ASSERT_BETWEEN(standby.ended - t0, 0, 600 + 1000);
  assert_true(file_token(tfile) > t1);
  signal_expect(&leader, SIGCONT, 76);
  assert_string_equal(fx_slurp(x.got), "term\n");
  assert_non_null(
      strstr(leader.out[1], "leadership of 'cli:elect:standby' was lost"));
}

/* Drain `w` until its stdout has `n` lines, for up to 5 s (scaled). */
static void wait_lines(proc *w, int n) {
  int64_t end = rt_now_ms() + SCALED(5000);
  while (count_lines(w->out[0]) < n && rt_now_ms() < end) {
    proc_drain(w);
    rt_sleep_ms(10);
  }
  if (count_lines(w->out[0]) < n)
    fail_msg("leader --watch printed %d lines, not %d: '%s'",
             count_lines(w->out[0]), n, w->out[0]);
}

/* leader --watch: the state now, then a line per change, until a signal
 * (128+N). */
static void test_leader_watch(void **state) {
  (void)state;
  const char *name = "cli:elect:watch";
  gate g;
  proc w, p;
  proc_start(&w, ON_URL("leader", "--watch", "--interval", "20ms", name));
  wait_lines(&w, 1);
  gate_hold(&p, &g, "elect-watch", ON_URL("elect", "--value", "W", name));
  wait_lines(&w, 2);
  gate_open(&p, &g, 0);
  wait_lines(&w, 3);
  signal_expect(&w, SIGTERM, 128 + SIGTERM);
  assert_int_equal(count_lines(w.out[0]), 3);
  assert_ptr_equal(strstr(w.out[0], "cli:elect:watch: no leader\n"), w.out[0]);
  assert_non_null(strstr(w.out[0], "\ncli:elect:watch: W (term "));
  assert_non_null(strstr(w.out[0], ")\ncli:elect:watch: no leader\n"));
}

/* Drain `w` until its stdout has `text` after the first `after` (NULL:
 * anywhere), for up to 5 s (scaled); the caller checks what came. */
static void wait_output(proc *w, const char *after, const char *text) {
  int64_t end = rt_now_ms() + SCALED(5000);
  for (;;) {
    const char *at = after != NULL ? strstr(w->out[0], after) : w->out[0];
    if ((at != NULL && strstr(at, text) != NULL) || rt_now_ms() >= end)
      return;
    proc_drain(w);
    rt_sleep_ms(10);
  }
}

/* status --watch: the state, then a line per change of holder, from the
 * lock's messages (the interval is a minute: no poll sees any of it);
 * Ctrl-C ends it with 130. */
static void test_status_watch(void **state) {
  (void)state;
  const char *name = "cli:status:watch";
  gate g1, g2;
  proc w, holder, waiter;
  proc_start(&w, ON_URL("status", "--watch", "--interval", "60s", name));
  wait_lines(&w, 1);
  fx_wait_subscribers(srv, "redisson_lock__channel:{cli:status:watch}", 1,
                      "the watch's subscription");
  fx_wait_subscribers(srv, "redisson_rwlock:{cli:status:watch}", 1,
                      "the watch's subscription (read-write lock)");
  gate_hold(&holder, &g1, "status-watch-1", ON_URL("exec", name));
  gate_start(&waiter, &g2, "status-watch-2", ON_URL("exec", name), "", ":");
  fx_wait_subscribers(srv, "redisson_lock__channel:{cli:status:watch}", 2,
                      "the waiting exec's subscription");
  fx_touch(g1.go); /* the holder goes, the waiter takes the lock */
  assert_int_equal(proc_wait(&holder, SCALED(10000)), 0);
  fx_wait_file(g2.ready, SCALED(5000));
  wait_lines(&w, 2);
  gate_open(&waiter, &g2, 0);
  char who[64];
  snprintf(who, sizeof who, " x1 (pid %d on ", (int)waiter.pid);
  /* Its release: 3 lines may be there before it (a free lock first). */
  wait_output(&w, who, "Z cli:status:watch: free\n");
  signal_expect(&w, SIGINT, 130);
  /* The first holder shows too when a read after the subscriptions'
   * confirmations found it (they are read as messages are), and so does
   * the lock free between the two when the read on the holder's release
   * came before the waiter took it (a slow machine: valgrind). */
  int n = count_lines(w.out[0]);
  const char *waiter_line = strstr(w.out[0], who);
  if (n < 3 || n > 5 || waiter_line == NULL)
    fail_msg("status --watch printed: '%s'", w.out[0]);
  assert_non_null(strstr(w.out[0], "Z cli:status:watch: free\n"));
  assert_non_null(
      strstr(strchr(waiter_line, '\n'), "Z cli:status:watch: free\n"));
  /* --json: one object a line; --interval without --watch is refused. */
  proc_start(&w, ON_URL("status", "--json", "--watch", name));
  wait_lines(&w, 1);
  signal_expect(&w, SIGTERM, 128 + SIGTERM);
  assert_ptr_equal(strstr(w.out[0], "{\"name\": \"cli:status:watch\", "
                                    "\"locked\": false"),
                   w.out[0]);
  run_expect(&w, 64, ON_URL("status", "--interval", "1s", name));
  run_expect(&w, 64, ON_URL("status", "--watch", name, name));
}

/* leader --watch from messages: with a one-minute interval, a standby's
 * takeover announced by the leader's resignation is shown, then nobody. */
static void test_leader_watch_handover(void **state) {
  (void)state;
  const char *name = "cli:elect:handover";
  gate g1, g2;
  proc w, a, b;
  proc_start(&w, ON_URL("leader", "--watch", "--interval", "60s", name));
  wait_lines(&w, 1);
  fx_wait_subscribers(srv, "redisson_lock__channel:{cli:elect:handover}", 1,
                      "the watch's subscription");
  gate_hold(&a, &g1, "handover-a", ON_URL("elect", "--value", "A", name));
  gate_start(&b, &g2, "handover-b", ON_URL("elect", "--value", "B", name), "",
             ":");
  fx_wait_subscribers(srv, "redisson_lock__channel:{cli:elect:handover}", 2,
                      "the standby's subscription");
  gate_open(&a, &g1, 0);
  fx_wait_file(g2.ready, SCALED(5000));
  wait_output(&w, NULL, "handover: B (term ");
  gate_open(&b, &g2, 0);
  wait_output(&w, "handover: B (term ", "handover: no leader\n");
  signal_expect(&w, SIGTERM, 128 + SIGTERM);
  const char *bl = strstr(w.out[0], "handover: B (term ");
  if (bl == NULL || strstr(bl, "handover: no leader\n") == NULL)
    fail_msg("leader --watch printed: '%s'", w.out[0]);
  assert_ptr_equal(strstr(w.out[0], "cli:elect:handover: no leader\n"),
                   w.out[0]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exec_holds_lock_while_command_runs),
      cmocka_unit_test(test_exec_exit_statuses),
      cmocka_unit_test(test_exec_lease_expiry_warns),
      cmocka_unit_test(test_exec_watchdog_renews),
      cmocka_unit_test(test_exec_wait_bounds),
      cmocka_unit_test(test_exec_processes_take_turns),
      cmocka_unit_test(test_exec_waiter_acquires_promptly),
      cmocka_unit_test(test_status_watch),
      cmocka_unit_test(test_exec_fair_order_and_queue),
      cmocka_unit_test(test_unlock_force_fair_wakes_head),
      cmocka_unit_test(test_exec_read_write),
      cmocka_unit_test(test_exec_several_names),
      cmocka_unit_test(test_exec_fenced_token),
      cmocka_unit_test(test_exec_spin),
      cmocka_unit_test(test_exec_redlock),
      cmocka_unit_test(test_exec_progress_on_terminal),
      cmocka_unit_test(test_exec_forwards_signals),
      cmocka_unit_test(test_exec_signal_while_waiting),
      cmocka_unit_test(test_exec_keeps_ignored_signal_ignored),
      cmocka_unit_test(test_status_free),
      cmocka_unit_test(test_status_of_exec_holder),
      cmocka_unit_test(test_status_young_client),
      cmocka_unit_test(test_top_in_a_terminal),
      cmocka_unit_test(test_top_once),
      cmocka_unit_test(test_status_json_escaping),
      cmocka_unit_test(test_unlock_force),
      cmocka_unit_test(test_unreachable_server),
      cmocka_unit_test(test_exec_meets_server_not_up_yet),
      cmocka_unit_test(test_exec_retry_for),
      cmocka_unit_test(test_wrong_type_key),
      cmocka_unit_test(test_families_refused),
      cmocka_unit_test(test_usage_errors),
      cmocka_unit_test(test_help_and_version),
      cmocka_unit_test(test_version),
      cmocka_unit_test(test_url_from_environment),
      cmocka_unit_test(test_exec_lost_lock_terminates_command),
      cmocka_unit_test(test_exec_waits_through_outage),
      cmocka_unit_test(test_exec_server_restart_terminates_command),
      cmocka_unit_test(test_exec_on_lost_ignore_keeps_command),
      cmocka_unit_test(test_exec_kill_after_escalates),
      cmocka_unit_test(test_exec_command_dies_with_rlock),
      cmocka_unit_test(test_exec_ctrl_c_reaches_command_once),
      cmocka_unit_test(test_exec_group_sigint_once_pty),
      cmocka_unit_test(test_exec_group_sigint_once_no_pty),
      cmocka_unit_test(test_exec_signals_whole_job),
      cmocka_unit_test(test_exec_holds_lock_until_job_ends),
      cmocka_unit_test(test_exec_signal_ends_leftovers),
      cmocka_unit_test(test_exec_sigquit_releases),
      cmocka_unit_test(test_exec_loss_found_late_or_checked),
      cmocka_unit_test(test_exec_release_bounded_on_hung_server),
      cmocka_unit_test(test_exec_wait_bounded_on_hung_server),
      cmocka_unit_test(test_exec_flock_options),
      cmocka_unit_test(test_messages),
      cmocka_unit_test(test_exec_ctrl_z_stops_whole_job),
      cmocka_unit_test(test_exec_permits),
      cmocka_unit_test(test_exec_permit_lost),
      cmocka_unit_test(test_latch),
      cmocka_unit_test(test_exec_says_once_what_is_wrong),
      cmocka_unit_test(test_thread_that_cannot_start),
      cmocka_unit_test(test_elect_and_leader),
      cmocka_unit_test(test_elect_standby_takes_over),
      cmocka_unit_test(test_leader_watch),
      cmocka_unit_test(test_leader_watch_handover),
  };
  return RT_RUN_GROUP("tests", tests, setup, teardown);
}
