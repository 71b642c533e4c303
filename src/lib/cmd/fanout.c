/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fanout.c - concurrent script calls on several servers.
 */
#include "fanout.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "client_int.h"
#include "common.h"

/* Finish a request with `rc`, keeping the thread's message for it. */
static void finish(rlock__fan *f, int rc) {
  f->done = 1;
  f->rc = rc;
  if (rc != RLOCK_OK)
    snprintf(f->error, sizeof f->error, "%s", rlock_error_last()->message);
}

/* Encode what the request wants sent next into its connection's buffer,
 * and send it. */
static int send_next(rlock__fan *f) {
  if (rlock__req_encode_to(&f->req, &f->conn->out) < 0)
    return rlock_error_last()->code;
  return rlock__conn_send_out(f->conn);
}

/* Send the call on the connection just had. */
static void begin(rlock__fan *f) {
  f->conn->io_deadline_us = rlock__deadline_after_ms(f->conn->timeout_ms);
  int rc = send_next(f);
  if (rc != RLOCK_OK)
    finish(f, rc);
}

static void start(rlock__fan *f) {
  f->done = 0;
  f->reply = NULL;
  f->conn = NULL;
  f->opening = NULL;
  f->opened_us = 0;
  f->error[0] = '\0';
  rlock__req_init(&f->req, &f->call);
  rlock__node *node;
  int rc = rlock__topo_route(&f->client->topo, rlock__call_route_key(&f->call),
                             &node);
  if (rc == RLOCK_OK) {
    f->pool = &node->pool;
    rc = rlock__pool_get_idle(f->pool, &f->conn);
  }
  if (rc == RLOCK_OK && f->conn == NULL)
    rc = rlock__pool_open_async(f->pool, &f->opening);
  if (rc != RLOCK_OK)
    finish(f, rc);
  else if (f->conn != NULL)
    begin(f);
}

/* The request's connection has been opened, or could not be. */
static void on_opened(rlock__fan *f) {
  int rc;
  char msg[256];
  if (!rlock__pool_open_take(f->opening, &rc, &f->conn, msg, sizeof msg))
    return; /* not yet: the wake-up was spurious */
  f->opening = NULL;
  if (rc == RLOCK_OK) {
    f->opened_us = rlock__now_us();
    begin(f);
  } else
    finish(f, rlock__err(rc, "%s", msg));
}

/* The request must go to another node (a redirection, a cluster that is
 * down for now): rare, so it finishes on the blocking path, bounded by
 * the fan-out's deadline. Nothing ran, so the connection is reusable. */
static void hand_over(rlock__fan *f, int64_t deadline_us) {
  f->conn->io_deadline_us = 0;
  rlock__pool_put(f->pool, f->conn);
  f->conn = NULL;
  int rc = rlock__req_run(f->client, &f->req, deadline_us);
  f->reply = f->req.reply;
  finish(f, rc);
}

/* Read what arrived for `f`; finish it when its request is done. */
static void on_readable(rlock__fan *f, int64_t deadline_us) {
  rlock__reply *r = NULL;
  int rc = rlock__conn_read_some(f->conn);
  while (rc == RLOCK_OK &&
         (rc = rlock__conn_take_reply(f->conn, &r)) == RLOCK_OK && r != NULL) {
    rlock__step step = rlock__req_feed(&f->req, f->conn->where, r);
    if (step == RLOCK__STEP_DONE) {
      f->reply = f->req.reply;
      finish(f, f->req.rc);
      return;
    }
    if (step == RLOCK__STEP_RESEND)
      rc = send_next(f);
    else if (step != RLOCK__STEP_MORE)
      return hand_over(f, deadline_us);
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
      int fd = reqs[i].opening ? rlock__pool_open_fd(reqs[i].opening)
                               : reqs[i].conn->fd;
      fds[m] = (struct pollfd){.fd = fd, .events = POLLIN};
      idx[m++] = i;
    }
  int64_t left = rlock__ms_left(rlock__bound_step(deadline));
  if (poll(fds, (nfds_t)m, left > 60000 ? 60000 : (int)left) <= 0)
    return 0;
  for (size_t k = 0; k < m; k++)
    if (fds[k].revents != 0) {
      rlock__fan *f = &reqs[idx[k]];
      if (f->opening != NULL)
        on_opened(f);
      else
        on_readable(f, deadline);
      finished += f->done;
    }
  return finished;
}

/* The longest a connection that was made took to open: a slow connect
 * (a loaded machine, a TLS handshake) is not held against its server's
 * reply time, as when connections were opened one after the other. A
 * server that cannot be reached at all extends nothing, so it delays no
 * other beyond the caller's deadline. */
static int64_t connecting_us(const rlock__fan *reqs, size_t n, int64_t begun) {
  int64_t most = 0;
  for (size_t i = 0; i < n; i++)
    if (reqs[i].opened_us != 0 && reqs[i].opened_us - begun > most)
      most = reqs[i].opened_us - begun;
  return most;
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
    if (!f->done && f->opening != NULL) {
      char where[128];
      rlock__endpoint_str(&f->pool->ep, where, sizeof where);
      rlock__pool_open_abandon(f->opening); /* a late connection is kept */
      f->opening = NULL;
      finish(f, rlock__err(abandoned ? RLOCK__EABANDONED : RLOCK_ETIMEOUT,
                           "redis %s: not connected in time", where));
    } else if (!f->done) {
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
    rlock__call_clear(&f->call);
  }
}

void rlock__fanout(rlock__fan *reqs, size_t n, int64_t deadline_us,
                   int (*decide)(void *arg), void *arg) {
  int64_t begun = rlock__now_us(), base = deadline_us;
  for (size_t i = 0; i < n; i++)
    start(&reqs[i]);
  int decided = decide != NULL && decide(arg);
  int polled = 0;
  while (
      !decided && !all_done(reqs, n) &&
      (!polled || (rlock__now_us() < deadline_us && !rlock__bound_reached()))) {
    polled = 1;
    /* The caller's bound (rlock__bound) is not stretched by connects. */
    deadline_us = rlock__bound_clip(base + connecting_us(reqs, n, begun));
    if (poll_round(reqs, n, deadline_us) > 0 && decide != NULL)
      decided = decide(arg);
  }
  settle(reqs, n, decided);
}
