/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_top.c - `rlock top [--once] [--json] [--counts] [--interval DUR]
 * [PATTERN]`:
 * the locks held now, refreshed, for an operator watching a service
 * wait. Each refresh is one rlock_client_list_locks walk (SCAN in small
 * steps, as `list`) and one rlock_client_list_syncs (the semaphores and
 * latches waited on, by their channels; permit-expirable semaphores with
 * permits leased, by their lease sets), its holders' and waiters' registry
 * records read once per client (who.c), sorted by waiters, then by how long the
 * holder's client has been up (the hold time is not kept in Redis: that
 * bounds it); a fair lock's first queued waiters under it, in order. On a
 * terminal it redraws with plain ANSI escapes and reads
 * keys from standard input in non-canonical mode: q quits, s changes the
 * order, / filters by a substring of the name. --once prints one table
 * (no escapes) and exits, as does a standard output that is no terminal.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const char top_help[] =
    "Usage: rlock [-u URL] [OPTION]... top [--once] [--json] [--counts]\n"
    "             [--interval DUR] [PATTERN]\n"
    "\n"
    "Show the locks held now whose names match PATTERN (default *),\n"
    "refreshed every --interval: for each its waiters (a fair lock's queue\n"
    "length), holders, time to live, kind, name, and its first holder's\n"
    "client (pid, host, program, from the registry; \"?\" for a Redisson or\n"
    "unknown client). Sorted by waiters, then by how long the holder's\n"
    "client has been up (UP: the hold time itself is not kept in Redis).\n"
    "Under a fair lock, its first 5 queued waiters in queue order, one a\n"
    "line: \"queued N: pid@host program\" (the owner for an unknown client).\n"
    "Then the semaphores and latches that can be told from any counter:\n"
    "kind \"semaphore\" or \"latch\" when a client is subscribed to its\n"
    "channel (someone waits on it now, or did a moment ago, or follows it),\n"
    "with WAIT the clients subscribed and HOLD its number (available\n"
    "permits, the latch's count); \"psem\", a permit-expirable semaphore\n"
    "with permits leased (its NAME:timeout sorted set), with the permits\n"
    "leased under HOLD. A semaphore nobody waits on is a string of digits\n"
    "like any counter: see --counts.\n"
    "Every refresh walks the servers as 'rlock list' does (SCAN in small\n"
    "steps), once for the locks and once for the lease sets, and asks each\n"
    "server once for its channels, so it stays gentle on a server with many\n"
    "other keys. An ACL that refuses those reads leaves the locks shown,\n"
    "and the header says why the semaphores and latches are not.\n"
    "Keys: q quit; s sort by waiters, name or TTL in turn; / filter by a\n"
    "part of the name (Enter ends it, an empty one clears it).\n"
    "A server that fails ends it with a message (69).\n"
    "\n"
    "Options:\n"
    "  --once          print one table and exit (also when standard output\n"
    "                  is not a terminal)\n"
    "  --json          with --once: one JSON object per row, each on one\n"
    "                  line: {\"name\", \"kind\", \"ttl_ms\", \"waiters\",\n"
    "                  \"holders\", \"holder\": {\"pid\", \"host\", "
    "\"program\",\n"
    "                  \"up_ms\"} or null}\n"
    "  --counts        also every other semaphore and latch, found as 'rlock\n"
    "                  list --counts' finds them (a third walk, reading each\n"
    "                  string of digits): kind \"count\" (a semaphore's\n"
    "                  permits or a latch's count, or any other counter: they\n"
    "                  look alike) with the number under HOLD\n"
    "  --interval DUR  time between refreshes (default 1s, at least 100ms)\n"
    "  -h, --help      show this help\n"
    "\n"
    "Exit status:\n"
    "  0    quit with q, or --once printed its table\n"
    "  64   usage error\n"
    "  69   Redis unreachable, refusing or failing\n"
    "  70   internal error\n"
    "  71   system error (cannot start a thread, out of memory)\n"
    "  74   cannot write the output\n";

#define TOP_SHORTOPTS "+:h"
#define OPT_ONCE 256
#define OPT_JSON 257
#define OPT_INTERVAL 258
#define OPT_COUNTS 259
#define TOP_MAX 4096 /* locks kept per refresh */
#define TOP_QUEUE 5  /* a fair lock's queued waiters shown, in order */

