-- SPDX-License-Identifier: BSD-3-Clause
-- psemrelease: release one permit of Redisson's RPermitExpirableSemaphore
-- by its id, as Redisson's tryRelease does (the layout: psemaphore.lua).
-- The text of psem_release.lua and psem_release_sharded.lua, which differ
-- only in PUBLISH, as psemacquire.lua's. KEYS[1] the available count,
-- KEYS[2] the timeout set. ARGV[1] now (the caller's epoch ms), ARGV[2]
-- the permit id's 16 bytes. Sent nothing else, its numbers strings, for
-- the reasons psemacquire.lua gives.
-- The permit in the set: ZREM it, INCRBY 1, publish the new count; answers
-- 1, or 0 when its deadline had passed (given back all the same, as
-- Redisson's release does: its holder had lost it). Not in the set: 0,
-- nothing written. Other expired permits are left to the next script that
-- purges (Redisson's release purges none). A key that is not a count, or
-- a timeout key that is not a sorted set: WRONGTYPE, nothing written
-- (INCRBY, the one write that can fail, goes first).
local deadline = redis.pcall('zscore', KEYS[2], ARGV[2])
if deadline == false then return 0 end
local left = type(deadline) == 'string' and
             redis.pcall('incrby', KEYS[1], '1')
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
redis.call('zrem', KEYS[2], ARGV[2])
-- @include semchannel
-- The count as its decimal text: a digit without the printf of a number
-- argument; a larger count is sent as the number (its text is exact).
redis.call(PUBLISH, channel,
           left >= 0 and left < 10 and string.char(48 + left) or left)
-- The deadline against now. The score's text (ZSCORE's %.17g) of a whole
-- number below 1e17 is its digits, as now's are: of equal length, they
-- compare as strings (Lua's strcoll: Redis takes LC_COLLATE from its
-- environment, and every locale orders digits as numbers) without the two
-- strtod of tonumber, which the other cases take.
local now = ARGV[1]
if #deadline == #now and not string.find(deadline, '%D') then
  if deadline <= now then return 0 end
elseif tonumber(deadline) <= tonumber(now) then
  return 0
end
return 1
