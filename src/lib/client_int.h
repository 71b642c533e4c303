/*
 * client_int.h - the definition behind the opaque rlock_client, and the
 * internal command layer every lock type talks to.
 *
 * Lock types never touch hiredis or a connection: they call
 * rlock__cmd_script()/rlock__cmd() with the key the command is about, and
 * the command layer picks the server (today the one configured server;
 * Sentinel and Cluster routing plug in at rlock__route()), borrows a
 * connection, and maps error replies to status codes.
 */
#ifndef RLOCK_CLIENT_INT_H
#define RLOCK_CLIENT_INT_H

#include <hiredis/hiredis.h>

#include "bg.h"
#include "config_int.h"
#include "pool.h"
#include "pubsub.h"
#include "rlock/client.h"
#include "script.h"
#include "watchdog.h"

struct rlock_client {
  rlock_config cfg;
  char id[37];
  rlock__pool pool;
  rlock__pubsub ps;
  rlock__watchdog wd;
  rlock__bg bg;
};

/* The pool serving `key`. */
rlock__pool *rlock__route(rlock_client *c, const char *key);

/* Run a command on the server owning `route_key`. On RLOCK_OK *out is a
 * reply that is not an error reply (caller frees it); error replies are
 * mapped: WRONGTYPE -> RLOCK_EWRONGTYPE, NOAUTH/WRONGPASS -> RLOCK_EAUTH,
 * anything else -> RLOCK_ESERVER, each with the server's text. */
int rlock__cmd(rlock_client *c, const char *route_key, int argc,
               const char **argv, const size_t *lens, redisReply **out);

/* Run a script with EVALSHA, falling back to EVAL (which also caches it
 * on the server) on NOSCRIPT. kv holds the nkeys keys then the nargs
 * arguments (lens may be NULL for C strings); routed by kv[0]. */
int rlock__cmd_script(rlock_client *c, const rlock__script *s, int nkeys,
                      int nargs, const char **kv, const size_t *lens,
                      redisReply **out);

/* Write "<client id>:<thread id>" for the calling thread into buf
 * (RLOCK_OWNER_MAX bytes). */
void rlock__owner(const rlock_client *c, char *buf);

#endif /* RLOCK_CLIENT_INT_H */