typedef struct top_args {
  const char *pattern;
  int once, json, counts;
  int64_t interval_ms;
} top_args;

/* What a row is: a lock; a semaphore or latch told apart by its channel or
 * lease set (rlock_client_list_syncs); a count (--counts). */
enum { ROW_LOCK, ROW_SYNC, ROW_COUNT };

typedef struct row {
  char name[128]; /* cut to fit a screen */
  int what;       /* ROW_* */
  const char *kind;
  int64_t ttl_ms;
  size_t waiters, holders;
  long long pid; /* first holder's client, 0: unknown */
  char host[64], program[96];
  int64_t up_ms; /* its client's age, -1: unknown */
  /* a fair lock's first queued waiters, in order: "pid@host program", or
   * the owner field when its client is unknown */
  char queue[TOP_QUEUE][112];
} row;

typedef struct table {
  rlock_client *client;
  row *rows;
  size_t n;
  int sort; /* 0 waiters, 1 name, 2 TTL */
  char filter[64];
  char denied[160]; /* why the semaphores and latches are not shown (an
                       ACL's refusal), or "" */
} table;

static int parse_top(int argc, char **argv, top_args *a) {
  static const struct option longopts[] = {
      {"once", no_argument, NULL, OPT_ONCE},
      {"json", no_argument, NULL, OPT_JSON},
      {"interval", required_argument, NULL, OPT_INTERVAL},
      {"counts", no_argument, NULL, OPT_COUNTS},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, TOP_SHORTOPTS, longopts, NULL)) != -1) {
    if (c == 'h')
      return cli_help(top_help);
    if (c == OPT_ONCE)
      a->once = 1;
    else if (c == OPT_JSON)
      a->json = 1;
    else if (c == OPT_COUNTS)
      a->counts = 1;
    else if (c == OPT_INTERVAL) {
      int st = cli_interval_arg("top", optarg, 100, &a->interval_ms);
      if (st != CLI_CONTINUE)
        return st;
    } else
      return cli_bad_option(c, argv, TOP_SHORTOPTS);
  }
  int status =
      cli_options_first("top", "PATTERN", argc - optind, argv + optind);
  if (status != CLI_CONTINUE)
    return status;
  if (argc - optind > 1)
    return cli_usage("top: one PATTERN only (got '%s' after '%s')",
                     argv[optind + 1], argv[optind]);
  a->pattern = optind < argc ? argv[optind] : NULL;
  if (a->json && !a->once)
    return cli_usage("top: --json goes with --once");
  return CLI_CONTINUE;
}

/* "pid@host program" of `owner`'s client, or the owner field. */
static void describe(rlock_client *client, const char *owner, char *buf,
                     size_t size) {
  const rlock_client_record *rec = cli_who_record(client, owner);
  if (rec != NULL)
    snprintf(buf, size, "%lld@%.40s %.50s", rec->pid, rec->host, rec->program);
  else
    snprintf(buf, size, "%.100s", owner);
}

/* A new row of `what` named `name`, or NULL when the table is full. */
static row *add_row(table *t, int what, const char *name) {
  if (t->n == TOP_MAX)
    return NULL; /* enough for any screen */
  row *r = &t->rows[t->n++];
  memset(r, 0, sizeof *r);
  snprintf(r->name, sizeof r->name, "%.127s", name);
  r->what = what;
  r->ttl_ms = -1;
  r->up_ms = -1;
  return r;
}

