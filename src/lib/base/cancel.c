/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cancel.c - cancel tokens.
 */
#include "cancel.h"

#include <stdlib.h>

#include "common.h"

_Static_assert(ATOMIC_INT_LOCK_FREE == 2,
               "rlock_cancel_fire must be async-signal-safe");

int rlock_cancel_new(rlock_cancel **out) {
  if (out == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_cancel_new: out is NULL");
  *out = rlock__malloc(sizeof **out);
  if (*out == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  atomic_init(&(*out)->fired, 0);
  return RLOCK_OK;
}

void rlock_cancel_free(rlock_cancel *c) { free(c); }

void rlock_cancel_fire(rlock_cancel *c) {
  if (c != NULL)
    atomic_store(&c->fired, 1);
}

void rlock_cancel_reset(rlock_cancel *c) {
  if (c != NULL)
    atomic_store(&c->fired, 0);
}

int rlock_cancel_fired(const rlock_cancel *c) {
  return c != NULL && atomic_load(&((rlock_cancel *)c)->fired);
}

int rlock__canceled(const rlock_cancel *c) { return rlock_cancel_fired(c); }

int64_t rlock__cancel_step(const rlock_cancel *c, int64_t until_us) {
  if (c == NULL)
    return until_us;
  int64_t step = rlock__now_us() + RLOCK__CANCEL_STEP_MS * 1000;
  return step < until_us ? step : until_us;
}

static _Thread_local rlock__bound bound = {INT64_MAX, NULL};

rlock__bound rlock__bound_enter(int64_t until_us, const rlock_cancel *cancel) {
  rlock__bound was = bound;
  if (until_us < bound.until_us)
    bound.until_us = until_us;
  bound.cancel = cancel;
  return was;
}

rlock__bound rlock__bound_extend(int64_t until_us) {
  rlock__bound was = bound;
  if (until_us > bound.until_us)
    bound.until_us = until_us;
  bound.cancel = NULL;
  return was;
}

void rlock__bound_restore(rlock__bound was) { bound = was; }

int64_t rlock__bound_clip(int64_t deadline_us) {
  return deadline_us < bound.until_us ? deadline_us : bound.until_us;
}

int64_t rlock__bound_step(int64_t deadline_us) {
  return rlock__cancel_step(bound.cancel, rlock__bound_clip(deadline_us));
}

int rlock__bound_reached(void) {
  if (rlock__canceled(bound.cancel))
    return RLOCK_ECANCELED;
  if (bound.until_us != INT64_MAX && rlock__now_us() >= bound.until_us)
    return RLOCK_ETIMEOUT;
  return 0;
}

void rlock__bound_sleep_ms(int64_t ms) {
  int64_t until = rlock__bound_clip(rlock__deadline_after_ms(ms));
  for (int64_t now = rlock__now_us(); now < until && !rlock__bound_reached();
       now = rlock__now_us()) {
    int64_t left = rlock__bound_step(until) - now;
    rlock__sleep_ms(left >= 1000 ? left / 1000 : 1);
  }
}
