/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * main.c - the rlock command-line tool: global options and dispatch to
 * the commands (cmd_*.c).
 *
 *   rlock [-u URL] [--watchdog DUR] COMMAND [options] ...
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rlock_git.h" /* RLOCK_GIT_COMMIT (cmake/git_commit.cmake) */

static const char main_help[] =
    "Usage: rlock [-u URL]... [OPTION]... exec\n"
    "             [--fair|--read|--write|--fenced|--spin|--permits N]\n"
    "             [-n|-w DUR] [-l DUR] [-E CODE] [--on-lost ACTION]\n"
    "             [--kill-after DUR] [--check-every DUR] [-v]\n"
    "             NAME [NAME...] -- COMMAND [ARG...]\n"
    "       rlock [-u URL] [OPTION]... status [--json] NAME [NAME...]\n"
    "       rlock [-u URL] [OPTION]... status [--json] --watch [--interval "
    "DUR]\n"
    "             NAME\n"
    "       rlock [-u URL] [OPTION]... list [--json] [--counts] [PATTERN]\n"
    "       rlock [-u URL] [OPTION]... top [--once] [--json] [--counts]\n"
    "             [--interval DUR] [PATTERN]\n"
    "       rlock [-u URL] [OPTION]... unlock --force NAME\n"
    "       rlock [-u URL] [OPTION]... latch set NAME COUNT\n"
    "       rlock [-u URL] [OPTION]... latch down NAME\n"
    "       rlock [-u URL] [OPTION]... latch wait [-w DUR] NAME\n"
    "       rlock [-u URL] [OPTION]... elect [--value TEXT] [-n|-w DUR]\n"
    "             [--kill-after DUR] [-v] NAME -- COMMAND [ARG...]\n"
    "       rlock [-u URL] [OPTION]... leader [--json] [--watch]\n"
    "             [--interval DUR] NAME\n"
    "       rlock --help | --version\n"
    "\n"
    "Redis distributed locks from the shell, compatible with Redisson's "
    "RLock.\n"
    "\n"
    "Commands:\n"
    "  exec     run COMMAND while holding the lock NAME (--fenced: with\n"
    "           its fencing token in $RLOCK_TOKEN; --permits N: one of\n"
    "           the N permits of the semaphore NAME instead)\n"
    "  status   show who holds each lock NAME (--json for scripts; --watch:\n"
    "           each change)\n"
    "  list     show the locks held now whose names match PATTERN\n"
    "  top      the locks held now, who holds and who waits, refreshed\n"
    "  unlock   delete the lock NAME whoever holds it (--force)\n"
    "  latch    set, count down or wait for the count-down latch NAME\n"
    "  elect    campaign in the election NAME and run COMMAND while\n"
    "           leader (the term in $RLOCK_TERM)\n"
    "  leader   show who leads the election NAME (--watch: each change)\n"
    "Run 'rlock COMMAND --help' for a command's options.\n"
    "\n"
    "Global options (OPTION above):\n"
    "  -u, --url URL       the Redis server: redis://[[user]:password@]host\n"
    "                      [:port][/db], or rediss://... over TLS, or\n"
    "                      unix://[[user]:password@]/path[?db=N], or a\n"
    "                      cluster: redis[s]-cluster://host:port[,host:port"
    "...]\n"
    "                      [?pubsub=auto|classic|sharded], or Sentinel:\n"
    "                      redis[s]-sentinel://host[:port][,host[:port]...]"
    "\n"
    "                      [/db]#MASTER (TLS parameters: see rlock(1));\n"
    "                      default $RLOCK_URL, else redis://127.0.0.1:6379;"
    " several\n"
    "                      -u (independent servers) make exec take a RedLock\n"
    "      --watchdog DUR  lease of a lock held by exec without -l, renewed\n"
    "                      every third of it (default 30s, at least 30ms)\n"
    "      --retry-for DUR\n"
    "                      exec, elect, latch wait: while waiting, try a\n"
    "                      server that cannot be reached for at most DUR,\n"
    "                      then exit 69 (default: as long as the wait\n"
    "                      lasts; 0: not at all)\n"
    "      --connect-timeout DUR\n"
    "                      bound on making a connection (default 2s)\n"
    "      --command-timeout DUR\n"
    "                      bound on each command's answer, and on exec's\n"
    "                      release (default 3s)\n"
    "      --tls-ca PATH   rediss://: trust the CA certificate(s) in this "
    "file\n"
    "                      or directory (default: the system's store)\n"
    "      --tls-cert FILE, --tls-key FILE\n"
    "                      rediss://: a client certificate and its key\n"
    "      --tls-insecure  rediss://: do not verify the server (tests only)\n"
    "      --tls-server-name NAME\n"
    "                      rediss://: the name the server's certificate must\n"
    "                      carry (and the SNI sent), instead of the URL's "
    "host\n"
    "      --user NAME     log in as NAME (with the password below)\n"
    "      --password-file FILE\n"
    "                      the password is FILE's first line, instead of the\n"
    "                      URL's (also $RLOCK_PASSWORD; keeps it out of ps)\n"
    "  -h, --help          show this help\n"
    "      --version       show the version\n"
    "\n"
    "DUR is a number of seconds (1.5) or a number with a unit: 250ms, 10s,\n"
    "5m, 1h, 1d (at most 365 days).\n"
    "\n"
    "Exit status:\n"
    "  0        success (exec: COMMAND's status, whatever it is)\n"
    "  1        unlock --force: there was no lock to delete; latch set:\n"
    "           the latch already had a count; leader: nobody leads\n"
    "  64       usage error\n"
    "  65       NAME holds something that is not a lock, or is invalid\n"
    "  69       Redis unreachable, refusing or failing\n"
    "  70       internal error\n"
    "  71       system error (cannot fork or start a thread, out of memory)\n"
    "  74       cannot write the output\n"
    "  75       exec: lock (or permit) not acquired within -w (or exec -E's\n"
    "           CODE); latch wait: the count was not zero within -w; elect:\n"
    "           not leading within -w\n"
    "  76       exec: the lock (or permit) was lost while COMMAND ran (see\n"
    "           exec's --on-lost); elect: leadership was lost while COMMAND "
    "ran\n"
    "  126/127  exec, elect: COMMAND not executable / not found\n"
    "  128+N    exec, elect: COMMAND killed by signal N, or rlock got signal "
    "N\n"
    "           while waiting for the lock (or leadership); latch wait: rlock\n"
    "           got signal N; status --watch, leader --watch: ended by signal "
    "N\n";

