/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target.c - topology URLs (target.h); redis:// and unix:// are
 * endpoint.c's.
 */
#include "target.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define CLUSTER_SCHEME "redis-cluster://"
#define SENTINEL_SCHEME "redis-sentinel://"
#define TLS_CLUSTER_SCHEME "rediss-cluster://"
#define TLS_SENTINEL_SCHEME "rediss-sentinel://"

/* What one parse is filling in. */
typedef struct parse {
  rlock__target *t;
  char *user, *password; /* the data nodes' */
  char *sentinel_user, *sentinel_password;
  int tls;          /* the scheme says TLS (to the data nodes) */
  int sentinel_tls; /* sentinel_tls=: 0, 1, or -1 (as the data nodes) */
} parse;

/* yes|no|1|0|true|false, or -1. */
static int url_bool(const char *v, size_t n) {
  static const char *const yes[] = {"yes", "1", "true"}, *const no[] = {
                                                             "no", "0",
                                                             "false"};
  for (int i = 0; i < 3; i++) {
    if (n == strlen(yes[i]) && memcmp(v, yes[i], n) == 0)
      return 1;
    if (n == strlen(no[i]) && memcmp(v, no[i], n) == 0)
      return 0;
  }
  return -1;
}

/* The TLS parameters (every scheme but unix://); 1 when `key` is none. */
static int set_tls_param(parse *p, const char *key, size_t klen,
                         const char *val, size_t vlen, int *rc) {
  rlock__tls_opts *o = &p->t->tls;
  static const struct {
    const char *key;
    size_t off;
  } files[] = {
      {"tls_ca", offsetof(rlock__tls_opts, ca_file)},
      {"tls_ca_dir", offsetof(rlock__tls_opts, ca_dir)},
      {"tls_cert", offsetof(rlock__tls_opts, cert_file)},
      {"tls_key", offsetof(rlock__tls_opts, key_file)},
      {"tls_server_name", offsetof(rlock__tls_opts, server_name)},
  };
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    if (klen != strlen(files[i].key) || memcmp(key, files[i].key, klen) != 0)
      continue;
    char **slot = (char **)((char *)o + files[i].off);
    free(*slot);
    *slot = vlen > 0 ? rlock__url_decode(val, vlen) : NULL;
    *rc = *slot != NULL ? RLOCK_OK
                        : rlock__err(RLOCK_EINVAL,
                                     "URL parameter %s is empty "
                                     "or badly escaped",
                                     files[i].key);
    return 0;
  }
  int b = url_bool(val, vlen);
  if (klen == 12 && memcmp(key, "tls_insecure", 12) == 0)
    o->insecure = b;
  else if (klen == 12 && memcmp(key, "sentinel_tls", 12) == 0 &&
           p->t->kind == RLOCK__TOPO_SENTINEL)
    p->sentinel_tls = b;
  else
    return 1;
  *rc = b >= 0 ? RLOCK_OK
               : rlock__err(RLOCK_EINVAL,
                            "URL parameter %.*s must be yes, no, "
                            "1, 0, true or false (got '%.*s')",
                            (int)klen, key, (int)vlen, val);
  return 0;
}

static int set_param(parse *p, const char *key, size_t klen, const char *val,
                     size_t vlen) {
  char **slot = NULL;
  int sentinel = p->t->kind == RLOCK__TOPO_SENTINEL, rc;
  if (set_tls_param(p, key, klen, val, vlen, &rc) == 0)
    return rc;
  if (p->t->kind == RLOCK__TOPO_CLUSTER && klen == 6 &&
      memcmp(key, "pubsub", 6) == 0) {
    static const char *const modes[] = {"auto", "classic", "sharded"};
    for (int m = 0; m < 3; m++)
      if (vlen == strlen(modes[m]) && memcmp(val, modes[m], vlen) == 0) {
        p->t->pubsub = (rlock__pubsub_mode)m;
        return RLOCK_OK;
      }
    return rlock__err(RLOCK_EINVAL,
                      "URL pubsub must be auto, classic or sharded");
  }
  if (sentinel && klen == 13 && memcmp(key, "sentinel_user", 13) == 0)
    slot = &p->sentinel_user;
  if (sentinel && klen == 17 && memcmp(key, "sentinel_password", 17) == 0)
    slot = &p->sentinel_password;
  if (slot == NULL)
    return rlock__err(RLOCK_EINVAL,
                      "URL parameter '%.*s' is not known for "
                      "this scheme",
                      (int)(klen > 40 ? 40 : klen), key);
  free(*slot);
  if ((*slot = rlock__url_decode(val, vlen)) == NULL)
    return rlock__err(RLOCK_EINVAL, "URL parameter has a bad %%-escape");
  return RLOCK_OK;
}

