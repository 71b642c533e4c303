/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration: rlock_client_list_locks and `rlock list` (and
 * rlock_client_list_syncs and `rlock top`'s semaphores and latches) on a single
 * server, a cluster (every master) and Sentinel, with every lock kind held
 * (reentrant, fair with queued waiters, read-write read and write,
 * fenced) next to 10,000 keys that are not locks, of every type.
 *
 * What must hold: exactly the held locks are listed, each once, with its
 * kind, holders, mode, TTL, queue length and node; every other key is left
 * byte-identical (DUMP and its absolute expiry, PEXPIRETIME, before and
 * after), and keys that are not hashes with an expiry are not even read
 * (with the LFU policy and lfu-log-factor 0 every read access raises
 * OBJECT FREQ by one, so an unchanged FREQ proves no access). The server
 * is never blocked: SLOWLOG, set to log every command during the listings,
 * shows that list walked each server with SCAN ... COUNT 100 TYPE hash
 * in several steps, never ran KEYS, sent at most a SCAN step's keys to
 * one script call, and that its commands ran no longer than
 * LIST_CMD_MAX_US on the server, but for one in a hundred (and one).
 * That bound is server-side time, not inflated by the test's or the
 * CLI's scheduling; list's commands take well under 1 ms, so 25 ms
 * leaves room for the server being preempted, which on a loaded 2-core
 * machine can still stretch a command or two (a design that runs long
 * does so on every step, not on one in a hundred); the structural checks
 * (COUNT, steps, batch size, no KEYS) are what stop a blocking design: one
 * script over all 10,000 keys takes about 10 ms here, KEYS about 1.5 ms. */
#include "fixture.h"

#include "alloc.h"
#include "rt_cluster.h"
#include "rt_sentinel.h"
#include "script.h"

#define NPLAIN 10000 /* keys of every type, that are not locks */
#define NSPECIAL 5   /* hashes with an expiry that are not listed */
#define NKEYS (NPLAIN + NSPECIAL)
#define LEASE_MS 600000
#define LIST_CMD_MAX_US 25000
#define MAX_MASTERS 8

/* ---- the topology under test ------------------------------------------ */

typedef struct topo {
  const char *url;
  int nmasters;
  rt_server *masters[MAX_MASTERS];
  unsigned char slot_master[RT_CLUSTER_SLOTS]; /* index into masters */
} topo;

static topo T;

static void topo_one(const char *url, rt_server *master) {
  memset(&T, 0, sizeof T);
  T.url = url;
  T.nmasters = 1;
  T.masters[0] = master;
}

/* Every master of the cluster, and which serves each slot (CLUSTER
 * SLOTS). */
static void topo_cluster(rt_cluster *c) {
  memset(&T, 0, sizeof T);
  T.url = rt_cluster_url(c);
  int index[64];
  for (int i = 0; i < rt_cluster_size(c); i++) {
    index[i] = -1;
    if (rt_cluster_is_master(c, i)) {
      index[i] = T.nmasters;
      T.masters[T.nmasters++] = rt_cluster_node(c, i);
    }
  }
  redisReply *r = rt_cmd(T.masters[0], "CLUSTER SLOTS");
  assert_int_equal(r->type, REDIS_REPLY_ARRAY);
  for (size_t i = 0; i < r->elements; i++) {
    redisReply *e = r->element[i];
    int node =
        rt_cluster_node_by_port(c, (int)e->element[2]->element[1]->integer);
    assert_true(node >= 0 && index[node] >= 0);
    for (long long s = e->element[0]->integer; s <= e->element[1]->integer; s++)
      T.slot_master[s] = (unsigned char)index[node];
  }
  freeReplyObject(r);
}

static int master_of(const char *key) {
  return T.nmasters == 1 ? 0 : T.slot_master[rt_cluster_slot_of(key)];
}

static rt_server *server_of(const char *key) {
  return T.masters[master_of(key)];
}

/* ---- pipelines, one connection per master -------------------------------- */

typedef struct pipeline {
  redisContext *ctx[MAX_MASTERS];
} pipeline;

static void pipe_open(pipeline *p) {
  for (int m = 0; m < T.nmasters; m++)
    p->ctx[m] = rt_server_connect(T.masters[m]);
}

static void pipe_close(pipeline *p) {
  for (int m = 0; m < T.nmasters; m++)
    redisFree(p->ctx[m]);
}

static void pipe_argv(pipeline *p, const char *key, int argc,
                      const char **argv) {
  if (redisAppendCommandArgv(p->ctx[master_of(key)], argc, argv, NULL) !=
      REDIS_OK)
    fail_msg("cannot queue a command for %s", key);
}

static void pipe_cmd(pipeline *p, const char *key, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = redisvAppendCommand(p->ctx[master_of(key)], fmt, ap);
  va_end(ap);
  if (rc != REDIS_OK)
    fail_msg("cannot queue a command for %s", key);
}

/* The next reply for `key`'s master (replies come back in order). */
static redisReply *pipe_reply(pipeline *p, const char *key) {
  void *r = NULL;
  if (redisGetReply(p->ctx[master_of(key)], &r) != REDIS_OK || r == NULL)
    fail_msg("no reply for %s", key);
  redisReply *reply = r;
  if (reply->type == REDIS_REPLY_ERROR)
    fail_msg("%s: %s", key, reply->str);
  return reply;
}

/* ---- the keys that are not locks ---------------------------------------- */

typedef struct nonlock {
  char name[24];
  int may_read; /* a hash with an expiry: list reads it to check it */
  char *dump;
  size_t dump_len;
  long long expire, freq;
} nonlock;

static nonlock keys[NKEYS];

#define FOREIGN "00000000-0000-4000-8000-000000000000:1"

/* Queue the commands creating key i: types in turn (string, list, set,
 * zset, a hash without expiry shaped like a lock, a hash with a field
 * that is not a count, a stream), every third with an expiry; then the
 * special hashes with an expiry that are not listed. */
static int queue_create(pipeline *p, int i) {
  const char *k = keys[i].name;
  static const char *const special[NSPECIAL] = {
      "HSET %s " FOREIGN " 0",    /* a count of 0 */
      "HSET %s " FOREIGN " 1.5",  /* not an integer */
      "HSET %s mode maybe x:1 1", /* a mode that is not one */
      "HSET %s " FOREIGN " -1",   /* negative */
      NULL,                       /* big: 1500 fields */
  };
  int type = i < NPLAIN ? i % 7 : 7 + (i - NPLAIN);
  int ttl = i >= NPLAIN || type == 5 || (i % 3 == 0 && type != 4);
  keys[i].may_read = ttl && (type == 4 || type >= 5);
  static const char *const plain[7] = {
      "SET %s v",        "RPUSH %s a b c",        "SADD %s a b c",
      "ZADD %s 1 a 2 b", "HSET %s " FOREIGN " 1", "HSET %s f x n 1",
      "XADD %s * f v"};
  if (type < 7) {
    pipe_cmd(p, k, plain[type], k);
  } else if (special[type - 7] != NULL) {
    pipe_cmd(p, k, special[type - 7], k);
  } else {
    static char fields[1500][24];
    const char *argv[2 + 3000] = {"HSET", k};
    for (int f = 0; f < 1500; f++) {
      snprintf(fields[f], sizeof fields[f], "%s%d", "owner:", f);
      argv[2 + 2 * f] = fields[f];
      argv[3 + 2 * f] = "1";
    }
    pipe_argv(p, k, 3002, argv);
  }
  if (ttl)
    pipe_cmd(p, k, "PEXPIRE %s 3600000", k);
  return 1 + ttl;
}

/* Every key read with LFU counting (each access +1, no decay), and
 * SLOWLOG off until the listings. */
static void configure_masters(void) {
  for (int m = 0; m < T.nmasters; m++) {
    rt_cmd_ok(T.masters[m], "CONFIG SET maxmemory-policy allkeys-lfu");
    rt_cmd_ok(T.masters[m], "CONFIG SET lfu-log-factor 0");
    rt_cmd_ok(T.masters[m], "CONFIG SET lfu-decay-time 0");
  }
}

static void create_keys(void) {
  pipeline p;
  int replies[NKEYS];
  pipe_open(&p);
  for (int i = 0; i < NKEYS; i++) {
    snprintf(keys[i].name, sizeof keys[i].name,
             i < NPLAIN ? "nl:%d" : "nl:special%d",
             i < NPLAIN ? i : i - NPLAIN);
    replies[i] = queue_create(&p, i);
  }
  for (int i = 0; i < NKEYS; i++)
    for (int r = 0; r < replies[i]; r++)
      freeReplyObject(pipe_reply(&p, keys[i].name));
  pipe_close(&p);
}

/* DUMP and PEXPIRETIME of every key (DUMP reads it: FREQ is asked
 * after), into `keys` (`save`) or compared with what is there. */
static void snapshot(int save) {
  pipeline p;
  pipe_open(&p);
  for (int i = 0; i < NKEYS; i++) {
    pipe_cmd(&p, keys[i].name, "DUMP %s", keys[i].name);
    pipe_cmd(&p, keys[i].name, "PEXPIRETIME %s", keys[i].name);
    pipe_cmd(&p, keys[i].name, "OBJECT FREQ %s", keys[i].name);
  }
  for (int i = 0; i < NKEYS; i++) {
    nonlock *k = &keys[i];
    redisReply *d = pipe_reply(&p, k->name), *e = pipe_reply(&p, k->name),
               *f = pipe_reply(&p, k->name);
    assert_int_equal(d->type, REDIS_REPLY_STRING);
    if (save) {
      k->dump = malloc(d->len);
      assert_non_null(k->dump);
      memcpy(k->dump, d->str, d->len);
      k->dump_len = d->len;
      k->expire = e->integer;
      k->freq = f->integer + 1; /* the DUMP of the next snapshot */
    } else {
      if (d->len != k->dump_len || memcmp(d->str, k->dump, d->len) != 0)
        fail_msg("key %s changed (DUMP differs)", k->name);
      if (e->integer != k->expire)
        fail_msg("key %s: expiry %lld, was %lld", k->name, e->integer,
                 k->expire);
      if (!k->may_read && f->integer != k->freq)
        fail_msg("key %s was read: OBJECT FREQ %lld, expected %lld", k->name,
                 f->integer, k->freq);
      free(k->dump);
      k->dump = NULL;
    }
    freeReplyObject(d);
    freeReplyObject(e);
    freeReplyObject(f);
  }
  pipe_close(&p);
}

/* ---- the locks ------------------------------------------------------------
 */

typedef struct held {
  rlock_client *c, *w;
  rlock_lock *reentrant, *fair, *fair_w, *read, *write, *fenced;
  uint64_t readers[2];
  fx_waiter waiters[2];
} held;

static void wait_queued(const char *queue, long long n) {
  int64_t t0 = rt_now_ms();
  while (rt_cmd_int(server_of(queue), "LLEN %s", queue) != n) {
    if (rt_now_ms() - t0 > rt_scaled_ms(10000))
      fail_msg("%s never had %lld waiters", queue, n);
    rt_sleep_ms(5);
  }
}

/* Wait for the client's registry record (written by its background
 * thread when it is made; in a cluster on the node of its key). */
static void wait_record(rlock_client *c) {
  rlock_client_record rec;
  int64_t t0 = rt_now_ms();
  int rc;
  while ((rc = rlock_client_whois(c, rlock_client_id(c), &rec)) != 1) {
    if (rc < 0 || rt_now_ms() - t0 > rt_scaled_ms(10000))
      fail_msg("no registry record of %s: %d", rlock_client_id(c), rc);
    rt_sleep_ms(5);
  }
}

static void hold_all(held *h) {
  h->c = fx_client_opts(T.url, 0, NULL, NULL);
  h->w = fx_client_opts(T.url, 0, NULL, NULL);
  wait_record(h->c);
  wait_record(h->w);
  OK(rlock_lock_new(&h->reentrant, h->c, "lk:reentrant"));
  OK(rlock_lock_acquire_lease(h->reentrant, LEASE_MS));
  OK(rlock_lock_acquire_lease(h->reentrant, LEASE_MS));
  OK(rlock_lock_new_fenced(&h->fenced, h->c, "lk:fenced"));
  OK(rlock_lock_acquire_lease(h->fenced, LEASE_MS));
  OK(rlock_lock_new_write(&h->write, h->c, "lk:write"));
  OK(rlock_lock_acquire_lease(h->write, LEASE_MS));
  OK(rlock_lock_new_read(&h->read, h->c, "lk:read"));
  for (int i = 0; i < 2; i++) {
    rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
    o.lease_ms = LEASE_MS;
    o.owner = h->readers[i] = rlock_owner_new();
    OK(rlock_lock_acquire_opts(h->read, &o));
  }
  OK(rlock_lock_new_fair(&h->fair, h->c, "lk:fair"));
  OK(rlock_lock_acquire_lease(h->fair, LEASE_MS));
  OK(rlock_lock_new_fair(&h->fair_w, h->w, "lk:fair"));
  for (int i = 0; i < 2; i++) {
    fx_waiter_start(&h->waiters[i], h->fair_w);
    wait_queued("redisson_lock_queue:{lk:fair}", i + 1);
  }
}

static void release_all(held *h) {
  OK(rlock_lock_release(h->fair));
  for (int i = 0; i < 2; i++)
    OK(fx_waiter_join(&h->waiters[i]));
  OK(rlock_lock_release(h->reentrant));
  OK(rlock_lock_release(h->reentrant));
  OK(rlock_lock_release(h->fenced));
  OK(rlock_lock_release(h->write));
  for (int i = 0; i < 2; i++)
    OK(rlock_lock_release_owner(h->read, h->readers[i]));
  rlock_lock *all[] = {h->reentrant, h->fair,  h->fair_w,
                       h->read,      h->write, h->fenced};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    rlock_lock_free(all[i]);
  rlock_client_free(h->w);
  rlock_client_free(h->c);
}

/* ---- what list reports ------------------------------------------------ */

#define MAX_SEEN 16

typedef struct seen {
  int n;
  struct {
    char name[64], kind[16], mode[8], node[64], owner[80];
    size_t holders, queue_count, queue_length;
    int64_t ttl, count[4];
  } e[MAX_SEEN];
  int stop_after; /* 0: never */
} seen;

static int record(const char *name, const char *kind,
                  const rlock_lock_info *info, void *arg) {
  seen *s = arg;
  if (s->n == MAX_SEEN)
    fail_msg("more than %d locks listed (now %s)", MAX_SEEN, name);
  const char *mode = rlock_lock_info_mode(info);
  snprintf(s->e[s->n].name, sizeof s->e[0].name, "%s", name);
  snprintf(s->e[s->n].kind, sizeof s->e[0].kind, "%s", kind);
  snprintf(s->e[s->n].mode, sizeof s->e[0].mode, "%s", mode ? mode : "");
  snprintf(s->e[s->n].node, sizeof s->e[0].node, "%s",
           rlock_lock_info_node(info));
  snprintf(s->e[s->n].owner, sizeof s->e[0].owner, "%s",
           rlock_lock_info_holder_count(info) > 0
               ? rlock_lock_info_holder_owner(info, 0)
               : "");
  s->e[s->n].holders = rlock_lock_info_holder_count(info);
  for (size_t i = 0; i < 4; i++)
    s->e[s->n].count[i] = rlock_lock_info_holder_holds(info, i);
  s->e[s->n].queue_count = rlock_lock_info_queue_count(info);
  s->e[s->n].queue_length = rlock_lock_info_queue_length(info);
  s->e[s->n].ttl = rlock_lock_info_ttl_ms(info);
  s->n++;
  return s->stop_after != 0 && s->n >= s->stop_after;
}

static int find(const seen *s, const char *name) {
  int at = -1;
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->e[i].name, name) == 0) {
      if (at >= 0)
        fail_msg("%s listed twice", name);
      at = i;
    }
  if (at < 0)
    fail_msg("%s not listed", name);
  return at;
}