static const struct {
  const char *name;
  int (*run)(const cli_global *g, int argc, char **argv);
  int waits; /* may wait for a server it cannot reach: takes --retry-for */
} commands[] = {
    {"exec", cli_cmd_exec, 1},     {"status", cli_cmd_status, 0},
    {"unlock", cli_cmd_unlock, 0}, {"list", cli_cmd_list, 0},
    {"top", cli_cmd_top, 0},       {"latch", cli_cmd_latch, 1},
    {"elect", cli_cmd_elect, 1},   {"leader", cli_cmd_leader, 0},
};

#define MAIN_SHORTOPTS "+:u:h"
enum {
  OPT_WATCHDOG = 256,
  OPT_RETRY_FOR,
  OPT_VERSION,
  OPT_TLS_CA,
  OPT_TLS_CERT,
  OPT_TLS_KEY,
  OPT_TLS_INSECURE,
  OPT_TLS_SERVER_NAME,
  OPT_USER,
  OPT_PASSWORD_FILE,
  OPT_CONNECT_TIMEOUT,
  OPT_COMMAND_TIMEOUT
};

/* The first line of `path` (without its newline) into buf: 0, or an exit
 * status after saying what went wrong (never the password). */
static int read_password(const char *path, char *buf, size_t size) {
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return cli_fail(EX_USAGE, "cannot read --password-file '%s': %s", path,
                    strerror(errno));
  int ok = fgets(buf, (int)size, f) != NULL;
  fclose(f);
  size_t n = ok ? strcspn(buf, "\r\n") : 0;
  if (!ok || n == 0)
    return cli_fail(EX_USAGE, "--password-file '%s' is empty", path);
  if (buf[n] == '\0' && strlen(buf) == size - 1)
    return cli_fail(EX_USAGE,
                    "--password-file '%s': first line longer "
                    "than %zu bytes",
                    path, size - 2);
  buf[n] = '\0';
  return 0;
}

