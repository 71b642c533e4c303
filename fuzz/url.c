/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * url.c - fuzz_url: the input is a URL (up to its first NUL).
 *
 * Parsed by the single-server parser (rlock__endpoint_parse: redis://,
 * rediss://, unix://), by the topology parser (rlock__target_parse: also
 * redis[s]-cluster://, redis[s]-sentinel:// and the TLS parameters after
 * '?') and by the public setter rlock_config_set_url(), which must agree
 * with each other; what they
 * accept must be well formed, and copying and freeing it must be clean.
 * The URL pieces target.c shares are also fed the raw bytes.
 */
#include <rlock.h>

#include "endpoint.h"
#include "fuzz.h"
#include "target.h"

static int str_eq(const char *a, const char *b) {
  return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

static int endpoint_eq(const rlock__endpoint *a, const rlock__endpoint *b) {
  return str_eq(a->host, b->host) && a->port == b->port &&
         str_eq(a->unix_path, b->unix_path) && str_eq(a->user, b->user) &&
         str_eq(a->password, b->password) && a->db == b->db &&
         a->tls == b->tls && a->tls_ctx == b->tls_ctx;
}

static int is_zero(const rlock__endpoint *ep) {
  static const rlock__endpoint zero;
  return memcmp(ep, &zero, sizeof zero) == 0;
}

/* An address a parser accepted. */
static void check_endpoint(const rlock__endpoint *ep) {
  FUZZ_CHECK((ep->host == NULL) != (ep->unix_path == NULL));
  if (ep->host != NULL) {
    FUZZ_CHECK(ep->host[0] != '\0');
    FUZZ_CHECK(ep->port >= 1 && ep->port <= 65535);
  } else {
    FUZZ_CHECK(ep->unix_path[0] == '/' && strlen(ep->unix_path) < 108);
  }
  FUZZ_CHECK(ep->user == NULL || ep->password != NULL);
  FUZZ_CHECK(ep->db >= 0 && ep->db <= 1000000);
  FUZZ_CHECK((ep->tls == 0 || ep->tls == 1) && ep->tls_ctx == NULL);
  FUZZ_CHECK(!ep->tls || ep->host != NULL); /* no TLS over unix sockets */
  char buf[64];
  const char *s = rlock__endpoint_str(ep, buf, sizeof buf);
  FUZZ_CHECK(s == buf && strlen(buf) < sizeof buf);
  rlock__endpoint copy;
  FUZZ_CHECK(rlock__endpoint_copy(&copy, ep) == RLOCK_OK);
  FUZZ_CHECK(endpoint_eq(&copy, ep));
  rlock__endpoint_clear(&copy);
  FUZZ_CHECK(is_zero(&copy));
}

static void check_target(const rlock__target *t, const char *url) {
  FUZZ_CHECK(t->n >= 1 && t->n <= RLOCK__TARGET_MAX_HOSTS);
  FUZZ_CHECK(t->pubsub <= RLOCK__PUBSUB_SHARDED);
  for (size_t i = 0; i < t->n; i++)
    check_endpoint(&t->addrs[i]);
  FUZZ_CHECK(t->data.host == NULL && t->data.unix_path == NULL);
  switch (t->kind) {
  case RLOCK__TOPO_SINGLE:
    FUZZ_CHECK(t->n == 1 && t->master == NULL);
    FUZZ_CHECK(strncmp(url, "redis://", 8) == 0 ||
               strncmp(url, "rediss://", 9) == 0 ||
               strncmp(url, "unix://", 7) == 0);
    FUZZ_CHECK(t->addrs[0].tls == (strncmp(url, "rediss://", 9) == 0));
    FUZZ_CHECK(t->data.tls == t->addrs[0].tls);
    break;
  case RLOCK__TOPO_CLUSTER:
    FUZZ_CHECK(strncmp(url, "redis-cluster://", 16) == 0 ||
               strncmp(url, "rediss-cluster://", 17) == 0);
    FUZZ_CHECK(t->data.tls == (url[5] == 's'));
    for (size_t i = 0; i < t->n; i++)
      FUZZ_CHECK(t->addrs[i].tls == t->data.tls);
    FUZZ_CHECK(t->master == NULL && t->data.db == 0);
    for (size_t i = 0; i < t->n; i++) /* the nodes log in as data nodes */
      FUZZ_CHECK(str_eq(t->addrs[i].user, t->data.user) &&
                 str_eq(t->addrs[i].password, t->data.password));
    break;
  case RLOCK__TOPO_SENTINEL:
    FUZZ_CHECK(strncmp(url, "redis-sentinel://", 17) == 0 ||
               strncmp(url, "rediss-sentinel://", 18) == 0);
    FUZZ_CHECK(t->data.tls == (url[5] == 's'));
    FUZZ_CHECK(t->master != NULL);
    FUZZ_CHECK(t->pubsub == RLOCK__PUBSUB_AUTO);
    break;
  default:
    FUZZ_CHECK(!"a kind of topology");
  }
  FUZZ_CHECK(rlock__target_kind_name(t) != NULL);
  int tls = t->data.tls; /* TLS options only where TLS is spoken */
  for (size_t i = 0; i < t->n; i++)
    tls |= t->addrs[i].tls;
  FUZZ_CHECK(tls || !rlock__tls_opts_any(&t->tls));
  FUZZ_CHECK(t->tls.insecure == 0 || t->tls.insecure == 1);

  rlock__target copy;
  FUZZ_CHECK(rlock__target_copy(&copy, t) == RLOCK_OK);
  FUZZ_CHECK(copy.kind == t->kind && copy.n == t->n &&
             copy.pubsub == t->pubsub && str_eq(copy.master, t->master) &&
             endpoint_eq(&copy.data, &t->data));
  for (size_t i = 0; i < t->n; i++)
    FUZZ_CHECK(endpoint_eq(&copy.addrs[i], &t->addrs[i]));
  rlock__target_clear(&copy);

  rlock__endpoint node;
  FUZZ_CHECK(rlock__target_node(t, "10.0.0.7", 7002, &node) == RLOCK_OK);
  FUZZ_CHECK(node.port == 7002 && node.db == t->data.db &&
             str_eq(node.user, t->data.user) &&
             str_eq(node.password, t->data.password));
  rlock__endpoint_clear(&node);
}

/* The URL pieces, on the raw bytes [data, data + size); the copy `s` of
 * them is NUL-terminated where the parsers expect a readable end. */
static void pieces(const uint8_t *data, size_t size, const char *s) {
  size_t len = strlen(s);
  char *dec = rlock__url_decode((const char *)data, size);
  if (dec != NULL) {
    FUZZ_CHECK(strlen(dec) <= size);
    free(dec);
  }
  int v = -1;
  if (rlock__url_int((const char *)data, size, 0, 1000000, &v) == 0)
    FUZZ_CHECK(size <= 10 && v >= 0 && v <= 1000000);
  char *user = NULL, *password = NULL;
  const char *at = s;
  if (rlock__url_userinfo(&user, &password, &at, s + len) == RLOCK_OK) {
    FUZZ_CHECK(at >= s && at <= s + len);
    FUZZ_CHECK(at == s || at[-1] == '@');
    FUZZ_CHECK(user == NULL || password != NULL);
  }
  free(user);
  free(password);
  rlock__endpoint ep = {0};
  if (rlock__url_hostport(&ep, s, s + len, 6379) == RLOCK_OK)
    FUZZ_CHECK(ep.host != NULL && ep.port >= 1 && ep.port <= 65535);
  rlock__endpoint_clear(&ep);
}

/* A redis:// or rediss:// URL's TLS parameters are the topology parser's:
 * the single-server parser sees what comes before '?'. */
static int has_params(const char *url) {
  return (strncmp(url, "redis://", 8) == 0 ||
          strncmp(url, "rediss://", 9) == 0) &&
         strchr(url, '?') != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *url = fuzz_cstr(data, size);
  char *base = fuzz_cstr(data, size);
  if (has_params(url))
    *strchr(base, '?') = '\0';

  rlock__endpoint ep;
  int erc = rlock__endpoint_parse(&ep, base);
  FUZZ_CHECK(erc == RLOCK_OK || erc == RLOCK_EINVAL);
  if (erc == RLOCK_OK)
    check_endpoint(&ep);
  else
    FUZZ_CHECK(is_zero(&ep) && rlock_error_last()->message[0] != '\0');

  rlock__target t;
  int trc = rlock__target_parse(&t, url);
  FUZZ_CHECK(trc == RLOCK_OK || trc == RLOCK_EINVAL);
  if (trc == RLOCK_OK) {
    check_target(&t, url);
    if (t.kind == RLOCK__TOPO_SINGLE) /* the same parser underneath */
      FUZZ_CHECK(erc == RLOCK_OK && endpoint_eq(&t.addrs[0], &ep));
  } else {
    FUZZ_CHECK(t.n == 0 && t.addrs == NULL && t.master == NULL);
  }
  if ((strncmp(url, "redis://", 8) == 0 || strncmp(url, "rediss://", 9) == 0 ||
       strncmp(url, "unix://", 7) == 0) &&
      !has_params(url))
    FUZZ_CHECK(erc == trc);
  rlock__target_clear(&t);
  rlock__endpoint_clear(&ep);

  rlock_config *cfg;
  FUZZ_CHECK(rlock_config_new(&cfg) == RLOCK_OK);
  FUZZ_CHECK(rlock_config_set_url(cfg, url) == trc);
  rlock_config_free(cfg);

  pieces(data, size, url);
  free(base);
  free(url);
  return 0;
}
