-- SPDX-License-Identifier: BSD-3-Clause
-- Release one hold of the reentrant lock (Redisson RLock layout).
-- KEYS[1] lock name; ARGV[6] its channel redisson_lock__channel:{name}.
-- ARGV[1] unlock message "0", ARGV[2] lease to keep when holds remain,
-- ARGV[3] owner, ARGV[4] publish command (PUBLISH, or SPUBLISH in cluster).
-- ARGV[7] the unlock latch, ARGV[5] its TTL in ms (0: none; latch.lua).
-- Returns nil when ARGV[3] holds nothing, 0 when holds remain, 1 when the
-- lock was deleted (and one waiter notified). The owner's field proves the
-- hash is a lock (holdcheck.lua): a read-write lock of the same owner
-- is refused (WRONGTYPE), not decremented.
-- @include latch
-- @include holdcheck
-- Names that are not keys of their own (channels, prefixes, the latch)
-- come as ARGV, so a cluster migrating the slot never refuses the call
-- for their absence (TRYAGAIN).
local channel, latch = ARGV[6], ARGV[7]
local replay = latch_get(latch, ARGV[5])
if replay ~= nil then return replay end
local done, answer = hold_release(KEYS[1], ARGV[3], ARGV[2], latch, ARGV[5])
if done then return answer end
redis.call('del', KEYS[1])
redis.call(ARGV[4], channel, ARGV[1])
return latch_set(latch, ARGV[5], 1)
