-- SPDX-License-Identifier: BSD-3-Clause
-- The counts behind semaphores, latches and permit-expirable semaphores
-- found by their channel or their lease set, for rlock_client_list_syncs
-- (blocking/listsync.c). Reads only: nothing is written, expired or
-- deleted.
--
-- KEYS: pairs, one per candidate, on one cluster slot: the name the
-- channel or lease set gives, and the other name it may stand for (the
-- same twice when there is no other: "{x}" in a channel is the name "x"
-- braced, or a name "{x}" that has a tag). ARGV[i]: candidate i's lease
-- set ("{NAME}:timeout", the same for both names).
--
-- Returns one entry per candidate, in order: 0 when neither name holds a
-- count (another type, or a string that is no decimal integer), else
-- {which (1 or 2: the name that holds it, 1 when neither exists), the
-- count as stored ("" when absent), permits leased (0: no lease set)}.
local out = {}
for i = 1, #KEYS / 2 do
  local entry, absent = 0, 0
  for which = 1, 2 do
    local key = KEYS[2 * i - 2 + which]
    local t = redis.call('type', key).ok
    if t == 'string' and entry == 0 then
      local v = redis.call('get', key)
      if #v <= 20 and string.match(v, '^%-?%d+$') then
        entry = {which, v, 0}
      end
    elseif t == 'none' then
      absent = absent + 1
    end
  end
  if entry == 0 and absent == 2 then
    entry = {1, '', 0}
  end
  if entry ~= 0 and redis.call('type', ARGV[i]).ok == 'zset' then
    entry[3] = redis.call('zcard', ARGV[i])
  end
  out[#out + 1] = entry
end
return out