/* The lock `name` as listed: its kind, mode, holders and their counts,
 * queue, TTL and the master serving it. */
static void expect(const seen *s, const char *name, const char *kind,
                   const char *mode, size_t holders, int64_t count,
                   size_t queued) {
  int i = find(s, name);
  char node[64];
  snprintf(node, sizeof node, "127.0.0.1:%d", rt_server_port(server_of(name)));
  if (strcmp(s->e[i].kind, kind) != 0 || strcmp(s->e[i].mode, mode) != 0)
    fail_msg("%s listed as %s '%s', expected %s '%s'", name, s->e[i].kind,
             s->e[i].mode, kind, mode);
  assert_int_equal(s->e[i].holders, holders);
  for (size_t h = 0; h < holders; h++)
    assert_int_equal(s->e[i].count[h], count);
  assert_int_equal(s->e[i].queue_length, queued);
  assert_int_equal(s->e[i].queue_count, queued); /* < RLOCK_LIST_WAITERS */
  ASSERT_RANGE(s->e[i].ttl, 1, LEASE_MS);
  assert_string_equal(s->e[i].node, node);
}

static void check_all_listed(const seen *s) {
  if (s->n != 5)
    fail_msg("%d locks listed, expected the 5 held", s->n);
  expect(s, "lk:reentrant", "reentrant", "", 1, 2, 0);
  expect(s, "lk:fair", "fair", "", 1, 1, 2);
  expect(s, "lk:read", "read-write", "read", 2, 1, 0);
  expect(s, "lk:write", "read-write", "write", 1, 1, 0);
  expect(s, "lk:fenced", "fenced", "", 1, 1, 0);
  const char *w = s->e[find(s, "lk:write")].owner;
  assert_true(strlen(w) > 6 && strcmp(w + strlen(w) - 6, ":write") == 0);
}

