/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * who.c - who is behind a holder's or a waiter's owner field, for status
 * and list: the client's registry record (rlock_client_whois), read once
 * per client id a command (a small cache), shown as a line or as JSON.
 * A lock's owner without a record is a Redisson client, or an rlock
 * client whose registry is off or that has been gone for a while.
 */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#define WHO_CACHE 64

typedef struct who_entry {
  char id[37];
  int found; /* 1: rec holds the record; 0: none; <0: the read failed */
  rlock_client_record rec;
} who_entry;

static who_entry cache[WHO_CACHE];
static size_t ncache, next_slot;

/* The entry for the owner's client id, read when not cached; NULL when
 * the owner does not start with a client id. */
static const who_entry *who(rlock_client *client, const char *owner) {
  size_t n = strcspn(owner, ":");
  if (n != 36)
    return NULL;
  for (size_t i = 0; i < ncache; i++)
    if (memcmp(cache[i].id, owner, 36) == 0)
      return &cache[i];
  who_entry *e = &cache[next_slot];
  next_slot = (next_slot + 1) % WHO_CACHE;
  if (ncache < WHO_CACHE)
    ncache++;
  memcpy(e->id, owner, 36);
  e->id[36] = '\0';
  e->found = rlock_client_whois(client, owner, &e->rec);
  if (e->found == RLOCK_EINVAL)
    return NULL;
  return e;
}

void cli_print_who(rlock_client *client, const char *owner) {
  const who_entry *e = who(client, owner);
  fputs("    client: ", stdout);
  if (e == NULL || e->found == 0) {
    fputs("Redisson or unknown client (no registry record)\n", stdout);
    return;
  }
  if (e->found < 0) {
    printf("unknown (its registry record could not be read: %s)\n",
           rlock_strerror(e->found));
    return;
  }
  printf("pid %lld on ", e->rec.pid);
  cli_put_printable(stdout, e->rec.host);
  fputs(", ", stdout);
  cli_put_printable(stdout, e->rec.program[0] ? e->rec.program : "?");
  char up[32] = "?";
  int64_t now = cli_epoch_ms();
  if (e->rec.started_ms > 0 && now >= e->rec.started_ms)
    cli_format_ms(up, sizeof up, now - e->rec.started_ms);
  printf(" (rlock %s, client up %s)\n", e->rec.version, up);
}

void cli_json_who(rlock_client *client, const char *owner) {
  const who_entry *e = who(client, owner);
  fputs(", \"client\": ", stdout);
  if (e == NULL || e->found <= 0) {
    fputs("null", stdout);
    return;
  }
  fputs("{\"host\": ", stdout);
  cli_json_string(stdout, e->rec.host);
  printf(", \"pid\": %lld, \"program\": ", e->rec.pid);
  cli_json_string(stdout, e->rec.program);
  fputs(", \"version\": ", stdout);
  cli_json_string(stdout, e->rec.version);
  printf(", \"started_ms\": %" PRId64 "}", e->rec.started_ms);
}

const rlock_client_record *cli_who_record(rlock_client *client,
                                          const char *owner) {
  const who_entry *e = who(client, owner);
  return e != NULL && e->found == 1 ? &e->rec : NULL;
}
