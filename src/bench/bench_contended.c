/*
 * bench_contended.c - N processes taking turns on one lock; the contended
 * and fair workloads.
 *
 * Each process (forked before any client exists, so none inherits a
 * client's background thread) makes its own client and does K rounds of:
 * acquire (watchdog lease), a non-atomic GET + SET increment of a counter
 * on a bare connection, release, then T us of "think time" outside the
 * lock. A lost update (final counter below N*K) would mean two holders at
 * once.
 *
 * Handoff latency: a MAP_SHARED page (mapped before fork) holds the
 * CLOCK_MONOTONIC time each holder takes just before it releases. The
 * next holder, right after acquiring, records now - that time, but only
 * if it started waiting before that release: a process that found the
 * lock free did not wait, so there was no handoff to measure. Mutual
 * exclusion orders the writes (only the holder writes), and the atomics
 * make them visible across processes. CLOCK_MONOTONIC is system-wide, so
 * times from different processes compare.
 *
 * Start: children report ready on a pipe once connected, then block on a
 * second pipe until the parent closes it, so all start together and the
 * wall time excludes connection set-up.
 *
 * fair (bench_args.fair): the same rounds on a fair lock. A releasing
 * process cannot barge (it queues behind the waiters already there), so
 * nearly every acquisition is a handoff and, with no think time, about
 * N-1 waiters are queued at each one. The holder reads the queue's
 * length (LLEN of redisson_lock_queue:{name}) in the same write as its
 * counter SET, so it costs no extra round trip and is taken just before
 * the release timestamp; the next holder records it with its handoff
 * sample, so "queued" is the queue depth at exactly the handoffs
 * measured.
 */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define PING_CONNS 4
#define PING_BURSTS 12
#define PING_BURST_LEN 10
#define PING_PAUSE_US 5000
#define PINGS_PER_SIDE (PING_CONNS * PING_BURSTS * PING_BURST_LEN)

/* The shared page(s): a header, then per-process slots, then samples. */
typedef struct shm_hdr {
  _Atomic int64_t last_release_ns;     /* 0 until the first release */
  _Atomic int64_t last_release_queued; /* fair: LLEN before that release */
  atomic_int abort;                    /* parent: do not start */
} shm_hdr;

typedef struct slot {
  int64_t end_ns;  /* when this process finished its last round */
  size_t nsamples; /* handoffs recorded in its sample range */
} slot;

/* Sample areas are [procs * ops]: process i owns [i*ops, (i+1)*ops), and
 * the queue depth at sample j sits at the same index as the handoff. */
typedef struct shm {
  shm_hdr *hdr;
  slot *slots;      /* [procs] */
  int64_t *samples; /* handoff latencies, ns */
  int64_t *queued;  /* fair only (else NULL): waiters queued */
  size_t size;
} shm;

/* Names shared by the parent and every child. The queue and deadline
 * keys are the fair lock's (Redisson's layout, see rlock/lock.h); they
 * are only deleted, never used, by the contended workload. */
typedef struct names {
  char lock[64];
  char counter[64];
  char queue[128];
  char timeouts[128];
} names;

static void names_init(names *nm, int fair) {
  long pid = (long)getpid();
  bench_key(nm->lock, sizeof nm->lock,
            fair ? "rlock-bench:fair" : "rlock-bench:contended", pid);
  bench_key(nm->counter, sizeof nm->counter, "rlock-bench:counter", pid);
  snprintf(nm->queue, sizeof nm->queue, "redisson_lock_queue:{%s}", nm->lock);
  snprintf(nm->timeouts, sizeof nm->timeouts, "redisson_lock_timeout:{%s}",
           nm->lock);
}

