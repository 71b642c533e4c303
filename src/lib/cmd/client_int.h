/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * client_int.h - the definition behind the opaque rlock_client: the state
 * every layer from the command layer up shares (configuration, identity,
 * topology, counters, the driver's table), with the upper layers' own
 * state hung off it by pointer.
 *
 * Lock kinds reach Redis only through the command layer (cmd.h).
 */
#ifndef RLOCK_CLIENT_INT_H
#define RLOCK_CLIENT_INT_H

#include "obs.h"
#include "config_int.h"
#include "topo.h"
#include "rlock/client.h"
#include "script.h"

/* The driver that runs a client: the blocking one (the caller's threads
 * and a background thread, bg.c) or an event loop's (loop/core.c). The
 * layers below reach it only through this table, never by name. */
typedef struct rlock__driver {
  /* rlock_client_free's work, once the checks common to both passed. */
  int (*free)(rlock_client *c);
  /* A watchdog hold was recorded after an idle period: make sure the
   * renewal tick is armed. Called on the thread that recorded the hold,
   * with no library mutex held. */
  void (*renew_arm)(rlock_client *c);
  /* 1 when a renewal and a release may travel on different connections,
   * so popping the last watchdog level waits for a renewal in flight
   * (watchdog.c); 0 when they share each node's one connection, in order
   * (the loop). */
  int release_waits_renewal;
  /* 1: the user's event loop drives the client (rlock_client_new_loop):
   * the _async functions and rlock_loop_* serve it. 0: a blocking client,
   * whose loop state (c->loop) belongs to its background thread. */
  int user_loop;
} rlock__driver;

/* The blocking driver (bg.c). */
extern const rlock__driver rlock__bg_driver;

/* A client's registry record (kinds/registry.c), made when it is set up
 * and written each period by the loop engine (loop/lregistry.c). */
typedef struct rlock__registry {
  char key[64];   /* RLOCK_REGISTRY_PREFIX + the client id */
  char rec[1024]; /* the record's text */
} rlock__registry;

struct rlock_client {
  const rlock__driver *drv;
  rlock_config cfg;
  char id[37];
  rlock__topo topo; /* the servers, and which serves a key */
  /* The hold records (kinds layer), and the blocking driver's subscriber
   * and background thread (NULL for an event-loop client): hung off the
   * client, so this header does not need their definitions. */
  struct rlock__watchdog *wd;
  struct rlock__pubsub *ps;
  struct rlock__bg *bg;
  rlock__obs obs;  /* log hook and counters (obs.h) */
  rlock__tls *tls; /* the TLS context every TLS connection shares, or NULL */
  rlock__origin origin;     /* the process that created it (origin.h): in a
                               fork()ed child every operation is refused */
  struct rlock__loop *loop; /* the loop engine's state (loop/loop.h): the
                               user's event loop drives it (drv->user_loop),
                               or the blocking client's background thread */
  rlock__registry reg;
};

#endif /* RLOCK_CLIENT_INT_H */
