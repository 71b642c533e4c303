/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_util.c - time, sleep and free-port helpers for the tests.
 */
#include "rt_util.h"

#include "resolve.h"

#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

int rt_on_valgrind(void) { return RUNNING_ON_VALGRIND ? 1 : 0; }

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t rt_now_ms(void) { return now_ns() / 1000000; }
int64_t rt_now_us(void) { return now_ns() / 1000; }

void rt_sleep_ms(int64_t ms) {
  if (ms <= 0)
    return;
  struct timespec left = {.tv_sec = ms / 1000,
                          .tv_nsec = (ms % 1000) * 1000000};
  /* nanosleep() stores the time still to sleep in `left` on EINTR. */
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

int64_t rt_scaled_ms(int64_t ms) {
  const char *env = getenv("RLOCK_TEST_TIME_SCALE");
  long long k = env ? atoll(env) : 1;
  return ms * (k > 0 ? k : 1);
}

/*
 * Ports already handed out by this process. Without it, the port of a server
 * that a test has stopped (and means to start again on the same port) is
 * free as far as the kernel knows and could be handed to a second server.
 * One bit per port: 8 KiB, no eviction needed.
 */
static pthread_mutex_t g_port_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned char g_ports_given[65536 / 8];

/* Marks `port` as handed out; false if it already was. */
static bool claim_port(int port) {
  unsigned char bit = (unsigned char)(1u << (port % 8));
  bool fresh;
  pthread_mutex_lock(&g_port_mu);
  fresh = (g_ports_given[port / 8] & bit) == 0;
  g_ports_given[port / 8] |= bit;
  pthread_mutex_unlock(&g_port_mu);
  return fresh;
}

/* Lets the kernel pick a free port on 127.0.0.1; -1 on error. */
static int kernel_free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof sa;
  int port = -1;
  /* No listen(): a socket that never listened or connected leaves no
     TIME_WAIT state behind, so the port is immediately bindable. */
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
      getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
    port = ntohs(sa.sin_port);
  int saved = errno;
  close(fd);
  errno = saved;
  return port;
}

int rt_free_port(void) {
  /* The kernel rotates through its ephemeral range, so repeats are rare;
     the bound only guards against a pathological exhausted range. */
  for (int attempt = 0; attempt < 1000; attempt++) {
    int port = kernel_free_port();
    if (port < 0)
      return -1;
    if (claim_port(port))
      return port;
  }
  errno = EADDRNOTAVAIL;
  return -1;
}

void rt_lookups_drain(void) {
  int64_t due = rt_now_ms() + 90 * 1000;
  while (rlock__resolve_running() > 0 && rt_now_ms() < due)
    rt_sleep_ms(10);
}
