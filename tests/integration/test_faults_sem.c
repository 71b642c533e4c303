/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault runs of the permit-expirable semaphore (rlock/semaphore.h): the
 * kit's worker processes (faults_kit.h, fk.sem) share one semaphore of
 * three permits, each round a watchdog permit taken, worked with, checked
 * and released, while holders are killed (kill -9: their permit comes
 * back one watchdog lease later) or stopped past their lease (SIGSTOP:
 * their permit goes to another worker; once resumed they must be told),
 * and while Sentinel fails the master over.
 * The history's judge (rt_history_check_n) allows three holders at once:
 * a fourth is a violation unless one of them was told its permit was
 * gone; every stopped holder must be told. Blocking and loop workers. */
#include "faults_kit.h"

#include "rt_sentinel.h"

#define PERMITS 3

static int child_main(int argc, char **argv) {
  return fk_child_main(argc, argv) == 0 ? 0 : 64;
}

static unsigned seed = 4242;

/* Holders killed at random moments. */
static void kill9(fk_mode mode) {
  fk.sem = PERMITS;
  int fd = fk_begin("sem-kill9", mode);
  fk_kill9_faults(fd, &seed);
  fk_finish(fd, "sem-kill9", 0);
  fk.sem = 0;
}

/* Holders stopped for twice their lease: their permits go to others;
 * resumed, each is told (its check or its release says RLOCK_ELOST). */
static void sigstop(fk_mode mode) {
  fk.sem = PERMITS;
  int fd = fk_begin("sem-sigstop", mode);
  int stale = fk_sigstop_faults(fd, &seed);
  rt_verdict v = fk_finish(fd, "sem-sigstop", 0);
  assert_true(stale > 0);
  assert_true(v.lost >= stale); /* every stale holder was told */
  fk.sem = 0;
}

/* The semaphore behind Sentinel, failed over every 0.3-0.6 s: a permit
 * the new master never heard of is found gone by its holder's watchdog,
 * and a holder beside three others must have been told. Each failover is
 * settled (rt_sentinel_failover_settled: the old master made the new
 * one's replica at once, as the sentinels do 10 s later), so each one
 * promotes a replica of the master: with the bare failover, the second
 * one and every later one switched between two masters that never
 * replicated each other, whose holders no client can tell anything (a
 * holder released on the master it was granted by, which said yes, while
 * another took the same permit on the other). The workers finish the
 * round the last failover caught before they are stopped. */
static void sentinel_failover(fk_mode mode) {
  fk.sem = PERMITS;
  rt_sentinel_group *g = rt_sentinel_start("semfaultmaster", 1, 3);
  fk.lock_url = rt_sentinel_url(g);
  int fd = fk_begin("sem-sentinel-failover", mode);
  int switches = 0;
  off_t last = 0; /* the history's size once the latest switch was seen */
  for (int64_t t0 = rt_now_ms(); fk_running(t0); switches++) {
    rt_sleep_ms(300 + rand_r(&seed) % 300);
    rt_history_add(fd, -1, -1, RT_EV_FAULT, 'F', 0, 0);
    rt_sentinel_failover_settled(g, rt_scaled_ms(30000));
    last = fk_history_size();
  }
  fk_wait_rounds_done(last);
  rt_verdict v = fk_finish(fd, "sem-sentinel-failover", 0);
  fk.lock_url = NULL;
  rt_sentinel_free(g);
  assert_true(switches > 0 && v.acquisitions > 0);
  fk.sem = 0;
}

FK_BOTH_DRIVERS(kill9)
FK_BOTH_DRIVERS(sigstop)
FK_BOTH_DRIVERS(sentinel_failover)

/* A record of worker `w` on semaphore 0 at time `t` (us). */
static void put(int fd, int64_t t, int w, rt_ev ev) {
  rt_record r = {t, w, 0, (int32_t)ev, 0, 0, 0, 0};
  assert_int_equal(write(fd, &r, sizeof r), (ssize_t)sizeof r);
}

/* The judge itself: four holders of a three-permit semaphore at once is a
 * violation; the same with the fourth told it lost its permit is not. */
static void test_checker(void **state) {
  (void)state;
  char path[512];
  fx_tmp_path(path, sizeof path, "sem-checker.history");
  for (int told = 0; told < 2; told++) {
    unlink(path);
    int fd = rt_history_open(path);
    int64_t t = 1000; /* times of its own: one record a microsecond */
    for (int w = 0; w < 4; w++)
      put(fd, t++, w, RT_EV_ACQUIRED);
    if (told)
      put(fd, t++, 0, RT_EV_LOST);
    for (int w = 0; w < 4; w++)
      put(fd, t++, w, RT_EV_RELEASING);
    close(fd);
    rt_verdict v = rt_history_check_n(path, -1, 1000, PERMITS);
    assert_int_equal(v.overlaps, told ? 0 : 1);
    assert_int_equal(v.fenced_overlaps, told ? 1 : 0);
    v = rt_history_check_n(path, -1, 1000, 4); /* four permits: fine */
    assert_int_equal(v.overlaps + v.fenced_overlaps, 0);
  }
}

static const struct CMUnitTest tests_of_faults[] = {
    cmocka_unit_test(test_checker),
    FK_CASES(kill9),
    FK_CASES(sigstop),
    FK_CASES(sentinel_failover),
};

FX_MAIN(tests_of_faults, fx_setup, fx_teardown, child_main)
