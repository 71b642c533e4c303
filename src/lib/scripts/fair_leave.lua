-- A fair-lock waiter gives up: leave the queue at once (Redisson's
-- acquireFailed) and shorten the deadlines of everyone behind it by its
-- wait. KEYS[1] lock, KEYS[2] queue, KEYS[3] deadlines, KEYS[4] channel
-- prefix. ARGV[1] owner, ARGV[2] its wait ms, ARGV[3] publish command.
-- If the leaver was at the head and the lock is free, the new head is
-- notified so it does not sleep until its own timeout.
local queue = redis.call('lrange', KEYS[2], 0, -1)
local at = nil
for i = 1, #queue do
  if queue[i] == ARGV[1] then at = i break end
end
if at ~= nil then
  for i = at + 1, #queue do
    redis.call('zincrby', KEYS[3], -tonumber(ARGV[2]), queue[i])
  end
end
redis.call('zrem', KEYS[3], ARGV[1])
redis.call('lrem', KEYS[2], 0, ARGV[1])
if at == 1 and redis.call('exists', KEYS[1]) == 0 then
  local head = redis.call('lindex', KEYS[2], 0)
  if head ~= false then
    redis.call(ARGV[3], KEYS[4] .. ':' .. head, '0')
  end
end
return at ~= nil and 1 or 0
