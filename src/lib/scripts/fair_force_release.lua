-- SPDX-License-Identifier: BSD-3-Clause
-- Delete the lock whoever holds it, whatever its kind, and wake its
-- waiters. KEYS[1] lock, ARGV[6] queue, ARGV[7] deadlines, ARGV[4] channel
-- prefix redisson_lock__channel:{name}, ARGV[5] the read-write channel
-- redisson_rwlock:{name}. ARGV[1] message "0", ARGV[2] now (epoch ms),
-- ARGV[3] publish command.
-- Returns 1 when a lock was deleted, 0 when there was none. A key that is
-- not a lock (lockcheck) is refused with a WRONGTYPE error, untouched. A
-- deletion is announced where the lock's waiters listen: the plain
-- channel (reentrant waiters), the queue head's channel (fair), or "1"
-- (wake all) on the read-write channel, so a tool can force-release a
-- lock without knowing its kind.
-- @include lockcheck
-- @include fairpurge
-- Only the lock's hash is a declared key: the channel, and the queue and
-- deadlines too, come as ARGV (same slot), so a cluster migrating the slot
-- never refuses the call for their absence (TRYAGAIN). While a migration
-- moves the three keys one by one, the queue may for a moment be on the
-- other node: mutual exclusion holds (the hash is the one authority),
-- queue order may not until the migration ends.
local channel, rw_channel = ARGV[4], ARGV[5]
local queue, timeouts = ARGV[6], ARGV[7]
local shape, refusal = lock_check(KEYS[1], 'any')
if shape == nil then return refusal end
local now = tonumber(ARGV[2])
purge_stale(queue, timeouts, now)
local deleted = redis.call('del', KEYS[1])
if shape == 'read' or shape == 'write' then
  redis.call(ARGV[3], rw_channel, '1')
elseif deleted == 1 then
  redis.call(ARGV[3], channel, ARGV[1])
end
notify_head(queue, ARGV[3], channel, ARGV[1])
return deleted
