/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_select.h - which of a test binary's cases run.
 *
 * Three variables of the environment choose, each a comma-separated list:
 *   RLOCK_TEST_FILTER  patterns ('*' and '?', as fnmatch): only the cases
 *                      whose names match one of them run;
 *   RLOCK_TEST_SKIP    patterns: the cases whose names match one are left
 *                      out;
 *   RLOCK_TEST_GROUPS  group names ("blocking", "libuv", "libevent" for
 *                      the drivers of drivers.h): only these groups run.
 * tests/CMakeLists.txt cuts the longest binaries into ctest shards this
 * way (the shards run at once: the tests mostly wait). A binary whose
 * selection leaves no case at all fails, so that a shard whose pattern
 * went stale cannot pass by running nothing.
 */
#ifndef RT_SELECT_H
#define RT_SELECT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* Run group `name` with the cases of `tests` (n of them) that the
 * environment selects, as cmocka_run_group_tests would: the number of
 * failed cases (0 when the group is not selected). */
int rt_run_group(const char *name, const struct CMUnitTest *tests, size_t n,
                 CMFixtureFunction setup, CMFixtureFunction teardown);

#define RT_RUN_GROUP(name, tests, setup, teardown)                             \
  rt_run_group(name, tests, sizeof(tests) / sizeof((tests)[0]), setup, teardown)

#endif /* RT_SELECT_H */
