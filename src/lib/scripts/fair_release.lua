-- Release one hold of the fair lock (Redisson RFairLock layout).
-- KEYS[1] lock, KEYS[2] queue, KEYS[3] deadlines, KEYS[4] channel prefix.
-- ARGV[1] message "0", ARGV[2] lease to keep when holds remain, ARGV[3]
-- owner, ARGV[4] now (epoch ms), ARGV[5] publish command. KEYS[5] the
-- unlock latch, ARGV[6] its TTL in ms (0: none; latch.lua).
-- Returns nil when ARGV[3] holds nothing, 0 when holds remain, 1 when the
-- lock was deleted, 2 when the lock was already gone (expired). Whenever
-- the lock ends up free, the waiter at the head of the queue is notified
-- on its own channel.
-- @include latch
-- @include holdcheck
local replay = latch_get(KEYS[5], ARGV[6])
if replay ~= nil then return replay end
local now = tonumber(ARGV[4])
while true do
  local head = redis.call('lindex', KEYS[2], 0)
  if head == false then break end
  local deadline = tonumber(redis.call('zscore', KEYS[3], head))
  -- a head without a deadline (the set evicted or edited) is stale too
  if deadline ~= nil and deadline > now then break end
  redis.call('zrem', KEYS[3], head)
  redis.call('lpop', KEYS[2])
end

local function notify_head()
  local head = redis.call('lindex', KEYS[2], 0)
  if head ~= false then
    redis.call(ARGV[5], KEYS[4] .. ':' .. head, ARGV[1])
  end
end

if redis.call('exists', KEYS[1]) == 0 then
  notify_head()
  return latch_set(KEYS[5], ARGV[6], 2)
end
local held, refusal = hold_check(KEYS[1], ARGV[3])
if held == nil then return refusal end
if held == 0 then
  return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return latch_set(KEYS[5], ARGV[6], 0)
end
redis.call('del', KEYS[1])
notify_head()
return latch_set(KEYS[5], ARGV[6], 1)
