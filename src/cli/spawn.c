/*
 * spawn.c - run COMMAND as a child and wait for it, like a shell would:
 * PATH search, 127 when it is not found, 126 when it cannot be executed,
 * 128+N when a signal N killed it.
 */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

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
  case ENOENT: return "command not found";
  case EACCES: return "permission denied";
  case ENOEXEC: return "exec format error";
  case ENOTDIR: return "not a directory";
  case E2BIG: return "argument list too long";
  case ENOMEM: return "out of memory";
  case ELOOP: return "too many symbolic links";
  case ENAMETOOLONG: return "file name too long";
  default: return "cannot execute";
  }
}

static _Noreturn void child_exec(char **argv) {
  cli_signals_reset_in_child();
  execvp(argv[0], argv);
  int err = errno;
  child_say(argv[0], ": ", exec_error_text(err));
  _exit(err == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC);
}

/* Wait until the child has exited without reaping it, so its pid cannot
 * be reused while the signal handler may still kill() it; then stop
 * forwarding, and reap. Returns the wait status, or -1. */
static int wait_child(pid_t pid) {
  siginfo_t info;
  int status;
  while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) != 0)
    if (errno != EINTR)
      return -1;
  cli_signals_block();
  cli_signals_set_child(0);
  cli_signals_unblock();
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  return status;
}

int cli_spawn_wait(char **argv) {
  cli_signals_block(); /* no forwarding gap between fork and set_child */
  int sig = cli_signal_caught();
  if (sig != 0) { /* e.g. SIGTERM right after the lock was acquired */
    cli_signals_unblock();
    return CLI_EXIT_SIGNAL_BASE + sig;
  }
  pid_t pid = fork();
  if (pid == 0)
    child_exec(argv);
  int err = errno;
  if (pid > 0)
    cli_signals_set_child(pid);
  cli_signals_unblock();
  if (pid < 0)
    return cli_fail(-1, "cannot start '%s': fork: %s", argv[0],
                    strerror(err));
  int status = wait_child(pid);
  if (status < 0)
    return cli_fail(-1, "waiting for '%s': %s", argv[0], strerror(errno));
  if (WIFSIGNALED(status))
    return CLI_EXIT_SIGNAL_BASE + WTERMSIG(status);
  return WEXITSTATUS(status);
}
