/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_clockshim.c - an LD_PRELOAD shim that moves a process's wall clock.
 *
 * Preloaded into redis-server by the harness (rt_clock.h) to make a
 * server's clock jump: clock_gettime(CLOCK_REALTIME and
 * CLOCK_REALTIME_COARSE), gettimeofday() and time() return the real wall
 * clock plus an offset in milliseconds (a signed decimal, e.g. "120000")
 * read from the file named by $RT_CLOCK_OFFSET_FILE. Every other clock
 * (CLOCK_MONOTONIC, CPU clocks, ...) is passed through untouched. A
 * missing or unreadable file means the last offset read (0 at first).
 *
 * Redis 7.0 reads its wall clock through gettimeofday() (ustime(),
 * mstime(), the cached server.mstime and a script's time snapshot), which
 * is what key expiry compares with, and TIME answers from it too: moving
 * it forward makes keys expire early.
 *
 * Why it is written this way: the hooks may run before the C library and
 * jemalloc are set up (jemalloc reads a clock while it initialises, inside
 * the first malloc), so they must never allocate, use stdio, call dlsym or
 * call the C library's clock functions (which would come back here).
 * Everything goes through raw system calls (syscall(2)): the clock itself,
 * and open/read/close of the offset file, re-read at most once per
 * millisecond of wall time so a change is seen at once and a busy server
 * pays one extra read a millisecond. The file is replaced by rename()
 * (rt_clock_set_offset_ms), so a read sees the old content or the new,
 * never a mix.
 *
 * Built without sanitizers: it lives inside redis-server, which is not
 * instrumented.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define SHIM_ENV "RT_CLOCK_OFFSET_FILE"
#define SHIM_PATH_MAX 512
#define SHIM_REREAD_NS 1000000LL

/* The offset file's path, copied from the environment on first use:
   redis-server later overwrites its original environment block with its
   process title, so a pointer into it would not stay valid. 0: not yet,
   1: being copied, 2: ready (path[0] == 0: no file, offset stays 0). */
static char g_path[SHIM_PATH_MAX];
static atomic_int g_path_state;

static atomic_llong g_offset_ms;
/* The raw wall time (ns) of the last read of the file; 0: never. */
static atomic_llong g_read_at_ns;

extern char **environ;

static int raw_clock(clockid_t clk, struct timespec *ts) {
  return (int)syscall(SYS_clock_gettime, clk, ts);
}

/* Copy $RT_CLOCK_OFFSET_FILE into g_path without getenv() or strlen()
   (plain loops: nothing that could be interposed). */
static void copy_path(void) {
  static const char name[] = SHIM_ENV "=";
  for (char **e = environ; e != NULL && *e != NULL; e++) {
    size_t i = 0;
    while (name[i] != '\0' && (*e)[i] == name[i])
      i++;
    if (name[i] != '\0')
      continue;
    size_t n = 0;
    for (const char *v = *e + i; v[n] != '\0' && n < SHIM_PATH_MAX - 1; n++)
      g_path[n] = v[n];
    g_path[n] = '\0';
    return;
  }
}

static int path_ready(void) {
  int st = atomic_load(&g_path_state);
  if (st == 2)
    return 1;
  int expected = 0;
  if (st == 0 && atomic_compare_exchange_strong(&g_path_state, &expected, 1)) {
    copy_path();
    atomic_store(&g_path_state, 2);
    return 1;
  }
  return 0; /* another thread is copying it: offset as it stands */
}

/* Parse "[-]digits" (anything after the digits is ignored); 0 when the
   text holds no number, with *ok cleared. */
static long long parse_ms(const char *buf, long n, int *ok) {
  long i = 0;
  int neg = 0;
  while (i < n && (buf[i] == ' ' || buf[i] == '\t'))
    i++;
  if (i < n && (buf[i] == '-' || buf[i] == '+'))
    neg = buf[i++] == '-';
  long long v = 0;
  long digits = 0;
  for (; i < n && buf[i] >= '0' && buf[i] <= '9' && digits < 18; i++, digits++)
    v = v * 10 + (buf[i] - '0');
  *ok = digits > 0;
  return neg ? -v : v;
}

/* Read the offset file through raw system calls; keep the last offset on
   any failure. */
static void reread(void) {
  if (!path_ready() || g_path[0] == '\0')
    return;
  long fd = syscall(SYS_openat, AT_FDCWD, g_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  char buf[64];
  long n = syscall(SYS_read, (int)fd, buf, sizeof buf);
  syscall(SYS_close, (int)fd);
  int ok = 0;
  long long v = n > 0 ? parse_ms(buf, n, &ok) : 0;
  if (ok)
    atomic_store(&g_offset_ms, v);
}

/* The offset for a wall time `now_ns` just read: the file is read again
   once a millisecond has passed since the last read (or the clock went
   back). Two threads may both read it; they store the same value. */
static long long offset_ms(long long now_ns) {
  long long at = atomic_load_explicit(&g_read_at_ns, memory_order_relaxed);
  if (at == 0 || now_ns - at >= SHIM_REREAD_NS || now_ns < at) {
    atomic_store_explicit(&g_read_at_ns, now_ns, memory_order_relaxed);
    reread();
  }
  return atomic_load_explicit(&g_offset_ms, memory_order_relaxed);
}

/* The real wall clock of `clk` plus the offset, into *ts. */
static int shifted(clockid_t clk, struct timespec *ts) {
  int rc = raw_clock(clk, ts);
  if (rc != 0)
    return rc;
  long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec;
  ns += offset_ms(ns) * 1000000LL;
  ts->tv_sec = (time_t)(ns / 1000000000LL);
  ts->tv_nsec = (long)(ns % 1000000000LL);
  if (ts->tv_nsec < 0) {
    ts->tv_nsec += 1000000000L;
    ts->tv_sec -= 1;
  }
  return 0;
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
  if (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)
    return shifted(clk, ts);
  return raw_clock(clk, ts);
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
  struct timespec ts;
  int rc = shifted(CLOCK_REALTIME, &ts);
  if (rc != 0)
    return rc;
  tv->tv_sec = ts.tv_sec; /* never NULL: declared nonnull */
  tv->tv_usec = ts.tv_nsec / 1000;
  if (tz != NULL) { /* obsolete: both fields zero, as the C library does */
    struct timezone *z = tz;
    z->tz_minuteswest = 0;
    z->tz_dsttime = 0;
  }
  return 0;
}

time_t time(time_t *t) {
  struct timespec ts;
  time_t now = shifted(CLOCK_REALTIME, &ts) == 0 ? ts.tv_sec : (time_t)-1;
  if (t != NULL)
    *t = now;
  return now;
}