/* --version: the library's version and, for a build from a git checkout,
 * the commit it was built from ("rlock 0.9.0 (git 1e54408)"). */
static int print_version(void) {
  if (RLOCK_GIT_COMMIT[0] != '\0')
    printf("rlock %s (git %s)\n", rlock_version_string(), RLOCK_GIT_COMMIT);
  else
    printf("rlock %s\n", rlock_version_string());
  return 0;
}

/* --watchdog, --retry-for, --connect-timeout, --command-timeout: optarg
 * into *g; CLI_CONTINUE, or EX_USAGE after saying why. */
static int duration_option(cli_global *g, int c) {
  static const struct {
    int opt;
    const char *name;
    int64_t min_ms, max_ms; /* beyond the duration's own 0..365 days */
    const char *range;
  } rules[] = {
      {OPT_WATCHDOG, "--watchdog", 1, RLOCK_MAX_DURATION_MS, "at least 30ms"},
      {OPT_RETRY_FOR, "--retry-for", 0, RLOCK_MAX_DURATION_MS, ""},
      {OPT_CONNECT_TIMEOUT, "--connect-timeout", 1, 3600000, "1ms to 1h"},
      {OPT_COMMAND_TIMEOUT, "--command-timeout", 1, 3600000, "1ms to 1h"}};
  int64_t *dst[] = {&g->watchdog_ms, &g->retry_ms, &g->connect_timeout_ms,
                    &g->command_timeout_ms};
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
    if (rules[i].opt != c)
      continue;
    if (cli_duration_arg(rules[i].name, optarg, dst[i]) != 0)
      return EX_USAGE;
    if (*dst[i] < rules[i].min_ms || *dst[i] > rules[i].max_ms)
      return cli_usage("%s must be %s", rules[i].name, rules[i].range);
    g->retry_set |= c == OPT_RETRY_FOR;
    return CLI_CONTINUE;
  }
  return EX_USAGE; /* not one of them: cannot happen */
}

/* Returns CLI_CONTINUE with *g filled and optind at the command, or an
 * exit status (after --help, --version or a usage error). */
static int parse_global(int argc, char **argv, cli_global *g) {
  static const struct option longopts[] = {
      {"url", required_argument, NULL, 'u'},
      {"watchdog", required_argument, NULL, OPT_WATCHDOG},
      {"retry-for", required_argument, NULL, OPT_RETRY_FOR},
      {"tls-ca", required_argument, NULL, OPT_TLS_CA},
      {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
      {"tls-key", required_argument, NULL, OPT_TLS_KEY},
      {"tls-insecure", no_argument, NULL, OPT_TLS_INSECURE},
      {"tls-server-name", required_argument, NULL, OPT_TLS_SERVER_NAME},
      {"user", required_argument, NULL, OPT_USER},
      {"password-file", required_argument, NULL, OPT_PASSWORD_FILE},
      {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
      {"command-timeout", required_argument, NULL, OPT_COMMAND_TIMEOUT},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, OPT_VERSION},
      {NULL, 0, NULL, 0}};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, MAIN_SHORTOPTS, longopts, NULL)) != -1) {
    switch (c) {
    case 'h':
      return cli_help(main_help);
    case OPT_VERSION:
      return print_version();
    case 'u':
      if (g->nurls == RLOCK_MAX_REDLOCK_MEMBERS)
        return cli_usage("at most %d -u URLs", RLOCK_MAX_REDLOCK_MEMBERS);
      g->urls[g->nurls++] = optarg;
      g->url = g->urls[0];
      break;
    case OPT_WATCHDOG:
    case OPT_RETRY_FOR:
    case OPT_CONNECT_TIMEOUT:
    case OPT_COMMAND_TIMEOUT:
      if (duration_option(g, c) != CLI_CONTINUE)
        return EX_USAGE;
      break;
    case OPT_TLS_CA:
      g->tls_ca = optarg;
      break;
    case OPT_TLS_CERT:
      g->tls_cert = optarg;
      break;
    case OPT_TLS_KEY:
      g->tls_key = optarg;
      break;
    case OPT_TLS_INSECURE:
      g->tls_insecure = 1;
      break;
    case OPT_TLS_SERVER_NAME:
      g->tls_server_name = optarg;
      break;
    case OPT_USER:
      g->user = optarg;
      break;
    case OPT_PASSWORD_FILE: {
      static char pw[4098];
      int status = read_password(optarg, pw, sizeof pw);
      if (status != 0)
        return status;
      g->password = pw;
      break;
    }
    default:
      return cli_bad_option(c, argv, MAIN_SHORTOPTS);
    }
  }
  if ((g->tls_cert == NULL) != (g->tls_key == NULL))
    return cli_usage("--tls-cert and --tls-key go together");
  return CLI_CONTINUE;
}

