/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * follow.c - what `status --watch` and `leader --watch` wait on: the
 * messages of a lock's channels (rlock/watch.h), told to the command's
 * thread through a pipe, and a caught signal.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define FOLLOW_MAX 2

struct cli_follow {
  rlock_watch *w[FOLLOW_MAX];
  int n;
  int pipe[2];
  atomic_int news; /* a message, or a subscription back: read again */
};

/* The client's loop thread: note it, and wake the command's poll. */
static void on_event(void *arg, rlock_watch_event ev, const char *payload,
                     size_t len) {
  (void)payload, (void)len;
  cli_follow *f = arg;
  if (ev == RLOCK_WATCH_LOST)
    return; /* read again when it is back */
  atomic_store(&f->news, 1);
  ssize_t r;
  do
    r = write(f->pipe[1], "", 1);
  while (r < 0 && errno == EINTR);
}

int cli_follow_new(cli_follow **out) {
  cli_follow *f = calloc(1, sizeof *f);
  if (f == NULL)
    return cli_fail(EX_OSERR, "out of memory");
  if (pipe2(f->pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    free(f);
    return cli_fail(EX_OSERR, "pipe: %s", strerror(errno));
  }
  *out = f;
  return 0;
}

int cli_follow_lock(cli_follow *f, rlock_lock *lock) {
  if (f->n == FOLLOW_MAX)
    return cli_fail(EX_SOFTWARE, "too many channels to follow");
  int rc = rlock_watch_lock(&f->w[f->n], lock, on_event, f);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc);
  f->n++;
  return 0;
}

int cli_follow_election(cli_follow *f, rlock_election *e) {
  if (f->n == FOLLOW_MAX)
    return cli_fail(EX_SOFTWARE, "too many channels to follow");
  int rc = rlock_watch_election(&f->w[f->n], e, on_event, f);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc);
  f->n++;
  return 0;
}

int cli_follow_wait(cli_follow *f, int64_t ms) {
  int64_t end = cli_now_ms() + ms;
  for (;;) {
    if (cli_signal_caught() != 0)
      return -1;
    if (atomic_exchange(&f->news, 0)) {
      char buf[64];
      while (read(f->pipe[0], buf, sizeof buf) > 0)
        ;
      return 1;
    }
    int64_t left = end - cli_now_ms();
    if (left <= 0)
      return 0;
    struct pollfd p = {.fd = f->pipe[0], .events = POLLIN};
    /* A signal ends the poll (no SA_RESTART); steps bound a missed one. */
    poll(&p, 1, left > 100 ? 100 : (int)left);
  }
}

void cli_follow_free(cli_follow *f) {
  if (f == NULL)
    return;
  for (int i = 0; i < f->n; i++)
    rlock_watch_free(f->w[i]);
  close(f->pipe[0]);
  close(f->pipe[1]);
  free(f);
}
