-- SPDX-License-Identifier: BSD-3-Clause
-- Acquire the reentrant lock (Redisson RLock layout).
-- KEYS[1] lock name.  ARGV[1] lease in ms, ARGV[2] owner (any string; rlock
-- writes "<uuid>:<thread>"), ARGV[3] "1" for the non-reentrant lock
-- (Redisson 4.4's RedissonNonReentrantLock: same layout).
-- Returns nil when acquired (first hold or re-entry, lease reset to ARGV[1]),
-- otherwise the holder's remaining TTL in ms; a re-entry of the
-- non-reentrant lock is refused with Redisson's error, nothing written. A key that is not a plain or
-- fair lock (lockcheck) is refused with a WRONGTYPE error, untouched.
-- A refused attempt costs the server two calls (PTTL, HGETALL; Redisson's
-- three: EXISTS, HEXISTS, PTTL), a first hold three (PTTL, HINCRBY,
-- PEXPIRE) and a re-entry four, as Redisson's.
-- @include lockcheck
local state, ttl, mine = lock_probe(KEYS[1], 'plain', ARGV[2])
if state == nil then return ttl end -- the refusal
if ARGV[3] == '1' and state ~= 'free' and mine > 0 then
  return redis.error_reply('NON_REENTRANT_REACQUIRE')
end
if state == 'free' or mine > 0 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return ttl
