/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pubsub.c - shared subscriptions and wake-up permits: the waiters' side,
 * and what the background thread's pushes do to them.
 */
#include "pubsub.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "subproto.h"
#include "client_int.h"
#include "common.h"
#include "subconn.h"
#include "bg.h"

int rlock__pubsub_init(rlock__pubsub *ps) {
  memset(ps, 0, sizeof *ps);
  ps->direct_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (ps->direct_efd < 0)
    return rlock__err(RLOCK_EIO, "eventfd: %s", strerror(errno));
  if (pthread_mutex_init(&ps->mu, NULL) != 0) {
    close(ps->direct_efd);
    return rlock__err(RLOCK_ENOMEM, "cannot create a mutex");
  }
  ps->direct_fd = -1;
  rlock__cond_init(&ps->direct_cv);
  return RLOCK_OK;
}

/* Tell the direct waiter, if it waits on `s`, that something changed.
 * Called locked. */
static void poke(rlock__pubsub *ps, const rlock__sub *s) {
  if (ps->direct != s)
    return;
  uint64_t one = 1;
  ssize_t n;
  do
    n = write(ps->direct_efd, &one, sizeof one);
  while (n < 0 && errno == EINTR);
}

static void drain_efd(int fd) {
  uint64_t v;
  ssize_t n;
  do
    n = read(fd, &v, sizeof v);
  while (n < 0 && errno == EINTR);
}

static void sub_free(rlock__sub *s) {
  pthread_cond_destroy(&s->cv);
  free(s->channel);
  free(s);
}

static void free_entry(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl, (void)arg;
  sub_free(v);
}

void rlock__pubsub_destroy(rlock__pubsub *ps) {
  rlock__map_each(&ps->subs, free_entry, NULL);
  rlock__map_clear(&ps->subs);
  for (size_t i = 0; i < ps->nconns; i++)
    rlock__subconn_free(ps->conns[i]);
  free(ps->conns);
  close(ps->direct_efd);
  pthread_cond_destroy(&ps->direct_cv);
  pthread_mutex_destroy(&ps->mu);
}

/* Find or create the subscription for `channel`. Called locked. */
static rlock__sub *sub_get(rlock__pubsub *ps, const char *channel) {
  size_t len = strlen(channel);
  rlock__sub *s = rlock__map_get(&ps->subs, channel, len);
  if (s != NULL)
    return s;
  s = rlock__calloc(1, sizeof *s);
  if (s == NULL || (s->channel = rlock__strndup(channel, len)) == NULL) {
    free(s);
    return NULL;
  }
  s->chlen = len;
  rlock__cond_init(&s->cv);
  if (rlock__map_put(&ps->subs, s->channel, len, s) != 0) {
    sub_free(s);
    return NULL;
  }
  return s;
}

/* Drop one reference; returns 1 when the background thread must act.
 * Called locked. */
static int sub_unref(rlock__pubsub *ps, rlock__sub *s) {
  if (--s->refs > 0)
    return 0;
  ps->users--;
  s->permits = 0;
  s->skip = 0;
  if (ps->linger_us > 0 && s->state == RLOCK__SUB_ACTIVE &&
      ps->idle < ps->max_idle) {
    s->idle_until_us = rlock__now_us() + ps->linger_us;
    ps->idle++;
    /* The background thread must wake to let it go only when no earlier
     * linger end will wake it first (it looks at every idle one then):
     * a lock taken in a loop costs one wake-up a linger, not one a wait. */
    if (ps->next_idle_us != 0 && ps->next_idle_us <= s->idle_until_us)
      return 0;
    ps->next_idle_us = s->idle_until_us;
    return 1;
  }
  ps->dirty = 1;
  return 1;
}

/* A lingering subscription has a user again, or goes. Called locked. */
static void unlinger(rlock__pubsub *ps, rlock__sub *s) {
  if (s->idle_until_us != 0) {
    s->idle_until_us = 0;
    ps->idle--;
  }
}

int rlock__sub_lingers(rlock__pubsub *ps, rlock__sub *s, int64_t now_us) {
  if (s->idle_until_us > now_us) {
    if (ps->next_idle_us == 0 || s->idle_until_us < ps->next_idle_us)
      ps->next_idle_us = s->idle_until_us;
    return 1;
  }
  unlinger(ps, s);
  return 0;
}

/* The background thread must read `on` from now (a thread waits on it
 * other than by watching it directly): wake it when it left it out of its
 * poll. Called locked. */
