/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_proc.c - registry of child processes, their cleanup on exit and on
 * fatal signals, and the thread that spawns them. See rt_proc.h.
 *
 * Everything the signal handler touches is async-signal-safe: the registry
 * is a fixed array of atomics plus directory paths that do not change while
 * a slot is in use, and the handler only calls kill, waitpid, open,
 * getdents64, unlinkat, rmdir, sigaction and raise.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "rt_proc.h"
#include "rt_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* At most this many children are registered at once. */
#define RT_PROC_MAX 128

/* ------------------------------------------------------------------------ */
/* Registry                                                                 */
/* ------------------------------------------------------------------------ */

enum { SLOT_FREE, SLOT_CLAIMED, SLOT_USED };

struct slot {
  atomic_int state;
  atomic_int pid; /* > 0 from fork() until the registry lets go of it */
  char dir[RT_PROC_PATH_MAX]; /* written while SLOT_CLAIMED only */
};

static struct slot g_slots[RT_PROC_MAX];

/* The process the registry belongs to; cleanup does nothing in any other.
   -1 after rt_proc_disown(). */
static atomic_int g_owner;

bool rt_proc_is_owner(void) { return atomic_load(&g_owner) == (int)getpid(); }

int rt_proc_claim(const char *dir) {
  if (strlen(dir) >= RT_PROC_PATH_MAX)
    return -1;
  for (int i = 0; i < RT_PROC_MAX; i++) {
    int expected = SLOT_FREE;
    if (atomic_compare_exchange_strong(&g_slots[i].state, &expected,
                                       SLOT_CLAIMED)) {
      strcpy(g_slots[i].dir, dir);
      atomic_store(&g_slots[i].pid, 0);
      atomic_store(&g_slots[i].state, SLOT_USED);
      return i;
    }
  }
  return -1;
}

void rt_proc_release(int slot) {
  if (slot >= 0)
    atomic_store(&g_slots[slot].state, SLOT_FREE);
}

pid_t rt_proc_pid(int slot) { return (pid_t)atomic_load(&g_slots[slot].pid); }

void rt_proc_continue_all(void) {
  if (!rt_proc_is_owner())
    return;
  for (int i = 0; i < RT_PROC_MAX; i++) {
    pid_t pid = rt_proc_pid(i);
    if (atomic_load(&g_slots[i].state) == SLOT_USED && pid > 0)
      kill(pid, SIGCONT);
  }
}

/* ------------------------------------------------------------------------ */
/* Cleanup on exit and on fatal signals                                     */
/* ------------------------------------------------------------------------ */

/* SIGKILL and reap every registered child. Async-signal-safe. Taking the
   pid out of the slot first means no two paths signal or reap it twice. */
static void kill_all(void) {
  for (int i = 0; i < RT_PROC_MAX; i++) {
    if (atomic_load(&g_slots[i].state) != SLOT_USED)
      continue;
    pid_t pid = (pid_t)atomic_exchange(&g_slots[i].pid, 0);
    if (pid <= 0)
      continue;
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
  }
}

/* Unlink the non-directories in dir, then try to rmdir it (a subdirectory
   keeps it alive). Async-signal-safe: raw getdents64, no malloc. */
static void remove_dir_flat(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return;
  _Alignas(struct dirent64) char buf[4096];
  ssize_t n;
  while ((n = getdents64(fd, buf, sizeof buf)) > 0) {
    for (ssize_t off = 0; off < n;) {
      const struct dirent64 *d = (const struct dirent64 *)(buf + off);
      off += d->d_reclen;
      if (d->d_type != DT_DIR)
        unlinkat(fd, d->d_name, 0);
    }
  }
  close(fd);
  rmdir(dir);
}

static int remove_entry(const char *path, const struct stat *st, int type,
                        struct FTW *ftw) {
  (void)st;
  (void)type;
  (void)ftw;
  remove(path);
  return 0; /* go on: remove as much as possible */
}