/* ---- the CLI --------------------------------------------------------------
 */

static const char *cli_path(void) {
  static char cli[4096];
  const char *dir = getenv("RLOCK_TEST_BINDIR");
  snprintf(cli, sizeof cli, "%s/rlock", dir != NULL ? dir : ".");
  if (access(cli, X_OK) != 0)
    fail_msg("no rlock binary at %s (set RLOCK_TEST_BINDIR)", cli);
  return cli;
}

/* Run `rlock -u URL ARGS`; its stdout into out, its exit status. */
static int run_cli(const char *url, const char *args, char *out, size_t size) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' -u '%s' %s", cli_path(), url, args);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  size_t n = fread(out, 1, size - 1, f);
  out[n] = '\0';
  int st = pclose(f);
  assert_true(WIFEXITED(st));
  return WEXITSTATUS(st);
}

/* How many holders and waiters of a list --json line are this process's
 * clients, by their registry records. */
static int clients_here(const char *line) {
  char host[256] = "", want[512];
  gethostname(host, sizeof host - 1);
  snprintf(want, sizeof want, "\"client\": {\"host\": \"%s\", \"pid\": %ld, ",
           host, (long)getpid());
  int n = 0;
  for (const char *p = line; (p = strstr(p, want)) != NULL; p++)
    n++;
  return n;
}

