/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * endpoint.c - URL parsing:
 *   redis://[[user]:password@]host[:port][/db]
 *   rediss://... (the same, over TLS)
 *   unix://[[user]:password@]/path[?db=N]
 */
#include "endpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define MAX_URL_LEN 4096

/* A hex digit's value (either case), or -1 (base's table). */
static int hexval(char c) { return rlock__hex1[(unsigned char)c] - 1; }

char *rlock__url_decode(const char *s, size_t n) {
  char *out = rlock__malloc(n + 1), *o = out;
  if (out == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '%') {
      if (i + 2 >= n) {
        free(out);
        return NULL;
      }
      int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
      if (h < 0 || l < 0) {
        free(out);
        return NULL;
      }
      *o++ = (char)(h * 16 + l);
      i += 2;
    } else {
      *o++ = s[i];
    }
  }
  *o = '\0';
  return out;
}

int rlock__url_int(const char *s, size_t n, long lo, long hi, int *out) {
  if (n == 0 || n > 10)
    return -1;
  long v = 0;
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

int rlock__url_userinfo(char **user, char **password, const char **s,
                        const char *end) {
  const char *at = memchr(*s, '@', (size_t)(end - *s));
  if (at == NULL)
    return 0;
  const char *colon = memchr(*s, ':', (size_t)(at - *s));
  if (colon == NULL)
    return rlock__err(RLOCK_EINVAL, "URL credentials must be "
                                    "[user]:password@ (missing ':')");
  if (colon > *s &&
      (*user = rlock__url_decode(*s, (size_t)(colon - *s))) == NULL)
    return rlock__err(RLOCK_EINVAL, "URL user has a bad %%-escape");
  if ((*password = rlock__url_decode(colon + 1, (size_t)(at - colon - 1))) ==
      NULL)
    return rlock__err(RLOCK_EINVAL, "URL password has a bad %%-escape");
  *s = at + 1;
  return 0;
}

static int parse_userinfo(rlock__endpoint *ep, const char **s,
                          const char *end) {
  return rlock__url_userinfo(&ep->user, &ep->password, s, end);
}

int rlock__url_hostport(rlock__endpoint *ep, const char *s, const char *end,
                        int default_port) {
  const char *host = s, *host_end, *port = NULL;
  if (*s == '[') {
    host = s + 1;
    host_end = memchr(host, ']', (size_t)(end - host));
    if (host_end == NULL)
      return rlock__err(RLOCK_EINVAL, "URL has '[' without ']' around host");
    if (host_end + 1 < end) {
      if (host_end[1] != ':')
        return rlock__err(RLOCK_EINVAL, "URL has junk after ']'");
      port = host_end + 2;
    }
  } else {
    host_end = memchr(s, ':', (size_t)(end - s));
    if (host_end != NULL)
      port = host_end + 1;
    else
      host_end = end;
  }
  if (host_end == host)
    return rlock__err(RLOCK_EINVAL, "URL has no host");
  ep->port = default_port;
  if (port != NULL &&
      rlock__url_int(port, (size_t)(end - port), 1, 65535, &ep->port) != 0)
    return rlock__err(RLOCK_EINVAL, "URL port must be a number 1..65535");
  ep->host = rlock__strndup(host, (size_t)(host_end - host));
  return ep->host ? RLOCK_OK : rlock__err(RLOCK_ENOMEM, "out of memory");
}

static int parse_redis(rlock__endpoint *ep, const char *s) {
  const char *end = s + strlen(s);
  const char *slash = memchr(s, '/', (size_t)(end - s));
  const char *auth_end = slash ? slash : end;
  int rc = parse_userinfo(ep, &s, auth_end);
  if (rc != RLOCK_OK)
    return rc;
  if ((rc = rlock__url_hostport(ep, s, auth_end, 6379)) != RLOCK_OK)
    return rc;
  if (slash != NULL && slash + 1 < end &&
      rlock__url_int(slash + 1, (size_t)(end - slash - 1), 0, 1000000, &ep->db))
    return rlock__err(RLOCK_EINVAL, "URL database must be a number after '/'");
  return RLOCK_OK;
}

static int parse_unix(rlock__endpoint *ep, const char *s) {
  const char *end = s + strlen(s);
  const char *q = strchr(s, '?');
  const char *path_end = q ? q : end;
  int rc = parse_userinfo(ep, &s, path_end);
  if (rc != RLOCK_OK)
    return rc;
  if (*s != '/')
    return rlock__err(RLOCK_EINVAL, "unix:// URL needs an absolute path");
  if ((size_t)(path_end - s) >= 108)
    return rlock__err(RLOCK_EINVAL, "unix socket path is too long");
  if (q != NULL &&
      (strncmp(q, "?db=", 4) != 0 ||
       rlock__url_int(q + 4, (size_t)(end - q - 4), 0, 1000000, &ep->db) != 0))
    return rlock__err(RLOCK_EINVAL, "unix:// URL accepts only ?db=N");
  ep->unix_path = rlock__strndup(s, (size_t)(path_end - s));
  return ep->unix_path ? RLOCK_OK : rlock__err(RLOCK_ENOMEM, "out of memory");
}

/* How much of a URL to quote in a message: its scheme, never what may
 * follow it (credentials). */
static int scheme_len(const char *url) {
  size_t n = strcspn(url, ":/@?#");
  return n > 24 ? 24 : (int)n;
}

int rlock__endpoint_parse(rlock__endpoint *ep, const char *url) {
  int rc;
  memset(ep, 0, sizeof *ep);
  if (url == NULL || *url == '\0')
    return rlock__err(RLOCK_EINVAL, "URL is empty");
  if (strlen(url) > MAX_URL_LEN)
    return rlock__err(RLOCK_EINVAL, "URL is longer than %d bytes", MAX_URL_LEN);
  if (strncmp(url, "redis://", 8) == 0)
    rc = parse_redis(ep, url + 8);
  else if (strncmp(url, "rediss://", 9) == 0 &&
           (rc = parse_redis(ep, url + 9)) == RLOCK_OK)
    ep->tls = 1;
  else if (strncmp(url, "rediss://", 9) == 0)
    ; /* parse_redis said what is wrong */
  else if (strncmp(url, "unix://", 7) == 0)
    rc = parse_unix(ep, url + 7);
  else
    rc = rlock__err(RLOCK_EINVAL,
                    "URL must start with redis://, rediss://, unix://, "
                    "redis-cluster://, rediss-cluster://, redis-sentinel:// "
                    "or rediss-sentinel:// (got '%.*s')",
                    scheme_len(url), url);
  if (rc != RLOCK_OK)
    rlock__endpoint_clear(ep);
  return rc;
}

int rlock__endpoint_copy(rlock__endpoint *dst, const rlock__endpoint *src) {
  *dst = *src;
  if (rlock__dup_opt(&dst->host, src->host) ||
      rlock__dup_opt(&dst->unix_path, src->unix_path) ||
      rlock__dup_opt(&dst->user, src->user) ||
      rlock__dup_opt(&dst->password, src->password)) {
    rlock__endpoint_clear(dst);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  return RLOCK_OK;
}

void rlock__endpoint_clear(rlock__endpoint *ep) {
  free(ep->host);
  free(ep->unix_path);
  free(ep->user);
  free(ep->password);
  memset(ep, 0, sizeof *ep);
}

const char *rlock__endpoint_str(const rlock__endpoint *ep, char *buf,
                                unsigned size) {
  if (ep->unix_path != NULL)
    snprintf(buf, size, "%s", ep->unix_path);
  else if (strchr(ep->host, ':') != NULL)
    snprintf(buf, size, "[%s]:%d", ep->host, ep->port);
  else
    snprintf(buf, size, "%s:%d", ep->host, ep->port);
  return buf;
}
