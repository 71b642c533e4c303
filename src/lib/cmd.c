/*
 * cmd.c - the internal command layer: route, borrow a connection, run,
 * map error replies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "common.h"

rlock__pool *rlock__route(rlock_client *c, const char *key) {
  (void)key; /* one server today; Cluster routes by slot here */
  return &c->pool;
}

/* Turn an error reply into a status code; frees the reply. */
static int error_reply(rlock__conn *conn, redisReply *r) {
  int code = RLOCK_ESERVER;
  if (strstr(r->str, "WRONGTYPE") != NULL)
    code = RLOCK_EWRONGTYPE;
  else if (strncmp(r->str, "NOAUTH", 6) == 0 ||
           strncmp(r->str, "WRONGPASS", 9) == 0 ||
           strncmp(r->str, "NOPERM", 6) == 0)
    code = RLOCK_EAUTH;
  rlock__err(code, "redis %s: %s", conn->where, r->str);
  freeReplyObject(r);
  return code;
}

static int call_checked(rlock__conn *conn, int argc, const char **argv,
                        const size_t *lens, redisReply **out) {
  int rc = rlock__conn_call(conn, argc, argv, lens, out);
  if (rc == RLOCK_OK && (*out)->type == REDIS_REPLY_ERROR) {
    rc = error_reply(conn, *out);
    *out = NULL;
  }
  return rc;
}

int rlock__cmd(rlock_client *c, const char *route_key, int argc,
               const char **argv, const size_t *lens, redisReply **out) {
  rlock__pool *pool = rlock__route(c, route_key);
  rlock__conn *conn;
  *out = NULL;
  int rc = rlock__pool_get(pool, &conn);
  if (rc != RLOCK_OK)
    return rc;
  rc = call_checked(conn, argc, argv, lens, out);
  rlock__pool_put(pool, conn);
  return rc;
}

static int is_noscript(const redisReply *r) {
  return r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

#define SMALL_ARGV 16

int rlock__cmd_script(rlock_client *c, const rlock__script *s, int nkeys,
                      int nargs, const char **kv, const size_t *lens,
                      redisReply **out) {
  int argc = 3 + nkeys + nargs;
  const char *small_argv[SMALL_ARGV];
  size_t small_lens[SMALL_ARGV];
  const char **argv = small_argv;
  size_t *alens = small_lens;
  if (argc > SMALL_ARGV) {
    argv = malloc((size_t)argc * sizeof *argv);
    alens = malloc((size_t)argc * sizeof *alens);
    if (argv == NULL || alens == NULL) {
      free(argv);
      free(alens);
      return rlock__err(RLOCK_ENOMEM, "out of memory");
    }
  }
  char nk[16];
  snprintf(nk, sizeof nk, "%d", nkeys);
  argv[0] = "EVALSHA";
  argv[1] = s->sha;
  argv[2] = nk;
  alens[0] = 7;
  alens[1] = 40;
  alens[2] = strlen(nk);
  for (int i = 0; i < nkeys + nargs; i++) {
    argv[3 + i] = kv[i];
    alens[3 + i] = lens ? lens[i] : strlen(kv[i]);
  }

  rlock__pool *pool = rlock__route(c, kv[0]);
  rlock__conn *conn;
  int rc = rlock__pool_get(pool, &conn);
  if (rc == RLOCK_OK) {
    rc = rlock__conn_call(conn, argc, argv, alens, out);
    if (rc == RLOCK_OK && is_noscript(*out)) {
      freeReplyObject(*out);
      argv[0] = "EVAL";
      alens[0] = 4;
      argv[1] = s->text;
      alens[1] = s->len;
      rc = rlock__conn_call(conn, argc, argv, alens, out);
    }
    if (rc == RLOCK_OK && (*out)->type == REDIS_REPLY_ERROR) {
      rc = error_reply(conn, *out);
      *out = NULL;
    }
    rlock__pool_put(pool, conn);
  }
  if (argv != small_argv) {
    free(argv);
    free(alens);
  }
  return rc;
}