/* "k=v&k=v" in [s, end). */
static int parse_params(parse *p, const char *s, const char *end) {
  while (s < end) {
    const char *amp = memchr(s, '&', (size_t)(end - s));
    const char *stop = amp ? amp : end;
    const char *eq = memchr(s, '=', (size_t)(stop - s));
    if (eq == NULL)
      return rlock__err(RLOCK_EINVAL, "URL parameters must be key=value");
    int rc = set_param(p, s, (size_t)(eq - s), eq + 1, (size_t)(stop - eq - 1));
    if (rc != RLOCK_OK)
      return rc;
    s = amp ? amp + 1 : end;
  }
  return RLOCK_OK;
}

/* "host[:port],host[:port]..." in [s, end). */
static int parse_hosts(parse *p, const char *s, const char *end, int port) {
  rlock__target *t = p->t;
  t->addrs = rlock__calloc(RLOCK__TARGET_MAX_HOSTS, sizeof *t->addrs);
  if (t->addrs == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  while (s <= end) {
    const char *comma = memchr(s, ',', (size_t)(end - s));
    const char *stop = comma ? comma : end;
    if (t->n == RLOCK__TARGET_MAX_HOSTS)
      return rlock__err(RLOCK_EINVAL, "URL lists more than %d hosts",
                        RLOCK__TARGET_MAX_HOSTS);
    int rc = rlock__url_hostport(&t->addrs[t->n], s, stop, port);
    if (rc != RLOCK_OK)
      return rc;
    t->n++;
    if (comma == NULL)
      break;
    s = comma + 1;
  }
  return RLOCK_OK;
}

/* Give every address the credentials it logs in with. */
static int apply_credentials(parse *p) {
  rlock__target *t = p->t;
  int sentinel = t->kind == RLOCK__TOPO_SENTINEL;
  /* A user logs in only with a password (AUTH user password): alone it
   * would be dropped without a word. "user@" is refused the same way. */
  if (p->sentinel_user != NULL && p->sentinel_password == NULL)
    return rlock__err(RLOCK_EINVAL, "URL sentinel_user needs "
                                    "sentinel_password");
  const char *u = sentinel ? p->sentinel_user : p->user;
  const char *pw = sentinel ? p->sentinel_password : p->password;
  for (size_t i = 0; i < t->n; i++)
    if ((u && !(t->addrs[i].user = rlock__strdup(u))) ||
        (pw && !(t->addrs[i].password = rlock__strdup(pw))))
      return rlock__err(RLOCK_ENOMEM, "out of memory");
  t->data.user = p->user;
  t->data.password = p->password;
  p->user = p->password = NULL;
  t->data.tls = p->tls;
  int addr_tls = sentinel && p->sentinel_tls >= 0 ? p->sentinel_tls : p->tls;
  for (size_t i = 0; i < t->n; i++)
    t->addrs[i].tls = addr_tls;
  return RLOCK_OK;
}

/* Everything after the scheme of a cluster or sentinel URL. */
static int parse_topology(parse *p, const char *s) {
  rlock__target *t = p->t;
  int sentinel = t->kind == RLOCK__TOPO_SENTINEL;
  const char *end = s + strlen(s);
  const char *hash = strchr(s, '#');
  if (sentinel != (hash != NULL))
    return rlock__err(RLOCK_EINVAL,
                      sentinel
                          ? "redis-sentinel:// URL needs #MASTER at its end"
                          : "URL has a '#' fragment (only redis-sentinel:// "
                            "names a master there)");
  if (hash != NULL) {
    if (hash[1] == '\0' ||
        (t->master = rlock__url_decode(hash + 1, strlen(hash + 1))) == NULL)
      return rlock__err(RLOCK_EINVAL, "URL #MASTER is empty or badly escaped");
    end = hash;
  }
  const char *q = memchr(s, '?', (size_t)(end - s));
  int rc = q ? parse_params(p, q + 1, end) : RLOCK_OK;
  if (rc != RLOCK_OK)
    return rc;
  end = q ? q : end;
  const char *slash = memchr(s, '/', (size_t)(end - s));
  if (slash != NULL && slash + 1 < end &&
      rlock__url_int(slash + 1, (size_t)(end - slash - 1), 0, 1000000,
                     &t->data.db) != 0)
    return rlock__err(RLOCK_EINVAL, "URL database must be a number after '/'");
  if (t->data.db != 0 && !sentinel)
    return rlock__err(RLOCK_EINVAL, "a cluster has only database 0");
  end = slash ? slash : end;
  if ((rc = rlock__url_userinfo(&p->user, &p->password, &s, end)) != RLOCK_OK)
    return rc;
  if ((rc = parse_hosts(p, s, end, sentinel ? 26379 : 6379)) != RLOCK_OK)
    return rc;
  return apply_credentials(p);
}

/* A TLS parameter with no TLS connection to use it. */
static int check_tls_use(const rlock__target *t) {
  int any = t->data.tls;
  for (size_t i = 0; i < t->n; i++)
    any |= t->addrs[i].tls;
  if (!any && rlock__tls_opts_any(&t->tls))
    return rlock__err(RLOCK_EINVAL, "URL has tls_* parameters but speaks "
                                    "no TLS: use a rediss scheme");
  return RLOCK_OK;
}

/* redis:// or rediss://, with TLS parameters after '?'. */
static int parse_single(parse *p, const char *url) {
  rlock__target *t = p->t;
  t->addrs = rlock__calloc(1, sizeof *t->addrs);
  if (t->addrs == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  const char *q = strncmp(url, "unix://", 7) == 0 ? NULL : strchr(url, '?');
  char *base = q ? rlock__strndup(url, (size_t)(q - url)) : NULL;
  if (q != NULL && base == NULL)
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  int rc = q ? parse_params(p, q + 1, q + strlen(q)) : RLOCK_OK;
  if (rc == RLOCK_OK)
    rc = rlock__endpoint_parse(&t->addrs[0], q ? base : url);
  free(base);
  t->n = rc == RLOCK_OK;
  if (rc == RLOCK_OK)
    t->data.tls = t->addrs[0].tls;
  return rc;
}

/* The scheme's topology and whether it speaks TLS; the rest of the URL in
 * *rest. */
static rlock__topo_kind scheme(const char *url, const char **rest, int *tls) {
  static const struct {
    const char *prefix;
    rlock__topo_kind kind;
    int tls;
  } s[] = {{CLUSTER_SCHEME, RLOCK__TOPO_CLUSTER, 0},
           {SENTINEL_SCHEME, RLOCK__TOPO_SENTINEL, 0},
           {TLS_CLUSTER_SCHEME, RLOCK__TOPO_CLUSTER, 1},
           {TLS_SENTINEL_SCHEME, RLOCK__TOPO_SENTINEL, 1}};
  for (size_t i = 0; url != NULL && i < sizeof s / sizeof s[0]; i++)
    if (strncmp(url, s[i].prefix, strlen(s[i].prefix)) == 0) {
      *rest = url + strlen(s[i].prefix);
      *tls = s[i].tls;
      return s[i].kind;
    }
  *rest = url;
  *tls = 0;
  return RLOCK__TOPO_SINGLE;
}

int rlock__target_parse(rlock__target *t, const char *url) {
  memset(t, 0, sizeof *t);
  parse p = {.t = t, .sentinel_tls = -1};
  const char *rest;
  t->kind = scheme(url, &rest, &p.tls);
  int rc = t->kind == RLOCK__TOPO_SINGLE
               ? (url == NULL ? rlock__err(RLOCK_EINVAL, "URL is empty")
                              : parse_single(&p, url))
               : parse_topology(&p, rest);
  if (rc == RLOCK_OK)
    rc = check_tls_use(t);
  free(p.user);
  free(p.password);
  free(p.sentinel_user);
  free(p.sentinel_password);
  if (rc != RLOCK_OK)
    rlock__target_clear(t);
  return rc;
}

int rlock__target_copy(rlock__target *dst, const rlock__target *src) {
  memset(dst, 0, sizeof *dst);
  dst->kind = src->kind;
  dst->pubsub = src->pubsub;
  dst->addrs = rlock__calloc(src->n ? src->n : 1, sizeof *dst->addrs);
  int rc = dst->addrs ? RLOCK_OK : rlock__err(RLOCK_ENOMEM, "out of memory");
  for (size_t i = 0; rc == RLOCK_OK && i < src->n; i++, dst->n++)
    rc = rlock__endpoint_copy(&dst->addrs[i], &src->addrs[i]);
  if (rc == RLOCK_OK)
    rc = rlock__endpoint_copy(&dst->data, &src->data);
  if (rc == RLOCK_OK && src->master &&
      (dst->master = rlock__strdup(src->master)) == NULL)
    rc = rlock__err(RLOCK_ENOMEM, "out of memory");
  if (rc == RLOCK_OK)
    rc = rlock__tls_opts_copy(&dst->tls, &src->tls);
  if (rc != RLOCK_OK)
    rlock__target_clear(dst);
  return rc;
}

void rlock__target_clear(rlock__target *t) {
  for (size_t i = 0; i < t->n; i++)
    rlock__endpoint_clear(&t->addrs[i]);
  free(t->addrs);
  rlock__endpoint_clear(&t->data);
  free(t->master);
  rlock__tls_opts_clear(&t->tls);
  memset(t, 0, sizeof *t);
}

int rlock__target_node(const rlock__target *t, const char *host, int port,
                       rlock__endpoint *out) {
  int rc = rlock__endpoint_copy(out, &t->data);
  if (rc != RLOCK_OK)
    return rc;
  out->port = port;
  if ((out->host = rlock__strdup(host)) == NULL) {
    rlock__endpoint_clear(out);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  return RLOCK_OK;
}

const char *rlock__target_kind_name(const rlock__target *t) {
  return t->kind == RLOCK__TOPO_CLUSTER    ? "cluster"
         : t->kind == RLOCK__TOPO_SENTINEL ? "sentinel"
                                           : "single";
}
