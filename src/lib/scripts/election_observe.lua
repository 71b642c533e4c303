-- SPDX-License-Identifier: BSD-3-Clause
-- Who leads an election (rlock/election.h), read in one atomic step.
-- KEYS[1] lock name; ARGV[1] the leader record rlock_leader:{name}.
-- Returns {} when nobody leads; {owner, pttl} when the lock is held but
-- the record names no hold of it (a holder that took the lock without
-- campaigning, e.g. Redisson's RFencedLock); else {owner, pttl, term,
-- value}. The record counts only while the lock's hash holds the owner
-- field it names: a leader that expired or was deleted leaves a record
-- that no longer counts. A key that is not a lock (lockcheck) is refused
-- with WRONGTYPE.
-- @include lockcheck
local shape, refusal = lock_check(KEYS[1], 'plain')
if shape == nil then return refusal end
if shape == 'none' then return {} end
local ttl = redis.call('pttl', KEYS[1])
local h = redis.call('hgetall', KEYS[1])
local holder = h[1]
if redis.call('type', ARGV[1]).ok ~= 'hash' then return {holder, ttl} end
local rec = redis.call('hmget', ARGV[1], 'owner', 'term', 'value')
if rec[1] ~= holder or not rec[2] or not rec[3] then
  return {holder, ttl}
end
return {holder, ttl, tonumber(rec[2]), rec[3]}
