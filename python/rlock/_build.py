# SPDX-License-Identifier: BSD-3-Clause
"""The cffi builder of ``rlock._rlock_cffi`` (API mode, out of line).

``setup.py`` names it in ``cffi_modules`` (and reads the version through
``library_version``); it is not imported at run time. Where librlock's
headers and library are: ``find_librlock()`` (the tree's ``include/`` and
a build directory, or an installed librlock through pkg-config). The
generated C source names the librlock it links (``link_stamp()``), so a
build directory that holds an extension built against another librlock,
or against one since rebuilt or moved, builds it again instead of
reusing it.

Every function declared here is called by cffi with the GIL released
(cffi's generated wrappers put each call between Py_BEGIN_ALLOW_THREADS
and Py_END_ALLOW_THREADS), so a thread that waits for a lock lets the
others run. The ``extern "Python"`` functions are the C callbacks, bound
with ``@ffi.def_extern()`` in ``rlock/_native.py``; cffi takes the GIL
when the library calls them, from whatever thread.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from typing import Any, Dict, List

import cffi

CDEF = r"""
typedef enum rlock_status {
  RLOCK_OK, RLOCK_EINVAL, RLOCK_ENOMEM, RLOCK_EIO, RLOCK_ETIMEOUT,
  RLOCK_EPROTO, RLOCK_ESERVER, RLOCK_EAUTH, RLOCK_EWRONGTYPE, RLOCK_ELOCKED,
  RLOCK_ENOTHELD, RLOCK_ELOST, RLOCK_ECLOSED, RLOCK_ECANCELED,
  RLOCK_EDEADLK, RLOCK_EREPLICA, RLOCK_EHELD, ...
} rlock_status;

typedef struct rlock_error { int code; const char *message; } rlock_error;
const rlock_error *rlock_error_last(void);
const char *rlock_strerror(int code);

#define RLOCK_VERSION_MAJOR ...
#define RLOCK_VERSION_MINOR ...
#define RLOCK_VERSION_PATCH ...
unsigned rlock_version(void);
const char *rlock_version_string(void);

/* config.h */
typedef struct rlock_config rlock_config;
#define RLOCK_MAX_DURATION_MS ...
#define RLOCK_RETRY_FOREVER ...
typedef void (*rlock_lost_fn)(const char *name, const char *owner,
                              void *userdata);
typedef enum rlock_pubsub_mode {
  RLOCK_PUBSUB_AUTO, RLOCK_PUBSUB_CLASSIC, RLOCK_PUBSUB_SHARDED, ...
} rlock_pubsub_mode;
typedef enum rlock_log_level {
  RLOCK_LOG_ERROR, RLOCK_LOG_WARN, RLOCK_LOG_INFO, RLOCK_LOG_DEBUG, ...
} rlock_log_level;
typedef void (*rlock_log_fn)(rlock_log_level level, const char *message,
                             void *userdata);
int rlock_config_new(rlock_config **out);
void rlock_config_free(rlock_config *cfg);
int rlock_config_set_url(rlock_config *cfg, const char *url);
int rlock_config_set_connect_timeout_ms(rlock_config *cfg, int64_t ms);
int rlock_config_set_command_timeout_ms(rlock_config *cfg, int64_t ms);
int rlock_config_set_watchdog_timeout_ms(rlock_config *cfg, int64_t ms);
int rlock_config_set_fair_wait_timeout_ms(rlock_config *cfg, int64_t ms);
int rlock_config_set_unreachable_retry_ms(rlock_config *cfg, int64_t ms);
int rlock_config_set_pool_size(rlock_config *cfg, int size);
int rlock_config_set_pubsub_mode(rlock_config *cfg, int mode);
int rlock_config_set_fair_deferred_shift(rlock_config *cfg, int on);
int rlock_config_set_replica_sync(rlock_config *cfg, int on);
int rlock_config_set_replica_sync_timeout_ms(rlock_config *cfg, int64_t ms);
int rlock_config_set_lost_callback(rlock_config *cfg, rlock_lost_fn fn,
                                   void *userdata);
int rlock_config_set_tls_ca(rlock_config *cfg, const char *ca_file,
                            const char *ca_dir);
int rlock_config_set_tls_cert(rlock_config *cfg, const char *cert_file,
                              const char *key_file);
int rlock_config_set_tls_server_name(rlock_config *cfg, const char *name);
int rlock_config_set_tls_insecure(rlock_config *cfg, int insecure);
int rlock_config_set_password(rlock_config *cfg, const char *user,
                              const char *password);
int rlock_config_set_subscription_linger(rlock_config *cfg, int64_t ms,
                                         int max_idle);
