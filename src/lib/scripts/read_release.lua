-- SPDX-License-Identifier: BSD-3-Clause
-- Release one read hold (Redisson RReadWriteLock layout).
-- KEYS[1] lock, ARGV[5] channel redisson_rwlock:{name}, ARGV[6] this
-- owner's timeout-key prefix, ARGV[7] the timeout-key base "{name}".
-- ARGV[1] message "0", ARGV[2] owner, ARGV[3] publish command. ARGV[8]
-- the unlock latch, ARGV[4] its TTL in ms (0: none; latch.lua). ARGV[9]
-- the lease to keep: read holds keep their own leases, so only -1 counts
-- (the client records no read level of this owner left, so every one
-- goes with its timeout key, as in holdcheck.lua: a level a release that
-- never reached the server left behind must not keep a writer out).
-- Returns nil when the owner holds no read hold, 0 when the lock lives on
-- (other holds remain), 1 when it was deleted, 2 when it was already gone.
-- The lock's TTL is recomputed from the timeout keys still alive, so holds
-- of crashed readers (keys expired) do not keep it. Hold counts come from
-- the hash, so at most LOCK_PROBES timeout keys are probed; past that the
-- lock keeps its current TTL (never shortened on a guess). A key that is
-- not a read-write lock (lockcheck) is refused with a WRONGTYPE error.
-- @include lockcheck
-- @include latch
-- Names that are not keys of their own (channels, prefixes, the latch)
-- come as ARGV, so a cluster migrating the slot never refuses the call
-- for their absence (TRYAGAIN).
local channel, prefix, base, latch = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local replay = latch_get(latch, ARGV[4])
if replay ~= nil then return replay end
local mode, refusal = lock_check(KEYS[1], 'rw')
if mode == nil then return refusal end
if mode == 'none' then
  redis.call(ARGV[3], channel, ARGV[1])
  return latch_set(latch, ARGV[4], 2)
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return nil
end
if tonumber(ARGV[9]) == -1 then
  -- The owner's count is untrusted: past LOCK_PROBES the timeout keys
  -- left run out with their leases (no count names them any more).
  local n = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
  for i = 1, math.min(n, LOCK_PROBES) do
    redis.call('del', prefix .. ':' .. i)
  end
  redis.call('hdel', KEYS[1], ARGV[2])
else
  local left = redis.call('hincrby', KEYS[1], ARGV[2], -1)
  if left == 0 then
    redis.call('hdel', KEYS[1], ARGV[2])
  end
  redis.call('del', prefix .. ':' .. (left + 1))
end
if redis.call('hlen', KEYS[1]) > 1 then
  local max, probes = -3, 0
  for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
    local n = tonumber(redis.call('hget', KEYS[1], field))
    if n ~= nil then
      for i = n, 1, -1 do
        if probes == LOCK_PROBES then return latch_set(latch, ARGV[4], 0) end
        probes = probes + 1
        local t = redis.call('pttl', base .. ':' .. field ..
                             ':rwlock_timeout:' .. i)
        max = math.max(t, max)
      end
    end
  end
  if max > 0 then
    redis.call('pexpire', KEYS[1], max)
    return latch_set(latch, ARGV[4], 0)
  end
  if mode == 'write' then
    return latch_set(latch, ARGV[4], 0)
  end
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], channel, ARGV[1])
return latch_set(latch, ARGV[4], 1)
