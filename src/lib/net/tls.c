/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls.c - TLS contexts and sessions over our own socket BIO (tls.h).
 */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "common.h"
#include "conn.h"

struct rlock__tls {
  SSL_CTX *ctx;
  char *server_name;
  int insecure;
  /* Held around each handshake step. Verifying a chain caches derived
   * fields into the CA certificates the context shares (OpenSSL 3.0 does
   * so under the certificate's lock, but reads them without it): two
   * handshakes at once, two threads' first connections or the background
   * thread's beside a caller's, were a data race. A step never blocks
   * (the socket is non-blocking then), so the lock is held briefly. */
  pthread_mutex_t handshake_mu;
};

struct rlock__tls_conn {
  rlock__tls *t; /* its context, for the handshake lock */
  SSL *ssl;
  int fd;
  int wait; /* the BIO's reads may block (under SO_RCVTIMEO) */
};

/* ---- options ------------------------------------------------------------ */

int rlock__tls_opts_copy(rlock__tls_opts *dst, const rlock__tls_opts *src) {
  memset(dst, 0, sizeof *dst);
  dst->insecure = src->insecure;
  if (rlock__dup_opt(&dst->ca_file, src->ca_file) ||
      rlock__dup_opt(&dst->ca_dir, src->ca_dir) ||
      rlock__dup_opt(&dst->cert_file, src->cert_file) ||
      rlock__dup_opt(&dst->key_file, src->key_file) ||
      rlock__dup_opt(&dst->server_name, src->server_name)) {
    rlock__tls_opts_clear(dst);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  return RLOCK_OK;
}

void rlock__tls_opts_clear(rlock__tls_opts *o) {
  free(o->ca_file);
  free(o->ca_dir);
  free(o->cert_file);
  free(o->key_file);
  free(o->server_name);
  memset(o, 0, sizeof *o);
}

int rlock__tls_opts_any(const rlock__tls_opts *o) {
  return o->ca_file || o->ca_dir || o->cert_file || o->key_file ||
         o->server_name || o->insecure;
}

/* The reason of OpenSSL's oldest queued error ("certificate verify
 * failed"), clearing the queue; `fallback` when there is none. */
static const char *ssl_reason(const char *fallback) {
  unsigned long e = ERR_get_error();
  const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;
  ERR_clear_error();
  return r != NULL ? r : fallback;
}

/* ---- contexts ----------------------------------------------------------- */

static int load_files(SSL_CTX *ctx, const rlock__tls_opts *o) {
  if (o->ca_file != NULL || o->ca_dir != NULL) {
    if (SSL_CTX_load_verify_locations(ctx, o->ca_file, o->ca_dir) != 1)
      return rlock__err(RLOCK_EINVAL, "TLS: cannot use CA %s '%s': %s",
                        o->ca_file ? "file" : "directory",
                        o->ca_file ? o->ca_file : o->ca_dir,
                        ssl_reason("unreadable"));
  } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
    return rlock__err(RLOCK_EINVAL,
                      "TLS: cannot use the system's trust "
                      "store: %s",
                      ssl_reason("unknown error"));
  }
  if ((o->cert_file == NULL) != (o->key_file == NULL))
    return rlock__err(RLOCK_EINVAL, "TLS: a client certificate needs both "
                                    "the certificate and its key file");
  if (o->cert_file == NULL)
    return RLOCK_OK;
  if (SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) != 1)
    return rlock__err(RLOCK_EINVAL,
                      "TLS: cannot use certificate file '%s': "
                      "%s",
                      o->cert_file, ssl_reason("unreadable"));
  if (SSL_CTX_use_PrivateKey_file(ctx, o->key_file, SSL_FILETYPE_PEM) != 1)
    return rlock__err(RLOCK_EINVAL, "TLS: cannot use key file '%s': %s",
                      o->key_file, ssl_reason("unreadable"));
  if (SSL_CTX_check_private_key(ctx) != 1)
    return rlock__err(RLOCK_EINVAL,
                      "TLS: key file '%s' does not match "
                      "certificate '%s'",
                      o->key_file, o->cert_file);
  return RLOCK_OK;
}

