-- SPDX-License-Identifier: BSD-3-Clause
-- snapshot: the state of the lock KEYS[1] as the inspections answer it,
-- included by lock_inspect.lua and fair_inspect.lua (after lockcheck).
-- Leaves `out` = {type, pttl, nfields, field1, value1, ...}, type 'none'
-- for an absent key, else 'hash'; a key that is not a lock of any kind
-- is refused with a WRONGTYPE error, returned from the script at once.
local shape, refusal = lock_check(KEYS[1], 'any')
if shape == nil then return refusal end
local t = redis.call('type', KEYS[1]).ok
local out = {t, redis.call('pttl', KEYS[1]), 0}
if t == 'hash' then
  local h = redis.call('hgetall', KEYS[1])
  out[3] = #h
  for i = 1, #h do out[#out + 1] = h[i] end
end
