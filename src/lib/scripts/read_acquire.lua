-- SPDX-License-Identifier: BSD-3-Clause
-- Acquire a read hold (Redisson RReadWriteLock layout).
-- KEYS[1] lock name, ARGV[4] this owner's timeout-key prefix
-- "{name}:<owner>:rwlock_timeout". ARGV[1] lease ms, ARGV[2] owner
-- "<uuid>:<thread>", ARGV[3] the same owner's write field "<owner>:write".
-- Each read hold i gets its own key <prefix>:i with the hold's lease, so a
-- crashed reader's holds expire on their own. Returns nil when acquired,
-- else the lock's remaining TTL in ms. A key that is not a read-write lock
-- (lockcheck) is refused with a WRONGTYPE error before anything is
-- written: Redisson would add a `mode` field to any hash.
-- @include lockcheck
-- Names that are not keys of their own (channels, prefixes, the latch)
-- come as ARGV, so a cluster migrating the slot never refuses the call
-- for their absence (TRYAGAIN).
local prefix = ARGV[4]
local mode, refusal = lock_check(KEYS[1], 'rw')
if mode == nil then return refusal end
if mode == 'none' then
  redis.call('hset', KEYS[1], 'mode', 'read')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('set', prefix .. ':1', 1, 'px', ARGV[1])
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if mode == 'read' or (mode == 'write'
    and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('set', prefix .. ':' .. n, 1, 'px', ARGV[1])
  local left = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], math.max(left, tonumber(ARGV[1])))
  return nil
end
return redis.call('pttl', KEYS[1])
