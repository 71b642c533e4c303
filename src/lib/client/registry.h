/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * registry.h - a client's registry record: its key and text, made once
 * (registry.c), and reading one back. Written by the loop engine's timer
 * (loop/lregistry.c), read by rlock_client_whois (blocking/whois.c).
 */
#ifndef RLOCK_REGISTRY_H
#define RLOCK_REGISTRY_H

#include <stddef.h>

#include "client_int.h"

/* Make the key and text of client `id`, naming `program` ("" for the
 * process's command line). Never fails: what cannot be read is "". */
void rlock__registry_setup(rlock__registry *r, const char *id,
                           const char *program);

/* The client id an owner field ("<uuid>:<thread>") or a bare id starts
 * with, into id[37]: 0, or -1 when it does not start with a UUID. */
int rlock__registry_id(const char *owner, char id[37]);

/* Read a record's text s[len] of client `id` into *out: 0, or -1 when it
 * is not a record. */
int rlock__registry_parse(const char *s, size_t len, const char *id,
                          rlock_client_record *out);

#endif /* RLOCK_REGISTRY_H */
