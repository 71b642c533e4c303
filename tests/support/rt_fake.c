/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_fake.c - a scripted fake Redis server on its own thread.
 *
 * The script thread never blocks anywhere but in poll(), always together
 * with the read end of a "stop pipe", so rt_fake_free() can end it at any
 * step by writing one byte to the pipe.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "rt_fake.h"
#include "rt_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* Connections accepted over the life of one fake. */
#define RT_FAKE_MAX_CLIENTS 64

struct rt_fake {
  rt_fake_step *steps; /* owned copy, RT_END included */
  size_t nsteps;       /* not counting RT_END */
  int listen_fd;
  int stop_rd, stop_wr;
  int port;
  char url[48];
  pthread_t thread;

  /* Owned by the script thread until it is joined. */
  int clients[RT_FAKE_MAX_CLIENTS]; /* every accepted fd, -1 once closed */
  size_t nclients;
  int current;         /* index into clients, -1 if none */
  redisReader *reader; /* requests on the current client */

  /* Shared with waiters. `error` is written once, before has_error is
     set (release), and never again, so it can be read without the lock
     once has_error is seen. */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  size_t step;   /* the step running now; guarded by mu */
  bool finished; /* the script thread is done; guarded by mu */
  atomic_bool has_error;
  char error[512];

  char wait_error[256]; /* rt_fake_wait()'s timeout message */
};

static const char *kind_name(rt_step_kind k) {
  switch (k) {
  case RT_ACCEPT:
    return "ACCEPT";
  case RT_EXPECT:
    return "EXPECT";
  case RT_SEND:
    return "SEND";
  case RT_CLOSE:
    return "CLOSE";
  case RT_SLEEP:
    return "SLEEP";
  case RT_TRICKLE:
    return "TRICKLE";
  case RT_FLOOD:
    return "FLOOD";
  case RT_END:
    return "END";
  }
  return "?";
}

/* Record the first error (later ones are dropped) and wake waiters. */
static void set_error(rt_fake *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_error(rt_fake *f, const char *fmt, ...) {
  pthread_mutex_lock(&f->mu);
  if (!atomic_load(&f->has_error)) {
    const rt_fake_step *st = &f->steps[f->step];
    int n = snprintf(f->error, sizeof f->error,
                     "step %zu (%s%s%.40s): ", f->step, kind_name(st->kind),
                     st->arg ? " " : "", st->arg ? st->arg : "");
    if (n < 0 || (size_t)n >= sizeof f->error)
      n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->error + n, sizeof f->error - (size_t)n, fmt, ap);
    va_end(ap);
    atomic_store(&f->has_error, true);
    pthread_cond_broadcast(&f->cv);
  }
  pthread_mutex_unlock(&f->mu);
}

/* ------------------------------------------------------------------------ */
/* Waiting and I/O on the script thread                                     */
/* ------------------------------------------------------------------------ */

enum wait_result { WAIT_READY, WAIT_STOP, WAIT_TIMEOUT, WAIT_ERROR };

/* Wait until fd has `events` (fd < 0: only sleep), the stop pipe is
   readable, or timeout_ms (< 0: no limit) passes. WAIT_ERROR: poll()
   failed, the error recorded. */
static enum wait_result wait_fd(rt_fake *f, int fd, short events,
                                int timeout_ms) {
  struct pollfd p[2] = {
      {.fd = f->stop_rd, .events = POLLIN},
      {.fd = fd, .events = events}, /* poll() skips a negative fd */
  };
  int64_t deadline = rt_now_ms() + timeout_ms;
  for (;;) {
    int left = -1;
    if (timeout_ms >= 0) {
      int64_t ms = deadline - rt_now_ms();
      left = ms > 0 ? (int)ms : 0;
    }
    int n = poll(p, 2, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      set_error(f, "poll: %s", strerror(errno));
      return WAIT_ERROR;
    }
    if (p[0].revents)
      return WAIT_STOP;
    if (n == 0)
      return WAIT_TIMEOUT;
    return WAIT_READY; /* events, or POLLHUP/POLLERR: the read/write says which
                        */
  }
}

/* Wait (without limit) until fd has `events`: false if the fake is being
   stopped or poll() fails (then with an error recorded). */
static bool await_fd(rt_fake *f, int fd, short events) {
  return wait_fd(f, fd, events, -1) == WAIT_READY;
}

static int current_fd(const rt_fake *f) {
  return f->current >= 0 ? f->clients[f->current] : -1;
}

