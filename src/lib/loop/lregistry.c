/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lregistry.c - the client's registry record written on the loop's
 * timer (rlock_config_set_registry_period): once when the loop begins,
 * then once a period, one SET ... PX of three periods, never more than
 * one in flight. It runs on the loop's thread: a loop client's event
 * loop, or a blocking client's background thread, so no lock call ever
 * waits for it. The record's text was made when the client was set up
 * (kinds/registry.c): a write builds its call in the request's own store
 * and allocates nothing of its own.
 *
 * A failed write changes nothing else: an unreachable server is tried
 * again next period (a connection that failed with only this write on
 * it is logged at DEBUG: the lock calls report an outage); a refusal (an ACL
 * without the registry's prefix, a read-only replica) is logged once at WARN,
 * then the writes go on quietly, so a permission granted later takes effect.
 */

#include "client_int.h"
#include "common.h"
#include "loop.h"

static void reg_done(rlock_client *c, rlock__lreq *r) {
  rlock__loop *lp = c->loop;
  rlock__reply *reply;
  int rc = rlock__lreq_take(r, &reply);
  rlock__reply_free(reply);
  lp->reg_busy = 0;
  /* Only a refusal is worth a word: an outage is the lock calls' to
   * report, and memory short for now is tried again next period. */
  if (rc == RLOCK_OK || lp->closing || lp->reg_warned || rc == RLOCK_EIO ||
      rc == RLOCK_ETIMEOUT || rc == RLOCK_ECLOSED || rc == RLOCK_ENOMEM)
    return;
  lp->reg_warned = 1;
  const rlock_error *e = rlock_error_last();
  rlock__obs_log(&c->obs, RLOCK_LOG_WARN,
                 "registry: writing %s was refused (%s); locks are not "
                 "affected, and operators will not see this client's host, "
                 "pid and program (allow the key prefix %s, or turn the "
                 "registry off: rlock_config_set_registry_period 0)",
                 c->reg.key, e->message, RLOCK_REGISTRY_PREFIX);
}

static void reg_send(rlock_client *c) {
  rlock__loop *lp = c->loop;
  rlock__lreq *r = &lp->reg_req;
  rlock__call_cmd(&r->call, "SET");
  rlock__call_key(&r->call, c->reg.key);
  rlock__call_arg(&r->call, c->reg.rec);
  rlock__call_arg(&r->call, "PX");
  rlock__call_num(&r->call, 3 * c->cfg.registry_period_ms);
  r->no_pause = 1; /* next period tries again: never queued for long */
  r->quiet = 1;    /* an unreachable server is the lock calls' to report */
  r->deadline_us = 0;
  r->bound_us = 0;
  lp->reg_busy = 1;
  rlock__lreq_send(c, r, reg_done); /* may end (reg_done) at once */
}

void rlock__lregistry_tick(rlock_client *c, rlock__ltimer *t) {
  rlock__loop *lp = c->loop;
  if (lp->closing || c->cfg.registry_period_ms <= 0)
    return;
  rlock__ltimer_at(c, t, rlock__now_us() + c->cfg.registry_period_ms * 1000);
  if (!lp->reg_busy) /* one in flight at most: a slow server gets no more */
    reg_send(c);
}

void rlock__lregistry_start(rlock_client *c) {
  rlock__lregistry_tick(c, &c->loop->registry);
}