/* One lock into the table (list_locks' callback). */
static int collect(const char *name, const char *kind,
                   const rlock_lock_info *info, void *arg) {
  table *t = arg;
  row *r = add_row(t, ROW_LOCK, name);
  if (r == NULL)
    return 1;
  r->kind = kind;
  r->ttl_ms = rlock_lock_info_ttl_ms(info);
  r->waiters = rlock_lock_info_queue_length(info);
  r->holders = rlock_lock_info_holder_count(info);
  for (size_t i = 0;
       i < r->waiters && i < TOP_QUEUE && i < rlock_lock_info_queue_count(info);
       i++)
    describe(t->client, rlock_lock_info_queue_owner(info, i), r->queue[i],
             sizeof r->queue[i]);
  const rlock_client_record *rec =
      r->holders > 0
          ? cli_who_record(t->client, rlock_lock_info_holder_owner(info, 0))
          : NULL;
  if (rec != NULL) {
    r->pid = rec->pid;
    snprintf(r->host, sizeof r->host, "%.63s", rec->host); /* cut to fit */
    snprintf(r->program, sizeof r->program, "%.95s", rec->program);
    int64_t now = cli_epoch_ms();
    r->up_ms = now >= rec->started_ms ? now - rec->started_ms : 0;
  }
  return 0;
}

/* One semaphore or latch into the table (list_syncs' callback): WAIT is
 * the clients subscribed to its channel; HOLD its number (a semaphore's
 * available permits, a latch's count), or a permit-expirable semaphore's
 * permits leased. */
static int collect_sync(const char *name, const char *kind, int64_t value,
                        int64_t leased, int64_t subscribers, const char *node,
                        void *arg) {
  (void)node;
  row *r = add_row(arg, ROW_SYNC, name);
  if (r == NULL)
    return 1;
  r->kind = leased > 0                   ? "psem"
            : strcmp(kind, "latch") == 0 ? "latch"
                                         : "semaphore";
  r->waiters = (size_t)(subscribers > 0 ? subscribers : 0);
  r->holders = (size_t)(leased > 0 ? leased : value > 0 ? value : 0);
  return 0;
}

/* Whether the semaphores and latches found hold a row named `name`. */
static int shown(const table *t, const char *name) {
  for (size_t i = t->n; i-- > 0 && t->rows[i].what != ROW_LOCK;)
    if (t->rows[i].what == ROW_SYNC && strcmp(t->rows[i].name, name) == 0)
      return 1;
  return 0;
}

/* One count into the table (list_counts' callback) unless shown already:
 * HOLD is the number, or a permit-expirable semaphore's permits leased. */
static int collect_count(const char *name, const char *kind, int64_t available,
                         int64_t leased, const char *node, void *arg) {
  (void)node, (void)kind;
  table *t = arg;
  char cut[128];
  snprintf(cut, sizeof cut, "%.127s", name);
  if (shown(t, cut))
    return 0;
  row *r = add_row(t, ROW_COUNT, name);
  if (r == NULL)
    return 1;
  r->kind = leased > 0 ? "psem" : "count";
  r->holders = (size_t)(leased > 0 ? leased : available > 0 ? available : 0);
  return 0;
}

static int sort_mode; /* qsort has no argument */

