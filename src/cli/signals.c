/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * signals.c - catching INT, TERM and HUP so that the lock is released and
 * the command hears about them.
 *
 * The handler only records the signal and forwards it to the running
 * child with kill(), both async-signal-safe; a SIGINT meant for the
 * process group (the terminal's, or kill -INT -PGID) is not forwarded, as
 * the child, in the same process group, got it too. The library's
 * background thread blocks every signal, so they are delivered to the
 * main thread, whose blocking calls (waitpid) then fail with EINTR: no
 * SA_RESTART.
 *
 * A signal that was ignored when rlock started (nohup, or a shell running
 * a background job) stays ignored, for rlock and for the command, as a
 * shell would leave it.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>

#include "cli.h"

static const int caught[] = {SIGINT, SIGTERM, SIGHUP};
#define NCAUGHT (sizeof caught / sizeof caught[0])

/* Whether caught[i] was ignored at start (then it is left alone). */
static int ignored[NCAUGHT];

static volatile sig_atomic_t last_signal;
static volatile sig_atomic_t child_pid;
/* Fired by the handler to end a wait for the lock (async-signal-safe). */
static rlock_cancel *cancel_token;

/* Whether the child got this signal already. SIGINT is the process
 * group's signal: the terminal's interrupt key (si_code SI_KERNEL) and
 * kill -INT -PGID (SI_USER) signal every member, COMMAND too while it
 * shares rlock's group (unless it moved), and forwarding would make one
 * two. Nothing tells a kill() of the group from a kill() of rlock alone
 * (both SI_USER), so neither is forwarded; a SIGINT queued to rlock alone
 * (sigqueue: SI_QUEUE, which never targets a group) is. */
static int child_got_it(int sig, const siginfo_t *info, pid_t child) {
  return sig == SIGINT && info != NULL &&
         (info->si_code == SI_KERNEL || info->si_code == SI_USER) &&
         getpgid(child) == getpgrp();
}

static void on_signal(int sig, siginfo_t *info, void *uctx) {
  (void)uctx;
  int saved = errno;
  last_signal = sig;
  rlock_cancel_fire(cancel_token);
  pid_t child = (pid_t)child_pid;
  if (child > 0 && !child_got_it(sig, info, child))
    kill(child, sig);
  errno = saved;
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
  return 0;
}

int cli_signal_caught(void) { return last_signal; }

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
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}
