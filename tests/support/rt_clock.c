/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_clock.c - servers with a movable wall clock: the clock shim preloaded,
 * its offset file written atomically. See rt_clock.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "rt_clock.h"
#include "rt_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#ifndef RT_CLOCKSHIM_PATH
#error "RT_CLOCKSHIM_PATH (the built clock shim) must be defined"
#endif

/* How close TIME must come to the real clock plus the offset. */
#define RT_CLOCK_TOLERANCE_MS 500

rt_server *rt_clock_server_start(const rt_server_opts *opts) {
  rt_server_opts o = opts ? *opts : (rt_server_opts){0};
  if (o.env != NULL) {
    fail_msg("rt_clock_server_start: opts->env must be NULL");
    return NULL;
  }
  static const char *const env[] = {
      "LD_PRELOAD=" RT_CLOCKSHIM_PATH,
      "RT_CLOCK_OFFSET_FILE={dir}/clock.offset",
      NULL,
  };
  o.env = env;
  return rt_server_start_opts(&o);
}

static void offset_path(const rt_server *s, char *out, size_t cap,
                        const char *suffix) {
  snprintf(out, cap, "%s/clock.offset%s", rt_server_dir(s), suffix);
}

int64_t rt_clock_offset_ms(const rt_server *s) {
  char path[600];
  offset_path(s, path, sizeof path, "");
  FILE *f = fopen(path, "re");
  long long v = 0;
  if (f != NULL) {
    if (fscanf(f, "%lld", &v) != 1)
      v = 0;
    fclose(f);
  }
  return v;
}

int64_t rt_clock_skew_ms(rt_server *s) {
  struct timeval before, after;
  gettimeofday(&before, NULL);
  redisReply *r = rt_cmd(s, "TIME");
  gettimeofday(&after, NULL);
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
    freeReplyObject(r);
    fail_msg("TIME on %s: not a pair", rt_server_url(s));
    return 0;
  }
  int64_t srv_us =
      atoll(r->element[0]->str) * 1000000LL + atoll(r->element[1]->str);
  freeReplyObject(r);
  int64_t mid_us = ((before.tv_sec + after.tv_sec) * 1000000LL +
                    before.tv_usec + after.tv_usec) /
                   2;
  return (srv_us - mid_us) / 1000;
}

typedef struct skew_want {
  rt_server *s;
  int64_t offset_ms;
} skew_want;

static bool pred_skew(void *arg, char *why, size_t cap) {
  skew_want *w = arg;
  int64_t skew = rt_clock_skew_ms(w->s);
  snprintf(why, cap, "TIME is %lld ms off the real clock, want %lld",
           (long long)skew, (long long)w->offset_ms);
  return llabs(skew - w->offset_ms) <= RT_CLOCK_TOLERANCE_MS;
}

void rt_clock_set_offset_ms(rt_server *s, int64_t offset_ms) {
  char tmp[600], path[600];
  offset_path(s, tmp, sizeof tmp, ".tmp");
  offset_path(s, path, sizeof path, "");
  FILE *f = fopen(tmp, "we");
  bool ok = f != NULL && fprintf(f, "%lld\n", (long long)offset_ms) > 0;
  if (f != NULL && fclose(f) != 0)
    ok = false;
  if (!ok || rename(tmp, path) != 0) {
    fail_msg("rt_clock_set_offset_ms: cannot write %s: %s", path,
             strerror(errno));
    return;
  }
  if (rt_server_pid(s) <= 0)
    return; /* read when it starts */
  skew_want w = {s, offset_ms};
  rt_wait_until(pred_skew, &w, rt_scaled_ms(5000),
                "the server's clock to take the offset");
}

void rt_clock_jump_ms(rt_server *s, int64_t delta_ms) {
  rt_clock_set_offset_ms(s, rt_clock_offset_ms(s) + delta_ms);
}
