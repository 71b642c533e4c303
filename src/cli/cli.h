/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cli.h - shared declarations of the rlock command-line tool.
 *
 * The tool uses only the public library API (<rlock.h>). Every function
 * that can fail in a way the user must hear about prints one line on
 * stderr ("rlock: ...") itself and returns the process exit status to use,
 * so a command can simply `return` what its helpers return.
 */
#ifndef RLOCK_CLI_H
#define RLOCK_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sysexits.h>

#include <rlock.h>

/* ---- exit statuses (sysexits.h names, plus the shell's) ---------------- */

/* CLI_EXIT_SIGNAL_BASE + N: killed by, or interrupted by, signal N. */
#define CLI_EXIT_NOTHING 1    /* unlock --force: no lock to delete */
#define CLI_EXIT_NOEXEC 126   /* COMMAND found but not executable */
#define CLI_EXIT_NOTFOUND 127 /* COMMAND not found */
#define CLI_EXIT_SIGNAL_BASE 128
#define CLI_EXIT_LOST 76 /* exec: lock lost, COMMAND terminated */

/* Returned by option parsers: no exit status yet, go on and do the work. */
#define CLI_CONTINUE (-1)

/* ---- global options (main.c) ------------------------------------------ */

typedef struct cli_global {
  const char *url;  /* -u URL, else $RLOCK_URL, else NULL (default) */
  int url_from_env; /* url came from $RLOCK_URL (for error messages) */
  const char *urls[RLOCK_MAX_REDLOCK_MEMBERS]; /* every -u; urls[0] == url */
  int nurls;           /* how many -u: several make exec take a RedLock */
  int64_t watchdog_ms; /* --watchdog DUR, or 0 for the library default */
  int64_t retry_ms;    /* --retry-for DUR, when retry_set */
  int retry_set;
  const char *tls_ca;   /* --tls-ca FILE|DIR, or NULL */
  const char *tls_cert; /* --tls-cert FILE, with tls_key */
  const char *tls_key;
  int tls_insecure;     /* --tls-insecure */
  const char *user;     /* --user NAME (with a password from a file or
                           $RLOCK_PASSWORD), or NULL */
  const char *password; /* from --password-file or $RLOCK_PASSWORD, or NULL:
                           the URL's */
  const char *tls_server_name; /* --tls-server-name NAME, or NULL */
  int64_t connect_timeout_ms;  /* --connect-timeout DUR, or 0: default */
  int64_t command_timeout_ms;  /* --command-timeout DUR, or 0: default */
  /* The program the client's registry record names (exec: its COMMAND),
   * or NULL: no registry record (the commands that hold nothing). */
  const char *program;
} cli_global;

/* The library's default command timeout (rlock_config_set_command_timeout_ms),
 * which also bounds exec's release. */
#define CLI_COMMAND_TIMEOUT_MS 3000

/* The URL with every secret (a password before '@', a *password=
 * parameter) replaced by "***", for messages. */
const char *cli_redact_url(const char *url, char *buf, size_t size);

/* The commands: argv[0] is the command's name; argv is NULL-terminated. */
int cli_cmd_exec(const cli_global *g, int argc, char **argv);
int cli_cmd_status(const cli_global *g, int argc, char **argv);
int cli_cmd_unlock(const cli_global *g, int argc, char **argv);
int cli_cmd_list(const cli_global *g, int argc, char **argv);
int cli_cmd_latch(const cli_global *g, int argc, char **argv);
int cli_cmd_top(const cli_global *g, int argc, char **argv);
int cli_cmd_elect(const cli_global *g, int argc, char **argv);
int cli_cmd_leader(const cli_global *g, int argc, char **argv);

/* ---- a lock's snapshot as `status` shows it (cmd_status.c) -------------- */

/* "  holder OWNER (2 holds)" lines; a read-write lock's "  reader ..." and
   "  writer ...", each followed by its client's line (cli_print_who). */
