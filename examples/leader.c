/* SPDX-License-Identifier: BSD-3-Clause */
/* Leader election, in one run.
 *
 * Two candidates, A and B, each with a client of its own (as two
 * processes would have), campaign in the election "leader-demo"; anyone
 * can read who leads. A wins and leads with a short fixed lease, then
 * stalls (here: it stops renewing; in life: a crash, SIGSTOP, a lost
 * network). B, a standby blocked in its campaign meanwhile, leads within
 * one lease of A's last word, with a larger term. A, waking up, learns
 * from rlock_election_check() that it no longer leads: whatever it does
 * now carries its old term, which a resource refusing terms below the
 * highest it has seen turns away. B resigns; nobody leads.
 *
 * Usage: leader [URL]   (default: $RLOCK_URL, else
 * redis://127.0.0.1:6379). Exits 0 when all of that happened. */
#include <inttypes.h>
#include <pthread.h>
#include <rlock.h>
#include <stdio.h>
#include <stdlib.h>

static rlock_client *client_for(const char *url) {
  rlock_config *cfg;
  rlock_client *client = NULL;
  if (rlock_config_new(&cfg) != RLOCK_OK)
    return NULL;
  if (rlock_config_set_url(cfg, url) != RLOCK_OK ||
      rlock_client_new(&client, cfg) != RLOCK_OK)
    fprintf(stderr, "%s\n", rlock_error_last()->message);
  rlock_config_free(cfg);
  return client;
}

/* Print who leads, as any observer would; its term (0: nobody). */
static int64_t show(rlock_election *e) {
  rlock_leader *l;
  if (rlock_election_observe(&l, e) != RLOCK_OK) {
    fprintf(stderr, "observe: %s\n", rlock_error_last()->message);
    return -1;
  }
  int64_t term = rlock_leader_term(l);
  if (rlock_leader_present(l))
    printf("  leader: %s, term %" PRId64 ", lease %" PRId64 " ms left\n",
           rlock_leader_value(l) ? rlock_leader_value(l) : "(no value)", term,
           rlock_leader_ttl_ms(l));
  else
    printf("  nobody leads\n");
  rlock_leader_free(l);
  return term;
}

/* B's campaign, blocked on a thread of its own until it leads. */
typedef struct standby {
  rlock_election *e;
  uint64_t owner;
  int rc;
  int64_t term;
} standby;

static void *campaign_b(void *arg) {
  standby *s = arg;
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.owner = s->owner;
  o.wait_ms = 10000;
  s->rc = rlock_election_campaign(s->e, "candidate-B", &o, &s->term);
  return NULL;
}

static int demo(rlock_election *ea, rlock_election *eb) {
  uint64_t a = rlock_owner_new();
  rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
  o.owner = a;
  o.lease_ms = 1000; /* A "stalls": nothing renews this lease */
  int64_t term_a = 0;
  if (rlock_election_campaign(ea, "candidate-A", &o, &term_a) != RLOCK_OK) {
    fprintf(stderr, "A: %s\n", rlock_error_last()->message);
    return 1;
  }
  printf("A leads, term %" PRId64 "\n", term_a);
  if (show(eb) != term_a)
    return 1;
  standby b = {eb, rlock_owner_new(), -1, 0};
  pthread_t t;
  if (pthread_create(&t, NULL, campaign_b, &b) != 0)
    return 1;
  pthread_join(t, NULL); /* B leads once A's lease has run out */
  if (b.rc != RLOCK_OK) {
    fprintf(stderr, "B: %s\n", rlock_error_last()->message);
    return 1;
  }
  printf("B leads, term %" PRId64 " (A stalled past its lease)\n", b.term);
  int ok = b.term > term_a && show(ea) == b.term;
  int a_told = rlock_election_check(ea, a) == RLOCK_ELOST;
  printf("A checks: %s\n",
         a_told ? "no longer leader (its term is stale)" : "still leader?");
  ok = ok && a_told && rlock_election_resign(eb, b.owner) == RLOCK_OK;
  printf("B resigned\n");
  return ok && show(ea) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : getenv("RLOCK_URL");
  if (url == NULL || url[0] == '\0')
    url = "redis://127.0.0.1:6379";
  rlock_client *ca = client_for(url), *cb = client_for(url);
  rlock_election *ea = NULL, *eb = NULL;
  int status = 1;
  if (ca != NULL && cb != NULL &&
      rlock_election_new(&ea, ca, "leader-demo") == RLOCK_OK &&
      rlock_election_new(&eb, cb, "leader-demo") == RLOCK_OK)
    status = demo(ea, eb);
  printf("%s\n", status == 0 ? "ok" : "FAILED");
  rlock_election_free(ea);
  rlock_election_free(eb);
  rlock_client_free(ca);
  rlock_client_free(cb);
  return status;
}