static void check_cli(void) {
  static char out[65536];
  assert_int_equal(run_cli(T.url, "list --json", out, sizeof out), 0);
  int lines = 0;
  for (char *line = out, *nl; (nl = strchr(line, '\n')) != NULL;
       line = nl + 1, lines++) {
    *nl = '\0';
    if (strncmp(line, "{\"name\": \"lk:", 13) != 0 ||
        line[strlen(line) - 1] != '}' || strstr(line, "\"kind\": ") == NULL)
      fail_msg("unexpected line of list --json: %s", line);
    if (strncmp(line + 13, "fair\"", 5) == 0 &&
        strstr(line, "\"kind\": \"fair\"") == NULL)
      fail_msg("lk:fair not fair: %s", line);
    if (strncmp(line + 13, "fair\"", 5) == 0 &&
        strstr(line, "\"queue_length\": 2, ") == NULL)
      fail_msg("lk:fair without its 2 waiters: %s", line);
    /* every holder and waiter shown with its client: one holder each, two
     * readers, the fair lock's two waiters */
    int want = strncmp(line + 13, "fair\"", 5) == 0   ? 3
               : strncmp(line + 13, "read\"", 5) == 0 ? 2
                                                      : 1;
    if (clients_here(line) != want)
      fail_msg("not %d holders and waiters of this process: %s", want, line);
  }
  assert_int_equal(lines, 5);
  assert_int_equal(run_cli(T.url, "list 'lk:*'", out, sizeof out), 0);
  assert_non_null(strstr(out, "lk:fair: fair, expires in "));
  assert_non_null(strstr(out, ", 2 queued\n"));
  assert_non_null(strstr(out, "lk:read: read-write, held for reading"));
  char client[512], host[256] = "";
  gethostname(host, sizeof host - 1);
  snprintf(client, sizeof client, "\n    client: pid %ld on %s, ",
           (long)getpid(), host);
  assert_non_null(strstr(out, client));
  assert_non_null(strstr(out, "\n5 locks\n"));
  /* A cluster or Sentinel names each lock's node on a line of its own
   * (rlock(1)), a single server none. */
  const char *topology = strstr(T.url, "-cluster://")    ? "cluster"
                         : strstr(T.url, "-sentinel://") ? "sentinel"
                                                         : NULL;
  if (topology == NULL) {
    assert_null(strstr(out, "\n  node "));
  } else {
    char tail[64];
    snprintf(tail, sizeof tail, " (%s)\n", topology);
    int nodes = 0;
    for (const char *p = out; (p = strstr(p, "\n  node ")) != NULL; p++) {
      const char *eol = strchr(p + 1, '\n');
      if (eol == NULL ||
          strncmp(eol - strlen(tail) + 1, tail, strlen(tail)) != 0)
        fail_msg("node line without '%s': %s", tail, p + 1);
      nodes++;
    }
    assert_int_equal(nodes, 5);
  }
  assert_int_equal(run_cli(T.url, "list 'none:*'", out, sizeof out), 0);
  assert_string_equal(out, "0 locks\n");
  /* status reads the same records, wherever their keys live */
  assert_int_equal(run_cli(T.url, "status --json lk:fair", out, sizeof out), 0);
  if (clients_here(out) != 3)
    fail_msg("status --json lk:fair: not 3 clients of this process: %s", out);
  assert_int_equal(run_cli(T.url, "status lk:read", out, sizeof out), 0);
  assert_non_null(strstr(out, client));
}

