/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: rlock over TLS (rediss://) against redis-server's own TLS
 * port, with certificates the harness makes with the openssl command.
 * Locks, wake-ups, the watchdog and RedLock work over TLS; a wrong CA, an
 * expired certificate, a name mismatch, a plain-text server behind
 * rediss:// and a TLS server behind redis:// each fail with a clear
 * message within the connect timeout; a server that requires client
 * certificates gets one; the CLI takes the TLS files and a password that
 * stays out of its command line and output. A lock, its waiter and the
 * watchdog over TLS, and a refused certificate that ends a wait at once,
 * run on every driver (drivers.h): a loop client's handshakes run on its
 * loop. */
#include "drivers.h"

#include <stdatomic.h>
#include <sys/wait.h>

#include "rt_cluster.h"
#include "rt_sentinel.h"
#include "rt_tls.h"

#define CONNECT_MS 1000

static rt_tls certs;
static rt_server *tls_srv[3]; /* plain port for the harness, + a TLS port */
static int tls_port[3];
static rt_server *mtls_srv; /* requires client certificates */
static int mtls_port;

/* The servers, made once for every driver's group. */
static int setup(void) {
  if (tls_srv[0] != NULL)
    return 0;
  rt_tls_make(&certs);
  for (int i = 0; i < 3; i++)
    tls_srv[i] = rt_tls_server_start(&certs, &tls_port[i], "no");
  mtls_srv = rt_tls_server_start(&certs, &mtls_port, "yes");
  srv = tls_srv[0];
  return 0;
}

static void teardown(void) {
  for (int i = 0; i < 3; i++)
    rt_server_free(tls_srv[i]);
  rt_server_free(mtls_srv);
  rt_tls_remove(&certs);
}

/* "rediss://127.0.0.1:PORT?tls_ca=CA" plus `extra` parameters. */
static const char *tls_url(char *buf, size_t size, int port, const char *ca,
                           const char *extra) {
  snprintf(buf, size, "rediss://127.0.0.1:%d?tls_ca=%s%s", port, ca, extra);
  return buf;
}

/* A client of the running driver (a blocking one in the cases that run
 * on it alone). */
static rlock_client *client_for(const char *url, int64_t watchdog) {
  rlock_config *cfg = fx_config(url, watchdog, NULL, NULL);
  OK(rlock_config_set_connect_timeout_ms(cfg, CONNECT_MS));
  rlock_client *c = dk_client_cfg(cfg);
  rlock_config_free(cfg);
  return c;
}

static rlock_client *tls_client(int i, int64_t watchdog) {
  char url[600];
  return client_for(tls_url(url, sizeof url, tls_port[i], certs.ca, ""),
                    watchdog);
}

/* A channel with a subscriber on `s`, classic or sharded. */
typedef struct sub_wait {
  rt_server *s;
  const char *channel;
} sub_wait;

static bool pred_any_subscriber(void *arg, char *why, size_t cap) {
  sub_wait *w = arg;
  long long n = fx_subscribers_of(w->s, 1, w->channel) +
                fx_subscribers_of(w->s, 0, w->channel);
  snprintf(why, cap, "%lld subscribers of %s", n, w->channel);
  return n > 0;
}

static bool pred_renewed(void *arg, char *why, size_t cap) {
  uint64_t n = dk_renewals(arg);
  snprintf(why, cap, "%llu renewals", (unsigned long long)n);
  return n >= 2;
}

/* A lock, a waiter woken by the unlock message (its subscriber over
 * TLS), and the watchdog's renewals, all over TLS. */
static void test_lock_wait_watchdog(void **state) {
  (void)state;
  rlock_client *holder = tls_client(0, 600), *wc = tls_client(0, 0);
  rlock_lock *l = fx_lock(holder, "tls:lock");
  uint64_t me = dk_me();
  OK(dk_acquire(l, me, 0, RLOCK_LEASE_WATCHDOG));
  OK(dk_acquire(l, me, 0, RLOCK_LEASE_WATCHDOG));
  dk_wait(pred_renewed, holder, 5000, "two renewals");
  ASSERT_RANGE(rt_cmd_int(srv, "PTTL tls:lock"), 1, 600);
  rlock_lock *lw = fx_lock(wc, "tls:lock");
  uint64_t waiter = rlock_owner_new();
  dk_op w;
  dk_acquire_start(&w, lw, waiter, RLOCK_WAIT_FOREVER, RLOCK_LEASE_WATCHDOG);
  dk_wait_subscribers(srv, "redisson_lock__channel:{tls:lock}", 1,
                      "the waiter's subscription (over TLS)");
  OK(dk_release(l, me));
  OK(dk_release(l, me));
  OK(dk_op_wait(&w, 10000, "the waiter woken over TLS"));
  OK(dk_release(lw, waiter));
  assert_int_equal(rt_cmd_int(srv, "EXISTS tls:lock"), 0);
  /* Every connection of both clients was TLS: none reached the plain
   * port's clients but the harness's own. */
  rlock_stats st;
  OK(rlock_client_stats(wc, &st, sizeof st));
  assert_true(st.connects >= 2); /* a command connection, the subscriber */
  assert_int_equal(st.disconnects, 0);
  rlock_lock_free(lw);
  DK_FREE((l), (holder));
  dk_free(wc);
}

static void test_redlock(void **state) {
  (void)state;
  rlock_client *c[3];
  rlock_lock *m[3];
  for (int i = 0; i < 3; i++) {
    c[i] = tls_client(i, 0);
    m[i] = fx_lock(c[i], "tls:red");
  }
  rlock_redlock *rl;
  OK(rlock_redlock_new(&rl, m, 3));
  rlock_redlock_result *res = NULL;
  OK(rlock_redlock_try_acquire(&res, rl, 0, 10000));
  assert_true(rlock_redlock_result_validity_ms(res) > 0);
  rlock_redlock_result_free(res);
  for (int i = 0; i < 3; i++)
    assert_int_equal(rt_cmd_int(tls_srv[i], "EXISTS tls:red"), 1);
  OK(rlock_redlock_release(rl));
  for (int i = 0; i < 3; i++)
    assert_int_equal(rt_cmd_int(tls_srv[i], "EXISTS tls:red"), 0);
  rlock_redlock_free(rl);
  for (int i = 0; i < 3; i++) {
    FX_FREE((m[i]), (c[i]));
  }
}

/* PING through a client for `url`: the status, its message in `msg`, and
 * how long it took. */
static int ping(const char *url, char *msg, size_t size, int64_t *ms) {
  rlock_client *c = client_for(url, 0);
  int64_t t0 = rt_now_ms();
  int rc = rlock_client_ping(c, NULL);
  *ms = rt_now_ms() - t0;
  snprintf(msg, size, "%s", rlock_error_last()->message);
  rlock_client_free(c);
  return rc;
}

/* A failure within the connect timeout, naming what is wrong. */
static void expect_refused(const char *url, const char *what) {
  char msg[512];
  int64_t ms;
  int rc = ping(url, msg, sizeof msg, &ms);
  if (rc == RLOCK_OK || strstr(msg, what) == NULL)
    fail_msg("%s: status %d, message '%s', wanted '%s'", url, rc, msg, what);
  assert_true(rc == RLOCK_EIO || rc == RLOCK_ETIMEOUT);
  ASSERT_BETWEEN(ms, 0, CONNECT_MS + 500);
}

/* A certificate refused is final: an acquisition that waits fails at
 * once too (within `bound_ms` and a margin), instead of trying again for
 * its whole wait. Its status. */
static int expect_refused_waiting(const char *url, const char *what,
                                  int64_t bound_ms) {
  rlock_client *c = client_for(url, 0);
  rlock_lock *l;
  OK(rlock_lock_new(&l, c, "tls:refused"));
  int64_t t0 = rt_now_ms();
  int rc = dk_acquire(l, dk_me(), 20000, 1000);
  int64_t ms = rt_now_ms() - t0;
  if ((rc != RLOCK_EIO && rc != RLOCK_ETIMEOUT) ||
      strstr(rlock_error_last()->message, what) == NULL)
    fail_msg("%s: status %d, message '%s', wanted '%s'", url, rc,
             rlock_error_last()->message, what);
  ASSERT_BETWEEN(ms, 0, bound_ms + 500);
  DK_FREE((l), (c));
  return rc;
}

static void test_verify_failures(void **state) {
  (void)state;
  char url[600];
  expect_refused(tls_url(url, sizeof url, tls_port[0], certs.other_ca, ""),
                 "certificate verify failed");
  expect_refused(tls_url(url, sizeof url, tls_port[0], certs.ca,
                         "&tls_server_name=other.example"),
                 "hostname mismatch");
  /* A plain-text server behind rediss://, a TLS one behind redis://. */
  expect_refused(tls_url(url, sizeof url, rt_server_port(srv), certs.ca, ""),
                 "plain-text port");
  snprintf(url, sizeof url, "redis://127.0.0.1:%d", tls_port[0]);
  expect_refused(url, "TLS port");
  /* Only asked for explicitly: no verification at all. */
  char msg[512];
  int64_t ms;
  OK(ping(tls_url(url, sizeof url, tls_port[0], certs.other_ca,
                  "&tls_insecure=yes"),
          msg, sizeof msg, &ms));
}

/* A refused certificate and a plain-text server behind rediss:// end an
 * acquisition's wait at once (a loop client's refused certificate is
 * RLOCK_EIO). */
static void test_refused_ends_a_wait(void **state) {
  (void)state;
  char url[600];
  int rc = expect_refused_waiting(
      tls_url(url, sizeof url, tls_port[0], certs.other_ca, ""),
      "certificate verify failed", CONNECT_MS);
  if (dk_loop())
    RC(rc, RLOCK_EIO);
  /* It never answers the hello: final too, not an outage to ride out,
   * within the connect timeout on every driver (which bounds the TLS
   * handshake too, not the command timeout, 2 s). */
  expect_refused_waiting(
      tls_url(url, sizeof url, rt_server_port(srv), certs.ca, ""),
      "plain-text port", CONNECT_MS);
}

/* Threads of one client making their first connections at once: every
 * handshake verifies the server's chain against the same CA certificates,
 * which OpenSSL caches into on first use (a data race under TSan when two
 * handshakes did that at once). */
#define HANDSHAKERS 6

typedef struct handshaker {
  rlock_client *c;
  pthread_barrier_t *go;
  int rc;
} handshaker;

static void *handshake_now(void *arg) {
  handshaker *h = arg;
  pthread_barrier_wait(h->go);
  h->rc = rlock_client_ping(h->c, NULL);
  return NULL;
}

static void test_concurrent_handshakes(void **state) {
  (void)state;
  for (int round = 0; round < 3; round++) {
    rlock_client *c = tls_client(0, 0);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, HANDSHAKERS);
    pthread_t t[HANDSHAKERS];
    handshaker h[HANDSHAKERS];
    for (int i = 0; i < HANDSHAKERS; i++) {
      h[i] = (handshaker){c, &go, -1};
      assert_int_equal(pthread_create(&t[i], NULL, handshake_now, &h[i]), 0);
    }
    for (int i = 0; i < HANDSHAKERS; i++) {
      pthread_join(t[i], NULL);
      assert_int_equal(h[i].rc, RLOCK_OK);
    }
    pthread_barrier_destroy(&go);
    rlock_client_free(c);
  }
}