#define RLOCK_METRICS_NAMES_MAX ...
int rlock_config_set_metrics_names(rlock_config *cfg, int max_names);
#define RLOCK_REGISTRY_PERIOD_DEFAULT ...
#define RLOCK_PROGRAM_MAX ...
int rlock_config_set_registry_period(rlock_config *cfg, int64_t period_ms);
int rlock_config_set_program(rlock_config *cfg, const char *program);
int rlock_config_set_log(rlock_config *cfg, rlock_log_fn fn,
                         rlock_log_level max_level, void *userdata);

/* client.h */
typedef struct rlock_client rlock_client;
#define RLOCK_OWNER_MAX ...
int rlock_client_new(rlock_client **out, const rlock_config *cfg);
int rlock_client_free(rlock_client *client);
const char *rlock_client_id(const rlock_client *client);
int rlock_client_owner(char *buf, size_t size, const rlock_client *client);
const char *rlock_client_topology(const rlock_client *client);
int rlock_client_ping(rlock_client *client, int64_t *rtt_us);
typedef struct rlock_client_record {
  char client_id[37]; char host[256]; long long pid; char program[257];
  char version[32]; int64_t started_ms;
} rlock_client_record;
int rlock_client_whois(rlock_client *client, const char *owner,
                       rlock_client_record *out);
typedef struct rlock_stats {
  uint64_t acquisitions; uint64_t waits; uint64_t wakeups; uint64_t releases;
  uint64_t renewals; uint64_t renewal_failures; uint64_t lost;
  uint64_t connects; uint64_t connect_failures; uint64_t disconnects;
  uint64_t topology_changes; uint64_t redirections; uint64_t reconnects;
  ...;
} rlock_stats;
int rlock_client_stats(const rlock_client *client, rlock_stats *out,
                       size_t size);
#define RLOCK_METRICS_OPENMETRICS ...
int rlock_client_metrics_text(const rlock_client *client, char *buf,
                              size_t size, size_t *needed, unsigned flags);

/* lock.h */
typedef struct rlock_lock rlock_lock;
typedef struct rlock_lock_info rlock_lock_info;
typedef struct rlock_cancel rlock_cancel;
#define RLOCK_MAX_NAME_LEN ...
#define RLOCK_WAIT_FOREVER ...
#define RLOCK_LEASE_WATCHDOG ...
uint64_t rlock_owner_new(void);
uint64_t rlock_owner_thread(void);
typedef struct rlock_acquire_options {
  unsigned int version; int64_t wait_ms; int64_t lease_ms;
  rlock_cancel *cancel; uint64_t owner; int64_t *token; ...;
} rlock_acquire_options;
#define RLOCK_ACQUIRE_OPTIONS_VERSION ...
int rlock_acquire_options_init(rlock_acquire_options *opts,
                               unsigned int version);
int rlock_lock_new(rlock_lock **out, rlock_client *client, const char *name);
int rlock_lock_new_fair(rlock_lock **out, rlock_client *client,
                        const char *name);
int rlock_lock_new_read(rlock_lock **out, rlock_client *client,
                        const char *name);
int rlock_lock_new_write(rlock_lock **out, rlock_client *client,
                         const char *name);
int rlock_lock_new_fenced(rlock_lock **out, rlock_client *client,
                          const char *name);
int rlock_lock_new_nonreentrant(rlock_lock **out, rlock_client *client,
                                const char *name);
int rlock_lock_new_fair_nonreentrant(rlock_lock **out, rlock_client *client,
                                     const char *name);
int rlock_lock_token(int64_t *token, rlock_lock *lock);
int rlock_lock_new_spin(rlock_lock **out, rlock_client *client,
                        const char *name);
typedef enum rlock_spin_backoff {
  RLOCK_SPIN_EXPONENTIAL, RLOCK_SPIN_CONSTANT, ...
} rlock_spin_backoff;
typedef struct rlock_spin_options {
  unsigned int version; int backoff; int64_t initial_ms; int64_t max_ms;
  double multiplier; int jitter; int64_t delay_ms; ...;
} rlock_spin_options;
#define RLOCK_SPIN_OPTIONS_VERSION ...
int rlock_spin_options_init(rlock_spin_options *opts, unsigned int version);
int rlock_lock_new_spin_opts(rlock_lock **out, rlock_client *client,
                             const char *name, const rlock_spin_options *opts);
void rlock_lock_free(rlock_lock *lock);
const char *rlock_lock_name(const rlock_lock *lock);
int rlock_lock_try_acquire_cancel(rlock_lock *lock, int64_t wait_ms,
                                  int64_t lease_ms, rlock_cancel *cancel);
int rlock_lock_acquire_opts(rlock_lock *lock,
                            const rlock_acquire_options *opts);
