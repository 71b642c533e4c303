/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_proxy.c - a TCP relay that can silence subscriber connections
 * (rt_proxy.h). One thread polls the listening socket, a wake-up pipe and
 * both sockets of every relayed connection; a silent connection is polled
 * only for its client's hang-up.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "rt_proxy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define PAIRS_MAX 256

typedef struct pair {
  int cfd, ufd;    /* client side, upstream side */
  bool subscriber; /* its client sent a *SUBSCRIBE */
  bool silent;
} pair;

struct rt_proxy {
  int lfd, wake[2], port;
  char url[64];
  struct sockaddr_in up;
  pthread_t thread;
  pthread_mutex_t mu; /* guards what follows */
  pair pairs[PAIRS_MAX];
  int npairs;
  int closed_silent;
  bool stop;
};

/* Whether buf holds "subscribe" in any case (SUBSCRIBE, SSUBSCRIBE and
   PSUBSCRIBE all end so). A word split across two reads is missed; a
   lock client sends each command in one write. */
static bool has_subscribe(const char *buf, size_t n) {
  static const char w[] = "subscribe";
  size_t wl = sizeof w - 1;
  for (size_t i = 0; i + wl <= n; i++) {
    size_t k = 0;
    while (k < wl && tolower((unsigned char)buf[i + k]) == w[k])
      k++;
    if (k == wl)
      return true;
  }
  return false;
}

static bool write_all(int fd, const char *buf, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    buf += w;
    n -= (size_t)w;
  }
  return true;
}

static void close_pair(rt_proxy *p, int k) {
  close(p->pairs[k].cfd);
  close(p->pairs[k].ufd);
  p->pairs[k] = p->pairs[--p->npairs];
}

static void accept_one(rt_proxy *p) {
  int cfd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
  if (cfd < 0)
    return;
  int ufd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ufd < 0 || connect(ufd, (struct sockaddr *)&p->up, sizeof p->up) != 0 ||
      p->npairs >= PAIRS_MAX) {
    close(cfd);
    if (ufd >= 0)
      close(ufd);
    return;
  }
  p->pairs[p->npairs++] = (pair){cfd, ufd, false, false};
}

/* Relay what `from` has; false when the connection is over. */
static bool relay(pair *c, bool from_client) {
  char buf[16384];
  ssize_t n = recv(from_client ? c->cfd : c->ufd, buf, sizeof buf, 0);
  if (n < 0 && errno == EINTR)
    return true;
  if (n <= 0)
    return false;
  if (from_client && has_subscribe(buf, (size_t)n))
    c->subscriber = true;
  return write_all(from_client ? c->ufd : c->cfd, buf, (size_t)n);
}

/* One poll round over everything, under p->mu except for poll itself. */
static void serve_once(rt_proxy *p) {
  struct pollfd fds[2 + 2 * PAIRS_MAX];
  pthread_mutex_lock(&p->mu);
  int n = p->npairs;
  fds[0] = (struct pollfd){.fd = p->lfd, .events = POLLIN};
  fds[1] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
  for (int k = 0; k < n; k++) {
    short ev = p->pairs[k].silent ? POLLRDHUP : POLLIN;
    fds[2 + 2 * k] = (struct pollfd){.fd = p->pairs[k].cfd, .events = ev};
    fds[3 + 2 * k] = (struct pollfd){
        .fd = p->pairs[k].silent ? -1 : p->pairs[k].ufd, .events = POLLIN};
  }
  pthread_mutex_unlock(&p->mu);
  if (poll(fds, (nfds_t)(2 + 2 * n), 1000) <= 0)
    return;
  pthread_mutex_lock(&p->mu);
  if (fds[1].revents & POLLIN) {
    char b[64];
    (void)!read(p->wake[0], b, sizeof b);
  }
  /* Pairs only leave at their own index below (from the end down) and
     silence changes under the lock: indexes < n are the polled ones. */
  for (int k = n - 1; k >= 0; k--) {
    pair *c = &p->pairs[k];
    short cr = fds[2 + 2 * k].revents, ur = fds[3 + 2 * k].revents;
    bool over = false;
    if (c->silent)
      over = (cr & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
    else
      over = ((cr & (POLLIN | POLLHUP | POLLERR)) && !relay(c, true)) ||
             ((ur & (POLLIN | POLLHUP | POLLERR)) && !relay(c, false));
    if (over && c->silent)
      p->closed_silent++;
    if (over)
      close_pair(p, k);
  }
  if (fds[0].revents & POLLIN)
    accept_one(p);
  pthread_mutex_unlock(&p->mu);
}

static void *proxy_main(void *arg) {
  rt_proxy *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    bool stop = p->stop;
    pthread_mutex_unlock(&p->mu);
    if (stop)
      return NULL;
    serve_once(p);
  }
}

