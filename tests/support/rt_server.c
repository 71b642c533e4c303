/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_server.c - start, stop and talk to real redis-server processes.
 *
 * Process bookkeeping (registry, cleanup on exit and signals, the spawner
 * thread) lives in rt_proc.c; this file is about redis-server itself:
 *   1. finding redis-server
 *   2. one start attempt: directory, log, command line, readiness
 *   3. the public lifecycle API
 *   4. connections and rt_cmd()
 *   5. INFO, ROLE and bounded waits
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "rt_server.h"
#include "rt_proc.h"
#include "rt_util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define RT_START_TIMEOUT_MS 10000
#define RT_STOP_TIMEOUT_MS 5000
#define RT_CONNECT_TIMEOUT_MS 2000
#define RT_CMD_TIMEOUT_MS 15000
/* A fresh port is tried this many times when the port was taken. */
#define RT_START_PORT_ATTEMPTS 5
/* start_again keeps its port, so it waits for it instead: attempts x 200 ms. */
#define RT_RESTART_PORT_ATTEMPTS 25

struct rt_server {
  int slot; /* rt_proc registry slot: holds the pid */
  int port;
  char port_str[16];
  char url[96];
  char host[64];   /* what --bind gets and the url names */
  bool host_given; /* opts.host: rt_cmd() goes by the unix socket */
  char **prefix;   /* owned copy of opts.prefix, or NULL */
  char dir[RT_PROC_PATH_MAX];
  char
      sock_path[RT_PROC_PATH_MAX + 16]; /* fits sun_path: see make_temp_dir() */
  char log_path[RT_PROC_PATH_MAX + 16];
  char conf_path[RT_PROC_PATH_MAX + 16]; /* "" unless opts.config */
  bool sentinel;                         /* runs as Redis Sentinel */
  bool cluster;                          /* cluster mode, bus on cluster_port */
  int cluster_port;
  char cluster_port_str[16];
  char **extra;           /* owned copy of extra_args, NULL-terminated */
  char **env;             /* owned copy of opts.env, or NULL */
  const char *password;   /* from "--requirepass PW" in extra, or NULL */
  const char **argv;      /* full redis-server command line, NULL-terminated */
  off_t log_mark;         /* log size when the latest start attempt began */
  atomic_uint generation; /* bumped each time the server comes up */

  /* The connection rt_cmd() uses. Tagged with the generation and process
     it was opened in, so a restart or a fork makes it be replaced. */
  pthread_mutex_t conn_mu;
  redisContext *conn;
  unsigned conn_gen;
  pid_t conn_pid;
};

static void fail_with(const char *msg) { fail_msg("%s", msg); }

/* ------------------------------------------------------------------------ */
/* 1. Finding redis-server                                                  */
/* ------------------------------------------------------------------------ */

static char g_redis_bin[PATH_MAX];
static char g_init_error[256];
static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;

/* $RLOCK_REDIS_SERVER, else redis-server on PATH. */
static bool find_redis_server(char *out, size_t cap) {
  const char *env = getenv("RLOCK_REDIS_SERVER");
  if (env && *env) {
    snprintf(out, cap, "%s", env);
    return access(out, X_OK) == 0;
  }
  const char *path = getenv("PATH");
  if (!path || !*path)
    path = "/usr/local/bin:/usr/bin:/bin";
  while (*path) {
    size_t len = strcspn(path, ":");
    int n = snprintf(out, cap, "%.*s/redis-server", (int)len, path);
    if (len > 0 && n > 0 && (size_t)n < cap && access(out, X_OK) == 0)
      return true;
    path += len + (path[len] == ':');
  }
  return false;
}

static void init_once(void) {
  if (!find_redis_server(g_redis_bin, sizeof g_redis_bin)) {
    snprintf(g_init_error, sizeof g_init_error,
             "rt_server: no executable redis-server (set RLOCK_REDIS_SERVER "
             "or put it on PATH)");
    return;
  }
  rt_proc_init();
}

/* ------------------------------------------------------------------------ */
/* 2. One start attempt                                                     */
/* ------------------------------------------------------------------------ */

