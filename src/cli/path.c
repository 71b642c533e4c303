/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * path.c - find out before taking the lock whether COMMAND can be run, as a
 * shell does before it forks: "rlock exec L -- typo" fails at once with
 * 127 instead of waiting for the lock, and the message comes from the
 * parent. The child's execvp() does the same search again, so a file that
 * changes in between still gets 126/127 from the child.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* 0 if `path` is a file we may execute, else ENOENT, EISDIR or EACCES. */
static int check_file(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0)
    return errno == EACCES ? EACCES : ENOENT;
  if (S_ISDIR(st.st_mode))
    return EISDIR;
  return access(path, X_OK) == 0 ? 0 : EACCES;
}

/* execvp()'s search: each PATH entry in turn (empty means "."), skipping
 * entries where the command is absent; EACCES if only unusable ones. */
static int search_path(const char *cmd) {
  const char *path = getenv("PATH");
  char full[PATH_MAX];
  int err = ENOENT;
  if (path == NULL)
    path = "/bin:/usr/bin"; /* glibc's default */
  for (const char *dir = path;;) {
    const char *end = strchrnul(dir, ':');
    int len = (int)(end - dir);
    int n = len == 0 ? snprintf(full, sizeof full, "./%s", cmd)
                     : snprintf(full, sizeof full, "%.*s/%s", len, dir, cmd);
    int e = n > 0 && (size_t)n < sizeof full ? check_file(full) : ENOENT;
    if (e == 0)
      return 0;
    if (e != ENOENT)
      err = EACCES;
    if (*end == '\0')
      return err;
    dir = end + 1;
  }
}

int cli_check_command(const char *cmd) {
  int err = cmd[0] == '\0'     ? ENOENT
            : strchr(cmd, '/') ? check_file(cmd)
                               : search_path(cmd);
  if (err == ENOENT)
    return cli_fail(CLI_EXIT_NOTFOUND, "%s: command not found", cmd);
  if (err == EISDIR)
    return cli_fail(CLI_EXIT_NOEXEC, "%s: is a directory", cmd);
  if (err != 0)
    return cli_fail(CLI_EXIT_NOEXEC, "%s: permission denied", cmd);
  return 0;
}