void rt_proc_remove_tree(const char *dir) {
  nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void stop_spawner(void);

static void cleanup_at_exit(void) {
  if (!rt_proc_is_owner())
    return;
  kill_all();
  for (int i = 0; i < RT_PROC_MAX; i++)
    if (atomic_load(&g_slots[i].state) == SLOT_USED)
      rt_proc_remove_tree(g_slots[i].dir);
  stop_spawner();
}

static const int k_fatal_signals[] = {SIGINT,  SIGTERM, SIGHUP,
                                      SIGABRT, SIGSEGV, SIGBUS};
#define N_FATAL_SIGNALS (sizeof k_fatal_signals / sizeof *k_fatal_signals)
/* The dispositions found when ours were installed; written before. */
static struct sigaction g_prev_action[N_FATAL_SIGNALS];

static const struct sigaction *prev_action(int sig) {
  for (size_t i = 0; i < N_FATAL_SIGNALS; i++)
    if (k_fatal_signals[i] == sig)
      return &g_prev_action[i];
  return NULL;
}

static bool is_handler_function(const struct sigaction *sa) {
  if (sa->sa_flags & SA_SIGINFO)
    return sa->sa_sigaction != NULL;
  return sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN;
}

static void on_fatal_signal(int sig, siginfo_t *info, void *uctx) {
  int saved_errno = errno;
  const struct sigaction *prev = prev_action(sig);

  if (prev && is_handler_function(prev)) {
    /* Someone else handles this signal and decides whether the process
       dies: cmocka turns a SIGSEGV into a failed test and goes on with
       the next test, ASan prints its report. Killing the children here
       would pull them from under the tests still to run; if the process
       does die, PR_SET_PDEATHSIG takes them along. */
    if (prev->sa_flags & SA_SIGINFO)
      prev->sa_sigaction(sig, info, uctx);
    else
      prev->sa_handler(sig);
    errno = saved_errno;
    return;
  }

  /* The default action is going to terminate the process. */
  if (rt_proc_is_owner()) {
    kill_all();
    for (int i = 0; i < RT_PROC_MAX; i++)
      if (atomic_load(&g_slots[i].state) == SLOT_USED)
        remove_dir_flat(g_slots[i].dir);
  }
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, NULL);
  /* Blocked while this handler runs: delivered, fatally, on return. */
  raise(sig);
  errno = saved_errno;
}

static void install_signal_handlers(void) {
  for (size_t i = 0; i < N_FATAL_SIGNALS; i++) {
    struct sigaction prev;
    if (sigaction(k_fatal_signals[i], NULL, &prev) != 0)
      continue;
    /* An ignored signal (SIGHUP under nohup, say) must stay harmless. */
    if (!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler == SIG_IGN)
      continue;
    g_prev_action[i] = prev;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal_signal;
    /* SA_ONSTACK: a sanitizer's alternate signal stack still serves a
       stack overflow that is chained to its handler. */
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(k_fatal_signals[i], &sa, NULL);
  }
}

/* ------------------------------------------------------------------------ */
/* The spawner thread                                                       */
/* ------------------------------------------------------------------------ */

/*
 * PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, not
 * when the process does. So every fork happens on this one thread, which
 * lives until exit: a server started from a short-lived test thread would
 * otherwise be SIGKILLed as soon as that thread returns.
 */
struct spawn_job {
  const char *bin;
  const char *const *argv;
  const char *const *envp; /* NULL: the test process's environment */
  int log_fd;
  int max_fd;          /* bound for closing fds if close_range() fails */
  pid_t parent;        /* for the PDEATHSIG race check */
  atomic_int *pid_out; /* the registry slot */
  int result;          /* pid, or -errno */
  bool done;
};

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct spawn_job *job; /* handed over, not yet done */
  bool started;
  bool quit;
  pthread_t thread;
} g_spawner = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Close every fd >= 3, so the child holds none of the test's sockets: a
   connection the test closes must really be closed. Async-signal-safe. */
static void close_inherited_fds(int max_fd) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0)
    return;
#endif
  for (int fd = 3; fd < max_fd; fd++)
    close(fd);
}

/* The child between fork() and exec: async-signal-safe calls only, since
   other threads of the test process may have held locks (malloc's, ...). */
_Noreturn static void exec_child(const struct spawn_job *j) {
  /* Die with the test process, however it ends. If it died before the
     prctl took effect we have been re-parented already: give up. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != j->parent)
    _exit(127);

  /* A process group of its own: a signal a test sends to its own group
     (kill(0, sig), or Ctrl-C at a terminal) does not reach the server
     behind the harness's back; the handlers above take care of it. */
  setpgid(0, 0);

  /* exec keeps the signal mask and ignored signals: reset both. */
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; sig++)
    sigaction(sig, &dfl, NULL); /* fails harmlessly for KILL, STOP */

  int devnull = open("/dev/null", O_RDONLY);
  if (devnull < 0 || dup2(devnull, STDIN_FILENO) < 0 ||
      dup2(j->log_fd, STDOUT_FILENO) < 0 || dup2(j->log_fd, STDERR_FILENO) < 0)
    _exit(127);
  close_inherited_fds(j->max_fd);

  execve(j->bin, (char *const *)j->argv,
         j->envp != NULL ? (char *const *)j->envp : environ);
  static const char msg[] = "rt_proc: execve failed\n";
  ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)ignored;
  _exit(127);
}

static int fork_exec(const struct spawn_job *j) {
  pid_t pid = fork();
  if (pid == 0)
    exec_child(j);
  if (pid < 0)
    return -errno;
  atomic_store(j->pid_out, (int)pid);
  return (int)pid;
}

static void *spawner_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_spawner.mu);
  for (;;) {
    struct spawn_job *j = g_spawner.job;
    if (j) {
      pthread_mutex_unlock(&g_spawner.mu);
      j->result = fork_exec(j);
      pthread_mutex_lock(&g_spawner.mu);
      j->done = true;
      g_spawner.job = NULL;
      pthread_cond_broadcast(&g_spawner.cv);
    } else if (g_spawner.quit) {
      break;
    } else {
      pthread_cond_wait(&g_spawner.cv, &g_spawner.mu);
    }
  }
  pthread_mutex_unlock(&g_spawner.mu);
  return NULL;
}

