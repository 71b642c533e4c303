/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: connecting — passwords, ACL users, database selection,
 * unix sockets — and one client shared by many threads. */
#include "fixture.h"

#include <stdlib.h>

static rlock_client *client_for(const char *url, int pool) {
  rlock_config *cfg;
  rlock_client *c;
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(cfg, url));
  if (pool > 0)
    OK(rlock_config_set_pool_size(cfg, pool));
  OK(rlock_client_new(&c, cfg));
  rlock_config_free(cfg);
  return c;
}

static void test_password_and_acl_user(void **state) {
  (void)state;
  const char *args[] = {"--requirepass", "s3cret", "--user", "alice", "on",
                        ">alicepw",      "~*",     "&*",     "+@all", NULL};
  rt_server *s = rt_server_start(args);
  char url[256];
  int port = rt_server_port(s);
  rlock_client *c;

  snprintf(url, sizeof url, "redis://:s3cret@127.0.0.1:%d", port);
  c = client_for(url, 0);
  OK(rlock_client_ping(c, NULL));
  rlock_client_free(c);

  snprintf(url, sizeof url, "redis://alice:alicepw@127.0.0.1:%d", port);
  c = client_for(url, 0);
  rlock_lock *l = fx_lock(c, "client:acl");
  OK(rlock_lock_acquire(l));
  OK(rlock_lock_release(l));
  FX_FREE((l), (c));

  snprintf(url, sizeof url, "redis://:wrong@127.0.0.1:%d", port);
  c = client_for(url, 0);
  RC(rlock_client_ping(c, NULL), RLOCK_EAUTH);
  assert_non_null(strstr(rlock_error_last()->message, "AUTH"));
  rlock_client_free(c);

  snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
  c = client_for(url, 0);
  l = fx_lock(c, "client:noauth");
  RC(rlock_lock_acquire(l), RLOCK_EAUTH);
  FX_FREE((l), (c));
  rt_server_free(s);
}

static void test_database_and_unix_socket(void **state) {
  (void)state;
  rt_server *s = rt_server_start(NULL);
  char url[512];
  snprintf(url, sizeof url, "unix://%s?db=5", rt_server_unix_path(s));
  rlock_client *c = client_for(url, 0);
  rlock_lock *l = fx_lock(c, "client:db5");
  OK(rlock_lock_acquire(l));
  assert_int_equal(rt_cmd_int(s, "EXISTS client:db5"), 0); /* db 0 */
  redisContext *raw = rt_server_connect(s);
  freeReplyObject(redisCommand(raw, "SELECT 5"));
  redisReply *r = redisCommand(raw, "EXISTS client:db5");
  assert_int_equal(r->integer, 1);
  freeReplyObject(r);
  OK(rlock_lock_release(l));
  FX_FREE((l), (c));

  snprintf(url, sizeof url, "redis://127.0.0.1:%d/5", rt_server_port(s));
  c = client_for(url, 0);
  l = fx_lock(c, "client:db5b");
  OK(rlock_lock_acquire(l));
  r = redisCommand(raw, "EXISTS client:db5b");
  assert_int_equal(r->integer, 1);
  freeReplyObject(r);
  OK(rlock_lock_release(l));
  FX_FREE((l), (c));
  redisFree(raw);
  rt_server_free(s);
}

typedef struct worker {
  rlock_client *c;
  int id;
  int rc;
} worker;

static void *worker_main(void *arg) {
  worker *w = arg;
  char name[64];
  for (int i = 0; i < 100 && w->rc == RLOCK_OK; i++) {
    rlock_lock *l;
    snprintf(name, sizeof name, "client:shared:%d", (w->id + i) % 7);
    if ((w->rc = rlock_lock_new(&l, w->c, name)) != RLOCK_OK)
      break;
    w->rc = rlock_lock_acquire(l);
    if (w->rc == RLOCK_OK)
      w->rc = rlock_lock_release(l);
    rlock_lock_free(l);
  }
  return NULL;
}

static void run_workers(rlock_client *c, int n) {
  worker w[16];
  pthread_t t[16];
  for (int i = 0; i < n; i++) {
    w[i] = (worker){.c = c, .id = i};
    pthread_create(&t[i], NULL, worker_main, &w[i]);
  }
  for (int i = 0; i < n; i++) {
    pthread_join(t[i], NULL);
    if (w[i].rc != RLOCK_OK)
      fail_msg("worker %d failed with %d", i, w[i].rc);
  }
}

static void test_many_threads_one_client(void **state) {
  (void)state;
  rt_server *s = rt_server_start(NULL);
  rlock_client *c = client_for(rt_server_url(s), 0);
  run_workers(c, 16);
  rlock_client_free(c);
  /* A pool of 2 connections serves 16 threads: callers take turns. */
  c = client_for(rt_server_url(s), 2);
  run_workers(c, 16);
  redisReply *r = rt_cmd(s, "CLIENT LIST");
  int conns = 0;
  for (const char *p = r->str; (p = strstr(p, "cmd=")) != NULL; p++)
    conns++;
  freeReplyObject(r);
  /* pool + subscriber + the background loop's (the registry's write)
   * + rt_cmd */
  ASSERT_RANGE(conns, 1, 2 + 1 + 1 + 1);
  rlock_client_free(c);
  rt_server_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_password_and_acl_user),
      cmocka_unit_test(test_database_and_unix_socket),
      cmocka_unit_test(test_many_threads_one_client),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
