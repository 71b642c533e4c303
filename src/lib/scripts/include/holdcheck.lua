-- SPDX-License-Identifier: BSD-3-Clause
-- holdcheck: the cheap check a plain or fair release makes, and the
-- release of one hold that follows it, included by their scripts (after
-- latch.lua). The owner's field proves the hash is a lock (only this
-- owner writes it); only a read-write lock of the same owner could carry
-- it too, and that one must be refused, not decremented (lockcheck.lua
-- is the full rule, too costly for every release).
-- Returns 1 when `owner` holds `key`, 0 when not, or nil and the WRONGTYPE
-- error reply to return.
local function hold_check(key, owner)
  local held = redis.pcall('hexists', key, owner)
  if type(held) == 'table' then -- an error: not a hash, or a refusal
    if not string.find(held.err, 'WRONGTYPE', 1, true) then
      return nil, held -- refused for another reason (an ACL right)
    end
    return nil, redis.error_reply('WRONGTYPE key holds a ' ..
                                  redis.call('type', key).ok .. ', not a lock')
  end
  if held == 1 and redis.call('hexists', key, 'mode') == 1 then
    return nil, redis.error_reply('WRONGTYPE key holds a read-write lock, ' ..
                                  'not a plain or fair lock')
  end
  return held
end

-- Take one hold of `owner` off `key` (hold_check first), keeping `keep`
-- ms of lease when holds remain. Returns true and the script's answer when
-- that ends the release: the refusal, nil when `owner` holds nothing, 0
-- (stored in the latch `latch`, TTL `ttl`) when holds remain; false when
-- the last hold went, for the caller to delete the lock and tell waiters.
-- `keep` -1: the client records no level left, so every level of `owner`
-- goes (one a release that never reached the server left behind must not
-- keep the lock held after the owner's last release).
local function hold_release(key, owner, keep, latch, ttl)
  local held, refusal = hold_check(key, owner)
  if held == nil then return true, refusal end
  if held == 0 then return true, nil end
  if tonumber(keep) >= 0 and redis.call('hincrby', key, owner, -1) > 0 then
    redis.call('pexpire', key, keep)
    return true, latch_set(latch, ttl, 0)
  end
  return false
end