int rlock_cancel_new(rlock_cancel **out);
void rlock_cancel_free(rlock_cancel *cancel);
void rlock_cancel_fire(rlock_cancel *cancel);
void rlock_cancel_reset(rlock_cancel *cancel);
int rlock_cancel_fired(const rlock_cancel *cancel);
int rlock_lock_release(rlock_lock *lock);
int rlock_lock_release_owner(rlock_lock *lock, uint64_t owner);
int rlock_lock_force_release(int *deleted, rlock_lock *lock);
int rlock_lock_check_owner(rlock_lock *lock, uint64_t owner);
int rlock_lock_extend_owner(rlock_lock *lock, uint64_t owner, int64_t lease_ms);
int rlock_lock_is_locked(int *locked, rlock_lock *lock);
int rlock_lock_is_held_owner(int *held, rlock_lock *lock, uint64_t owner);
int rlock_lock_hold_count_owner(int64_t *count, rlock_lock *lock,
                                uint64_t owner);
int rlock_lock_ttl(int64_t *ttl_ms, rlock_lock *lock);
int rlock_lock_inspect(rlock_lock_info **out, rlock_lock *lock);
int rlock_lock_info_locked(const rlock_lock_info *info);
const char *rlock_lock_info_mode(const rlock_lock_info *info);
const char *rlock_lock_info_node(const rlock_lock_info *info);
int64_t rlock_lock_info_ttl_ms(const rlock_lock_info *info);
size_t rlock_lock_info_holder_count(const rlock_lock_info *info);
const char *rlock_lock_info_holder_owner(const rlock_lock_info *info,
                                         size_t i);
int64_t rlock_lock_info_holder_holds(const rlock_lock_info *info, size_t i);
size_t rlock_lock_info_queue_count(const rlock_lock_info *info);
const char *rlock_lock_info_queue_owner(const rlock_lock_info *info,
                                        size_t i);
int64_t rlock_lock_info_queue_deadline_ms(const rlock_lock_info *info,
                                          size_t i);
void rlock_lock_info_free(rlock_lock_info *info);
size_t rlock_lock_info_queue_length(const rlock_lock_info *info);
typedef int (*rlock_lock_list_fn)(const char *name, const char *kind,
                                  const rlock_lock_info *info, void *arg);
int rlock_client_list_locks(rlock_client *client, const char *pattern,
                            rlock_lock_list_fn fn, void *arg);
typedef int (*rlock_count_list_fn)(const char *name, const char *kind,
                                   int64_t available, int64_t leased,
                                   const char *node, void *arg);
int rlock_client_list_counts(rlock_client *client, const char *pattern,
                             rlock_count_list_fn fn, void *arg);
typedef int (*rlock_sync_list_fn)(const char *name, const char *kind,
                                  int64_t value, int64_t leased,
                                  int64_t subscribers, const char *node,
                                  void *arg);
int rlock_client_list_syncs(rlock_client *client, const char *pattern,
                            rlock_sync_list_fn fn, void *arg);

/* semaphore.h */
#define RLOCK_MAX_PERMITS ...
#define RLOCK_PERMIT_ID_LEN ...
typedef struct rlock_semaphore rlock_semaphore;
int rlock_semaphore_new(rlock_semaphore **out, rlock_client *client,
                        const char *name);
void rlock_semaphore_free(rlock_semaphore *sem);
int rlock_semaphore_try_set_permits(int *set, rlock_semaphore *sem,
                                    int64_t permits);
int rlock_semaphore_set_permits(rlock_semaphore *sem, int64_t permits);
int rlock_semaphore_add_permits(rlock_semaphore *sem, int64_t delta);
int rlock_semaphore_release(rlock_semaphore *sem, int64_t permits);
int rlock_semaphore_available(int64_t *available, rlock_semaphore *sem);
int rlock_semaphore_drain(int64_t *drained, rlock_semaphore *sem);
typedef struct rlock_psemaphore rlock_psemaphore;
int rlock_psemaphore_new(rlock_psemaphore **out, rlock_client *client,
                         const char *name);
void rlock_psemaphore_free(rlock_psemaphore *sem);
int rlock_psemaphore_try_set_permits(int *set, rlock_psemaphore *sem,
                                     int64_t permits);
int rlock_psemaphore_set_permits(rlock_psemaphore *sem, int64_t permits);
int rlock_psemaphore_add_permits(rlock_psemaphore *sem, int64_t delta);
int rlock_psemaphore_release(rlock_psemaphore *sem, const char *id);
int rlock_psemaphore_update_lease(rlock_psemaphore *sem, const char *id,
                                  int64_t lease_ms);
int rlock_psemaphore_check(rlock_psemaphore *sem, const char *id);
int rlock_psemaphore_available(int64_t *available, rlock_psemaphore *sem);
int rlock_psemaphore_permits(int64_t *permits, rlock_psemaphore *sem);
int rlock_psemaphore_lease_ms(int64_t *remaining_ms, rlock_psemaphore *sem,
                              const char *id);

