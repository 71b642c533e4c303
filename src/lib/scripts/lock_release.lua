-- Release one hold of the reentrant lock (Redisson RLock layout).
-- KEYS[1] lock name, KEYS[2] its channel redisson_lock__channel:{name}.
-- ARGV[1] unlock message "0", ARGV[2] lease to keep when holds remain,
-- ARGV[3] owner, ARGV[4] publish command (PUBLISH, or SPUBLISH in cluster).
-- KEYS[3] the unlock latch, ARGV[5] its TTL in ms (0: none; latch.lua).
-- Returns nil when ARGV[3] holds nothing, 0 when holds remain, 1 when the
-- lock was deleted (and one waiter notified). The owner's field proves the
-- hash is a lock (holdcheck.lua): a read-write lock of the same owner
-- is refused (WRONGTYPE), not decremented.
-- @include latch
-- @include holdcheck
local replay = latch_get(KEYS[3], ARGV[5])
if replay ~= nil then return replay end
local held, refusal = hold_check(KEYS[1], ARGV[3])
if held == nil then return refusal end
if held == 0 then
  return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return latch_set(KEYS[3], ARGV[5], 0)
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
return latch_set(KEYS[3], ARGV[5], 1)
