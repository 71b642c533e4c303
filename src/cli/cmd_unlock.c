/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_unlock.c - `rlock unlock --force NAME`: delete a lock whoever holds
 * it, and wake its waiters.
 *
 * A plain unlock is not offered: a Redisson lock belongs to one thread of
 * one client ("<client id>:<thread id>"), which this process is not, so
 * the only unlock it can do is a forced one.
 */
#include <getopt.h>

#include "cli.h"

static const char unlock_help[] =
    "Usage: rlock [-u URL] [OPTION]... unlock --force NAME\n"
    "\n"
    "Delete the lock NAME whoever holds it, and wake the processes waiting\n"
    "for it. The holder is not told: it goes on as if it still held the lock\n"
    "(it finds out at its next renewal or release).\n"
    "\n"
    "Options:\n"
    "  --force      required: rlock can only unlock by force, because a\n"
    "               lock belongs to its holder's thread\n"
    "  -h, --help   show this help\n"
    "\n"
    "Exit status:\n"
    "  0    a lock was deleted\n"
    "  1    there was no lock to delete\n"
    "  64   usage error\n"
    "  65   NAME holds something that is not a lock (left alone), or is\n"
    "       invalid\n"
    "  69   Redis unreachable, refusing or failing\n"
    "  70   internal error\n"
    "  71   system error (cannot start a thread, out of memory)\n"
    "  74   cannot write the output\n";

#define UNLOCK_SHORTOPTS "+:h"
#define OPT_FORCE 256

/* Returns CLI_CONTINUE with *name set, or an exit status. */
static int parse_unlock(int argc, char **argv, const char **name) {
  static const struct option longopts[] = {
      {"force", no_argument, NULL, OPT_FORCE},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c, force = 0;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, UNLOCK_SHORTOPTS, longopts, NULL)) !=
         -1) {
    if (c == 'h')
      return cli_help(unlock_help);
    if (c != OPT_FORCE)
      return cli_bad_option(c, argv, UNLOCK_SHORTOPTS);
    force = 1;
  }
  int status =
      cli_options_first("unlock", "NAME", argc - optind, argv + optind);
  if (status != CLI_CONTINUE)
    return status;
  if (!force)
    return cli_usage("unlock: only 'unlock --force' is supported: a lock "
                     "belongs to its holder's thread, which rlock is not");
  return cli_one_name("unlock", argc - optind, argv + optind, name);
}

static int force_release(rlock_lock *lock, const char *name) {
  int deleted = 0;
  int rc = rlock_lock_force_release(&deleted, lock);
  if (rc != RLOCK_OK)
    return cli_lib_error(rc);
  fputs(deleted ? "rlock: deleted lock '" : "rlock: lock '", stdout);
  cli_put_printable(stdout, name);
  fputs(deleted ? "'\n" : "' is not locked; nothing to delete\n", stdout);
  return deleted ? 0 : CLI_EXIT_NOTHING;
}

int cli_cmd_unlock(const cli_global *g, int argc, char **argv) {
  const char *name = NULL;
  int status = parse_unlock(argc, argv, &name);
  if (status != CLI_CONTINUE)
    return status;
  if (g->nurls > 1)
    return cli_usage(
        "unlock: one -u URL only (several are for exec's RedLock)");
  rlock_client *client;
  rlock_lock *lock;
  status = cli_open(g, name, CLI_FAIR, NULL, NULL, &client, &lock);
  if (status == 0)
    status = force_release(lock, name);
  cli_close(client, lock);
  return status;
}