int rlock__tls_new(rlock__tls **out, const rlock__tls_opts *o) {
  *out = NULL;
  rlock__tls *t = rlock__calloc(1, sizeof *t);
  if (t == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  pthread_mutex_init(&t->handshake_mu, NULL);
  if ((t->ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
      rlock__dup_opt(&t->server_name, o->server_name) != 0) {
    rlock__tls_free(t);
    ERR_clear_error();
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  t->insecure = o->insecure;
  SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
  /* conn.c resends the same bytes after a partial write. */
  SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                               SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_verify(t->ctx, t->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                     NULL);
  int rc = load_files(t->ctx, o);
  if (rc != RLOCK_OK) {
    rlock__tls_free(t);
    return rc;
  }
  *out = t;
  return RLOCK_OK;
}

void rlock__tls_free(rlock__tls *t) {
  if (t == NULL)
    return;
  SSL_CTX_free(t->ctx);
  free(t->server_name);
  pthread_mutex_destroy(&t->handshake_mu);
  free(t);
}

/* ---- the socket BIO ----------------------------------------------------- */

static int bio_write(BIO *b, const char *buf, int len) {
  rlock__tls_conn *s = BIO_get_data(b);
  BIO_clear_retry_flags(b);
  ssize_t n;
  do
    n = send(s->fd, buf, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    BIO_set_retry_write(b);
  return (int)n;
}

static int bio_read(BIO *b, char *buf, int len) {
  rlock__tls_conn *s = BIO_get_data(b);
  BIO_clear_retry_flags(b);
  ssize_t n;
  do
    n = recv(s->fd, buf, (size_t)len, s->wait ? 0 : MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    BIO_set_retry_read(b); /* nothing yet, or SO_RCVTIMEO ran out */
  return (int)n;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr) {
  (void)b, (void)num, (void)ptr;
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *b) {
  BIO_set_init(b, 1);
  return 1;
}

static int bio_destroy(BIO *b) {
  (void)b;
  return 1;
}

static BIO_METHOD *sock_method;
static pthread_once_t sock_method_once = PTHREAD_ONCE_INIT;

static void make_sock_method(void) {
  BIO_METHOD *m =
      BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "rlock socket");
  if (m != NULL && BIO_meth_set_write(m, bio_write) == 1 &&
      BIO_meth_set_read(m, bio_read) == 1 &&
      BIO_meth_set_ctrl(m, bio_ctrl) == 1 &&
      BIO_meth_set_create(m, bio_create) == 1 &&
      BIO_meth_set_destroy(m, bio_destroy) == 1)
    sock_method = m; /* kept for the life of the process */
  else
    BIO_meth_free(m);
}

/* ---- sessions ----------------------------------------------------------- */

static int is_ip(const char *s) {
  unsigned char b[16];
  return inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1;
}

/* Ask for the peer's identity: `name` as a DNS name (with SNI) or as an
 * IP address. */
static int expect_name(SSL *ssl, const char *name, int verify) {
  if (is_ip(name))
    return !verify ||
           X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1;
  return SSL_set_tlsext_host_name(ssl, name) == 1 &&
         (!verify || SSL_set1_host(ssl, name) == 1);
}

/* Why a handshake failed. Final (rlock__error_final) where trying again
 * would meet the same answer: a wait that rode it out would retry in
 * silence for ever. */
static int handshake_failed(SSL *ssl, const char *where, int timed_out) {
  long v = timed_out ? X509_V_OK : SSL_get_verify_result(ssl);
  unsigned long e = ERR_peek_error();
  int plain = ERR_GET_LIB(e) == ERR_LIB_SSL &&
              (ERR_GET_REASON(e) == SSL_R_WRONG_VERSION_NUMBER ||
               ERR_GET_REASON(e) == SSL_R_PACKET_LENGTH_TOO_LONG);
  if (!timed_out && v == X509_V_OK && !plain)
    return rlock__err(
        RLOCK_EIO, "TLS handshake with redis %s failed: %s", where,
        ssl_reason(errno ? strerror(errno) : "connection closed"));
  ERR_clear_error();
  if (timed_out) /* the server took the connection and never answered the
                    hello: a plain-text Redis waits for the end of an
                    inline command there, like the answer below */
    rlock__err(RLOCK_ETIMEOUT,
               "TLS handshake with redis %s did not "
               "finish in time (a plain-text port? then use "
               "redis://)",
               where);
  else if (v != X509_V_OK) /* trying again meets the same certificate */
    rlock__err(RLOCK_EIO,
               "TLS handshake with redis %s failed: "
               "certificate verify failed: %s",
               where, X509_verify_cert_error_string(v));
  else
    rlock__err(RLOCK_EIO,
               "TLS handshake with redis %s failed: the "
               "server does not speak TLS there (a plain-text port? "
               "then use redis://)",
               where);
  rlock__error_final();
  return timed_out ? RLOCK_ETIMEOUT : RLOCK_EIO;
}

int rlock__tls_start(rlock__tls_conn **out, const rlock__tls *t, int fd,
                     const char *host) {
  *out = NULL;
  pthread_once(&sock_method_once, make_sock_method);
  rlock__tls_conn *s = rlock__calloc(1, sizeof *s);
  BIO *bio = NULL;
  if (s == NULL || sock_method == NULL || (s->ssl = SSL_new(t->ctx)) == NULL ||
      (bio = BIO_new(sock_method)) == NULL) {
    rlock__tls_close(s);
    ERR_clear_error();
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  s->fd = fd;
  s->t = (rlock__tls *)t; /* only its lock is written */
  BIO_set_data(bio, s);
  SSL_set_bio(s->ssl, bio, bio);
  const char *name = t->server_name ? t->server_name : host;
  if (name != NULL && !expect_name(s->ssl, name, !t->insecure)) {
    rlock__tls_close(s);
    ERR_clear_error();
    return rlock__err(RLOCK_EINVAL,
                      "TLS: cannot check the server's name "
                      "'%s'",
                      name);
  }
  ERR_clear_error();
  *out = s;
  return RLOCK_OK;
}

int rlock__tls_step(rlock__tls_conn *s, const char *where, short *want) {
  errno = 0;
  pthread_mutex_lock(&s->t->handshake_mu);
  int r = SSL_connect(s->ssl);
  int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(s->ssl, r);
  pthread_mutex_unlock(&s->t->handshake_mu);
  if (r == 1)
    return 1;
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    *want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
    return 0;
  }
  return handshake_failed(s->ssl, where, 0);
}

int rlock__tls_timed_out(rlock__tls_conn *s, const char *where) {
  return handshake_failed(s->ssl, where, 1);
}

void rlock__tls_close(rlock__tls_conn *s) {
  if (s == NULL)
    return;
  SSL_free(s->ssl); /* frees the BIO too */
  free(s);
}

/* What a failed SSL_read/SSL_write means, as -1 with errno (or 0 for end
 * of stream). */
static ssize_t failed(rlock__tls_conn *s, int r, short *want) {
  int e = SSL_get_error(s->ssl, r);
  switch (e) {
  case SSL_ERROR_WANT_READ:
    *want = POLLIN;
    errno = EAGAIN;
    return -1;
  case SSL_ERROR_WANT_WRITE:
    *want = POLLOUT;
    errno = EAGAIN;
    return -1;
  case SSL_ERROR_ZERO_RETURN:
    return 0; /* close_notify: end of stream */
  case SSL_ERROR_SYSCALL:
    ERR_clear_error();
    if (errno == 0)
      return 0; /* closed without close_notify */
    return -1;
  default:
    /* A TLS alert (a client certificate the server wants and did not
     * get, ...): say which in the connection's error. */
    rlock__err(RLOCK_EIO, "%s", ssl_reason("TLS failure"));
    errno = EPROTO;
    return -1;
  }
}

ssize_t rlock__tls_read(rlock__tls_conn *s, char *buf, size_t len, int wait,
                        short *want) {
  s->wait = wait;
  ERR_clear_error();
  errno = 0;
  int r = SSL_read(s->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
  s->wait = 0;
  *want = POLLIN;
  return r > 0 ? r : failed(s, r, want);
}

ssize_t rlock__tls_write(rlock__tls_conn *s, const char *buf, size_t len,
                         short *want) {
  ERR_clear_error();
  errno = 0;
  int r = SSL_write(s->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
  *want = POLLOUT;
  return r > 0 ? r : failed(s, r, want);
}

int rlock__tls_pending(const rlock__tls_conn *s) {
  return SSL_pending(s->ssl) > 0;
}