/* mkdtemp under $TMPDIR, or /tmp when $TMPDIR is unset or too deep for the
   socket path to fit sun_path. */
static bool make_temp_dir(char *out, size_t cap) {
  static const char leaf[] = "/rlock-rt-XXXXXX";
  static const char sock[] = "/redis.sock";
  const char *base = getenv("TMPDIR");
  if (!base || !*base || strlen(base) + sizeof leaf + sizeof sock > cap)
    base = "/tmp";
  snprintf(out, cap, "%s%s", base, leaf);
  return mkdtemp(out) != NULL;
}

static off_t file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? st.st_size : 0;
}

/* The last cap-1 bytes the log gained since the current start attempt
   began, NUL-terminated. */
static void read_new_log(const rt_server *s, char *buf, size_t cap) {
  buf[0] = '\0';
  int fd = open(s->log_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  off_t end = file_size(s->log_path);
  off_t from = s->log_mark;
  if (end - from > (off_t)cap - 1)
    from = end - (off_t)cap + 1;
  ssize_t n = from < end ? pread(fd, buf, (size_t)(end - from), from) : 0;
  buf[n > 0 ? n : 0] = '\0';
  close(fd);
}

static void print_log_tail(const rt_server *s) {
  char tail[4096];
  read_new_log(s, tail, sizeof tail);
  fprintf(stderr, "---- tail of %s ----\n%s%s---- end of log ----\n",
          s->log_path, tail,
          tail[0] && tail[strlen(tail) - 1] != '\n' ? "\n" : "");
}

static void describe_status(int status, char *buf, size_t cap) {
  if (status == -1)
    snprintf(buf, cap, "exited (reaped elsewhere)");
  else if (WIFEXITED(status))
    snprintf(buf, cap, "exited with status %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status))
    snprintf(buf, cap, "was killed by signal %d", WTERMSIG(status));
  else
    snprintf(buf, cap, "ended with wait status %#x", status);
}

/* True when the server answers PING on its unix socket: that is our own
   process (the socket is in our private directory), and redis binds its TCP
   port before the unix socket, so the port is listening too. Any reply but
   -LOADING counts, so -NOAUTH from a --requirepass server does. */
static bool answers_ping(const rt_server *s) {
  redisContext *c =
      redisConnectUnixWithTimeout(s->sock_path, (struct timeval){0, 200000});
  bool ok = false;
  if (c && !c->err && redisSetTimeout(c, (struct timeval){1, 0}) == REDIS_OK) {
    redisReply *r = redisCommand(c, "PING");
    ok = r &&
         !(r->type == REDIS_REPLY_ERROR && strncmp(r->str, "LOADING", 7) == 0);
    freeReplyObject(r);
  }
  redisFree(c);
  return ok;
}

enum launch_result { LAUNCH_OK, LAUNCH_PORT_TAKEN, LAUNCH_FAILED };

static enum launch_result await_ready(rt_server *s, pid_t pid, char *why,
                                      size_t cap) {
  int64_t deadline = rt_now_ms() + RT_START_TIMEOUT_MS;
  for (;;) {
    int status;
    if (rt_proc_wait_exit(s->slot, pid, 0, &status)) {
      char log[16384], how[64];
      read_new_log(s, log, sizeof log);
      describe_status(status, how, sizeof how);
      snprintf(why, cap, "%.300s on port %d %s during startup", g_redis_bin,
               s->port, how);
      return strstr(log, "Address already in use") ? LAUNCH_PORT_TAKEN
                                                   : LAUNCH_FAILED;
    }
    if (answers_ping(s)) {
      atomic_fetch_add(&s->generation, 1);
      return LAUNCH_OK;
    }
    if (rt_now_ms() >= deadline) {
      kill(pid, SIGKILL);
      rt_proc_wait_exit(s->slot, pid, -1, NULL);
      snprintf(why, cap,
               "redis-server on port %d did not answer PING within %d ms",
               s->port, RT_START_TIMEOUT_MS);
      return LAUNCH_FAILED;
    }
    rt_sleep_ms(10);
  }
}

static void free_words(char **w) {
  if (w != NULL)
    for (char **a = w; *a; a++)
      free(*a);
  free(w);
}

/* "NAME=value" with every "{dir}" in it replaced by s->dir; NULL when out
   of memory. */
static char *expand_dir(const rt_server *s, const char *word) {
  static const char tag[] = "{dir}";
  size_t n = 0;
  for (const char *p = word; (p = strstr(p, tag)) != NULL; p += sizeof tag - 1)
    n++;
  char *out = malloc(strlen(word) + n * strlen(s->dir) + 1);
  if (out == NULL)
    return NULL;
  char *o = out;
  for (const char *p = word; *p;) {
    if (strncmp(p, tag, sizeof tag - 1) == 0) {
      o = stpcpy(o, s->dir);
      p += sizeof tag - 1;
    } else {
      *o++ = *p++;
    }
  }
  *o = '\0';
  return out;
}

/* The server's environment: the test process's, less the variables
   s->env sets, plus s->env expanded. Built before the fork, since the
   child may not allocate. NULL when out of memory. */
static char **build_env(const rt_server *s) {
  extern char **environ;
  size_t n = 0, k = 0, m = 0;
  while (environ[n])
    n++;
  while (s->env[k])
    k++;
  char **envp = calloc(n + k + 1, sizeof *envp);
  if (envp == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    size_t len = strcspn(environ[i], "=");
    bool replaced = false;
    for (size_t j = 0; j < k && !replaced; j++)
      replaced =
          strncmp(s->env[j], environ[i], len) == 0 && s->env[j][len] == '=';
    if (!replaced && !(envp[m++] = strdup(environ[i])))
      goto oom;
  }
  for (size_t j = 0; j < k; j++)
    if (!(envp[m++] = expand_dir(s, s->env[j])))
      goto oom;
  return envp;
oom:
  free_words(envp);
  return NULL;
}

/* Start the process once on s->port and wait until it answers. */
static enum launch_result launch(rt_server *s, char *why, size_t cap) {
  s->log_mark = file_size(s->log_path);

  int log_fd =
      open(s->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) {
    snprintf(why, cap, "cannot open %s: %s", s->log_path, strerror(errno));
    return LAUNCH_FAILED;
  }
  char **envp = NULL;
  if (s->env != NULL && !(envp = build_env(s))) {
    close(log_fd);
    snprintf(why, cap, "out of memory");
    return LAUNCH_FAILED;
  }
  /* argv[0]: redis-server, or the prefix's command (opts.prefix) */
  int pid = rt_proc_spawn_env(s->slot, s->argv[0], s->argv,
                              (const char *const *)envp, log_fd);
  free_words(envp);
  close(log_fd);
  if (pid < 0) {
    snprintf(why, cap, "cannot start %.300s: %s", g_redis_bin, strerror(-pid));
    return LAUNCH_FAILED;
  }
  return await_ready(s, (pid_t)pid, why, cap);
}

/* ------------------------------------------------------------------------ */
/* 3. Lifecycle                                                             */
/* ------------------------------------------------------------------------ */

static void server_destroy(rt_server *s) {
  if (s->conn)
    redisFree(s->conn);
  pthread_mutex_destroy(&s->conn_mu);
  if (s->extra)
    for (char **a = s->extra; *a; a++)
      free(*a);
  free(s->extra);
  free_words(s->prefix);
  free_words(s->env);
  free(s->argv);
  free(s);
}

static bool copy_extra_args(rt_server *s, const char *const *extra) {
  size_t n = 0;
  while (extra && extra[n])
    n++;
  s->extra = calloc(n + 1, sizeof *s->extra);
  if (!s->extra)
    return false;
  for (size_t i = 0; i < n; i++) {
    if (!(s->extra[i] = strdup(extra[i])))
      return false;
    if (i > 0 && strcmp(extra[i - 1], "--requirepass") == 0)
      s->password = s->extra[i];
  }
  return true;
}

/* A NULL-terminated copy of words (NULL stays NULL); false when out of
   memory. */
static bool copy_words(char ***out, const char *const *words) {
  size_t n = 0;
  while (words && words[n])
    n++;
  if (!words)
    return true;
  *out = calloc(n + 1, sizeof **out);
  if (!*out)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!((*out)[i] = strdup(words[i])))
      return false;
  return true;
}

static bool copy_env(rt_server *s, const char *const *env) {
  size_t n = 0;
  while (env && env[n])
    n++;
  if (n == 0)
    return true;
  if (!(s->env = calloc(n + 1, sizeof *s->env)))
    return false;
  for (size_t i = 0; i < n; i++)
    if (!(s->env[i] = strdup(env[i])))
      return false;
  return true;
}

/* The command line: [prefix], binary, [config file], the harness's own
   options, [--sentinel], [cluster options], extra args. The strings it points
   to live in s and are filled in later (paths, ports). */
static bool build_argv(rt_server *s, bool with_config) {
  const char *const base[] = {
      "--port",       s->port_str,  "--bind",           s->host,
      "--unixsocket", s->sock_path, "--unixsocketperm", "700",
      "--dir",        s->dir,       "--logfile",        s->log_path,
      "--save",       "",           "--appendonly",     "no",
      "--daemonize",  "no",         "--protected-mode", "no",
  };
  const char *const cluster[] = {
      "--cluster-enabled",     "yes",
      "--cluster-config-file", "nodes.conf",
      "--cluster-port",        s->cluster_port_str,
  };
  size_t nbase = sizeof base / sizeof *base;
  size_t ncluster = s->cluster ? sizeof cluster / sizeof *cluster : 0;
  size_t nextra = 0, nprefix = 0;
  while (s->extra[nextra])
    nextra++;
  while (s->prefix && s->prefix[nprefix])
    nprefix++;
  s->argv =
      calloc(nprefix + 2 + nbase + 1 + ncluster + nextra + 1, sizeof *s->argv);
  if (!s->argv)
    return false;
  size_t n = 0;
  for (size_t i = 0; i < nprefix; i++)
    s->argv[n++] = s->prefix[i];
  s->argv[n++] = g_redis_bin;
  if (with_config)
    s->argv[n++] = s->conf_path; /* must come first */
  for (size_t i = 0; i < nbase; i++)
    s->argv[n++] = base[i];
  if (s->sentinel)
    s->argv[n++] = "--sentinel";
  for (size_t i = 0; i < ncluster; i++)
    s->argv[n++] = cluster[i];
  for (size_t i = 0; i < nextra; i++)
    s->argv[n++] = s->extra[i];
  return true;
}

/* Write the config text to s->conf_path. */
static bool write_config(const rt_server *s, const char *text, char *why,
                         size_t cap) {
  FILE *f = fopen(s->conf_path, "wex");
  if (!f) {
    snprintf(why, cap, "cannot create %s: %s", s->conf_path, strerror(errno));
    return false;
  }
  size_t len = strlen(text);
  bool ok = fwrite(text, 1, len, f) == len;
  if (ok && len > 0 && text[len - 1] != '\n')
    ok = fputc('\n', f) != EOF;
  if (fclose(f) != 0)
    ok = false;
  if (!ok)
    snprintf(why, cap, "cannot write %s: %s", s->conf_path, strerror(errno));
  return ok;
}

/* A server object with its directory and registry slot, not yet started.
   NULL with the reason in `why`. */
static rt_server *server_new(const rt_server_opts *o, char *why, size_t cap) {
  rt_server *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(why, cap, "out of memory");
    return NULL;
  }
  s->slot = -1;
  s->sentinel = o->sentinel;
  s->cluster = o->cluster;
  s->host_given = o->host != NULL;
  snprintf(s->host, sizeof s->host, "%s", o->host ? o->host : "127.0.0.1");
  pthread_mutex_init(&s->conn_mu, NULL);
  if (!copy_extra_args(s, o->extra_args) || !copy_env(s, o->env) ||
      !copy_words(&s->prefix, o->prefix) || !build_argv(s, o->config != NULL)) {
    snprintf(why, cap, "out of memory");
    server_destroy(s);
    return NULL;
  }
  if (!make_temp_dir(s->dir, sizeof s->dir)) {
    snprintf(why, cap, "mkdtemp(%s): %s", s->dir, strerror(errno));
    server_destroy(s);
    return NULL;
  }
  snprintf(s->sock_path, sizeof s->sock_path, "%s/redis.sock", s->dir);
  snprintf(s->log_path, sizeof s->log_path, "%s/redis.log", s->dir);
  if (o->config) {
    snprintf(s->conf_path, sizeof s->conf_path, "%s/redis.conf", s->dir);
    if (!write_config(s, o->config, why, cap)) {
      rt_proc_remove_tree(s->dir);
      server_destroy(s);
      return NULL;
    }
  }
  s->slot = rt_proc_claim(s->dir);
  if (s->slot < 0) {
    snprintf(why, cap, "too many servers at once");
    rt_proc_remove_tree(s->dir);
    server_destroy(s);
    return NULL;
  }
  return s;
}

