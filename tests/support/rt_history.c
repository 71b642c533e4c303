/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_history.c - the fault runs' history and its checker (rt_history.h).
 */
#include "rt_history.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rlock/errors.h>

#include <cmocka.h>

#include "rt_util.h"

int rt_history_open(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    fail_msg("cannot open history %s: %s", path, strerror(errno));
  return fd;
}

void rt_history_add(int fd, int worker, int lock, rt_ev ev, int64_t a,
                    int64_t b, int64_t c) {
  rt_record r = {rt_now_us(), worker, lock, (int32_t)ev, 0, a, b, c};
  ssize_t n;
  do
    n = write(fd, &r, sizeof r);
  while (n < 0 && errno == EINTR);
}

/* One hold: [from, to) of `worker` on `lock`. */
typedef struct hold {
  int64_t from, to;
  int worker, lock;
  int refused_after; /* the holder was refused or lost it later */
} hold;

typedef struct reader {
  rt_record *r;
  size_t n;
} reader;

static reader load(const char *path) {
  reader rd = {NULL, 0};
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return rd;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  rd.n = size > 0 ? (size_t)size / sizeof(rt_record) : 0;
  rd.r = calloc(rd.n + 1, sizeof *rd.r);
  if (rd.r == NULL || fread(rd.r, sizeof *rd.r, rd.n, f) != rd.n)
    rd.n = 0;
  fclose(f);
  return rd;
}

/* A record's place: its time, then its place in the file. */
typedef struct placed {
  int64_t t_us;
  size_t at;
} placed;

static int by_place(const void *a, const void *b) {
  const placed *x = a, *y = b;
  if (x->t_us != y->t_us)
    return (x->t_us > y->t_us) - (x->t_us < y->t_us);
  return (x->at > y->at) - (x->at < y->at);
}

/* Order the records by time; those of one microsecond keep the file's
 * order (a worker writes its own in the order they happened; qsort alone
 * is not stable, and the checker's verdict must not depend on it). */
static void sort_by_time(reader *rd) {
  placed *p = calloc(rd->n + 1, sizeof *p);
  rt_record *out = calloc(rd->n + 1, sizeof *out);
  if (p == NULL || out == NULL) {
    fprintf(stderr, "rt_history: out of memory sorting %zu records\n", rd->n);
    abort();
  }
  for (size_t i = 0; i < rd->n; i++)
    p[i] = (placed){rd->r[i].t_us, i};
  qsort(p, rd->n, sizeof *p, by_place);
  for (size_t i = 0; i < rd->n; i++)
    out[i] = rd->r[p[i].at];
  free(p);
  free(rd->r);
  rd->r = out;
}

static void note(rt_verdict *v, const char *fmt, ...) {
  if (v->first[0] != '\0')
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->first, sizeof v->first, fmt, ap);
  va_end(ap);
}

#define MAXW 256

/* Build the holds: each ACQUIRED opens one for its worker, closed by its
 * RELEASING, KILLED, or the end of the history. */
static size_t holds_of(const reader *rd, hold *h, size_t cap, int64_t end) {
  long open_at[MAXW], closed[MAXW];
  for (int i = 0; i < MAXW; i++)
    open_at[i] = closed[i] = -1;
  size_t n = 0;
  for (size_t i = 0; i < rd->n; i++) {
    const rt_record *r = &rd->r[i];
    int w = r->worker;
    if (w < 0 || w >= MAXW)
      continue;
    if (r->ev == RT_EV_ACQUIRED && open_at[w] < 0 && n < cap) {
      h[n] = (hold){r->t_us, end, w, r->lock, 0};
      open_at[w] = (long)n++;
      closed[w] = -1;
    } else if ((r->ev == RT_EV_RELEASING || r->ev == RT_EV_KILLED) &&
               open_at[w] >= 0) {
      h[open_at[w]].to = r->t_us;
      closed[w] = open_at[w];
      open_at[w] = -1;
    } else if ((r->ev == RT_EV_WRITE_REFUSED || r->ev == RT_EV_LOST) &&
               open_at[w] >= 0) {
      h[open_at[w]].refused_after = 1;
    } else if (r->ev == RT_EV_LOST && closed[w] >= 0) {
      h[closed[w]].refused_after = 1; /* the release said lost */
    }
  }
  return n;
}

/* A semaphore of `capacity` permits: a hold that begins while `capacity`
 * others of the same semaphore are open is one too many, unless it or
 * one of them was told its hold was gone (a stale holder). */
static void check_capacity(rt_verdict *v, hold *h, size_t n, int capacity) {
  for (size_t j = 0; j < n; j++) {
    int open = 0, stale = h[j].refused_after;
    for (size_t i = 0; i < j; i++)
      if (h[i].lock == h[j].lock && h[i].worker != h[j].worker &&
          h[i].to > h[j].from) {
        open++;
        stale |= h[i].refused_after;
      }
    if (open < capacity)
      continue;
    if (stale) {
      v->fenced_overlaps++;
      continue;
    }
    v->overlaps++;
    note(v,
         "semaphore %d: worker %d took a permit at %lld us while %d "
         "others held one (%d permits)",
         h[j].lock, h[j].worker, (long long)h[j].from, open, capacity);
  }
}

