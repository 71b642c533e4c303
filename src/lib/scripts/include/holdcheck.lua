-- SPDX-License-Identifier: BSD-3-Clause
-- holdcheck: the cheap check a plain or fair release makes, included by
-- their scripts. The owner's field proves the hash is a lock (only this
-- owner writes it); only a read-write lock of the same owner could carry
-- it too, and that one must be refused, not decremented (lockcheck.lua
-- is the full rule, too costly for every release).
-- Returns 1 when `owner` holds `key`, 0 when not, or nil and the WRONGTYPE
-- error reply to return.
local function hold_check(key, owner)
  local held = redis.pcall('hexists', key, owner)
  if type(held) == 'table' then -- an error: not a hash
    return nil, redis.error_reply('WRONGTYPE key holds a ' ..
                                  redis.call('type', key).ok .. ', not a lock')
  end
  if held == 1 and redis.call('hexists', key, 'mode') == 1 then
    return nil, redis.error_reply('WRONGTYPE key holds a read-write lock, ' ..
                                  'not a plain or fair lock')
  end
  return held
end
