/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loopdrv.h - the loop workload's event loop: libuv or libevent behind one
 * small interface, so that the same workload code measures either
 * adapter (rlock/uv.h, rlock/event.h) in one run.
 */
#ifndef RLOCK_BENCH_LOOPDRV_H
#define RLOCK_BENCH_LOOPDRV_H

#include "rlock.h"

typedef struct bench_loopdrv bench_loopdrv;

/* A one-shot timer of the driver's loop; fn(arg) when it fires. */
typedef struct bench_looptimer bench_looptimer;

/* Make a loop of `driver` ("uv" or "event") and a loop client on it for
 * `url`; libevent's base is event_base_new()'s (so this driver's own
 * timers, unlike the client's, tick on CLOCK_MONOTONIC_COARSE). NULL
 * after printing why. */
bench_loopdrv *bench_loopdrv_new(const char *driver, const char *url);
rlock_client *bench_loopdrv_client(bench_loopdrv *d);

/* Run one turn of the loop: wait for an event, run the ready callbacks. */
void bench_loopdrv_run_once(bench_loopdrv *d);

/* A timer of d's loop (NULL: out of memory, printed); start (re)arms it
 * `ms` milliseconds from now; free stops and frees it. */
bench_looptimer *bench_looptimer_new(bench_loopdrv *d, void (*fn)(void *),
                                     void *arg);
void bench_looptimer_start(bench_looptimer *t, double ms);
void bench_looptimer_free(bench_looptimer *t);

/* Free the client, then the loop. */
void bench_loopdrv_free(bench_loopdrv *d);

#endif /* RLOCK_BENCH_LOOPDRV_H */