/* latch.h */
typedef struct rlock_latch rlock_latch;
int rlock_latch_new(rlock_latch **out, rlock_client *client,
                    const char *name);
void rlock_latch_free(rlock_latch *latch);
int rlock_latch_try_set_count(int *set, rlock_latch *latch, int64_t count);
int rlock_latch_count_down(rlock_latch *latch);
int rlock_latch_count(int64_t *count, rlock_latch *latch);
int rlock_latch_delete(int *deleted, rlock_latch *latch);

/* multilock.h */
typedef struct rlock_multilock rlock_multilock;
#define RLOCK_MAX_MEMBERS ...
int rlock_multilock_new(rlock_multilock **out, rlock_lock *const *members,
                        size_t n);
void rlock_multilock_free(rlock_multilock *m);
int rlock_multilock_acquire_opts(rlock_multilock *m,
                                 const rlock_acquire_options *opts);
int rlock_multilock_release_owner(rlock_multilock *m, uint64_t owner);
int rlock_multilock_is_held_owner(int *held, rlock_multilock *m,
                                  uint64_t owner);

/* redlock.h */
typedef struct rlock_redlock rlock_redlock;
typedef struct rlock_redlock_result rlock_redlock_result;
#define RLOCK_MAX_REDLOCK_MEMBERS ...
int rlock_redlock_new(rlock_redlock **out, rlock_lock *const *members,
                      size_t n);
void rlock_redlock_free(rlock_redlock *r);
int rlock_redlock_acquire_opts(rlock_redlock_result **result,
                               rlock_redlock *r,
                               const rlock_acquire_options *opts);
int rlock_redlock_release_owner(rlock_redlock *r, uint64_t owner);
int64_t rlock_redlock_result_validity_ms(const rlock_redlock_result *res);
size_t rlock_redlock_result_count(const rlock_redlock_result *res);
int rlock_redlock_result_status(const rlock_redlock_result *res, size_t i);
const char *rlock_redlock_result_message(const rlock_redlock_result *res,
                                         size_t i);
void rlock_redlock_result_free(rlock_redlock_result *res);

/* loop.h */
#define RLOCK_LOOP_READ ...
#define RLOCK_LOOP_WRITE ...
#define RLOCK_LOOP_VERSION ...
typedef struct rlock_loop {
  unsigned int version;
  void *data;
  int (*watch)(void *data, int fd, int events);
  void (*timer)(void *data, int64_t after_ms);
  void (*wake)(void *data);
  void (*detach)(void *data);
  ...;
} rlock_loop;
int rlock_client_new_loop(rlock_client **out, const rlock_config *cfg,
                          const rlock_loop *loop);
void rlock_loop_io(rlock_client *client, int fd, int events);
void rlock_loop_timer(rlock_client *client);
void rlock_loop_wake(rlock_client *client);
typedef struct rlock_op rlock_op;
typedef void (*rlock_async_fn)(void *arg, int rc, int64_t value);
int rlock_lock_acquire_async(rlock_lock *lock,
                             const rlock_acquire_options *opts,
                             rlock_async_fn cb, void *arg, rlock_op **op);
int rlock_op_cancel(rlock_op *op);
int rlock_lock_release_async(rlock_lock *lock, uint64_t owner,
                             rlock_async_fn cb, void *arg);
int rlock_lock_force_release_async(rlock_lock *lock, rlock_async_fn cb,
                                   void *arg);
int rlock_lock_is_locked_async(rlock_lock *lock, rlock_async_fn cb,
                               void *arg);
int rlock_lock_extend_async(rlock_lock *lock, uint64_t owner, int64_t lease_ms,
                            rlock_async_fn cb, void *arg);
int rlock_lock_hold_count_async(rlock_lock *lock, uint64_t owner,
                                rlock_async_fn cb, void *arg);
int rlock_lock_ttl_async(rlock_lock *lock, rlock_async_fn cb, void *arg);
typedef void (*rlock_info_fn)(void *arg, int rc, rlock_lock_info *info);
int rlock_lock_inspect_async(rlock_lock *lock, rlock_info_fn cb, void *arg);
int rlock_multilock_acquire_async(rlock_multilock *m,
                                  const rlock_acquire_options *opts,
                                  rlock_async_fn cb, void *arg,
                                  rlock_op **op);
int rlock_multilock_release_async(rlock_multilock *m, uint64_t owner,
                                  rlock_async_fn cb, void *arg);
typedef void (*rlock_redlock_fn)(void *arg, int rc, int64_t validity_ms,
                                 rlock_redlock_result *result);
int rlock_redlock_acquire_async_result(rlock_redlock *r,
                                       const rlock_acquire_options *opts,
                                       rlock_redlock_fn cb, void *arg,
                                       rlock_op **op);