static int dispatch(const cli_global *g, int argc, char **argv) {
  if (argc == 0)
    return cli_usage("missing command (exec, status, list, unlock, latch, "
                     "elect or leader)");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (strcmp(argv[0], commands[i].name) != 0)
      continue;
    /* Only exec, elect and latch wait (latch checks its verb): an option
     * that would change nothing is refused. */
    if (g->retry_set && !commands[i].waits)
      return cli_usage("--retry-for applies to exec, elect and latch wait "
                       "only, not to %s",
                       argv[0]);
    return commands[i].run(g, argc, argv);
  }
  return cli_usage("unknown command '%s' (expected exec, status, list, "
                   "unlock, latch, elect or leader)",
                   argv[0]);
}

/* A closed standard fd would be reused by the first socket the library
 * opens, and output meant for stdout would go to Redis. Occupy each closed
 * one with /dev/null opened the other way round, so that using it still
 * fails with EBADF, for rlock and for COMMAND, as if it were closed. */
static void occupy_closed_std_fds(void) {
  for (int fd = 0; fd <= 2; fd++)
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF)
      open("/dev/null", fd == STDIN_FILENO ? O_WRONLY : O_RDONLY);
}

/* Output that did not reach stdout (full disk, closed pipe) is a failure
 * even when everything else worked. */
static int flush_stdout(int status) {
  if (fflush(stdout) == 0 && !ferror(stdout))
    return status;
  int err = errno;
  if (status == 0)
    status = EX_IOERR;
  cli_fail(status, "cannot write to standard output: %s", strerror(err));
  return status;
}

int main(int argc, char **argv) {
  cli_global g = {.url = NULL};
  occupy_closed_std_fds(); /* lowest free fd first: it gets `fd` */
  int status = parse_global(argc, argv, &g);
  if (status == CLI_CONTINUE) {
    const char *env = getenv("RLOCK_URL");
    if (g.url == NULL && env != NULL && env[0] != '\0') {
      g.url = g.urls[0] = env;
      g.nurls = 1;
      g.url_from_env = 1;
    }
    const char *pw = getenv("RLOCK_PASSWORD");
    if (g.password == NULL && pw != NULL && pw[0] != '\0')
      g.password = pw;
    if (g.user != NULL && g.password == NULL)
      status = cli_usage("--user needs --password-file or $RLOCK_PASSWORD");
  }
  if (status == CLI_CONTINUE) {
    status = dispatch(&g, argc - optind, argv + optind);
  }
  status = flush_stdout(status);
  /* A release left running on its thread (release.c) is inside the
   * library: end the process without running exit handlers under it. */
  if (cli_release_abandoned()) {
    fflush(stderr);
    _exit(status);
  }
  return status;
}
