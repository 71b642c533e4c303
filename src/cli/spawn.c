/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spawn.c - run COMMAND as a child and wait for it, like a shell would:
 * PATH search, 127 when it is not found, 126 when it cannot be executed,
 * 128+N when a signal N killed it.
 *
 * COMMAND is a job, as flock(1) users know it: COMMAND leads a process
 * group of its own, which every signal rlock passes on reaches whole, and
 * rlock is a child subreaper (PR_SET_CHILD_SUBREAPER), so the processes
 * COMMAND leaves behind (`sleep 60 &`) become rlock's children when their
 * parent exits. The lock is held until the last of them has exited.
 * COMMAND itself is reaped last: its zombie keeps its pid, and with it
 * the process group's id, from being reused while rlock may still signal
 * that group.
 *
 * On a terminal where rlock is in the foreground, COMMAND's group is made
 * the foreground group (so Ctrl-C, Ctrl-\ and terminal input reach it
 * directly, as they would without rlock), and job control is mirrored:
 * when COMMAND is stopped by Ctrl-Z (or a background read or write),
 * rlock takes the terminal back and stops its own group, and when that
 * group is continued, hands the terminal over again and continues
 * COMMAND's group.
 */
#include <dirent.h>
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
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* Self-pipe that wakes the wait for the job: written by the lost-lock
 * callback (look at the lock now) and by the signal handlers (SIGCHLD: a
 * child stopped or exited; a caught signal). Made once and never closed:
 * the background thread may write to it at any time. */
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

/* Whether the child asks for SIGTERM at rlock's death, rlock's pid, and
 * the terminal to make COMMAND's group the foreground of (set before fork:
 * the child must not call anything unsafe). */
static int child_pdeath;
static pid_t child_parent;
static int child_tty = -1;

/* tcsetpgrp() without the SIGTTOU a process outside the foreground group
 * gets for it. Async-signal-safe. */
static void give_tty(int tty, pid_t pgrp) {
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &old);
  tcsetpgrp(tty, pgrp);
  sigprocmask(SIG_SETMASK, &old, NULL);
}

static _Noreturn void child_exec(char **argv, char **envp) {
  /* Its own group, led by itself; the parent does the same, so that
   * neither can signal or hand the terminal to a group not made yet. */
  setpgid(0, 0);
  if (child_tty >= 0)
    give_tty(child_tty, getpid());
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

/* rlock's controlling terminal, or -1 when it has none. */
static int open_ctty(void) {
  return open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
}

/* Whether rlock's group is the foreground group of terminal `tty`. */
static int in_foreground(int tty) {
  return tty >= 0 && tcgetpgrp(tty) == getpgrp();
}

/* COMMAND's job while rlock waits for it. */
typedef struct job {
  pid_t pid;   /* COMMAND, the leader of its process group */
  int pidfd;   /* or -1 */
  int tty;     /* rlock's controlling terminal, or -1 */
  int exited;  /* COMMAND has exited (its zombie is reaped last) */
  int lost;    /* the lock was found lost */
  int ending;  /* what COMMAND left behind was told to end */
  int signals; /* cli_signals_count() when COMMAND exited */
  int64_t next_check, kill_at;
} job;

/* Whether COMMAND has exited (not reaped: WNOWAIT). -1 on error. */
static int exited(pid_t pid) {
  siginfo_t info;
  memset(&info, 0, sizeof info);
  if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT | WNOHANG) != 0)
    return errno == EINTR ? 0 : -1;
  return info.si_pid == pid;
}

/* Take the terminal back for rlock's group, if COMMAND's group has it. */
static void tty_take_back(const job *j) {
  if (j->tty >= 0 && tcgetpgrp(j->tty) == j->pid)
    give_tty(j->tty, getpgrp());
}

/* rlock's children other than COMMAND (the job's orphans, re-parented to
 * rlock), from /proc/self/task/<tid>/children: up to `max` pids into
 * `out`; returns how many, or -1 when /proc cannot tell. Each is reaped
 * here if it has exited. */
