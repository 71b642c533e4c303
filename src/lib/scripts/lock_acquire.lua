-- SPDX-License-Identifier: BSD-3-Clause
-- Acquire the reentrant lock (Redisson RLock layout).
-- KEYS[1] lock name.  ARGV[1] lease in ms, ARGV[2] owner (any string; rlock
-- writes "<uuid>:<thread>").
-- Returns nil when acquired (first hold or re-entry, lease reset to ARGV[1]),
-- otherwise the holder's remaining TTL in ms. A key that is not a plain or
-- fair lock (lockcheck) is refused with a WRONGTYPE error, untouched.
-- @include lockcheck
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
local shape, refusal = lock_check(KEYS[1], 'plain')
if shape == nil then return refusal end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])
