/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: the internal hash map. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "map.h"

static void count_entries(const char *k, size_t kl, void *v, void *arg) {
  (void)k, (void)kl, (void)v;
  (*(size_t *)arg)++;
}

static void test_put_get_del_grow(void **state) {
  (void)state;
  rlock__map m = {0};
  char key[32];
  assert_null(rlock__map_get(&m, "x", 1));
  for (intptr_t i = 0; i < 5000; i++) {
    int n = snprintf(key, sizeof key, "k%ld", (long)i);
    assert_int_equal(rlock__map_put(&m, key, (size_t)n, (void *)(i + 1)), 0);
  }
  assert_int_equal(m.count, 5000);
  for (intptr_t i = 0; i < 5000; i++) {
    int n = snprintf(key, sizeof key, "k%ld", (long)i);
    assert_ptr_equal(rlock__map_get(&m, key, (size_t)n), (void *)(i + 1));
  }
  assert_int_equal(rlock__map_put(&m, "k7", 2, (void *)99), 0);
  assert_int_equal(m.count, 5000);
  assert_ptr_equal(rlock__map_get(&m, "k7", 2), (void *)99);
  assert_ptr_equal(rlock__map_del(&m, "k7", 2), (void *)99);
  assert_null(rlock__map_get(&m, "k7", 2));
  assert_null(rlock__map_del(&m, "k7", 2));
  size_t seen = 0;
  rlock__map_each(&m, count_entries, &seen);
  assert_int_equal(seen, 4999);
  rlock__map_clear(&m);
  assert_int_equal(m.count, 0);
}

static void test_binary_keys(void **state) {
  (void)state;
  rlock__map m = {0};
  assert_int_equal(rlock__map_put(&m, "a\0b", 3, (void *)1), 0);
  assert_int_equal(rlock__map_put(&m, "a\0c", 3, (void *)2), 0);
  assert_int_equal(rlock__map_put(&m, "a", 1, (void *)3), 0);
  assert_ptr_equal(rlock__map_get(&m, "a\0b", 3), (void *)1);
  assert_ptr_equal(rlock__map_get(&m, "a\0c", 3), (void *)2);
  assert_ptr_equal(rlock__map_get(&m, "a", 1), (void *)3);
  rlock__map_clear(&m);
}

/* Removed nodes are kept (up to RLOCK__MAP_SPARES) and reused by the next
 * insert whose key fits; a longer key gets a fresh node. ASan and valgrind
 * check that clear frees the spares. */
static void test_spare_nodes(void **state) {
  (void)state;
  rlock__map m = {0};
  char key[64];
  for (intptr_t i = 0; i < 20; i++) {
    int n = snprintf(key, sizeof key, "key%ld", (long)i);
    assert_int_equal(rlock__map_put(&m, key, (size_t)n, (void *)(i + 1)), 0);
  }
  for (intptr_t i = 0; i < 20; i++) {
    int n = snprintf(key, sizeof key, "key%ld", (long)i);
    assert_ptr_equal(rlock__map_del(&m, key, (size_t)n), (void *)(i + 1));
  }
  assert_int_equal(m.count, 0);
  assert_int_equal(m.nspare, RLOCK__MAP_SPARES);
  rlock__map_node *first = m.spare;
  assert_int_equal(rlock__map_put(&m, "again", 5, (void *)7), 0);
  assert_int_equal(m.nspare, RLOCK__MAP_SPARES - 1);
  assert_ptr_equal(rlock__map_get(&m, "again", 5), (void *)7);
  /* The spare itself holds the entry. */
  assert_ptr_equal(m.buckets[first->hash & (m.nbuckets - 1)], first);
  /* Longer than any spare's room: a fresh node, the spares stay. */
  memset(key, 'x', sizeof key - 1);
  assert_int_equal(rlock__map_put(&m, key, sizeof key - 1, (void *)8), 0);
  assert_int_equal(m.nspare, RLOCK__MAP_SPARES - 1);
  assert_ptr_equal(rlock__map_get(&m, key, sizeof key - 1), (void *)8);
  assert_ptr_equal(rlock__map_get(&m, "again", 5), (void *)7);
  rlock__map_clear(&m);
  assert_int_equal(m.nspare, 0);
  assert_null(m.spare);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_put_get_del_grow),
      cmocka_unit_test(test_binary_keys),
      cmocka_unit_test(test_spare_nodes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
