-- SPDX-License-Identifier: BSD-3-Clause
-- fairpurge: the fair lock's stale-head purge (Redisson's prelude to
-- acquire, release and force release). Drops queued waiters from the head
-- while the head's deadline has passed; only the head is examined, so a
-- live head shields stale waiters behind it until it leaves. Unlike
-- Redisson's, which stops at a head without a deadline (and so leaves the
-- queue stuck behind it), this drops such a head too. Returns true when it
-- dropped any.
--
-- fair_shift_apply: Redisson moves every queued deadline earlier by the
-- taker's wait at each acquisition (ZINCRBY -wait on each). By default
-- rlock's taker does the same, at once (fair_acquire.lua). With the
-- deferred shift (rlock_config_set_fair_deferred_shift, for deployments
-- where every client of a fair lock is rlock) the taker only records that
-- wait as a pending amount, timeouts .. ':shift' (a string, deleted once
-- applied or once the queue is empty), and the next fair script, which
-- runs off the handoff's path (usually the new head's own attempt, woken
-- by the taker), applies it to every waiter before anything reads a
-- deadline (fair_shift). Shifts add up and a waiter queued meanwhile was
-- given the shifted tail's deadline plus its wait, so the deadlines end
-- as Redisson's would. fair_shift_by: the amount pending.
local function fair_shift_by(timeouts)
  return tonumber(redis.call('get', timeouts .. ':shift') or '0') or 0
end

-- Every queued deadline `by` ms earlier, as Redisson's ZINCRBY loop.
local function fair_shift_apply(queue, timeouts, by)
  if redis.call('llen', queue) == 0 then return end
  -- Read in one call and written in one ZADD per 500 waiters, not one
  -- ZINCRBY each; the scores written are ZINCRBY's to the bit (%.17g
  -- round-trips a double).
  local w = redis.call('zrange', timeouts, 0, -1, 'WITHSCORES')
  local args = {}
  for i = 1, #w, 2 do
    args[#args + 1] = string.format('%.17g', tonumber(w[i + 1]) - by)
    args[#args + 1] = w[i]
    if #args == 1000 or i + 1 == #w then
      redis.call('zadd', timeouts, unpack(args))
      args = {}
    end
  end
end

local function fair_shift(queue, timeouts)
  local by = fair_shift_by(timeouts)
  if by == 0 then return end
  redis.call('del', timeouts .. ':shift')
  fair_shift_apply(queue, timeouts, by)
end

local function purge_stale(queue, timeouts, now)
  fair_shift(queue, timeouts)
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
  return purged
end

-- notify_head: tell the waiter at the head of `queue`, if any, on its own
-- channel (`channel` .. ':' .. owner) with `publish`, that the lock may be
-- free.
local function notify_head(queue, publish, channel, message)
  local head = redis.call('lindex', queue, 0)
  if head ~= false then
    redis.call(publish, channel .. ':' .. head, message)
  end
end