void cli_print_holders(rlock_client *client, const rlock_lock_info *info);
/* "  queued 1: OWNER (deadline in 4m59s)" for each waiter listed, each
   followed by its client's line. */
void cli_print_queue(rlock_client *client, const rlock_lock_info *info);
/* "  node HOST:PORT (cluster)" for a cluster or Sentinel, else nothing. */
void cli_print_node(const rlock_lock_info *info, const char *topology);
/* The JSON members "holders": [...], "queue": [...], each entry with its
   "client" (cli_json_who). */
void cli_json_holders(rlock_client *client, const rlock_lock_info *info);

/* ---- who is behind an owner field (who.c) ------------------------------ */

/* "    client: pid 4242 on HOST, PROGRAM (rlock 0.9.0, client up 5m07s)"
   from the owner's registry record (rlock_client_whois, read once per
   client id a command), or "    client: Redisson or unknown client (no
   registry record)". */
void cli_print_who(rlock_client *client, const char *owner);
/* The JSON member ', "client": {"host": ..., "pid": N, "program": ...,
   "version": ..., "started_ms": N}', or ', "client": null'. */
void cli_json_who(rlock_client *client, const char *owner);
/* ---- following a lock's channels (follow.c) ----------------------------- */

/* The messages of a lock's channels (rlock/watch.h) and caught signals,
 * waited for on the command's thread. */
typedef struct cli_follow cli_follow;
/* 0, or an exit status after saying why. */
int cli_follow_new(cli_follow **out);
int cli_follow_lock(cli_follow *f, rlock_lock *lock);
int cli_follow_election(cli_follow *f, rlock_election *e);
/* Wait up to `ms`: 1 when a message came (or a lost subscription is back:
 * read again), 0 when the time is up, -1 when a signal was caught. */
int cli_follow_wait(cli_follow *f, int64_t ms);
void cli_follow_free(cli_follow *f);

/* status --watch NAME (cmd_status_watch.c): the exit status. */
int cli_status_watch(rlock_client *client, const char *name, int json,
                     int64_t interval_ms);
/* status --json's object for a lock, on one line (cmd_status.c); `token`
 * 0 leaves it out. */
void cli_status_json(rlock_client *client, const char *name,
                     const rlock_lock_info *info, const char *topology,
                     int64_t token);

/* The owner's registry record (read as cli_print_who reads it), or NULL
   when it has none. Borrowed: valid until the next cli_who_* call. */
const rlock_client_record *cli_who_record(rlock_client *client,
                                          const char *owner);

/* ---- errors and exit statuses (util.c) -------------------------------- */

/* Print "rlock: <msg>" and "Try 'rlock --help'." on stderr; EX_USAGE. */
int cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print a --help text on stdout; returns 0, the exit status for it. */
int cli_help(const char *text);

/* A usage error if a word after the first of `rest` (n words: NAME or
 * PATTERN, as `what` says, and what follows) looks like an option, which
 * goes before them; else CLI_CONTINUE. */
int cli_options_first(const char *cmd, const char *what, int n, char **rest);

/* The one NAME left in `rest` (n words) for command `cmd`: CLI_CONTINUE
 * with *name set, or a usage error (options after it included). */
int cli_one_name(const char *cmd, int n, char **rest, const char **name);

/* Print "rlock: <msg>" on stderr and return `code`. Every message line
 * (this, cli_usage) shows control characters escaped (\n, \x1b), so a
 * name cannot break the line or drive the terminal. */
