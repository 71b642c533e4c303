-- SPDX-License-Identifier: BSD-3-Clause
-- Watchdog renewal of read holds, batched. For each i of n: KEYS[i] lock
-- name; ARGV[1] lease ms, ARGV[1 + i] the owner, ARGV[1 + n + i] the
-- lock's timeout-key base "{name}" (a name, not a key: see lock_release).
-- If the owner still has read holds, its own timeout keys (the newest
-- LOCK_PROBES of them: the count is read from the hash, which anyone can
-- write) and the lock are extended and 1 is emitted, else 0. Only this
-- owner's keys are touched, so a crashed reader's holds still expire while
-- others renew (Redisson before 4.4 renewed everyone's). An HGET refused
-- for another reason than the key's type (an ACL right) fails the call.
-- @include lockcheck
local out = {}
local locks = #KEYS
for i = 1, locks do
  local name, owner, base = KEYS[i], ARGV[i + 1], ARGV[1 + locks + i]
  local v = redis.pcall('hget', name, owner)
  if type(v) == 'table' and not string.find(v.err, 'WRONGTYPE', 1, true) then
    return v -- refused (an ACL right): the batch fails, tried again
  end
  local n = tonumber(v)
  if type(n) == 'number' and n > 0 then
    for c = n, math.max(1, n - LOCK_PROBES + 1), -1 do
      -- Only ever extend: a hold taken with a longer explicit lease keeps it.
      local key = base .. ':' .. owner .. ':rwlock_timeout:' .. c
      if redis.call('pttl', key) < tonumber(ARGV[1]) then
        redis.call('pexpire', key, ARGV[1])
      end
    end
    local left = redis.call('pttl', name)
    redis.call('pexpire', name, math.max(left, tonumber(ARGV[1])))
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
