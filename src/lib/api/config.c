/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config.c - the client configuration and its typed, validating setters.
 */
#include "config_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define HOUR_MS ((int64_t)3600 * 1000)

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

int rlock_config_set_unreachable_retry_ms(rlock_config *cfg, int64_t ms) {
  CHECK_CFG(cfg, "rlock_config_set_unreachable_retry_ms");
  if (ms == RLOCK_RETRY_FOREVER) {
    cfg->unreachable_retry_ms = ms;
    return RLOCK_OK;
  }
  if (ms < 0 || ms > RLOCK_MAX_DURATION_MS)
    return rlock__err(RLOCK_EINVAL,
                      "unreachable retry must be 0..%lld ms or "
                      "RLOCK_RETRY_FOREVER (got %lld)",
                      (long long)RLOCK_MAX_DURATION_MS, (long long)ms);
  cfg->unreachable_retry_ms = ms;
  return RLOCK_OK;
}

int rlock_config_set_pool_size(rlock_config *cfg, int size) {
  CHECK_CFG(cfg, "rlock_config_set_pool_size");
  if (size < 1 || size > 1024)
    return rlock__err(RLOCK_EINVAL, "pool size must be 1..1024 (got %d)", size);
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
  if (fn != NULL &&
      (max_level < RLOCK_LOG_ERROR || max_level > RLOCK_LOG_DEBUG))
    return rlock__err(RLOCK_EINVAL,
                      "log level must be RLOCK_LOG_ERROR (1) "
                      "to RLOCK_LOG_DEBUG (4) (got %d)",
                      (int)max_level);
  cfg->log_fn = fn;
  cfg->log_userdata = fn ? userdata : NULL;
  cfg->log_level = fn ? (int)max_level : 0;
  return RLOCK_OK;
}

/* A path or name option: NULL clears it; otherwise not empty, and
 * copied. */
