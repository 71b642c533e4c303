/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * exec_redlock.c - `rlock -u URL1 -u URL2 ... exec NAME -- COMMAND`: a
 * RedLock on NAME over independent servers, one client per URL.
 */
#include <unistd.h>

#include "cli.h"

typedef struct redlock_run {
  int n;
  rlock_client *clients[RLOCK_MAX_REDLOCK_MEMBERS];
  rlock_lock *locks[RLOCK_MAX_REDLOCK_MEMBERS];
  rlock_redlock *redlock;
} redlock_run;

static void close_all(redlock_run *run) {
  rlock_redlock_free(run->redlock);
  for (int i = 0; i < run->n; i++) {
    rlock_lock_free(run->locks[i]);
    rlock_client_free(run->clients[i]);
  }
}

/* A client and a lock per -u, then the RedLock over them. */
static int open_all(redlock_run *run, const cli_global *g, const char *name,
                    rlock_lost_fn lost) {
  for (int i = 0; i < g->nurls; i++) {
    int status = cli_client_new(g, g->urls[i], lost, NULL, &run->clients[i]);
    if (status != 0)
      return status;
    run->n = i + 1;
    int rc = rlock_lock_new(&run->locks[i], run->clients[i], name);
    if (rc != RLOCK_OK)
      return cli_lib_error(rc);
  }
  int rc = rlock_redlock_new(&run->redlock, run->locks, (size_t)run->n);
  if (rc == RLOCK_EINVAL) /* two -u naming one server: the user's typing */
    return cli_usage("%s", rlock_error_last()->message);
  return rc == RLOCK_OK ? 0 : cli_lib_error(rc);
}

static int release_all(void *redlock, uint64_t owner) {
  return rlock_redlock_release_owner(redlock, owner);
}

/* After COMMAND: release (bounded); say so if the quorum's hold did not
 * last. */
static void release_after(redlock_run *run, const cli_redlock_args *r) {
  const char *msg;
  int rc = cli_release_bounded(release_all, run->redlock, r->release_ms, &msg);
  if (rc == RLOCK_ELOST)
    cli_fail(0, "warning: RedLock '%s' lost a member while '%s' ran: %s",
             r->name, r->command[0], msg);
  else if (rc != RLOCK_OK)
    cli_fail(0,
             "warning: cannot release every member of '%s' (they expire "
             "by themselves): %s",
             r->name, msg);
  else if (r->verbose)
    cli_fail(0, "released '%s'", r->name);
}

int cli_exec_redlock(const cli_global *g, const cli_redlock_args *r,
                     rlock_lost_fn lost) {
  redlock_run run = {0};
  int status = open_all(&run, g, r->name, lost);
  if (status == 0) {
    int rc = rlock_redlock_try_acquire_cancel(NULL, run.redlock, r->wait_ms,
                                              r->lease_ms, cli_cancel_token());
    if (rc == RLOCK_ECANCELED) {
      status = CLI_EXIT_SIGNAL_BASE + cli_signal_caught();
    } else if (rc == RLOCK_ELOCKED) {
      status = cli_fail(r->conflict_status, "%s", rlock_error_last()->message);
    } else if (rc != RLOCK_OK) {
      status = cli_lib_error(rc);
    } else {
      if (r->verbose)
        cli_fail(0, "acquired '%s'", r->name);
      cli_watch w = {NULL, NULL, NULL, 0, r->kill_after_ms, r->pdeath, r->envp};
      status = cli_spawn_watch(r->command, &w);
      release_after(&run, r);
      if (status < 0)
        status = EX_OSERR;
    }
  }
  if (!cli_release_abandoned())
    close_all(&run);
  return status;
}
