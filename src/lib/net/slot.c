/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slot.c - CRC16 (XMODEM: polynomial 0x1021, initial value 0, no
 * reflection), as the Redis Cluster specification defines the key hash.
 */
#include "slot.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

static uint16_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void) {
  for (unsigned i = 0; i < 256; i++) {
    uint16_t crc = (uint16_t)(i << 8);
    for (int b = 0; b < 8; b++)
      crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    table[i] = crc;
  }
}

static uint16_t crc16(const unsigned char *p, size_t n) {
  uint16_t crc = 0;
  for (size_t i = 0; i < n; i++)
    crc = (uint16_t)((crc << 8) ^ table[((crc >> 8) ^ p[i]) & 0xff]);
  return crc;
}

unsigned rlock__slot(const char *key, size_t len) {
  pthread_once(&table_once, build_table);
  const char *open = memchr(key, '{', len);
  if (open != NULL) {
    const char *from = open + 1;
    const char *close = memchr(from, '}', len - (size_t)(from - key));
    if (close != NULL && close > from) {
      key = from;
      len = (size_t)(close - from);
    }
  }
  return crc16((const unsigned char *)key, len) & (RLOCK__SLOTS - 1);
}