/* The port and what derives from it; fixed once rt_server_start() returns,
   so the getters need no lock. */
static void set_port(rt_server *s, int port) {
  s->port = port;
  snprintf(s->port_str, sizeof s->port_str, "%d", port);
  snprintf(s->url, sizeof s->url, "redis://%s:%d", s->host, port);
}

/* Fails the test unless called in the process that owns the servers. */
static bool require_owner(const char *fn) {
  if (rt_proc_is_owner())
    return true;
  char msg[160];
  snprintf(msg, sizeof msg,
           "%s: called in a forked child; only the process "
           "that started a server may start, stop or free it",
           fn);
  fail_with(msg);
  return false;
}

/* A fresh port for the cluster bus; false with the reason in `why`. */
static bool set_cluster_port(rt_server *s, char *why, size_t cap) {
  if (!s->cluster)
    return true;
  int port = rt_free_port();
  if (port < 0) {
    snprintf(why, cap, "no free port: %s", strerror(errno));
    return false;
  }
  s->cluster_port = port;
  snprintf(s->cluster_port_str, sizeof s->cluster_port_str, "%d", port);
  return true;
}

rt_server *rt_server_start(const char *const *extra_args) {
  return rt_server_start_opts(&(rt_server_opts){.extra_args = extra_args});
}

