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
#include "watchdog.h"
#include "pubsub.h"
#include "bg.h"

/* A random version-4 UUID in canonical lower-case form, as Redisson's
 * client id. */
static int make_uuid(char out[37]) {
  unsigned char b[16];
  size_t got = 0;
  while (got < sizeof b) {
    ssize_t n = getrandom(b + got, sizeof b - got, 0);
    if (n < 0 && errno != EINTR)
      return rlock__err(RLOCK_EIO, "getrandom failed: %s", strerror(errno));
    if (n > 0)
      got += (size_t)n;
  }
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
  snprintf(out, 37,
           "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
           "%02x%02x%02x%02x%02x%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
           b[11], b[12], b[13], b[14], b[15]);
  return RLOCK_OK;
}

static void wake_bg(void *arg) { rlock__bg_wake(arg); }

/* Build the TLS context where the URL asks for TLS, and hand it to every
 * endpoint that speaks it (nodes found later copy it from target.data). */
static int tls_setup(rlock_client *c) {
  rlock__target *t = &c->cfg.target;
  int any = t->data.tls;
  for (size_t i = 0; i < t->n; i++)
    any |= t->addrs[i].tls;
  if (!any)
    return RLOCK_OK;
  int rc = rlock__tls_new(&c->tls, &t->tls);
  if (rc != RLOCK_OK)
    return rc;
  for (size_t i = 0; i <= t->n; i++) {
    rlock__endpoint *ep = i < t->n ? &t->addrs[i] : &t->data;
    ep->tls_ctx = ep->tls ? c->tls : NULL;
  }
  return RLOCK_OK;
}

/* Everything a client has but its driver (the background thread, or an
 * event loop): configuration, identity, topology, subscriptions and hold
 * records. */
int rlock__client_setup(rlock_client **out, const rlock_config *cfg) {
  *out = NULL;
  rlock_client *c = rlock__calloc(1, sizeof *c);
  if (c == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  rlock__origin_here(&c->origin); /* first: registers the fork handler */
  int rc =
      cfg ? rlock__config_copy(&c->cfg, cfg) : rlock__config_defaults(&c->cfg);
  if (rc != RLOCK_OK) {
    free(c);
    return rc;
  }
  if ((rc = make_uuid(c->id)) != RLOCK_OK ||
      (rc = rlock__config_apply(&c->cfg)) != RLOCK_OK ||
      (rc = tls_setup(c)) != RLOCK_OK)
    goto fail_cfg;
  if (c->cfg.pubsub_mode >= 0) /* the setter wins over the URL */
    c->cfg.target.pubsub = (rlock__pubsub_mode)c->cfg.pubsub_mode;
  c->obs.fn = c->cfg.log_fn;
  c->obs.userdata = c->cfg.log_userdata;
  c->obs.max_level = c->cfg.log_level;
  rc = rlock__topo_init(&c->topo, &c->cfg.target, c->cfg.pool_size,
                        c->cfg.connect_timeout_ms, c->cfg.command_timeout_ms,
                        &c->obs);
  if (rc != RLOCK_OK)
    goto fail_cfg;
  if ((c->wd = rlock__calloc(1, sizeof *c->wd)) == NULL) {
    rc = rlock__err(RLOCK_ENOMEM, "out of memory");
    goto fail_topo;
  }
  if ((rc = rlock__watchdog_init(c->wd, c->cfg.watchdog_timeout_ms)) !=
      RLOCK_OK)
    goto fail_wd;
  *out = c;
  return RLOCK_OK;

fail_wd:
  free(c->wd);
fail_topo:
  rlock__topo_destroy(&c->topo);
fail_cfg:
  rlock__tls_free(c->tls);
  rlock__config_clear(&c->cfg);
  free(c);
  return rc;
}

void rlock__client_teardown(rlock_client *c) {
  rlock__watchdog_destroy(c->wd);
  free(c->wd);
  rlock__topo_destroy(&c->topo);
  rlock__tls_free(c->tls); /* after every connection that used it */
  rlock__config_clear(&c->cfg);
  free(c);
}

int rlock_client_new(rlock_client **out, const rlock_config *cfg) {
  if (out == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_client_new: out is NULL");
  int rc = rlock__client_setup(out, cfg);
  if (rc != RLOCK_OK)
    return rc;
  rlock_client *c = *out;
  c->drv = &rlock__bg_driver;
  c->topo.on_change = wake_bg; /* Sentinel: the subscriber follows */
  c->topo.on_change_arg = c;
  /* The blocking driver's subscriber and background thread (an event
   * loop has its own). */
  c->ps = rlock__calloc(1, sizeof *c->ps);
  c->bg = rlock__calloc(1, sizeof *c->bg);
  rc = c->ps == NULL || c->bg == NULL
           ? rlock__err(RLOCK_ENOMEM, "out of memory")
           : rlock__pubsub_init(c->ps);
  if (rc != RLOCK_OK) {
    free(c->ps);
    free(c->bg);
    rlock__client_teardown(c);
    *out = NULL;
    return rc;
  }
  c->ps->obs = &c->obs;
  c->ps->linger_us = c->cfg.linger_ms * 1000;
  c->ps->max_idle = c->cfg.max_idle_subs;
  if ((rc = rlock__bg_start(c)) != RLOCK_OK) {
    rlock__pubsub_destroy(c->ps);
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

/* The owner field is built on every operation; cache it per thread for
 * the last client used. Keyed by client id and thread id, so a second
 * client, or the child of a fork (new thread id), rebuilds it. */
static _Thread_local struct {
  char id[37];
  uint64_t tid;
  char owner[RLOCK_OWNER_MAX];
  size_t len;
} owner_cache;

void rlock__owner(const rlock_client *c, char *buf) {
  uint64_t tid = rlock__thread_id();
  if (owner_cache.tid != tid || memcmp(owner_cache.id, c->id, 36) != 0) {
    int n = snprintf(owner_cache.owner, sizeof owner_cache.owner, "%s:%" PRIu64,
                     c->id, tid);
    owner_cache.len = (size_t)n;
    memcpy(owner_cache.id, c->id, sizeof owner_cache.id);
    owner_cache.tid = tid;
  }
  memcpy(buf, owner_cache.owner, owner_cache.len + 1);
}

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
