/*
 * config.c - the client configuration and its typed, validating setters.
 */
#include "config_int.h"

#include <stdlib.h>
#include <string.h>

#include "common.h"

#define HOUR_MS ((int64_t)3600 * 1000)

int rlock__config_defaults(rlock_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->connect_timeout_ms = 2000;
  cfg->command_timeout_ms = 3000;
  cfg->watchdog_timeout_ms = 30000;
  cfg->fair_wait_timeout_ms = 300000;
  cfg->pool_size = 64;
  cfg->pubsub_mode = -1;
  cfg->sync_replicas = 1;
  cfg->replica_sync_timeout_ms = 1000;
  return rlock__target_parse(&cfg->target, RLOCK_DEFAULT_URL);
}

int rlock__config_copy(rlock_config *dst, const rlock_config *src) {
  *dst = *src;
  return rlock__target_copy(&dst->target, &src->target);
}

void rlock__config_clear(rlock_config *cfg) {
  rlock__target_clear(&cfg->target);
}

int rlock_config_new(rlock_config **out) {
  if (out == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_config_new: out is NULL");
  *out = NULL;
  rlock_config *cfg = rlock__malloc(sizeof *cfg);
  if (cfg == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  int rc = rlock__config_defaults(cfg);
  if (rc != RLOCK_OK) {
    free(cfg);
    return rc;
  }
  *out = cfg;
  return RLOCK_OK;
}

void rlock_config_free(rlock_config *cfg) {
  if (cfg == NULL)
    return;
  rlock__config_clear(cfg);
  free(cfg);
}

#define CHECK_CFG(cfg, fn)                                                     \
  do {                                                                         \
    if ((cfg) == NULL)                                                         \
      return rlock__err(RLOCK_EINVAL, fn ": config is NULL");                  \
  } while (0)

static int check_range(const char *what, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi)
    return rlock__err(RLOCK_EINVAL,
                      "%s must be between %lld and %lld ms (got %lld)", what,
                      (long long)lo, (long long)hi, (long long)v);
  return RLOCK_OK;
}

int rlock_config_set_url(rlock_config *cfg, const char *url) {
  CHECK_CFG(cfg, "rlock_config_set_url");
  rlock__target t;
  int rc = rlock__target_parse(&t, url);
  if (rc != RLOCK_OK)
    return rc;
  rlock__target_clear(&cfg->target);
  cfg->target = t;
  return RLOCK_OK;
}

/* Validate and store one duration option. */
static int set_ms(int64_t *field, const char *what, int64_t ms, int64_t lo,
                  int64_t hi) {
  int rc = check_range(what, ms, lo, hi);
  if (rc == RLOCK_OK)
    *field = ms;
  return rc;
}

int rlock_config_set_connect_timeout_ms(rlock_config *cfg, int64_t ms) {
  CHECK_CFG(cfg, "rlock_config_set_connect_timeout_ms");
  return set_ms(&cfg->connect_timeout_ms, "connect timeout", ms, 1, HOUR_MS);
}

int rlock_config_set_command_timeout_ms(rlock_config *cfg, int64_t ms) {
  CHECK_CFG(cfg, "rlock_config_set_command_timeout_ms");
  return set_ms(&cfg->command_timeout_ms, "command timeout", ms, 1, HOUR_MS);
}

int rlock_config_set_watchdog_timeout_ms(rlock_config *cfg, int64_t ms) {
  CHECK_CFG(cfg, "rlock_config_set_watchdog_timeout_ms");
  return set_ms(&cfg->watchdog_timeout_ms, "watchdog timeout", ms, 30,
                RLOCK_MAX_DURATION_MS);
}

int rlock_config_set_fair_wait_timeout_ms(rlock_config *cfg, int64_t ms) {
  CHECK_CFG(cfg, "rlock_config_set_fair_wait_timeout_ms");
  return set_ms(&cfg->fair_wait_timeout_ms, "fair wait timeout", ms, 1,
                RLOCK_MAX_DURATION_MS);
}

int rlock_config_set_pool_size(rlock_config *cfg, int size) {
  CHECK_CFG(cfg, "rlock_config_set_pool_size");
  if (size < 1 || size > 1024)
    return rlock__err(RLOCK_EINVAL, "pool size must be 1..1024 (got %d)",
                      size);
  cfg->pool_size = size;
  return RLOCK_OK;
}

int rlock_config_set_lost_callback(rlock_config *cfg, rlock_lost_fn fn,
                                   void *userdata) {
  CHECK_CFG(cfg, "rlock_config_set_lost_callback");
  cfg->lost_fn = fn;
  cfg->lost_userdata = fn ? userdata : NULL;
  return RLOCK_OK;
}

int rlock_config_set_log(rlock_config *cfg, rlock_log_fn fn,
                         rlock_log_level max_level, void *userdata) {
  CHECK_CFG(cfg, "rlock_config_set_log");
  if (max_level < RLOCK_LOG_ERROR || max_level > RLOCK_LOG_DEBUG)
    return rlock__err(RLOCK_EINVAL, "log level must be RLOCK_LOG_ERROR (1) "
                      "to RLOCK_LOG_DEBUG (4) (got %d)", (int)max_level);
  cfg->log_fn = fn;
  cfg->log_userdata = fn ? userdata : NULL;
  cfg->log_level = fn ? (int)max_level : 0;
  return RLOCK_OK;
}

int rlock_config_set_pubsub_mode(rlock_config *cfg, int mode) {
  CHECK_CFG(cfg, "rlock_config_set_pubsub_mode");
  if (mode != RLOCK_PUBSUB_AUTO && mode != RLOCK_PUBSUB_CLASSIC &&
      mode != RLOCK_PUBSUB_SHARDED)
    return rlock__err(RLOCK_EINVAL, "pub/sub mode must be RLOCK_PUBSUB_AUTO, "
                      "_CLASSIC or _SHARDED (got %d)", mode);
  cfg->pubsub_mode = mode;
  return RLOCK_OK;
}

int rlock_config_set_replica_sync(rlock_config *cfg, int on) {
  CHECK_CFG(cfg, "rlock_config_set_replica_sync");
  cfg->sync_replicas = on != 0;
  return RLOCK_OK;
}

int rlock_config_set_replica_sync_timeout_ms(rlock_config *cfg, int64_t ms) {
  CHECK_CFG(cfg, "rlock_config_set_replica_sync_timeout_ms");
  return set_ms(&cfg->replica_sync_timeout_ms, "replica sync timeout", ms, 1,
                60 * 1000);
}
