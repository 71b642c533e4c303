/*
 * sentinel.c - asking Sentinel which server is the master.
 */
#include "sentinel.h"

#include <stdio.h>
#include <string.h>

#include "common.h"
#include "conn.h"

/* The master `s` names, as "host:port" in addr; RLOCK_OK or a failure. */
static int ask_sentinel(rlock__topo *t, const rlock__endpoint *s, char *addr,
                        size_t size) {
  rlock__conn *conn;
  int rc = rlock__conn_open(&conn, s, t->connect_ms, t->command_ms);
  if (rc != RLOCK_OK)
    return rc;
  const char *argv[3] = {"SENTINEL", "get-master-addr-by-name",
                         t->target.master};
  rlock__reply *r;
  rc = rlock__conn_call(conn, 3, argv, NULL, &r);
  if (rc == RLOCK_OK) {
    if (r->type == RLOCK__R_ERROR)
      rc = rlock__err(RLOCK_ESERVER, "sentinel %s: %s", conn->where, r->str);
    else if (r->type != RLOCK__R_ARRAY || r->n != 2 ||
             r->elem[0]->type != RLOCK__R_STR ||
             r->elem[1]->type != RLOCK__R_STR)
      rc = rlock__err(RLOCK_EIO, "sentinel %s knows no master named '%s'",
                      conn->where, t->target.master);
    else
      snprintf(addr, size, "%s:%s", r->elem[0]->str, r->elem[1]->str);
    rlock__reply_free(r);
  }
  rlock__conn_close(conn);
  return rc;
}

/* RLOCK_OK when `node` says ROLE master. */
static int check_role(rlock__node *node) {
  const char *argv[1] = {"ROLE"};
  rlock__reply *r;
  int rc = rlock__topo_node_call(node, 1, argv, &r);
  if (rc != RLOCK_OK)
    return rc;
  if (r->type == RLOCK__R_ERROR)
    rc = rlock__error_status(node->where, r);
  else if (r->type != RLOCK__R_ARRAY || r->n == 0 ||
           !rlock__reply_is(r->elem[0], "master"))
    rc = rlock__err(RLOCK_EIO, "sentinel named %s as master, but it is not "
                    "one (yet)", node->where);
  rlock__reply_free(r);
  return rc;
}

int rlock__sentinel_refresh(rlock__topo *t) {
  int rc = rlock__err(RLOCK_EIO, "sentinel: no sentinel configured");
  for (size_t i = 0; i < t->target.n; i++) {
    char addr[300];
    rlock__node *node;
    if ((rc = ask_sentinel(t, &t->target.addrs[i], addr, sizeof addr)) !=
        RLOCK_OK)
      continue;
    if ((rc = rlock__topo_node_at(t, addr, &node)) != RLOCK_OK ||
        (rc = check_role(node)) != RLOCK_OK)
      continue;
    atomic_store(&t->primary, node);
    return RLOCK_OK;
  }
  return rc;
}
