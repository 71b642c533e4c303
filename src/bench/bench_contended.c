/*
 * bench_contended.c - N processes taking turns on one lock.
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
 */
#include <errno.h>
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
  _Atomic int64_t last_release_ns; /* 0 until the first release */
  atomic_int abort;                /* parent: do not start */
} shm_hdr;

typedef struct slot {
  int64_t end_ns;  /* when this process finished its last round */
  size_t nsamples; /* handoffs recorded in its sample range */
} slot;

typedef struct shm {
  shm_hdr *hdr;
  slot *slots;      /* [procs] */
  int64_t *samples; /* [procs * ops]: process i owns [i*ops, (i+1)*ops) */
  size_t size;
} shm;

/* Names shared by the parent and every child. */
typedef struct names {
  char lock[64];
  char counter[64];
} names;

static int shm_map(shm *m, int procs, long ops) {
  size_t hdr = (sizeof(shm_hdr) + 63) / 64 * 64;
  size_t slots = (size_t)procs * sizeof(slot);
  m->size = hdr + slots + (size_t)procs * (size_t)ops * sizeof(int64_t);
  void *p = mmap(NULL, m->size, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return -1;
  m->hdr = p; /* the mapping is zero-filled */
  m->slots = (slot *)((char *)p + hdr);
  m->samples = (int64_t *)((char *)p + hdr + slots);
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

/* GET, +1 in C, SET: deliberately not atomic, so only the lock keeps
 * increments from being lost. */
static int increment(child *ch) {
  const char *get[2] = {"GET", ch->nm->counter};
  redisReply *r = bench_raw_cmd(ch->raw, 2, get, NULL);
  if (r == NULL)
    return -1;
  long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
  freeReplyObject(r);
  char buf[32];
  snprintf(buf, sizeof buf, "%lld", v + 1);
  const char *set[3] = {"SET", ch->nm->counter, buf};
  if ((r = bench_raw_cmd(ch->raw, 3, set, NULL)) == NULL)
    return -1;
  freeReplyObject(r);
  return 0;
}

static int one_round(child *ch, int64_t *samples, size_t *n) {
  int64_t wait_from = bench_now_ns();
  int rc = rlock_lock_acquire(ch->lock);
  int64_t got = bench_now_ns();
  if (rc != RLOCK_OK)
    return bench_fail_rc("rlock_lock_acquire", rc);
  int64_t last = atomic_load(&ch->m->hdr->last_release_ns);
  if (last > wait_from) /* it was released while we waited: a handoff */
    samples[(*n)++] = got - last;
  if (increment(ch) != 0) {
    rlock_lock_release(ch->lock); /* let the others finish */
    return BENCH_EXIT_FAIL;
  }
  atomic_store(&ch->m->hdr->last_release_ns, bench_now_ns());
  if ((rc = rlock_lock_release(ch->lock)) != RLOCK_OK)
    return bench_fail_rc("rlock_lock_release", rc);
  bench_sleep_us(ch->a->think_us);
  return 0;
}

static int child_rounds(child *ch) {
  int64_t *samples = ch->m->samples + (size_t)ch->idx * (size_t)ch->a->ops;
  size_t n = 0;
  int rc = 0;
  for (long i = 0; i < ch->a->ops && rc == 0; i++)
    rc = one_round(ch, samples, &n);
  ch->m->slots[ch->idx].end_ns = bench_now_ns();
  ch->m->slots[ch->idx].nsamples = n;
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
  if ((rc = rlock_lock_new(&ch->lock, ch->client, ch->nm->lock)) != RLOCK_OK)
    return bench_fail_rc("rlock_lock_new", rc);
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
  if (counter != NULL) {
    const char *get[2] = {"GET", nm->counter};
    redisReply *r = bench_raw_cmd(raw, 2, get, NULL);
    if (r == NULL)
      return -1;
    *counter = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
  }
  const char *del[3] = {"DEL", nm->lock, nm->counter};
  redisReply *r = bench_raw_cmd(raw, 3, del, NULL);
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

/* Gather every child's handoff samples into one array. */
static size_t gather(const bench_args *a, const shm *m, int64_t **out,
                     int64_t *end_ns) {
  size_t total = 0;
  *end_ns = 0;
  for (int i = 0; i < a->procs; i++) {
    total += m->slots[i].nsamples;
    if (m->slots[i].end_ns > *end_ns)
      *end_ns = m->slots[i].end_ns;
  }
  *out = malloc((total > 0 ? total : 1) * sizeof **out);
  if (*out == NULL)
    return 0;
  size_t k = 0;
  for (int i = 0; i < a->procs; i++) {
    const int64_t *s = m->samples + (size_t)i * (size_t)a->ops;
    for (size_t j = 0; j < m->slots[i].nsamples; j++)
      (*out)[k++] = s[j];
  }
  return total;
}

static void report(const bench_args *a, const shm *m, bench_samples *pings,
                   int64_t t0, long long counter) {
  int64_t *h, end;
  size_t n = gather(a, m, &h, &end);
  double total = (double)a->procs * (double)a->ops;
  double ping = bench_percentile_us(pings->v, pings->n, 50);
  double p50 = bench_percentile_us(h, n, 50);
  bench_report r;
  bench_report_begin(&r, a->json, "contended");
  bench_report_int(&r, "procs", a->procs);
  bench_report_int(&r, "ops", a->ops);
  bench_report_int(&r, "think_us", a->think_us);
  bench_report_num(&r, "acquisitions_per_s", total / ((end - t0) / 1e9), 0);
  bench_report_int(&r, "handoffs", (long long)n);
  bench_report_num(&r, "handoff_p50_us", p50, 1);
  bench_report_num(&r, "handoff_p99_us", bench_percentile_us(h, n, 99), 1);
  bench_report_num(&r, "ping_rtt_us", ping, 1);
  bench_report_num(&r, "handoff_rtts", p50 / ping, 2);
  bench_report_int(&r, "lost_updates", (long long)total - counter);
  bench_report_end(&r);
  free(h);
}

int bench_contended(const bench_args *a) {
  names nm;
  bench_key(nm.lock, sizeof nm.lock, "rlock-bench:contended", (long)getpid());
  bench_key(nm.counter, sizeof nm.counter, "rlock-bench:counter",
            (long)getpid());
  bench_samples pings;
  shm m;
  if (bench_samples_init(&pings, 2 * PINGS_PER_SIDE) != 0 ||
      shm_map(&m, a->procs, a->ops) != 0) {
    bench_samples_free(&pings);
    return bench_fail("out of memory");
  }
  int64_t t0 = 0;
  long long counter = 0;
  int ok = bracket(a, &nm, &pings, NULL) == 0 &&
           run_children(a, &nm, &m, &t0) == 0 &&
           bracket(a, &nm, &pings, &counter) == 0;
  if (ok)
    report(a, &m, &pings, t0, counter);
  munmap(m.hdr, m.size);
  bench_samples_free(&pings);
  return ok ? 0 : BENCH_EXIT_FAIL;
}
