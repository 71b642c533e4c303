-- SPDX-License-Identifier: BSD-3-Clause
-- permitid: a permit id's 32 hex digits (checked by the library) as the 16
-- bytes Redisson stores in a permit-expirable semaphore's timeout set.
-- Four 8-digit numbers (exact in Lua's doubles) cut into bytes: a third of
-- the time of a gsub over byte pairs. Still dear next to a whole script
-- (about a microsecond), so acquire and release, the hot pair, get the
-- bytes from the library instead.
local function permit_raw(h)
  local f, out = math.floor, {}
  for i = 1, 25, 8 do
    local n = tonumber(string.sub(h, i, i + 7), 16)
    out[#out + 1] = string.char(f(n / 16777216), f(n / 65536) % 256,
                                f(n / 256) % 256, n % 256)
  end
  return table.concat(out)
end
