/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pubsub.c - channel fronts and wake-up permits: the waiting threads'
 * side, and what the loop's channel tells a front (on the loop thread).
 */
#include "pubsub.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bg.h"
#include "client_int.h"
#include "common.h"
#include "subproto.h"

static void linger_due(rlock_client *c, rlock__ltimer *t);

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
  ps->muted_fd = -1;
  atomic_init(&ps->master_moved, 0);
  rlock__ltimer_init(&ps->linger, linger_due);
  rlock__cond_init(&ps->direct_cv);
  return RLOCK_OK;
}

/* Tell the direct waiter, if it waits on `s`, that something changed.
 * Called locked. */
static void poke(rlock__pubsub *ps, const rlock__sub *s) {
  if (ps->direct != s || s == NULL)
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
  close(ps->direct_efd);
  pthread_cond_destroy(&ps->direct_cv);
  pthread_mutex_destroy(&ps->mu);
}

static int front_asleep(const rlock__lwaiter *w);
static void front_event(rlock__lwaiter *w, rlock__chan_event what);

/* Find or create the front for `channel`. Called locked. */
static rlock__sub *sub_get(rlock_client *c, const char *channel) {
  rlock__pubsub *ps = c->ps;
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
  s->pub_fd = -1;
  s->c = c;
  s->w.asleep = front_asleep;
  s->w.event = front_event;
  rlock__cond_init(&s->cv);
  if (rlock__map_put(&ps->subs, s->channel, len, s) != 0) {
    sub_free(s);
    return NULL;
  }
  return s;
}

/* A lingering front has a user again, or goes. Called locked. */
static void unlinger(rlock__pubsub *ps, rlock__sub *s) {
  if (s->idle_until_us != 0) {
    s->idle_until_us = 0;
    ps->idle--;
  }
}

/* Drop one reference; returns 1 when the loop thread must act. Called
 * locked. */
static int sub_unref(rlock__pubsub *ps, rlock__sub *s) {
  if (--s->refs > 0)
    return 0;
  ps->users--;
  s->permits = 0;
  s->skip = 0;
  if (ps->linger_us > 0 && s->active && ps->idle < ps->max_idle) {
    s->idle_until_us = rlock__now_us() + ps->linger_us;
    ps->idle++;
    /* The loop thread must wake to let it go only when no earlier linger
     * end will wake it first (it looks at every idle one then): a lock
     * taken in a loop costs one wake-up a linger, not one a wait. */
    if (ps->next_idle_us != 0 && ps->next_idle_us <= s->idle_until_us)
      return 0;
    ps->next_idle_us = s->idle_until_us;
  }
  ps->dirty = 1;
  return 1;
}

/* The loop thread must read the subscriber sockets from now (a thread
 * waits on them other than by watching one directly): wake it when it
 * left any out of its poll. Called locked. */
static void need_reader(rlock_client *c) {
  rlock__pubsub *ps = c->ps;
  if (ps->muted_fd >= 0 || ps->muted_quiet) {
    ps->muted_fd = -1; /* one wake-up is enough: it polls again */
    ps->muted_quiet = 0;
    rlock__bg_wake(c);
  }
}