static void need_reader(rlock_client *c, rlock__subconn *on) {
  if (on != NULL && !on->polled && on->pub_fd >= 0) {
    on->polled = 1; /* one wake-up is enough: it polls again */
    rlock__bg_wake(c);
  }
}

/* `s` is taken again from its linger, and its connection was left
 * unread while nobody waited: the unlock messages it holds (this client's
 * own releases among them) are older than the attempt that follows, and
 * would each cost a needless attempt. Drop them here when the socket holds
 * nothing else (the usual case: waking the background thread for them
 * would put a second thread on a CPU before each wait, which on two CPUs
 * costs the handoff that follows more than the read); else have the
 * background thread read and drop them first, waiting at most a command
 * timeout (or until `deadline_us`). Called locked. */
static void drain_quiet(rlock_client *c, rlock__sub *s, int64_t deadline_us) {
  rlock__subconn *on = s->on;
  /* Only while this is the client's one user: what is dropped must be
   * nobody else's wake-up (nor a message another's direct wait acted on,
   * whose skip would then swallow the next one). */
  if (on == NULL || on->polled || on->pub_fd < 0 || c->ps->users != 1)
    return;
  if (rlock__subconn_drop_stale(on)) {
    on->read_gen++; /* what a direct waiter parked on is read */
    return;
  }
  struct pollfd p = {.fd = on->pub_fd, .events = POLLIN};
  if (poll(&p, 1, 0) <= 0)
    return;
  uint64_t gen = on->drained_gen;
  on->drain = 1;
  rlock__bg_wake(c);
  int64_t bound = rlock__deadline_after_ms(c->cfg.command_timeout_ms);
  int64_t until = deadline_us < bound ? deadline_us : bound;
  while (s->on == on && on->drained_gen == gen &&
         rlock__cond_wait_until(&c->ps->direct_cv, &c->ps->mu, until) !=
             ETIMEDOUT) {
  }
}

void rlock__pubsub_drained(rlock__pubsub *ps) {
  pthread_cond_broadcast(&ps->direct_cv);
}

/* Wait, locked, until `s` is confirmed. `gen` is the subscription's
 * failure generation before the background thread was asked to subscribe:
 * a failure recorded since then is this attempt's. */
static int wait_active(rlock_client *c, rlock__sub *s, int64_t deadline_us,
                       const rlock_cancel *cancel, uint64_t gen) {
  rlock__pubsub *ps = c->ps;
  /* One server: a subscription is confirmed within a connect and a
   * command, or the server is gone. Behind Sentinel or a cluster, only the
   * caller's deadline bounds it: a failover may take longer. */
  int64_t bound = c->topo.target.kind != RLOCK__TOPO_SINGLE
                      ? INT64_MAX
                      : rlock__deadline_after_ms(c->cfg.connect_timeout_ms +
                                                 c->cfg.command_timeout_ms);
  int64_t until = deadline_us < bound ? deadline_us : bound;
  while (s->state != RLOCK__SUB_ACTIVE) {
    if (s->fail_gen != gen)
      return rlock__err(s->fail_code, "cannot subscribe to %s: %s", s->channel,
                        s->fail_msg);
    if (rlock__canceled(cancel))
      return rlock__err(RLOCK_ECANCELED, "wait canceled");
    int64_t step = rlock__cancel_step(cancel, until);
    if (rlock__cond_wait_until(&s->cv, &ps->mu, step) != ETIMEDOUT ||
        step < until)
      continue;
    if (s->state == RLOCK__SUB_ACTIVE)
      break;
    if (until == deadline_us)
      return RLOCK__EDEADLINE;
    return rlock__err(
        RLOCK_ETIMEOUT,
        "subscription to %s not confirmed "
        "within %lld ms",
        s->channel,
        (long long)(c->cfg.connect_timeout_ms + c->cfg.command_timeout_ms));
  }
  return RLOCK_OK;
}

