/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_int.h - the definition behind the opaque rlock_config.
 */
#ifndef RLOCK_CONFIG_INT_H
#define RLOCK_CONFIG_INT_H

#include <stdint.h>

#include "target.h"
#include "rlock/config.h"

#define RLOCK_DEFAULT_URL "redis://127.0.0.1:6379"

struct rlock_config {
  rlock__target target;    /* from the URL */
  int pubsub_mode;         /* rlock_pubsub_mode, or -1: the URL's */
  int sync_replicas;       /* confirm writes with WAIT where replicas exist */
  int fair_deferred_shift; /* fair locks: the deadline shift left pending */
  int64_t replica_sync_timeout_ms;
  int64_t connect_timeout_ms;
  int64_t command_timeout_ms;
  int64_t watchdog_timeout_ms;
  int64_t fair_wait_timeout_ms;
  int64_t unreachable_retry_ms; /* RLOCK_RETRY_FOREVER, or 0.. */
  int pool_size;
  int64_t linger_ms; /* rlock_config_set_subscription_linger */
  int max_idle_subs;
  int metrics_names;          /* rlock_config_set_metrics_names */
  int64_t registry_period_ms; /* rlock_config_set_registry_period; 0: off */
  /* rlock_config_set_program: the text the registry names the program
   * by, or "" for the process's command line (kinds/registry.c) */
  char program[RLOCK_PROGRAM_MAX + 1];
  rlock_lost_fn lost_fn;
  void *lost_userdata;
  rlock_log_fn log_fn;
  void *log_userdata;
  int log_level;
  /* The setters' TLS options: each non-NULL one overrides the URL's. */
  rlock__tls_opts tls;
  int tls_insecure; /* -1: the URL's */
  /* rlock_config_set_password: overrides the URL's data credentials. */
  int password_set;
  char *user, *password;
};

/* Fill `cfg` with the defaults; RLOCK_ENOMEM on failure. */
int rlock__config_defaults(rlock_config *cfg);

/* Deep copy into zeroed `dst`. */
int rlock__config_copy(rlock_config *dst, const rlock_config *src);

/* Free what `cfg` owns (not cfg itself). */
void rlock__config_clear(rlock_config *cfg);

/* Apply the setters' TLS options and password to cfg->target (a client's
 * own copy): RLOCK_OK, RLOCK_EINVAL (TLS options without a TLS URL) or
 * RLOCK_ENOMEM. */
int rlock__config_apply(rlock_config *cfg);

#endif /* RLOCK_CONFIG_INT_H */
