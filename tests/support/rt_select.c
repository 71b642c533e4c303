/* SPDX-License-Identifier: BSD-3-Clause */
#include "rt_select.h"

#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t selected; /* cases run by every group so far */

/* Whether `name` matches one item of the comma-separated `list`, as a
 * pattern (glob) or, without it, exactly. */
static bool in_list(const char *list, const char *name, bool glob) {
  char item[256];
  for (const char *p = list; *p != '\0';) {
    size_t len = strcspn(p, ",");
    if (len < sizeof item) {
      memcpy(item, p, len);
      item[len] = '\0';
      if (glob ? fnmatch(item, name, 0) == 0 : strcmp(item, name) == 0)
        return true;
    }
    p += len + (p[len] == ',');
  }
  return false;
}

static bool wanted(const char *name) {
  const char *only = getenv("RLOCK_TEST_FILTER");
  const char *skip = getenv("RLOCK_TEST_SKIP");
  if (only != NULL && !in_list(only, name, true))
    return false;
  return skip == NULL || !in_list(skip, name, true);
}

/* At exit: a selection that ran nothing is a stale shard, not a pass. */
static void check_selected(void) {
  if (selected > 0)
    return;
  fprintf(stderr,
          "no case selected (RLOCK_TEST_FILTER=%s RLOCK_TEST_SKIP=%s "
          "RLOCK_TEST_GROUPS=%s)\n",
          getenv("RLOCK_TEST_FILTER") ? getenv("RLOCK_TEST_FILTER") : "",
          getenv("RLOCK_TEST_SKIP") ? getenv("RLOCK_TEST_SKIP") : "",
          getenv("RLOCK_TEST_GROUPS") ? getenv("RLOCK_TEST_GROUPS") : "");
  _exit(1);
}

int rt_run_group(const char *name, const struct CMUnitTest *tests, size_t n,
                 CMFixtureFunction setup, CMFixtureFunction teardown) {
  static bool registered;
  if (!registered) {
    registered = true;
    atexit(check_selected);
  }
  const char *groups = getenv("RLOCK_TEST_GROUPS");
  if (groups != NULL && !in_list(groups, name, false))
    return 0;
  struct CMUnitTest *keep = calloc(n ? n : 1, sizeof *keep);
  if (keep == NULL)
    return 1;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (wanted(tests[i].name))
      keep[k++] = tests[i];
  selected += k; /* before: a child forked by a case exits past it */
  int failed = 0;
  if (k > 0)
    failed = _cmocka_run_group_tests(name, keep, k, setup, teardown);
  free(keep);
  return failed;
}
