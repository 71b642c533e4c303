-- SPDX-License-Identifier: BSD-3-Clause
-- One campaign attempt of an election (rlock/election.h): the fenced
-- lock's acquisition (fenced_acquire.lua: Redisson RFencedLock's hash and
-- token counter), refusing a second campaign of the holder, plus the
-- leader record.
-- KEYS[1] lock name. ARGV[1] lease in ms, ARGV[2] owner, ARGV[3] the token
-- key redisson_lock_token:{name}, ARGV[4] the leader record
-- rlock_leader:{name}, ARGV[5] the leader's value (the derived names are
-- arguments, in the lock's slot, as fenced_acquire.lua's token key),
-- ARGV[6] '1' when the owner's client knows it leads (a live local hold),
-- else '0'.
-- Returns {term} when elected (the term is the fencing token taken);
-- otherwise the leader's remaining TTL in ms; NON_REENTRANT_REACQUIRE when
-- the owner leads already and knows it (nothing written). A hold of the
-- owner's field that its client does not know of (lost, yet still on the
-- server, e.g. a promoted replica's copy) is answered with its TTL as
-- another leader's: the campaign waits for it to expire (nobody renews
-- it). A token key that is not a counter, a record that is not a hash, or
-- a lock key that is not a lock (lockcheck) is refused with WRONGTYPE
-- before anything is written.
-- @include lockcheck
local state, ttl, mine = lock_probe(KEYS[1], 'plain', ARGV[2])
if state == nil then return ttl end -- the refusal
if state ~= 'free' then
  if mine > 0 and ARGV[6] == '1' then
    return redis.error_reply('NON_REENTRANT_REACQUIRE')
  end
  return ttl
end
local rt = redis.call('type', ARGV[4]).ok
if rt ~= 'none' and rt ~= 'hash' then
  return redis.error_reply('WRONGTYPE key has a leader record ' .. ARGV[4] ..
                           ' that is not a hash')
end
local token = redis.pcall('incr', ARGV[3])
if type(token) == 'table' then
  if not (string.find(token.err, 'WRONGTYPE', 1, true) or
          string.find(token.err, 'integer', 1, true) or
          string.find(token.err, 'overflow', 1, true)) then
    return token -- not about the counter: out of memory, an ACL right
  end
  return redis.error_reply('WRONGTYPE key has a token key ' .. ARGV[3] ..
                           ' that is not a counter')
end
redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[1])
redis.call('del', ARGV[4])
redis.call('hset', ARGV[4], 'owner', ARGV[2], 'term', token, 'value', ARGV[5])
return {token}