static int other_children(pid_t command, pid_t *out, int max) {
  DIR *d = opendir("/proc/self/task");
  if (d == NULL)
    return -1;
  int n = 0, ok = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char path[300];
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/children", e->d_name);
    FILE *f = fopen(path, "r");
    if (f == NULL)
      continue;
    ok = 1;
    long pid;
    while (fscanf(f, "%ld", &pid) == 1) {
      if ((pid_t)pid == command || waitpid((pid_t)pid, NULL, WNOHANG) != 0)
        continue; /* COMMAND, or reaped now (or not ours after all) */
      if (n < max)
        out[n] = (pid_t)pid;
      n++;
    }
    fclose(f);
  }
  closedir(d);
  return ok ? n : -1;
}

/* Signal COMMAND's whole job: its process group, and every process the
 * job left behind (re-parented to rlock: unreaped, so their pids are
 * still theirs), some of which may have moved to another group. A
 * SIGTERM is followed by SIGCONT, as a shell does, so that a stopped
 * process acts on it. */
static void signal_job(const job *j, int sig) {
  pid_t others[256];
  int n = other_children(j->pid, others, 256);
  kill(-j->pid, sig);
  for (int i = 0; i < n && i < 256; i++)
    kill(others[i], sig);
  if (sig != SIGTERM)
    return;
  kill(-j->pid, SIGCONT);
  for (int i = 0; i < n && i < 256; i++)
    kill(others[i], SIGCONT);
}