static int by_order(const void *a, const void *b) {
  const row *x = a, *y = b;
  if (sort_mode == 1)
    return strcmp(x->name, y->name);
  if (sort_mode == 2 && x->ttl_ms != y->ttl_ms)
    return x->ttl_ms < y->ttl_ms ? -1 : 1;
  if (x->waiters != y->waiters)
    return x->waiters > y->waiters ? -1 : 1;
  if (x->up_ms != y->up_ms)
    return x->up_ms > y->up_ms ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* A line cut to `width` (0: whole), made printable. */
static void put_line(char *line, int n, int width) {
  if (width > 0 && n > width)
    line[width] = '\0';
  cli_put_printable(stdout, line);
  fputc('\n', stdout);
}

/* A fair lock's queue under its row, in order, while `*left` lines are
 * left (-1: no bound): "  queued 1: pid@host program". */
static void print_queue(const row *r, int width, int *left) {
  char line[256];
  for (size_t i = 0; i < r->waiters && i < TOP_QUEUE && *left != 0; i++) {
    if (r->queue[i][0] == '\0')
      break;
    int n = snprintf(line, sizeof line, "%41squeued %zu: %s", "", i + 1,
                     r->queue[i]);
    put_line(line, n, width);
    *left -= *left > 0;
  }
  if (r->waiters > TOP_QUEUE && *left != 0) {
    int n = snprintf(line, sizeof line, "%41s(%zu more queued)", "",
                     r->waiters - TOP_QUEUE);
    put_line(line, n, width);
    *left -= *left > 0;
  }
}

static void print_row(const row *r, int width) {
  char ttl[32] = "-", up[32] = "?", line[1024], who[256] = "?";
  if (r->ttl_ms >= 0)
    cli_format_ms(ttl, sizeof ttl, r->ttl_ms);
  if (r->up_ms >= 0)
    cli_format_ms(up, sizeof up, r->up_ms);
  if (r->pid > 0)
    snprintf(who, sizeof who, "%lld@%s %s", r->pid, r->host, r->program);
  if (r->what != ROW_LOCK) /* no holder a semaphore or latch records */
    up[0] = who[0] = '-', up[1] = who[1] = '\0';
  int n = snprintf(line, sizeof line, "%5zu %4zu %8s %8s %-10s %-24s %s",
                   r->waiters, r->holders, ttl, up, r->kind, r->name, who);
  put_line(line, n, width);
}

/* "N locks, N semaphores and latches[, N counts], sorted by ...". */
static void print_heading(const table *t, int counts) {
  static const char *const sorts[] = {"waiters", "name", "ttl"};
  size_t n[3] = {0, 0, 0};
  for (size_t i = 0; i < t->n; i++)
    if (t->filter[0] == '\0' || strstr(t->rows[i].name, t->filter))
      n[t->rows[i].what]++;
  printf("%zu lock%s, ", n[ROW_LOCK], n[ROW_LOCK] == 1 ? "" : "s");
  if (t->denied[0] != '\0')
    printf("semaphores and latches not shown (%s)", t->denied);
  else
    printf("%zu %s", n[ROW_SYNC],
           n[ROW_SYNC] == 1 ? "semaphore or latch" : "semaphores and latches");
  if (counts)
    printf(", %zu count%s", n[ROW_COUNT], n[ROW_COUNT] == 1 ? "" : "s");
  printf(", sorted by %s%s%s\n", sorts[t->sort],
         t->filter[0] ? ", filter " : "", t->filter);
}

static void print_table(const table *t, int counts, int width, int rows_max) {
  print_heading(t, counts);
  puts("WAIT HOLD      TTL       UP KIND       NAME                     "
       "HOLDER (pid@host program)");
  int left = rows_max > 0 ? rows_max - 3 : -1;
  for (size_t i = 0; i < t->n && left != 0; i++) {
    if (t->filter[0] != '\0' && !strstr(t->rows[i].name, t->filter))
      continue;
    print_row(&t->rows[i], width);
    left -= left > 0;
    print_queue(&t->rows[i], width, &left);
  }
}

/* Refresh the table: RLOCK_OK or the listing's status. */
static int refresh(table *t, const char *pattern, int counts) {
  t->n = 0;
  int rc = rlock_client_list_locks(t->client, pattern, collect, t);
  t->denied[0] = '\0';
  size_t locks = t->n;
  if (rc == RLOCK_OK &&
      (rc = rlock_client_list_syncs(t->client, pattern, collect_sync, t)) ==
          RLOCK_EAUTH) { /* a user allowed the locks only: show them */
    snprintf(t->denied, sizeof t->denied, "%.150s",
             rlock_error_last()->message);
    t->n = locks; /* none of them, rather than some */
    rc = RLOCK_OK;
  }
  if (rc == RLOCK_OK && counts)
    rc = rlock_client_list_counts(t->client, pattern, collect_count, t);
  sort_mode = t->sort;
  qsort(t->rows, t->n, sizeof *t->rows, by_order);
  return rc;
}

/* ---- the terminal ------------------------------------------------------ */

static struct termios saved;
static int raw_on;

static void raw_off(void) {
  if (raw_on)
    tcsetattr(STDIN_FILENO, TCSANOW, &saved);
  raw_on = 0;
  fputs("\x1b[?25h", stdout); /* the cursor back */
  fflush(stdout);
}

static void raw_begin(void) {
  if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0) {
    struct termios t = saved;
    t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
    t.c_cc[VMIN] = 0;
    t.c_cc[VTIME] = 0;
    raw_on = tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
  }
  fputs("\x1b[?25l", stdout);
}

