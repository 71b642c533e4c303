/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lrenew.c - the watchdog on the loop: renew.c's tick in steps, one
 * batch in flight at a time on the command connection. Releases go on
 * the same connection, so a renewal sent before a release is run before
 * it (watchdog.c's rlock__hold_pop need not wait for it).
 */
#include <stddef.h>

#include "client_int.h"
#include "common.h"
#include "loop.h"
#include "watchdog.h"

static void arm_at(rlock_client *c, int64_t at) {
  if (at != INT64_MAX)
    rlock__ltimer_at(c, &c->loop->renew, at);
}

void rlock__lrenew_arm(rlock_client *c) {
  if (c->loop->tick != NULL)
    return; /* a tick is under way: it arms the next one when through */
  pthread_mutex_lock(&c->wd->mu);
  int64_t at = c->wd->armed ? c->wd->next_tick_us : INT64_MAX;
  pthread_mutex_unlock(&c->wd->mu);
  arm_at(c, at);
}

static void next_batch(rlock_client *c);

static void batch_done(rlock_client *c, rlock__lreq *r) {
  rlock__loop *lp = c->loop;
  rlock__reply *reply = r->q.reply;
  r->q.reply = NULL;
  rlock__call_clear(&r->call);
  if (!lp->closing)
    rlock__renew_done(c, lp->tick, r->q.rc, reply, r->sent_us);
  rlock__reply_free(reply);
  if (lp->closing) {
    rlock__renew_end(c, lp->tick);
    lp->tick = NULL;
    return;
  }
  next_batch(c);
}

static void next_batch(rlock_client *c) {
  rlock__loop *lp = c->loop;
  if (rlock__renew_next(c, lp->tick, &lp->renew_req.call)) {
    rlock__req_init(&lp->renew_req.q, &lp->renew_req.call);
    lp->renew_req.done = batch_done;
    rlock__lreq_send(c, &lp->renew_req);
    return;
  }
  rlock__renew_end(c, lp->tick);
  lp->tick = NULL;
  rlock__lrenew_arm(c);
}

void rlock__lrenew_tick(rlock_client *c, rlock__ltimer *t) {
  (void)t;
  rlock__loop *lp = c->loop;
  if (lp->tick != NULL || lp->closing)
    return;
  int64_t next = INT64_MAX;
  if (rlock__renew_begin(c, &lp->tick, &next) != RLOCK_OK || lp->tick == NULL) {
    arm_at(c, next);
    return;
  }
  next_batch(c);
}
