/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sentinel.h - reading Sentinel's +switch-master messages (the loop
 * engine's watch, loop/lsub.c, follows them for both drivers).
 */
#ifndef RLOCK_SENTINEL_H
#define RLOCK_SENTINEL_H

#include "reply.h"
#include "topo.h"

/* 1 when `r` is a +switch-master message about the target's master
 * ("<name> <old ip> <old port> <new ip> <new port>"). */
int rlock__sentinel_names_master(const rlock__topo *t, const rlock__reply *r);

#endif /* RLOCK_SENTINEL_H */