static bool need_client(rt_fake *f) {
  if (current_fd(f) >= 0)
    return true;
  set_error(f, "no open client connection");
  return false;
}

static bool step_accept(rt_fake *f) {
  if (f->nclients == RT_FAKE_MAX_CLIENTS) {
    set_error(f, "more than %d connections", RT_FAKE_MAX_CLIENTS);
    return false;
  }
  for (;;) {
    if (!await_fd(f, f->listen_fd, POLLIN))
      return false;
    int fd = accept4(f->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      f->clients[f->nclients] = fd;
      f->current = (int)f->nclients++;
      if (f->reader) /* the previous connection's; it stays open, unread */
        redisReaderFree(f->reader);
      f->reader = redisReaderCreate();
      if (!f->reader) {
        set_error(f, "out of memory");
        return false;
      }
      return true;
    }
    if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
      set_error(f, "accept: %s", strerror(errno));
      return false;
    }
  }
}

/* Read one request from the current client into *out (a redisReply). */
static bool read_request(rt_fake *f, redisReply **out) {
  int fd = current_fd(f);
  char buf[4096];
  for (;;) {
    void *reply = NULL;
    if (redisReaderGetReply(f->reader, &reply) != REDIS_OK) {
      set_error(f, "not a RESP request: %s", f->reader->errstr);
      return false;
    }
    if (reply) {
      *out = reply;
      return true;
    }
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      redisReaderFeed(f->reader, buf, (size_t)n);
    } else if (n == 0) {
      set_error(f, "client closed the connection");
      return false;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!await_fd(f, fd, POLLIN))
        return false;
    } else if (errno != EINTR) {
      set_error(f, "read: %s", strerror(errno));
      return false;
    }
  }
}

/* Whether the request's first word is `want`, ignoring case ("*": any). */
static bool request_matches(const redisReply *req, const char *want, char *got,
                            size_t cap) {
  if (req->type != REDIS_REPLY_ARRAY || req->elements == 0 ||
      req->element[0]->type != REDIS_REPLY_STRING) {
    snprintf(got, cap, "a request that is not an array of bulk strings");
    return false;
  }
  const redisReply *w = req->element[0];
  snprintf(got, cap, "\"%.*s\"", w->len > 64 ? 64 : (int)w->len, w->str);
  if (strcmp(want, "*") == 0)
    return true;
  return strlen(want) == w->len && strncasecmp(want, w->str, w->len) == 0;
}

static bool step_expect(rt_fake *f, const char *want) {
  redisReply *req;
  if (!need_client(f) || !read_request(f, &req))
    return false;
  char got[96];
  if (!request_matches(req, want, got, sizeof got))
    set_error(f, "expected %s, got %s", want, got); /* the script goes on */
  freeReplyObject(req);
  return true;
}

/* Whether a send failed because the client has closed the connection. */
static bool client_gone(int err) { return err == EPIPE || err == ECONNRESET; }

/* Write up to len bytes of data, waiting for room; the count written (> 0),
   0 when the client has closed the connection, -1 when stopped or failed. */
static ssize_t send_some(rt_fake *f, int fd, const char *data, size_t len) {
  for (;;) {
    ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
    if (n > 0)
      return n;
    if (n < 0 && client_gone(errno))
      return 0;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!await_fd(f, fd, POLLOUT))
        return -1;
    } else if (n < 0 && errno != EINTR) {
      set_error(f, "send: %s", strerror(errno));
      return -1;
    }
  }
}

static bool step_send(rt_fake *f, const char *data) {
  if (!need_client(f))
    return false;
  int fd = current_fd(f);
  size_t len = strlen(data), off = 0;
  while (off < len) {
    ssize_t n = send_some(f, fd, data + off, len - off);
    if (n == 0)
      set_error(f, "send: the client closed the connection");
    if (n <= 0)
      return false;
    off += (size_t)n;
  }
  return true;
}

static bool step_close(rt_fake *f) {
  if (!need_client(f))
    return false;
  close(f->clients[f->current]);
  f->clients[f->current] = -1;
  f->current = -1;
  if (f->reader)
    redisReaderFree(f->reader);
  f->reader = NULL;
  return true;
}

static bool step_trickle(rt_fake *f, const char *data, int ms) {
  if (!need_client(f))
    return false;
  int fd = current_fd(f);
  for (size_t i = 0; data[i] != '\0'; i++) {
    if (i > 0) {
      /* The pause ends early if the client hangs up meanwhile. */
      switch (wait_fd(f, fd, POLLRDHUP, ms > 0 ? ms : 0)) {
      case WAIT_TIMEOUT:
        break;
      case WAIT_READY:
        return step_close(f); /* the client hung up */
      default:
        return false;
      }
    }
    ssize_t n = send_some(f, fd, data + i, 1);
    if (n <= 0)
      return n == 0 ? step_close(f) : false;
  }
  return true;
}