static int count_lines_of(const char *s) {
  int n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

/* ---- SLOWLOG: what list sent, and how long each command ran ---------------
 */

static void slowlog_on(void) {
  for (int m = 0; m < T.nmasters; m++) {
    rt_cmd_ok(T.masters[m], "CONFIG SET slowlog-max-len 300000");
    rt_cmd_ok(T.masters[m], "CONFIG SET slowlog-log-slower-than 0");
    rt_cmd_ok(T.masters[m], "SLOWLOG RESET");
  }
}

static int arg_is(const redisReply *args, size_t i, const char *s) {
  return i < args->elements && strcasecmp(args->element[i]->str, s) == 0;
}

typedef struct logged {
  int scans, scripts;
  int slow; /* commands over LIST_CMD_MAX_US */
  long long max_us;
} logged;

/* One SLOWLOG entry [id, time, µs, args, addr, name]: list's SCAN and
 * list_inspect.lua calls are checked and timed; KEYS fails the test. */
static void check_entry(const redisReply *e, logged *lg) {
  const redisReply *args = e->element[3];
  long long us = e->element[2]->integer;
  if (arg_is(args, 0, "keys"))
    fail_msg("KEYS was run");
  if (arg_is(args, 0, "scan")) {
    if (!arg_is(args, 4, "count") || !arg_is(args, 5, "100") ||
        !arg_is(args, 6, "type") || !arg_is(args, 7, "hash"))
      fail_msg("a SCAN without COUNT 100 TYPE hash");
    lg->scans++;
  } else if ((arg_is(args, 0, "evalsha") &&
              arg_is(args, 1, rlock__script_list_inspect.sha)) ||
             (arg_is(args, 0, "eval") &&
              strncmp(args->element[1]->str, rlock__script_list_inspect.text,
                      40) == 0)) {
    if (atoi(args->element[2]->str) > 500)
      fail_msg("one script call checked %s keys", args->element[2]->str);
    lg->scripts++;
  } else {
    return;
  }
  if (us > lg->max_us)
    lg->max_us = us;
  lg->slow += us > LIST_CMD_MAX_US;
}

static void slowlog_check(void) {
  for (int m = 0; m < T.nmasters; m++) {
    logged lg = {0, 0, 0, 0};
    redisReply *r = rt_cmd(T.masters[m], "SLOWLOG GET -1");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_true(r->elements < 300000); /* none dropped */
    for (size_t i = 0; i < r->elements; i++)
      check_entry(r->element[i], &lg);
    freeReplyObject(r);
    rt_cmd_ok(T.masters[m], "CONFIG SET slowlog-log-slower-than 10000");
    rt_cmd_ok(T.masters[m], "SLOWLOG RESET");
    if (lg.scans < 2 * 4 || lg.scripts < 4)
      fail_msg("master %d: %d SCAN steps and %d script calls for 4 listings", m,
               lg.scans, lg.scripts);
    if (lg.slow > 1 + (lg.scans + lg.scripts) / 100)
      fail_msg("master %d: %d of list's %d commands ran over %d us "
               "(longest %lld us)",
               m, lg.slow, lg.scans + lg.scripts, LIST_CMD_MAX_US, lg.max_us);
    print_message("master %d: %d SCAN steps, %d script calls, longest %lld "
                  "us\n",
                  m, lg.scans, lg.scripts, lg.max_us);
  }
}

/* ---- the scenario, on any topology -------------------------------------- */

/* Counts under "cnt:": a semaphore, a latch, a permit-expirable semaphore
 * with a permit leased, an application's counter (a count too: they look
 * alike), a string that is no number, a lock (not a count). list --counts
 * shows the first four, each once, and nothing of Redisson's or of the
 * registry; the C call refuses what it must. */
static void check_counts(rlock_client *c) {
  rlock_semaphore *sem;
  rlock_latch *latch;
  rlock_psemaphore *ps;
  char id[RLOCK_PERMIT_ID_LEN + 1];
  int set;
  OK(rlock_semaphore_new(&sem, c, "cnt:sem"));
  OK(rlock_semaphore_set_permits(sem, 3));
  OK(rlock_latch_new(&latch, c, "cnt:latch"));
  OK(rlock_latch_try_set_count(&set, latch, 2));
  OK(rlock_psemaphore_new(&ps, c, "cnt:psem"));
  OK(rlock_psemaphore_set_permits(ps, 3));
  OK(rlock_psemaphore_acquire(id, ps, 0, LEASE_MS, NULL));
  rt_cmd_ok(server_of("cnt:visits"), "SET cnt:visits 42");
  rt_cmd_ok(server_of("cnt:word"), "SET cnt:word v");
  static char out[65536];
  assert_int_equal(run_cli(T.url, "list --counts 'cnt:*'", out, sizeof out), 0);
  assert_non_null(strstr(out, "cnt:sem: count 3 (a semaphore's available "
                              "permits or a latch's count)\n"));
  assert_non_null(strstr(out, "cnt:latch: count 2 ("));
  assert_non_null(strstr(out, "cnt:visits: count 42 ("));
  assert_non_null(strstr(out,
                         "cnt:psem: permit-expirable semaphore, 2 available, 1 "
                         "leased\n"));
  assert_null(strstr(out, "cnt:word"));
  assert_non_null(strstr(out, "\n0 locks\n4 counts\n"));
  assert_int_equal(
      run_cli(T.url, "list --counts --json 'cnt:p*'", out, sizeof out), 0);
  assert_non_null(strstr(out, "{\"name\": \"cnt:psem\", \"kind\": "
                              "\"permit-expirable-semaphore\", \"available\": "
                              "2, \"leased\": 1, \"node\": \""));
  assert_int_equal(count_lines_of(out), 1);
  /* Redisson's counters (the fenced lock's token) and the registry are
   * strings of digits or records: never listed */
  assert_int_equal(run_cli(T.url, "list --counts 'r*'", out, sizeof out), 0);
  assert_string_equal(out, "0 locks\n0 counts\n");
  RC(rlock_client_list_counts(NULL, "*", NULL, NULL), RLOCK_EINVAL);
  RC(rlock_client_list_counts(c, "", NULL, NULL), RLOCK_EINVAL);
  OK(rlock_psemaphore_release(ps, id));
  rlock_psemaphore_free(ps);
  rlock_latch_free(latch);
  rlock_semaphore_free(sem);
  for (const char *const *k =
           (const char *const[]){"cnt:sem", "cnt:latch", "cnt:psem",
                                 "{cnt:psem}:timeout", "cnt:visits", "cnt:word",
                                 NULL};
       *k != NULL; k++)
    rt_cmd_int(server_of(*k), "DEL %s", *k);
}

/* ---- semaphores and latches by their channels and lease sets ----------- */

typedef struct synced {
  int n;
  struct {
    char name[64], kind[40];
    int64_t value, leased, subs;
  } e[16];
} synced;

static int record_sync(const char *name, const char *kind, int64_t value,
                       int64_t leased, int64_t subs, const char *node,
                       void *arg) {
  synced *s = arg;
  assert_non_null(strstr(node, "127.0.0.1:"));
  assert_true(s->n < 16);
  snprintf(s->e[s->n].name, sizeof s->e[0].name, "%s", name);
  snprintf(s->e[s->n].kind, sizeof s->e[0].kind, "%s", kind);
  s->e[s->n].value = value;
  s->e[s->n].leased = leased;
  s->e[s->n++].subs = subs;
  return 0;
}

/* The entry named `name`, or NULL. */
static const void *sync_of(const synced *s, const char *name, const char *kind,
                           int64_t value, int64_t leased) {
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->e[i].name, name) == 0) {
      assert_string_equal(s->e[i].kind, kind);
      assert_int_equal(s->e[i].value, value);
      assert_int_equal(s->e[i].leased, leased);
      return &s->e[i];
    }
  return NULL;
}

