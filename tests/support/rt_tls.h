/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_tls.h - certificates for TLS tests, made with the openssl command in
 * a fresh temporary directory: a CA, a server certificate it signs for
 * 127.0.0.1 and localhost, the same server key with an expired
 * certificate and with one for another name only, a client certificate,
 * and a second CA that signed none of them.
 */
#ifndef RT_TLS_H
#define RT_TLS_H

#include <stdbool.h>

typedef struct rt_tls {
  char dir[256];
  char ca[320], other_ca[320];
  char ca_dir[320]; /* ca.crt alone, hashed (openssl rehash) */
  char server_crt[320], server_key[320];
  char expired_crt[320], other_name_crt[320];
  char client_crt[320], client_key[320];
} rt_tls;

/* Make every file; fails the test (printing openssl's output) when the
 * openssl command is missing or fails. */
void rt_tls_make(rt_tls *t);

/* The arguments that give a redis-server a TLS port too: a free port,
 * written to *tls_port and as text to `port`, with t's server
 * certificate and CA; client certificates required when `auth_clients`
 * is "yes". RT_TLS_ARGS entries of `out`, the last NULL. */
#define RT_TLS_ARGS 11
void rt_tls_args(const rt_tls *t, int *tls_port, char port[16],
                 const char *auth_clients, const char **out);

/* Start a redis-server (rt_server.h) with those arguments. */
struct rt_server;
struct rt_server *rt_tls_server_start(const rt_tls *t, int *tls_port,
                                      const char *auth_clients);

/* Remove the directory and everything in it. */
void rt_tls_remove(rt_tls *t);

#endif
