-- SPDX-License-Identifier: BSD-3-Clause
-- A fair-lock waiter gives up: leave the queue at once (Redisson's
-- acquireFailed) and shorten the deadlines of everyone behind it by its
-- wait. KEYS[1] lock, ARGV[5] queue, ARGV[6] deadlines, ARGV[4] channel
-- prefix. ARGV[1] owner, ARGV[2] its wait ms, ARGV[3] publish command.
-- If the leaver was at the head and the lock is free, the new head is
-- notified so it does not sleep until its own timeout.
-- Only the lock's hash is a declared key: the channel, and the queue and
-- deadlines too, come as ARGV (same slot), so a cluster migrating the slot
-- never refuses the call for their absence (TRYAGAIN). While a migration
-- moves the three keys one by one, the queue may for a moment be on the
-- other node: mutual exclusion holds (the hash is the one authority),
-- queue order may not until the migration ends.
local channel, queue, timeouts = ARGV[4], ARGV[5], ARGV[6]
local waiting = redis.call('lrange', queue, 0, -1)
local at = nil
for i = 1, #waiting do
  if waiting[i] == ARGV[1] then at = i break end
end
if at ~= nil then
  for i = at + 1, #waiting do
    redis.call('zincrby', timeouts, -tonumber(ARGV[2]), waiting[i])
  end
end
redis.call('zrem', timeouts, ARGV[1])
redis.call('lrem', queue, 0, ARGV[1])
if at == 1 and redis.call('exists', KEYS[1]) == 0 then
  local head = redis.call('lindex', queue, 0)
  if head ~= false then
    redis.call(ARGV[3], channel .. ':' .. head, '0')
  end
end
return at ~= nil and 1 or 0
