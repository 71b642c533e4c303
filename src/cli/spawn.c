/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spawn.c - run COMMAND as a child and wait for it, like a shell would:
 * PATH search, 127 when it is not found, 126 when it cannot be executed,
 * 128+N when a signal N killed it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* Self-pipe the lost-lock callback writes to, so the wait polls the lock
 * at once. Made once and never closed: the background thread may write
 * to it at any time. */
static int wake_fd[2] = {-1, -1};
static atomic_int wake_ready;

void cli_spawn_wake(void) {
  if (atomic_load(&wake_ready)) {
    int saved = errno;
    ssize_t n = write(wake_fd[1], "x", 1);
    (void)n; /* full pipe: a wake-up is pending anyway */
    errno = saved;
  }
}

static void wake_init(void) {
  if (!atomic_load(&wake_ready) && pipe2(wake_fd, O_CLOEXEC | O_NONBLOCK) == 0)
    atomic_store(&wake_ready, 1);
}

static void wake_drain(void) {
  char buf[64];
  while (atomic_load(&wake_ready) && read(wake_fd[0], buf, sizeof buf) > 0)
    ;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Write to stderr with async-signal-safe calls only (we are a forked copy
 * of a multi-threaded process, where stdio and malloc may be locked). */
static void child_say(const char *a, const char *b, const char *c) {
  const char *parts[] = {"rlock: ", a, b, c, "\n"};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
    size_t len = strlen(parts[i]);
    while (len > 0) {
      ssize_t n = write(STDERR_FILENO, parts[i], len);
      if (n <= 0 && errno != EINTR)
        return;
      if (n > 0)
        parts[i] += n, len -= (size_t)n;
    }
  }
}

static const char *exec_error_text(int err) {
  switch (err) {
  case ENOENT:
    return "command not found";
  case EACCES:
    return "permission denied";
  case ENOEXEC:
    return "exec format error";
  case ENOTDIR:
    return "not a directory";
  case E2BIG:
    return "argument list too long";
  case ENOMEM:
    return "out of memory";
  case ELOOP:
    return "too many symbolic links";
  case ENAMETOOLONG:
    return "file name too long";
  default:
    return "cannot execute";
  }
}

/* Whether the child asks for SIGTERM at rlock's death, and rlock's pid
 * (set before fork: the child must not call anything unsafe). */
static int child_pdeath;
static pid_t child_parent;

static _Noreturn void child_exec(char **argv, char **envp) {
  cli_signals_reset_in_child();
  if (child_pdeath) {
    /* COMMAND must not run on unprotected once rlock (and with it the
     * renewal) is gone: the kernel sends SIGTERM when the forking thread,
     * rlock's main thread, exits. rlock may have died before this call. */
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != child_parent)
      _exit(CLI_EXIT_SIGNAL_BASE + SIGTERM);
  }
  if (envp != NULL)
    execvpe(argv[0], argv, envp);
  else
    execvp(argv[0], argv);
  int err = errno;
  child_say(argv[0], ": ", exec_error_text(err));
  _exit(err == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC);
}

/* A pidfd to poll for the child's exit, or -1 (older kernels: then the
 * wait polls on a short timer). */
static int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return (int)syscall(SYS_pidfd_open, pid, 0);
#else
  (void)pid;
  return -1;
#endif
}

/* Whether the child has exited (not reaped: WNOWAIT). -1 on error. */
static int exited(pid_t pid) {
  siginfo_t info;
  memset(&info, 0, sizeof info);
  if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT | WNOHANG) != 0)
    return errno == EINTR ? 0 : -1;
  return info.si_pid == pid;
}

/* Until the child exits: poll the lock every period and on a wake-up;
 * once it is lost, SIGTERM, then SIGKILL after kill_after_ms. *lost is
 * set when it was lost. Returns 0, or -1. */
static int watch_child(pid_t pid, const cli_watch *w, int *lost) {
  int pidfd = open_pidfd(pid);
  int64_t next_check = now_ms() + w->period_ms, kill_at = -1;
  int rc = 0;
  for (;;) {
    int e = exited(pid);
    if (e != 0) {
      rc = e < 0 ? -1 : 0;
      break;
    }
    int64_t now = now_ms();
    if (!*lost && now >= next_check) {
      char name[512] = "";
      if (w->lost(w->ud, name, sizeof name)) {
        *lost = 1;
        cli_fail(0, "lock '%s' was lost while '%s' ran: terminating it", name,
                 w->argv0);
        kill(pid, SIGTERM);
        kill_at = now + w->kill_after_ms;
      }
      next_check = now + w->period_ms;
    }
    if (kill_at >= 0 && now >= kill_at) {
      kill(pid, SIGKILL);
      kill_at = -1;
    }
    int64_t until = *lost ? (kill_at >= 0 ? kill_at : now + 1000) : next_check;
    if (pidfd < 0 && until > now + 50)
      until = now + 50;
    struct pollfd fds[2] = {{.fd = pidfd, .events = POLLIN},
                            {.fd = wake_fd[0], .events = POLLIN}};
    int r = poll(fds, 2, (int)(until > now ? until - now : 0));
    if (r > 0 && (fds[1].revents & POLLIN)) {
      wake_drain();
      next_check = now_ms(); /* the callback spoke: look now */
    }
  }
  if (pidfd >= 0)
    close(pidfd);
  return rc;
}

/* Wait until the child has exited without reaping it, so its pid cannot
 * be reused while the signal handler may still kill() it; then stop
 * forwarding, and reap. Returns the wait status, or -1. */
static int wait_child(pid_t pid, const cli_watch *w, int *lost) {
  siginfo_t info;
  int status;
  if (w != NULL && w->lost != NULL) {
    if (watch_child(pid, w, lost) != 0)
      return -1;
  } else {
    while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) != 0)
      if (errno != EINTR)
        return -1;
  }
  cli_signals_block();
  cli_signals_set_child(0);
  cli_signals_unblock();
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  return status;
}

int cli_spawn_watch(char **argv, cli_watch *w) {
  w->argv0 = argv[0];
  wake_init();
  wake_drain();
  child_pdeath = w->pdeath;
  child_parent = getpid();
  cli_signals_block(); /* no forwarding gap between fork and set_child */
  int sig = cli_signal_caught();
  if (sig != 0) { /* e.g. SIGTERM right after the lock was acquired */
    cli_signals_unblock();
    return CLI_EXIT_SIGNAL_BASE + sig;
  }
  pid_t pid = fork();
  if (pid == 0)
    child_exec(argv, w->envp);
  int err = errno;
  if (pid > 0)
    cli_signals_set_child(pid);
  cli_signals_unblock();
  if (pid < 0)
    return cli_fail(-1, "cannot start '%s': fork: %s", argv[0], strerror(err));
  int lost = 0;
  int status = wait_child(pid, w, &lost);
  if (status < 0)
    return cli_fail(-1, "waiting for '%s': %s", argv[0], strerror(errno));
  if (lost)
    return CLI_EXIT_LOST;
  if (WIFSIGNALED(status))
    return CLI_EXIT_SIGNAL_BASE + WTERMSIG(status);
  return WEXITSTATUS(status);
}