int rlock__sub_acquire(rlock_client *c, const char *channel,
                       int64_t deadline_us, const rlock_cancel *cancel,
                       rlock__sub **out) {
  /* In a fork()ed child no background thread would ever subscribe. */
  if (!rlock__origin_ok(&c->origin)) {
    *out = NULL;
    return rlock__origin_refuse(&c->origin);
  }
  rlock__pubsub *ps = c->ps;
  pthread_mutex_lock(&ps->mu);
  rlock__sub *s = sub_get(ps, channel);
  if (s == NULL) {
    pthread_mutex_unlock(&ps->mu);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  if (s->refs++ == 0)
    ps->users++;
  if (s->idle_until_us != 0)
    drain_quiet(c, s, deadline_us);
  unlinger(ps, s);
  uint64_t gen = s->fail_gen;
  if (s->state != RLOCK__SUB_ACTIVE) {
    ps->dirty = 1;
    pthread_mutex_unlock(&ps->mu);
    rlock__bg_wake(c);
    pthread_mutex_lock(&ps->mu);
  }
  int rc = wait_active(c, s, deadline_us, cancel, gen);
  int wake = rc != RLOCK_OK && sub_unref(ps, s);
  pthread_mutex_unlock(&ps->mu);
  if (wake)
    rlock__bg_wake(c);
  *out = rc == RLOCK_OK ? s : NULL;
  return rc;
}

/* The subscriber socket a direct waiter on `s` may poll, or -1. Called
 * locked. */
static int sub_fd(const rlock__sub *s) {
  return s->state == RLOCK__SUB_ACTIVE && s->on != NULL ? s->on->pub_fd : -1;
}

/* How many unlock messages for `s` wait unread in the socket (peeked,
 * never consumed: the background thread reads them), or -1 at its end or
 * on an error, which are the background thread's to handle. */
static int messages_in(struct pollfd p, const rlock__sub *s) {
  if (p.revents & (POLLERR | POLLHUP | POLLNVAL))
    return -1;
  char buf[4096], head[64];
  ssize_t n;
  do
    n = recv(p.fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n <= 0)
    return -1;
  /* "message" or "smessage", then the channel as a bulk string. */
  int hl = snprintf(head, sizeof head, "message\r\n$%zu\r\n", s->chlen);
  int count = 0;
  for (const char *q = buf, *end = buf + n;
       (q = memmem(q, (size_t)(end - q), head, (size_t)hl)) != NULL; q += hl)
    if ((size_t)(end - q) >= (size_t)hl + s->chlen + 2 &&
        memcmp(q + hl, s->channel, s->chlen) == 0)
      count++;
  return count;
}

/* Its direct waiter left the socket's bytes to the background thread,
 * which has not read since. Called locked. */
static int is_parked(const rlock__sub *s) {
  return s->parked && s->on != NULL && s->on->read_gen == s->parked_gen;
}

int rlock__pubsub_direct_fd(const rlock__pubsub *ps) {
  const rlock__sub *s = ps->direct;
  if (s == NULL || is_parked(s))
    return -1;
  return sub_fd(s);
}

/* A direct wait (see rlock__pubsub.direct), locked on entry and exit: 1
 * with a wake-up (a permit, or an unlock message for `s` seen waiting in
 * the socket: the caller then attempts at once, before the background
 * thread has even read it, and the wake-up that read brings is skipped),
 * 0 at `until_us` or on cancel. Readiness that is not such a message
 * (another channel's, the socket's end) leaves the socket to the
 * background thread until it has read, so unread bytes cannot make this
 * spin. */
static int wait_direct(rlock_client *c, rlock__sub *s, int64_t until_us,
                       const rlock_cancel *cancel) {
  rlock__pubsub *ps = c->ps;
  ps->direct = s;
  /* The background thread may be asleep in a poll() that still holds the
   * socket: have it poll again without it now, while the lock is held
   * elsewhere, so that the unlock wakes this thread alone. */
  if (rlock__pubsub_direct_fd(ps) >= 0 && s->on->polled)
    rlock__bg_wake(c);
  int got = 0;
  for (;;) {
    if (s->permits > 0 || rlock__canceled(cancel) ||
        rlock__now_us() >= until_us)
      break;
    int fd = rlock__pubsub_direct_fd(ps);
    int64_t step = rlock__cancel_step(cancel, until_us);
    int64_t ms = rlock__ms_left(step);
    struct pollfd p[2] = {{.fd = ps->direct_efd, .events = POLLIN},
                          {.fd = fd, .events = POLLIN}};
    ps->direct_fd = fd; /* not closed until we let go (pubsub_closing) */
    pthread_mutex_unlock(&ps->mu);
    int rc = poll(p, 2, ms > 60000 ? 60000 : (int)(ms < 1 ? 1 : ms));
    if (rc > 0 && p[0].revents != 0)
      drain_efd(ps->direct_efd);
    int readable = rc > 0 && fd >= 0 && p[1].revents != 0;
    int ours = readable ? messages_in(p[1], s) : 0;
    pthread_mutex_lock(&ps->mu);
    ps->direct_fd = -1;
    pthread_cond_broadcast(&ps->direct_cv);
    /* Only the sole user may act on the message itself: with others, one
     * unlock must still wake one thread (Redisson's "0"), so it waits for
     * its permit like them. */
    if (readable) { /* leave these bytes to the background thread */
      s->parked = 1;
      s->parked_gen = s->on != NULL ? s->on->read_gen : 0;
    }
    if (ours > 0 && s->refs == 1 && s->permits == 0 &&
        !rlock__canceled(cancel)) {
      s->skip = 1; /* at most one: a later message may be a new unlock */
      got = 1;
      break;
    }
    if (readable)
      need_reader(c, s->on);
  }
  ps->direct = NULL;
  /* After acting on a message the bytes stay for the background thread,
   * read when this thread waits again, when another one needs the
   * connection, or lazily: none of it delays the attempt. Others may
   * rely on the socket this one stops watching. */
  if (!got && ps->users > 1)
    need_reader(c, s->on);
  if (!got && s->permits > 0 && !rlock__canceled(cancel)) {
    s->permits--;
    got = 1;
  }
  return got;
}

int rlock__sub_wait(rlock_client *c, rlock__sub *s, int64_t until_us,
                    const rlock_cancel *cancel) {
  rlock__pubsub *ps = c->ps;
  pthread_mutex_lock(&ps->mu);
  if (is_parked(s)) /* bytes left for the background thread to read first */
    need_reader(c, s->on);
  s->waiting++;
  if (s->permits == 0 && s->refs == 1 && ps->direct == NULL && sub_fd(s) >= 0) {
    int got = wait_direct(c, s, until_us, cancel);
    s->waiting--;
    pthread_mutex_unlock(&ps->mu);
    if (got)
      rlock__obs_count(ps->obs, RLOCK__STAT_WAKEUPS);
    return got;
  }
  need_reader(c, s->on);
  while (s->permits == 0 && !rlock__canceled(cancel)) {
    int64_t step = rlock__cancel_step(cancel, until_us);
    if (rlock__cond_wait_until(&s->cv, &ps->mu, step) == ETIMEDOUT &&
        step == until_us)
      break;
  }
  /* A canceled waiter will not attempt: leave the wake-up to another. */
  int got = s->permits > 0 && !rlock__canceled(cancel);
  if (got)
    s->permits--;
  else if (s->permits > 0)
    pthread_cond_signal(&s->cv);
  s->waiting--;
  pthread_mutex_unlock(&ps->mu);
  if (got)
    rlock__obs_count(ps->obs, RLOCK__STAT_WAKEUPS);
  return got;
}

void rlock__pubsub_closing(rlock__pubsub *ps, int fd) {
  while (fd >= 0 && ps->direct_fd == fd) {
    poke(ps, ps->direct);
    pthread_cond_wait(&ps->direct_cv, &ps->mu);
  }
}

void rlock__pubsub_read_done(rlock__pubsub *ps, rlock__subconn *on) {
  on->read_gen++;
  if (ps->direct != NULL && ps->direct->on == on)
    poke(ps, ps->direct);
}

void rlock__sub_release(rlock_client *c, rlock__sub *s) {
  pthread_mutex_lock(&c->ps->mu);
  int wake = sub_unref(c->ps, s);
  if (c->ps->users > 0) /* others may rely on what this one watched */
    need_reader(c, s->on);
  pthread_mutex_unlock(&c->ps->mu);
  if (wake)
    rlock__bg_wake(c);
}

typedef struct sweep {
  rlock__pubsub *ps;
  rlock__sub **end;
} sweep;

static void sweep_entry(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl;
  rlock__sub *s = v;
  sweep *sw = arg;
  if (s->refs == 0 && s->state == RLOCK__SUB_NONE) {
    unlinger(sw->ps, s); /* its connection was lost while it lingered */
    *sw->end++ = s;
  }
}

void rlock__pubsub_sweep(rlock__pubsub *ps) {
  rlock__sub **dead = rlock__malloc((ps->subs.count + 1) * sizeof *dead);
  if (dead == NULL)
    return; /* swept next time */
  sweep sw = {ps, dead};
  rlock__map_each(&ps->subs, sweep_entry, &sw);
  for (rlock__sub **d = dead; d < sw.end; d++) {
    rlock__map_del(&ps->subs, (*d)->channel, (*d)->chlen);
    sub_free(*d);
  }
  free(dead);
}

/* ---- what the background thread's pushes do ------------------------- */

/* Release wake-ups for a message, as many as it wakes by its channel's
 * kind (rlock__message_wakes: a lock's "0" one, "1" all). Permits never exceed
 * the number of local users, so a burst of messages cannot pile up. */
static void deliver(rlock__pubsub *ps, rlock__sub *s, const char *payload) {
  if (s->skip > 0) { /* its direct waiter acted on it already */
    s->skip--;
    poke(ps, s);
    return;
  }
  int64_t n = rlock__message_wakes(s->channel, s->chlen, payload);
  if (n >= (int64_t)s->refs) {
    s->permits += s->refs; /* also those between an attempt and a sleep */
    pthread_cond_broadcast(&s->cv);
  } else {
    for (int64_t i = 0; i < n; i++) {
      s->permits++;
      pthread_cond_signal(&s->cv);
    }
  }
  if (s->permits > s->refs)
    s->permits = s->refs;
  poke(ps, s);
}

/* Every local user attempts once more: unlocks may have been missed. */
static void wake_all(rlock__pubsub *ps, rlock__sub *s) {
  s->permits = s->refs;
  s->skip = 0;
  pthread_cond_broadcast(&s->cv);
  poke(ps, s);
}

static void on_subscribed(rlock__pubsub *ps, rlock__sub *s) {
  if (s->state == RLOCK__SUB_PENDING)
    s->state = RLOCK__SUB_ACTIVE;
  if (s->resub) {
    s->resub = 0;
    wake_all(ps, s);
  }
  if (s->refs == 0)
    ps->dirty = 1;
  pthread_cond_broadcast(&s->cv);
}

/* An unsubscribe we asked for ends the subscription; one we did not (the
 * server moved the channel's slot away) means it must be redone on the
 * slot's new owner. */
static void on_unsubscribed(rlock__pubsub *ps, rlock__sub *s) {
  if (s->state != RLOCK__SUB_UNSUB_PENDING && s->refs > 0)
    s->resub = 1;
  if (s->state != RLOCK__SUB_UNSUB_PENDING && ps->sharded)
    s->on = NULL;
  s->state = RLOCK__SUB_NONE;
  ps->dirty = 1;
}

void rlock__pubsub_push(rlock__pubsub *ps, rlock__subconn *on,
                        const rlock__push *push) {
  rlock__sub *s = rlock__map_get(&ps->subs, push->channel, push->chlen);
  if (s == NULL || s->on != on)
    return; /* a late push for a subscription that moved on */
  if (push->kind == RLOCK__PUSH_MESSAGE)
    deliver(ps, s, push->payload);
  else if (push->kind == RLOCK__PUSH_SUBSCRIBED)
    on_subscribed(ps, s);
  else if (push->kind == RLOCK__PUSH_UNSUBSCRIBED)
    on_unsubscribed(ps, s);
}

typedef struct conn_event {
  rlock__pubsub *ps;
  rlock__subconn *on;
  int code;
  const char *msg;
  int reroute;
} conn_event;

static void fail_entry(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl;
  rlock__sub *s = v;
  conn_event *e = arg;
  if (s->on != e->on)
    return;
  s->fail_gen++;
  s->fail_code = e->code;
  snprintf(s->fail_msg, sizeof s->fail_msg, "%s", e->msg);
  pthread_cond_broadcast(&s->cv);
}

void rlock__pubsub_fail(rlock__pubsub *ps, rlock__subconn *on, int code,
                        const char *msg) {
  conn_event e = {ps, on, code, msg, 0};
  rlock__map_each(&ps->subs, fail_entry, &e);
}

static void lost_entry(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl;
  rlock__sub *s = v;
  conn_event *e = arg;
  if (s->on != e->on)
    return;
  if (s->state != RLOCK__SUB_NONE && s->refs > 0)
    s->resub = 1;
  s->state = RLOCK__SUB_NONE;
  if (e->reroute)
    s->on = NULL;
}

void rlock__pubsub_lost(rlock__pubsub *ps, rlock__subconn *on, int reroute) {
  conn_event e = {ps, on, 0, NULL, reroute};
  rlock__map_each(&ps->subs, lost_entry, &e);
  ps->dirty = 1;
}