rt_server *rt_server_start_opts(const rt_server_opts *opts) {
  char why[512];
  pthread_once(&g_init_once, init_once);
  if (g_init_error[0]) {
    fail_with(g_init_error);
    return NULL;
  }
  if (!require_owner("rt_server_start"))
    return NULL;
  if (opts->sentinel && !opts->config) {
    fail_with("rt_server_start_opts: a sentinel needs a config file");
    return NULL;
  }
  rt_server *s = server_new(opts, why, sizeof why);
  if (!s) {
    fail_with(why);
    return NULL;
  }
  enum launch_result r = LAUNCH_PORT_TAKEN;
  for (int i = 0; i < RT_START_PORT_ATTEMPTS && r == LAUNCH_PORT_TAKEN; i++) {
    int port = rt_free_port();
    if (port < 0) {
      snprintf(why, sizeof why, "no free port: %s", strerror(errno));
      r = LAUNCH_FAILED;
      break;
    }
    set_port(s, port);
    if (!set_cluster_port(s, why, sizeof why)) {
      r = LAUNCH_FAILED;
      break;
    }
    r = launch(s, why, sizeof why);
  }
  if (r == LAUNCH_OK)
    return s;
  print_log_tail(s);
  rt_proc_remove_tree(s->dir);
  rt_proc_release(s->slot);
  server_destroy(s);
  fail_with(why);
  return NULL;
}

