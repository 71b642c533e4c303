-- Delete the fair lock whoever holds it and notify the head waiter.
-- KEYS[1] lock, KEYS[2] queue, KEYS[3] deadlines, KEYS[4] channel prefix.
-- ARGV[1] message "0", ARGV[2] now (epoch ms), ARGV[3] publish command.
-- Returns 1 when a lock was deleted, 0 when there was none. Refuses to
-- delete a key of another type. A deletion is also announced on the plain
-- channel, so that waiters of a non-fair lock of that name wake too: a
-- tool can force-release a lock without knowing its kind.
local now = tonumber(ARGV[2])
while true do
  local head = redis.call('lindex', KEYS[2], 0)
  if head == false then break end
  local deadline = tonumber(redis.call('zscore', KEYS[3], head))
  -- a head without a deadline (the set evicted or edited) is stale too
  if deadline ~= nil and deadline > now then break end
  redis.call('zrem', KEYS[3], head)
  redis.call('lpop', KEYS[2])
end
local t = redis.call('type', KEYS[1]).ok
if t ~= 'none' and t ~= 'hash' then
  return redis.error_reply('WRONGTYPE key holds a ' .. t .. ', not a lock')
end
local deleted = redis.call('del', KEYS[1])
if deleted == 1 then
  redis.call(ARGV[3], KEYS[4], ARGV[1])
end
local head = redis.call('lindex', KEYS[2], 0)
if head ~= false then
  redis.call(ARGV[3], KEYS[4] .. ':' .. head, ARGV[1])
end
return deleted
