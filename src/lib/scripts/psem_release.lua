-- SPDX-License-Identifier: BSD-3-Clause
-- Release one permit of Redisson's RPermitExpirableSemaphore by its id,
-- as Redisson's tryRelease does (the layout: psemaphore.lua; a script of
-- its own, as psem_acquire.lua). KEYS[1] the available count, KEYS[2] the
-- timeout set. ARGV[1] now (the caller's epoch ms), ARGV[2] the publish
-- command, ARGV[3] the channel redisson_sc:{name}, ARGV[4] the permit id's
-- 16 bytes.
-- The permit in the set: ZREM it, INCRBY 1, publish the new count; answers
-- 1, or 0 when its deadline had passed (given back all the same, as
-- Redisson's release does: its holder had lost it). Not in the set: 0,
-- nothing written. Other expired permits are left to the next script that
-- purges (Redisson's release purges none). A key that is not a count, or
-- a timeout key that is not a sorted set: WRONGTYPE, nothing written
-- (INCRBY, the one write that can fail, goes first).
local deadline = redis.pcall('zscore', KEYS[2], ARGV[4])
if deadline == false then return 0 end
local left = type(deadline) == 'string' and
             redis.pcall('incrby', KEYS[1], 1)
if type(left) ~= 'number' then
  -- @include countcheck
  if type(deadline) ~= 'string' then
    return redis.error_reply('WRONGTYPE key\'s timeout set holds a ' ..
                             redis.call('type', KEYS[2]).ok ..
                             ', not a sorted set')
  end
  local _, refusal = count_get(KEYS[1], 'semaphore')
  return refusal or left -- a count past INCRBY's range: its error
end
redis.call('zrem', KEYS[2], ARGV[4])
redis.call(ARGV[2], ARGV[3], left)
if tonumber(deadline) <= tonumber(ARGV[1]) then return 0 end
return 1
