-- SPDX-License-Identifier: BSD-3-Clause
-- Acquire the write hold (Redisson RReadWriteLock layout).
-- KEYS[1] lock name. ARGV[1] lease ms, ARGV[2] the write field
-- "<owner>:write", ARGV[3] the owner's read field "<owner>".
-- Returns nil when acquired (re-entry adds the lease to what is left, as
-- Redisson does), the lock's remaining TTL in ms when held by others, or
-- the status "UPGRADE" when the caller itself holds read holds: it would
-- wait on itself for ever (Redisson deadlocks there; we refuse). A key
-- that is not a read-write lock (lockcheck) is refused with a WRONGTYPE
-- error before anything is written.
-- @include lockcheck
local mode, refusal = lock_check(KEYS[1], 'rw')
if mode == nil then return refusal end
if mode == 'none' then
  redis.call('hset', KEYS[1], 'mode', 'write')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local left = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], left + tonumber(ARGV[1]))
  return nil
end
if mode == 'read' and redis.call('hexists', KEYS[1], ARGV[3]) == 1 then
  return redis.status_reply('UPGRADE')
end
return redis.call('pttl', KEYS[1])
