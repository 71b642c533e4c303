/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls.h - TLS under a connection's byte stream (OpenSSL).
 *
 * One rlock__tls per client and kind of server (data nodes, sentinels):
 * an SSL_CTX with the trust store, the client certificate, TLS 1.2 as the
 * minimum, and whether to verify. It is built once, when the client is
 * created (so a missing CA file is an error there, not at the first
 * lock), and shared read-only by every connection of the client, on any
 * thread (OpenSSL 1.1+ makes that safe).
 *
 * A TLS connection keeps its driver's model: OpenSSL reads and writes the
 * socket through a BIO of our own that sends with MSG_NOSIGNAL (a library
 * must not raise SIGPIPE) and reads either without waiting or, for a
 * blocking connection's command waiting for its reply (conn.c, whose
 * socket stays in blocking mode), with one recv() under the socket's
 * SO_RCVTIMEO, as a plain connection does. A loop connection
 * (loop/lconn.c) only ever reads and writes without waiting.
 */
#ifndef RLOCK_TLS_H
#define RLOCK_TLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What a URL's parameters and the config's setters say about TLS. The
 * strings are owned (rlock__tls_opts_clear frees them). */
typedef struct rlock__tls_opts {
  char *ca_file; /* NULL and ca_dir NULL: the system's trust store */
  char *ca_dir;
  char *cert_file; /* a client certificate (chain), with key_file */
  char *key_file;
  char *server_name; /* checked instead of the host connected to */
  int insecure;      /* 1: no verification at all (asked explicitly) */
} rlock__tls_opts;

int rlock__tls_opts_copy(rlock__tls_opts *dst, const rlock__tls_opts *src);
void rlock__tls_opts_clear(rlock__tls_opts *o);
/* 1 when any option is set (they mean nothing without TLS). */
int rlock__tls_opts_any(const rlock__tls_opts *o);

typedef struct rlock__tls rlock__tls;

/* Build a context from `o`: RLOCK_OK, RLOCK_EINVAL naming the file that
 * could not be used and why, or RLOCK_ENOMEM. */
int rlock__tls_new(rlock__tls **out, const rlock__tls_opts *o);
void rlock__tls_free(rlock__tls *t);

/* One TLS session on a connected socket. */
typedef struct rlock__tls_conn rlock__tls_conn;

/* The handshake in steps, which never wait (dial.c drives them for both
 * drivers): start a session on connected `fd`, checking the certificate
 * against `host` (or the configured server name) unless insecure, then
 * call rlock__tls_step whenever the socket is ready for what it wants: 1
 * when the handshake is done, 0 with *want (POLLIN or POLLOUT) to go on,
 * or a status with the last error set (RLOCK_EIO with a message saying
 * what failed: a certificate that does not verify and why, a host name
 * mismatch, a server that does not speak TLS). When the caller's deadline
 * passes first, rlock__tls_timed_out words it (RLOCK_ETIMEOUT). Close
 * the session with rlock__tls_close either way. */
int rlock__tls_start(rlock__tls_conn **out, const rlock__tls *t, int fd,
                     const char *host);
int rlock__tls_step(rlock__tls_conn *s, const char *where, short *want);
int rlock__tls_timed_out(rlock__tls_conn *s, const char *where);

/* Close the session (no close_notify wait) and free it. NULL ignored. */
void rlock__tls_close(rlock__tls_conn *s);

/* Move bytes as conn.c's stream functions do: > 0 bytes, 0 end of
 * stream, -1 with errno (EAGAIN: wait for *want, POLLIN or POLLOUT, and
 * try again; ETIMEDOUT: a waiting read hit the socket's SO_RCVTIMEO).
 * `wait` lets the read block in recv() under SO_RCVTIMEO. */
ssize_t rlock__tls_read(rlock__tls_conn *s, char *buf, size_t len, int wait,
                        short *want);
ssize_t rlock__tls_write(rlock__tls_conn *s, const char *buf, size_t len,
                         short *want);

/* Decrypted bytes OpenSSL holds that a read returns without the socket
 * being readable. */
int rlock__tls_pending(const rlock__tls_conn *s);

#endif /* RLOCK_TLS_H */