static void test_expired_certificate(void **state) {
  (void)state;
  rt_cmd_ok(tls_srv[1], "CONFIG SET tls-cert-file %s", certs.expired_crt);
  char url[600];
  expect_refused(tls_url(url, sizeof url, tls_port[1], certs.ca, ""),
                 "certificate has expired");
  rt_cmd_ok(tls_srv[1], "CONFIG SET tls-cert-file %s", certs.server_crt);
  char msg[512];
  int64_t ms;
  OK(ping(url, msg, sizeof msg, &ms));
  /* A certificate for another name only. */
  rt_cmd_ok(tls_srv[1], "CONFIG SET tls-cert-file %s", certs.other_name_crt);
  expect_refused(url, "IP address mismatch"); /* we asked for 127.0.0.1 */
  rt_cmd_ok(tls_srv[1], "CONFIG SET tls-cert-file %s", certs.server_crt);
}

/* tls-auth-clients yes: refused without a certificate (TLS 1.3 says so at
 * the first read), served with one. */
static void test_client_certificate(void **state) {
  (void)state;
  char url[1600], msg[512];
  int64_t ms;
  tls_url(url, sizeof url, mtls_port, certs.ca, "");
  int rc = ping(url, msg, sizeof msg, &ms);
  if (rc == RLOCK_OK || strstr(msg, "certificate") == NULL)
    fail_msg("without a client certificate: %d '%s'", rc, msg);
  ASSERT_BETWEEN(ms, 0, CONNECT_MS + 2000);
  char extra[700];
  snprintf(extra, sizeof extra, "&tls_cert=%s&tls_key=%s", certs.client_crt,
           certs.client_key);
  tls_url(url, sizeof url, mtls_port, certs.ca, extra);
  OK(ping(url, msg, sizeof msg, &ms));
  /* The setters do the same as the URL's parameters. */
  rlock_config *cfg;
  rlock_client *c;
  OK(rlock_config_new(&cfg));
  snprintf(url, sizeof url, "rediss://127.0.0.1:%d", mtls_port);
  OK(rlock_config_set_url(cfg, url));
  OK(rlock_config_set_tls_ca(cfg, certs.ca, NULL));
  OK(rlock_config_set_tls_cert(cfg, certs.client_crt, certs.client_key));
  OK(rlock_client_new(&c, cfg));
  rlock_config_free(cfg);
  rlock_lock *l = fx_lock(c, "tls:mtls");
  OK(rlock_lock_acquire(l));
  OK(rlock_lock_release(l));
  FX_FREE((l), (c));
}