static bool step_flood(rt_fake *f, const char *unit) {
  if (!need_client(f))
    return false;
  /* Whole copies of the unit, so a partial send resumes mid-unit. */
  size_t ulen = strlen(unit), copies = 65536 / ulen + 1, len = copies * ulen;
  char *buf = malloc(len);
  if (!buf) {
    set_error(f, "out of memory");
    return false;
  }
  for (size_t i = 0; i < copies; i++)
    memcpy(buf + i * ulen, unit, ulen);
  int fd = current_fd(f);
  size_t off = 0;
  ssize_t n;
  while ((n = send_some(f, fd, buf + off, len - off)) > 0)
    off = (off + (size_t)n) % len;
  free(buf);
  return n == 0 ? step_close(f) : false;
}

static bool step_sleep(rt_fake *f, int ms) {
  return wait_fd(f, -1, 0, ms > 0 ? ms : 0) == WAIT_TIMEOUT;
}

static bool run_step(rt_fake *f, const rt_fake_step *st) {
  switch (st->kind) {
  case RT_ACCEPT:
    return step_accept(f);
  case RT_EXPECT:
    return step_expect(f, st->arg);
  case RT_SEND:
    return step_send(f, st->arg);
  case RT_CLOSE:
    return step_close(f);
  case RT_SLEEP:
    return step_sleep(f, st->ms);
  case RT_TRICKLE:
    return step_trickle(f, st->arg, st->ms);
  case RT_FLOOD:
    return step_flood(f, st->arg);
  case RT_END:
    break;
  }
  return false;
}

