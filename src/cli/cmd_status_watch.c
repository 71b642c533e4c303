/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_status_watch.c - `rlock status --watch NAME`: the lock's state, then
 * one line each time its holders or its queue change. It reads the state
 * (rlock_lock_inspect) when a message on the lock's channels says a holder
 * went (rlock/watch.h: the plain and the read-write lock's channel), when
 * the holder's lease is due to end, and every --interval (a taking
 * publishes nothing, nor does a fair lock's release on its channel).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/* What a line is printed for: mode, holders and their counts, queue. */
static char *state_key(const rlock_lock_info *info) {
  size_t cap = 64, len = 0;
  char *k = malloc(cap);
  if (k == NULL)
    return NULL;
  const char *mode = rlock_lock_info_mode(info);
  len += (size_t)snprintf(k, cap, "%d|%s|", rlock_lock_info_locked(info),
                          mode ? mode : "");
  size_t nh = rlock_lock_info_holder_count(info);
  size_t nq = rlock_lock_info_queue_count(info);
  for (size_t i = 0; i < nh + nq; i++) {
    const char *o = i < nh ? rlock_lock_info_holder_owner(info, i)
                           : rlock_lock_info_queue_owner(info, i - nh);
    int64_t n = i < nh ? rlock_lock_info_holder_holds(info, i) : -1;
    size_t need = len + strlen(o) + 32;
    if (need > cap) {
      char *more = realloc(k, cap = need * 2);
      if (more == NULL) {
        free(k);
        return NULL;
      }
      k = more;
    }
    len += (size_t)snprintf(k + len, cap - len, "%s=%" PRId64 ";", o, n);
  }
  return k;
}

/* " (pid P on HOST, PROGRAM)" from the registry, or nothing. */
static void put_who(rlock_client *client, const char *owner) {
  const rlock_client_record *r = cli_who_record(client, owner);
  if (r == NULL)
    return;
  printf(" (pid %lld on ", r->pid);
  cli_put_printable(stdout, r->host);
  fputs(", ", stdout);
  cli_put_printable(stdout, r->program[0] ? r->program : "?");
  fputc(')', stdout);
}

/* "2026-11-29T03:30:01.123Z NAME: locked by OWNER (2 holds) ...; queued:
 * OWNER, ..." on one line. */
static void print_line(rlock_client *client, const char *name,
                       const rlock_lock_info *info) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char when[32];
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  printf("%s.%03ldZ ", when, ts.tv_nsec / 1000000L);
  cli_put_printable(stdout, name);
  const char *mode = rlock_lock_info_mode(info);
  if (!rlock_lock_info_locked(info))
    fputs(": free", stdout);
  else
    printf(": locked%s by", mode == NULL                 ? ""
                            : strcmp(mode, "write") == 0 ? " for writing"
                                                         : " for reading");
  for (size_t i = 0; i < rlock_lock_info_holder_count(info); i++) {
    const char *o = rlock_lock_info_holder_owner(info, i);
    int64_t n = rlock_lock_info_holder_holds(info, i);
    fputs(i > 0 ? ", " : " ", stdout);
    cli_put_printable(stdout, o);
    printf(" x%" PRId64, n);
    put_who(client, o);
  }
  for (size_t i = 0; i < rlock_lock_info_queue_count(info); i++) {
    const char *o = rlock_lock_info_queue_owner(info, i);
    fputs(i > 0 ? ", " : "; queued: ", stdout);
    cli_put_printable(stdout, o);
    put_who(client, o);
  }
  fputc('\n', stdout);
}

/* Read the state; print it when it differs from *last (replaced). 0, or
 * an exit status. */
static int look(rlock_client *client, rlock_lock *lock, const char *name,
                int json, char **last, int64_t *ttl) {
  rlock_lock_info *info;
  int rc = rlock_lock_inspect(&info, lock);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc);
  char *key = state_key(info);
  if (key == NULL) {
    rlock_lock_info_free(info);
    return cli_fail(EX_OSERR, "out of memory");
  }
  if (*last == NULL || strcmp(*last, key) != 0) {
    if (json)
      cli_status_json(client, name, info, rlock_client_topology(client), 0);
    else
      print_line(client, name, info);
    if (fflush(stdout) != 0)
      rc = cli_fail(EX_IOERR, "cannot write the output");
  }
  *ttl = rlock_lock_info_ttl_ms(info);
  free(*last);
  *last = key;
  rlock_lock_info_free(info);
  return rc;
}

/* Follow the lock's channels (the plain and the read-write lock's). */
static int follow(cli_follow *f, rlock_client *client, const char *name,
                  rlock_lock **plain, rlock_lock **rw) {
  int rc = cli_lock_new(CLI_LOCK, plain, client, name);
  if (rc == RLOCK_OK)
    rc = cli_lock_new(CLI_READ, rw, client, name);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc);
  int st = cli_follow_lock(f, *plain);
  return st != 0 ? st : cli_follow_lock(f, *rw);
}

static int watch_loop(rlock_client *client, rlock_lock *lock, const char *name,
                      int json, int64_t interval_ms, cli_follow *f) {
  /* After a message, the waiter it woke takes the lock within a round
   * trip or so, which publishes nothing: two more reads soon after it
   * see the new holder. */
  static const int64_t quick_ms[] = {10, 50};
  char *last = NULL;
  int64_t ttl = -2;
  int quick = 2, st = look(client, lock, name, json, &last, &ttl);
  while (st == 0) {
    int64_t next = quick < 2 ? quick_ms[quick] : interval_ms;
    if (ttl > 0 && ttl + 1 < next)
      next = ttl + 1;
    int got = cli_follow_wait(f, next);
    if (got < 0)
      break;
    quick = got > 0 ? 0 : quick < 2 ? quick + 1 : 2;
    st = look(client, lock, name, json, &last, &ttl);
  }
  free(last);
  return st != 0 ? st : CLI_EXIT_SIGNAL_BASE + cli_signal_caught();
}

int cli_status_watch(rlock_client *client, const char *name, int json,
                     int64_t interval_ms) {
  rlock_lock *lock = NULL, *plain = NULL, *rw = NULL;
  cli_follow *f = NULL;
  int st = cli_follow_new(&f);
  if (st == 0)
    st = follow(f, client, name, &plain, &rw);
  if (st == 0) {
    int rc = cli_lock_new(CLI_FAIR, &lock, client, name);
    st = rc != RLOCK_OK ? cli_lib_error(rc)
                        : watch_loop(client, lock, name, json, interval_ms, f);
  }
  cli_follow_free(f);
  rlock_lock_free(lock);
  rlock_lock_free(plain);
  rlock_lock_free(rw);
  return st;
}
