/*
 * sentinel.h - finding the master through Redis Sentinel.
 */
#ifndef RLOCK_SENTINEL_H
#define RLOCK_SENTINEL_H

#include "topo.h"

/* Ask the sentinels, in order, for the master named by the target (SENTINEL
 * get-master-addr-by-name), check with ROLE that the server named is a
 * master (a sentinel may lag behind a failover), and make it the
 * topology's primary node. RLOCK_OK, or the last failure: RLOCK_EIO when
 * no sentinel answered or none named a master that says it is one,
 * RLOCK_EAUTH when a sentinel or the master refused the credentials. */
int rlock__sentinel_refresh(rlock__topo *t);

#endif /* RLOCK_SENTINEL_H */
