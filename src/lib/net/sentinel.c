/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sentinel.c - reading Sentinel's +switch-master messages.
 */
#include "sentinel.h"

#include <string.h>

/* "+switch-master" messages read "<name> <old ip> <old port> <new ip>
 * <new port>". */
int rlock__sentinel_names_master(const rlock__topo *t, const rlock__reply *r) {
  if (r->type != RLOCK__R_ARRAY || r->n != 3 ||
      !rlock__reply_is(r->elem[0], "message") ||
      r->elem[2]->type != RLOCK__R_STR)
    return 0;
  size_t n = strlen(t->target.master);
  return strncmp(r->elem[2]->str, t->target.master, n) == 0 &&
         r->elem[2]->str[n] == ' ';
}
