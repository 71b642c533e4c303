/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * turns.c - processes taking turns on one lock name: the harness behind
 * contended, fair, rw and handoff (see turns.h for the rounds and the
 * handoff).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "turns.h"

#define PING_CONNS 4
#define PING_BURSTS 12
#define PING_BURST_LEN 10
#define PING_PAUSE_US 5000
#define PINGS_PER_SIDE (PING_CONNS * PING_BURSTS * PING_BURST_LEN)

/* The role process `idx` plays throughout (no phases). */
static const turns_role *role_of(const turns_spec *sp, int idx) {
  return sp->roles[idx < sp->split ? 0 : 1];
}

int turns_phase_role(long phase) {
  long q = phase % 4; /* ABBA */
  return q == 1 || q == 2;
}

long turns_rounds(const turns_spec *sp) {
  return sp->a->ops * (sp->phases > 0 ? sp->phases : 1);
}

static int shm_map(turns_out *o, const turns_spec *sp) {
  size_t hdr = (sizeof(turns_hdr) + 63) / 64 * 64;
  size_t slots = (size_t)sp->procs * sizeof(turns_slot);
  size_t area = (size_t)sp->procs * (size_t)turns_rounds(sp) * sizeof(int64_t);
  size_t areas = 1 + (sp->queue != NULL) + (sp->phases > 0) + (sp->permits > 0);
  o->size = hdr + slots + area * areas;
  void *p = mmap(NULL, o->size, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return -1;
  o->hdr = p; /* the mapping is zero-filled */
  o->slots = (turns_slot *)((char *)p + hdr);
  char *next = (char *)p + hdr + slots;
  o->samples = (int64_t *)next;
  next += area;
  o->queued = sp->queue ? (int64_t *)next : NULL;
  next += sp->queue ? area : 0;
  o->phase_of = sp->phases > 0 ? (int64_t *)next : NULL;
  next += sp->phases > 0 ? area : 0;
  o->waits = sp->permits > 0 ? (int64_t *)next : NULL;
  return 0;
}

/* GET a counter; a missing key reads as 0. */
static int read_counter(redisContext *raw, const char *key, long long *v) {
  const char *get[2] = {"GET", key};
  redisReply *r = bench_raw_cmd(raw, 2, get, NULL);
  int ok = r != NULL;
  *v = ok && r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
  freeReplyObject(r); /* NULL is fine */
  return ok ? 0 : -1;
}

/* Raise *t to v unless it is already later. */
static void store_max(_Atomic int64_t *t, int64_t v) {
  int64_t cur = atomic_load(t);
  while (cur < v && !atomic_compare_exchange_weak(t, &cur, v))
    ;
}

/* ---- ping-pong (spec->alternate) ---------------------------------------- */

/* The futex word is shared between processes (no FUTEX_PRIVATE_FLAG). */
static void bump_turn(turns_hdr *h) {
  atomic_fetch_add(&h->turn, 1);
  syscall(SYS_futex, (int *)&h->turn, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Sleep until another process has acquired since acquisition number
 * `mine` (0: do not wait for that), or until `finished` phases have been
 * finished. The bound on each sleep only guards against a lost wake-up. */
static void wait_turn(turns_hdr *h, long mine, long finished) {
  for (;;) {
    int seen = atomic_load(&h->turn);
    if ((mine != 0 && atomic_load(&h->acquired) != mine) ||
        atomic_load(&h->finished) >= finished)
      return;
    struct timespec ts = {0, 100 * 1000 * 1000};
    syscall(SYS_futex, (int *)&h->turn, FUTEX_WAIT, seen, &ts, NULL, 0);
  }
}

/* This process has finished `n` more phases (or, without phases, its
 * rounds). */
static void finish_phases(turns_hdr *h, long n) {
  atomic_fetch_add(&h->finished, n);
  bump_turn(h);
}

/* ---- child -------------------------------------------------------------- */

/* What a process has for one role: the library's lock object (on the
 * process's client), or the role's own implementation's state. */
typedef struct part {
  const turns_role *role;
  const char *name; /* the lock's */
  rlock_lock *lock;
  void *impl;
} part;

typedef struct child {
  const turns_spec *sp;
  turns_out *o;
  int idx;
  rlock_client *client; /* when a role is the library's */
  part parts[2];        /* one role, or with phases both */
  int nparts;
  part *cur;  /* the role played now */
  long phase; /* the phase under way (0 without phases) */
  redisContext *raw;
} child;

/* This process's part of the sample areas. */
typedef struct series {
  int64_t *handoff;
  int64_t *queued;   /* NULL unless the spec has a queue */
  int64_t *phase_of; /* NULL unless the spec has phases */
  size_t n;
  int64_t wait_total, wait_max; /* time spent in rlock_lock_acquire */
  int64_t *waits;               /* NULL unless the spec has permits */
  size_t nwaits;
  long overlaps;
} series;

/* Read both pipelined replies (SET, then with a queue LLEN). */
static int set_replies(child *ch, int64_t *queued) {
  redisReply *r = bench_raw_reply(ch->raw, "SET");
  if (r == NULL)
    return -1;
  freeReplyObject(r);
  if (ch->sp->queue == NULL)
    return 0;
  if ((r = bench_raw_reply(ch->raw, "LLEN")) == NULL)
    return -1;
  *queued = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
  freeReplyObject(r);
  return 0;
}

/* The work done while holding. Exclusive: GET, +1 in C, SET, deliberately
 * not atomic, so only the lock keeps increments from being lost; with a
 * queue, LLEN of it is pipelined with the SET: *queued is the number of
 * waiters just before the release, at no extra round trip. Shared: the
 * GET alone. */
static int hold(child *ch, int64_t *queued) {
  long long v;
  if (read_counter(ch->raw, ch->sp->counter, &v) != 0)
    return -1;
  if (!ch->cur->role->exclusive)
    return 0;
  char buf[32];
  snprintf(buf, sizeof buf, "%lld", v + 1);
  const char *set[3] = {"SET", ch->sp->counter, buf};
  const char *llen[2] = {"LLEN", ch->sp->queue};
  if (bench_raw_append(ch->raw, 3, set) != 0 ||
      (ch->sp->queue && bench_raw_append(ch->raw, 2, llen) != 0))
    return -1;
  return set_replies(ch, queued);
}

/* A semaphore's hold begins (spec->permits): count this holder in; more
 * than `permits` at once is an overlap. */
static int sem_hold(child *ch, series *s) {
  const char *incr[2] = {"INCR", ch->sp->counter};
  redisReply *r = bench_raw_cmd(ch->raw, 2, incr, NULL);
  if (r == NULL)
    return -1;
  if (r->type == REDIS_REPLY_INTEGER && r->integer > ch->sp->permits)
    s->overlaps++;
  freeReplyObject(r);
  return 0;
}

/* And ends, just before the release: count this holder out. */
static int sem_unhold(child *ch) {
  const char *decr[2] = {"DECR", ch->sp->counter};
  redisReply *r = bench_raw_cmd(ch->raw, 2, decr, NULL);
  freeReplyObject(r); /* NULL is fine */
  return r != NULL ? 0 : -1;
}

/* It was released while we waited: a handoff. */
static void record_handoff(child *ch, series *s, int64_t got, int64_t last) {
  s->handoff[s->n] = got - last;
  if (s->queued != NULL)
    s->queued[s->n] = atomic_load(&ch->o->hdr->last_release_queued);
  if (s->phase_of != NULL)
    s->phase_of[s->n] = ch->phase;
  s->n++;
}

/* Just before releasing: when, and (queue first, so whoever sees this
 * release time sees it too) how many waited. */
static void stamp_release(child *ch, int64_t queued) {
  turns_hdr *h = ch->o->hdr;
  if (ch->sp->queue != NULL)
    atomic_store(&h->last_release_queued, queued);
  int64_t now = bench_now_ns();
  if (ch->cur->role->exclusive)
    atomic_store(&h->last_exclusive_release_ns, now);
  store_max(&h->last_release_ns, now);
}

/* Take the lock, waiting as long as it takes: the library's, or the
 * role's own implementation. 0, or an exit status (printed). */
static int take(child *ch) {
  part *p = ch->cur;
  if (p->role->impl != NULL)
    return p->role->impl->acquire(p->impl) == 0 ? 0 : BENCH_EXIT_FAIL;
  int rc = rlock_lock_acquire(p->lock);
  return rc == RLOCK_OK ? 0 : bench_fail_rc("rlock_lock_acquire", rc);
}

static int give_back(child *ch) {
  part *p = ch->cur;
  if (p->role->impl != NULL)
    return p->role->impl->release(p->impl) == 0 ? 0 : BENCH_EXIT_FAIL;
  int rc = rlock_lock_release(p->lock);
  return rc == RLOCK_OK ? 0 : bench_fail_rc("rlock_lock_release", rc);
}

/* Whether round `i` of the current phase records its handoff: not in the
 * warm-up of a role's first phase (phases 0 and 1, ABBA). */
static int recording(const child *ch, long i) {
  return ch->sp->phases == 0 || ch->phase >= 2 || i >= ch->sp->warmup;
}

/* This turn's pause while holding: hold_us, or a random time from it to
 * hold_max_us (each process its own sequence). */
static long hold_time(child *ch) {
  const turns_spec *sp = ch->sp;
  if (sp->hold_max_us <= sp->hold_us)
    return sp->hold_us;
  static unsigned seed;
  if (seed == 0)
    seed = (unsigned)getpid();
  return sp->hold_us +
         (long)(rand_r(&seed) % (unsigned)(sp->hold_max_us - sp->hold_us + 1));
}

/* Round `i` of the current phase; `final` for the phase's last. */
static int one_round(child *ch, series *s, long i, int final) {
  turns_hdr *h = ch->o->hdr;
  int64_t wait_from = bench_now_ns();
  int rc = take(ch);
  int64_t got = bench_now_ns();
  if (rc != 0)
    return rc;
  s->wait_total += got - wait_from;
  if (got - wait_from > s->wait_max)
    s->wait_max = got - wait_from;
  if (s->waits != NULL)
    s->waits[s->nwaits++] = got - wait_from;
  /* The release this process had to wait for (turns.h). */
  int64_t last =
      atomic_load(ch->cur->role->exclusive ? &h->last_release_ns
                                           : &h->last_exclusive_release_ns);
  if (last > wait_from && recording(ch, i))
    record_handoff(ch, s, got, last);
  long mine = 0;
  if (ch->sp->alternate) { /* let the previous holder try again */
    mine = atomic_fetch_add(&h->acquired, 1) + 1;
    bump_turn(h);
  }
  int64_t queued = 0;
  int sem = ch->sp->permits > 0;
  if ((sem ? sem_hold(ch, s) : hold(ch, &queued)) != 0) {
    give_back(ch); /* let the others finish */
    return BENCH_EXIT_FAIL;
  }
  bench_sleep_us(hold_time(ch));
  if (sem && sem_unhold(ch) != 0) {
    give_back(ch);
    return BENCH_EXIT_FAIL;
  }
  stamp_release(ch, queued);
  if ((rc = give_back(ch)) != 0)
    return rc;
  if (ch->sp->alternate && !final) /* the others finish this phase */
    wait_turn(h, mine, ch->sp->procs * (ch->phase + 1) - 1);
  bench_sleep_us(ch->sp->a->think_us);
  return 0;
}

/* Every phase's rounds (without phases, one), each phase played by all
 * processes in the same role, between barriers. A process that fails
 * counts its phases left as finished, so nobody waits for it. */
static int child_rounds(child *ch) {
  const turns_spec *sp = ch->sp;
  turns_hdr *h = ch->o->hdr;
  size_t base = (size_t)ch->idx * (size_t)turns_rounds(sp);
  series s = {.handoff = ch->o->samples + base,
              .queued = ch->o->queued ? ch->o->queued + base : NULL,
              .phase_of = ch->o->phase_of ? ch->o->phase_of + base : NULL,
              .waits = ch->o->waits ? ch->o->waits + base : NULL};
  long phases = sp->phases > 0 ? sp->phases : 1;
  int rc = 0;
  for (long p = 0; p < phases && rc == 0; p++) {
    ch->phase = p;
    if (sp->phases > 0)
      ch->cur = &ch->parts[turns_phase_role(p)];
    for (long i = 0; i < sp->a->ops && rc == 0; i++)
      rc = one_round(ch, &s, i, i + 1 == sp->a->ops);
    if (sp->alternate || sp->phases > 0) /* nobody waits for us now */
      finish_phases(h, rc == 0 ? 1 : phases - p);
    if (rc == 0 && p + 1 < phases) /* the lock is free: all are done */
      wait_turn(h, 0, sp->procs * (p + 1));
  }
  turns_slot *slot = &ch->o->slots[ch->idx];
  slot->end_ns = bench_now_ns();
  slot->nsamples = s.n;
  slot->wait_total_ns = s.wait_total;
  slot->wait_max_ns = s.wait_max;
  slot->nwaits = s.nwaits;
  slot->overlaps = s.overlaps;
  return rc;
}

/* The library's lock object for part `p`, on the process's client (made
 * and connected on first use). */
static int open_library(child *ch, part *p) {
  int rc;
  if (ch->client == NULL) {
    if ((ch->client = bench_client_new_fair(ch->sp->a->url,
                                            ch->sp->a->deferred_shift)) == NULL)
      return BENCH_EXIT_FAIL;
    int64_t rtt;
    /* Opens the client's first pool connection now, so that connecting
     * is not part of the first round. */
    if ((rc = rlock_client_ping(ch->client, &rtt)) != RLOCK_OK)
      return bench_fail_rc("rlock_client_ping", rc);
  }
  if ((rc = p->role->make(&p->lock, ch->client, p->name)) != RLOCK_OK)
    return bench_fail_rc(p->role->make_name, rc);
  return 0;
}

static int open_part(child *ch, part *p) {
  if (p->role->impl == NULL)
    return open_library(ch, p);
  return p->role->impl->open(&p->impl, ch->sp, p->name) == 0 ? 0
                                                             : BENCH_EXIT_FAIL;
}

/* The roles this process plays: one, or with phases both. */
static void child_parts(child *ch) {
  const turns_spec *sp = ch->sp;
  ch->nparts = sp->phases > 0 ? 2 : 1;
  ch->parts[0] =
      (part){.role = sp->phases > 0 ? sp->roles[0] : role_of(sp, ch->idx),
             .name = sp->lock};
  ch->parts[1] = (part){.role = sp->roles[1], .name = sp->lock2};
  ch->cur = &ch->parts[0];
}

static void close_parts(child *ch) {
  for (int i = 0; i < ch->nparts; i++) {
    part *p = &ch->parts[i];
    if (p->role != NULL && p->role->impl != NULL)
      p->role->impl->close(p->impl);
    rlock_lock_free(p->lock);
  }
  rlock_client_free(ch->client);
}

/* Connect everything, say ready, wait for the start, run. */
static int child_run(child *ch, int ready_fd, int go_fd) {
  for (int i = 0; i < ch->nparts; i++) {
    int rc = open_part(ch, &ch->parts[i]);
    if (rc != 0)
      return rc;
  }
  char c = 'r', buf;
  if (write(ready_fd, &c, 1) != 1)
    return bench_fail("child: cannot report ready");
  close(ready_fd); /* so the parent sees EOF if a sibling dies early */
  ssize_t got;
  while ((got = read(go_fd, &buf, 1)) > 0 || (got < 0 && errno == EINTR))
    ; /* EOF means go */
  if (atomic_load(&ch->o->hdr->abort))
    return BENCH_EXIT_FAIL;
  return child_rounds(ch);
}

_Noreturn static void child_main(const turns_spec *sp, turns_out *o, int idx,
                                 int ready_fd, int go_fd) {
  child ch = {.sp = sp, .o = o, .idx = idx};
  child_parts(&ch);
  int rc = BENCH_EXIT_FAIL;
  ch.raw = bench_raw_connect(sp->a->url);
  if (ch.raw != NULL)
    rc = child_run(&ch, ready_fd, go_fd);
  close_parts(&ch);
  if (ch.raw != NULL)
    redisFree(ch.raw);
  fflush(stderr);
  _exit(rc); /* not exit(): the parent's stdio buffers are not ours */
}

/* ---- parent ------------------------------------------------------------- */

typedef struct run_state {
  pid_t *pids;
  int started;
  int ready[2];
  int go[2];
} run_state;

static int spawn(const turns_spec *sp, turns_out *o, run_state *st) {
  fflush(stdout);
  fflush(stderr);
  for (int i = 0; i < sp->procs; i++) {
    pid_t pid = fork();
    if (pid < 0)
      return bench_fail("fork failed");
    if (pid == 0) {
      close(st->ready[0]);
      close(st->go[1]);
      child_main(sp, o, i, st->ready[1], st->go[0]);
    }
    st->pids[st->started++] = pid;
  }
  return 0;
}

/* Wait until every child is ready (1) or one gave up (0). */
static int all_ready(int procs, run_state *st) {
  int n = 0;
  char c;
  close(st->ready[1]);
  st->ready[1] = -1;
  while (n < procs && read(st->ready[0], &c, 1) == 1)
    n++;
  return n == procs;
}

/* Reap every child we started (by pid); 0 when all exited with 0. */
static int reap(run_state *st) {
  int bad = 0;
  for (int i = 0; i < st->started; i++) {
    int status = 0;
    pid_t got;
    while ((got = waitpid(st->pids[i], &status, 0)) < 0 && errno == EINTR)
      ;
    bad |= got < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  return bad ? bench_fail("a benchmark process failed") : 0;
}

/* Fork, start together, wait. o->t0 is when the start was given. */
static int run_children(const turns_spec *sp, turns_out *o) {
  run_state st = {.pids = calloc((size_t)sp->procs, sizeof(pid_t))};
  if (st.pids == NULL || pipe(st.ready) != 0) {
    free(st.pids);
    return bench_fail("out of memory or file descriptors");
  }
  if (pipe(st.go) != 0) {
    close(st.ready[0]);
    close(st.ready[1]);
    free(st.pids);
    return bench_fail("out of file descriptors");
  }
  int rc = spawn(sp, o, &st);
  if (rc == 0 && !all_ready(sp->procs, &st))
    rc = bench_fail("a benchmark process could not start");
  if (rc != 0)
    atomic_store(&o->hdr->abort, 1);
  o->t0 = bench_now_ns();
  close(st.go[1]); /* go (or, with abort set, give up) */
  close(st.go[0]);
  close(st.ready[0]);
  if (st.ready[1] >= 0)
    close(st.ready[1]);
  int reaped = reap(&st);
  free(st.pids);
  return rc != 0 ? rc : reaped;
}

/* DEL the spec's keys; with `counter` also read the counter first. */
static int cleanup_keys(redisContext *raw, const turns_spec *sp,
                        long long *counter) {
  if (counter != NULL && read_counter(raw, sp->counter, counter) != 0)
    return -1;
  const char *del[1 + TURNS_MAX_KEYS] = {"DEL"};
  int argc = 1;
  for (int i = 0; i < TURNS_MAX_KEYS && sp->keys[i] != NULL; i++)
    del[argc++] = sp->keys[i];
  redisReply *r = bench_raw_cmd(raw, argc, del, NULL);
  int ok = r != NULL;
  freeReplyObject(r);
  return ok ? 0 : -1;
}

/* PINGs over PING_CONNS fresh bare connections, in short bursts spread
 * over about a quarter of a second, so that neither a transient stall nor
 * one connection's latency mode (see bench_uncontended.c) sets the
 * reference RTT: the children's connections are a random mix of modes. A
 * burst's first PING follows a pause (a "cold" wake-up); the median is
 * set by the others, back-to-back as in the uncontended workload. */
static int ping_conns(const char *url, bench_samples *pings) {
  for (int i = 0; i < PING_CONNS; i++) {
    redisContext *raw = bench_raw_connect(url);
    int rc = raw != NULL ? 0 : -1;
    for (int b = 0; b < PING_BURSTS && rc == 0; b++) {
      rc = bench_raw_ping(raw, pings, PING_BURST_LEN);
      bench_sleep_us(PING_PAUSE_US);
    }
    if (raw != NULL)
      redisFree(raw);
    if (rc != 0)
      return -1;
  }
  return 0;
}

/* Before and after the run: DEL the keys (after: read the counter first)
 * and time PINGs, so the RTT comes from the same server in the same run,
 * pooled from both ends of it. Every connection is closed before fork, so
 * no child inherits one. */
static int bracket(const turns_spec *sp, bench_samples *pings,
                   long long *counter) {
  redisContext *raw = bench_raw_connect(sp->a->url);
  if (raw == NULL)
    return -1;
  int rc = cleanup_keys(raw, sp, counter);
  redisFree(raw);
  return rc == 0 ? ping_conns(sp->a->url, pings) : -1;
}

static void turns_free(turns_out *o) {
  if (o->hdr != NULL)
    munmap(o->hdr, o->size);
  bench_samples_free(&o->pings);
}

int turns_run(const turns_spec *sp, turns_report_fn report) {
  turns_out o;
  memset(&o, 0, sizeof o);
  int ok = bench_samples_init(&o.pings, 2 * PINGS_PER_SIDE) == 0 &&
           shm_map(&o, sp) == 0;
  if (!ok)
    bench_fail("out of memory");
  ok = ok && bracket(sp, &o.pings, NULL) == 0 && run_children(sp, &o) == 0 &&
       bracket(sp, &o.pings, &o.counter) == 0 && report(sp, &o) == 0;
  turns_free(&o);
  return ok ? 0 : BENCH_EXIT_FAIL;
}

/* ---- results ------------------------------------------------------------ */

double turns_seconds(const turns_out *o, int from, int to) {
  int64_t end = 0;
  for (int i = from; i < to; i++)
    if (o->slots[i].end_ns > end)
      end = o->slots[i].end_ns;
  return (double)(end - o->t0) / 1e9;
}

double turns_rate(const turns_spec *sp, const turns_out *o, int from, int to) {
  double rounds = (double)(to - from) * (double)turns_rounds(sp);
  return rounds / turns_seconds(o, from, to);
}

long long turns_lost_updates(const turns_spec *sp, const turns_out *o) {
  long long exclusive = 0;
  for (int i = 0; i < sp->procs; i++)
    if (sp->phases == 0)
      exclusive += role_of(sp, i)->exclusive ? sp->a->ops : 0;
    else
      for (long p = 0; p < sp->phases; p++)
        exclusive += sp->roles[turns_phase_role(p)]->exclusive ? sp->a->ops : 0;
  return exclusive - o->counter;
}

double turns_ping_us(turns_out *o) {
  return bench_percentile_us(o->pings.v, o->pings.n, 50);
}

int64_t *turns_gather(const turns_spec *sp, const turns_out *o,
                      const int64_t *area, int from, int to, size_t *n) {
  size_t total = 0;
  for (int i = from; i < to; i++)
    total += o->slots[i].nsamples;
  int64_t *out = malloc((total > 0 ? total : 1) * sizeof *out);
  *n = 0;
  for (int i = from; i < to && out != NULL; i++) {
    const int64_t *s = area + (size_t)i * (size_t)turns_rounds(sp);
    for (size_t j = 0; j < o->slots[i].nsamples; j++)
      out[(*n)++] = s[j];
  }
  return out;
}

int64_t *turns_gather_waits(const turns_spec *sp, const turns_out *o, int from,
                            int to, size_t *n) {
  size_t total = 0;
  for (int i = from; i < to; i++)
    total += o->slots[i].nwaits;
  int64_t *out = malloc((total > 0 ? total : 1) * sizeof *out);
  *n = 0;
  for (int i = from; i < to && out != NULL && o->waits != NULL; i++) {
    const int64_t *w = o->waits + (size_t)i * (size_t)turns_rounds(sp);
    for (size_t j = 0; j < o->slots[i].nwaits; j++)
      out[(*n)++] = w[j];
  }
  return out;
}

int turns_report_handoffs(bench_report *r, const turns_spec *sp,
                          const turns_out *o, int from, int to,
                          const char *prefix, double *p50) {
  size_t n = 0;
  int64_t *h = turns_gather(sp, o, o->samples, from, to, &n);
  int ok = h != NULL;
  /* Out of memory: n/a figures, so that the listing stays well-formed. */
  *p50 = h != NULL ? bench_percentile_us(h, n, 50) : NAN;
  char key[64];
  snprintf(key, sizeof key, "%shandoffs", prefix);
  bench_report_int(r, key, (long long)n);
  snprintf(key, sizeof key, "%shandoff_p50_us", prefix);
  bench_report_num(r, key, *p50, 1);
  snprintf(key, sizeof key, "%shandoff_p99_us", prefix);
  bench_report_num(r, key, h ? bench_percentile_us(h, n, 99) : NAN, 1);
  free(h);
  return ok ? 0 : (bench_fail("out of memory"), -1);
}

void turns_report_waits(bench_report *r, const turns_spec *sp,
                        const turns_out *o, int from, int to,
                        const char *prefix) {
  int64_t total = 0, max = 0;
  for (int i = from; i < to; i++) {
    total += o->slots[i].wait_total_ns;
    if (o->slots[i].wait_max_ns > max)
      max = o->slots[i].wait_max_ns;
  }
  double rounds = (double)(to - from) * (double)turns_rounds(sp);
  char key[64];
  snprintf(key, sizeof key, "%swait_mean_us", prefix);
  bench_report_num(r, key, (double)total / rounds / 1e3, 1);
  snprintf(key, sizeof key, "%swait_max_ms", prefix);
  bench_report_num(r, key, (double)max / 1e6, 1);
}