int rt_server_port(const rt_server *s) { return s->port; }
const char *rt_server_url(const rt_server *s) { return s->url; }
const char *rt_server_unix_path(const rt_server *s) { return s->sock_path; }
const char *rt_server_dir(const rt_server *s) { return s->dir; }
pid_t rt_server_pid(const rt_server *s) { return rt_proc_pid(s->slot); }
int rt_server_cluster_port(const rt_server *s) { return s->cluster_port; }
const char *rt_server_config_path(const rt_server *s) {
  return s->conf_path[0] ? s->conf_path : NULL;
}

static void stop_with(rt_server *s, int sig, const char *fn) {
  if (!require_owner(fn))
    return;
  pid_t pid = rt_proc_pid(s->slot);
  if (pid <= 0)
    return;
  kill(pid, sig);
  kill(pid, SIGCONT); /* a frozen server must see the SIGTERM now */
  if (sig == SIGKILL ||
      !rt_proc_wait_exit(s->slot, pid, RT_STOP_TIMEOUT_MS, NULL)) {
    kill(pid, SIGKILL);
    rt_proc_wait_exit(s->slot, pid, -1, NULL);
  }
}

void rt_server_stop(rt_server *s) { stop_with(s, SIGTERM, "rt_server_stop"); }
void rt_server_kill(rt_server *s) { stop_with(s, SIGKILL, "rt_server_kill"); }

