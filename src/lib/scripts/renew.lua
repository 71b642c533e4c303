-- SPDX-License-Identifier: BSD-3-Clause
-- Watchdog renewal of many locks in one call (Redisson's renewal, batched).
-- KEYS[i] lock name; ARGV[1] lease in ms; ARGV[i + 1] owner of KEYS[i].
-- For each i: if the owner still holds KEYS[i], PEXPIRE it and emit 1,
-- else emit 0. A lock found gone is never re-created. A key that became
-- another type counts as gone instead of failing the whole batch; a
-- HEXISTS refused for another reason (an ACL right) fails it.
local out = {}
for i = 1, #KEYS do
  local held = redis.pcall('hexists', KEYS[i], ARGV[i + 1])
  if type(held) == 'table' and
     not string.find(held.err, 'WRONGTYPE', 1, true) then
    return held -- refused (an ACL right): the batch fails, tried again
  end
  if held == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
