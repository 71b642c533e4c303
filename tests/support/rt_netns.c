/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_netns.c - private network namespaces, veth links to a router, and
 * blackhole rules in it (rt_netns.h). Every command is `ip` run with an
 * argument vector (no shell), its exit status checked.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "rt_netns.h"
#include "rt_server.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define RULES_MAX 64
#define RULE_PREF "100" /* ahead of the main table (32766) */

typedef struct rule {
  char from[20], to[20]; /* "" for any */
} rule;

struct rt_netns {
  int n;
  char name[RT_NETNS_MAX][32];
  char addr[RT_NETNS_MAX][20];
  const char *prefix[RT_NETNS_MAX][5];
  rule rules[RULES_MAX];
  int nrules;
};

static const char *ip_path(void) {
  static const char *const cands[] = {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip",
                                      "/bin/ip"};
  for (size_t i = 0; i < sizeof cands / sizeof *cands; i++)
    if (access(cands[i], X_OK) == 0)
      return cands[i];
  return NULL;
}

/* fork + execv(path, argv) with stdout and stderr to /dev/null when
   `quiet`; the exit status, or -1. */
static int run(const char *path, const char *const *argv, bool quiet) {
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    rt_forked_child();
    if (quiet) {
      int fd = open("/dev/null", O_WRONLY);
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    execv(path, (char *const *)argv);
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void rt_netns_ip(const char *const *words) {
  const char *argv[24] = {"ip"};
  char line[512] = "ip";
  size_t n = 1;
  for (; words[n - 1] != NULL && n < 23; n++) {
    argv[n] = words[n - 1];
    size_t len = strlen(line);
    snprintf(line + len, sizeof line - len, " %s", words[n - 1]);
  }
  argv[n] = NULL;
  const char *ip = ip_path();
  if (ip == NULL)
    fail_msg("rt_netns: no ip command (iproute2)");
  else if (run(ip, argv, false) != 0)
    fail_msg("rt_netns: `%s` failed", line);
}

/* ---- probing and running again in private namespaces ------------------ */

/* Whether the private namespaces need a user namespace too (not root). */
static bool g_as_user;

/* The probe: namespaces, /run, a veth pair and a blackhole rule, in a
   throwaway `unshare` (with `user`: as root of a user namespace). */
static bool probe(const char *ip, bool user) {
  char script[1024];
  snprintf(script, sizeof script,
           "unshare %s--net --mount -- sh -c 'mount -t tmpfs none /run && "
           "%s netns add rt-probe && %s link add rtv-p type veth peer name "
           "eth0 netns rt-probe && %s rule add pref 100 from 10.77.1.2 to "
           "10.77.2.2 blackhole'",
           user ? "--user --map-root-user " : "", ip, ip, ip);
  const char *const argv[] = {"/bin/sh", "-c", script, NULL};
  return run("/bin/sh", argv, true) == 0;
}

const char *rt_netns_unavailable(void) {
  static int probed;
  static const char *why;
  if (probed)
    return why;
  probed = 1;
  const char *ip = ip_path();
  if (ip == NULL)
    return why = "no ip command (iproute2) on this machine";
  if (probe(ip, false))
    return NULL;
  if (probe(ip, true)) { /* not root, or root without CAP_SYS_ADMIN */
    g_as_user = true;
    return NULL;
  }
  return why = "no private network namespace with ip netns, veth pairs and "
               "blackhole rules here (unshare --net --mount, as root or in a "
               "user namespace)";
}

bool rt_netns_private(void) { return getenv("RT_NETNS_PRIVATE") != NULL; }

int rt_netns_rerun(const char *argv0, const char *const *args) {
  const char *ip = ip_path();
  char script[512];
  snprintf(script, sizeof script,
           "mount -t tmpfs none /run && %s link set lo up && "
           "exec \"$0\" \"$@\"",
           ip ? ip : "ip");
  const char *argv[32] = {"unshare"};
  size_t n = 1;
  if (g_as_user) {
    argv[n++] = "--user";
    argv[n++] = "--map-root-user";
  }
  const char *const rest[] = {"--net", "--mount", "--",  "/bin/sh",
                              "-c",    script,    argv0, "--child"};
  for (size_t i = 0; i < sizeof rest / sizeof *rest; i++)
    argv[n++] = rest[i];
  for (size_t i = 0; args[i] != NULL && n < 31; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    rt_forked_child();
    setenv("RT_NETNS_PRIVATE", "1", 1);
    execvp("unshare", (char *const *)argv);
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return -1;
  return st;
}

/* ---- the router and its namespaces ------------------------------------ */

rt_netns *rt_netns_new(void) {
  if (!rt_netns_private()) {
    fail_msg("rt_netns_new: not in a private namespace (rt_netns_rerun)");
    return NULL;
  }
  FILE *f = fopen("/proc/sys/net/ipv4/ip_forward", "w");
  if (f == NULL || fputs("1\n", f) == EOF || fclose(f) != 0)
    fail_msg("rt_netns_new: cannot turn forwarding on: %s", strerror(errno));
  rt_netns_ip(
      (const char *const[]){"addr", "add", "10.77.0.1/32", "dev", "lo", NULL});
  rt_netns *n = calloc(1, sizeof *n);
  if (n == NULL)
    fail_msg("rt_netns_new: out of memory");
  return n;
}

const char *rt_netns_router_addr(void) { return "10.77.0.1"; }

int rt_netns_add(rt_netns *n, const char *name) {
  if (n->n >= RT_NETNS_MAX)
    fail_msg("rt_netns_add: more than %d namespaces", RT_NETNS_MAX);
  int i = n->n, k = i + 1;
  char veth[16], mine[24], theirs[24];
  snprintf(n->name[i], sizeof n->name[i], "rt-%s", name);
  snprintf(n->addr[i], sizeof n->addr[i], "10.77.%d.2", k);
  snprintf(veth, sizeof veth, "rtv-%d", k);
  snprintf(mine, sizeof mine, "10.77.%d.1/24", k);
  snprintf(theirs, sizeof theirs, "10.77.%d.2/24", k);
  const char *ns = n->name[i];
  rt_netns_ip((const char *const[]){"netns", "add", ns, NULL});
  rt_netns_ip((const char *const[]){"link", "add", veth, "type", "veth", "peer",
                                    "name", "eth0", "netns", ns, NULL});
  rt_netns_ip((const char *const[]){"addr", "add", mine, "dev", veth, NULL});
  rt_netns_ip((const char *const[]){"link", "set", veth, "up", NULL});
  rt_netns_ip((const char *const[]){"-n", ns, "link", "set", "lo", "up", NULL});
  rt_netns_ip((const char *const[]){"-n", ns, "addr", "add", theirs, "dev",
                                    "eth0", NULL});
  rt_netns_ip(
      (const char *const[]){"-n", ns, "link", "set", "eth0", "up", NULL});
  mine[strlen(mine) - 3] = '\0'; /* the gateway, without /24 */
  rt_netns_ip((const char *const[]){"-n", ns, "route", "add", "default", "via",
                                    mine, NULL});
  n->prefix[i][0] = ip_path();
  n->prefix[i][1] = "netns";
  n->prefix[i][2] = "exec";
  n->prefix[i][3] = ns;
  n->prefix[i][4] = NULL;
  n->n++;
  return i;
}

int rt_netns_count(const rt_netns *n) { return n->n; }
const char *rt_netns_addr(const rt_netns *n, int i) { return n->addr[i]; }
const char *const *rt_netns_prefix(const rt_netns *n, int i) {
  return n->prefix[i];
}

void rt_netns_free(rt_netns *n) {
  if (n == NULL)
    return;
  rt_netns_heal(n);
  for (int i = 0; i < n->n; i++)
    rt_netns_ip((const char *const[]){"netns", "del", n->name[i], NULL});
  free(n);
}

pid_t rt_netns_spawn(const rt_netns *n, int i, const char *const *argv,
                     int *in_fd, int *out_fd) {
  int in[2] = {-1, -1}, out[2] = {-1, -1};
  if ((in_fd != NULL && pipe(in) != 0) || (out_fd != NULL && pipe(out) != 0))
    fail_msg("rt_netns_spawn: pipe: %s", strerror(errno));
  char path[64];
  snprintf(path, sizeof path, "/run/netns/%s", n->name[i]);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0)
    fail_msg("rt_netns_spawn: fork: %s", strerror(errno));
  if (pid == 0) {
    rt_forked_child();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(126); /* the parent is already gone */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0)
      _exit(125);
    if (in_fd != NULL && (dup2(in[0], STDIN_FILENO) < 0 || close(in[1])))
      _exit(125);
    if (out_fd != NULL && (dup2(out[1], STDOUT_FILENO) < 0 || close(out[0])))
      _exit(125);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  if (in_fd != NULL) {
    close(in[0]);
    *in_fd = in[1];
  }
  if (out_fd != NULL) {
    close(out[1]);
    *out_fd = out[0];
  }
  return pid;
}

/* ---- faults ----------------------------------------------------------- */

/* `ip rule add|del pref 100 [from F] [to T] blackhole`. */
static void rule_cmd(const char *verb, const rule *r) {
  const char *w[12] = {"rule", verb, "pref", RULE_PREF};
  int k = 4;
  if (r->from[0]) {
    w[k++] = "from";
    w[k++] = r->from;
  }
  if (r->to[0]) {
    w[k++] = "to";
    w[k++] = r->to;
  }
  w[k++] = "blackhole";
  w[k] = NULL;
  rt_netns_ip(w);
}

static void set_rule(rt_netns *n, const char *from, const char *to, bool on) {
  rule r;
  snprintf(r.from, sizeof r.from, "%s", from ? from : "");
  snprintf(r.to, sizeof r.to, "%s", to ? to : "");
  int at = -1;
  for (int k = 0; k < n->nrules && at < 0; k++)
    if (strcmp(n->rules[k].from, r.from) == 0 &&
        strcmp(n->rules[k].to, r.to) == 0)
      at = k;
  if (on && at < 0) {
    if (n->nrules >= RULES_MAX)
      fail_msg("rt_netns: more than %d rules", RULES_MAX);
    rule_cmd("add", &r);
    n->rules[n->nrules++] = r;
  } else if (!on && at >= 0) {
    rule_cmd("del", &r);
    n->rules[at] = n->rules[--n->nrules];
  }
}

void rt_netns_drop(rt_netns *n, int from, int to, bool on) {
  set_rule(n, n->addr[from], n->addr[to], on);
}

void rt_netns_cut(rt_netns *n, int i, int j, bool on) {
  rt_netns_drop(n, i, j, on);
  rt_netns_drop(n, j, i, on);
}

void rt_netns_isolate(rt_netns *n, int i, bool on) {
  set_rule(n, n->addr[i], NULL, on);
  set_rule(n, NULL, n->addr[i], on);
}

void rt_netns_heal(rt_netns *n) {
  while (n->nrules > 0) {
    rule_cmd("del", &n->rules[n->nrules - 1]);
    n->nrules--;
  }
}

int rt_netns_rules(const rt_netns *n) { return n->nrules; }
