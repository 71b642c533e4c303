-- SPDX-License-Identifier: BSD-3-Clause
-- Release one hold of the fair lock (Redisson RFairLock layout).
-- KEYS[1] lock, ARGV[9] queue, ARGV[10] deadlines, ARGV[7] channel prefix.
-- ARGV[1] message "0", ARGV[2] lease to keep when holds remain, ARGV[3]
-- owner, ARGV[4] now (epoch ms), ARGV[5] publish command. ARGV[8] the
-- unlock latch, ARGV[6] its TTL in ms (0: none; latch.lua).
-- Returns nil when ARGV[3] holds nothing, 0 when holds remain, 1 when the
-- lock was deleted, 2 when the lock was already gone (expired). Whenever
-- the lock ends up free, the waiter at the head of the queue is notified
-- on its own channel.
-- @include latch
-- @include holdcheck
-- @include fairpurge
-- Only the lock's hash is a declared key: the channel, and the queue and
-- deadlines too, come as ARGV (same slot), so a cluster migrating the slot
-- never refuses the call for their absence (TRYAGAIN). While a migration
-- moves the three keys one by one, the queue may for a moment be on the
-- other node: mutual exclusion holds (the hash is the one authority),
-- queue order may not until the migration ends.
local channel, latch = ARGV[7], ARGV[8]
local queue, timeouts = ARGV[9], ARGV[10]
local replay = latch_get(latch, ARGV[6])
if replay ~= nil then return replay end
local now = tonumber(ARGV[4])
purge_stale(queue, timeouts, now)

if redis.call('exists', KEYS[1]) == 0 then
  notify_head(queue, ARGV[5], channel, ARGV[1])
  return latch_set(latch, ARGV[6], 2)
end
local done, answer = hold_release(KEYS[1], ARGV[3], ARGV[2], latch, ARGV[6])
if done then return answer end
redis.call('del', KEYS[1])
notify_head(queue, ARGV[5], channel, ARGV[1])
return latch_set(latch, ARGV[6], 1)
