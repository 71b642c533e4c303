/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slot.h - Redis Cluster hash slots.
 */
#ifndef RLOCK_SLOT_H
#define RLOCK_SLOT_H

#include <stddef.h>

#define RLOCK__SLOTS 16384

/* The slot of `key` (len bytes) by the Redis rule: CRC16 (XMODEM) mod
 * 16384 of the whole key, or of the content between the first '{' and
 * the first '}' after it when that content is not empty. */
unsigned rlock__slot(const char *key, size_t len);

#endif /* RLOCK_SLOT_H */
