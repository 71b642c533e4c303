/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * waiting.c - acquire a lock in one wait that a caught signal can end
 * (the handler fires a cancel token), and on a terminal show who holds
 * the lock meanwhile, refreshed every second by a display thread.
 *
 * One wait, not a series of short ones: a fair-lock waiter that gave up
 * at the end of each short wait would lose its place in the queue.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define REFRESH_MS 1000
/* A wait shows its line once it has lasted this long. */
#define FIRST_SHOW_MS 100

/* Columns available on stderr's terminal for the progress line. */
static size_t line_room(void) {
  struct winsize ws;
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1)
    return ws.ws_col - 1u; /* never reach the last column: no wrap */
  return 79;
}

/* "5f0c1a2b...:57" for "5f0c1a2b-<rest of the uuid>:57", else the owner. */
static const char *short_owner(char *buf, size_t size, const char *owner) {
  const char *tid = strrchr(owner, ':');
  if (tid == NULL || tid - owner <= 11)
    return owner;
  snprintf(buf, size, "%.8s...%s", owner, tid);
  return buf;
}

/* "rlock: waiting for 'NAME' held by OWNER (expires in 12.3s)" from a
 * snapshot, abbreviating the owner if the whole line exceeds `room`. */
static void describe(char *buf, size_t size, rlock_lock *lock,
                     const rlock_lock_info *info, size_t room) {
  const char *owner = rlock_lock_info_holder_owner(info, 0);
  int64_t ttl = rlock_lock_info_ttl_ms(info);
  char left[32] = "no expiry", abbrev[64];
  if (ttl >= 0) {
    strcpy(left, "expires in ");
    cli_format_ms(left + 11, sizeof left - 11, ttl);
  }
  int n = snprintf(buf, size, "rlock: waiting for '%s'", rlock_lock_name(lock));
  if (owner == NULL || n < 0 || (size_t)n >= size)
    return;
  int more =
      snprintf(buf + n, size - (size_t)n, " held by %s (%s)", owner, left);
  if (more >= 0 && (size_t)(n + more) > room)
    snprintf(buf + n, size - (size_t)n, " held by %s (%s)",
             short_owner(abbrev, sizeof abbrev, owner), left);
}

/* Cut to `room` bytes on a UTF-8 boundary; hide control characters. */
static size_t fit(char *buf, size_t room) {
  size_t len = strlen(buf);
  if (len > room) {
    len = room;
    while (len > 0 && ((unsigned char)buf[len] & 0xC0) == 0x80)
      len--;
    buf[len] = '\0';
  }
  for (char *p = buf; *p != '\0'; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      *p = '?';
  return len;
}

/* --verbose off a terminal: a line whenever the holder changes (the
 * first holder met included), nothing while it stays. The first failure
 * to reach Redis is told by notice.c. */
static void progress_line(rlock_lock *lock, char *last, size_t size) {
  rlock_lock_info *info;
  char buf[2048];
  if (rlock_lock_inspect(&info, lock) != RLOCK_OK)
    return;
  const char *owner = rlock_lock_info_holder_owner(info, 0);
  if (owner != NULL && strcmp(owner, last) != 0) {
    snprintf(last, size, "%s", owner);
    describe(buf, sizeof buf, lock, info, sizeof buf);
    fit(buf, sizeof buf - 1);
    fprintf(stderr, "%s\n", buf);
    fflush(stderr);
  }
  rlock_lock_info_free(info);
}

/* Redraw the progress line in place; *shown is the width drawn so far.
 * While Redis cannot be reached (the wait tries again), say why. */
static void progress_show(rlock_lock *lock, size_t *shown) {
  rlock_lock_info *info;
  char buf[2048];
  size_t room = line_room();
  int rc = rlock_lock_inspect(&info, lock);
  if (rc == RLOCK_EIO || rc == RLOCK_ETIMEOUT)
    snprintf(buf, sizeof buf, "rlock: waiting for '%s': %s",
             rlock_lock_name(lock), rlock_error_last()->message);
  else if (rc != RLOCK_OK)
    return; /* the next attempt reports any real problem */
  if (rc == RLOCK_OK) {
    describe(buf, sizeof buf, lock, info, room);
    rlock_lock_info_free(info);
  }
  size_t len = fit(buf, room);
  int pad = *shown > len ? (int)(*shown - len) : 0;
  fprintf(stderr, "\r%s%*s", buf, pad, "");
  if (pad > 0) /* put the cursor back after the text */
    fprintf(stderr, "\r%s", buf);
  fflush(stderr);
  *shown = len;
}

static void progress_clear(size_t shown) {
  if (shown > 0) {
    fprintf(stderr, "\r%*s\r", (int)shown, "");
    fflush(stderr);
  }
}

/* The display thread: redraw every REFRESH_MS until told to stop. */
typedef struct progress {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop;
  rlock_lock *lock;
  int lines;    /* CLI_SHOW_LINES: a line per holder, not a redrawn one */
  size_t shown; /* the redrawn line's width */
  char last[RLOCK_OWNER_MAX]; /* the holder last told of, in lines mode */
} progress;

/* Wait on p->cv until `ms` from now or a stop; called locked. */
static void progress_pause(progress *p, int64_t ms) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (ms % 1000) * 1000000;
  if (ts.tv_nsec >= 1000000000) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000;
  }
  while (!p->stop && pthread_cond_timedwait(&p->cv, &p->mu, &ts) != ETIMEDOUT)
    ;
}

