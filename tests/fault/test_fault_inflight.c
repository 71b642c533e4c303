/* An acquisition attempt lost in flight: the server read it, then the
 * connection broke before the answer (a server killed, or failing over).
 * The attempt may have taken the lock; the client settles which by
 * reading its own owner's field, so it neither reports a lock it holds as
 * failed (it would stay held until its lease ran out, unrenewed) nor takes
 * one more level than it records. */
#include "fault.h"
#include "rt_util.h"

static rlock_client *client_for(rt_fake *f) {
  rlock_config *cfg;
  rlock_client *c = NULL;
  assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
  /* The scripts play exact command sequences: no INFO replication probe. */
  assert_int_equal(rlock_config_set_url(cfg, rt_fake_url(f)), RLOCK_OK);
  assert_int_equal(rlock_config_set_replica_sync(cfg, 0), RLOCK_OK);
  assert_int_equal(rlock_config_set_command_timeout_ms(cfg, 2000), RLOCK_OK);
  assert_int_equal(rlock_client_new(&c, cfg), RLOCK_OK);
  rlock_config_free(cfg);
  return c;
}

/* The read finds the field: the attempt took the lock. */
static void test_taken(void **state) {
  (void)state;
  static const rt_fake_step s[] = {
      RT_STEP_ACCEPT(), RT_STEP_EXPECT("EVALSHA"), RT_STEP_CLOSE(),
      RT_STEP_ACCEPT(), RT_STEP_EXPECT("HGET"),    RT_STEP_SEND("$1\r\n1\r\n"),
      RT_STEP_END()};
  rt_fake *f = rt_fake_start(s);
  rlock_client *c = client_for(f);
  rlock_lock *l;
  assert_int_equal(rlock_lock_new(&l, c, "inflight"), RLOCK_OK);
  expect_rc(rlock_lock_try_acquire(l, 0, 10000), RLOCK_OK, NULL);
  expect_rc(rlock_lock_check(l), RLOCK_OK, NULL); /* recorded: one level */
  rlock_lock_free(l);
  finish(f, c);
}

/* A fenced lock's token is then the counter's value. */
static void test_taken_fenced(void **state) {
  (void)state;
  static const rt_fake_step s[] = {
      RT_STEP_ACCEPT(),       RT_STEP_EXPECT("EVALSHA"),
      RT_STEP_CLOSE(),        RT_STEP_ACCEPT(),
      RT_STEP_EXPECT("HGET"), RT_STEP_SEND("$1\r\n1\r\n"),
      RT_STEP_EXPECT("GET"),  RT_STEP_SEND("$2\r\n42\r\n"),
      RT_STEP_END()};
  rt_fake *f = rt_fake_start(s);
  rlock_client *c = client_for(f);
  rlock_lock *l;
  assert_int_equal(rlock_lock_new_fenced(&l, c, "inflight"), RLOCK_OK);
  int64_t token = 0;
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.wait_ms = 0;
  o.lease_ms = 10000;
  o.token = &token;
  expect_rc(rlock_lock_acquire_opts(l, &o), RLOCK_OK, NULL);
  assert_int_equal(token, 42);
  rlock_lock_free(l);
  finish(f, c);
}

/* The attempt is lost, then the read answers `count`: the original
 * failure stands and nothing is recorded. */
static void expect_untaken(const char *count) {
  const rt_fake_step s[] = {RT_STEP_ACCEPT(),       RT_STEP_EXPECT("EVALSHA"),
                            RT_STEP_CLOSE(),        RT_STEP_ACCEPT(),
                            RT_STEP_EXPECT("HGET"), RT_STEP_SEND(count),
                            RT_STEP_END()};
  rt_fake *f = rt_fake_start(s);
  rlock_client *c = client_for(f);
  rlock_lock *l;
  assert_int_equal(rlock_lock_new(&l, c, "inflight"), RLOCK_OK);
  expect_rc(rlock_lock_try_acquire(l, 0, 10000), RLOCK_EIO, "closed");
  expect_rc(rlock_lock_check(l), RLOCK_ENOTHELD, NULL);
  rlock_lock_free(l);
  finish(f, c);
}

/* The field is absent: not taken; a try-once acquisition reports the
 * broken connection, as before. */
static void test_not_taken(void **state) {
  (void)state;
  expect_untaken("$-1\r\n");
}

/* Two levels where the client recorded none cannot come from this
 * attempt. */
static void test_unexplained(void **state) {
  (void)state;
  expect_untaken("$1\r\n2\r\n");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_taken), cmocka_unit_test(test_taken_fenced),
      cmocka_unit_test(test_not_taken), cmocka_unit_test(test_unexplained)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