typedef struct waiter {
  rlock_client *c;
  const char *name;
  int latch, rc;
  pthread_t t;
} waiter;

/* A waiter of its own client: a permit of a semaphore, or a latch. */
static void *wait_main(void *arg) {
  waiter *w = arg;
  if (w->latch) {
    rlock_latch *x;
    OK(rlock_latch_new(&x, w->c, w->name));
    w->rc = rlock_latch_await(x, 60000, NULL);
    rlock_latch_free(x);
  } else {
    rlock_semaphore *sem;
    OK(rlock_semaphore_new(&sem, w->c, w->name));
    w->rc = rlock_semaphore_acquire(sem, 1, 60000, NULL);
    rlock_semaphore_free(sem);
  }
  return NULL;
}

typedef struct sync_want {
  rlock_client *c;
  synced s;
} sync_want;

/* Both waiters show (their channels have a subscriber). */
static bool pred_waited(void *arg, char *why, size_t cap) {
  sync_want *w = arg;
  w->s.n = 0;
  OK(rlock_client_list_syncs(w->c, "syn:*", record_sync, &w->s));
  int waited = 0;
  for (int i = 0; i < w->s.n; i++)
    waited += w->s.e[i].subs > 0;
  snprintf(why, cap, "%d of 2 waited on", waited);
  return waited == 2;
}

/* By default (no --counts), what can be told from any counter: a
 * semaphore and a latch someone waits on (their channels), permit-
 * expirable semaphores with a permit leased (their lease sets; a name
 * with a tag, and the name "{syn:br}" whose lease set "{syn:br}:timeout"
 * reads also as that of "syn:br"); never an idle semaphore or an
 * application's counter. rlock top --once shows them with their kinds. */
static void check_syncs(rlock_client *c) {
  rlock_semaphore *sem, *idle;
  rlock_latch *latch;
  rlock_psemaphore *ps[2];
  const char *psn[2] = {"syn:{t}ps", "{syn:br}"};
  char id[2][RLOCK_PERMIT_ID_LEN + 1];
  int set;
  OK(rlock_semaphore_new(&sem, c, "syn:sem"));
  OK(rlock_semaphore_set_permits(sem, 0));
  OK(rlock_semaphore_new(&idle, c, "syn:idle"));
  OK(rlock_semaphore_set_permits(idle, 3));
  OK(rlock_latch_new(&latch, c, "syn:latch"));
  OK(rlock_latch_try_set_count(&set, latch, 1));
  for (int i = 0; i < 2; i++) {
    OK(rlock_psemaphore_new(&ps[i], c, psn[i]));
    OK(rlock_psemaphore_set_permits(ps[i], 2));
    OK(rlock_psemaphore_acquire(id[i], ps[i], 0, LEASE_MS, NULL));
  }
  rt_cmd_ok(server_of("syn:visits"), "SET syn:visits 42");
  waiter w[2] = {{.name = "syn:sem"}, {.name = "syn:latch", .latch = 1}};
  for (int i = 0; i < 2; i++) {
    w[i].c = fx_client_opts(T.url, 0, NULL, NULL);
    assert_int_equal(pthread_create(&w[i].t, NULL, wait_main, &w[i]), 0);
  }
  sync_want want = {.c = c};
  rt_wait_until(pred_waited, &want, rt_scaled_ms(10000), "both waiters");
  synced *s = &want.s;
  assert_int_equal(s->n, 3); /* neither syn:idle nor syn:visits */
  assert_non_null(sync_of(s, "syn:sem", "semaphore", 0, 0));
  assert_non_null(sync_of(s, "syn:latch", "latch", 1, 0));
  assert_non_null(sync_of(s, "syn:{t}ps", "permit-expirable-semaphore", 1, 1));
  static char out[65536];
  assert_int_equal(run_cli(T.url, "top --once 'syn:*'", out, sizeof out), 0);
  assert_non_null(strstr(out, "0 locks, 3 semaphores and latches, sorted"));
  assert_non_null(strstr(out, " semaphore  syn:sem "));
  assert_non_null(strstr(out, " latch      syn:latch "));
  assert_non_null(strstr(out, " psem       syn:{t}ps "));
  assert_null(strstr(out, "syn:idle"));
  assert_int_equal(
      run_cli(T.url, "top --once --counts 'syn:*'", out, sizeof out), 0);
  assert_non_null(strstr(out, " count      syn:idle "));
  assert_non_null(strstr(out, " count      syn:visits "));
  assert_non_null(strstr(out, "0 locks, 3 semaphores and latches, 2 counts"));
  assert_int_equal(count_lines_of(strstr(out, "WAIT")), 6); /* each once */
  if (strcmp(rlock_client_topology(c), "single") == 0) {
    /* a user allowed the locks but not PUBSUB: top shows the locks and
     * says why not the rest */
    rt_cmd_ok(T.masters[0],
              "ACL SETUSER toplocks reset on >pw ~* &* +@all -pubsub");
    char url[256];
    snprintf(url, sizeof url, "redis://toplocks:pw@127.0.0.1:%d",
             rt_server_port(T.masters[0]));
    assert_int_equal(run_cli(url, "top --once 'syn:*'", out, sizeof out), 0);
    assert_non_null(strstr(out, "0 locks, semaphores and latches not shown ("));
    assert_null(strstr(out, "syn:sem"));
    rt_cmd_int(T.masters[0], "ACL DELUSER toplocks");
  }
  s->n = 0; /* the pattern is the names', as SCAN MATCH's */
  OK(rlock_client_list_syncs(c, "{syn:b[r]}", record_sync, s));
  assert_int_equal(s->n, 1);
  assert_non_null(sync_of(s, "{syn:br}", "permit-expirable-semaphore", 1, 1));
  OK(rlock_semaphore_release(sem, 1));
  OK(rlock_latch_count_down(latch));
  for (int i = 0; i < 2; i++) {
    pthread_join(w[i].t, NULL);
    OK(w[i].rc);
    rlock_client_free(w[i].c);
    OK(rlock_psemaphore_release(ps[i], id[i]));
    rlock_psemaphore_free(ps[i]);
  }
  RC(rlock_client_list_syncs(NULL, "*", record_sync, s), RLOCK_EINVAL);
  RC(rlock_client_list_syncs(c, "*", NULL, s), RLOCK_EINVAL);
  RC(rlock_client_list_syncs(c, "", record_sync, s), RLOCK_EINVAL);
  rlock_latch_free(latch);
  rlock_semaphore_free(idle);
  rlock_semaphore_free(sem);
  for (const char *const *k =
           (const char *const[]){"syn:sem", "syn:idle", "syn:latch",
                                 "syn:{t}ps", "{syn:br}", "syn:visits", NULL};
       *k != NULL; k++)
    rt_cmd_int(server_of(*k), "DEL %s", *k);
}

