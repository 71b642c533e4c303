/*
 * raw.c - bare hiredis connections: the reference the library is compared
 * against (PING round trip, the EVALSHA floor) and the side channel the
 * contended, fair and rw workloads use for their counter.
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "bench.h"
#include "endpoint.h"

/* Timeouts equal to the library's defaults, so a dead server fails the
 * bench instead of hanging it. */
#define CONNECT_TIMEOUT_MS 2000
#define COMMAND_TIMEOUT_MS 3000

static redisContext *open_socket(const rlock__endpoint *u) {
  struct timeval tv = {CONNECT_TIMEOUT_MS / 1000, 0};
  if (u->unix_path != NULL)
    return redisConnectUnixWithTimeout(u->unix_path, tv);
  redisContext *c = redisConnectWithTimeout(u->host, u->port, tv);
  if (c != NULL && !c->err) {
    /* The library sets TCP_NODELAY on its connections; do the same here
     * (whatever hiredis does by default) so both pay the same latency. */
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return c;
}

/* AUTH and SELECT as the URL asks. */
static int login(redisContext *c, const rlock__endpoint *u) {
  char db[16];
  if (u->password != NULL) {
    const char *argv[3] = {"AUTH", u->user ? u->user : u->password,
                           u->password};
    redisReply *r = bench_raw_cmd(c, u->user ? 3 : 2, argv, NULL);
    if (r == NULL)
      return -1;
    freeReplyObject(r);
  }
  if (u->db != 0) {
    snprintf(db, sizeof db, "%d", u->db);
    const char *argv[2] = {"SELECT", db};
    redisReply *r = bench_raw_cmd(c, 2, argv, NULL);
    if (r == NULL)
      return -1;
    freeReplyObject(r);
  }
  return 0;
}

redisContext *bench_raw_connect(const char *url) {
  rlock__endpoint u; /* the library's own parser (rlock_static) */
  if (rlock__endpoint_parse(&u, url) != RLOCK_OK) {
    bench_fail("%s", rlock_error_last()->message);
    return NULL;
  }
  redisContext *c = open_socket(&u);
  if (c == NULL || c->err) {
    bench_fail("cannot connect to %s: %s", url, c ? c->errstr : "no memory");
    redisFree(c);
    rlock__endpoint_clear(&u);
    return NULL;
  }
  struct timeval tv = {COMMAND_TIMEOUT_MS / 1000, 0};
  redisSetTimeout(c, tv);
  if (login(c, &u) != 0) {
    redisFree(c);
    c = NULL;
  }
  rlock__endpoint_clear(&u);
  return c;
}

int bench_raw_append(redisContext *c, int argc, const char **argv) {
  if (redisAppendCommandArgv(c, argc, argv, NULL) != REDIS_OK)
    return bench_fail("%s: %s", argv[0], c->errstr), -1;
  return 0;
}

redisReply *bench_raw_reply(redisContext *c, const char *what) {
  void *p = NULL;
  if (redisGetReply(c, &p) != REDIS_OK || p == NULL) {
    bench_fail("%s: %s", what, c->errstr);
    return NULL;
  }
  redisReply *r = p;
  if (r->type == REDIS_REPLY_ERROR) {
    bench_fail("%s: server replied: %s", what, r->str);
    freeReplyObject(r);
    return NULL;
  }
  return r;
}

redisReply *bench_raw_cmd(redisContext *c, int argc, const char **argv,
                          const size_t *lens) {
  if (redisAppendCommandArgv(c, argc, argv, lens) != REDIS_OK) {
    bench_fail("%s: %s", argv[0], c->errstr);
    return NULL;
  }
  return bench_raw_reply(c, argv[0]);
}

/* Write everything queued on c (hiredis flushes only in redisGetReply). */
static int flush(redisContext *c) {
  int done = 0;
  while (!done)
    if (redisBufferWrite(c, &done) != REDIS_OK)
      return bench_fail("PING: %s", c->errstr), -1;
  return 0;
}

int bench_raw_ping_fanout(redisContext *const *c, int n, bench_samples *out) {
  const char *argv[1] = {"PING"};
  int64_t t0 = bench_now_ns();
  for (int i = 0; i < n; i++)
    if (bench_raw_append(c[i], 1, argv) != 0 || flush(c[i]) != 0)
      return -1;
  for (int i = 0; i < n; i++) {
    redisReply *r = bench_raw_reply(c[i], "PING");
    if (r == NULL)
      return -1;
    freeReplyObject(r);
  }
  bench_samples_push(out, bench_now_ns() - t0);
  return 0;
}

int bench_raw_ping(redisContext *c, bench_samples *out, size_t n) {
  const char *argv[1] = {"PING"};
  for (size_t i = 0; i < n; i++) {
    int64_t t0 = bench_now_ns();
    redisReply *r = redisCommandArgv(c, 1, argv, NULL);
    int64_t t1 = bench_now_ns();
    if (r == NULL)
      return bench_fail("PING: %s", c->errstr), -1;
    freeReplyObject(r);
    bench_samples_push(out, t1 - t0);
  }
  return 0;
}
