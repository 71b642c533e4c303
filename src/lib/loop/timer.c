/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * timer.c - many timers behind the adapter's one: a binary min-heap by
 * due time. Every waiting acquisition has one (its sleep bound), so ten
 * thousand pending acquisitions cost O(log n) per change.
 */
#include <stdlib.h>

#include "client_int.h"
#include "common.h"
#include "loop.h"

void rlock__ltimer_init(rlock__ltimer *t,
                        void (*fn)(rlock_client *, rlock__ltimer *)) {
  t->at_us = 0;
  t->idx = RLOCK__LTIMER_OFF;
  t->fn = fn;
}

static void put(rlock__loop *lp, size_t i, rlock__ltimer *t) {
  lp->heap[i] = t;
  t->idx = i;
}

static void up(rlock__loop *lp, size_t i) {
  rlock__ltimer *t = lp->heap[i];
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (lp->heap[parent]->at_us <= t->at_us)
      break;
    put(lp, i, lp->heap[parent]);
    i = parent;
  }
  put(lp, i, t);
}

static void down(rlock__loop *lp, size_t i) {
  rlock__ltimer *t = lp->heap[i];
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= lp->nheap)
      break;
    if (child + 1 < lp->nheap &&
        lp->heap[child + 1]->at_us < lp->heap[child]->at_us)
      child++;
    if (lp->heap[child]->at_us >= t->at_us)
      break;
    put(lp, i, lp->heap[child]);
    i = child;
  }
  put(lp, i, t);
}

void rlock__ltimer_stop(rlock_client *c, rlock__ltimer *t) {
  rlock__loop *lp = c->loop;
  if (t->idx == RLOCK__LTIMER_OFF)
    return;
  size_t i = t->idx;
  t->idx = RLOCK__LTIMER_OFF;
  rlock__ltimer *last = lp->heap[--lp->nheap];
  if (i == lp->nheap)
    return;
  put(lp, i, last);
  up(lp, i);
  down(lp, last->idx);
}

int rlock__ltimer_at(rlock_client *c, rlock__ltimer *t, int64_t at_us) {
  rlock__loop *lp = c->loop;
  rlock__ltimer_stop(c, t);
  int rc =
      rlock__lgrow(&lp->heap, &lp->capheap, lp->nheap, sizeof *lp->heap, 64);
  if (rc != RLOCK_OK)
    return rc;
  t->at_us = at_us;
  put(lp, lp->nheap++, t);
  up(lp, t->idx);
  return RLOCK_OK;
}

int64_t rlock__ltimer_next(const rlock_client *c) {
  const rlock__loop *lp = c->loop;
  return lp->nheap > 0 ? lp->heap[0]->at_us : INT64_MAX;
}

void rlock__ltimer_run_due(rlock_client *c) {
  rlock__loop *lp = c->loop;
  int64_t now = rlock__now_us();
  while (lp->nheap > 0 && lp->heap[0]->at_us <= now && !lp->doomed) {
    rlock__ltimer *t = lp->heap[0];
    rlock__ltimer_stop(c, t);
    t->fn(c, t);
  }
}