static void scenario(void) {
  configure_masters();
  create_keys();
  held h;
  hold_all(&h);
  snapshot(1);
  slowlog_on();
  rlock_client *c = fx_client_opts(T.url, 0, NULL, NULL);
  seen s = {0};
  OK(rlock_client_list_locks(c, NULL, record, &s));
  check_all_listed(&s);
  seen f = {0};
  OK(rlock_client_list_locks(c, "lk:f*", record, &f));
  assert_int_equal(f.n, 2);
  find(&f, "lk:fair");
  find(&f, "lk:fenced");
  check_cli(); /* two more listings */
  slowlog_check();
  snapshot(0);
  check_counts(c);
  check_syncs(c);
  rlock_client_free(c);
  release_all(&h);
}

/* ---- tests ------------------------------------------------------------------
 */

static void test_arguments(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  seen s = {0};
  char longp[RLOCK_MAX_NAME_LEN + 2];
  memset(longp, '*', sizeof longp - 1);
  longp[sizeof longp - 1] = '\0';
  RC(rlock_client_list_locks(NULL, "*", record, &s), RLOCK_EINVAL);
  RC(rlock_client_list_locks(c, "*", NULL, &s), RLOCK_EINVAL);
  RC(rlock_client_list_locks(c, "", record, &s), RLOCK_EINVAL);
  RC(rlock_client_list_locks(c, longp, record, &s), RLOCK_EINVAL);
  assert_int_equal(s.n, 0);
  assert_int_equal(rlock_lock_info_queue_length(NULL), 0);
  /* A callback that says stop is called no more; the listing succeeds. */
  rlock_lock *l[3];
  const char *names[3] = {"stop:a", "stop:b", "stop:c"};
  for (int i = 0; i < 3; i++) {
    l[i] = fx_lock(c, names[i]);
    OK(rlock_lock_acquire(l[i]));
  }
  s.stop_after = 1;
  OK(rlock_client_list_locks(c, "stop:*", record, &s));
  assert_int_equal(s.n, 1);
  for (int i = 0; i < 3; i++) {
    OK(rlock_lock_release(l[i]));
    rlock_lock_free(l[i]);
  }
  /* Nothing else left from this test: nothing listed. */
  s = (seen){0};
  OK(rlock_client_list_locks(c, "stop:*", record, &s));
  assert_int_equal(s.n, 0);
  rlock_client_free(c);
  /* A server that is down. */
  char url[64];
  snprintf(url, sizeof url, "redis://127.0.0.1:%d", rt_free_port());
  c = fx_client_opts(url, 0, NULL, NULL);
  RC(rlock_client_list_locks(c, NULL, record, &s), RLOCK_EIO);
  rlock_client_free(c);
}

/* rlock_client_list_syncs when any allocation fails: RLOCK_ENOMEM with a
 * message, or every semaphore listed (a channel subscribed by a plain
 * connection, as a Redisson waiter's, and lease sets, one of a braced
 * name), nothing leaked (ASan). */
static void test_syncs_allocation_failure(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  redisContext *sub = rt_server_connect(srv);
  freeReplyObject(redisCommand(sub, "SUBSCRIBE redisson_sc:{oom:s}"));
  rt_cmd_ok(srv, "SET oom:s 0");
  rlock_psemaphore *ps[3];
  const char *names[3] = {"oom:p1", "oom:{t}p2", "{oom:p3}"};
  char id[3][RLOCK_PERMIT_ID_LEN + 1];
  for (int i = 0; i < 3; i++) {
    OK(rlock_psemaphore_new(&ps[i], c, names[i]));
    OK(rlock_psemaphore_set_permits(ps[i], 1));
    OK(rlock_psemaphore_acquire(id[i], ps[i], 0, LEASE_MS, NULL));
  }
  synced want = {0};
  OK(rlock_client_list_syncs(c, "*oom:*", record_sync, &want));
  assert_int_equal(want.n, 4);
  assert_non_null(sync_of(&want, "oom:s", "semaphore", 0, 0));
  for (int i = 0; i < 3; i++)
    assert_non_null(
        sync_of(&want, names[i], "permit-expirable-semaphore", 0, 1));
  uint64_t n;
  for (n = 1; n < 100000; n++) {
    synced got = {0};
    rlock__alloc_fail_at(n, RLOCK__ALLOC_THIS_THREAD | RLOCK__ALLOC_ONCE);
    int rc = rlock_client_list_syncs(c, "*oom:*", record_sync, &got);
    int clean = rlock__alloc_failed() == 0;
    rlock__alloc_fail_at(0, 0);
    if (fx_ok_or_nomem(rc, "list_syncs", n))
      assert_int_equal(got.n, 4);
    if (clean)
      break;
  }
  print_message("list_syncs: %llu allocations walked\n", (unsigned long long)n);
  assert_true(n > 10);
  for (int i = 0; i < 3; i++) {
    OK(rlock_psemaphore_release(ps[i], id[i]));
    rlock_psemaphore_free(ps[i]);
    rt_cmd_int(srv, "DEL %s", names[i]);
  }
  redisFree(sub);
  rt_cmd_int(srv, "DEL oom:s");
  rlock_client_free(c);
}