int rlock_redlock_release_async_result(rlock_redlock *r, uint64_t owner,
                                       rlock_redlock_fn cb, void *arg);

typedef void (*rlock_permit_fn)(void *arg, int rc, const char *id);
int rlock_semaphore_acquire_async(rlock_semaphore *sem, int64_t permits,
                                  int64_t wait_ms, rlock_async_fn cb,
                                  void *arg, rlock_op **op);
int rlock_semaphore_release_async(rlock_semaphore *sem, int64_t permits,
                                  rlock_async_fn cb, void *arg);
int rlock_semaphore_try_set_permits_async(rlock_semaphore *sem,
                                          int64_t permits, rlock_async_fn cb,
                                          void *arg);
int rlock_semaphore_set_permits_async(rlock_semaphore *sem, int64_t permits,
                                      rlock_async_fn cb, void *arg);
int rlock_semaphore_add_permits_async(rlock_semaphore *sem, int64_t delta,
                                      rlock_async_fn cb, void *arg);
int rlock_semaphore_available_async(rlock_semaphore *sem, rlock_async_fn cb,
                                    void *arg);
int rlock_semaphore_drain_async(rlock_semaphore *sem, rlock_async_fn cb,
                                void *arg);
int rlock_psemaphore_acquire_async(rlock_psemaphore *sem, int64_t wait_ms,
                                   int64_t lease_ms, rlock_permit_fn cb,
                                   void *arg, rlock_op **op);
int rlock_psemaphore_release_async(rlock_psemaphore *sem, const char *id,
                                   rlock_async_fn cb, void *arg);
int rlock_psemaphore_update_lease_async(rlock_psemaphore *sem,
                                        const char *id, int64_t lease_ms,
                                        rlock_async_fn cb, void *arg);
int rlock_psemaphore_try_set_permits_async(rlock_psemaphore *sem,
                                           int64_t permits,
                                           rlock_async_fn cb, void *arg);
int rlock_psemaphore_set_permits_async(rlock_psemaphore *sem,
                                       int64_t permits, rlock_async_fn cb,
                                       void *arg);
int rlock_psemaphore_add_permits_async(rlock_psemaphore *sem, int64_t delta,
                                       rlock_async_fn cb, void *arg);
int rlock_psemaphore_available_async(rlock_psemaphore *sem,
                                     rlock_async_fn cb, void *arg);
int rlock_psemaphore_permits_async(rlock_psemaphore *sem, rlock_async_fn cb,
                                   void *arg);
int rlock_psemaphore_lease_ms_async(rlock_psemaphore *sem, const char *id,
                                    rlock_async_fn cb, void *arg);
int rlock_latch_try_set_count_async(rlock_latch *latch, int64_t count,
                                    rlock_async_fn cb, void *arg);
int rlock_latch_count_down_async(rlock_latch *latch, rlock_async_fn cb,
                                 void *arg);
int rlock_latch_count_async(rlock_latch *latch, rlock_async_fn cb, void *arg);
int rlock_latch_await_async(rlock_latch *latch, int64_t wait_ms,
                            rlock_async_fn cb, void *arg, rlock_op **op);
int rlock_latch_delete_async(rlock_latch *latch, rlock_async_fn cb,
                             void *arg);
typedef struct rlock_election rlock_election;
typedef struct rlock_leader rlock_leader;
#define RLOCK_MAX_LEADER_VALUE ...
int rlock_election_new(rlock_election **out, rlock_client *client,
                       const char *name);
void rlock_election_free(rlock_election *e);
int rlock_election_resign(rlock_election *e, uint64_t owner);
int rlock_election_check(rlock_election *e, uint64_t owner);
int rlock_election_observe(rlock_leader **out, rlock_election *e);
int rlock_leader_present(const rlock_leader *l);
const char *rlock_leader_owner(const rlock_leader *l);
const char *rlock_leader_value(const rlock_leader *l);
int64_t rlock_leader_term(const rlock_leader *l);
int64_t rlock_leader_ttl_ms(const rlock_leader *l);
void rlock_leader_free(rlock_leader *l);
int rlock_election_campaign_async(rlock_election *e, const char *value,
                                  const rlock_acquire_options *opts,
                                  rlock_async_fn cb, void *arg, rlock_op **op);
int rlock_election_resign_async(rlock_election *e, uint64_t owner,
                                rlock_async_fn cb, void *arg);
typedef void (*rlock_leader_fn)(void *arg, int rc, rlock_leader *leader);
int rlock_election_observe_async(rlock_election *e, rlock_leader_fn cb,
                                 void *arg);
typedef void (*rlock_record_fn)(void *arg, int rc,
                                const rlock_client_record *record);