static int set_str(char **field, const char *what, const char *v) {
  if (v != NULL && (*v == '\0' || strlen(v) > 4096))
    return rlock__err(RLOCK_EINVAL,
                      "%s must not be empty or longer than "
                      "4096 bytes",
                      what);
  char *copy = NULL;
  if (v != NULL && (copy = rlock__strdup(v)) == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  free(*field);
  *field = copy;
  return RLOCK_OK;
}

int rlock_config_set_subscription_linger(rlock_config *cfg, int64_t ms,
                                         int max_idle) {
  CHECK_CFG(cfg, "rlock_config_set_subscription_linger");
  int rc = check_range("subscription linger", ms, 0, 3600 * 1000);
  if (rc != RLOCK_OK)
    return rc;
  if (max_idle < 0 || max_idle > 100000)
    return rlock__err(RLOCK_EINVAL,
                      "idle subscriptions must be 0..100000 "
                      "(got %d)",
                      max_idle);
  cfg->linger_ms = ms;
  cfg->max_idle_subs = max_idle;
  return RLOCK_OK;
}

int rlock_config_set_metrics_names(rlock_config *cfg, int max_names) {
  CHECK_CFG(cfg, "rlock_config_set_metrics_names");
  if (max_names < 0 || max_names > RLOCK_METRICS_NAMES_MAX)
    return rlock__err(RLOCK_EINVAL, "metrics names must be 0..%d (got %d)",
                      RLOCK_METRICS_NAMES_MAX, max_names);
  cfg->metrics_names = max_names;
  return RLOCK_OK;
}

int rlock_config_set_registry_period(rlock_config *cfg, int64_t period_ms) {
  CHECK_CFG(cfg, "rlock_config_set_registry_period");
  if (period_ms != 0 && (period_ms < 100 || period_ms > 3600000))
    return rlock__err(RLOCK_EINVAL,
                      "registry period must be 0 (off) or 100..3600000 ms "
                      "(got %" PRId64 ")",
                      period_ms);
  cfg->registry_period_ms = period_ms;
  return RLOCK_OK;
}

int rlock_config_set_program(rlock_config *cfg, const char *program) {
  CHECK_CFG(cfg, "rlock_config_set_program");
  if (program != NULL &&
      (*program == '\0' || strlen(program) > RLOCK_PROGRAM_MAX))
    return rlock__err(RLOCK_EINVAL,
                      "program must not be empty or longer than %d bytes",
                      RLOCK_PROGRAM_MAX);
  snprintf(cfg->program, sizeof cfg->program, "%s", program ? program : "");
  return RLOCK_OK;
}

int rlock_config_set_tls_ca(rlock_config *cfg, const char *ca_file,
                            const char *ca_dir) {
  CHECK_CFG(cfg, "rlock_config_set_tls_ca");
  if ((ca_file && (!*ca_file || strlen(ca_file) > 4096)) ||
      (ca_dir && (!*ca_dir || strlen(ca_dir) > 4096)))
    return rlock__err(RLOCK_EINVAL, "TLS CA file and directory must not be "
                                    "empty or longer than 4096 bytes");
  int rc = set_str(&cfg->tls.ca_file, "TLS CA file", ca_file);
  return rc == RLOCK_OK ? set_str(&cfg->tls.ca_dir, "TLS CA directory", ca_dir)
                        : rc;
}

int rlock_config_set_tls_cert(rlock_config *cfg, const char *cert_file,
                              const char *key_file) {
  CHECK_CFG(cfg, "rlock_config_set_tls_cert");
  if ((cert_file == NULL) != (key_file == NULL))
    return rlock__err(RLOCK_EINVAL,
                      "a TLS client certificate needs both the "
                      "certificate and its key file (or neither)");
  if ((cert_file && (!*cert_file || strlen(cert_file) > 4096)) ||
      (key_file && (!*key_file || strlen(key_file) > 4096)))
    return rlock__err(RLOCK_EINVAL, "TLS certificate and key file must not "
                                    "be empty or longer than 4096 bytes");
  int rc = set_str(&cfg->tls.cert_file, "TLS certificate file", cert_file);
  return rc == RLOCK_OK ? set_str(&cfg->tls.key_file, "TLS key file", key_file)
                        : rc;
}

int rlock_config_set_tls_server_name(rlock_config *cfg, const char *name) {
  CHECK_CFG(cfg, "rlock_config_set_tls_server_name");
  return set_str(&cfg->tls.server_name, "TLS server name", name);
}

int rlock_config_set_tls_insecure(rlock_config *cfg, int insecure) {
  CHECK_CFG(cfg, "rlock_config_set_tls_insecure");
  if (insecure != 0 && insecure != 1)
    return rlock__err(RLOCK_EINVAL, "insecure must be 0 or 1 (got %d)",
                      insecure);
  cfg->tls_insecure = insecure;
  return RLOCK_OK;
}

int rlock_config_set_password(rlock_config *cfg, const char *user,
                              const char *password) {
  CHECK_CFG(cfg, "rlock_config_set_password");
  if (password == NULL && user != NULL)
    return rlock__err(RLOCK_EINVAL, "a user needs a password");
  if ((user && (!*user || strlen(user) > 4096)) ||
      (password && strlen(password) > 4096))
    return rlock__err(RLOCK_EINVAL, "user must not be empty; user and "
                                    "password at most 4096 bytes");
  char *u = NULL, *p = NULL;
  if (rlock__dup_opt(&u, user) || rlock__dup_opt(&p, password)) {
    free(u);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  free(cfg->user);
  free(cfg->password);
  cfg->user = u;
  cfg->password = p;
  cfg->password_set = password != NULL;
  return RLOCK_OK;
}

int rlock_config_set_pubsub_mode(rlock_config *cfg, int mode) {
  CHECK_CFG(cfg, "rlock_config_set_pubsub_mode");
  if (mode != RLOCK_PUBSUB_AUTO && mode != RLOCK_PUBSUB_CLASSIC &&
      mode != RLOCK_PUBSUB_SHARDED)
    return rlock__err(RLOCK_EINVAL,
                      "pub/sub mode must be RLOCK_PUBSUB_AUTO, "
                      "_CLASSIC or _SHARDED (got %d)",
                      mode);
  cfg->pubsub_mode = mode;
  return RLOCK_OK;
}

int rlock_config_set_fair_deferred_shift(rlock_config *cfg, int on) {
  CHECK_CFG(cfg, "rlock_config_set_fair_deferred_shift");
  cfg->fair_deferred_shift = on != 0;
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
