/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_tls.c - test certificates made with the openssl command (rt_tls.h).
 * EC P-256 keys: quick to make, and what a managed service would issue.
 */
#include "rt_tls.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_proc.h"
#include "rt_server.h"
#include "rt_util.h"

#define KEY "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"

/* Run one shell command in t->dir; fail the test with its output. */
static void sh(const rt_tls *t, const char *fmt, ...) {
  char cmd[2048], full[2600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  snprintf(full, sizeof full, "cd '%s' && (%s) >>openssl.log 2>&1", t->dir,
           cmd);
  if (system(full) != 0) {
    char log[512];
    snprintf(log, sizeof log, "cat '%s/openssl.log' >&2", t->dir);
    if (system(log) != 0) { /* nothing more to show */
    }
    fail_msg("openssl failed: %s", cmd);
  }
}

static void path(const rt_tls *t, char *out, const char *file) {
  snprintf(out, 320, "%s/%s", t->dir, file);
}

void rt_tls_make(rt_tls *t) {
  memset(t, 0, sizeof *t);
  snprintf(t->dir, sizeof t->dir, "/tmp/rlock-tls-XXXXXX");
  if (mkdtemp(t->dir) == NULL)
    fail_msg("mkdtemp failed");
  sh(t, "openssl req -x509 " KEY " -keyout ca.key -out ca.crt -days 2 "
        "-subj '/CN=rlock test CA'");
  sh(t, "openssl req -x509 " KEY " -keyout other.key -out other-ca.crt "
        "-days 2 -subj '/CN=rlock other CA'");
  sh(t, "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' >san.ext; "
        "printf 'subjectAltName=DNS:other.example\\n' >other.ext");
  sh(t, "openssl req " KEY " -keyout server.key -out server.csr "
        "-subj '/CN=localhost'");
  sh(t, "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key "
        "-CAcreateserial -days 2 -extfile san.ext -out server.crt");
  /* notAfter a day before notBefore: expired from the start. */
  sh(t, "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key "
        "-CAcreateserial -days -1 -extfile san.ext -out expired.crt");
  sh(t, "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key "
        "-CAcreateserial -days 2 -extfile other.ext -out other-name.crt");
  sh(t, "openssl req " KEY " -keyout client.key -out client.csr "
        "-subj '/CN=rlock test client'");
  sh(t, "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key "
        "-CAcreateserial -days 2 -out client.crt");
  sh(t, "mkdir ca-dir && cp ca.crt ca-dir/ && openssl rehash ca-dir");
  path(t, t->ca_dir, "ca-dir");
  path(t, t->ca, "ca.crt");
  path(t, t->other_ca, "other-ca.crt");
  path(t, t->server_crt, "server.crt");
  path(t, t->server_key, "server.key");
  path(t, t->expired_crt, "expired.crt");
  path(t, t->other_name_crt, "other-name.crt");
  path(t, t->client_crt, "client.crt");
  path(t, t->client_key, "client.key");
}

void rt_tls_remove(rt_tls *t) {
  if (t->dir[0] != '\0')
    rt_proc_remove_tree(t->dir);
  t->dir[0] = '\0';
}

void rt_tls_args(const rt_tls *t, int *tls_port, char port[16],
                 const char *auth_clients, const char **out) {
  *tls_port = rt_free_port();
  snprintf(port, 16, "%d", *tls_port);
  const char *const args[RT_TLS_ARGS] = {"--tls-port",
                                         port,
                                         "--tls-cert-file",
                                         t->server_crt,
                                         "--tls-key-file",
                                         t->server_key,
                                         "--tls-ca-cert-file",
                                         t->ca,
                                         "--tls-auth-clients",
                                         auth_clients,
                                         NULL};
  memcpy(out, args, sizeof args);
}

rt_server *rt_tls_server_start(const rt_tls *t, int *tls_port,
                               const char *auth_clients) {
  char port[16];
  const char *args[RT_TLS_ARGS];
  rt_tls_args(t, tls_port, port, auth_clients, args);
  return rt_server_start(args);
}
