-- Delete the lock whoever holds it, whatever its kind, and wake its
-- waiters. KEYS[1] lock, KEYS[2] queue, KEYS[3] deadlines, KEYS[4] channel
-- prefix redisson_lock__channel:{name}, KEYS[5] the read-write channel
-- redisson_rwlock:{name}. ARGV[1] message "0", ARGV[2] now (epoch ms),
-- ARGV[3] publish command.
-- Returns 1 when a lock was deleted, 0 when there was none. A key that is
-- not a lock (lockcheck) is refused with a WRONGTYPE error, untouched. A
-- deletion is announced where the lock's waiters listen: the plain
-- channel (reentrant waiters), the queue head's channel (fair), or "1"
-- (wake all) on the read-write channel, so a tool can force-release a
-- lock without knowing its kind.
-- @include lockcheck
local shape, refusal = lock_check(KEYS[1], 'any')
if shape == nil then return refusal end
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
local deleted = redis.call('del', KEYS[1])
if shape == 'read' or shape == 'write' then
  redis.call(ARGV[3], KEYS[5], '1')
elseif deleted == 1 then
  redis.call(ARGV[3], KEYS[4], ARGV[1])
end
local head = redis.call('lindex', KEYS[2], 0)
if head ~= false then
  redis.call(ARGV[3], KEYS[4] .. ':' .. head, ARGV[1])
end
return deleted