/* Run the job on the spawner thread, starting it if need be. */
static int run_on_spawner(struct spawn_job *j) {
  int result = -ECANCELED; /* after exit() began */
  pthread_mutex_lock(&g_spawner.mu);
  if (!g_spawner.started && !g_spawner.quit) {
    int rc = pthread_create(&g_spawner.thread, NULL, spawner_main, NULL);
    if (rc != 0) {
      pthread_mutex_unlock(&g_spawner.mu);
      return -rc;
    }
    g_spawner.started = true;
  }
  while (g_spawner.job && !g_spawner.quit) /* one job at a time */
    pthread_cond_wait(&g_spawner.cv, &g_spawner.mu);
  if (!g_spawner.quit) {
    g_spawner.job = j;
    pthread_cond_broadcast(&g_spawner.cv);
    while (!j->done)
      pthread_cond_wait(&g_spawner.cv, &g_spawner.mu);
    result = j->result;
  }
  pthread_mutex_unlock(&g_spawner.mu);
  return result;
}

/* At exit, after the children are dead (its exit would kill them). */
static void stop_spawner(void) {
  pthread_mutex_lock(&g_spawner.mu);
  g_spawner.quit = true;
  bool started = g_spawner.started;
  g_spawner.started = false;
  pthread_cond_broadcast(&g_spawner.cv);
  pthread_mutex_unlock(&g_spawner.mu);
  if (started)
    pthread_join(g_spawner.thread, NULL);
}

int rt_proc_spawn(int slot, const char *bin, const char *const *argv,
                  int log_fd) {
  return rt_proc_spawn_env(slot, bin, argv, NULL, log_fd);
}

int rt_proc_spawn_env(int slot, const char *bin, const char *const *argv,
                      const char *const *envp, int log_fd) {
  struct rlimit rl;
  int max_fd = 1024;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    max_fd = rl.rlim_cur < 65536 ? (int)rl.rlim_cur : 65536;
  struct spawn_job job = {
      .bin = bin,
      .argv = argv,
      .envp = envp,
      .log_fd = log_fd,
      .max_fd = max_fd,
      .parent = getpid(),
      .pid_out = &g_slots[slot].pid,
  };
  return run_on_spawner(&job);
}

/* ------------------------------------------------------------------------ */
/* Waiting, init, disowning                                                 */
/* ------------------------------------------------------------------------ */

bool rt_proc_wait_exit(int slot, pid_t pid, int timeout_ms, int *status) {
  int64_t deadline = rt_now_ms() + (timeout_ms < 0 ? 0 : timeout_ms);
  int64_t nap_ms = 1;
  int dummy;
  if (!status)
    status = &dummy;
  for (;;) {
    /* WNOWAIT: look without reaping, so the pid stays ours (a zombie)
       until the registry has forgotten it. */
    siginfo_t info;
    memset(&info, 0, sizeof info);
    int flags = WEXITED | WNOWAIT | (timeout_ms < 0 ? 0 : WNOHANG);
    int rc = waitid(P_PID, (id_t)pid, &info, flags);
    if (rc < 0 && errno == EINTR)
      continue;
    if (rc < 0 || info.si_pid == pid) {
      /* Exited; or ECHILD: already reaped (by the signal handler). */
      atomic_store(&g_slots[slot].pid, 0);
      *status = -1;
      while (rc == 0 && waitpid(pid, status, 0) < 0 && errno == EINTR) {
      }
      return true;
    }
    if (rt_now_ms() >= deadline)
      return false;
    rt_sleep_ms(nap_ms);
    nap_ms = nap_ms * 2 > 20 ? 20 : nap_ms * 2;
  }
}

void rt_proc_init(void) {
  atomic_store(&g_owner, (int)getpid());
  atexit(cleanup_at_exit);
  install_signal_handlers();
}

void rt_proc_disown(void) { atomic_store(&g_owner, -1); }

/* In the child of rt_proc_start_to_files: a process group of its own and
   the signals the programs under test handle at their defaults. */
static void own_group_defaults(void) {
  setpgid(0, 0);
  const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction sa = {.sa_handler = SIG_DFL};
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 3; i++)
    sigaction(sigs[i], &sa, NULL);
  sigprocmask(SIG_SETMASK, &sa.sa_mask, NULL);
}

pid_t rt_proc_start_to_files(const char *const *argv, const char *out,
                             const char *err, bool own_group) {
  pid_t pid = fork();
  if (pid != 0) {
    if (pid > 0 && own_group)
      setpgid(pid, pid); /* either of the two calls wins; both mean the same */
    return pid;
  }
  int in = open("/dev/null", O_RDONLY);
  int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (in < 0 || o < 0 || e < 0 || dup2(in, STDIN_FILENO) < 0 ||
      dup2(o, STDOUT_FILENO) < 0 || dup2(e, STDERR_FILENO) < 0)
    _exit(126);
  if (own_group)
    own_group_defaults();
  execv(argv[0], (char *const *)argv);
  _exit(127);
}