static void signal_running(rt_server *s, int sig, const char *fn) {
  if (!require_owner(fn))
    return;
  pid_t pid = rt_proc_pid(s->slot);
  if (pid <= 0) {
    char msg[160];
    snprintf(msg, sizeof msg, "%s: %s is not running", fn, s->url);
    fail_with(msg);
    return;
  }
  kill(pid, sig);
}

void rt_server_freeze(rt_server *s) {
  signal_running(s, SIGSTOP, "rt_server_freeze");
}
void rt_server_thaw(rt_server *s) {
  signal_running(s, SIGCONT, "rt_server_thaw");
}

void rt_server_start_again(rt_server *s) {
  char why[512];
  if (!require_owner("rt_server_start_again"))
    return;
  if (rt_proc_pid(s->slot) > 0) {
    snprintf(why, sizeof why, "rt_server_start_again: %s is still running",
             s->url);
    fail_with(why);
    return;
  }
  /* The port must stay the same; if something grabbed it meanwhile (an
     outgoing connection's local port, say), it is usually soon released. */
  enum launch_result r = launch(s, why, sizeof why);
  for (int i = 1; i < RT_RESTART_PORT_ATTEMPTS && r == LAUNCH_PORT_TAKEN; i++) {
    rt_sleep_ms(200);
    r = launch(s, why, sizeof why);
  }
  if (r == LAUNCH_OK)
    return;
  print_log_tail(s);
  fail_with(why);
}

void rt_server_restart(rt_server *s) {
  rt_server_stop(s);
  rt_server_start_again(s);
}

void rt_server_free(rt_server *s) {
  if (!s)
    return;
  /* In a forked child only the child's copy of the object goes away. */
  if (rt_proc_is_owner()) {
    rt_server_stop(s);
    rt_proc_remove_tree(s->dir);
    rt_proc_release(s->slot);
  }
  server_destroy(s);
}

void rt_forked_child(void) { rt_proc_disown(); }

/* ------------------------------------------------------------------------ */
/* 4. Connections and rt_cmd()                                              */
/* ------------------------------------------------------------------------ */