/* Files and options that cannot work fail at rlock_client_new. */
static void test_config_errors(void **state) {
  (void)state;
  rlock_config *cfg;
  rlock_client *c = NULL;
  char url[600];
  OK(rlock_config_new(&cfg));
  OK(rlock_config_set_url(
      cfg, tls_url(url, sizeof url, tls_port[0], "/nonexistent/ca.pem", "")));
  RC(rlock_client_new(&c, cfg), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "/nonexistent/ca.pem"));
  snprintf(url, sizeof url, "redis://127.0.0.1:%d", rt_server_port(srv));
  OK(rlock_config_set_url(cfg, url));
  OK(rlock_config_set_tls_ca(cfg, certs.ca, NULL));
  RC(rlock_client_new(&c, cfg), RLOCK_EINVAL);
  assert_non_null(strstr(rlock_error_last()->message, "rediss://"));
  RC(rlock_config_set_tls_cert(cfg, certs.client_crt, NULL), RLOCK_EINVAL);
  RC(rlock_config_set_tls_insecure(cfg, 2), RLOCK_EINVAL);
  RC(rlock_config_set_tls_ca(cfg, "", NULL), RLOCK_EINVAL);
  RC(rlock_config_set_password(cfg, "alice", NULL), RLOCK_EINVAL);
  OK(rlock_config_set_tls_ca(cfg, NULL, NULL)); /* back to none */
  OK(rlock_client_new(&c, cfg));
  rlock_client_free(c);
  /* A key that does not match its certificate. */
  OK(rlock_config_set_url(cfg,
                          tls_url(url, sizeof url, tls_port[0], certs.ca, "")));
  OK(rlock_config_set_tls_cert(cfg, certs.client_crt, certs.server_key));
  RC(rlock_client_new(&c, cfg), RLOCK_EINVAL);
  if (strstr(rlock_error_last()->message, certs.server_key) == NULL)
    fail_msg("mismatched key: '%s'", rlock_error_last()->message);
  rlock_config_free(cfg);
}

