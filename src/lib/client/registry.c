/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * registry.c - a client's registry record (rlock_config_set_registry_period):
 * the text it writes under RLOCK_REGISTRY_PREFIX + its id, made once when
 * the client is set up so each period's write allocates nothing, and how
 * such a text reads back (rlock_client_whois). Not Redisson's: PROTOCOL.md.
 *
 * The text is lines "field=value" after a first line "rlock-client 1"
 * (the format's version): host, pid, program, version, started (Unix
 * epoch ms). Values never hold a control character (written as spaces),
 * so a line is a field; a reader ignores fields it does not know.
 */
#include "registry.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "rlock/version.h"

#define MAGIC "rlock-client 1\n"

/* Control characters (and bytes past a NUL) as spaces. */
static void clean(char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f)
      *s = ' ';
}

/* The process's argv[0] into out[size]; "" where /proc is not there.
 * Only argv[0]: the arguments may carry secrets (a password, a token),
 * and the record is readable by every client of the server. */
static void argv0(char *out, size_t size) {
  out[0] = '\0';
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  ssize_t n = read(fd, out, size - 1);
  close(fd);
  out[n > 0 ? n : 0] = '\0'; /* argv[0] ends at its own NUL */
}

void rlock__registry_setup(rlock__registry *r, const char *id,
                           const char *program) {
  char host[256] = "";
  char prog[RLOCK_PROGRAM_MAX + 1];
  if (gethostname(host, sizeof host - 1) != 0)
    host[0] = '\0';
  host[sizeof host - 1] = '\0';
  if (program[0] != '\0')
    snprintf(prog, sizeof prog, "%s", program);
  else
    argv0(prog, sizeof prog);
  clean(host);
  clean(prog);
  snprintf(r->key, sizeof r->key, "%s%s", RLOCK_REGISTRY_PREFIX, id);
  snprintf(r->rec, sizeof r->rec,
           MAGIC "host=%s\npid=%lld\nprogram=%s\nversion=%d.%d.%d\n"
                 "started=%" PRId64 "\n",
           host, (long long)getpid(), prog, RLOCK_VERSION_MAJOR,
           RLOCK_VERSION_MINOR, RLOCK_VERSION_PATCH, rlock__epoch_ms());
}

int rlock__registry_id(const char *owner, char id[37]) {
  size_t n = strcspn(owner, ":");
  if (n != 36)
    return -1;
  for (size_t i = 0; i < 36; i++) {
    char ch = owner[i];
    int dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? ch != '-' : !rlock__is_hex(ch))
      return -1;
  }
  memcpy(id, owner, 36);
  id[36] = '\0';
  return 0;
}

/* Copy the value [v, end) into dst[size], cut to fit. */
static void take(char *dst, size_t size, const char *v, const char *end) {
  size_t n = (size_t)(end - v);
  if (n >= size)
    n = size - 1;
  memcpy(dst, v, n);
  dst[n] = '\0';
}

static void field(rlock_client_record *out, const char *k, size_t klen,
                  const char *v, const char *end) {
  char num[24];
  if (klen == 4 && memcmp(k, "host", 4) == 0)
    take(out->host, sizeof out->host, v, end);
  else if (klen == 7 && memcmp(k, "program", 7) == 0)
    take(out->program, sizeof out->program, v, end);
  else if (klen == 7 && memcmp(k, "version", 7) == 0)
    take(out->version, sizeof out->version, v, end);
  else if (klen == 3 && memcmp(k, "pid", 3) == 0) {
    take(num, sizeof num, v, end);
    out->pid = strtoll(num, NULL, 10);
  } else if (klen == 7 && memcmp(k, "started", 7) == 0) {
    take(num, sizeof num, v, end);
    out->started_ms = strtoll(num, NULL, 10);
  }
}

int rlock__registry_parse(const char *s, size_t len, const char *id,
                          rlock_client_record *out) {
  memset(out, 0, sizeof *out);
  size_t m = strlen(MAGIC);
  if (len < m || memcmp(s, MAGIC, m) != 0)
    return -1;
  snprintf(out->client_id, sizeof out->client_id, "%s", id);
  const char *p = s + m, *end = s + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    const char *eq = memchr(p, '=', (size_t)(le - p));
    if (eq != NULL)
      field(out, p, (size_t)(eq - p), eq + 1, le);
    p = nl ? nl + 1 : end;
  }
  return 0;
}