static void check_overlaps(rt_verdict *v, hold *h, size_t n) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n && h[j].from < h[i].to; j++) {
      if (h[j].lock != h[i].lock || h[j].worker == h[i].worker)
        continue;
      if (h[i].refused_after || h[j].refused_after) {
        v->fenced_overlaps++;
        continue;
      }
      v->overlaps++;
      note(v,
           "lock %d held by worker %d [%lld, %lld) and worker %d "
           "from %lld (us)",
           h[i].lock, h[i].worker, (long long)h[i].from, (long long)h[i].to,
           h[j].worker, (long long)h[j].from);
    }
}

/* Accepted writes in the resource's own order (b; the record's time where
 * b is 0): tokens must never go down, per lock. */
static int by_lock_order(const void *x, const void *y) {
  const rt_record *a = x, *b = y;
  if (a->lock != b->lock)
    return (a->lock > b->lock) - (a->lock < b->lock);
  int64_t oa = a->b ? a->b : a->t_us, ob = b->b ? b->b : b->t_us;
  return (oa > ob) - (oa < ob);
}

static void check_tokens(rt_verdict *v, const reader *rd) {
  rt_record *w = calloc(rd->n + 1, sizeof *w);
  size_t n = 0;
  for (size_t i = 0; w != NULL && i < rd->n; i++)
    if (rd->r[i].ev == RT_EV_WRITE_ACCEPTED)
      w[n++] = rd->r[i];
  qsort(w, n, sizeof *w, by_lock_order);
  for (size_t i = 1; i < n; i++)
    if (w[i].lock == w[i - 1].lock && w[i].a < w[i - 1].a) {
      v->token_inversions++;
      note(v, "lock %d: token %lld accepted after %lld", w[i].lock,
           (long long)w[i].a, (long long)w[i - 1].a);
    }
  free(w);
}

rt_verdict rt_history_check(const char *path, long counter, int64_t slack_ms) {
  return rt_history_check_n(path, counter, slack_ms, 1);
}

rt_verdict rt_history_check_n(const char *path, long counter, int64_t slack_ms,
                              int capacity) {
  rt_verdict v;
  memset(&v, 0, sizeof v);
  v.counter_value = counter;
  reader rd = load(path);
  sort_by_time(&rd);
  v.records = (long)rd.n;
  for (size_t i = 0; i < rd.n; i++) {
    const rt_record *r = &rd.r[i];
    switch (r->ev) {
    case RT_EV_ACQUIRED:
      v.acquisitions++;
      break;
    case RT_EV_RELEASING:
      v.releases++;
      break;
    case RT_EV_KILLED:
      v.kills++;
      break;
    case RT_EV_FAULT:
      v.faults++;
      break;
    case RT_EV_LOST:
      v.lost++;
      break;
    case RT_EV_BUMP_BEGIN:
      v.bumps_begun++;
      break;
    case RT_EV_BUMP_DONE:
      v.bumps_done++;
      break;
    case RT_EV_WRITE_REFUSED:
      v.writes_refused++;
      break;
    case RT_EV_WRITE_ACCEPTED:
      v.writes_accepted++;
      break;
    case RT_EV_ACQUIRE_FAILED:
      v.acquire_failed++;
      if (r->a > -1 || r->a < RLOCK_EHELD) { /* the newest status */
        v.undocumented++;
        note(&v, "worker %d: an acquisition failed with status %lld", r->worker,
             (long long)r->a);
      }
      break;
    case RT_EV_ACQUIRE_CALL:
      if (r->a >= 0 && r->b > r->a + slack_ms) {
        v.starved++;
        note(&v,
             "worker %d: an acquisition with a %lld ms wait "
             "returned after %lld ms",
             r->worker, (long long)r->a, (long long)r->b);
      }
      break;
    default:
      break;
    }
  }
  check_tokens(&v, &rd);
  int64_t end = rd.n > 0 ? rd.r[rd.n - 1].t_us + 1 : 0;
  hold *h = calloc(rd.n + 1, sizeof *h);
  if (h != NULL) {
    size_t n = holds_of(&rd, h, rd.n + 1, end);
    if (capacity > 1)
      check_capacity(&v, h, n, capacity);
    else
      check_overlaps(&v, h, n);
    free(h);
  }
  if (counter >= 0 && v.bumps_done > counter) {
    v.lost_updates = v.bumps_done - counter;
    note(&v, "counter %ld after %ld completed bumps", counter, v.bumps_done);
  }
  free(rd.r);
  return v;
}

void rt_history_print(const char *scenario, const rt_verdict *v) {
  printf("[ HISTORY  ] %s: %ld acquisitions checked (%ld calls failed), "
         "%ld faults, %ld kills; violations: %ld overlaps, %ld token "
         "inversions, %ld lost "
         "updates, %ld starved, %ld undocumented; %ld overlaps of refused "
         "stale holders, "
         "%ld writes refused, %ld lost\n",
         scenario, v->acquisitions, v->acquire_failed, v->faults, v->kills,
         v->overlaps, v->token_inversions, v->lost_updates, v->starved,
         v->undocumented, v->fenced_overlaps, v->writes_refused, v->lost);
  fflush(stdout);
}

bool rt_history_clean(const rt_verdict *v) {
  return v->overlaps == 0 && v->token_inversions == 0 && v->lost_updates == 0 &&
         v->starved == 0 && v->undocumented == 0;
}