int rlock_client_whois_async(rlock_client *client, const char *owner,
                             rlock_record_fn cb, void *arg);
typedef struct rlock_election_watch rlock_election_watch;
typedef void (*rlock_leader_change_fn)(void *arg, int rc,
                                       rlock_leader *leader);
int rlock_election_watch_new(rlock_election_watch **out, rlock_election *e,
                             int64_t interval_ms, rlock_leader_change_fn fn,
                             void *arg);
void rlock_election_watch_free(rlock_election_watch *w);

/* The binding's own C (SOURCE below): SIGINT during a main-thread wait. */
int rlock_py_intr_arm(rlock_cancel *token);
int rlock_py_intr_disarm(void);
int rlock_py_lock_acquire(rlock_lock *lock, const rlock_acquire_options *opts,
                          int *rc);
int rlock_py_lock_try_acquire(rlock_lock *lock, int64_t wait_ms,
                              int64_t lease_ms, rlock_cancel *cancel,
                              int *rc);
int rlock_py_multilock_acquire(rlock_multilock *m,
                               const rlock_acquire_options *opts, int *rc);
int rlock_py_election_campaign(rlock_election *e, const char *value,
                               const rlock_acquire_options *opts,
                               int64_t *term, int *rc);
int rlock_py_redlock_acquire(rlock_redlock_result **result, rlock_redlock *r,
                             const rlock_acquire_options *opts, int *rc);

int rlock_py_semaphore_acquire(rlock_semaphore *sem, int64_t permits,
                               int64_t wait_ms, rlock_cancel *cancel,
                               int *rc);
int rlock_py_psemaphore_acquire(char *id, rlock_psemaphore *sem,
                                int64_t wait_ms, int64_t lease_ms,
                                rlock_cancel *cancel, int *rc);
int rlock_py_latch_await(rlock_latch *latch, int64_t wait_ms,
                         rlock_cancel *cancel, int *rc);

/* The callbacks, in Python (rlock/_native.py). */
extern "Python" void _rlock_lost_cb(const char *, const char *, void *);
extern "Python" void _rlock_log_cb(rlock_log_level, const char *, void *);
extern "Python" int _rlock_list_cb(const char *, const char *,
                                   const rlock_lock_info *, void *);
extern "Python" int _rlock_count_cb(const char *, const char *, int64_t,
                                    int64_t, const char *, void *);
extern "Python" int _rlock_sync_cb(const char *, const char *, int64_t,
                                   int64_t, int64_t, const char *, void *);
extern "Python" int _rlock_loop_watch(void *, int, int);
extern "Python" void _rlock_loop_timer(void *, int64_t);
extern "Python" void _rlock_loop_wake(void *);
extern "Python" void _rlock_loop_detach(void *);
extern "Python" void _rlock_async_done(void *, int, int64_t);
extern "Python" void _rlock_info_done(void *, int, rlock_lock_info *);
extern "Python" void _rlock_leader_done(void *, int, rlock_leader *);
extern "Python" void _rlock_record_done(void *, int,
                                        const rlock_client_record *);
extern "Python" void _rlock_redlock_done(void *, int, int64_t,
                                         rlock_redlock_result *);
