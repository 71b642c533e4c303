-- SPDX-License-Identifier: BSD-3-Clause
-- psempurge: what each of Redisson's permit-expirable semaphore scripts
-- does first, for psemaphore.lua and the acquisition's general path
-- (psemacquire.lua). KEYS[1] the count, KEYS[2] the timeout set.
-- psem_purge gives back up to `limit` permits whose deadline is at or
-- before `now`, calling publish(count) when the new count is positive, and
-- answers the count (false when absent); or nil and the WRONGTYPE reply
-- for a key that is not a count or a timeout key that is not a sorted set,
-- nothing written.
-- @include countcheck
local function psem_purge(now, limit, publish)
  local v, refusal = count_get(KEYS[1], 'semaphore')
  if v == nil then return nil, refusal end
  local expired = redis.pcall('zrangebyscore', KEYS[2], 0, now, 'limit', 0,
                              limit)
  if expired.err then
    if not string.find(expired.err, 'WRONGTYPE', 1, true) then
      return nil, expired -- refused for another reason (an ACL right)
    end
    return nil, redis.error_reply('WRONGTYPE key\'s timeout set holds a ' ..
                                  redis.call('type', KEYS[2]).ok ..
                                  ', not a sorted set')
  end
  if #expired > 0 then
    redis.call('zrem', KEYS[2], unpack(expired))
    v = redis.call('incrby', KEYS[1], #expired)
    if v > 0 then publish(v) end
  end
  return v
end
