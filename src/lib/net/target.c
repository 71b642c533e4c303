/*
 * target.c - topology URLs (target.h); redis:// and unix:// are
 * endpoint.c's.
 */
#include "target.h"

#include <stdlib.h>
#include <string.h>

#include "common.h"

#define CLUSTER_SCHEME "redis-cluster://"
#define SENTINEL_SCHEME "redis-sentinel://"

/* What one parse is filling in. */
typedef struct parse {
  rlock__target *t;
  char *user, *password;          /* the data nodes' */
  char *sentinel_user, *sentinel_password;
} parse;

static int set_param(parse *p, const char *key, size_t klen, const char *val,
                     size_t vlen) {
  char **slot = NULL;
  int sentinel = p->t->kind == RLOCK__TOPO_SENTINEL;
  if (!sentinel && klen == 6 && memcmp(key, "pubsub", 6) == 0) {
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
    return rlock__err(RLOCK_EINVAL, "URL parameter '%.*s' is not known for "
                      "this scheme", (int)(klen > 40 ? 40 : klen), key);
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
  return RLOCK_OK;
}

/* Everything after the scheme of a cluster or sentinel URL. */
static int parse_topology(parse *p, const char *s) {
  rlock__target *t = p->t;
  int sentinel = t->kind == RLOCK__TOPO_SENTINEL;
  const char *end = s + strlen(s);
  const char *hash = strchr(s, '#');
  if (sentinel != (hash != NULL))
    return rlock__err(RLOCK_EINVAL, sentinel
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

int rlock__target_parse(rlock__target *t, const char *url) {
  memset(t, 0, sizeof *t);
  parse p = {.t = t};
  int rc;
  if (url != NULL && strncmp(url, CLUSTER_SCHEME, strlen(CLUSTER_SCHEME)) == 0) {
    t->kind = RLOCK__TOPO_CLUSTER;
    rc = parse_topology(&p, url + strlen(CLUSTER_SCHEME));
  } else if (url != NULL &&
             strncmp(url, SENTINEL_SCHEME, strlen(SENTINEL_SCHEME)) == 0) {
    t->kind = RLOCK__TOPO_SENTINEL;
    rc = parse_topology(&p, url + strlen(SENTINEL_SCHEME));
  } else {
    t->addrs = rlock__calloc(1, sizeof *t->addrs);
    rc = t->addrs ? rlock__endpoint_parse(&t->addrs[0], url)
                  : rlock__err(RLOCK_ENOMEM, "out of memory");
    t->n = rc == RLOCK_OK;
  }
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