/* How many unlock messages for `s` `buf` holds (a peek at its socket). */
static int count_messages(const char *buf, size_t n, const rlock__sub *s) {
  char head[64];
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

/* Read away the whole (s)message pushes at the head of `fd` (whose input
 * the loop leaves alone now: quiet). Called locked. */
static void drop_stale(int fd) {
  char buf[4096];
  ssize_t n;
  do
    n = recv(fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  size_t len = n > 0 ? rlock__push_messages_len(buf, (size_t)n) : 0;
  if (len > 0) {
    do
      n = recv(fd, buf, len, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
  }
}

/* `s` is taken back from its linger: what its socket holds unread (this
 * client's own releases among it) is older than the attempt that follows,
 * and each message would cost a needless attempt. While the loop leaves
 * the quiet socket unread and this is the client's one user (what goes is
 * no one else's wake-up), the whole message pushes at its head are read
 * away here (while the loop leaves the socket out whole: quiet, or still
 * left to an earlier direct wait): waking the background thread would put a
 * second thread on a CPU just before the wait (not while the client has
 * a watch, which must hear every message). What is left (a confirmation, a
 * push cut short, more than a peek shows) is marked: its unlock messages
 * are skipped when the loop reads them, and a direct waiter looks past
 * those bytes. Called locked. */
static void mark_stale(rlock_client *c, rlock__pubsub *ps, rlock__sub *s) {
  int unread = (ps->muted_quiet && ps->quiet_whole) ||
               (ps->muted_fd == s->pub_fd && ps->direct_whole);
  /* Never with a watch (rlock/watch.h): every message is a watch's. */
  if (s->pub_fd >= 0 && ps->users == 1 && unread &&
      atomic_load(&c->loop->watches) == 0) {
    drop_stale(s->pub_fd);
    ps->read_gen++; /* what a parked direct waiter waited for is gone */
  }
  int queued = 0;
  if (s->pub_fd < 0 || ioctl(s->pub_fd, FIONREAD, &queued) != 0 || queued <= 0)
    return;
  char buf[4096];
  ssize_t n;
  do
    n = recv(s->pub_fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n != queued) /* more than a peek shows: leave it to the loop */
    return;
  s->skip += count_messages(buf, (size_t)n, s);
  s->stale = (size_t)n;
  s->stale_gen = ps->read_gen;
}

/* Wait, locked, until `s` is confirmed. `gen` is the front's failure
 * generation before it was asked for: a failure recorded since then is
 * this attempt's. */
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
  while (!s->active) {
    if (s->fail_gen != gen)
      return rlock__err(s->fail_code, "cannot subscribe to %s: %s", s->channel,
                        s->fail_msg);
    if (rlock__canceled(cancel))
      return rlock__err(RLOCK_ECANCELED, "wait canceled");
    int64_t step = rlock__cancel_step(cancel, until);
    if (rlock__cond_wait_until(&s->cv, &ps->mu, step) != ETIMEDOUT ||
        step < until)
      continue;
    if (s->active)
      break;
    if (until == deadline_us)
      return RLOCK__EDEADLINE;
    return rlock__err(
        RLOCK_ETIMEOUT, "subscription to %s not confirmed within %lld ms",
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
  rlock__sub *s = sub_get(c, channel);
  if (s == NULL) {
    pthread_mutex_unlock(&ps->mu);
    return rlock__err(RLOCK_ENOMEM, "out of memory");
  }
  if (s->refs++ == 0) {
    ps->users++;
    if (s->idle_until_us != 0 && s->active)
      mark_stale(c, ps, s);
  }
  unlinger(ps, s);
  uint64_t gen = s->fail_gen;
  if (!s->active) {
    ps->dirty = 1;
    rlock__bg_wake(c);
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
static int sub_fd(const rlock__sub *s) { return s->active ? s->pub_fd : -1; }

/* How many unlock messages for `s` wait unread in the socket (peeked,
 * never consumed: the loop reads them), past the stale bytes; -1 at its
 * end or on an error, which are the loop's to handle. Called unlocked
 * with `stale` read locked. */
static int messages_in(struct pollfd p, const rlock__sub *s, size_t stale) {
  if (p.revents & (POLLERR | POLLHUP | POLLNVAL))
    return -1;
  char buf[4096];
  ssize_t n;
  do
    n = recv(p.fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n <= 0)
    return -1;
  if ((size_t)n <= stale)
    return 0;
  return count_messages(buf + stale, (size_t)n - stale, s);
}

/* Its direct waiter left the socket's bytes to the loop, which has not
 * read since. Called locked. */
static int is_parked(const rlock__pubsub *ps, const rlock__sub *s) {
  return s->parked && ps->read_gen == s->parked_gen;
}

/* The socket a direct waiter on `s` polls now, or -1. Called locked. */
static int direct_fd(const rlock__pubsub *ps, const rlock__sub *s) {
  if (is_parked(ps, s))
    return -1;
  return sub_fd(s);
}

/* One poll of a direct wait, locked on entry and exit: 1 when it acted on
 * an unlock message for `s` seen waiting in the socket, 0 otherwise. */
static int direct_poll(rlock_client *c, rlock__sub *s, int64_t until_us,
                       const rlock_cancel *cancel) {
  rlock__pubsub *ps = c->ps;
  int fd = direct_fd(ps, s);
  size_t stale = ps->read_gen == s->stale_gen ? s->stale : 0;
  int64_t ms = rlock__ms_left(rlock__cancel_step(cancel, until_us));
  struct pollfd p[2] = {{.fd = ps->direct_efd, .events = POLLIN},
                        {.fd = fd, .events = POLLIN}};
  ps->direct_fd = fd; /* not closed until we let go (pubsub_closing) */
  pthread_mutex_unlock(&ps->mu);
  int rc = poll(p, 2, ms > 60000 ? 60000 : (int)(ms < 1 ? 1 : ms));
  if (rc > 0 && p[0].revents != 0)
    drain_efd(ps->direct_efd);
  int readable = rc > 0 && fd >= 0 && p[1].revents != 0;
  int ours = readable ? messages_in(p[1], s, stale) : 0;
  pthread_mutex_lock(&ps->mu);
  ps->direct_fd = -1;
  pthread_cond_broadcast(&ps->direct_cv);
  if (readable) {
    /* Leave these bytes to the loop until it has read them. */
    s->parked = 1;
    s->parked_gen = ps->read_gen;
  }
  /* Only the sole user may act on the message itself: with others, one
   * unlock must still wake one thread (Redisson's "0"), so it waits for
   * its permit like them. */
  if (ours > 0 && s->refs == 1 && s->permits == 0 && !rlock__canceled(cancel)) {
    s->skip++; /* its delivery wakes no one */
    return 1;
  }
  if (s->parked)
    need_reader(c);
  return 0;
}

/* A direct wait (see rlock__pubsub.direct), locked on entry and exit: 1
 * with a wake-up (a permit, or an unlock message for `s` seen waiting in
 * the socket: the caller then attempts at once, before the loop has even
 * read it, and the wake-up that read brings is skipped), 0 at `until_us`
 * or on cancel. */
static int wait_direct(rlock_client *c, rlock__sub *s, int64_t until_us,
                       const rlock_cancel *cancel) {
  rlock__pubsub *ps = c->ps;
  ps->direct = s;
  /* The loop thread may be asleep in a poll() that still holds the
   * socket: have it poll again without it now, so that the unlock wakes
   * this thread alone. */
  int fd = direct_fd(ps, s);
  if (fd >= 0 && ps->muted_fd != fd && !ps->muted_quiet)
    rlock__bg_wake(c);
  int got = 0;
  while (!got && s->permits == 0 && !rlock__canceled(cancel) &&
         rlock__now_us() < until_us)
    got = direct_poll(c, s, until_us, cancel);
  ps->direct = NULL;
  /* Others may rely on the socket this one stops watching; a watch
   * (rlock/watch.h) on the message this one acted on, once it is woken. */
  if ((!got && ps->users > 1) || atomic_load(&c->loop->watches) > 0)
    need_reader(c);
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
  if (is_parked(ps, s)) /* bytes left for the loop to read first */
    need_reader(c);
  s->waiting++;
  if (s->permits == 0 && s->refs == 1 && ps->direct == NULL && sub_fd(s) >= 0) {
    int got = wait_direct(c, s, until_us, cancel);
    s->waiting--;
    pthread_mutex_unlock(&ps->mu);
    if (got)
      rlock__obs_count(ps->obs, RLOCK__STAT_WAKEUPS);
    return got;
  }
  need_reader(c);
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

void rlock__sub_release(rlock_client *c, rlock__sub *s) {
  pthread_mutex_lock(&c->ps->mu);
  int wake = sub_unref(c->ps, s);
  if (c->ps->users > 0) /* others may rely on what this one watched */
    need_reader(c);
  pthread_mutex_unlock(&c->ps->mu);
  if (wake)
    rlock__bg_wake(c);
}

/* ---- what the loop's channel tells a front (loop thread) --------------- */

/* A front takes every unlock message "0" of its channel (it stands for
 * all its threads), keeping it as a permit when none sleeps. */
static int front_asleep(const rlock__lwaiter *w) {
  (void)w;
  return 1;
}

/* Release `n` wake-ups (RLOCK__WAKE_ALL: one per user). Permits never
 * exceed the number of local users, so a burst of messages cannot pile
 * up. Called locked. */
static void release(rlock__pubsub *ps, rlock__sub *s, int64_t n) {
  if (n >= (int64_t)s->refs) {
    s->permits = s->refs; /* also those between an attempt and a sleep */
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

/* A message that wakes `n` (rlock__message_wakes), or RLOCK__WAKE_ALL
 * after messages may have been `missed`. Called locked. */
static void on_woken(rlock__pubsub *ps, rlock__sub *s, int64_t n, int missed) {
  if (s->refs == 0)
    return;                     /* lingering: older than any attempt to come */
  if (!missed && s->skip > 0) { /* acted on already, or stale */
    s->skip--;
    poke(ps, s);
    return;
  }
  if (missed)
    s->skip = 0;
  release(ps, s, n);
}

static void front_event(rlock__lwaiter *w, rlock__chan_event what) {
  rlock__sub *s = (rlock__sub *)((char *)w - offsetof(rlock__sub, w));
  rlock_client *c = s->c;
  rlock__pubsub *ps = c->ps;
  int leave = 0;
  pthread_mutex_lock(&ps->mu);
  s->pub_fd = rlock__lsub_fd(w);
  if (what == RLOCK__CHAN_FAILED) {
    s->fail_gen++;
    s->fail_code = rlock_error_last()->code;
    snprintf(s->fail_msg, sizeof s->fail_msg, "%s",
             rlock_error_last()->message);
    s->active = 0;
    leave = 1;
    pthread_cond_broadcast(&s->cv);
    poke(ps, s);
  } else if (what == RLOCK__CHAN_CONFIRMED) {
    s->active = 1;
    /* Confirmed again after a lost connection or a moved slot: unlocks
     * may have been missed meanwhile. */
    if (s->confirmed)
      on_woken(ps, s, RLOCK__WAKE_ALL, 1);
    s->confirmed = 1;
    pthread_cond_broadcast(&s->cv);
  } else {
    s->active = rlock__lsub_active(w);
    int missed = what == RLOCK__CHAN_WOKEN_ALL;
    on_woken(ps, s, missed ? RLOCK__WAKE_ALL : w->chan->wakes, missed);
  }
  pthread_mutex_unlock(&ps->mu);
  if (leave) {
    rlock__lsub_leave_now(c, w);
    s->joined = 0;
  }
}

/* ---- the loop thread's turn ---------------------------------------------- */

typedef struct front_list {
  rlock__sub **items;
  size_t n;
} front_list;

static void collect(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl;
  front_list *l = arg;
  l->items[l->n++] = v;
}

/* Join `s` to its channel (loop thread, unlocked). */
static void join(rlock_client *c, rlock__sub *s) {
  rlock__pubsub *ps = c->ps;
  int rc = rlock__lsub_join(c, &s->w, s->channel);
  pthread_mutex_lock(&ps->mu);
  if (rc < 0) {
    s->fail_gen++;
    s->fail_code = rc;
    snprintf(s->fail_msg, sizeof s->fail_msg, "%s",
             rlock_error_last()->message);
    pthread_cond_broadcast(&s->cv);
  } else {
    s->joined = 1;
    s->active = rc == 1;
    s->pub_fd = rlock__lsub_fd(&s->w);
    if (s->active)
      pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&ps->mu);
}

/* What the turn must do with `s`, decided locked. */
enum { KEEP, JOIN, LEAVE, FREE };

static int decide(rlock__pubsub *ps, rlock__sub *s, int64_t now) {
  if (s->refs > 0)
    return s->joined ? KEEP : JOIN;
  if (s->idle_until_us > now) {
    if (ps->next_idle_us == 0 || s->idle_until_us < ps->next_idle_us)
      ps->next_idle_us = s->idle_until_us;
    return KEEP;
  }
  unlinger(ps, s);
  return s->joined ? LEAVE : FREE;
}

/* Act on every front (loop thread). */
static void reconcile(rlock_client *c) {
  rlock__pubsub *ps = c->ps;
  pthread_mutex_lock(&ps->mu);
  front_list l = {rlock__malloc((ps->subs.count + 1) * sizeof *l.items), 0};
  if (l.items == NULL) {
    pthread_mutex_unlock(&ps->mu);
    rlock__ltimer_at(c, &ps->linger, rlock__deadline_after_ms(100));
    return; /* tried again then */
  }
  rlock__map_each(&ps->subs, collect, &l);
  ps->dirty = 0;
  ps->next_idle_us = 0;
  int64_t now = rlock__now_us();
  for (size_t i = 0; i < l.n; i++) {
    rlock__sub *s = l.items[i];
    int what = decide(ps, s, now);
    if (what == LEAVE) {
      s->active = 0;
      s->pub_fd = -1;
    } else if (what == FREE) {
      rlock__map_del(&ps->subs, s->channel, s->chlen);
      sub_free(s);
    }
    if (what != JOIN && what != LEAVE)
      l.items[i] = NULL;
    else if (what == LEAVE)
      l.items[i] = (rlock__sub *)((uintptr_t)s | 1);
  }
  int64_t next = ps->next_idle_us;
  pthread_mutex_unlock(&ps->mu);
  for (size_t i = 0; i < l.n && !c->loop->doomed; i++) {
    uintptr_t v = (uintptr_t)l.items[i];
    rlock__sub *s = (rlock__sub *)(v & ~(uintptr_t)1);
    if (s == NULL)
      continue;
    if (v & 1) {
      rlock__lsub_leave_now(c, &s->w);
      s->joined = 0;
      pthread_mutex_lock(&ps->mu);
      ps->dirty = 1; /* freed at the next turn unless taken again */
      pthread_mutex_unlock(&ps->mu);
    } else {
      join(c, s);
    }
  }
  free(l.items);
  if (next != 0)
    rlock__ltimer_at(c, &ps->linger, next);
}

static void linger_due(rlock_client *c, rlock__ltimer *t) {
  (void)t;
  reconcile(c);
  /* A front left above is freed now (no one took it back meanwhile). */
  pthread_mutex_lock(&c->ps->mu);
  int again = c->ps->dirty;
  pthread_mutex_unlock(&c->ps->mu);
  if (again)
    reconcile(c);
}

void rlock__pubsub_turn(rlock_client *c) {
  rlock__pubsub *ps = c->ps;
  if (atomic_exchange(&ps->master_moved, 0))
    rlock__lsub_master_changed(c);
  pthread_mutex_lock(&ps->mu);
  int due = ps->dirty ||
            (ps->next_idle_us != 0 && rlock__now_us() >= ps->next_idle_us);
  pthread_mutex_unlock(&ps->mu);
  if (due)
    linger_due(c, &ps->linger);
}

/* ---- the background thread's poll (bg.c) --------------------------------- */

/* Whether `fd` is one of the loop's subscriber sockets. */
static int is_sub_fd(rlock_client *c, int fd) {
  rlock__loop *lp = c->loop;
  for (size_t i = 0; i < lp->nnodes; i++)
    if (lp->nodes[i]->sub.fd == fd && fd >= 0)
      return 1;
  return 0;
}

/* How long a quiet socket may go unread: what piles up meanwhile is
 * bounded by this much of the channels' traffic. */
#define LAZY_READ_US 100000

void rlock__pubsub_mute(rlock_client *c, struct pollfd *fds, int n,
                        int64_t *next) {
  rlock__pubsub *ps = c->ps;
  int64_t now = rlock__now_us();
  pthread_mutex_lock(&ps->mu);
  int direct = ps->direct != NULL ? direct_fd(ps, ps->direct) : -1;
  /* Quiet: no thread waits, and no watch (rlock/watch.h) wants its
   * messages at once. */
  int quiet = ps->users == 0 && now < ps->lazy_due_us &&
              atomic_load(&c->loop->watches) == 0;
  if (ps->users > 0 || now >= ps->lazy_due_us)
    ps->lazy_due_us = now + LAZY_READ_US;
  ps->muted_fd = -1;
  ps->muted_quiet = 0;
  ps->quiet_whole = 1;
  ps->direct_whole = 0;
  for (int i = 0; i < n; i++) {
    if (!(fds[i].events & POLLIN) || !is_sub_fd(c, fds[i].fd))
      continue;
    if (fds[i].fd != direct && !quiet)
      continue;
    if (fds[i].fd == direct)
      ps->muted_fd = direct;
    else
      ps->muted_quiet = 1;
    /* Left out whole (no hang-up read either: whoever needs it read wakes
     * this thread), unless output waits. */
    int whole = !(fds[i].events & POLLOUT);
    if (fds[i].fd == direct)
      ps->direct_whole = whole;
    else
      ps->quiet_whole &= whole;
    if (whole)
      fds[i].fd = -fds[i].fd - 1;
    else
      fds[i].events &= (short)~POLLIN;
  }
  pthread_mutex_unlock(&ps->mu);
  if (quiet && ps->lazy_due_us < *next)
    *next = ps->lazy_due_us;
}

int rlock__pubsub_any_ready(rlock_client *c, const struct pollfd *fds, int n) {
  for (int i = 0; i < n; i++)
    if (fds[i].revents != 0 && is_sub_fd(c, fds[i].fd))
      return 1;
  return 0;
}

void rlock__pubsub_read_done(rlock__pubsub *ps) {
  pthread_mutex_lock(&ps->mu);
  ps->read_gen++;
  poke(ps, ps->direct);
  pthread_mutex_unlock(&ps->mu);
}

static void forget_fd(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl;
  rlock__sub *s = v;
  if (s->pub_fd == *(int *)arg)
    s->pub_fd = -1;
}

void rlock__pubsub_closing(void *arg, int fd) {
  rlock_client *c = arg;
  rlock__pubsub *ps = c->ps;
  pthread_mutex_lock(&ps->mu);
  rlock__map_each(&ps->subs, forget_fd, &fd);
  while (fd >= 0 && ps->direct_fd == fd) {
    poke(ps, ps->direct);
    pthread_cond_wait(&ps->direct_cv, &ps->mu);
  }
  pthread_mutex_unlock(&ps->mu);
}
