-- SPDX-License-Identifier: BSD-3-Clause
-- Redisson's RPermitExpirableSemaphore: the available permits in the
-- string KEYS[1]; the leased ones in the sorted set KEYS[2]
-- ("{name}:timeout"), member = the permit id's 16 bytes, score = its
-- deadline in ms since the epoch by the acquiring client's clock.
-- Acquire and release, the hot pair, have scripts of their own
-- (psem_acquire.lua, psem_release.lua); this one has the rest.
-- ARGV[1] the operation, ARGV[2] now (the caller's epoch ms), ARGV[3] its
-- number (a deadline or a count), ARGV[4] the publish command, ARGV[5] the
-- channel redisson_sc:{name}, ARGV[6] a permit id (32 hex digits).
-- Every operation first gives back the permits whose deadline has passed
-- (at most PURGE_MAX a call), publishing the new count when positive, as
-- each of Redisson's scripts does.
--   renew:   give permit ARGV[6] deadline ARGV[3]: 1; 0 when not leased.
--   lease:   ms left of permit ARGV[6]; -2 when not leased.
--   get:     available (0 when absent).  total: available + leased.
--   inspect: {available, leased, then for the first INSPECT_MAX permits by
--            deadline: id (hex), ms left (-1: no expiry)}.
--   tryset N, set N (Redisson's setPermits: the total), add D: as
--            semaphore.lua, with Redisson's messages.
-- Counts that would leave Redisson's int range: the status RANGE, nothing
-- written. A key that is not a count, or a timeout key that is not a
-- sorted set: WRONGTYPE, untouched.
-- @include psempurge
-- @include permitid
local PURGE_MAX = 1000
local NO_EXPIRY = 922337203685477 -- Redisson's deadline of a permit
local INSPECT_MAX = 1000 -- RLOCK_INSPECT_PERMITS
local op, now, n = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local v, refusal = psem_purge(now, PURGE_MAX, function(count)
  redis.call(ARGV[4], ARGV[5], count)
end)
if v == nil then return refusal end
local function id()
  return permit_raw(ARGV[6])
end
if op == 'renew' or op == 'lease' then
  local d = redis.call('zscore', KEYS[2], id())
  if d == false then return op == 'lease' and -2 or 0 end
  if op == 'lease' then return math.max(0, tonumber(d) - now) end
  redis.call('zadd', KEYS[2], n, id())
  return 1
end
if op == 'inspect' then
  local out = {v or 0, redis.call('zcard', KEYS[2])}
  local first = redis.call('zrange', KEYS[2], 0, INSPECT_MAX - 1, 'WITHSCORES')
  for i = 1, #first, 2 do
    out[#out + 1] = string.gsub(first[i], '.', function(c)
      return string.format('%02x', string.byte(c))
    end)
    local d = tonumber(first[i + 1])
    out[#out + 1] = d >= NO_EXPIRY and -1 or math.max(0, d - now)
  end
  return out
end
if op == 'get' then return v or 0 end
if op == 'total' then
  if v == false then return 0 end
  return v + redis.call('zcard', KEYS[2])
end
if op == 'tryset' then
  if v ~= false then return 0 end
  redis.call('set', KEYS[1], n)
  redis.call(ARGV[4], ARGV[5], n)
  return 1
end
if op == 'set' then
  if v == false then
    redis.call('set', KEYS[1], n)
    redis.call(ARGV[4], ARGV[5], n)
    return 1
  end
  local total = v + redis.call('zcard', KEYS[2])
  if total == n then return 1 end
  redis.call('incrby', KEYS[1], n - total)
  redis.call(ARGV[4], ARGV[5], n)
  return 1
end
local new = (v or 0) + n -- add
if not count_int(new) then return redis.status_reply('RANGE') end
redis.call('set', KEYS[1], new)
if n > 0 then redis.call(ARGV[4], ARGV[5], n) end
return new