/* `rlock status` with several NAMEs: each shown in the order given (text
 * blocks, or one JSON object per line); one that is not a lock is
 * reported without hiding the others, and the exit status is then 65. */
static void test_status_several_names(void **state) {
  (void)state;
  static char out[16384];
  const char *url = rt_server_url(srv);
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *a = fx_lock(c, "st:a"), *b;
  OK(rlock_lock_new_read(&b, c, "st:b"));
  OK(rlock_lock_acquire(a));
  OK(rlock_lock_acquire(b));
  rt_cmd_ok(srv, "SET st:string x");
  assert_int_equal(run_cli(url, "status st:a st:free st:b", out, sizeof out),
                   0);
  const char *pa = strstr(out, "st:a: locked"),
             *pf = strstr(out, "st:free: free"),
             *pb = strstr(out, "st:b: locked for reading");
  assert_true(pa != NULL && pf != NULL && pb != NULL && pa < pf && pf < pb);
  assert_int_equal(run_cli(url, "status --json st:b st:string st:a 2>/dev/null",
                           out, sizeof out),
                   65);
  const char *first = "{\"name\": \"st:b\", \"locked\": true";
  const char *second = strchr(out, '\n');
  if (strncmp(out, first, strlen(first)) != 0 || second == NULL ||
      strncmp(second + 1, "{\"name\": \"st:a\", ", 17) != 0 ||
      strcmp(strchr(second + 1, '\n'), "\n") != 0)
    fail_msg("status --json st:b st:string st:a printed: %s", out);
  OK(rlock_lock_release(a));
  OK(rlock_lock_release(b));
  FX_FREE((a, b), (c));
  freeReplyObject(rt_cmd(srv, "DEL st:string"));
}

/* Allocation failure: the Nth allocation of the listing thread (alone,
 * then with every later one) fails, for N = 1, 2, ... until a listing
 * runs without a refusal. Each listing succeeds or fails with
 * RLOCK_ENOMEM and a message; what it reported is right either way, and
 * ASan (and valgrind in CI) see no leak. */
static void test_allocation_failure(void **state) {
  (void)state;
  rlock_client *c = fx_client(srv, 0);
  rlock_lock *l[2];
  OK(rlock_lock_new(&l[0], c, "oom:a"));
  OK(rlock_lock_new_read(&l[1], c, "oom:b"));
  for (int i = 0; i < 2; i++)
    OK(rlock_lock_acquire(l[i]));
  for (int i = 0; i < 40; i++) /* a batch bigger than a call's room */
    freeReplyObject(rt_cmd(srv, "HSET oom:h%d f x", i));
  static const int modes[2] = {RLOCK__ALLOC_THIS_THREAD | RLOCK__ALLOC_ONCE,
                               RLOCK__ALLOC_THIS_THREAD};
  /* Under valgrind (time scale 8) every third N past the first 40. */
  uint64_t stride = rt_scaled_ms(1) >= 4 ? 3 : 1;
  for (int f = 0; f < 2; f++) {
    uint64_t n;
    for (n = 1; n < 100000; n += n < 40 ? 1 : stride) {
      seen s = {0};
      rlock__alloc_fail_at(n, modes[f]);
      int rc = rlock_client_list_locks(c, "oom:*", record, &s);
      int clean = rlock__alloc_failed() == 0;
      rlock__alloc_fail_at(0, 0);
      if (fx_ok_or_nomem(rc, "list_locks", n)) {
        assert_int_equal(s.n, 2);
        find(&s, "oom:a");
        find(&s, "oom:b");
      }
      if (clean)
        break;
    }
    print_message("list: %llu allocations walked\n", (unsigned long long)n);
    assert_true(n > 10);
  }
  for (int i = 0; i < 2; i++) {
    OK(rlock_lock_release(l[i]));
    rlock_lock_free(l[i]);
  }
  rlock_client_free(c);
  for (int i = 0; i < 40; i++)
    freeReplyObject(rt_cmd(srv, "DEL oom:h%d", i));
}

static void test_single(void **state) {
  (void)state;
  topo_one(rt_server_url(srv), srv);
  scenario();
}

static void test_cluster(void **state) {
  (void)state;
  rt_cluster *cl = rt_cluster_start(3, 0);
  topo_cluster(cl);
  scenario();
  /* A master down: its slots have none, so a list would be incomplete;
   * it fails instead (before or after the cluster noticed). */
  rt_server_kill(rt_cluster_node(cl, 2));
  rlock_client *c = fx_client_opts(rt_cluster_url(cl), 0, NULL, NULL);
  seen s = {0};
  RC(rlock_client_list_locks(c, NULL, record, &s), RLOCK_EIO);
  rlock_client_free(c);
  rt_cluster_free(cl);
}

static void test_sentinel(void **state) {
  (void)state;
  rt_sentinel_group *g = rt_sentinel_start("listmaster", 1, 1);
  topo_one(rt_sentinel_url(g), rt_sentinel_master(g));
  scenario();
  rt_sentinel_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_arguments),
      cmocka_unit_test(test_status_several_names),
      cmocka_unit_test(test_allocation_failure),
      cmocka_unit_test(test_syncs_allocation_failure),
      cmocka_unit_test(test_single),
      cmocka_unit_test(test_cluster),
      cmocka_unit_test(test_sentinel),
  };
  return RT_RUN_GROUP("tests", tests, fx_setup, fx_teardown);
}
