/*
 * fanout.c - concurrent script calls on several servers.
 */
#include "fanout.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "common.h"

/* Finish a request with `rc`, keeping the thread's message for it. */
static void finish(rlock__fan *f, int rc) {
  f->done = 1;
  f->rc = rc;
  if (rc != RLOCK_OK)
    snprintf(f->error, sizeof f->error, "%s", rlock_error_last()->message);
}

/* Encode and send the script (EVALSHA, or EVAL when `eval`). */
static int send_script(rlock__fan *f, int eval) {
  int argc = 3 + f->nkeys + f->nargs;
  const char **argv = malloc((size_t)argc * sizeof *argv);
  size_t *lens = malloc((size_t)argc * sizeof *lens);
  char nk[16];
  int rc = RLOCK_OK;
  if (argv == NULL || lens == NULL) {
    rc = rlock__err(RLOCK_ENOMEM, "out of memory");
    goto out;
  }
  snprintf(nk, sizeof nk, "%d", f->nkeys);
  argv[0] = eval ? "EVAL" : "EVALSHA";
  argv[1] = eval ? f->script->text : f->script->sha;
  argv[2] = nk;
  lens[0] = strlen(argv[0]);
  lens[1] = eval ? f->script->len : 40;
  lens[2] = strlen(nk);
  for (int i = 0; i < f->nkeys + f->nargs; i++) {
    argv[3 + i] = f->kv[i];
    lens[3 + i] = strlen(f->kv[i]);
  }
  char *cmd;
  long len = rlock__conn_format(&cmd, argc, argv, lens);
  if (len < 0) {
    rc = rlock__err(RLOCK_ENOMEM, "out of memory");
    goto out;
  }
  rc = rlock__conn_send(f->conn, cmd, (size_t)len);
  free(cmd);
out:
  free(argv);
  free(lens);
  return rc;
}

static void start(rlock__fan *f) {
  f->done = 0;
  f->eval_sent = 0;
  f->reply = NULL;
  f->conn = NULL;
  f->error[0] = '\0';
  f->pool = rlock__route(f->client, f->kv[0]);
  int rc = rlock__pool_get(f->pool, &f->conn);
  if (rc == RLOCK_OK) {
    f->conn->io_deadline_us = rlock__deadline_after_ms(f->conn->timeout_ms);
    rc = send_script(f, 0);
  }
  if (rc != RLOCK_OK)
    finish(f, rc);
}

/* Map an error reply to a status (WRONGTYPE, ...); frees it. */
static int error_reply(rlock__fan *f, redisReply *r) {
  int code = strstr(r->str, "WRONGTYPE") ? RLOCK_EWRONGTYPE
             : strncmp(r->str, "NOAUTH", 6) == 0 ? RLOCK_EAUTH
                                                 : RLOCK_ESERVER;
  rlock__err(code, "redis %s: %s", f->conn->where, r->str);
  freeReplyObject(r);
  return code;
}

/* Read what arrived for `f`; finish it when its reply is complete. */
static void on_readable(rlock__fan *f) {
  redisReply *r = NULL;
  int rc = rlock__conn_read_some(f->conn);
  while (rc == RLOCK_OK && (rc = rlock__conn_take_reply(f->conn, &r)) ==
                               RLOCK_OK && r != NULL) {
    if (r->type == REDIS_REPLY_ERROR && !f->eval_sent &&
        strncmp(r->str, "NOSCRIPT", 8) == 0) {
      freeReplyObject(r);
      f->eval_sent = 1;
      rc = send_script(f, 1);
      continue;
    }
    if (r->type == REDIS_REPLY_ERROR) {
      finish(f, error_reply(f, r));
      return;
    }
    f->reply = r;
    finish(f, RLOCK_OK);
    return;
  }
  if (rc != RLOCK_OK)
    finish(f, rc);
}

/* One poll over the pending requests; returns how many finished. */
static size_t poll_round(rlock__fan *reqs, size_t n, int64_t deadline) {
  struct pollfd fds[RLOCK__FANOUT_MAX];
  size_t idx[RLOCK__FANOUT_MAX], m = 0, finished = 0;
  for (size_t i = 0; i < n; i++)
    if (!reqs[i].done) {
      fds[m] = (struct pollfd){.fd = reqs[i].conn->fd, .events = POLLIN};
      idx[m++] = i;
    }
  int64_t left = rlock__ms_left(deadline);
  if (poll(fds, (nfds_t)m, left > 60000 ? 60000 : (int)left) <= 0)
    return 0;
  for (size_t k = 0; k < m; k++)
    if (fds[k].revents != 0) {
      on_readable(&reqs[idx[k]]);
      finished += reqs[idx[k]].done;
    }
  return finished;
}

static int all_done(const rlock__fan *reqs, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!reqs[i].done)
      return 0;
  return 1;
}

/* Give every connection back. A request abandoned by the decision keeps
 * its connection, which owes one reply: the next user drains it first
 * (cheaper than reconnecting, and it keeps this request ahead of the
 * next one on that server). A request that timed out drops its
 * connection: its server is slow or gone. */
static void settle(rlock__fan *reqs, size_t n, int abandoned) {
  for (size_t i = 0; i < n; i++) {
    rlock__fan *f = &reqs[i];
    if (!f->done) {
      rlock__err(abandoned ? RLOCK__EABANDONED : RLOCK_ETIMEOUT,
                 "redis %s: no answer in time", f->conn->where);
      finish(f, abandoned ? RLOCK__EABANDONED : RLOCK_ETIMEOUT);
      if (abandoned)
        f->conn->owed++;
      else
        f->conn->broken = 1;
    }
    if (f->conn != NULL) {
      f->conn->io_deadline_us = 0;
      rlock__pool_put(f->pool, f->conn);
    }
    f->conn = NULL;
  }
}

void rlock__fanout(rlock__fan *reqs, size_t n, int64_t deadline_us,
                   int (*decide)(void *arg), void *arg) {
  int64_t begun = rlock__now_us();
  for (size_t i = 0; i < n; i++)
    start(&reqs[i]);
  /* Opening a connection to an unreachable server blocks up to the
   * connect timeout: that time must not count against the others, whose
   * replies may be waiting already. */
  deadline_us += rlock__now_us() - begun;
  int decided = decide != NULL && decide(arg);
  int polled = 0;
  while (!decided && !all_done(reqs, n) &&
         (!polled || rlock__now_us() < deadline_us)) {
    polled = 1;
    if (poll_round(reqs, n, deadline_us) > 0 && decide != NULL)
      decided = decide(arg);
  }
  settle(reqs, n, decided);
}
