-- SPDX-License-Identifier: BSD-3-Clause
-- Acquire the fair lock (Redisson RFairLock layout), queueing if needed.
-- KEYS[1] lock name, ARGV[8] queue redisson_lock_queue:{name},
-- ARGV[9] deadlines redisson_lock_timeout:{name}, ARGV[7] channel prefix
-- redisson_lock__channel:{name}.
-- ARGV[1] lease ms, ARGV[2] owner, ARGV[3] wait ms (the waiter's own
-- budget, or the fair wait timeout), ARGV[4] now (epoch ms), ARGV[5]
-- publish command, ARGV[6] "1" to queue, "0" to try once without queueing,
-- ARGV[10] "1" to defer the deadline shift (fairpurge), "0" to apply it
-- at once as Redisson does, ARGV[11] "1" for the non-reentrant fair lock
-- (Redisson 4.4's RedissonNonReentrantFairLock): a re-entry is refused
-- with Redisson's error, nothing written.
-- Returns nil when acquired; otherwise how long to sleep at most (ms;
-- -1: until notified) unless notified on the waiter's own channel first.
-- What is stored (queue order, deadlines) keeps Redisson's arithmetic,
-- since Java clients share it. What is answered is ours and differs from
-- Redisson's on purpose, because a lease running out is announced to
-- nobody, so a waiter must know when to look again by itself:
-- * Lock held by another: its PTTL, for every waiter, so each one looks
--   again when the lease runs out. (Redisson answers a new waiter the
--   previous waiter's deadline, seconds away: behind holders that never
--   release, it sleeps through its turn and times out.)
-- * Lock free, another waiter at the head: the head's deadline, i.e.
--   until notified. (Redisson answers 0, and its waiter spins.)
-- * So whoever makes a waiter the head of a free or newly taken lock
--   tells it: a queued waiter taking the lock notifies the new head,
--   which looks again, finds the lock held and sleeps out the new lease;
--   purging stale heads off a free lock here, and leaving the queue or
--   releasing (fair_leave.lua, fair_release.lua), notify the head too.
--   A Java head so notified merely tries once more.
-- A key that is not a plain or fair lock (lockcheck) is refused with a
-- WRONGTYPE error before anything is written.
-- @include lockcheck
-- @include fairpurge
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
local purged = purge_stale(queue, timeouts, now)

local lock_free = redis.call('exists', KEYS[1]) == 0
local head = redis.call('lindex', queue, 0)
if lock_free and (head == false or head == ARGV[2]) then
  redis.call('lpop', queue)
  redis.call('zrem', timeouts, ARGV[2])
  -- Redisson's arithmetic: every deadline left moves earlier by the
  -- taker's wait; at once, or deferred to the next fair script (about
  -- 200 us less on the handoff's path with 100 waiters queued).
  local left = redis.call('llen', queue)
  local wait = tonumber(ARGV[3])
  if left > 0 and ARGV[10] == '1' then
    redis.call('set', timeouts .. ':shift', wait, 'PX',
               wait * (left + 2) + 60000) -- by then every deadline passed
  elseif left > 0 then
    fair_shift_apply(queue, timeouts, wait)
  end
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  -- the new head may sleep until notified (it found the lock free)
  notify_head(queue, ARGV[5], channel, '0')
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  if ARGV[11] == '1' then
    return redis.error_reply('NON_REENTRANT_REACQUIRE')
  end
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
-- The answer to a waiter in the queue (see the header).
local function answer()
  local head_deadline = lock_free and head and score(head)
  if not head_deadline then
    return hint(redis.call('pttl', KEYS[1]))
  end
  return hint(head_deadline - now)
end
if redis.call('zscore', timeouts, ARGV[2]) ~= false then
  return answer()
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
return answer()