static int job_stop_signal(int sig) {
  return sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* COMMAND stopped by the terminal (Ctrl-Z, or a read or write from the
 * background): the whole job stops, as it would have without rlock. rlock
 * takes the terminal back and stops its own group, so that its shell sees
 * the job stopped; once continued (fg, bg), it hands the terminal over
 * again if its group is in the foreground, and continues COMMAND's group.
 * Without a terminal, or for SIGSTOP, only COMMAND stops. */
static void mirror_stop(job *j) {
  siginfo_t info;
  memset(&info, 0, sizeof info);
  if (waitid(P_PID, (id_t)j->pid, &info, WSTOPPED | WNOHANG) != 0 ||
      info.si_pid != j->pid || j->tty < 0 || !job_stop_signal(info.si_status))
    return;
  tty_take_back(j);
  kill(0, SIGTSTP); /* returns once continued (or at once, orphaned) */
  if (in_foreground(j->tty))
    give_tty(j->tty, j->pid);
  kill(-j->pid, SIGCONT);
}

/* Look at the lock when due: once it is lost, SIGTERM the job, SIGKILL
 * after kill_after_ms. */
static void watch_lock(job *j, const cli_watch *w, int64_t now) {
  if (w->lost == NULL || j->lost || now < j->next_check)
    return;
  char name[512] = "";
  if (w->lost(w->ud, name, sizeof name)) {
    j->lost = 1;
    cli_fail(0, "%s was lost while '%s' ran: terminating it", name, w->argv0);
    signal_job(j, SIGTERM);
    j->kill_at = now + w->kill_after_ms;
  }
  j->next_check = now + w->period_ms;
}

/* COMMAND has exited and rlock waits for what it left behind (holding the
 * lock for it): a signal rlock gets then (a second Ctrl-C once the
 * terminal is rlock's again, a TERM) asks it to stop waiting. Those
 * processes may ignore INT and QUIT (a shell's background jobs do), so
 * they get SIGTERM, and SIGKILL after kill_after_ms. */
static void end_leftovers(job *j, const cli_watch *w, int64_t now) {
  if (!j->exited || j->ending || j->lost || cli_signals_count() == j->signals)
    return;
  j->ending = 1;
  signal_job(j, SIGTERM);
  j->kill_at = now + w->kill_after_ms;
}

/* Until COMMAND and every process it left behind have exited: watch the
 * lock, mirror stops, hand the terminal back once COMMAND is gone.
 * Returns 0, or -1. */
static int wait_job(job *j, const cli_watch *w) {
  for (;;) {
    if (!j->exited) {
      int e = exited(j->pid);
      if (e < 0)
        return -1;
      if (e) {
        j->exited = 1;
        j->signals = cli_signals_count();
        tty_take_back(j);
      } else {
        mirror_stop(j);
      }
    }
    pid_t others[1];
    if (j->exited && other_children(j->pid, others, 1) <= 0)
      return 0; /* nobody left (or /proc cannot tell: then COMMAND only) */
    int64_t now = now_ms();
    watch_lock(j, w, now);
    end_leftovers(j, w, now);
    if (j->kill_at >= 0 && now >= j->kill_at) {
      signal_job(j, SIGKILL);
      j->kill_at = -1;
    }
    int64_t until = now + 1000; /* SIGCHLD wakes it; this is a safety net */
    if (w->lost != NULL && !j->lost && j->next_check < until)
      until = j->next_check;
    if (j->kill_at >= 0 && j->kill_at < until)
      until = j->kill_at;
    if (j->pidfd < 0 && !j->exited && until > now + 50)
      until = now + 50;
    struct pollfd fds[2] = {{.fd = j->exited ? -1 : j->pidfd, .events = POLLIN},
                            {.fd = wake_fd[0], .events = POLLIN}};
    int r = poll(fds, 2, (int)(until > now ? until - now : 0));
    if (r > 0 && (fds[1].revents & POLLIN)) {
      wake_drain(); /* a SIGCHLD, or the lost-lock callback: look now */
      j->next_check = now_ms();
    }
  }
}

int cli_spawn_watch(char **argv, cli_watch *w) {
  w->argv0 = argv[0];
  wake_init();
  wake_drain();
  child_pdeath = w->pdeath;
  child_parent = getpid();
  /* Orphans of the job become rlock's, so that it can wait for them. */
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  job j = {.pidfd = -1, .tty = open_ctty(), .kill_at = -1};
  child_tty = in_foreground(j.tty) ? j.tty : -1;
  cli_signals_block(); /* no forwarding gap between fork and set_child */
  int sig = cli_signal_caught();
  if (sig != 0) { /* e.g. SIGTERM right after the lock was acquired */
    cli_signals_unblock();
    if (j.tty >= 0)
      close(j.tty);
    return CLI_EXIT_SIGNAL_BASE + sig;
  }
  pid_t pid = fork();
  if (pid == 0)
    child_exec(argv, w->envp);
  int err = errno;
  if (pid > 0) {
    setpgid(pid, pid); /* as the child does: whichever runs first */
    if (child_tty >= 0)
      give_tty(child_tty, pid);
    cli_signals_set_child(pid);
  }
  cli_signals_unblock();
  if (pid < 0) {
    if (j.tty >= 0)
      close(j.tty);
    return cli_fail(-1, "cannot start '%s': fork: %s", argv[0], strerror(err));
  }
  j.pid = pid;
  j.pidfd = open_pidfd(pid);
  j.next_check = now_ms() + w->period_ms;
  int rc = wait_job(&j, w);
  int saved = errno;
  /* Reap COMMAND last, after the forwarding stopped: its pid (and group
   * id) cannot be reused while the signal handler may still use it. */
  cli_signals_block();
  cli_signals_set_child(0);
  cli_signals_unblock();
  int status = 0;
  if (rc == 0)
    while (waitpid(pid, &status, 0) < 0)
      if (errno != EINTR) {
        rc = -1;
        saved = errno;
        break;
      }
  if (j.pidfd >= 0)
    close(j.pidfd);
  if (j.tty >= 0) {
    tty_take_back(&j);
    close(j.tty);
  }
  if (rc < 0)
    return cli_fail(-1, "waiting for '%s': %s", argv[0], strerror(saved));
  if (j.lost)
    return CLI_EXIT_LOST;
  if (WIFSIGNALED(status))
    return CLI_EXIT_SIGNAL_BASE + WTERMSIG(status);
  return WEXITSTATUS(status);
}
