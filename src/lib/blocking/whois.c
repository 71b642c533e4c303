/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * whois.c - rlock_client_whois: a client's registry record read back
 * (kinds/registry.c has its format), one GET on the node that serves it.
 */
#include <string.h>

#include "calls.h"
#include "client_int.h"
#include "cmd.h"
#include "common.h"
#include "registry.h"

int rlock_client_whois(rlock_client *c, const char *owner,
                       rlock_client_record *out) {
  if (c == NULL || owner == NULL || out == NULL)
    return rlock__err(RLOCK_EINVAL, "rlock_client_whois: %s is NULL",
                      c == NULL       ? "client"
                      : owner == NULL ? "owner"
                                      : "out");
  memset(out, 0, sizeof *out);
  char id[37];
  if (rlock__registry_id(owner, id) != 0)
    return rlock__err(RLOCK_EINVAL,
                      "rlock_client_whois: '%.64s' does not start with a "
                      "client id (36 characters of a UUID)",
                      owner);
  int rc = rlock__blocking_check(c);
  if (rc != RLOCK_OK)
    return rc;
  rlock__call call;
  rlock__call_cmd(&call, "GET");
  rlock__call_key(&call,
                  rlock__call_fmt(&call, "%s%s", RLOCK_REGISTRY_PREFIX, id));
  rlock__reply *r;
  if ((rc = rlock__call_run(c, &call, &r)) != RLOCK_OK)
    return rc;
  int found = 0;
  if (r->type == RLOCK__R_STR) {
    if (rlock__registry_parse(r->str, r->len, id, out) == 0)
      found = 1;
    else
      rc = rlock__err(RLOCK_EWRONGTYPE,
                      "rlock_client_whois: %s%s is not a registry record",
                      RLOCK_REGISTRY_PREFIX, id);
  }
  rlock__reply_free(r);
  return rc != RLOCK_OK ? rc : found;
}
