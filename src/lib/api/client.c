/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * client.c - client lifecycle, identity and PING.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "client_int.h"
#include "cmd.h"
#include "common.h"
#include "lock_int.h"
#include "setup.h"
#include "watchdog.h"
#include "pubsub.h"
#include "bg.h"

/* Sentinel named a new master: the subscriber follows (pubsub.c's turn on
 * the background thread). The topology calls this only once the client
 * is set up. */
static void master_moved(void *arg) {
  rlock_client *c = arg;
  atomic_store(&c->ps->master_moved, 1);
  rlock__bg_wake(c);
}

int rlock_client_new(rlock_client **out, const rlock_config *cfg) {
  if (out == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_client_new: out is NULL");
  int rc = rlock__client_setup(out, cfg);
  if (rc != RLOCK_OK)
    return rc;
  rlock_client *c = *out;
  c->drv = &rlock__bg_driver;
  c->topo.on_change = master_moved;
  c->topo.on_change_arg = c;
  /* The blocking driver's subscriber and background thread (an event
   * loop has its own). */
  c->ps = rlock__calloc(1, sizeof *c->ps);
  c->bg = rlock__calloc(1, sizeof *c->bg);
  rc = c->ps == NULL || c->bg == NULL
           ? rlock__err(RLOCK_ENOMEM, "out of memory")
           : rlock__pubsub_init(c->ps);
  if (rc == RLOCK_OK) {
    c->ps->obs = &c->obs;
    c->ps->linger_us = c->cfg.linger_ms * 1000;
    c->ps->max_idle = c->cfg.max_idle_subs;
    if ((rc = rlock__bg_start(c)) != RLOCK_OK)
      rlock__pubsub_destroy(c->ps);
  }
  if (rc != RLOCK_OK) {
    free(c->ps);
    free(c->bg);
    rlock__client_teardown(c);
    *out = NULL;
  }
  return rc;
}

int rlock_client_free(rlock_client *c) {
  if (c == NULL)
    return RLOCK_OK;
  /* In a fork()ed child, release nothing, deliberately: the background
   * thread does not exist here; mutexes may have been held at the fork by
   * threads that do not exist either, and condition variables waited on by
   * them (destroying such a one blocks for ever); the descriptors are
   * copies of the parent's sockets, which the child may even have closed
   * and reused for something else by now. So the memory and the copies of
   * the descriptors (all close-on-exec) stay until the child exits or
   * execs. Checked first: the forking thread may have been this client's
   * background thread (a lost-lock callback that forks). */
  if (!rlock__origin_ok(&c->origin))
    return rlock__origin_refuse(&c->origin);
  /* The background thread cannot join itself: the lost-lock callback runs
   * on it. */
  if (c->bg != NULL && c->bg->started &&
      pthread_equal(pthread_self(), c->bg->thread))
    return rlock__err(RLOCK_EDEADLK,
                      "rlock_client_free called from the "
                      "client's own background thread (lost-lock callback); "
                      "free it from another thread");
  return c->drv->free(c);
}

const char *rlock_client_id(const rlock_client *c) { return c ? c->id : NULL; }

int rlock_client_owner(char *buf, size_t size, const rlock_client *c) {
  if (buf == NULL || c == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_client_owner: NULL argument");
  char tmp[RLOCK_OWNER_MAX];
  rlock__owner(c, tmp);
  if (strlen(tmp) >= size)
    return rlock__err(RLOCK_EINVAL,
                      "rlock_client_owner: buffer of %zu bytes "
                      "is too small",
                      size);
  memcpy(buf, tmp, strlen(tmp) + 1);
  return RLOCK_OK;
}

int rlock_client_ping(rlock_client *c, int64_t *rtt_us) {
  if (c == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_client_ping: client is NULL");
  rlock__call call;
  rlock__call_cmd(&call, "PING");
  rlock__reply *r;
  int64_t t0 = rlock__now_us();
  int rc = rlock__call_run(c, &call, &r);
  if (rc != RLOCK_OK)
    return rc;
  if (rtt_us != NULL)
    *rtt_us = rlock__now_us() - t0;
  rlock__reply_free(r);
  return RLOCK_OK;
}

const char *rlock_client_topology(const rlock_client *c) {
  return c ? rlock__target_kind_name(&c->cfg.target) : NULL;
}

int rlock_client_stats(const rlock_client *c, rlock_stats *out, size_t size) {
  if (c == NULL || out == NULL || size == 0)
    return rlock__err(RLOCK_EINVAL, "rlock_client_stats: %s",
                      c == NULL     ? "client is NULL"
                      : out == NULL ? "out is NULL"
                                    : "size is 0 (pass sizeof(rlock_stats))");
  rlock__obs_read(&c->obs, out, size);
  return RLOCK_OK;
}

int rlock_client_metrics_text(const rlock_client *c, char *buf, size_t size,
                              size_t *needed, unsigned flags) {
  if (needed != NULL)
    *needed = 0;
  int buf_bad = buf == NULL && size > 0; /* NULL with 0: a size query */
  if (c == NULL || buf_bad || (flags & ~RLOCK_METRICS_OPENMETRICS) != 0)
    return rlock__err(RLOCK_EINVAL, "rlock_client_metrics_text: %s",
                      c == NULL ? "client is NULL"
                      : buf_bad ? "buf is NULL"
                                : "unknown flags");
  size_t len = rlock__obs_text(&c->obs, buf, size,
                               (flags & RLOCK_METRICS_OPENMETRICS) != 0);
  if (needed != NULL)
    *needed = len + 1;
  if (len >= size)
    return rlock__err(RLOCK_EINVAL,
                      "rlock_client_metrics_text: %zu bytes needed, %zu "
                      "given",
                      len + 1, size);
  return RLOCK_OK;
}
