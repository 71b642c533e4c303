-- SPDX-License-Identifier: BSD-3-Clause
-- psemacquire: take one permit of Redisson's RPermitExpirableSemaphore
-- (the layout and every other operation: psemaphore.lua). The text of
-- psem_acquire.lua and psem_acquire_sharded.lua, which differ only in
-- PUBLISH, the command a message goes out with, a local each sets first.
-- KEYS[1] the available count, KEYS[2] the timeout set "{name}:timeout".
-- ARGV[1] now (the caller's epoch ms), ARGV[2] the permit's deadline,
-- ARGV[3] the permit id's 16 bytes, sent as the set stores them (no hex to
-- decode here).
-- As Redisson's tryAcquire of one permit: first give back one expired
-- permit (deadline at or before now; Redisson's acquisition gives back as
-- many as it takes) and publish the new count when positive; then, with a
-- permit available, DECRBY 1, ZADD deadline id, and give the set KEYS[1]'s
-- TTL when it has one: nil. Otherwise the ms until the earliest deadline
-- (1 while expired permits remain), or -1 when none expires. A key that is
-- not a count, or a timeout key that is not a sorted set: WRONGTYPE,
-- nothing written.
-- The common case (a permit available, none expired) costs only the reads
-- that decide it (GET, and ZCOUNT: an integer where the purge's
-- ZRANGEBYSCORE makes an array) and Redisson's writes. Anything else, or
-- any doubt about the keys, takes the general path, which checks the keys
-- before it writes (its code runs only when reached). The script is sent
-- only what the common case reads: every argument is a string Redis makes,
-- Lua interns and both free on every call, about a thousand server
-- instructions each (Redis 7.0), so the channel is made here when a
-- message needs it (semchannel.lua) and the command is in the text. The
-- common case's numbers are strings too: Redis 7.0 turns a Lua number
-- passed to redis.call into text with a printf of a double.
local n = tonumber(redis.pcall('get', KEYS[1]))
local due = redis.pcall('zcount', KEYS[2], '0', ARGV[1])
-- A DECRBY that fails (a count that is not a decimal integer) writes
-- nothing.
if n == nil or n < 1 or due ~= 0 or
   type(redis.pcall('decrby', KEYS[1], '1')) ~= 'number' then
  -- @include psempurge
  local NO_EXPIRY = 922337203685477 -- Redisson's deadline of no lease
  local now = tonumber(ARGV[1])
  local v, refusal = psem_purge(now, 1, function(count)
    -- @include semchannel
    redis.call(PUBLISH, channel, count)
  end)
  if v == nil then return refusal end
  if v == false or v < 1 then
    local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
    if first[1] == nil or tonumber(first[2]) >= NO_EXPIRY then return -1 end
    return math.max(1, tonumber(first[2]) - now)
  end
  redis.call('decrby', KEYS[1], 1)
end
redis.call('zadd', KEYS[2], ARGV[2], ARGV[3])
local ttl = redis.call('pttl', KEYS[1])
if ttl > 0 then redis.call('pexpire', KEYS[2], ttl) end
return nil