int cli_fail(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The exit status for a library status code (RLOCK_OK -> 0). */
int cli_exit_for(int rc);

/* cli_exit_for(), knowing the message too: a thread the library could
 * not start is a system error (71), not an unreachable server. */
int cli_exit_for_error(int rc, const char *message);

/* Print the library's last error message as one line and return
   cli_exit_for(rc). Call right after the failing library call. */
int cli_lib_error(int rc);

/* Report a getopt_long() failure (opterr is 0) as a usage error. `opt` is
   what getopt returned ('?' or ':'); `argv` and `shortopts` as passed to
   getopt_long(). Long-only options must use values >= 256. */
int cli_bad_option(int opt, char **argv, const char *shortopts);

/* Print s with control characters escaped as in messages (\n, \x1b), so
   that a name or owner from Redis can neither break a line of the output
   nor drive the terminal, and stays told apart from its neighbours. */
void cli_put_printable(FILE *out, const char *s);

/* CLOCK_MONOTONIC in milliseconds. */
int64_t cli_now_ms(void);
/* The wall clock in Unix epoch milliseconds, to the millisecond: for the
   age of a registry record (its start is written so), never a timeout. */
int64_t cli_epoch_ms(void);

/* ---- durations (duration.c) ------------------------------------------- */

/*
 * Parse "<number>[<unit>]" into milliseconds, 0..RLOCK_MAX_DURATION_MS:
 * the number is digits with an optional decimal fraction ("1.5"), the
 * unit ms, s, m, h or d, seconds when left out (as flock -w). A fraction
 * of a millisecond rounds up, so that only 0 means 0. On failure returns
 * -1 and points *why at a static explanation.
 */
int cli_parse_duration(const char *s, int64_t *ms, const char **why);

/* Parse the argument of option `opt` (e.g. "-w"), printing a usage error
   on failure: returns 0 or EX_USAGE. */
int cli_duration_arg(const char *opt, const char *s, int64_t *ms);

/* Parse `--interval`'s argument for command `cmd`, refusing one under
   `min_ms` with a usage error: returns CLI_CONTINUE or EX_USAGE. */
int cli_interval_arg(const char *cmd, const char *s, int64_t min_ms,
                     int64_t *ms);

/* Human form of a non-negative duration: "250ms", "12.3s", "5m07s",
   "2h05m". */
void cli_format_ms(char *buf, size_t size, int64_t ms);

/* ---- JSON (json.c) ----------------------------------------------------- */

/* Write s as a JSON string literal (quotes included): control characters
   escaped, valid UTF-8 passed through, invalid bytes as U+FFFD. */
void cli_json_string(FILE *out, const char *s);

/* ---- connecting (client.c) --------------------------------------------- */

/* Which lock a command opens: rlock exec's --fair, --read, --write,
 * --fenced, --spin. */
typedef enum cli_kind {
  CLI_LOCK,
  CLI_FAIR,
  CLI_READ,
  CLI_WRITE,
  CLI_FENCED,
  CLI_SPIN
} cli_kind;

/* A client for server `url` (NULL: the default) with the global options;
 * 0 or an exit status after printing why. */
int cli_client_new(const cli_global *g, const char *url, rlock_lost_fn lost,
                   void *ud, rlock_client **client);

/* What exec tells cli_exec_redlock(). */
typedef struct cli_redlock_args {
  const char *name;
  int64_t wait_ms, lease_ms;
  char **command;
  char **envp;           /* COMMAND's environment */
  int pdeath;            /* COMMAND gets SIGTERM if rlock dies */
  int conflict_status;   /* exit status when not acquired (-E) */
  int64_t release_ms;    /* bound on the release */
  int64_t kill_after_ms; /* --kill-after */
  int verbose;           /* -v: say when it is acquired and released */
} cli_redlock_args;

/* exec over several servers (-u given more than once): a RedLock on NAME
 * around COMMAND. A lost member is only warned about: the quorum may
 * still hold. Returns the exit status. */
int cli_exec_redlock(const cli_global *g, const cli_redlock_args *r,
                     rlock_lost_fn lost);

/* A lock object of `kind` for `name` (a library status). */
int cli_lock_new(cli_kind kind, rlock_lock **lock, rlock_client *client,
                 const char *name);

/*
 * Make a client from the global options and a lock object of `kind` for
 * `name`. `lost` (may be NULL) becomes the lost-lock callback, with `ud`.
 * Returns 0, or an exit status after printing why (bad URL or watchdog:
 * EX_USAGE; bad name: EX_DATAERR; ...). On failure nothing is left to free.
 */
int cli_open(const cli_global *g, const char *name, cli_kind kind,
             rlock_lost_fn lost, void *ud, rlock_client **client,
             rlock_lock **lock);

/* COMMAND and its arguments joined by spaces, cut to what the registry
 * keeps, into buf (RLOCK_PROGRAM_MAX + 1 bytes): the program exec's and
 * elect's registry records name (cli_global.program). */
void cli_program_text(char *const *command, char *buf);

/* Free what cli_open() made. */
void cli_close(rlock_client *client, rlock_lock *lock);

/* ---- signals (signals.c) ----------------------------------------------- */

/*
 * Catch SIGINT, SIGTERM, SIGHUP and SIGQUIT (those not ignored at start,
 * which stay ignored, as a shell leaves them): the handler records the
 * signal and forwards it to the process group of the child set with
 * cli_signals_set_child(), if any. No SA_RESTART, so blocking calls in
 * the main thread return EINTR. SIGCONT is passed on to that group too,
 * and SIGCHLD wakes cli_spawn_watch() (both with SA_RESTART).
 */
int cli_signals_install(void);

/* The last signal caught, or 0. */
int cli_signal_caught(void);

/* How many signals were caught so far (to tell a new one). */
int cli_signals_count(void);

/* The token the signal handler fires, to end a wait for the lock; NULL
 * before cli_signals_install(). */
rlock_cancel *cli_cancel_token(void);

/* Free the token (after the last wait). */
void cli_signals_free(void);

/* Block / unblock the caught signals in the calling thread. */
void cli_signals_block(void);
void cli_signals_unblock(void);

/* The child to forward to; 0 for none. Call with the signals blocked. */
void cli_signals_set_child(pid_t pid);

/* In a forked child: the dispositions rlock found at start, empty mask.
   Async-signal-safe. */
void cli_signals_reset_in_child(void);

/* ---- the child process (path.c, spawn.c) -------------------------------- */

/* Whether `cmd` names an executable file, directly or through $PATH:
   0, or (after one line on stderr) 127 when not found, 126 when found but
   not executable. */
int cli_check_command(const char *cmd);

/* How cli_spawn_watch() watches the lock while the child runs. */
typedef struct cli_watch {
  /* Polled every period_ms and after cli_spawn_wake(): 1 when the lock is
   * lost (then writes what was lost, "lock 'NAME'", into `name`, size
   * `size`), else 0. NULL: never lost. */
  int (*lost)(void *ud, char *name, size_t size);
  void *ud;
  const char *argv0; /* for the message; set by cli_spawn_watch */
  int64_t period_ms;
  int64_t kill_after_ms; /* SIGTERM, then SIGKILL this much later */
  int pdeath;            /* the child gets SIGTERM if rlock dies */
  char **envp;           /* the child's environment; NULL: rlock's own */
} cli_watch;

/*
 * Run argv (PATH search) as a job and wait for it, forwarding caught
 * signals: the child leads a process group of its own, which gets them
 * (and, on a terminal where rlock is in the foreground, the terminal),
 * and rlock, a child subreaper, returns only once the child and every
 * process it left behind have exited. Returns the child's exit status as
 * a shell reports it (status, or 128+N when killed by signal N; 126/127
 * when it cannot be executed), or -1 when no child could be started
 * (after printing why). If a signal was caught before the child started,
 * returns 128+N without starting it.
 * With w->pdeath the child gets SIGTERM should rlock die
 * (PR_SET_PDEATHSIG); call from the main thread, as the death signal
 * follows the thread that forked, and the main thread lives as long as
 * rlock. With w->lost, watches the lock too: once it says so, prints one
 * line naming the lock, sends the job SIGTERM, SIGKILL after
 * w->kill_after_ms, and (once all of it has exited) returns
 * CLI_EXIT_LOST. Once the child has exited, a signal caught ends what it
 * left behind the same way (SIGTERM, then SIGKILL), and its status
 * stays.
 */
int cli_spawn_watch(char **argv, cli_watch *w);

/* COMMAND's own variables (cmd_exec.c), in slots that outlive the fork. */
typedef struct cli_env_slots {
  char name[RLOCK_MAX_NAME_LEN + 16];
  char token[64];
  char permit[RLOCK_PERMIT_ID_LEN + 32];
} cli_env_slots;

/* COMMAND's environment as exec builds it (cmd_exec.c): rlock's, with
 * RLOCK_NAME=name and, when token > 0, var=token (elect: RLOCK_TERM),
 * replacing any inherited RLOCK_NAME, RLOCK_TOKEN, RLOCK_TERM or
 * RLOCK_PERMIT_ID; NULL when out of memory. Free the array only. */
char **cli_command_env(const char *name, const char *var, int64_t token,
                       cli_env_slots *slots);

/* ---- a bounded release (release.c) -------------------------------------- */

/* A release of `arg`'s holds by `owner` (the thread that took them). */
typedef int (*cli_release_fn)(void *arg, uint64_t owner);

/* Returned by cli_release_bounded() when the release did not end in time. */
#define CLI_RELEASE_TIMEOUT 1

/*
 * fn(arg, the calling thread's owner number) on a thread of its own,
 * waited for at most bound_ms: its library status, or CLI_RELEASE_TIMEOUT.
 * *message receives the failure's message (static). After a timeout the
 * release goes on meanwhile: free nothing it uses, and exit.
 */
int cli_release_bounded(cli_release_fn fn, void *arg, int64_t bound_ms,
                        const char **message);

/* Whether a release was left running (see cli_release_bounded). */
int cli_release_abandoned(void);

/* ---- telling once what a wait meets (notice.c) -------------------------- */

/* The client's log hook (rlock_config_set_log, WARN): during a wait begun
 * with cli_notice_begin(), the first warning (a server that cannot be
 * reached, a failed handshake) is printed once, as "rlock: waiting for
 * 'NAME': <message>; still trying", if the wait is still on a moment
 * later (then it is trying again). A RedLock's wait does not use it: it
 * names each member's failure when it ends, and goes on without a
 * minority. */
void cli_notice_log(rlock_log_level level, const char *message, void *ud);
/* From now until cli_notice_end(), report as above, for lock `name`;
 * `quiet`: the terminal's progress line says it already. */
void cli_notice_begin(const char *name, int quiet);
void cli_notice_end(void);

/* Have cli_spawn_watch() poll w->lost now. Async-signal-safe, any thread
 * (the lost-lock callback). */
void cli_spawn_wake(void);

/* ---- acquiring with progress (waiting.c) -------------------------------- */

/* Returned by cli_acquire() when a signal interrupted the wait. */
#define CLI_INTERRUPTED 1

/*
 * rlock_lock_acquire_opts() with wait_ms (RLOCK_WAIT_FOREVER or 0..) and
 * the signal handler's cancel token, so that a caught signal ends the
 * wait at once. On a terminal (`show`), a line on stderr says who holds
 * the lock while waiting. `token` (a fenced lock's; else NULL) receives
 * the acquisition's fencing token. Returns RLOCK_OK (held), RLOCK_ELOCKED,
 * another library status, or CLI_INTERRUPTED (not held).
 */
int cli_acquire(rlock_lock *lock, int64_t wait_ms, int64_t lease_ms, int show,
                int64_t *token);

/* cli_acquire()'s `show`: a redrawn line on a terminal, or (--verbose, not
 * on a terminal) a line per holder met. */
#define CLI_SHOW_TERMINAL 1
#define CLI_SHOW_LINES 2

#endif /* RLOCK_CLI_H */
