/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * url.c - where the bench's bare hiredis connections go, from a -u URL
 * (the grammar is in bench.h). The library parses the same URLs for its
 * own clients; the bench keeps its own small parser so that it uses only
 * the library's public API.
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Copy [s, s+n) into out (size bytes), decoding %XX. 0, or -1. */
static int decode(char *out, size_t size, const char *s, size_t n) {
  size_t o = 0;
  for (size_t i = 0; i < n; i++, o++) {
    if (o + 1 >= size)
      return -1;
    out[o] = s[i];
    if (s[i] != '%')
      continue;
    int h = i + 2 < n ? hexval(s[i + 1]) : -1;
    int l = i + 2 < n ? hexval(s[i + 2]) : -1;
    if (h < 0 || l < 0)
      return -1;
    out[o] = (char)(h * 16 + l);
    i += 2;
  }
  out[o] = '\0';
  return 0;
}

/* A decimal in [lo, hi] spanning exactly [s, s+n). 0, or -1. */
static int number(const char *s, size_t n, long lo, long hi, int *out) {
  long v = 0;
  if (n == 0 || n > 10)
    return -1;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  if (v < lo || v > hi)
    return -1;
  *out = (int)v;
  return 0;
}

/* "[user]:password@" at the front of [*s, end), if there: advances *s. */
static int userinfo(bench_url *u, const char **s, const char *end) {
  const char *at = memchr(*s, '@', (size_t)(end - *s));
  if (at == NULL)
    return 0;
  const char *colon = memchr(*s, ':', (size_t)(at - *s));
  if (colon == NULL)
    return bench_fail("URL credentials must be [user]:password@"), -1;
  if (decode(u->user, sizeof u->user, *s, (size_t)(colon - *s)) != 0 ||
      decode(u->password, sizeof u->password, colon + 1,
             (size_t)(at - colon - 1)) != 0)
    return bench_fail("URL credentials: a bad %%-escape, or too long"), -1;
  u->has_password = 1;
  *s = at + 1;
  return 0;
}

/* "host[:port]" or "[v6][:port]" spanning [s, end). */
static int hostport(bench_url *u, const char *s, const char *end) {
  const char *host = s, *host_end, *port = NULL;
  if (*s == '[') {
    host = s + 1;
    host_end = memchr(host, ']', (size_t)(end - host));
    if (host_end == NULL || (host_end + 1 < end && host_end[1] != ':'))
      return bench_fail("URL: a bad [IPv6 address]"), -1;
    port = host_end + 1 < end ? host_end + 2 : NULL;
  } else {
    host_end = memchr(s, ':', (size_t)(end - s));
    port = host_end != NULL ? host_end + 1 : NULL;
    host_end = host_end != NULL ? host_end : end;
  }
  size_t n = (size_t)(host_end - host);
  if (n == 0 || n >= sizeof u->host)
    return bench_fail("URL has no host, or too long a one"), -1;
  memcpy(u->host, host, n);
  u->host[n] = '\0';
  u->port = 6379;
  if (port != NULL && number(port, (size_t)(end - port), 1, 65535, &u->port))
    return bench_fail("URL port must be a number 1..65535"), -1;
  return 0;
}

static int parse_redis(bench_url *u, const char *s) {
  const char *end = s + strlen(s);
  const char *slash = memchr(s, '/', (size_t)(end - s));
  const char *auth_end = slash ? slash : end;
  if (userinfo(u, &s, auth_end) != 0 || hostport(u, s, auth_end) != 0)
    return -1;
  if (slash != NULL && slash + 1 < end &&
      number(slash + 1, (size_t)(end - slash - 1), 0, 1000000, &u->db))
    return bench_fail("URL database must be a number after '/'"), -1;
  return 0;
}

static int parse_unix(bench_url *u, const char *s) {
  const char *end = s + strlen(s);
  const char *q = strchr(s, '?');
  const char *path_end = q ? q : end;
  if (userinfo(u, &s, path_end) != 0)
    return -1;
  size_t n = (size_t)(path_end - s);
  if (*s != '/' || n >= sizeof u->path)
    return bench_fail("unix:// URL needs an absolute path, shorter than "
                      "108 bytes"),
           -1;
  if (q != NULL && (strncmp(q, "?db=", 4) != 0 ||
                    number(q + 4, (size_t)(end - q - 4), 0, 1000000, &u->db)))
    return bench_fail("unix:// URL accepts only ?db=N"), -1;
  memcpy(u->path, s, n);
  u->path[n] = '\0';
  return 0;
}

int bench_url_parse(bench_url *u, const char *url) {
  memset(u, 0, sizeof *u);
  if (strncmp(url, "redis://", 8) == 0)
    return parse_redis(u, url + 8);
  if (strncmp(url, "unix://", 7) == 0)
    return parse_unix(u, url + 7);
  if (strncmp(url, "rediss://", 9) == 0)
    return bench_fail("the bare hiredis connection (this workload's "
                      "floor or bare waiter) speaks no TLS: give a "
                      "redis:// or unix:// URL"),
           -1;
  return bench_fail("the bare hiredis connection needs a redis:// or "
                    "unix:// URL"),
         -1;
}
