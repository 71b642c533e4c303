-- SPDX-License-Identifier: BSD-3-Clause
-- Which of a batch of strings hold a count (a semaphore's available
-- permits or a count-down latch's count: a string of decimal digits), and
-- for each whether a permit-expirable semaphore's lease set is beside it,
-- for rlock_client_list_counts (listcount.c). Reads only: nothing is
-- written, expired or deleted.
--
-- KEYS: the candidates (one cluster slot per call); ARGV[i]: the name of
-- KEYS[i]'s lease set (Redisson's suffixName: "{NAME}:timeout", or
-- "NAME:timeout" for a name with a {tag}), on the same slot.
--
-- Returns one entry per key, in order: 0 (not a count, or gone), or
-- {count (its digits, as stored), leased permits (0: no lease set)}.
local out = {}
for i, key in ipairs(KEYS) do
  local entry = 0
  if redis.call('type', key).ok == 'string' then
    local v = redis.call('get', key)
    if #v <= 20 and string.match(v, '^%-?%d+$') then
      local leased = 0
      if redis.call('type', ARGV[i]).ok == 'zset' then
        leased = redis.call('zcard', ARGV[i])
      end
      entry = {v, leased}
    end
  end
  out[#out + 1] = entry
end
return out