static struct timeval ms_to_tv(int ms) {
  return (struct timeval){.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
}

/* A connection to the server: TCP on 127.0.0.1, or the unix socket when
   the server listens elsewhere (opts.host), which no network fault cuts. */
static redisContext *connect_to(const rt_server *s) {
  if (s->host_given)
    return redisConnectUnixWithTimeout(s->sock_path,
                                       ms_to_tv(RT_CONNECT_TIMEOUT_MS));
  return redisConnectWithTimeout("127.0.0.1", s->port,
                                 ms_to_tv(RT_CONNECT_TIMEOUT_MS));
}

redisContext *rt_server_connect(const rt_server *s) {
  redisContext *c = connect_to(s);
  if (c && !c->err)
    return c;
  char msg[256];
  snprintf(msg, sizeof msg, "rt_server_connect(%s): %s", s->url,
           c ? c->errstr : "out of memory");
  redisFree(c);
  fail_with(msg);
  return NULL;
}

/* A connection for rt_cmd(), authenticated if the server wants a password. */
static redisContext *open_cmd_conn(const rt_server *s, char *why, size_t cap) {
  redisContext *c = connect_to(s);
  if (!c || c->err) {
    snprintf(why, cap, "cannot connect: %s", c ? c->errstr : "out of memory");
    redisFree(c);
    return NULL;
  }
  redisSetTimeout(c, ms_to_tv(RT_CMD_TIMEOUT_MS));
  if (s->password) {
    redisReply *r = redisCommand(c, "AUTH %s", s->password);
    bool ok = r && r->type != REDIS_REPLY_ERROR;
    if (!ok)
      snprintf(why, cap, "AUTH failed: %s", r ? r->str : c->errstr);
    freeReplyObject(r);
    if (!ok) {
      redisFree(c);
      return NULL;
    }
  }
  return c;
}

/* Whether the cached connection can be used as is. A connection with
   something to read while idle has been closed by the server (or is out of
   step): checking before sending means a command is never sent twice. */
static bool cmd_conn_usable(const rt_server *s) {
  if (!s->conn || s->conn->err || s->conn_pid != getpid() ||
      s->conn_gen != atomic_load(&s->generation))
    return false;
  struct pollfd p = {.fd = s->conn->fd, .events = POLLIN};
  return poll(&p, 1, 0) == 0;
}

static void fail_reply(const rt_server *s, const char *fmt, redisReply *r,
                       const char *expected);

/* A command either as a format and its arguments, or as an argv. */
struct cmd_spec {
  const char *fmt;
  va_list *ap;
  int argc;
  const char **argv;
  const size_t *argvlen;
};

/* The reply, or NULL with the reason in `why`. */
static redisReply *run_cmd(rt_server *s, const struct cmd_spec *cmd, char *why,
                           size_t cap) {
  redisReply *r = NULL;
  pthread_mutex_lock(&s->conn_mu);
  if (!cmd_conn_usable(s)) {
    redisFree(s->conn);
    s->conn_gen = atomic_load(&s->generation);
    s->conn_pid = getpid();
    s->conn = open_cmd_conn(s, why, cap);
  }
  if (s->conn) {
    if (cmd->fmt)
      r = redisvCommand(s->conn, cmd->fmt, *cmd->ap);
    else
      r = redisCommandArgv(s->conn, cmd->argc, cmd->argv, cmd->argvlen);
    if (!r) {
      snprintf(why, cap, "%s", s->conn->errstr);
      redisFree(s->conn);
      s->conn = NULL;
    }
  }
  pthread_mutex_unlock(&s->conn_mu);
  return r;
}

static redisReply *vcmd(rt_server *s, const char *fmt, va_list ap, char *why,
                        size_t cap) {
  va_list copy;
  va_copy(copy, ap);
  redisReply *r =
      run_cmd(s, &(struct cmd_spec){.fmt = fmt, .ap = &copy}, why, cap);
  va_end(copy);
  return r;
}

static void fail_cmd(const rt_server *s, const char *fmt, const char *why) {
  char msg[768];
  snprintf(msg, sizeof msg, "rt_cmd(%s, \"%s\"): %s", s->url, fmt, why);
  fail_with(msg);
}

/* vcmd(), failing the test (and returning NULL) on an I/O error. */
static redisReply *vcmd_or_fail(rt_server *s, const char *fmt, va_list ap) {
  char why[256];
  redisReply *r = vcmd(s, fmt, ap, why, sizeof why);
  if (!r)
    fail_cmd(s, fmt, why);
  return r;
}

redisReply *rt_cmd(rt_server *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  redisReply *r = vcmd_or_fail(s, fmt, ap);
  va_end(ap);
  return r;
}

void rt_cmd_ok(rt_server *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  redisReply *r = vcmd_or_fail(s, fmt, ap);
  va_end(ap);
  if (!r)
    return;
  if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0)
    freeReplyObject(r);
  else
    fail_reply(s, fmt, r, "OK");
}

redisReply *rt_cmd_argv(rt_server *s, int argc, const char **argv,
                        const size_t *argvlen) {
  char why[256];
  struct cmd_spec cmd = {.argc = argc, .argv = argv, .argvlen = argvlen};
  redisReply *r = run_cmd(s, &cmd, why, sizeof why);
  if (!r) {
    char name[64] = "";
    if (argc > 0) {
      size_t len = argvlen ? argvlen[0] : strlen(argv[0]);
      snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), argv[0]);
    }
    fail_cmd(s, name, why);
  }
  return r;
}

