/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * signals.c - catching INT, TERM, HUP and QUIT so that the lock is
 * released and COMMAND's whole job hears about them; SIGCONT and SIGCHLD
 * for the job control of spawn.c.
 *
 * COMMAND runs in a process group of its own (spawn.c), so no signal
 * meant for rlock's group reaches it by itself: the handler records the
 * signal and passes it on to COMMAND's group with kill(-PGID), both
 * async-signal-safe, whatever sent it (a terminal's key, kill -INT -PGID
 * of rlock's group, or kill of rlock alone): COMMAND's job gets each one
 * once. The library's background thread blocks every signal, so they are
 * delivered to the main thread, whose blocking calls (waitpid) then fail
 * with EINTR: no SA_RESTART for the four.
 *
 * A signal that was ignored when rlock started (nohup, or a shell running
 * a background job) stays ignored, for rlock and for the command, as a
 * shell would leave it.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>

#include "cli.h"

static const int caught[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define NCAUGHT (sizeof caught / sizeof caught[0])

/* Whether caught[i] was ignored at start (then it is left alone). */
static int ignored[NCAUGHT];

static volatile sig_atomic_t last_signal;
static volatile sig_atomic_t count; /* how many were caught */
/* COMMAND's pid, which is also its process group's id. */
static volatile sig_atomic_t child_pid;
/* Fired by the handler to end a wait for the lock (async-signal-safe). */
static rlock_cancel *cancel_token;

static void on_signal(int sig, siginfo_t *info, void *uctx) {
  (void)uctx, (void)info;
  int saved = errno;
  last_signal = sig;
  count++;
  rlock_cancel_fire(cancel_token);
  pid_t child = (pid_t)child_pid;
  if (child > 0)
    kill(-child, sig);
  cli_spawn_wake(); /* the wait for the job looks at it */
  errno = saved;
}

/* SIGCONT (fg, bg, kill -CONT): COMMAND's group continues with rlock. */
static void on_cont(int sig) {
  (void)sig;
  int saved = errno;
  pid_t child = (pid_t)child_pid;
  if (child > 0)
    kill(-child, SIGCONT);
  cli_spawn_wake();
  errno = saved;
}

/* SIGCHLD: a child stopped or exited; the wait in spawn.c looks now. */
static void on_child(int sig) {
  (void)sig;
  cli_spawn_wake(); /* keeps errno */
}

static void caught_set(sigset_t *set) {
  sigemptyset(set);
  for (size_t i = 0; i < NCAUGHT; i++)
    sigaddset(set, caught[i]);
}

int cli_signals_install(void) {
  if (cancel_token == NULL && rlock_cancel_new(&cancel_token) != RLOCK_OK)
    return -1;
  struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO};
  caught_set(&sa.sa_mask); /* one handler at a time */
  for (size_t i = 0; i < NCAUGHT; i++) {
    struct sigaction old;
    if (sigaction(caught[i], NULL, &old) != 0)
      return -1;
    ignored[i] = old.sa_handler == SIG_IGN;
    if (!ignored[i] && sigaction(caught[i], &sa, NULL) != 0)
      return -1;
  }
  /* These two only wake the wait for COMMAND: restart what they cut. */
  struct sigaction wake = {.sa_handler = on_cont, .sa_flags = SA_RESTART};
  sigemptyset(&wake.sa_mask);
  if (sigaction(SIGCONT, &wake, NULL) != 0)
    return -1;
  wake.sa_handler = on_child;
  return sigaction(SIGCHLD, &wake, NULL);
}

int cli_signal_caught(void) { return last_signal; }

int cli_signals_count(void) { return count; }

rlock_cancel *cli_cancel_token(void) { return cancel_token; }

void cli_signals_free(void) {
  rlock_cancel_free(cancel_token);
  cancel_token = NULL;
}

void cli_signals_block(void) {
  sigset_t set;
  caught_set(&set);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
}

void cli_signals_unblock(void) {
  sigset_t set;
  caught_set(&set);
  pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

void cli_signals_set_child(pid_t pid) { child_pid = pid; }

void cli_signals_reset_in_child(void) {
  struct sigaction sa = {.sa_flags = 0};
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < NCAUGHT; i++) {
    sa.sa_handler = ignored[i] ? SIG_IGN : SIG_DFL;
    sigaction(caught[i], &sa, NULL);
  }
  sa.sa_handler = SIG_DFL;
  sigaction(SIGCONT, &sa, NULL);
  sigaction(SIGCHLD, &sa, NULL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}
