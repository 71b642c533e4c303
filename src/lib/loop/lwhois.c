/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lwhois.c - rlock_client_whois_async: a client's registry record read on
 * the loop, one GET of its key, routed by that key as every loop call is
 * (its slot's node on a cluster), and read by the blocking call's parser
 * (client/registry.c), so both say the same of the same key.
 *
 * The operation belongs to no lock (rlock__lop_new_on): the client's list
 * of pending operations is what completes it when the client is freed.
 * Its record is allocated with it, before the call returns (so memory
 * short is the call's RLOCK_ENOMEM, not the callback's), and freed after
 * the callback (core.c).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "common.h"
#include "loop.h"
#include "registry.h"

static const char fn[] = "rlock_client_whois_async";

/* The answer: a record (kept for the callback), nil (none: NULL), or a
 * key that holds something else. */
static void whois_done(rlock_client *c, rlock__lreq *r) {
  (void)c;
  rlock_op *op = rlock__lop_of(r);
  rlock__reply *reply;
  int rc = rlock__lreq_take(r, &reply);
  if (rc == RLOCK_OK && reply->type == RLOCK__R_STR &&
      rlock__registry_parse(reply->str, reply->len, op->owner, op->record) != 0)
    rc = rlock__err(RLOCK_EWRONGTYPE, "%s: %s%s is not a registry record", fn,
                    RLOCK_REGISTRY_PREFIX, op->owner);
  else if (rc == RLOCK_OK && reply->type != RLOCK__R_STR) {
    free(op->record); /* no record: the callback gets NULL */
    op->record = NULL;
  }
  rlock__reply_free(reply);
  rlock__lop_finish(op, rc, 0);
}

static void whois_start(rlock_op *op) {
  rlock__lreq *r = &op->lreq;
  rlock__call_cmd(&r->call, "GET");
  rlock__call_key(&r->call, rlock__call_fmt(&r->call, "%s%s",
                                            RLOCK_REGISTRY_PREFIX, op->owner));
  rlock__lreq_send(op->c, r, whois_done); /* may end at once */
}

/* The checks of a loop client's entry point (lops.c's, with no lock). */
static int check(rlock_client *c) {
  if (!rlock__origin_ok(&c->origin))
    return rlock__origin_refuse(&c->origin);
  if (!rlock__user_loop(c))
    return rlock__err(RLOCK_EINVAL,
                      "%s: the client was not made with "
                      "rlock_client_new_loop (use rlock_client_whois)",
                      fn);
  if (c->loop->closing)
    return rlock__err(RLOCK_ECLOSED, "%s: the client is being freed", fn);
  return RLOCK_OK;
}

int rlock_client_whois_async(rlock_client *c, const char *owner,
                             rlock_record_fn cb, void *arg) {
  if (c == NULL || owner == NULL || cb == NULL)
    return rlock__err(RLOCK_EINVAL, "%s: %s is NULL", fn,
                      c == NULL       ? "client"
                      : owner == NULL ? "owner"
                                      : "callback");
  char id[37];
  if (rlock__registry_id(owner, id) != 0)
    return rlock__err(RLOCK_EINVAL,
                      "%s: '%.64s' does not start with a client id (36 "
                      "characters of a UUID)",
                      fn, owner);
  int rc = check(c);
  if (rc != RLOCK_OK)
    return rc;
  rlock_op *op = rlock__lop_new_on(c, RLOCK__LOP_WHOIS);
  if (op == NULL)
    return RLOCK_ENOMEM;
  if ((op->record = rlock__calloc(1, sizeof *op->record)) == NULL) {
    free(op);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  op->record_cb = cb;
  op->arg = arg;
  memcpy(op->owner, id, sizeof id); /* the id, for the key and the parse */
  return rlock__lop_submit(op, whois_start);
}
