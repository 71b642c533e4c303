/* SPDX-License-Identifier: BSD-3-Clause */
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

/* The library's default watchdog timeout, which is the lease
 * rlock_lock_acquire() sends (and the one its release keeps). */
#define LEASE "30000"

/* Timeouts equal to the library's defaults, so a dead server fails the
 * bench instead of hanging it. */
#define CONNECT_TIMEOUT_MS 2000
#define COMMAND_TIMEOUT_MS 3000

static redisContext *open_socket(const bench_url *u) {
  struct timeval tv = {CONNECT_TIMEOUT_MS / 1000, 0};
  if (u->path[0] != '\0')
    return redisConnectUnixWithTimeout(u->path, tv);
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
static int login(redisContext *c, const bench_url *u) {
  char db[16];
  if (u->has_password) {
    int user = u->user[0] != '\0';
    const char *argv[3] = {"AUTH", user ? u->user : u->password, u->password};
    redisReply *r = bench_raw_cmd(c, user ? 3 : 2, argv, NULL);
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
  bench_url u;
  if (bench_url_parse(&u, url) != 0)
    return NULL;
  redisContext *c = open_socket(&u);
  if (c == NULL || c->err) {
    bench_fail("cannot connect to %s: %s", url, c ? c->errstr : "no memory");
    redisFree(c);
    return NULL;
  }
  struct timeval tv = {COMMAND_TIMEOUT_MS / 1000, 0};
  redisSetTimeout(c, tv);
  if (login(c, &u) != 0) {
    redisFree(c);
    c = NULL;
  }
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

void bench_lock_cmds_init(bench_lock_cmds *f, const char *name) {
  bench_fake_owner(f->owner, sizeof f->owner);
  /* Redisson's channel name, as the library publishes on it. */
  snprintf(f->channel, sizeof f->channel, "redisson_lock__channel:{%s}", name);
  /* A single server's release carries no latch (TTL 0), as the library's. */
  snprintf(f->latch, sizeof f->latch, "redisson_unlock_latch:{%s}:-", name);
  const char *acq[6] = {
      "EVALSHA", bench_script_lock_acquire.sha, "1", name, LEASE, f->owner};
  const char *rel[11] = {"EVALSHA", bench_script_lock_release.sha,
                         "1",       name,
                         "0",       LEASE,
                         f->owner,  "PUBLISH",
                         "0",       f->channel,
                         f->latch};
  memcpy(f->acq, acq, sizeof acq);
  memcpy(f->rel, rel, sizeof rel);
}

int bench_load_lock_scripts(const char *url) {
  const bench_script *s[2] = {&bench_script_lock_acquire,
                              &bench_script_lock_release};
  redisContext *c = bench_raw_connect(url);
  int rc = c != NULL ? 0 : -1;
  for (int i = 0; i < 2 && rc == 0; i++) {
    const char *argv[3] = {"SCRIPT", "LOAD", s[i]->text};
    size_t lens[3] = {6, 4, s[i]->len};
    redisReply *r = bench_raw_cmd(c, 3, argv, lens);
    if (r == NULL)
      rc = -1;
    else if (r->type != REDIS_REPLY_STRING || strcmp(r->str, s[i]->sha) != 0)
      rc = -bench_fail("SCRIPT LOAD %s: unexpected SHA1", s[i]->name);
    freeReplyObject(r);
  }
  if (c != NULL)
    redisFree(c);
  return rc;
}
