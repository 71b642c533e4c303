/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util.c - error reporting, the library-status to exit-status mapping and
 * small output helpers shared by the commands.
 */
#include <ctype.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/* `s` with control characters shown escaped, C-style (\n, \t, \r,
 * \x1b): a newline or an escape sequence in a lock name or an argument
 * can neither break a line nor drive the terminal. */
static void put_escaped(FILE *out, const char *s) {
  for (; *s != '\0'; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '\n')
      fputs("\\n", out);
    else if (ch == '\t')
      fputs("\\t", out);
    else if (ch == '\r')
      fputs("\\r", out);
    else if (ch < 0x20 || ch == 0x7f)
      fprintf(out, "\\x%02x", ch);
    else
      fputc(ch, out);
  }
}

/* One "rlock: ..." line, escaped as put_escaped() does. */
static void vline(const char *fmt, va_list ap) {
  char buf[4096];
  vsnprintf(buf, sizeof buf, fmt, ap);
  fputs("rlock: ", stderr);
  put_escaped(stderr, buf);
  fputc('\n', stderr);
}

int cli_usage(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vline(fmt, ap);
  va_end(ap);
  fputs("Try 'rlock --help'.\n", stderr);
  return EX_USAGE;
}

int cli_options_first(const char *cmd, const char *what, int n, char **rest) {
  for (int i = 1; i < n; i++)
    if (rest[i][0] == '-')
      return cli_usage("%s: options go before %s (got '%s' after '%s')", cmd,
                       what, rest[i], rest[0]);
  return CLI_CONTINUE;
}

int cli_one_name(const char *cmd, int n, char **rest, const char **name) {
  if (n == 0)
    return cli_usage("%s: missing NAME", cmd);
  int status = cli_options_first(cmd, "NAME", n, rest);
  if (status != CLI_CONTINUE)
    return status;
  if (n > 1)
    return cli_usage("%s: one NAME only (got '%s' after '%s')", cmd, rest[1],
                     rest[0]);
  *name = rest[0];
  return CLI_CONTINUE;
}

int cli_help(const char *text) {
  fputs(text, stdout); /* a write error is reported by main() */
  return 0;
}

int cli_fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vline(fmt, ap);
  va_end(ap);
  return code;
}

/* Infrastructure failures are "service unavailable" (the server is down,
 * refuses us, or answers nonsense); bad input is a data error; the rest
 * should not happen in this tool and is reported as an internal error. */
int cli_exit_for(int rc) {
  switch (rc) {
  case RLOCK_OK:
    return 0;
  case RLOCK_EINVAL:
  case RLOCK_EWRONGTYPE:
    return EX_DATAERR;
  case RLOCK_EIO:
  case RLOCK_ETIMEOUT:
  case RLOCK_EPROTO:
  case RLOCK_ESERVER:
  case RLOCK_EAUTH:
  case RLOCK_EREPLICA:
    return EX_UNAVAILABLE;
  case RLOCK_ELOCKED:
    return EX_TEMPFAIL;
  case RLOCK_ENOMEM:
    return EX_OSERR;
  default:
    return EX_SOFTWARE;
  }
}

/* The library reports a thread it could not start (pthread_create:
 * EAGAIN, out of resources) as RLOCK_EIO, "cannot start ... thread". */
int cli_exit_for_error(int rc, const char *message) {
  if (rc == RLOCK_EIO && strncmp(message, "cannot start ", 13) == 0 &&
      strstr(message, "thread") != NULL)
    return EX_OSERR;
  return cli_exit_for(rc);
}

int cli_lib_error(int rc) {
  const char *msg = rlock_error_last()->message;
  if (rlock_error_last()->code != rc || msg[0] == '\0')
    msg = rlock_strerror(rc); /* the library left no detail for this one */
  return cli_fail(cli_exit_for_error(rc, msg), "%s", msg);
}

/* How getopt_long() reports (glibc): a missing argument can only happen at
 * the last word, argv[optind - 1]. For an unknown long option optopt is 0
 * and the word is argv[optind - 1]. A known option (optopt is one of ours)
 * can only fail as "--long=value" for an option without argument. Else
 * optopt is an unknown short option letter, maybe inside a cluster. */
int cli_bad_option(int opt, char **argv, const char *shortopts) {
  const char *word = argv[optind - 1];
  int name_len = (int)strcspn(word, "=");
  if (opt == ':' && strncmp(word, "--", 2) == 0)
    return cli_usage("option '%s' needs an argument", word);
  if (opt == ':')
    return cli_usage("option '-%c' needs an argument", optopt);
  if (optopt == 0)
    return cli_usage("unknown option '%.*s'", name_len, word);
  if (optopt >= 256 || (isalnum(optopt) && strchr(shortopts, optopt)))
    return cli_usage("option '%.*s' takes no argument", name_len, word);
  return cli_usage("unknown option '-%c'", optopt);
}

void cli_put_printable(FILE *out, const char *s) { put_escaped(out, s); }

int64_t cli_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t cli_epoch_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
