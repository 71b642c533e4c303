-- SPDX-License-Identifier: BSD-3-Clause
-- Delete the lock whoever holds it and notify one waiter.
-- KEYS[1] lock name, ARGV[3] channel. ARGV[1] message "0", ARGV[2] publish
-- command. Returns 1 when a lock was deleted, 0 when there was none.
-- Unlike Redisson's script it refuses (WRONGTYPE) to delete a key that is
-- not a plain or fair lock (lockcheck), so a mistyped name cannot destroy
-- somebody's data, and a read-write lock is left to its own force release,
-- which wakes its waiters on their channel.
-- @include lockcheck
-- Names that are not keys of their own (channels, prefixes, the latch)
-- come as ARGV, so a cluster migrating the slot never refuses the call
-- for their absence (TRYAGAIN).
local channel = ARGV[3]
local shape, refusal = lock_check(KEYS[1], 'plain')
if shape == nil then return refusal end
if shape == 'none' then return 0 end
redis.call('del', KEYS[1])
redis.call(ARGV[2], channel, ARGV[1])
return 1
