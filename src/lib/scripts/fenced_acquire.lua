-- SPDX-License-Identifier: BSD-3-Clause
-- Acquire the fenced lock (Redisson RFencedLock): the reentrant lock's
-- layout, plus a counter, the token key, that every acquisition
-- increments, re-entries included (as Redisson's does).
-- KEYS[1] lock name. ARGV[1] lease in ms, ARGV[2] owner, ARGV[3] the token
-- key redisson_lock_token:{name} (same slot as the lock; an argument, as
-- the channels are, so a cluster migrating the slot never refuses the call
-- for its absence).
-- Returns {token} when acquired, otherwise the holder's remaining TTL in
-- ms. The token is taken before anything else is written, so a token key
-- that is not a counter (or a lock key that is not a lock: lockcheck) is
-- refused with a WRONGTYPE error and nothing changes.
-- @include lockcheck
local function take()
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
  return {token}
end
local state, ttl, mine = lock_probe(KEYS[1], 'plain', ARGV[2])
if state == nil then return ttl end -- the refusal
if state == 'free' or mine > 0 then
  return take()
end
return ttl
