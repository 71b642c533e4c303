-- SPDX-License-Identifier: BSD-3-Clause
-- Snapshot a lock atomically. KEYS[1] lock name.
-- Returns {type, pttl, nfields, field1, value1, ...}; type is 'none' for
-- an absent key, else 'hash'. A key that is not a lock of any kind
-- (lockcheck) is refused with a WRONGTYPE error. (The fair lock's inspect
-- appends its queue after the fields.)
-- @include lockcheck
local shape, refusal = lock_check(KEYS[1], 'any')
if shape == nil then return refusal end
local t = redis.call('type', KEYS[1]).ok
local out = {t, redis.call('pttl', KEYS[1]), 0}
if t == 'hash' then
  local h = redis.call('hgetall', KEYS[1])
  out[3] = #h
  for i = 1, #h do
    out[#out + 1] = h[i]
  end
end
return out
