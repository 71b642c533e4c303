/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * script.h - the Lua scripts every lock operation runs, embedded at build
 * time from the .lua files in src/lib/scripts/ together with their SHA1
 * (cmake/embed_scripts.cmake), so EVALSHA needs no hashing at run time.
 */
#ifndef RLOCK_SCRIPT_H
#define RLOCK_SCRIPT_H

#include <stddef.h>

typedef struct rlock__script {
  const char *name; /* file stem, for messages */
  const char *sha;  /* 40 lower-case hex digits */
  const char *text;
  size_t len;
} rlock__script;

/* One declaration per file in src/lib/scripts/. */
extern const rlock__script rlock__script_lock_acquire;
extern const rlock__script rlock__script_fenced_acquire;
extern const rlock__script rlock__script_lock_release;
extern const rlock__script rlock__script_lock_force_release;
extern const rlock__script rlock__script_lock_inspect;
extern const rlock__script rlock__script_renew;
extern const rlock__script rlock__script_fair_acquire;
extern const rlock__script rlock__script_fair_release;
extern const rlock__script rlock__script_fair_force_release;
extern const rlock__script rlock__script_fair_leave;
extern const rlock__script rlock__script_fair_inspect;
extern const rlock__script rlock__script_read_acquire;
extern const rlock__script rlock__script_read_release;
extern const rlock__script rlock__script_write_acquire;
extern const rlock__script rlock__script_write_release;
extern const rlock__script rlock__script_rw_force_release;
extern const rlock__script rlock__script_renew_read;
extern const rlock__script rlock__script_list_inspect;
extern const rlock__script rlock__script_list_counts;
extern const rlock__script rlock__script_list_syncs;
extern const rlock__script rlock__script_semaphore;
extern const rlock__script rlock__script_psemaphore;
extern const rlock__script rlock__script_psem_acquire;
extern const rlock__script rlock__script_psem_acquire_sharded;
extern const rlock__script rlock__script_psem_release;
extern const rlock__script rlock__script_psem_release_sharded;
extern const rlock__script rlock__script_psem_renew;
extern const rlock__script rlock__script_latch;
extern const rlock__script rlock__script_election_campaign;
extern const rlock__script rlock__script_election_resign;
extern const rlock__script rlock__script_election_observe;

#endif /* RLOCK_SCRIPT_H */