static void *script_main(void *arg) {
  rt_fake *f = arg;
  for (size_t i = 0; i < f->nsteps; i++) {
    pthread_mutex_lock(&f->mu);
    f->step = i;
    pthread_cond_broadcast(&f->cv); /* for rt_fake_wait_step() */
    pthread_mutex_unlock(&f->mu);
    if (!run_step(f, &f->steps[i]))
      break;
  }
  pthread_mutex_lock(&f->mu);
  f->finished = true;
  pthread_cond_broadcast(&f->cv);
  pthread_mutex_unlock(&f->mu);
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* Public API                                                               */
/* ------------------------------------------------------------------------ */

static void fake_destroy(rt_fake *f) {
  for (size_t i = 0; i < f->nclients; i++)
    if (f->clients[i] >= 0)
      close(f->clients[i]);
  if (f->reader)
    redisReaderFree(f->reader);
  if (f->listen_fd >= 0)
    close(f->listen_fd);
  if (f->stop_rd >= 0)
    close(f->stop_rd);
  if (f->stop_wr >= 0)
    close(f->stop_wr);
  if (f->steps)
    for (size_t i = 0; i <= f->nsteps; i++)
      free((char *)f->steps[i].arg);
  free(f->steps);
  pthread_cond_destroy(&f->cv);
  pthread_mutex_destroy(&f->mu);
  free(f);
}

/* Deep-copy the script; false with a reason if it is malformed. */
static bool copy_steps(rt_fake *f, const rt_fake_step *steps, char *why,
                       size_t cap) {
  size_t n = 0;
  for (; steps[n].kind != RT_END; n++) {
    rt_step_kind k = steps[n].kind;
    if (k != RT_ACCEPT && k != RT_EXPECT && k != RT_SEND && k != RT_CLOSE &&
        k != RT_SLEEP && k != RT_TRICKLE && k != RT_FLOOD) {
      snprintf(why, cap, "step %zu: unknown kind %d", n, (int)k);
      return false;
    }
    if ((k == RT_EXPECT || k == RT_SEND || k == RT_TRICKLE || k == RT_FLOOD) &&
        !steps[n].arg) {
      snprintf(why, cap, "step %zu: %s needs arg", n, kind_name(k));
      return false;
    }
    if (k == RT_FLOOD && steps[n].arg[0] == '\0') {
      snprintf(why, cap, "step %zu: FLOOD needs a non-empty arg", n);
      return false;
    }
  }
  f->steps = calloc(n + 1, sizeof *f->steps);
  if (!f->steps) {
    snprintf(why, cap, "out of memory");
    return false;
  }
  f->nsteps = n;
  for (size_t i = 0; i <= n; i++) {
    f->steps[i] = (rt_fake_step){.kind = steps[i].kind, .ms = steps[i].ms};
    if (steps[i].arg && !(f->steps[i].arg = strdup(steps[i].arg))) {
      snprintf(why, cap, "out of memory");
      return false;
    }
  }
  return true;
}

/* Listen on 127.0.0.1 on a port the kernel picks; the port stays ours. */
static bool open_listener(rt_fake *f, char *why, size_t cap) {
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof sa;
  f->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (f->listen_fd < 0 ||
      bind(f->listen_fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
      listen(f->listen_fd, 16) != 0 ||
      getsockname(f->listen_fd, (struct sockaddr *)&sa, &len) != 0) {
    snprintf(why, cap, "listening socket: %s", strerror(errno));
    return false;
  }
  f->port = ntohs(sa.sin_port);
  snprintf(f->url, sizeof f->url, "redis://127.0.0.1:%d", f->port);
  return true;
}

static rt_fake *fake_new(const rt_fake_step *steps, char *why, size_t cap) {
  rt_fake *f = calloc(1, sizeof *f);
  if (!f) {
    snprintf(why, cap, "out of memory");
    return NULL;
  }
  f->listen_fd = f->stop_rd = f->stop_wr = f->current = -1;
  pthread_mutex_init(&f->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&f->cv, &ca);
  pthread_condattr_destroy(&ca);

  int pipefd[2];
  if (!copy_steps(f, steps, why, cap) || !open_listener(f, why, cap)) {
    fake_destroy(f);
    return NULL;
  }
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    snprintf(why, cap, "pipe: %s", strerror(errno));
    fake_destroy(f);
    return NULL;
  }
  f->stop_rd = pipefd[0];
  f->stop_wr = pipefd[1];
  return f;
}

rt_fake *rt_fake_start(const rt_fake_step *steps) {
  char why[256];
  rt_fake *f = fake_new(steps, why, sizeof why);
  if (f) {
    int rc = pthread_create(&f->thread, NULL, script_main, f);
    if (rc == 0)
      return f;
    snprintf(why, sizeof why, "pthread_create: %s", strerror(rc));
    fake_destroy(f);
  }
  fail_msg("rt_fake_start: %s", why);
  return NULL;
}

int rt_fake_port(const rt_fake *f) { return f->port; }
const char *rt_fake_url(const rt_fake *f) { return f->url; }

/* Wait, with f->mu held, until the script thread has finished (or failed)
   or, when `step` is not SIZE_MAX, has come to that step; 0 when it got
   there without error, else -1 with the reason in wait_error or error. */
static int wait_locked(rt_fake *f, size_t step, int timeout_ms) {
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += timeout_ms / 1000;
  deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
  if (deadline.tv_nsec >= 1000000000) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000;
  }
  f->wait_error[0] = '\0';
  int rc = 0;
  while (!f->finished && !atomic_load(&f->has_error) &&
         (step == SIZE_MAX || f->step < step) && rc != ETIMEDOUT)
    rc = pthread_cond_timedwait(&f->cv, &f->mu, &deadline);
  if (atomic_load(&f->has_error))
    return -1;
  if (step != SIZE_MAX ? f->step >= step : f->finished)
    return 0;
  const rt_fake_step *st = &f->steps[f->step];
  snprintf(f->wait_error, sizeof f->wait_error,
           "%s after %d ms in step %zu (%s%s%.40s)",
           f->finished ? "script ended" : "timed out", timeout_ms, f->step,
           kind_name(st->kind), st->arg ? " " : "", st->arg ? st->arg : "");
  return -1;
}

int rt_fake_wait(rt_fake *f, int timeout_ms) {
  pthread_mutex_lock(&f->mu);
  int result = wait_locked(f, SIZE_MAX, timeout_ms);
  pthread_mutex_unlock(&f->mu);
  return result;
}

int rt_fake_wait_step(rt_fake *f, size_t step, int timeout_ms) {
  pthread_mutex_lock(&f->mu);
  int result = wait_locked(f, step, timeout_ms);
  pthread_mutex_unlock(&f->mu);
  return result;
}

const char *rt_fake_error(const rt_fake *f) {
  if (atomic_load(&f->has_error))
    return f->error;
  return f->wait_error;
}

void rt_fake_free(rt_fake *f) {
  if (!f)
    return;
  static const char stop = 1;
  ssize_t ignored = write(f->stop_wr, &stop, 1);
  (void)ignored;
  pthread_join(f->thread, NULL);
  fake_destroy(f);
}
