/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * setup.c - what every client has below its driver: configuration,
 * identity, TLS context, topology, hold records and its registry record
 * (setup.h); the blocking driver (api/client.c, blocking/bg.c) and the
 * loop's (loop/core.c) build on it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "setup.h"

#include "client_int.h"
#include "common.h"
#include "registry.h"
#include "watchdog.h"

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
 * event loop): configuration, identity, TLS context, topology and hold
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
  if (c->cfg.registry_period_ms > 0)
    rlock__registry_setup(&c->reg, c->id, c->cfg.program);
  if (c->cfg.pubsub_mode >= 0) /* the setter wins over the URL */
    c->cfg.target.pubsub = (rlock__pubsub_mode)c->cfg.pubsub_mode;
  c->obs.fn = c->cfg.log_fn;
  c->obs.userdata = c->cfg.log_userdata;
  c->obs.max_level = c->cfg.log_level;
  if ((rc = rlock__obs_init(&c->obs, (size_t)c->cfg.metrics_names)) != RLOCK_OK)
    goto fail_cfg;
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
  rlock__obs_destroy(&c->obs); /* nothing when it was not set up */
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
  rlock__obs_destroy(&c->obs);
  rlock__config_clear(&c->cfg);
  free(c);
}
