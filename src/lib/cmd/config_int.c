/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_int.c - a configuration's defaults, copy and the settings a URL
 * adds (config_int.h); the public setters are api/config.c's.
 */
#include "config_int.h"

#include <stdlib.h>
#include <string.h>

#include "common.h"

int rlock__config_defaults(rlock_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->connect_timeout_ms = 2000;
  cfg->command_timeout_ms = 3000;
  cfg->watchdog_timeout_ms = 30000;
  cfg->fair_wait_timeout_ms = 300000;
  cfg->unreachable_retry_ms = RLOCK_RETRY_FOREVER;
  cfg->pool_size = 64;
  cfg->linger_ms = 1000;
  cfg->registry_period_ms = RLOCK_REGISTRY_PERIOD_DEFAULT;
  cfg->max_idle_subs = 64;
  cfg->pubsub_mode = -1;
  cfg->sync_replicas = 1;
  cfg->replica_sync_timeout_ms = 1000;
  cfg->tls_insecure = -1;
  return rlock__target_parse(&cfg->target, RLOCK_DEFAULT_URL);
}

int rlock__config_copy(rlock_config *dst, const rlock_config *src) {
  *dst = *src;
  dst->user = dst->password = NULL;
  memset(&dst->tls, 0, sizeof dst->tls);
  int rc = rlock__target_copy(&dst->target, &src->target);
  if (rc == RLOCK_OK && (rlock__dup_opt(&dst->user, src->user) ||
                         rlock__dup_opt(&dst->password, src->password) ||
                         rlock__tls_opts_copy(&dst->tls, &src->tls)))
    rc = rlock__err(RLOCK_ENOMEM, "out of memory");
  if (rc != RLOCK_OK)
    rlock__config_clear(dst);
  return rc;
}

void rlock__config_clear(rlock_config *cfg) {
  rlock__target_clear(&cfg->target);
  rlock__tls_opts_clear(&cfg->tls);
  free(cfg->user);
  free(cfg->password);
  cfg->user = cfg->password = NULL;
}

/* *dst = a copy of src when src is set (an override). */
static int override(char **dst, const char *src) {
  if (src == NULL)
    return 0;
  char *copy = rlock__strdup(src);
  if (copy == NULL)
    return -1;
  free(*dst);
  *dst = copy;
  return 0;
}

/* The setters' password for the data nodes: every address but a
 * sentinel, and the template of nodes found later. */
static int apply_password(rlock_config *cfg) {
  rlock__target *t = &cfg->target;
  int sentinel = t->kind == RLOCK__TOPO_SENTINEL;
  for (size_t i = 0; i <= t->n; i++) {
    rlock__endpoint *ep = i < t->n ? &t->addrs[i] : &t->data;
    if (sentinel && ep != &t->data)
      continue;
    free(ep->user);
    free(ep->password);
    ep->user = ep->password = NULL;
    if (rlock__dup_opt(&ep->user, cfg->user) ||
        rlock__dup_opt(&ep->password, cfg->password))
      return -1;
  }
  return 0;
}

int rlock__config_apply(rlock_config *cfg) {
  rlock__tls_opts *u = &cfg->target.tls;
  const rlock__tls_opts *o = &cfg->tls;
  if (override(&u->ca_file, o->ca_file) || override(&u->ca_dir, o->ca_dir) ||
      override(&u->cert_file, o->cert_file) ||
      override(&u->key_file, o->key_file) ||
      override(&u->server_name, o->server_name) ||
      (cfg->password_set && apply_password(cfg)))
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  if (cfg->tls_insecure >= 0)
    u->insecure = cfg->tls_insecure;
  int tls = cfg->target.data.tls;
  for (size_t i = 0; i < cfg->target.n; i++)
    tls |= cfg->target.addrs[i].tls;
  if (!tls && rlock__tls_opts_any(u))
    return rlock__err(RLOCK_EINVAL,
                      "TLS options are set but the URL speaks "
                      "no TLS: use rediss://, rediss-cluster:// or "
                      "rediss-sentinel://");
  return RLOCK_OK;
}
