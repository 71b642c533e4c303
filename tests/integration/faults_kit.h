/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * faults_kit.h - the workload and the judge of the fault runs
 * (test_faults*.c), shared by every file that injects faults.
 *
 * FK_WORKERS worker processes (the test binary run again with "--child
 * worker ...") take turns on FK_LOCKS fenced locks. Each round: acquire
 * (FK_WAIT_MS wait), bump a counter inside the lock (GET then SET: a lost
 * update shows two holders at once), write the fencing token to a fenced
 * resource (refused below the highest token seen), check the lock is
 * still held, release. Each step is a record in a history file
 * (rt_history.h) that fk_finish() judges.
 *
 * A worker is a blocking client (FK_BLOCKING) or a loop client on its own
 * libuv loop (FK_LOOP: the round's acquisition and release are async
 * calls, the loop runs while it waits and while it works inside the lock,
 * so renewals run on the loop as in an event-driven server), or the same
 * on a libevent base (FK_EVENT: FK_ALL_DRIVERS' third case).
 *
 * The locks live at fk.lock_url (default: the fixture's server srv); the
 * counters and the fenced resource live on srv, a server no fault
 * touches, like an application's database, or, with fk.file_fence, in a
 * file (for runs where Redis itself forgets, tokens too). A test that
 * runs workers elsewhere (another network namespace) sets fk.url_of,
 * fk.prefix_of and fk.counter_host.
 *
 * With fk.sem = N, the workers share one permit-expirable semaphore of N
 * permits instead (rlock/semaphore.h, watchdog permits): a round takes a
 * permit, works 2 ms, checks it and releases it, and the checker allows
 * N holders at once (rt_history_check_n); no counter, no fencing.
 *
 * Use: fd = fk_begin("name", FK_LOOP); inject faults while
 * fk_running(t0); v = fk_finish(fd, "name", counter_checked); and in
 * FX_MAIN's child function call fk_child_main() first.
 */
#ifndef RLOCK_TEST_FAULTS_KIT_H
#define RLOCK_TEST_FAULTS_KIT_H

#include "fixture.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <event2/event.h>
#include <uv.h>

#include "rlock/event.h"
#include "rlock/uv.h"
#include "rt_history.h"
#include "rt_netns.h"
#include "rt_sentinel.h"

#define FK_WORKERS 4
#define FK_LOCKS 2
#define FK_WATCHDOG_MS 1000
#define FK_WAIT_MS 2000

typedef enum fk_mode { FK_BLOCKING, FK_LOOP, FK_EVENT } fk_mode;

/* An FK_EVENT worker's base (NULL in any other process): fk_run_until and
 * fk_loop_sleep run it in place of the libuv loop they are given, so the
 * loop rounds are the same on both loops. */
static struct event_base *fk_evb;

static struct fk_state {
  char hist_path[512];
  pid_t pids[FK_WORKERS];
  fk_mode mode;
  int file_fence;           /* the fenced resource in a file, not on srv */
  int sem;                  /* > 0: a semaphore of this many permits */
  char fence_path[512];     /* its path (fk.file_fence) */
  const char *lock_url;     /* where the locks live (NULL: srv) */
  const char *counter_host; /* srv as the workers reach it (NULL: 127.0.0.1) */
  /* Optional, per worker: its lock URL, and a command prefix it runs
   * under (e.g. {"ip", "netns", "exec", "ns1", NULL}). */
  const char *(*url_of)(int id);
  const char *const *(*prefix_of)(int id);
} fk;

/* The fenced resource: accept a write only with a token at least the
 * highest accepted so far. */
static const char FK_FENCED_WRITE[] =
    "local m = tonumber(redis.call('GET', KEYS[1]) or '0') "
    "if tonumber(ARGV[1]) < m then return 0 end "
    "redis.call('SET', KEYS[1], ARGV[1]) return redis.call('INCR', KEYS[2])";

static inline int64_t fk_ms_since(int64_t t0_us) {
  return (rt_now_us() - t0_us) / 1000;
}

/* The file resource: one line per lock, the highest token accepted;
 * flock(2) makes check-and-write atomic across the workers. The order of
 * acceptance (>= 1), 0 refused, -1 on an I/O error. */
static inline int fk_file_write(int li, int64_t token) {
  char path[600];
  snprintf(path, sizeof path, "%s.%d", fk.fence_path, li);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 || flock(fd, LOCK_EX) != 0)
    return fd < 0 ? -1 : (close(fd), -1);
  char buf[64] = "";
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  long long max = 0, seq = 0;
  if (n > 0 && sscanf(buf, "%lld %lld", &max, &seq) < 1)
    max = 0;
  int ok = token >= max;
  if (ok) {
    int len =
        snprintf(buf, sizeof buf, "%lld %lld\n", (long long)token, seq + 1);
    ok = ftruncate(fd, 0) == 0 && pwrite(fd, buf, (size_t)len, 0) == len
             ? (int)(seq + 1)
             : -1;
  }
  close(fd); /* drops the flock */
  return ok;
}

/* ---- one round, the part inside the lock (both modes) ------------------ */

/* Bump the counter and write the token to the fenced resource, recording
 * each step. */
static inline void fk_work(int fd, int id, int li, int64_t token,
                           redisContext *rc) {
  rt_history_add(fd, id, li, RT_EV_BUMP_BEGIN, 0, 0, 0);
  redisReply *r = redisCommand(rc, "GET fault:counter:%d", li);
  long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
  int ok = r != NULL;
  freeReplyObject(r);
  r = ok ? redisCommand(rc, "SET fault:counter:%d %lld", li, v + 1) : NULL;
  if (r != NULL && r->type == REDIS_REPLY_STATUS) /* not refused (OOM) */
    rt_history_add(fd, id, li, RT_EV_BUMP_DONE, v + 1, 0, 0);
  freeReplyObject(r);
  int accepted = -1;
  if (fk.file_fence) {
    accepted = fk_file_write(li, token);
  } else {
    r = redisCommand(rc, "EVAL %s 2 fault:res:{%d} fault:seq:{%d} %lld",
                     FK_FENCED_WRITE, li, li, (long long)token);
    if (r != NULL && r->type == REDIS_REPLY_INTEGER)
      accepted = r->integer > 0 ? (int)r->integer : 0;
    freeReplyObject(r);
  }
  /* b: the resource's own order of acceptance (a worker stopped between
   * the write and this record records it late). */
  if (accepted >= 0)
    rt_history_add(fd, id, li,
                   accepted ? RT_EV_WRITE_ACCEPTED : RT_EV_WRITE_REFUSED, token,
                   accepted, 0);
}

/* Record an acquisition's outcome; true when it holds the lock. */
static inline bool fk_acquired(int fd, int id, int li, int rc, int64_t token,
                               int64_t t0) {
  rt_history_add(fd, id, li, RT_EV_ACQUIRE_CALL, FK_WAIT_MS, fk_ms_since(t0),
                 0);
  if (rc != RLOCK_OK) {
    rt_history_add(fd, id, li, RT_EV_ACQUIRE_FAILED, rc, FK_WAIT_MS,
                   fk_ms_since(t0));
    return false;
  }
  rt_history_add(fd, id, li, RT_EV_ACQUIRED, token, 0, 0);
  return true;
}

/* ---- the blocking worker ------------------------------------------------ */

static inline void fk_round_blocking(int fd, int id, int li, rlock_lock *l,
                                     redisContext *rc) {
  int64_t token = 0, t0 = rt_now_us();
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = FK_WAIT_MS;
  o.token = &token;
  int got = rlock_lock_acquire_opts(l, &o); /* fills token: call first */
  if (!fk_acquired(fd, id, li, got, token, t0))
    return;
  fk_work(fd, id, li, token, rc);
  usleep(2000); /* the work inside the lock */
  if (rlock_lock_check(l) == RLOCK_ELOST)
    rt_history_add(fd, id, li, RT_EV_LOST, 0, 0, 0);
  rt_history_add(fd, id, li, RT_EV_RELEASING, 0, 0, 0);
  if (rlock_lock_release(l) == RLOCK_ELOST) /* lost before the release */
    rt_history_add(fd, id, li, RT_EV_LOST, 0, 0, 0);
}

/* ---- the loop worker ---------------------------------------------------- */

typedef struct fk_call {
  int done, rc;
  int64_t value;
} fk_call;

static inline void fk_on_done(void *arg, int rc, int64_t value) {
  fk_call *c = arg;
  c->rc = rc;
  c->value = value;
  c->done = 1;
}

static inline void fk_on_timer(uv_timer_t *t) { *(int *)t->data = 1; }

static inline void fk_on_evtimer(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  *(int *)arg = 1;
}

/* Run `loop` (fk_evb if set) until `*flag` is set (the call's callback or
 * a timer). */
static inline void fk_run_until(uv_loop_t *loop, const int *flag) {
  while (!*flag)
    if (fk_evb != NULL)
      event_base_loop(fk_evb, EVLOOP_ONCE);
    else
      uv_run(loop, UV_RUN_ONCE);
}

/* The work's time inside the lock, with the loop running (renewals). The
 * loop's clock is read first: it is that of the last iteration, before the
 * work's own round trips, and a timer already due by it fires at the start
 * of the next UV_RUN_ONCE, which then still sleeps in its poll until some
 * other event (the next renewal, a third of a lease away). */
static inline void fk_loop_sleep(uv_loop_t *loop, uv_timer_t *t, int ms) {
  int fired = 0;
  if (fk_evb != NULL) {
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    struct event *ev = evtimer_new(fk_evb, fk_on_evtimer, &fired);
    if (ev == NULL || evtimer_add(ev, &tv) != 0)
      _exit(3);
    fk_run_until(loop, &fired);
    event_free(ev);
    return;
  }
  t->data = &fired;
  uv_update_time(loop);
  uv_timer_start(t, fk_on_timer, (uint64_t)ms, 0);
  fk_run_until(loop, &fired);
}

static inline void fk_round_loop(int fd, int id, int li, rlock_lock *l,
                                 redisContext *rc, uv_loop_t *loop,
                                 uv_timer_t *t) {
  static uint64_t owner;
  if (owner == 0)
    owner = rlock_owner_new();
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = FK_WAIT_MS;
  o.owner = owner;
  fk_call acq = {0};
  int64_t t0 = rt_now_us();
  int rc0 = rlock_lock_acquire_async(l, &o, fk_on_done, &acq, NULL);
  if (rc0 == RLOCK_OK)
    fk_run_until(loop, &acq.done);
  else
    acq.rc = rc0;
  if (!fk_acquired(fd, id, li, acq.rc, acq.value, t0))
    return;
  fk_work(fd, id, li, acq.value, rc);
  fk_loop_sleep(loop, t, 2);
  if (rlock_lock_check_owner(l, owner) == RLOCK_ELOST)
    rt_history_add(fd, id, li, RT_EV_LOST, 0, 0, 0);
  rt_history_add(fd, id, li, RT_EV_RELEASING, 0, 0, 0);
  fk_call rel = {0};
  if (rlock_lock_release_async(l, owner, fk_on_done, &rel) != RLOCK_OK)
    return;
  fk_run_until(loop, &rel.done);
  if (rel.rc == RLOCK_ELOST)
    rt_history_add(fd, id, li, RT_EV_LOST, 0, 0, 0);
}

/* ---- the semaphore's rounds -------------------------------------------- */

#define FK_SEM_NAME "fault:S"

/* A permit's round, its outcomes recorded as a lock's (lock index 0). */
static inline void fk_sem_blocking(int fd, int id, rlock_psemaphore *s) {
  char pid[RLOCK_PERMIT_ID_LEN + 1];
  int64_t t0 = rt_now_us();
  int rc =
      rlock_psemaphore_acquire(pid, s, FK_WAIT_MS, RLOCK_LEASE_WATCHDOG, NULL);
  if (!fk_acquired(fd, id, 0, rc, 0, t0))
    return;
  usleep(2000); /* the work with the permit */
  if (rlock_psemaphore_check(s, pid) == RLOCK_ELOST)
    rt_history_add(fd, id, 0, RT_EV_LOST, 0, 0, 0);
  rt_history_add(fd, id, 0, RT_EV_RELEASING, 0, 0, 0);
  if (rlock_psemaphore_release(s, pid) == RLOCK_ELOST)
    rt_history_add(fd, id, 0, RT_EV_LOST, 0, 0, 0);
}

typedef struct fk_permit {
  int done, rc;
  char id[RLOCK_PERMIT_ID_LEN + 1];
} fk_permit;

static inline void fk_on_permit(void *arg, int rc, const char *id) {
  fk_permit *p = arg;
  p->rc = rc;
  if (id != NULL)
    snprintf(p->id, sizeof p->id, "%s", id);
  p->done = 1;
}

static inline void fk_sem_loop(int fd, int id, rlock_psemaphore *s,
                               uv_loop_t *loop, uv_timer_t *t) {
  fk_permit acq = {0};
  int64_t t0 = rt_now_us();
  int rc0 = rlock_psemaphore_acquire_async(s, FK_WAIT_MS, RLOCK_LEASE_WATCHDOG,
                                           fk_on_permit, &acq, NULL);
  if (rc0 == RLOCK_OK)
    fk_run_until(loop, &acq.done);
  else
    acq.rc = rc0;
  if (!fk_acquired(fd, id, 0, acq.rc, 0, t0))
    return;
  fk_loop_sleep(loop, t, 2);
  if (rlock_psemaphore_check(s, acq.id) == RLOCK_ELOST)
    rt_history_add(fd, id, 0, RT_EV_LOST, 0, 0, 0);
  rt_history_add(fd, id, 0, RT_EV_RELEASING, 0, 0, 0);
  fk_call rel = {0};
  if (rlock_psemaphore_release_async(s, acq.id, fk_on_done, &rel) != RLOCK_OK)
    return;
  fk_run_until(loop, &rel.done);
  if (rel.rc == RLOCK_ELOST)
    rt_history_add(fd, id, 0, RT_EV_LOST, 0, 0, 0);
}

/* The semaphore worker's rounds, for ever (fk_worker's, with fk.sem). */
static inline void fk_sem_worker(int fd, int id, rlock_client *c,
                                 uv_loop_t *loop, uv_timer_t *t) {
  rlock_psemaphore *s;
  if (rlock_psemaphore_new(&s, c, FK_SEM_NAME) != RLOCK_OK)
    _exit(3);
  /* Every worker asks: the first one sets it (a restart finds it set). */
  while (fk.mode == FK_BLOCKING &&
         rlock_psemaphore_try_set_permits(NULL, s, fk.sem) != RLOCK_OK)
    usleep(10000);
  fk_call set = {0};
  if (fk.mode != FK_BLOCKING && rlock_psemaphore_try_set_permits_async(
                                    s, fk.sem, fk_on_done, &set) == RLOCK_OK)
    fk_run_until(loop, &set.done);
  for (;;) {
    if (fk.mode != FK_BLOCKING)
      fk_sem_loop(fd, id, s, loop, t);
    else
      fk_sem_blocking(fd, id, s);
  }
}

/* ---- the worker process ------------------------------------------------- */

static inline rlock_config *fk_worker_config(const char *url) {
  rlock_config *cfg;
  if (rlock_config_new(&cfg) != RLOCK_OK ||
      rlock_config_set_url(cfg, url) != RLOCK_OK ||
      rlock_config_set_watchdog_timeout_ms(cfg, FK_WATCHDOG_MS) != RLOCK_OK ||
      rlock_config_set_command_timeout_ms(cfg, 1000) != RLOCK_OK ||
      rlock_config_set_connect_timeout_ms(cfg, 500) != RLOCK_OK)
    _exit(3);
  return cfg;
}

/* (Re)connect the counter connection when it is down. */
static inline redisContext *fk_counter_link(redisContext *rc, int port) {
  if (rc != NULL && !rc->err)
    return rc;
  if (rc != NULL)
    redisFree(rc);
  struct timeval tv = {1, 0};
  const char *host = fk.counter_host ? fk.counter_host : "127.0.0.1";
  rc = redisConnectWithTimeout(host, port, tv);
  if (rc != NULL && !rc->err)
    redisSetTimeout(rc, tv);
  return rc;
}

/* A worker process: takes `url` for its locks and the counter server's
 * `port`; never returns. Dies with the test process. */
static inline void fk_worker(int id, const char *url, int port) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  int fd = rt_history_open(fk.hist_path);
  rlock_config *cfg = fk_worker_config(url);
  rlock_client *c;
  uv_loop_t loop;
  uv_timer_t timer;
  if (fk.mode == FK_LOOP) {
    uv_loop_init(&loop);
    uv_timer_init(&loop, &timer);
  }
  if (fk.mode == FK_EVENT && (fk_evb = event_base_new()) == NULL)
    _exit(3);
  if ((fk.mode == FK_LOOP    ? rlock_client_new_uv(&c, cfg, &loop)
       : fk.mode == FK_EVENT ? rlock_client_new_event(&c, cfg, fk_evb)
                             : rlock_client_new(&c, cfg)) != RLOCK_OK)
    _exit(3);
  rlock_config_free(cfg);
  if (fk.sem > 0)
    fk_sem_worker(fd, id, c, &loop, &timer);
  rlock_lock *l[FK_LOCKS];
  for (int i = 0; i < FK_LOCKS; i++) {
    char name[32];
    snprintf(name, sizeof name, "fault:L%d", i);
    if (rlock_lock_new_fenced(&l[i], c, name) != RLOCK_OK)
      _exit(3);
  }
  redisContext *rc = NULL;
  for (unsigned seed = (unsigned)getpid();;) {
    rc = fk_counter_link(rc, port);
    int li = (int)(rand_r(&seed) % FK_LOCKS);
    if (fk.mode != FK_BLOCKING)
      fk_round_loop(fd, id, li, l[li], rc, &loop, &timer);
    else
      fk_round_blocking(fd, id, li, l[li], rc);
  }
}

/* The worker role: `worker ID MODE URL PORT HISTORY FILE_FENCE FENCE_PATH
 * COUNTER_HOST SEM`. Returns -1 when `argv` is not a worker role (the
 * caller handles its own roles); a worker never returns. */
static inline int fk_child_main(int argc, char **argv) {
  if (argc != 10 || strcmp(argv[0], "worker") != 0)
    return -1;
  fk.sem = atoi(argv[9]);
  fk.mode = (fk_mode)atoi(argv[2]);
  snprintf(fk.hist_path, sizeof fk.hist_path, "%s", argv[5]);
  fk.file_fence = atoi(argv[6]);
  snprintf(fk.fence_path, sizeof fk.fence_path, "%s", argv[7]);
  fk.counter_host = argv[8];
  fk_worker(atoi(argv[1]), argv[3], atoi(argv[4]));
  return 0;
}

/* ---- the harness's side ------------------------------------------------- */

/* Start `argv0 --child args...` (args NULL-terminated) as worker `id`,
 * under fk.prefix_of(id) when there is one (e.g. `ip netns exec NS`: the
 * worker in another network namespace); its pid, which the caller owns.
 * Every file's worker roles are started this way. */
static inline pid_t fk_spawn_args(int id, const char *const *args) {
  const char *const *prefix = fk.prefix_of ? fk.prefix_of(id) : NULL;
  if (prefix == NULL)
    return fx_spawn_child(args, NULL);
  const char *argv[32];
  int n = 0;
  for (int i = 0; prefix[i] != NULL && n < 20; i++)
    argv[n++] = prefix[i];
  argv[n++] = fx_argv0;
  argv[n++] = "--child";
  for (int i = 0; args[i] != NULL && n < 31; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  pid_t pid = fork();
  if (pid < 0)
    fail_msg("fork failed");
  if (pid == 0) {
    rt_forked_child();
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  return pid;
}

/* Start worker `id` (again), under its prefix if any. */
static inline void fk_spawn(int id) {
  char ids[16], mode[4], port[16], ff[4], sem[16];
  snprintf(sem, sizeof sem, "%d", fk.sem);
  snprintf(ids, sizeof ids, "%d", id);
  snprintf(mode, sizeof mode, "%d", (int)fk.mode);
  snprintf(port, sizeof port, "%d", rt_server_port(srv));
  snprintf(ff, sizeof ff, "%d", fk.file_fence);
  const char *url = fk.url_of     ? fk.url_of(id)
                    : fk.lock_url ? fk.lock_url
                                  : rt_server_url(srv);
  const char *args[] = {"worker",
                        ids,
                        mode,
                        url,
                        port,
                        fk.hist_path,
                        ff,
                        fk.fence_path[0] ? fk.fence_path : "-",
                        fk.counter_host ? fk.counter_host : "127.0.0.1",
                        sem,
                        NULL};
  fk.pids[id] = fk_spawn_args(id, args);
}

/* Kill worker `id` and record it once it is dead: recorded first, a
 * worker could still append an ACQUIRED between the record and the signal,
 * a hold the checker would then run on to that worker's next death. */
static inline void fk_kill_worker(int fd, int id) {
  kill(fk.pids[id], SIGKILL);
  waitpid(fk.pids[id], NULL, 0);
  rt_history_add(fd, id, -1, RT_EV_KILLED, 0, 0, 0);
}

/* How long each scenario runs: RLOCK_FAULT_SECONDS (default 3 s). */
static inline int64_t fk_run_ms(void) {
  const char *s = getenv("RLOCK_FAULT_SECONDS");
  double secs = s != NULL && atof(s) > 0 ? atof(s) : 3;
  return (int64_t)(secs * 1000);
}

/* While the scenario started at `t0` (rt_now_ms()) has time left. */
static inline bool fk_running(int64_t t0) {
  return rt_now_ms() - t0 < fk_run_ms();
}

/* A clean slate for a scenario in `mode` (srv flushed, a new history
 * file, no worker started yet); the harness's history fd. The scenario's
 * name gets the mode's suffix in the history's file. */
static inline int fk_history_begin(const char *scenario, fk_mode mode) {
  fk.mode = mode;
  snprintf(fk.hist_path, sizeof fk.hist_path, "%s/%s%s.history",
           rt_server_dir(srv), scenario,
           mode == FK_LOOP    ? "-loop"
           : mode == FK_EVENT ? "-libevent"
                              : "");
  unlink(fk.hist_path);
  freeReplyObject(rt_cmd(srv, "FLUSHALL"));
  return rt_history_open(fk.hist_path);
}

/* Start the workers in `mode` on a clean slate (fk_history_begin); the
 * harness's history fd. */
static inline int fk_begin(const char *scenario, fk_mode mode) {
  int fd = fk_history_begin(scenario, mode);
  for (int i = 0; i < FK_WORKERS; i++)
    fk_spawn(i);
  return fd;
}

/* The history past offset `from`: each worker's last event, and the
 * records of event `ev`, each worker's and in all. */
typedef struct fk_scan {
  int last[FK_WORKERS];
  long count[FK_WORKERS], total;
} fk_scan;

static inline fk_scan fk_scan_from(off_t from, int ev) {
  fk_scan s = {{0}, {0}, 0};
  FILE *f = fopen(fk.hist_path, "rb");
  rt_record rec;
  if (f != NULL && fseeko(f, from, SEEK_SET) == 0)
    while (fread(&rec, sizeof rec, 1, f) == 1) {
      s.total += rec.ev == ev;
      if (rec.worker >= 0 && rec.worker < FK_WORKERS) {
        s.last[rec.worker] = rec.ev;
        s.count[rec.worker] += rec.ev == ev;
      }
    }
  if (f != NULL)
    fclose(f);
  return s;
}

/* The worker whose last record in the history past offset `from` is
 * inside a hold (after ACQUIRED, before RELEASING), or -1. */
static inline int fk_in_hold_from(off_t from) {
  fk_scan s = fk_scan_from(from, -1);
  for (int i = 0; i < FK_WORKERS; i++)
    if (s.last[i] == RT_EV_ACQUIRED || s.last[i] == RT_EV_BUMP_BEGIN ||
        s.last[i] == RT_EV_BUMP_DONE || s.last[i] == RT_EV_WRITE_ACCEPTED)
      return i;
  return -1;
}

/* The same over the whole history. */
static inline int fk_in_hold(void) { return fk_in_hold_from(0); }

static inline off_t fk_history_size(void) {
  struct stat st;
  return stat(fk.hist_path, &st) == 0 ? st.st_size : 0;
}

typedef struct fk_record_wait {
  int worker;
  off_t from;
  int ev;
} fk_record_wait;

static inline bool fk_pred_record(void *arg, char *why, size_t cap) {
  fk_record_wait *w = arg;
  fk_scan s = fk_scan_from(w->from, w->ev);
  snprintf(why, cap, "no record %d from worker %d yet", w->ev, w->worker);
  return (w->worker < 0 ? s.total : s.count[w->worker]) > 0;
}

/* Wait until worker `id` (-1: any) appends a record `ev` past offset
 * `from` (fk_history_size() taken before). */
static inline void fk_wait_record_from(int id, off_t from, rt_ev ev) {
  fk_record_wait w = {id, from, ev};
  rt_wait_until(fk_pred_record, &w, rt_scaled_ms(10000), "the worker's record");
}

typedef struct fk_count_wait {
  off_t from;
  long want;
} fk_count_wait;

static inline bool fk_pred_acquired(void *arg, char *why, size_t cap) {
  fk_count_wait *w = arg;
  long n = fk_scan_from(w->from, RT_EV_ACQUIRED).total;
  snprintf(why, cap, "%ld of %ld acquisitions since the last fault", n,
           w->want);
  return n >= w->want;
}

/* Wait until the workers have made `n` acquisitions past offset `from`
 * (fk_history_size() taken after the last fault): a run whose faults
 * take most of its time (failovers) still shows the locks work again. */
static inline void fk_wait_acquisitions(off_t from, long n) {
  fk_count_wait w = {from, n};
  rt_wait_until(fk_pred_acquired, &w, rt_scaled_ms(30000),
                "acquisitions after the last fault");
}

/* Every worker has returned from two acquisition calls since offset
 * *from (fk_history_size() taken after the last fault): the round the
 * fault caught, whatever stage it was in, is over, with what its release
 * said recorded. */
static inline bool fk_pred_rounds_done(void *arg, char *why, size_t cap) {
  fk_scan s = fk_scan_from(*(off_t *)arg, RT_EV_ACQUIRE_CALL);
  for (int i = 0; i < FK_WORKERS; i++)
    if (s.count[i] < 2) {
      snprintf(why, cap, "worker %d: %ld calls since the last fault", i,
               s.count[i]);
      return false;
    }
  return true;
}

/* Wait until every worker has finished the round the last fault caught
 * (fk_pred_rounds_done), before fk_finish() kills them: a holder whose
 * permit or lock the fault took must have its chance to be told (its
 * release, a third of a lease at most later its renewal), which the
 * checker needs to tell a stale holder from an overlap. */
static inline void fk_wait_rounds_done(off_t from) {
  rt_wait_until(fk_pred_rounds_done, &from, rt_scaled_ms(10000),
                "every worker's round after the last fault");
}

/* Stop (SIGSTOP) a worker caught holding a lock; its id, or -1 when
 * none was caught in a few tries. */
static inline int fk_stop_a_holder(void) {
  for (int tries = 0; tries < 50; tries++) {
    int id = fk_in_hold();
    if (id < 0)
      continue;
    kill(fk.pids[id], SIGSTOP);
    if (fk_in_hold() == id) /* still inside its hold once stopped */
      return id;
    kill(fk.pids[id], SIGCONT);
  }
  return -1;
}

/* Wait (bounded) until some worker is inside a hold, so that a fault
 * hits a holder (and, as a rule, waiters too). Returns whether one was
 * seen. */
static inline bool fk_holder_seen(void) {
  int64_t end = rt_now_ms() + rt_scaled_ms(2000);
  while (fk_in_hold() < 0)
    if (rt_now_ms() >= end)
      return false;
    else
      rt_sleep_ms(5);
  return true;
}

/* ---- faults on the workers --------------------------------------------- */

/* Workers killed (kill -9) at random moments, every 150-400 ms (the
 * fault's rhythm, drawn from *seed), each respawned at once, until the
 * scenario started by fk_begin() has run fk_run_ms(). */
static inline void fk_kill9_faults(int fd, unsigned *seed) {
  for (int64_t t0 = rt_now_ms(); fk_running(t0);) {
    rt_sleep_ms(150 + rand_r(seed) % 250);
    int id = (int)(rand_r(seed) % FK_WORKERS);
    rt_history_add(fd, -1, -1, RT_EV_FAULT, SIGKILL, id, 0);
    fk_kill_worker(fd, id);
    fk_spawn(id);
  }
}

/* Holders stopped (SIGSTOP) for twice their lease, one every 100-300 ms,
 * until the scenario has run fk_run_ms(). Each is resumed and let see
 * what became of its hold (its RELEASING record) before the next fault
 * (or the end) can cut that short. Returns how many were stopped. */
static inline int fk_sigstop_faults(int fd, unsigned *seed) {
  int stale = 0;
  for (int64_t t0 = rt_now_ms(); fk_running(t0);) {
    rt_sleep_ms(100 + rand_r(seed) % 200);
    int id = fk_stop_a_holder();
    if (id < 0)
      continue;
    stale++;
    rt_history_add(fd, -1, -1, RT_EV_FAULT, SIGSTOP, id, 0);
    rt_sleep_ms(2 * FK_WATCHDOG_MS); /* past the lease: the fault itself */
    off_t seen = fk_history_size();
    kill(fk.pids[id], SIGCONT);
    fk_wait_record_from(id, seen, RT_EV_RELEASING);
  }
  return stale;
}

/* One scenario `fn(fk_mode)`, two cmocka cases: test_<fn> on blocking
 * workers, test_<fn>_loop on loop workers (the names the ctest shards
 * select). FK_CASES(fn) lists both in a CMUnitTest table. */
#define FK_BOTH_DRIVERS(fn)                                                    \
  static void test_##fn(void **state) {                                        \
    (void)state;                                                               \
    fn(FK_BLOCKING);                                                           \
  }                                                                            \
  static void test_##fn##_loop(void **state) {                                 \
    (void)state;                                                               \
    fn(FK_LOOP);                                                               \
  }
#define FK_CASES(fn)                                                           \
  cmocka_unit_test(test_##fn), cmocka_unit_test(test_##fn##_loop)

/* FK_BOTH_DRIVERS and a third case, test_<fn>_libevent, on libevent loop
 * workers (FK_EVENT); FK_ALL_CASES(fn) lists the three. */
#define FK_ALL_DRIVERS(fn)                                                     \
  FK_BOTH_DRIVERS(fn)                                                          \
  static void test_##fn##_libevent(void **state) {                             \
    (void)state;                                                               \
    fn(FK_EVENT);                                                              \
  }
#define FK_ALL_CASES(fn) FK_CASES(fn), cmocka_unit_test(test_##fn##_libevent)

/* ---- faults on the servers -------------------------------------------- */

/* The running server at `port` among the group's, or NULL. */
static inline rt_server *fk_sentinel_server_at(rt_sentinel_group *g, int port) {
  for (int i = 0; i < rt_sentinel_nservers(g); i++)
    if (rt_server_port(rt_sentinel_server(g, i)) == port)
      return rt_sentinel_server(g, i);
  return NULL;
}

/* One Sentinel crash, recorded as fault 'K' (b: the killed port): kill
 * the master (SIGKILL: no shutdown, no last replication), wait for the
 * sentinels to promote the replica, bring the dead one back as the new
 * master's replica and wait for its link, so that the next crash again
 * promotes a replica holding the master's data. */
static inline void fk_sentinel_crash(rt_sentinel_group *g, int fd) {
  rt_server *dead = rt_sentinel_master(g);
  rt_history_add(fd, -1, -1, RT_EV_FAULT, 'K', rt_server_port(dead), 0);
  rt_sentinel_kill_master(g);
  int port = rt_sentinel_wait_failover(g, rt_scaled_ms(30000));
  if (fk_sentinel_server_at(g, port) == NULL)
    fail_msg("the sentinels promoted port %d, not one of the group's", port);
  /* It comes back empty and would call itself a master until the
   * sentinels convert it (about 10 s): make it the replica at once. */
  rt_server_start_again(dead);
  redisReply *r = rt_cmd(dead, "REPLICAOF 127.0.0.1 %d", port);
  if (r->type != REDIS_REPLY_STATUS) /* "OK", or "OK Already connected" */
    fail_msg("REPLICAOF on port %d refused", rt_server_port(dead));
  freeReplyObject(r);
  rt_sentinel_wait_replicas(g, rt_scaled_ms(30000));
}

/* ---- partitions: the test in a private network namespace ---------------- */

/* Run the test binary's inner test `name` (its role `--child netns NAME`
 * runs it, in the namespace rt_netns_rerun() makes), failing when it
 * fails; or skip, saying why, where the machine cannot make namespaces. */
static inline void fk_inside(const char *name) {
  const char *why = rt_netns_unavailable();
  if (why != NULL) {
    print_message("%s: skipped\n", why);
    skip();
  }
  int st = rt_netns_rerun(fx_argv0, (const char *const[]){"netns", name, NULL});
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fail_msg("%s in its private namespace failed (status %#x)", name, st);
}

/* The outer case test_<name>: the inner case in_<name> run in the
 * private namespace (fk_inside). */
#define FK_OUTER(name)                                                         \
  static void test_##name(void **state) {                                      \
    (void)state;                                                               \
    fk_inside("in_" #name);                                                    \
  }

/* Inside that namespace, the servers of a partition run: srv (the
 * counters' and the fenced resource's) on the router's own address, which
 * no fault touches, and the one returned, whose packets the partitions
 * cut, in namespace `ns` of `net`. fk_netns_free() stops them all. */
static inline rt_server *fk_netns_servers(rt_netns *net, int ns) {
  srv = rt_server_start_opts(&(rt_server_opts){.host = rt_netns_router_addr()});
  return rt_server_start_opts(&(rt_server_opts){
      .host = rt_netns_addr(net, ns), .prefix = rt_netns_prefix(net, ns)});
}

static inline int fk_netns_free(rt_netns *net, rt_server *cut) {
  rt_server_free(cut);
  rt_server_free(srv);
  rt_netns_free(net);
  return 0;
}

/* Once every worker is gone: no lock key (their leases ran out), no
 * subscription, and no connection but the harness's own. */
static inline bool fk_pred_clean(void *arg, char *why, size_t cap) {
  (void)arg;
  long long keys = 0, subs = 0;
  for (int li = 0; li < FK_LOCKS; li++) {
    keys += rt_cmd_int(srv, "EXISTS fault:L%d", li);
    char ch[64];
    snprintf(ch, sizeof ch, "redisson_lock__channel:{fault:L%d}", li);
    subs += fx_subscribers(srv, ch);
  }
  char clients[32];
  rt_server_info_field(srv, "clients", "connected_clients", clients,
                       sizeof clients);
  snprintf(why, cap, "%lld lock keys, %lld subscriptions, %s clients left",
           keys, subs, clients);
  return keys == 0 && subs == 0 && atoi(clients) <= 1;
}

static inline void fk_nothing_left_behind(void) {
  rt_wait_until(fk_pred_clean, NULL, rt_scaled_ms(FK_WATCHDOG_MS + 5000),
                "nothing left behind by the workers");
}

/* The sum of the locks' counters on srv. */
static inline long fk_counter_sum(void) {
  long counter = 0;
  for (int li = 0; li < FK_LOCKS; li++) {
    redisReply *r = rt_cmd(srv, "GET fault:counter:%d", li);
    counter += r->type == REDIS_REPLY_STRING ? atol(r->str) : 0;
    freeReplyObject(r);
  }
  return counter;
}

/* Stop the first `n` workers (a stopped one continued first, so that it
 * can be killed), each kill recorded, and close the history. */
static inline void fk_stop_workers(int fd, int n) {
  for (int i = 0; i < n; i++) {
    kill(fk.pids[i], SIGCONT);
    fk_kill_worker(fd, i);
  }
  close(fd);
}

/* With $RLOCK_FAULT_KEEP set, a copy of the history in
 * /tmp/rlock-SCENARIO.history, for a look. */
static inline void fk_keep_history(const char *scenario) {
  char keep[700];
  snprintf(keep, sizeof keep, "cp %s /tmp/rlock-%s.history", fk.hist_path,
           scenario);
  if (getenv("RLOCK_FAULT_KEEP") != NULL && system(keep) != 0)
    print_message("could not keep the history\n");
}

/* Stop every worker, judge the history, fail on any violation (and on
 * fewer than 10 acquisitions: a run that did nothing proves nothing).
 * `counter_checked`: judge lost updates too (only where the counter's
 * own server and link are untouched by the fault). */
static inline rt_verdict fk_finish(int fd, const char *scenario,
                                   int counter_checked) {
  fk_stop_workers(fd, FK_WORKERS);
  long counter = counter_checked ? fk_counter_sum() : -1;
  rt_verdict v = rt_history_check_n(fk.hist_path, counter, rt_scaled_ms(3000),
                                    fk.sem > 0 ? fk.sem : 1);
  char name[128];
  snprintf(name, sizeof name, "%s%s", scenario,
           fk.mode == FK_LOOP    ? " (loop)"
           : fk.mode == FK_EVENT ? " (libevent)"
                                 : "");
  rt_history_print(name, &v);
  if (!rt_history_clean(&v)) {
    fk_keep_history(scenario);
    fail_msg("%s: %s", name, v.first);
  }
  if (v.acquisitions < 10)
    fail_msg("%s: only %ld acquisitions", name, v.acquisitions);
  if (fk.lock_url == NULL && fk.url_of == NULL)
    fk_nothing_left_behind();
  return v;
}

#endif /* RLOCK_TEST_FAULTS_KIT_H */