/* Handle the keys waiting: 1 to quit, else 0. */
static int keys(table *t, int *typing) {
  char buf[64];
  ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
  if (n == 0 && !raw_on)
    return 0; /* stdin closed or not a terminal: only q quits */
  for (ssize_t i = 0; i < n; i++) {
    char ch = buf[i];
    size_t len = strlen(t->filter);
    if (*typing) {
      if (ch == '\n' || ch == '\r')
        *typing = 0;
      else if ((ch == 0x7f || ch == '\b') && len > 0)
        t->filter[len - 1] = '\0';
      else if ((unsigned char)ch >= 0x20 && len + 1 < sizeof t->filter)
        t->filter[len] = ch, t->filter[len + 1] = '\0';
    } else if (ch == 'q' || ch == 'Q') {
      return 1;
    } else if (ch == 's') {
      t->sort = (t->sort + 1) % 3;
    } else if (ch == '/') {
      *typing = 1;
      t->filter[0] = '\0';
    }
  }
  return 0;
}

static void screen_size(int *width, int *height) {
  struct winsize ws;
  *width = 0, *height = 0;
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
    *width = ws.ws_col, *height = ws.ws_row;
}

/* Redraw every interval until q, a lost server or a write error. */
static int live(table *t, const top_args *a) {
  int typing = 0, status = 0;
  raw_begin();
  for (;;) {
    int rc = refresh(t, a->pattern, a->counts);
    if (rc != RLOCK_OK) {
      raw_off();
      fputs("\x1b[2J\x1b[H", stdout);
      fflush(stdout);
      status = cli_fail(cli_exit_for(rc), "top: lost the server: %s",
                        rlock_error_last()->message);
      break;
    }
    int width, height;
    screen_size(&width, &height);
    fputs("\x1b[H\x1b[2J", stdout);
    print_table(t, a->counts, width, height);
    if (typing)
      printf("filter: %s", t->filter);
    if (fflush(stdout) != 0 || ferror(stdout))
      break; /* main() reports the write error */
    int64_t until = cli_now_ms() + a->interval_ms;
    int quit = 0;
    for (int64_t left; !quit && (left = until - cli_now_ms()) > 0;) {
      struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
      if (poll(&p, 1, (int)left) > 0 && (p.revents & POLLIN))
        quit = keys(t, &typing);
      else if (p.revents & (POLLHUP | POLLERR))
        break;
    }
    if (quit)
      break;
  }
  raw_off();
  return status;
}

static int once(table *t, const top_args *a) {
  int rc = refresh(t, a->pattern, a->counts);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc);
  if (!a->json) {
    print_table(t, a->counts, 0, 0);
    return 0;
  }
  for (size_t i = 0; i < t->n; i++) {
    const row *r = &t->rows[i];
    fputs("{\"name\": ", stdout);
    cli_json_string(stdout, r->name);
    printf(", \"kind\": \"%s\", \"ttl_ms\": %" PRId64 ", \"waiters\": %zu"
           ", \"holders\": %zu, \"holder\": ",
           r->kind, r->ttl_ms, r->waiters, r->holders);
    if (r->pid > 0) {
      printf("{\"pid\": %lld, \"host\": ", r->pid);
      cli_json_string(stdout, r->host);
      fputs(", \"program\": ", stdout);
      cli_json_string(stdout, r->program);
      printf(", \"up_ms\": %" PRId64 "}}\n", r->up_ms);
    } else {
      fputs("null}\n", stdout);
    }
  }
  return 0;
}

int cli_cmd_top(const cli_global *g, int argc, char **argv) {
  top_args a = {.interval_ms = 1000};
  int status = parse_top(argc, argv, &a);
  if (status != CLI_CONTINUE)
    return status;
  if (g->nurls > 1)
    return cli_usage("top: one -u URL only (several are for exec's RedLock)");
  table t = {0};
  if ((t.rows = calloc(TOP_MAX, sizeof *t.rows)) == NULL)
    return cli_fail(EX_OSERR, "out of memory");
  if ((status = cli_client_new(g, g->url, NULL, NULL, &t.client)) == 0) {
    status = a.once || !isatty(STDOUT_FILENO) ? once(&t, &a) : live(&t, &a);
    rlock_client_free(t.client);
  }
  free(t.rows);
  return status;
}
