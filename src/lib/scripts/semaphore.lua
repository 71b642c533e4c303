-- SPDX-License-Identifier: BSD-3-Clause
-- Redisson's RSemaphore: the available permits in the string KEYS[1].
-- ARGV[1] the operation, ARGV[2] its number, ARGV[3] the publish command
-- (PUBLISH, or SPUBLISH in a cluster with sharded pub/sub), ARGV[4] the
-- channel redisson_sc:{name} (a name, not a key: see lock_release).
-- Every write that makes permits available publishes the new available
-- count, as Redisson's release and addPermits do; a waiter wakes up to
-- that many of its sleepers.
--   acquire N: take N when available: nil; else -1 (wait for a message).
--   release N: INCRBY N (absent: 0; the key's TTL, if any, kept), publish;
--              the new count.
--   tryset N:  set N and publish when absent: 1; else 0.
--   set N:     set N and publish (rlock's; Redisson has no such call): 1.
--   add D:     SET the count + D (may be negative; absent: 0; as Redisson's,
--              a TTL goes), publish; the new count.
--   get:       the count (0 when absent).
--   drain:     set 0 when present; the count it had (0 when absent).
-- A count that would leave Redisson's int range is refused with the status
-- RANGE, nothing written; a key that is not a count with WRONGTYPE.
-- @include countcheck
local op, n = ARGV[1], tonumber(ARGV[2])
local v, refusal = count_get(KEYS[1], 'semaphore')
if v == nil then return refusal end
if op == 'acquire' then
  if v ~= false and v >= n then
    redis.call('decrby', KEYS[1], n)
    return nil
  end
  return -1
end
if op == 'get' then return v or 0 end
if op == 'drain' then
  if v == false then return 0 end
  redis.call('set', KEYS[1], 0)
  return v
end
if op == 'tryset' and v ~= false then return 0 end
local new = n
if op == 'release' or op == 'add' then new = (v or 0) + n end
if not count_int(new) then return redis.status_reply('RANGE') end
if op == 'release' then
  redis.call('incrby', KEYS[1], n) -- as Redisson's: a TTL the key has stays
else
  redis.call('set', KEYS[1], new)
end
redis.call(ARGV[3], ARGV[4], new)
if op == 'tryset' or op == 'set' then return 1 end
return new
