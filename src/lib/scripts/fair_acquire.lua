-- Acquire the fair lock (Redisson RFairLock layout), queueing if needed.
-- KEYS[1] lock name, ARGV[8] queue redisson_lock_queue:{name},
-- ARGV[9] deadlines redisson_lock_timeout:{name}, ARGV[7] channel prefix
-- redisson_lock__channel:{name}.
-- ARGV[1] lease ms, ARGV[2] owner, ARGV[3] wait ms (the waiter's own
-- budget, or the fair wait timeout), ARGV[4] now (epoch ms), ARGV[5]
-- publish command, ARGV[6] "1" to queue, "0" to try once without queueing.
-- Returns nil when acquired; otherwise how long to sleep at most (ms)
-- before trying again. Unlike Redisson, a queued waiter that finds the
-- lock free while another waiter is at the head is told to wait for the
-- head's deadline instead of 0, so it sleeps (until notified) rather than
-- spinning. A key that is not a plain or fair lock (lockcheck) is refused
-- with a WRONGTYPE error before anything is written.
-- @include lockcheck
-- Only the lock's hash is a declared key: the channel, and the queue and
-- deadlines too, come as ARGV (same slot), so a cluster migrating the slot
-- never refuses the call for their absence (TRYAGAIN). While a migration
-- moves the three keys one by one, the queue may for a moment be on the
-- other node: mutual exclusion holds (the hash is the one authority),
-- queue order may not until the migration ends.
local channel, queue, timeouts = ARGV[7], ARGV[8], ARGV[9]
if redis.call('exists', KEYS[1]) == 1 then
  local shape, refusal = lock_check(KEYS[1], 'plain')
  if shape == nil then return refusal end
end
local now = tonumber(ARGV[4])
local purged = false
while true do
  local head = redis.call('lindex', queue, 0)
  if head == false then break end
  local deadline = tonumber(redis.call('zscore', timeouts, head))
  -- a head without a deadline (the set evicted or edited) is stale too
  if deadline ~= nil and deadline > now then break end
  redis.call('zrem', timeouts, head)
  redis.call('lpop', queue)
  purged = true
end

local lock_free = redis.call('exists', KEYS[1]) == 0
local head = redis.call('lindex', queue, 0)
if lock_free and (head == false or head == ARGV[2]) then
  redis.call('lpop', queue)
  redis.call('zrem', timeouts, ARGV[2])
  local waiters = redis.call('zrange', timeouts, 0, -1)
  for i = 1, #waiters do
    redis.call('zincrby', timeouts, -tonumber(ARGV[3]), waiters[i])
  end
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if purged and lock_free and head ~= false then
  redis.call(ARGV[5], channel .. ':' .. head, '0')
end
if ARGV[6] == '0' then
  return 1
end

-- How long to sleep at most: -1 (a holder without expiry) means "until
-- notified"; otherwise at least 1 ms, never 0 (no spinning).
local function hint(ms)
  if ms == -1 then return -1 end
  if ms < 1 then return 1 end
  return ms
end
local function score(owner)
  return tonumber(redis.call('zscore', timeouts, owner))
end
if redis.call('zscore', timeouts, ARGV[2]) ~= false then
  local head_deadline = head and score(head)
  if not lock_free or head_deadline == nil then
    return hint(redis.call('pttl', KEYS[1]))
  end
  return hint(head_deadline - now)
end

local base
local last = redis.call('lindex', queue, -1)
local last_deadline = last and last ~= ARGV[2] and score(last)
if last_deadline then
  base = last_deadline - now
else
  base = redis.call('pttl', KEYS[1])
end
local deadline = base + tonumber(ARGV[3]) + now -- Redisson's arithmetic
if redis.call('zadd', timeouts, deadline, ARGV[2]) == 1 then
  redis.call('lrem', queue, 0, ARGV[2]) -- never queue one owner twice
  redis.call('rpush', queue, ARGV[2])
end
return hint(base)