extern "Python" void _rlock_permit_done(void *, int, const char *);
extern "Python" void _rlock_leader_change(void *, int, rlock_leader *);
"""


HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.dirname(os.path.dirname(HERE))  # python/rlock/ -> the tree


def _pkg_config(*args: str) -> List[str]:
    out = subprocess.run(["pkg-config", *args, "rlock"], check=True,
                         capture_output=True, text=True).stdout
    return shlex.split(out)


def _runtime_dirs(libdirs: List[str]) -> List[str]:
    """The RUNPATH the extension records: ``libdirs``, or none when
    RLOCK_NO_RPATH=1 (librlock is in a directory the dynamic loader
    searches anyway, as in Debian's python3-rlock)."""
    return [] if os.environ.get("RLOCK_NO_RPATH") == "1" else libdirs


def find_librlock() -> Dict[str, Any]:
    """Where librlock's headers and library are, as build arguments.

    RLOCK_BUILD_DIR set: the source tree's include/ (or RLOCK_INCLUDE_DIR)
    and the library built there, found at run time through a RUNPATH to
    that directory. Else an installed librlock through pkg-config (rlock.pc;
    PKG_CONFIG_PATH may point at a prefix), with a RUNPATH to its library
    directory where that is not one the dynamic loader searches (pkg-config
    leaves those out). Else the tree's build/ when it holds librlock.so.
    RLOCK_NO_RPATH=1: no RUNPATH in any case. "library" is the librlock.so
    linked, for ``link_stamp()``.
    """
    build = os.environ.get("RLOCK_BUILD_DIR")
    if not build and shutil.which("pkg-config"):
        try:
            cflags = _pkg_config("--cflags")
            libs = _pkg_config("--libs")
        except subprocess.CalledProcessError:
            cflags = libs = []
        if libs:
            # rlock.pc's includedir first: pkg-config leaves it out of
            # --cflags where it is a system directory (Debian's
            # librlock-dev: /usr/include) but still names hiredis's.
            incdir = _pkg_config("--variable=includedir")[0]
            inc = [incdir] + [f[2:] for f in cflags
                              if f.startswith("-I") and f[2:] != incdir]
            libdirs = [f[2:] for f in libs if f.startswith("-L")]
            libdir = _pkg_config("--variable=libdir")[0]
            return {"include_dirs": inc, "library_dirs": libdirs,
                    "runtime_library_dirs": _runtime_dirs(libdirs),
                    "libraries": ["rlock"], "source": "pkg-config rlock",
                    "library": os.path.join(libdir, "librlock.so")}
    if not build and os.path.exists(os.path.join(TREE, "build",
                                                 "librlock.so")):
        build = os.path.join(TREE, "build")
    if not build:
        raise RuntimeError(
            "rlock: librlock not found: set RLOCK_BUILD_DIR to a build "
            "directory of the rlock tree (cmake -B build), or install "
            "librlock where pkg-config finds rlock.pc (PKG_CONFIG_PATH)")
    build = os.path.abspath(build)
    incdir = os.environ.get("RLOCK_INCLUDE_DIR",
                            os.path.join(TREE, "include"))
    for need in (os.path.join(incdir, "rlock.h"),
                 os.path.join(build, "librlock.so")):
        if not os.path.exists(need):
            raise RuntimeError(f"rlock: {need} is missing (RLOCK_BUILD_DIR="
                               f"{build}, include directory {incdir})")
    return {"include_dirs": [incdir], "library_dirs": [build],
            "runtime_library_dirs": _runtime_dirs([build]),
            "libraries": ["rlock"], "source": build,
            "library": os.path.join(build, "librlock.so")}


def _headers(include_dirs: List[str]) -> List[str]:
    """rlock.h and rlock/*.h in the first include directory that has
    rlock.h: the extension depends on them (setuptools rebuilds it when
    one is newer)."""
    for d in include_dirs:
        top = os.path.join(d, "rlock.h")
        if os.path.exists(top):
            sub = os.path.join(d, "rlock")
            return [top] + sorted(
                os.path.join(sub, f) for f in os.listdir(sub)
                if f.endswith(".h"))
    return []


def link_stamp(args: Dict[str, Any]) -> str:
    """A C comment naming what the extension is built against: the
    librlock.so linked (resolved, with its size and modification time),
    the include directories and the RUNPATH.

    It heads the generated C source, which cffi rewrites only when its text
    changes and setuptools compiles only when it is newer than the
    extension: a stamp that changes with the library makes a rebuild of
    an extension built before against another librlock (another build
    directory or prefix, the same one rebuilt, or moved), which would
    otherwise be reused, still linked to the old one.
    """
    lib = os.path.realpath(args["library"])
    try:
        st = os.stat(lib)
        what = f"{lib} ({st.st_size} bytes, mtime {st.st_mtime_ns} ns)"
    except OSError:
        what = f"{lib} (not found: the linker searches its own path)"
    text = (f"rlock: built against {what}; include directories "
            f"{args['include_dirs']}; RUNPATH "
            f"{args['runtime_library_dirs']}")
    return "/* " + text.replace("*/", "* /") + " */\n"


def library_version(include_dirs: List[str]) -> str:
    """"MAJOR.MINOR.PATCH" from rlock/version.h in the first include
    directory that has it: the package's version is the library's."""
    for d in include_dirs:
        path = os.path.join(d, "rlock", "version.h")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            parts = [re.search(r"#define RLOCK_VERSION_%s (\d+)" % k, text)
                     for k in ("MAJOR", "MINOR", "PATCH")]
            if all(parts):
                return ".".join(m.group(1) for m in parts if m)
    raise RuntimeError(f"rlock: no rlock/version.h in {include_dirs}")


# Compiled into the module beside the declarations: what Python cannot do
# itself. rlock/_wait.py says why and how it is used.
SOURCE = r"""
#include <rlock.h>
#include <signal.h>
#include <string.h>

/* SIGINT while the main thread waits in the library. Python runs its
 * signal handlers only between bytecodes of the main thread, so a wait in
 * C would run to its end first. While armed, this handler stands in front
 * of Python's: it fires the waiting call's cancel token (async-signal-safe)
 * and records the signal; it does not call Python's handler, so that no
 * exception can be raised before the binding has read the call's status
 * (it hands the signal to Python's handler itself, after disarming). Armed
 * only by the main thread (the only one Python lets change handlers), and
 * only in front of a handler that is neither SIG_DFL nor SIG_IGN. */
static rlock_cancel *volatile rlock_py_intr_token;
static volatile sig_atomic_t rlock_py_intr_hit;
static struct sigaction rlock_py_intr_prev;
static int rlock_py_intr_armed;

static void rlock_py_intr_handler(int sig) {
  rlock_cancel *token = rlock_py_intr_token;
  (void)sig;
  rlock_py_intr_hit = 1;
  if (token != NULL)
    rlock_cancel_fire(token);
}

/* 1 when armed, 0 when left alone (already armed, or SIGINT's action is
 * SIG_DFL or SIG_IGN), -1 when sigaction failed (errno). */
static int rlock_py_intr_arm(rlock_cancel *token) {
  struct sigaction sa, cur;
  if (token == NULL || rlock_py_intr_armed)
    return 0;
  if (sigaction(SIGINT, NULL, &cur) != 0)
    return -1;
  if (!(cur.sa_flags & SA_SIGINFO) &&
      (cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN))
    return 0;
  rlock_py_intr_hit = 0;
  rlock_py_intr_token = token;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = rlock_py_intr_handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_ONSTACK; /* as Python's: no SA_RESTART */
  if (sigaction(SIGINT, &sa, &rlock_py_intr_prev) != 0) {
    rlock_py_intr_token = NULL;
    return -1;
  }
  rlock_py_intr_armed = 1;
  return 1;
}

/* Put the handler found by arm back (nothing when not armed); returns 1
 * when SIGINT came while armed, and forgets it. */
static int rlock_py_intr_disarm(void) {
  int hit;
  if (rlock_py_intr_armed) {
    sigaction(SIGINT, &rlock_py_intr_prev, NULL);
    rlock_py_intr_armed = 0;
    rlock_py_intr_token = NULL;
  }
  hit = rlock_py_intr_hit != 0;
  rlock_py_intr_hit = 0;
  return hit;
}

/* The blocking acquisitions, storing their status in *rc as well: CPython
 * may raise a pending exception (another signal's handler) right after a
 * call returns, before its result is stored; *rc still says whether a
 * hold was taken, to give it back. */
static int rlock_py_lock_acquire(rlock_lock *lock,
                                 const rlock_acquire_options *opts, int *rc) {
  return *rc = rlock_lock_acquire_opts(lock, opts);
}

static int rlock_py_lock_try_acquire(rlock_lock *lock, int64_t wait_ms,
                                     int64_t lease_ms, rlock_cancel *cancel,
                                     int *rc) {
  return *rc = rlock_lock_try_acquire_cancel(lock, wait_ms, lease_ms, cancel);
}

static int rlock_py_election_campaign(rlock_election *e, const char *value,
                                      const rlock_acquire_options *opts,
                                      int64_t *term, int *rc) {
  return *rc = rlock_election_campaign(e, value, opts, term);
}

static int rlock_py_multilock_acquire(rlock_multilock *m,
                                      const rlock_acquire_options *opts,
                                      int *rc) {
  return *rc = rlock_multilock_acquire_opts(m, opts);
}

static int rlock_py_redlock_acquire(rlock_redlock_result **result,
                                    rlock_redlock *r,
                                    const rlock_acquire_options *opts,
                                    int *rc) {
  return *rc = rlock_redlock_acquire_opts(result, r, opts);
}

/* The semaphores' and the latch's waits, for rlock/_wait.py (the same
 * reason as above: the status stored where the binding can read it). */
static int rlock_py_semaphore_acquire(rlock_semaphore *sem, int64_t permits,
                                      int64_t wait_ms, rlock_cancel *cancel,
                                      int *rc) {
  return *rc = rlock_semaphore_acquire(sem, permits, wait_ms, cancel);
}

static int rlock_py_psemaphore_acquire(char *id, rlock_psemaphore *sem,
                                       int64_t wait_ms, int64_t lease_ms,
                                       rlock_cancel *cancel, int *rc) {
  return *rc = rlock_psemaphore_acquire(id, sem, wait_ms, lease_ms, cancel);
}

static int rlock_py_latch_await(rlock_latch *latch, int64_t wait_ms,
                                rlock_cancel *cancel, int *rc) {
  return *rc = rlock_latch_await(latch, wait_ms, cancel);
}
"""

BUILD_ARGS = find_librlock()
ffibuilder = cffi.FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "rlock._rlock_cffi", link_stamp(BUILD_ARGS) + SOURCE,
    depends=[p for p in _headers(BUILD_ARGS["include_dirs"]) +
             [BUILD_ARGS["library"]] if os.path.exists(p)],
    **{k: v for k, v in BUILD_ARGS.items()
       if k not in ("source", "library")})