static int shm_map(shm *m, const bench_args *a) {
  size_t hdr = (sizeof(shm_hdr) + 63) / 64 * 64;
  size_t slots = (size_t)a->procs * sizeof(slot);
  size_t area = (size_t)a->procs * (size_t)a->ops * sizeof(int64_t);
  m->size = hdr + slots + area * (a->fair ? 2 : 1);
  void *p = mmap(NULL, m->size, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return -1;
  m->hdr = p; /* the mapping is zero-filled */
  m->slots = (slot *)((char *)p + hdr);
  m->samples = (int64_t *)((char *)p + hdr + slots);
  m->queued = a->fair ? (int64_t *)((char *)p + hdr + slots + area) : NULL;
  return 0;
}

/* GET a counter; a missing key reads as 0. */
static int read_counter(redisContext *raw, const char *key, long long *v) {
  const char *get[2] = {"GET", key};
  redisReply *r = bench_raw_cmd(raw, 2, get, NULL);
  if (r == NULL)
    return -1;
  *v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
  freeReplyObject(r);
  return 0;
}

/* ---- child -------------------------------------------------------------- */

typedef struct child {
  const bench_args *a;
  const names *nm;
  shm *m;
  int idx;
  rlock_client *client;
  rlock_lock *lock;
  redisContext *raw;
} child;

/* This process's part of the sample areas. */
typedef struct series {
  int64_t *handoff;
  int64_t *queued; /* NULL unless fair */
  size_t n;
} series;

/* Read both pipelined replies (SET, then with the fair lock LLEN). */
static int set_replies(child *ch, int64_t *queued) {
  redisReply *r = bench_raw_reply(ch->raw, "SET");
  if (r == NULL)
    return -1;
  freeReplyObject(r);
  if (!ch->a->fair)
    return 0;
  if ((r = bench_raw_reply(ch->raw, "LLEN")) == NULL)
    return -1;
  *queued = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
  freeReplyObject(r);
  return 0;
}

/* GET, +1 in C, SET: deliberately not atomic, so only the lock keeps
 * increments from being lost. With the fair lock, LLEN of its queue is
 * pipelined with the SET: *queued is the number of waiters just before
 * the release, at no extra round trip. */
static int increment(child *ch, int64_t *queued) {
  long long v;
  if (read_counter(ch->raw, ch->nm->counter, &v) != 0)
    return -1;
  char buf[32];
  snprintf(buf, sizeof buf, "%lld", v + 1);
  const char *set[3] = {"SET", ch->nm->counter, buf};
  const char *llen[2] = {"LLEN", ch->nm->queue};
  if (bench_raw_append(ch->raw, 3, set) != 0 ||
      (ch->a->fair && bench_raw_append(ch->raw, 2, llen) != 0))
    return -1;
  return set_replies(ch, queued);
}

/* It was released while we waited: a handoff. */
static void record_handoff(child *ch, series *s, int64_t got, int64_t last) {
  s->handoff[s->n] = got - last;
  if (s->queued != NULL)
    s->queued[s->n] = atomic_load(&ch->m->hdr->last_release_queued);
  s->n++;
}

static int one_round(child *ch, series *s) {
  int64_t wait_from = bench_now_ns();
  int rc = rlock_lock_acquire(ch->lock);
  int64_t got = bench_now_ns();
  if (rc != RLOCK_OK)
    return bench_fail_rc("rlock_lock_acquire", rc);
  int64_t last = atomic_load(&ch->m->hdr->last_release_ns);
  if (last > wait_from)
    record_handoff(ch, s, got, last);
  int64_t queued = 0;
  if (increment(ch, &queued) != 0) {
    rlock_lock_release(ch->lock); /* let the others finish */
    return BENCH_EXIT_FAIL;
  }
  /* Queue depth first: whoever sees this release time sees it too. */
  atomic_store(&ch->m->hdr->last_release_queued, queued);
  atomic_store(&ch->m->hdr->last_release_ns, bench_now_ns());
  if ((rc = rlock_lock_release(ch->lock)) != RLOCK_OK)
    return bench_fail_rc("rlock_lock_release", rc);
  bench_sleep_us(ch->a->think_us);
  return 0;
}

static int child_rounds(child *ch) {
  size_t base = (size_t)ch->idx * (size_t)ch->a->ops;
  series s = {.handoff = ch->m->samples + base,
              .queued = ch->m->queued ? ch->m->queued + base : NULL};
  int rc = 0;
  for (long i = 0; i < ch->a->ops && rc == 0; i++)
    rc = one_round(ch, &s);
  ch->m->slots[ch->idx].end_ns = bench_now_ns();
  ch->m->slots[ch->idx].nsamples = s.n;
  return rc;
}

/* Connect everything, say ready, wait for the start, run. */
static int child_run(child *ch, int ready_fd, int go_fd) {
  int64_t rtt;
  /* Opens the client's first pool connection now, so that connecting is
   * not part of the first round. */
  int rc = rlock_client_ping(ch->client, &rtt);
  if (rc != RLOCK_OK)
    return bench_fail_rc("rlock_client_ping", rc);
  int (*make)(rlock_lock **, rlock_client *, const char *) =
      ch->a->fair ? rlock_lock_new_fair : rlock_lock_new;
  if ((rc = make(&ch->lock, ch->client, ch->nm->lock)) != RLOCK_OK)
    return bench_fail_rc(ch->a->fair ? "rlock_lock_new_fair" : "rlock_lock_new",
                         rc);
  char c = 'r', buf;
  if (write(ready_fd, &c, 1) != 1)
    return bench_fail("child: cannot report ready");
  close(ready_fd); /* so the parent sees EOF if a sibling dies early */
  ssize_t got;
  while ((got = read(go_fd, &buf, 1)) > 0 || (got < 0 && errno == EINTR))
    ; /* EOF means go */
  if (atomic_load(&ch->m->hdr->abort))
    return BENCH_EXIT_FAIL;
  return child_rounds(ch);
}

_Noreturn static void child_main(const bench_args *a, const names *nm, shm *m,
                                 int idx, int ready_fd, int go_fd) {
  child ch = {.a = a, .nm = nm, .m = m, .idx = idx};
  int rc = BENCH_EXIT_FAIL;
  ch.raw = bench_raw_connect(a->url);
  if (ch.raw != NULL && (ch.client = bench_client_new(a->url)) != NULL)
    rc = child_run(&ch, ready_fd, go_fd);
  rlock_lock_free(ch.lock);
  rlock_client_free(ch.client);
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

static int spawn(const bench_args *a, const names *nm, shm *m, run_state *st) {
  fflush(stdout);
  fflush(stderr);
  for (int i = 0; i < a->procs; i++) {
    pid_t pid = fork();
    if (pid < 0)
      return bench_fail("fork failed");
    if (pid == 0) {
      close(st->ready[0]);
      close(st->go[1]);
      child_main(a, nm, m, i, st->ready[1], st->go[0]);
    }
    st->pids[st->started++] = pid;
  }
  return 0;
}

/* Wait until every child is ready (1) or one gave up (0). */
static int all_ready(const bench_args *a, run_state *st) {
  int n = 0;
  char c;
  close(st->ready[1]);
  st->ready[1] = -1;
  while (n < a->procs && read(st->ready[0], &c, 1) == 1)
    n++;
  return n == a->procs;
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

/* Fork, start together, wait. *t0 is when the start was given. */
static int run_children(const bench_args *a, const names *nm, shm *m,
                        int64_t *t0) {
  run_state st = {.pids = calloc((size_t)a->procs, sizeof(pid_t))};
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
  int rc = spawn(a, nm, m, &st);
  if (rc == 0 && !all_ready(a, &st))
    rc = bench_fail("a benchmark process could not start");
  if (rc != 0)
    atomic_store(&m->hdr->abort, 1);
  *t0 = bench_now_ns();
  close(st.go[1]); /* go (or, with abort set, give up) */
  close(st.go[0]);
  close(st.ready[0]);
  if (st.ready[1] >= 0)
    close(st.ready[1]);
  int reaped = reap(&st);
  free(st.pids);
  return rc != 0 ? rc : reaped;
}

/* DEL the bench's keys; with `counter` also read the counter first. */
static int cleanup_keys(redisContext *raw, const names *nm,
                        long long *counter) {
  if (counter != NULL && read_counter(raw, nm->counter, counter) != 0)
    return -1;
  const char *del[5] = {"DEL", nm->lock, nm->counter, nm->queue, nm->timeouts};
  redisReply *r = bench_raw_cmd(raw, 5, del, NULL);
  freeReplyObject(r);
  return r != NULL ? 0 : -1;
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
static int bracket(const bench_args *a, const names *nm,
                   bench_samples *pings, long long *counter) {
  redisContext *raw = bench_raw_connect(a->url);
  if (raw == NULL)
    return -1;
  int rc = cleanup_keys(raw, nm, counter);
  redisFree(raw);
  return rc == 0 ? ping_conns(a->url, pings) : -1;
}

/* When the last process finished its last round. */
static int64_t last_end(const bench_args *a, const shm *m) {
  int64_t end = 0;
  for (int i = 0; i < a->procs; i++)
    if (m->slots[i].end_ns > end)
      end = m->slots[i].end_ns;
  return end;
}

/* Gather every child's part of sample area `area` into one array (NULL
 * when out of memory); *n is the number of samples. */
static int64_t *gather(const bench_args *a, const shm *m, const int64_t *area,
                       size_t *n) {
  size_t total = 0;
  for (int i = 0; i < a->procs; i++)
    total += m->slots[i].nsamples;
  int64_t *out = malloc((total > 0 ? total : 1) * sizeof *out);
  *n = 0;
  for (int i = 0; i < a->procs && out != NULL; i++) {
    const int64_t *s = area + (size_t)i * (size_t)a->ops;
    for (size_t j = 0; j < m->slots[i].nsamples; j++)
      out[(*n)++] = s[j];
  }
  return out;
}

/* fair: the median queue depth over the handoffs measured. */
static void report_queued(bench_report *r, const bench_args *a, const shm *m) {
  size_t n;
  int64_t *q = gather(a, m, m->queued, &n);
  bench_report_num(r, "queued", q ? bench_percentile(q, n, 50) : NAN, 1);
  free(q);
}

static int report(const bench_args *a, const shm *m, bench_samples *pings,
                  int64_t t0, long long counter) {
  size_t n;
  int64_t *h = gather(a, m, m->samples, &n);
  if (h == NULL)
    return bench_fail("out of memory");
  double total = (double)a->procs * (double)a->ops;
  double ping = bench_percentile_us(pings->v, pings->n, 50);
  double p50 = bench_percentile_us(h, n, 50);
  bench_report r;
  bench_report_begin(&r, a->json, a->workload);
  bench_report_int(&r, "procs", a->procs);
  bench_report_int(&r, "ops", a->ops);
  bench_report_int(&r, "think_us", a->think_us);
  bench_report_num(&r, "acquisitions_per_s",
                   total / ((last_end(a, m) - t0) / 1e9), 0);
  bench_report_int(&r, "handoffs", (long long)n);
  bench_report_num(&r, "handoff_p50_us", p50, 1);
  bench_report_num(&r, "handoff_p99_us", bench_percentile_us(h, n, 99), 1);
  bench_report_num(&r, "ping_rtt_us", ping, 1);
  bench_report_num(&r, "handoff_rtts", p50 / ping, 2);
  bench_report_int(&r, "lost_updates", (long long)total - counter);
  if (a->fair)
    report_queued(&r, a, m);
  bench_report_end(&r);
  free(h);
  return 0;
}

int bench_contended(const bench_args *a) {
  names nm;
  names_init(&nm, a->fair);
  bench_samples pings;
  shm m;
  if (bench_samples_init(&pings, 2 * PINGS_PER_SIDE) != 0 ||
      shm_map(&m, a) != 0) {
    bench_samples_free(&pings);
    return bench_fail("out of memory");
  }
  int64_t t0 = 0;
  long long counter = 0;
  int ok = bracket(a, &nm, &pings, NULL) == 0 &&
           run_children(a, &nm, &m, &t0) == 0 &&
           bracket(a, &nm, &pings, &counter) == 0;
  if (ok)
    ok = report(a, &m, &pings, t0, counter) == 0;
  munmap(m.hdr, m.size);
  bench_samples_free(&pings);
  return ok ? 0 : BENCH_EXIT_FAIL;
}
