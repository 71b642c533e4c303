-- SPDX-License-Identifier: BSD-3-Clause
-- Redisson's RCountDownLatch: the count in the string KEYS[1] (absent: 0).
-- ARGV[1] the operation, ARGV[2] its number, ARGV[3] the publish command,
-- ARGV[4] the channel redisson_countdownlatch__channel__{name} (always
-- braced, as Redisson names it). Messages: "0" the count reached zero or
-- the latch was deleted (every waiter looks again), "1" a count was set.
--   await:  nil when the count is zero (absent, or 0 or below); else -1
--           (wait for a message).
--   tryset N: set N and publish "1" when absent: 1; else 0.
--   down:   count down by one; at zero (or below) delete, and at zero
--           publish "0"; absent: nothing (Redisson's DECR then DEL). The
--           count left (0 when absent).
--   get:    the count (0 when absent).
--   delete: delete, publishing "0" when there was a count: 1; else 0.
--           (Redisson's delete publishes "1", which wakes no waiter.)
-- A key that is not a count is refused with WRONGTYPE, untouched.
-- @include countcheck
local op = ARGV[1]
local v, refusal = count_get(KEYS[1], 'count-down latch')
if v == nil then return refusal end
if op == 'await' then
  if v == false or v <= 0 then return nil end
  return -1
end
if op == 'get' then return v or 0 end
if op == 'tryset' then
  if v ~= false then return 0 end
  redis.call('set', KEYS[1], ARGV[2])
  redis.call(ARGV[3], ARGV[4], 1)
  return 1
end
if op == 'down' then
  if v == false then return 0 end
  local left = redis.call('decr', KEYS[1])
  if left <= 0 then redis.call('del', KEYS[1]) end
  if left == 0 then redis.call(ARGV[3], ARGV[4], 0) end
  if left < 0 then return 0 end
  return left
end
if v == false then return 0 end -- delete
redis.call('del', KEYS[1])
redis.call(ARGV[3], ARGV[4], 0)
return 1