/* Run the CLI with `args` (a shell word list), its output in out. */
static int run_cli(char *out, size_t size, const char *env, const char *args) {
  char cmd[2048], file[400];
  snprintf(file, sizeof file, "%s/cli.out", certs.dir);
  const char *bindir = getenv("RLOCK_TEST_BINDIR");
  snprintf(cmd, sizeof cmd, "%s %s/rlock %s >%s 2>&1", env ? env : "",
           bindir ? bindir : ".", args, file);
  int st = system(cmd);
  snprintf(out, size, "%s", fx_slurp(file));
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The CLI over TLS with global options, and a password given without the
 * command line that never shows in its output. */
static void test_cli(void **state) {
  (void)state;
  rt_cmd_ok(srv, "ACL SETUSER alice on >s3cret-pw ~* &* +@all");
  char args[1500], out[4096], pwfile[400];
  snprintf(pwfile, sizeof pwfile, "%s/pw", certs.dir);
  FILE *f = fopen(pwfile, "w");
  assert_non_null(f);
  fputs("s3cret-pw\n", f);
  fclose(f);
  snprintf(args, sizeof args,
           "-u rediss://127.0.0.1:%d --tls-ca %s --user "
           "alice --password-file %s exec tls:cli -- true",
           tls_port[0], certs.ca, pwfile);
  int st = run_cli(out, sizeof out, NULL, args);
  if (st != 0)
    fail_msg("exec over TLS with a password file: %d: %s", st, out);
  snprintf(args, sizeof args,
           "-u rediss://127.0.0.1:%d --tls-ca %s --user "
           "alice status tls:cli",
           tls_port[0], certs.ca_dir); /* a CA dir */
  st = run_cli(out, sizeof out, "RLOCK_PASSWORD=s3cret-pw", args);
  if (st != 0)
    fail_msg("status over TLS with a CA directory: %d: %s", st, out);
  assert_null(strstr(out, "s3cret"));
  /* Refused: the wrong password is not shown either. */
  st = run_cli(out, sizeof out, "RLOCK_PASSWORD=wrong-s3cret", args);
  assert_int_equal(st, 69);
  assert_null(strstr(out, "s3cret"));
  assert_non_null(strstr(out, "AUTH"));
  /* A URL with the password in it is shown without it. */
  snprintf(args, sizeof args,
           "-u 'rediss://alice:s3cret-pw@127.0.0.1:99999' "
           "status tls:cli");
  assert_int_equal(run_cli(out, sizeof out, NULL, args), 64);
  assert_null(strstr(out, "s3cret"));
  /* Wrong CA through the CLI: one line, exit 69. */
  snprintf(args, sizeof args,
           "-u rediss://127.0.0.1:%d --tls-ca %s status "
           "tls:cli",
           tls_port[0], certs.other_ca);
  assert_int_equal(run_cli(out, sizeof out, NULL, args), 69);
  assert_non_null(strstr(out, "certificate verify failed"));
  assert_int_equal(rt_cmd_int(srv, "ACL DELUSER alice"), 1);
}

/* rlock --tls-server-name NAME: the name the certificate must carry, for
 * a server reached by address. A certificate for other.example only,
 * reached as 127.0.0.1, is refused without it and accepted with it; a
 * name the certificate does not carry is refused; an empty name, or one
 * for a URL without TLS, is a usage error. */
static void test_cli_tls_server_name(void **state) {
  (void)state;
  char args[1500], out[4096];
  int port = tls_port[1];
  rt_cmd_ok(tls_srv[1], "CONFIG SET tls-cert-file %s", certs.other_name_crt);
  snprintf(args, sizeof args,
           "-u rediss://127.0.0.1:%d --tls-ca %s status tls:sni", port,
           certs.ca);
  assert_int_equal(run_cli(out, sizeof out, NULL, args), 69);
  if (strstr(out, "IP address mismatch") == NULL)
    fail_msg("without --tls-server-name: '%s'", out);
  snprintf(args, sizeof args,
           "-u rediss://127.0.0.1:%d --tls-ca %s --tls-server-name "
           "other.example exec tls:sni -- true",
           port, certs.ca);
  int st = run_cli(out, sizeof out, NULL, args);
  if (st != 0)
    fail_msg("exec with --tls-server-name other.example: %d: %s", st, out);
  snprintf(args, sizeof args,
           "-u rediss://127.0.0.1:%d --tls-ca %s --tls-server-name "
           "other.example status tls:sni",
           port, certs.ca);
  st = run_cli(out, sizeof out, NULL, args);
  if (st != 0 || strstr(out, "tls:sni: free") == NULL)
    fail_msg("status with --tls-server-name other.example: %d: %s", st, out);
  rt_cmd_ok(tls_srv[1], "CONFIG SET tls-cert-file %s", certs.server_crt);
  /* The server's own certificate does not name other.example. */
  assert_int_equal(run_cli(out, sizeof out, NULL, args), 69);
  if (strstr(out, "hostname mismatch") == NULL)
    fail_msg("a name the certificate lacks: '%s'", out);
  snprintf(args, sizeof args,
           "-u rediss://127.0.0.1:%d --tls-ca %s --tls-server-name '' "
           "status tls:sni",
           port, certs.ca);
  assert_int_equal(run_cli(out, sizeof out, NULL, args), 64);
  assert_non_null(strstr(out, "TLS server name must not be empty"));
  snprintf(args, sizeof args,
           "-u redis://127.0.0.1:%d --tls-server-name localhost status "
           "tls:sni",
           rt_server_port(tls_srv[1]));
  assert_int_equal(run_cli(out, sizeof out, NULL, args), 64);
  assert_non_null(strstr(out, "speaks no TLS"));
}

/* A cluster whose nodes speak TLS to clients (tls-cluster yes), reached
 * through one TLS seed: the map's TLS ports, a lock on every master, and a
 * waiter woken over the sharded subscriber. */
static void test_cluster(void **state) {
  (void)state;
  rt_cluster *cl = rt_cluster_start_tls(3, 0, &certs);
  char url[700];
  snprintf(url, sizeof url, "rediss-cluster://127.0.0.1:%d?tls_ca=%s",
           rt_cluster_tls_port(cl, 0), certs.ca);
  rlock_client *c = client_for(url, 0), *wc = client_for(url, 0);
  for (int m = 0; m < 3; m++) {
    char key[64];
    rt_cluster_key_on(cl, m, "tlsc:", key, sizeof key);
    rlock_lock *l = fx_lock(c, key);
    OK(rlock_lock_acquire_lease(l, 30000));
    assert_int_equal(rt_cmd_int(rt_cluster_node(cl, m), "EXISTS %s", key), 1);
    if (m == 2) { /* a waiter on the last, woken by the release */
      fx_waiter w;
      fx_waiter_start(&w, fx_lock(wc, key));
      char ch[128];
      snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", key);
      rt_wait_until(pred_any_subscriber,
                    &(sub_wait){rt_cluster_node(cl, m), ch}, rt_scaled_ms(5000),
                    "the waiter's subscription");
      OK(rlock_lock_release(l));
      fx_waiter_join(&w);
      OK(w.rc);
      rlock_lock_free(w.l);
    } else {
      OK(rlock_lock_release(l));
    }
    assert_int_equal(rt_cmd_int(rt_cluster_node(cl, m), "EXISTS %s", key), 0);
    rlock_lock_free(l);
  }
  rlock_client_free(c);
  rlock_client_free(wc);
  rt_cluster_free(cl);
}

/* Sentinels reached over TLS (sentinel_tls=yes; the data servers in plain
 * text): discovery and the +switch-master watch both go over TLS, so a
 * switch is followed. */
static void test_sentinel(void **state) {
  (void)state;
  rt_sentinel_group *g = rt_sentinel_start_tls("tlsmaster", 1, 3, &certs);
  rlock_client *c = client_for(rt_sentinel_tls_url(g), 0);
  rlock_lock *l = fx_lock(c, "tls:sentinel");
  OK(rlock_lock_acquire(l));
  assert_int_equal(rt_cmd_int(rt_sentinel_master(g), "EXISTS tls:sentinel"), 1);
  OK(rlock_lock_release(l));
  rt_sentinel_failover(g, rt_scaled_ms(30000));
  rt_server *nm = rt_sentinel_master(g);
  /* Followed through the watch (or a refresh): a lock lands on the new
   * master. */
  int64_t t0 = rt_now_ms();
  for (;;) {
    int rc = rlock_lock_try_acquire(l, 0, 5000);
    if (rc == RLOCK_OK && rt_cmd_int(nm, "EXISTS tls:sentinel") == 1)
      break;
    if (rc == RLOCK_OK)
      OK(rlock_lock_release(l));
    if (rt_now_ms() - t0 > rt_scaled_ms(10000))
      fail_msg("no lock on the new master within 10 s (last %d: %s)", rc,
               rlock_error_last()->message);
    rt_sleep_ms(50);
  }
  OK(rlock_lock_release(l));
  FX_FREE((l), (c));
  rt_sentinel_free(g);
}

static const dk_case cases[] = {
    DK_CASE(test_lock_wait_watchdog, DK_ALL),
    DK_CASE(test_redlock, DK_BLOCK),
    DK_CASE(test_verify_failures, DK_BLOCK),
    DK_CASE(test_refused_ends_a_wait, DK_ALL),
    DK_CASE(test_concurrent_handshakes, DK_BLOCK),
    DK_CASE(test_expired_certificate, DK_BLOCK),
    DK_CASE(test_client_certificate, DK_BLOCK),
    DK_CASE(test_config_errors, DK_BLOCK),
    DK_CASE(test_cli, DK_BLOCK),
    DK_CASE(test_cli_tls_server_name, DK_BLOCK),
    DK_CASE(test_cluster, DK_BLOCK),
    DK_CASE(test_sentinel, DK_BLOCK),
};

int main(void) {
  int failed = DK_RUN(cases, setup, NULL);
  teardown();
  return failed;
}
