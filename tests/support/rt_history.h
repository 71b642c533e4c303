/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_history.h - a history of lock operations and its checker, for fault
 * runs (tests/integration/test_faults.c).
 *
 * Workers (processes or threads) append fixed-size records to one file
 * opened with O_APPEND, one write() per record, so a worker killed at any
 * moment never tears one. Times are CLOCK_MONOTONIC (one clock for every
 * process of the machine). The harness appends its own records (a worker
 * killed or stopped, a fault injected) to the same file.
 *
 * The checker reads the file back and counts, per lock:
 *   - overlaps: two holds of one lock at once (a hold runs from ACQUIRED
 *     to the same worker's RELEASING, or to its KILLED record, or, for a
 *     worker still running at the end, to the end);
 *   - token inversions: a fenced write accepted with a lower token than
 *     one accepted before it;
 *   - lost updates: a counter bumped (read, then write) inside the lock
 *     that ends below the number of bumps whose write completed;
 *   - starved calls: an acquisition that returned later than its wait
 *     plus a slack.
 * A hold the lease may end by itself (a worker stopped past its lease, a
 * restart without persistence) is expected to overlap: the checker counts
 * such overlaps apart when the stale holder was refused (WRITE_REFUSED or
 * LOST after the overlap began).
 */
#ifndef RT_HISTORY_H
#define RT_HISTORY_H

#include <stdbool.h>
#include <stdint.h>

typedef enum rt_ev {
  RT_EV_ACQUIRED = 1,   /* a = fencing token (0: none) */
  RT_EV_RELEASING,      /* about to release */
  RT_EV_ACQUIRE_FAILED, /* a = status, b = wait ms, c = call duration ms */
  RT_EV_ACQUIRE_CALL,   /* a = wait ms, b = call duration ms (any result) */
  RT_EV_BUMP_BEGIN,     /* read the counter */
  RT_EV_BUMP_DONE,      /* wrote it back */
  RT_EV_WRITE_ACCEPTED, /* fenced write accepted: a = token, b = the
                           resource's order of acceptance (0: unknown,
                           then the record's time) */
  RT_EV_WRITE_REFUSED,  /* fenced write refused: a = token */
  RT_EV_LOST,           /* rlock_lock_check or the release said
                           RLOCK_ELOST: the hold just closed, if any,
                           ended when the lease ran out */
  RT_EV_KILLED,         /* harness: worker killed (SIGKILL) */
  RT_EV_FAULT           /* harness: a fault injected, a = its kind */
} rt_ev;

typedef struct rt_record {
  int64_t t_us; /* CLOCK_MONOTONIC */
  int32_t worker;
  int32_t lock;
  int32_t ev; /* rt_ev */
  int32_t pad;
  int64_t a, b, c;
} rt_record;

/* Open (create) `path` for appending; the fd, or fails the test. */
int rt_history_open(const char *path);

/* Append one record (one write()). */
void rt_history_add(int fd, int worker, int lock, rt_ev ev, int64_t a,
                    int64_t b, int64_t c);

typedef struct rt_verdict {
  long records, acquisitions, releases, kills, faults;
  long acquire_failed;  /* calls that failed (documented or not) */
  long overlaps;        /* holds of one lock at once, unexplained */
  long fenced_overlaps; /* overlaps whose stale holder was refused */
  long token_inversions;
  long writes_accepted, writes_refused, lost;
  long bumps_begun, bumps_done;
  long counter_value; /* as read by the caller, or -1 */
  long lost_updates;  /* bumps_done - counter_value, when positive */
  long starved;       /* calls past their wait + slack */
  long undocumented;  /* failed calls whose status is not one of
                         include/rlock/errors.h's */
  char first[512];    /* the first violation, in words */
} rt_verdict;

/* Read `path` and judge it; `counter` is the counter's final value (-1:
 * no counter), `slack_ms` what a call may overrun its wait by. */
rt_verdict rt_history_check(const char *path, long counter, int64_t slack_ms);

/* rt_history_check for the permits of semaphores of `capacity` permits
 * (a record's `lock` names the semaphore): an overlap is a permit taken
 * while `capacity` others of the same semaphore are held; 1 is
 * rt_history_check. */
rt_verdict rt_history_check_n(const char *path, long counter, int64_t slack_ms,
                              int capacity);

/* One line of totals, for logs and the soak script. */
void rt_history_print(const char *scenario, const rt_verdict *v);

/* No violation: overlaps, token inversions, lost updates, starved,
 * undocumented statuses. */
bool rt_history_clean(const rt_verdict *v);

#endif
