/* SPDX-License-Identifier: BSD-3-Clause */
/* A program serves its lock metrics to Prometheus over HTTP.
 *
 * rlock_client_metrics_text() writes the client's metrics in the
 * Prometheus text format; the program serves them on an endpoint of its
 * own. Here that is a plain socket on 127.0.0.1 answering every request
 * with the text (serve_one): a few lines, no HTTP library.
 *
 * First the program makes some numbers: it takes the lock "metrics-demo"
 * three times, and while it holds it, a second thread tries for 100 ms and
 * gives up (a timeout). Then it scrapes itself, as Prometheus would: a
 * thread sends GET /metrics to the port and reads the answer, which must
 * show 3 acquisitions and 1 timeout of a reentrant lock. With a second
 * argument it goes on serving that many more requests (0: for ever), for
 * `curl http://127.0.0.1:PORT/metrics`.
 *
 * Usage: metrics_http [URL [REQUESTS]]   (URL default: $RLOCK_URL, else
 * redis://127.0.0.1:6379). Exits 0 when the scrape showed what happened. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <rlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The client's metrics as a string of the heap (free it), sized by asking:
 * the text grows as kinds and lock names are first used. */
static char *metrics_text(rlock_client *client) {
  char *text = NULL;
  size_t size = 0, needed = 0;
  while (rlock_client_metrics_text(client, text, size, &needed, 0) !=
         RLOCK_OK) {
    free(text);
    if (needed <= size || (text = malloc(size = needed + 1024)) == NULL)
      return NULL; /* not a size problem (cannot happen here) */
  }
  return text;
}

/* Answer one HTTP request on the listening socket with the metrics. */
static int serve_one(int listener, rlock_client *client) {
  int conn = accept(listener, NULL, NULL);
  if (conn < 0)
    return -1;
  char request[2048];
  ssize_t got = read(conn, request, sizeof request); /* GET /metrics ... */
  char *text = metrics_text(client);
  if (got > 0 && text != NULL)
    dprintf(conn,
            "HTTP/1.0 200 OK\r\n"
            "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            "Content-Length: %zu\r\n\r\n%s",
            strlen(text), text);
  else
    dprintf(conn, "HTTP/1.0 500 Internal Server Error\r\n\r\n");
  free(text);
  close(conn);
  return text != NULL ? 0 : -1;
}

/* ---- the rest makes numbers and plays Prometheus ------------------------- */

typedef struct scrape {
  int port;
  char answer[1 << 16];
} scrape;

/* GET /metrics from 127.0.0.1:port; the whole answer into s->answer. */
static void *scraper(void *arg) {
  scrape *s = arg;
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)s->port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    perror("scraper: connect");
    if (fd >= 0)
      close(fd);
    return NULL;
  }
  dprintf(fd, "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  size_t n = 0;
  ssize_t got;
  while (n + 1 < sizeof s->answer &&
         (got = read(fd, s->answer + n, sizeof s->answer - 1 - n)) > 0)
    n += (size_t)got;
  s->answer[n] = '\0';
  close(fd);
  return NULL;
}

/* While main holds the lock: try for 100 ms, as another owner would. */
static void *impatient(void *arg) {
  int rc = rlock_lock_try_acquire(arg, 100, RLOCK_LEASE_WATCHDOG);
  printf("another thread: %s after 100 ms\n",
         rc == RLOCK_ELOCKED ? "gave up" : "did not give up");
  return NULL;
}

/* A listening socket on 127.0.0.1, on a port the system picks. */
static int listen_any(int *port) {
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(fd, 16) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
    perror("listen");
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

/* Take the lock three times; the second time another thread times out. */
static int make_numbers(rlock_lock *lock) {
  for (int i = 0; i < 3; i++) {
    if (rlock_lock_acquire(lock) != RLOCK_OK)
      return -1;
    if (i == 1) {
      pthread_t t;
      pthread_create(&t, NULL, impatient, lock);
      pthread_join(t, NULL);
    }
    if (rlock_lock_release(lock) != RLOCK_OK)
      return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : getenv("RLOCK_URL");
  long more = argc > 2 ? strtol(argv[2], NULL, 10) : -1;
  rlock_config *cfg;
  rlock_client *client;
  rlock_lock *lock;
  rlock_config_new(&cfg);
  if (url != NULL && rlock_config_set_url(cfg, url) != RLOCK_OK)
    return fprintf(stderr, "%s\n", rlock_error_last()->message), 1;
  if (rlock_client_new(&client, cfg) != RLOCK_OK)
    return fprintf(stderr, "%s\n", rlock_error_last()->message), 1;
  rlock_config_free(cfg);
  rlock_lock_new(&lock, client, "metrics-demo");
  int ok = make_numbers(lock) == 0, port = 0;
  int listener = ok ? listen_any(&port) : -1;
  static scrape s;
  s.port = port;
  pthread_t t;
  if (listener >= 0 && pthread_create(&t, NULL, scraper, &s) == 0) {
    ok = serve_one(listener, client) == 0;
    pthread_join(t, NULL);
    ok = ok && strstr(s.answer, "HTTP/1.0 200 OK\r\n") == s.answer &&
         strstr(s.answer,
                "\nrlock_acquisitions_total{kind=\"reentrant\"} 3\n") &&
         strstr(s.answer,
                "\nrlock_acquire_timeouts_total{kind=\"reentrant\"} 1\n");
    printf("scraped http://127.0.0.1:%d/metrics: %s\n", port,
           ok ? "3 acquisitions and 1 timeout of a reentrant lock"
              : "not what happened");
    for (long i = 0; ok && (more == 0 || i < more); i++)
      serve_one(listener, client);
  } else {
    fprintf(stderr, "%s\n", ok ? "cannot serve" : rlock_error_last()->message);
    ok = 0;
  }
  if (listener >= 0)
    close(listener);
  rlock_lock_free(lock);
  rlock_client_free(client);
  return ok ? 0 : 1;
}
