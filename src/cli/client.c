/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * client.c - a library client and lock object built from the global
 * options, with each failure reported once and mapped to an exit status.
 */
#include "cli.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* Whether the parameter at p (up to '=') names a secret: any name ending
 * in "password" (sentinel_password=, ...), case aside. */
static int secret_param(const char *p, size_t len) {
  static const char suffix[] = "password";
  size_t n = sizeof suffix - 1;
  return len >= n && strncasecmp(p + len - n, suffix, n) == 0;
}

const char *cli_redact_url(const char *url, char *buf, size_t size) {
  const char *scheme = strstr(url, "://");
  const char *host = scheme ? scheme + 3 : url;
  const char *at = strchr(host, '@');
  const char *colon = at ? memchr(host, ':', (size_t)(at - host)) : NULL;
  size_t k = 0;
  /* Append n bytes of s (n < 0: all of it), truncating at size - 1. */
#define PUT(s, n)                                                              \
  do {                                                                         \
    const char *s_ = (s);                                                      \
    size_t n_ = (n) < 0 ? strlen(s_) : (size_t)(n);                            \
    for (size_t i_ = 0; i_ < n_ && k + 1 < size; i_++)                         \
      buf[k++] = s_[i_];                                                       \
  } while (0)
  const char *p = url;
  if (colon != NULL) { /* user:password@ */
    PUT(url, colon - url + 1);
    PUT("***", -1);
    p = at;
  }
  const char *query = strchr(p, '?');
  if (query == NULL) {
    PUT(p, -1);
  } else {
    PUT(p, query - p + 1);
    for (const char *q = query + 1; *q != '\0';) {
      size_t len = strcspn(q, "&#");
      const char *eq = memchr(q, '=', len);
      if (eq != NULL && secret_param(q, (size_t)(eq - q))) {
        PUT(q, eq - q + 1);
        PUT("***", -1);
      } else {
        PUT(q, (ptrdiff_t)len);
      }
      q += len;
      if (*q == '#') {
        PUT(q, -1);
        break;
      }
      if (*q == '&')
        PUT(q++, 1);
    }
  }
#undef PUT
  if (size > 0)
    buf[k] = '\0';
  return buf;
}

/* TLS files and the password, for every server. */
static int secure(rlock_config *cfg, const cli_global *g) {
  struct stat st;
  int dir =
      g->tls_ca != NULL && stat(g->tls_ca, &st) == 0 && S_ISDIR(st.st_mode);
  int rc = RLOCK_OK;
  if (g->tls_ca != NULL)
    rc = rlock_config_set_tls_ca(cfg, dir ? NULL : g->tls_ca,
                                 dir ? g->tls_ca : NULL);
  if (rc == RLOCK_OK && g->tls_cert != NULL)
    rc = rlock_config_set_tls_cert(cfg, g->tls_cert, g->tls_key);
  if (rc == RLOCK_OK && g->tls_insecure)
    rc = rlock_config_set_tls_insecure(cfg, 1);
  if (rc == RLOCK_OK && g->tls_server_name != NULL)
    rc = rlock_config_set_tls_server_name(cfg, g->tls_server_name);
  if (rc == RLOCK_OK && g->password != NULL)
    rc = rlock_config_set_password(cfg, g->user, g->password);
  return rc == RLOCK_OK ? 0 : cli_usage("%s", rlock_error_last()->message);
}

/* Apply the global options for server `url`; returns 0 or an exit status.
 * A bad URL or watchdog is the user's typing, so it is a usage error. */
static int configure(rlock_config *cfg, const cli_global *g, const char *url,
                     rlock_lost_fn lost, void *ud) {
  char shown[512];
  if (url != NULL && rlock_config_set_url(cfg, url) != RLOCK_OK)
    return cli_usage(
        "invalid %s '%s': %s", g->url_from_env ? "$RLOCK_URL" : "URL",
        cli_redact_url(url, shown, sizeof shown), rlock_error_last()->message);
  if (g->watchdog_ms != 0 &&
      rlock_config_set_watchdog_timeout_ms(cfg, g->watchdog_ms) != RLOCK_OK)
    return cli_usage("invalid --watchdog: %s", rlock_error_last()->message);
  if (g->retry_set &&
      rlock_config_set_unreachable_retry_ms(cfg, g->retry_ms) != RLOCK_OK)
    return cli_usage("invalid --retry-for: %s", rlock_error_last()->message);
  if (g->connect_timeout_ms != 0 && rlock_config_set_connect_timeout_ms(
                                        cfg, g->connect_timeout_ms) != RLOCK_OK)
    return cli_usage("invalid --connect-timeout: %s",
                     rlock_error_last()->message);
  if (g->command_timeout_ms != 0 && rlock_config_set_command_timeout_ms(
                                        cfg, g->command_timeout_ms) != RLOCK_OK)
    return cli_usage("invalid --command-timeout: %s",
                     rlock_error_last()->message);
  if ((g->program != NULL
           ? rlock_config_set_program(cfg, g->program)
           : rlock_config_set_registry_period(cfg, 0)) != RLOCK_OK)
    return cli_lib_error(rlock_error_last()->code);
  if (rlock_config_set_log(cfg, cli_notice_log, RLOCK_LOG_WARN, NULL) !=
      RLOCK_OK)
    return cli_lib_error(rlock_error_last()->code);
  int status = secure(cfg, g);
  if (status != 0)
    return status;
  int rc = rlock_config_set_lost_callback(cfg, lost, ud);
  return rc == RLOCK_OK ? 0 : cli_lib_error(rc);
}

int cli_lock_new(cli_kind kind, rlock_lock **lock, rlock_client *client,
                 const char *name) {
  switch (kind) {
  case CLI_FAIR:
    return rlock_lock_new_fair(lock, client, name);
  case CLI_READ:
    return rlock_lock_new_read(lock, client, name);
  case CLI_WRITE:
    return rlock_lock_new_write(lock, client, name);
  case CLI_FENCED:
    return rlock_lock_new_fenced(lock, client, name);
  case CLI_SPIN:
    return rlock_lock_new_spin(lock, client, name);
  default:
    return rlock_lock_new(lock, client, name);
  }
}

int cli_client_new(const cli_global *g, const char *url, rlock_lost_fn lost,
                   void *ud, rlock_client **client) {
  rlock_config *cfg;
  *client = NULL;
  int rc = rlock_config_new(&cfg);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc);
  int status = configure(cfg, g, url, lost, ud);
  /* Refused options (TLS ones on a URL without TLS, a CA file that cannot
   * be read) are the user's typing too. */
  if (status == 0 && (rc = rlock_client_new(client, cfg)) != RLOCK_OK)
    status = rc == RLOCK_EINVAL ? cli_usage("%s", rlock_error_last()->message)
                                : cli_lib_error(rc);
  rlock_config_free(cfg);
  return status;
}

int cli_open(const cli_global *g, const char *name, cli_kind kind,
             rlock_lost_fn lost, void *ud, rlock_client **client,
             rlock_lock **lock) {
  int rc;
  *lock = NULL;
  int status = cli_client_new(g, g->url, lost, ud, client);
  if (status == 0) {
    rc = cli_lock_new(kind, lock, *client, name);
    if (rc != RLOCK_OK)
      status = cli_lib_error(rc); /* a bad name: EX_DATAERR */
  }
  if (status != 0) {
    rlock_client_free(*client);
    *client = NULL;
  }
  return status;
}

void cli_close(rlock_client *client, rlock_lock *lock) {
  rlock_lock_free(lock);
  rlock_client_free(client);
}
