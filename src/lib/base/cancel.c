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