static void *progress_main(void *arg) {
  progress *p = arg;
  cli_signals_block(); /* signals are for the main thread */
  pthread_mutex_lock(&p->mu);
  progress_pause(p, FIRST_SHOW_MS);
  while (!p->stop) {
    pthread_mutex_unlock(&p->mu);
    if (p->lines)
      progress_line(p->lock, p->last, sizeof p->last);
    else
      progress_show(p->lock, &p->shown);
    pthread_mutex_lock(&p->mu);
    progress_pause(p, REFRESH_MS);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* Start the display thread; returns 0, or -1 when it cannot (then the
 * wait simply goes on without it). */
static int progress_start(progress *p, rlock_lock *lock, int lines) {
  pthread_condattr_t attr;
  *p = (progress){.lock = lock, .lines = lines};
  pthread_mutex_init(&p->mu, NULL);
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&p->cv, &attr);
  pthread_condattr_destroy(&attr);
  if (pthread_create(&p->thread, NULL, progress_main, p) == 0)
    return 0;
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  return -1;
}

static void progress_stop(progress *p) {
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
  pthread_join(p->thread, NULL);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  progress_clear(p->shown);
}

/* One attempt or wait, through the options form: the only one that
 * hands back a fenced lock's token. */
static int attempt(rlock_lock *lock, int64_t wait_ms, int64_t lease_ms,
                   int64_t *token) {
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = wait_ms;
  o.lease_ms = lease_ms;
  o.cancel = cli_cancel_token();
  o.token = token;
  return rlock_lock_acquire_opts(lock, &o);
}

/* One call, as Redisson's tryLock: attempt, subscribe, attempt again,
 * then wait for the unlock message (-w 0 is exactly one try, and a fair
 * lock's try without waiting never queues). The library's wait also rides
 * out a server that cannot be reached yet, within -w and --retry-for. On
 * a terminal (or with --verbose), a line says what the wait is for once
 * it has lasted FIRST_SHOW_MS (a lock taken at once shows nothing and
 * costs no inspection). */
int cli_acquire(rlock_lock *lock, int64_t wait_ms, int64_t lease_ms, int show,
                int64_t *token) {
  progress p;
  int shown = show != 0 && wait_ms != 0 &&
              progress_start(&p, lock, show == CLI_SHOW_LINES) == 0;
  int rc = attempt(lock, wait_ms, lease_ms, token);
  if (shown)
    progress_stop(&p);
  if (rc == RLOCK_ECANCELED)
    return CLI_INTERRUPTED;
  if (rc == RLOCK_OK && cli_signal_caught() != 0) {
    rlock_lock_release(lock); /* the signal came first: do not run */
    return CLI_INTERRUPTED;
  }
  return rc;
}
