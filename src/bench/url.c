/*
 * url.c - parse the server URL for the bench's bare hiredis connections:
 *   redis://[[user]:password@]host[:port][/db]
 *   unix://[[user]:password@]/path[?db=N]
 *
 * The library parses the same URL for its own client (main.c validates it
 * with rlock_config_set_url() first, so only well-formed URLs get here);
 * this copy exists because the bench talks to the library only through
 * its public API, which does not expose the parsed parts.
 */
#include <stdio.h>
#include <stdlib.h>
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

/* Copy [s, s+n) decoding %XX; NULL on a bad escape or no memory. */
static char *decode(const char *s, size_t n) {
  char *out = malloc(n + 1), *o = out;
  if (out == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    if (s[i] != '%') {
      *o++ = s[i];
      continue;
    }
    int h = i + 2 < n ? hexval(s[i + 1]) : -1;
    int l = h >= 0 ? hexval(s[i + 2]) : -1;
    if (l < 0) {
      free(out);
      return NULL;
    }
    *o++ = (char)(h * 16 + l);
    i += 2;
  }
  *o = '\0';
  return out;
}

static int parse_num(const char *s, const char *end, long lo, long hi,
                     int *out) {
  if (end <= s || end - s > 10)
    return -1;
  long v = 0;
  for (const char *p = s; p < end; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    v = v * 10 + (*p - '0');
  }
  if (v < lo || v > hi)
    return -1;
  *out = (int)v;
  return 0;
}

/* "[[user]:password@]" at the front of [*s, end); advances *s. */
static int parse_userinfo(bench_url *u, const char **s, const char *end) {
  const char *at = memchr(*s, '@', (size_t)(end - *s));
  if (at == NULL)
    return 0;
  const char *colon = memchr(*s, ':', (size_t)(at - *s));
  if (colon == NULL)
    return -1;
  if (colon > *s && (u->user = decode(*s, (size_t)(colon - *s))) == NULL)
    return -1;
  if ((u->password = decode(colon + 1, (size_t)(at - colon - 1))) == NULL)
    return -1;
  *s = at + 1;
  return 0;
}

static int parse_hostport(bench_url *u, const char *s, const char *end) {
  const char *host = s, *host_end, *port = NULL;
  if (*s == '[') { /* IPv6 literal */
    host = s + 1;
    host_end = memchr(host, ']', (size_t)(end - host));
    if (host_end == NULL)
      return -1;
    if (host_end + 1 < end && host_end[1] == ':')
      port = host_end + 2;
  } else if ((host_end = memchr(s, ':', (size_t)(end - s))) != NULL) {
    port = host_end + 1;
  } else {
    host_end = end;
  }
  u->port = 6379;
  if (host_end == host ||
      (port != NULL && parse_num(port, end, 1, 65535, &u->port) != 0))
    return -1;
  u->host = strndup(host, (size_t)(host_end - host));
  return u->host != NULL ? 0 : -1;
}

static int parse_redis(bench_url *u, const char *s) {
  const char *end = s + strlen(s);
  const char *slash = memchr(s, '/', (size_t)(end - s));
  const char *auth_end = slash ? slash : end;
  if (parse_userinfo(u, &s, auth_end) != 0 ||
      parse_hostport(u, s, auth_end) != 0)
    return -1;
  if (slash != NULL && slash + 1 < end)
    return parse_num(slash + 1, end, 0, 1000000, &u->db);
  return 0;
}

static int parse_unix(bench_url *u, const char *s) {
  const char *end = s + strlen(s);
  const char *q = strchr(s, '?');
  const char *path_end = q ? q : end;
  if (parse_userinfo(u, &s, path_end) != 0 || *s != '/')
    return -1;
  if (q != NULL && (strncmp(q, "?db=", 4) != 0 ||
                    parse_num(q + 4, end, 0, 1000000, &u->db) != 0))
    return -1;
  u->unix_path = strndup(s, (size_t)(path_end - s));
  return u->unix_path != NULL ? 0 : -1;
}

int bench_url_parse(bench_url *u, const char *url, char *err,
                    size_t errsize) {
  memset(u, 0, sizeof *u);
  int rc = -1;
  if (strncmp(url, "redis://", 8) == 0)
    rc = parse_redis(u, url + 8);
  else if (strncmp(url, "unix://", 7) == 0)
    rc = parse_unix(u, url + 7);
  if (rc != 0) {
    snprintf(err, errsize, "cannot parse URL '%.80s'", url);
    bench_url_free(u);
  }
  return rc;
}

void bench_url_free(bench_url *u) {
  free(u->host);
  free(u->unix_path);
  free(u->user);
  free(u->password);
  memset(u, 0, sizeof *u);
}
