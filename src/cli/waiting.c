/*
 * waiting.c - acquire a lock in slices of at most a second, so that a
 * signal can end the wait (the library's wait does not return on EINTR),
 * and on a terminal show who holds the lock meanwhile.
 */
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"

#define SLICE_MS 1000

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
  int more = snprintf(buf + n, size - (size_t)n, " held by %s (%s)", owner,
                      left);
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

/* Redraw the progress line in place; *shown is the width drawn so far. */
static void progress_show(rlock_lock *lock, size_t *shown) {
  rlock_lock_info *info;
  if (rlock_lock_inspect(&info, lock) != RLOCK_OK)
    return; /* the next attempt reports any real problem */
  char buf[2048];
  size_t room = line_room();
  describe(buf, sizeof buf, lock, info, room);
  rlock_lock_info_free(info);
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

/* Milliseconds left before `deadline` (INT64_MAX: forever), at least 0. */
static int64_t ms_left(int64_t deadline) {
  if (deadline == INT64_MAX)
    return INT64_MAX;
  int64_t left = deadline - cli_now_ms();
  return left > 0 ? left : 0;
}

/* The first attempt does not wait, so -w 0 is exactly one try and a
 * terminal hears at once what it is waiting for. */
int cli_acquire(rlock_lock *lock, int64_t wait_ms, int64_t lease_ms,
                int show) {
  int64_t deadline = wait_ms < 0 ? INT64_MAX : cli_now_ms() + wait_ms;
  int64_t slice = 0, left;
  size_t shown = 0;
  int rc;
  for (;;) {
    rc = rlock_lock_try_acquire(lock, slice, lease_ms);
    if (cli_signal_caught() != 0) {
      if (rc == RLOCK_OK)
        rlock_lock_release(lock);
      rc = CLI_INTERRUPTED;
      break;
    }
    if (rc != RLOCK_ELOCKED || (left = ms_left(deadline)) == 0)
      break;
    slice = left < SLICE_MS ? left : SLICE_MS;
    if (show)
      progress_show(lock, &shown);
  }
  progress_clear(shown);
  return rc;
}
