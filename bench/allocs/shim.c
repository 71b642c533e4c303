/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shim.c - counts the process's heap allocations (malloc, calloc,
 * realloc, every thread) while rlock_shim_on is set; LD_PRELOADed or
 * linked ahead of libc by scripts/bench_allocs.sh.
 *
 * RLOCK_SHIM_TRACE=N prints the call stack of the first N allocations
 * counted to stderr (backtrace_symbols_fd: build with -rdynamic or read
 * the addresses with addr2line), to find where they are.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

atomic_long rlock_shim_count;
atomic_int rlock_shim_on;

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);

/* dlsym itself may calloc before real_calloc is known. */
static char boot[4096];
static size_t boot_used;

static long trace; /* stacks still to print */
static _Thread_local int tracing;

static void count(void) {
  if (!atomic_load_explicit(&rlock_shim_on, memory_order_relaxed))
    return;
  long k =
      atomic_fetch_add_explicit(&rlock_shim_count, 1, memory_order_relaxed);
  if (k < trace && !tracing) {
    tracing = 1; /* backtrace may allocate */
    void *pc[32];
    int n = backtrace(pc, 32);
    static const char line[] = "---- allocation\n";
    (void)!write(2, line, sizeof line - 1);
    backtrace_symbols_fd(pc, n, 2);
    tracing = 0;
  }
}

void *malloc(size_t n) {
  if (real_malloc == NULL)
    real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
  count();
  return real_malloc(n);
}

void *calloc(size_t a, size_t b) {
  if (real_calloc == NULL) {
    size_t n = (a * b + 15) & ~(size_t)15;
    if (boot_used + n > sizeof boot)
      return NULL;
    void *p = boot + boot_used;
    boot_used += n;
    return p;
  }
  count();
  return real_calloc(a, b);
}

void *realloc(void *p, size_t n) {
  if (real_realloc == NULL)
    real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
  count();
  return real_realloc(p, n);
}

__attribute__((constructor)) static void init(void) {
  real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
  const char *t = getenv("RLOCK_SHIM_TRACE");
  if (t != NULL && (trace = atol(t)) > 0) {
    void *pc[1];
    backtrace(pc, 1); /* loads what it needs now, not while counting */
  }
}
