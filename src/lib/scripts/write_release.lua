-- SPDX-License-Identifier: BSD-3-Clause
-- Release one write hold (Redisson RReadWriteLock layout).
-- KEYS[1] lock, ARGV[6] channel redisson_rwlock:{name}.
-- ARGV[1] message "1" (wakes every waiter), ARGV[2] lease to keep when
-- write holds remain (-1: the client records no write level left, so
-- every one goes, as in holdcheck.lua), ARGV[3] write field
-- "<owner>:write", ARGV[4] publish command; ARGV[7] the unlock latch,
-- ARGV[5] its TTL in ms (0: none; latch.lua). Returns nil when not held by ARGV[3], 0 when write holds
-- remain, 1 when the last one went (the lock deleted, or downgraded to
-- read when the same owner still has read holds), 2 when it was gone.
-- Unlike Redisson, a downgrade also publishes, so waiting readers enter at
-- once instead of at their TTL. A key that is not a read-write lock
-- (lockcheck) is refused with a WRONGTYPE error.
-- @include lockcheck
-- @include latch
-- Names that are not keys of their own (channels, prefixes, the latch)
-- come as ARGV, so a cluster migrating the slot never refuses the call
-- for their absence (TRYAGAIN).
local channel, latch = ARGV[6], ARGV[7]
local replay = latch_get(latch, ARGV[5])
if replay ~= nil then return replay end
local mode, refusal = lock_check(KEYS[1], 'rw')
if mode == nil then return refusal end
if mode == 'none' then
  redis.call(ARGV[4], channel, ARGV[1])
  return latch_set(latch, ARGV[5], 2)
end
if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
if tonumber(ARGV[2]) >= 0 and
   redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return latch_set(latch, ARGV[5], 0)
end
redis.call('hdel', KEYS[1], ARGV[3])
if redis.call('hlen', KEYS[1]) == 1 then
  redis.call('del', KEYS[1])
else
  redis.call('hset', KEYS[1], 'mode', 'read')
end
redis.call(ARGV[4], channel, ARGV[1])
return latch_set(latch, ARGV[5], 1)