static void describe_reply(const redisReply *r, char *buf, size_t cap) {
  switch (r->type) {
  case REDIS_REPLY_STRING:
    snprintf(buf, cap, "string \"%s\"", r->str);
    break;
  case REDIS_REPLY_STATUS:
    snprintf(buf, cap, "status %s", r->str);
    break;
  case REDIS_REPLY_ERROR:
    snprintf(buf, cap, "error %s", r->str);
    break;
  case REDIS_REPLY_ARRAY:
    snprintf(buf, cap, "array of %zu", r->elements);
    break;
  case REDIS_REPLY_NIL:
    snprintf(buf, cap, "nil");
    break;
  default:
    snprintf(buf, cap, "reply type %d", r->type);
    break;
  }
}

/* Free an unexpected reply and fail the test, saying what came instead. */
static void fail_reply(const rt_server *s, const char *fmt, redisReply *r,
                       const char *expected) {
  char got[200], why[256];
  describe_reply(r, got, sizeof got);
  freeReplyObject(r);
  snprintf(why, sizeof why, "expected %s, got %s", expected, got);
  fail_cmd(s, fmt, why);
}

long long rt_cmd_int(rt_server *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  redisReply *r = vcmd_or_fail(s, fmt, ap);
  va_end(ap);
  if (!r)
    return 0;
  if (r->type == REDIS_REPLY_INTEGER) {
    long long v = r->integer;
    freeReplyObject(r);
    return v;
  }
  fail_reply(s, fmt, r, "an integer");
  return 0;
}

/* ------------------------------------------------------------------------ */
/* 5. INFO, ROLE and bounded waits                                          */
/* ------------------------------------------------------------------------ */

bool rt_info_value(const char *text, const char *field, char *out, size_t cap) {
  if (cap > 0)
    out[0] = '\0';
  size_t flen = strlen(field);
  for (const char *line = text; line && *line;) {
    const char *end = strpbrk(line, "\r\n");
    size_t len = end ? (size_t)(end - line) : strlen(line);
    if (len > flen && strncmp(line, field, flen) == 0 && line[flen] == ':') {
      if (cap > 0)
        snprintf(out, cap, "%.*s", (int)(len - flen - 1), line + flen + 1);
      return true;
    }
    line = end ? end + strspn(end, "\r\n") : NULL;
  }
  return false;
}

bool rt_server_info_field(rt_server *s, const char *section, const char *field,
                          char *out, size_t cap) {
  if (cap > 0)
    out[0] = '\0';
  redisReply *r = rt_cmd(s, "INFO %s", section);
  if (!r)
    return false;
  bool found =
      r->type == REDIS_REPLY_STRING && rt_info_value(r->str, field, out, cap);
  freeReplyObject(r);
  return found;
}

void rt_server_role(rt_server *s, char *out, size_t cap) {
  redisReply *r = rt_cmd(s, "ROLE");
  if (!r)
    return;
  if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
      r->element[0]->type == REDIS_REPLY_STRING) {
    snprintf(out, cap, "%s", r->element[0]->str);
    freeReplyObject(r);
    return;
  }
  fail_reply(s, "ROLE", r, "an array");
}

bool rt_poll_until(rt_wait_pred pred, void *arg, int64_t timeout_ms, char *why,
                   size_t cap) {
  int64_t start = rt_now_ms();
  while (!pred(arg, why, cap)) {
    if (rt_now_ms() - start >= timeout_ms)
      return false;
    rt_sleep_ms(20);
  }
  return true;
}

void rt_wait_until(rt_wait_pred pred, void *arg, int64_t timeout_ms,
                   const char *what) {
  char why[512] = "";
  if (rt_poll_until(pred, arg, timeout_ms, why, sizeof why))
    return;
  char msg[768];
  snprintf(msg, sizeof msg, "%s: not done after %lld ms: %s", what,
           (long long)timeout_ms, why);
  fail_with(msg);
}
