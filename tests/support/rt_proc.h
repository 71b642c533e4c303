/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_proc.h - process hygiene for rt_server (internal to tests/support).
 *
 * A registry of the child processes (servers) the test process started,
 * each with a private directory. The registry guarantees that no server
 * outlives the test process:
 *  - children are forked on one long-lived thread with PR_SET_PDEATHSIG =
 *    SIGKILL, so they die with the process even if it is SIGKILLed;
 *  - at exit(), and on SIGINT, SIGTERM, SIGHUP, SIGABRT, SIGSEGV and SIGBUS
 *    when the signal is about to terminate the process, every registered
 *    child is SIGKILLed and reaped by pid and its directory removed;
 *  - all of that happens only in the process that owns the registry, never
 *    in a fork()ed child (see rt_forked_child() in rt_server.h).
 * Processes are only ever signalled by pid, and a pid leaves the registry
 * before it is reaped, so a recycled pid is never signalled.
 */
#ifndef RT_PROC_H
#define RT_PROC_H

#include <stdbool.h>
#include <sys/types.h>

/* Room for a registered directory path, NUL included. It matches
   sockaddr_un.sun_path: a server's unix socket lives in its directory. */
#define RT_PROC_PATH_MAX 108

/* Once per process, before anything else here: makes the calling process
   the registry's owner, installs the atexit and signal handlers. */
void rt_proc_init(void);

/* Whether this is the process that owns the registry (false in a child). */
bool rt_proc_is_owner(void);

/* Register `dir` (copied; shorter than RT_PROC_PATH_MAX) for a child to be
   spawned: returns a slot, or -1 when all are in use. */
int rt_proc_claim(const char *dir);
/* Forget the slot; its child must have been reaped, its dir removed. */
void rt_proc_release(int slot);
/* The slot's live child, or 0. */
pid_t rt_proc_pid(int slot);

/* SIGCONT to every live child: a case that failed while a server was
   frozen (SIGSTOP) must not leave it frozen for the cases after it. */
void rt_proc_continue_all(void);

/* fork() + execve(bin, argv) on the spawner thread, in a process group of
   its own, with stdin /dev/null, stdout and stderr on log_fd, no other
   inherited fd, default signal dispositions and mask. The pid is in the slot
   from right after fork(). Returns the pid, or -errno. */
int rt_proc_spawn(int slot, const char *bin, const char *const *argv,
                  int log_fd);
/* rt_proc_spawn() with the environment `envp` (NULL-terminated
   "NAME=value" words, borrowed until it returns; NULL: the test
   process's own). */
int rt_proc_spawn_env(int slot, const char *bin, const char *const *argv,
                      const char *const *envp, int log_fd);

/* Wait for the slot's child `pid` to exit: poll up to timeout_ms (0: just
   check), or block if timeout_ms < 0. True once it is reaped, with its wait
   status in *status if not NULL (-1 if it had already been reaped). */
bool rt_proc_wait_exit(int slot, pid_t pid, int timeout_ms, int *status);

/* In a fork()ed child: give up ownership, so that the child's exit or
   death never touches the parent's children (rt_forked_child()). */
void rt_proc_disown(void);

/* fork() + execv(argv[0], argv) on the calling thread, stdin /dev/null,
   stdout and stderr to the files `out` and `err` (made or truncated); with
   `own_group`, in a process group of its own with SIGINT, SIGTERM and
   SIGHUP at their defaults and no signal blocked. The child of a threaded
   process makes only async-signal-safe calls before execv: the caller
   builds the arguments. Returns the pid, or -1 (errno set). */
pid_t rt_proc_start_to_files(const char *const *argv, const char *out,
                             const char *err, bool own_group);

/* rm -rf dir, not following symlinks. */
void rt_proc_remove_tree(const char *dir);

#endif /* RT_PROC_H */