static void wake(rt_proxy *p) { (void)!write(p->wake[1], "w", 1); }

/* Listen on host at a port the kernel picks; the fd, or -1. */
static int listen_on(const char *host, int *port) {
  struct sockaddr_in sa = {.sin_family = AF_INET};
  socklen_t len = sizeof sa;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || inet_pton(AF_INET, host, &sa.sin_addr) != 1 ||
      bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
    if (fd >= 0)
      close(fd);
    return -1;
  }
  *port = ntohs(sa.sin_port);
  return fd;
}

rt_proxy *rt_proxy_start(const char *listen_host, const char *up_host,
                         int up_port) {
  rt_proxy *p = calloc(1, sizeof *p);
  if (p == NULL) {
    fail_msg("rt_proxy_start: out of memory");
    return NULL;
  }
  p->up = (struct sockaddr_in){.sin_family = AF_INET,
                               .sin_port = htons((uint16_t)up_port)};
  p->lfd = listen_on(listen_host, &p->port);
  if (p->lfd < 0 || inet_pton(AF_INET, up_host, &p->up.sin_addr) != 1 ||
      pipe2(p->wake, O_CLOEXEC) != 0) {
    fail_msg("rt_proxy_start(%s -> %s:%d): %s", listen_host, up_host, up_port,
             strerror(errno));
    return NULL;
  }
  snprintf(p->url, sizeof p->url, "redis://%s:%d", listen_host, p->port);
  pthread_mutex_init(&p->mu, NULL);
  if (pthread_create(&p->thread, NULL, proxy_main, p) != 0)
    fail_msg("rt_proxy_start: cannot start its thread");
  return p;
}

void rt_proxy_free(rt_proxy *p) {
  if (p == NULL)
    return;
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  pthread_mutex_unlock(&p->mu);
  wake(p);
  pthread_join(p->thread, NULL);
  while (p->npairs > 0)
    close_pair(p, p->npairs - 1);
  close(p->lfd);
  close(p->wake[0]);
  close(p->wake[1]);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

int rt_proxy_port(const rt_proxy *p) { return p->port; }
const char *rt_proxy_url(const rt_proxy *p) { return p->url; }

int rt_proxy_silence_subscribers(rt_proxy *p) {
  int n = 0;
  pthread_mutex_lock(&p->mu);
  for (int k = 0; k < p->npairs; k++)
    if (p->pairs[k].subscriber && !p->pairs[k].silent) {
      p->pairs[k].silent = true;
      n++;
    }
  pthread_mutex_unlock(&p->mu);
  wake(p);
  return n;
}

void rt_proxy_resume(rt_proxy *p) {
  pthread_mutex_lock(&p->mu);
  for (int k = 0; k < p->npairs; k++)
    p->pairs[k].silent = false;
  pthread_mutex_unlock(&p->mu);
  wake(p);
}

int rt_proxy_open(rt_proxy *p) {
  pthread_mutex_lock(&p->mu);
  int n = p->npairs;
  pthread_mutex_unlock(&p->mu);
  return n;
}

int rt_proxy_closed_while_silent(rt_proxy *p) {
  pthread_mutex_lock(&p->mu);
  int n = p->closed_silent;
  pthread_mutex_unlock(&p->mu);
  return n;
}
