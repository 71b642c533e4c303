-- SPDX-License-Identifier: BSD-3-Clause
-- Snapshot a fair lock atomically. KEYS[1] lock; ARGV[1] now (epoch ms),
-- ARGV[2] queue, ARGV[3] deadlines (names, not declared keys: see
-- fair_acquire.lua).
-- Returns {type, pttl, nfields, field1, value1, ..., owner1, left1, ...}
-- where the queue follows in order, each waiter with the milliseconds
-- left before its deadline. Any lock layout is shown (tools inspect a
-- name without knowing its kind); a key that is not a lock (lockcheck) is
-- refused with a WRONGTYPE error.
-- @include lockcheck
-- @include snapshot
local queue = redis.call('lrange', ARGV[2], 0, -1)
-- a shift pending (fairpurge.lua's fair_shift) is counted, not applied
local shift = tonumber(redis.call('get', ARGV[3] .. ':shift') or '0') or 0
for i = 1, #queue do
  local deadline = redis.call('zscore', ARGV[3], queue[i])
  out[#out + 1] = queue[i]
  out[#out + 1] = deadline and (tonumber(deadline) - shift -
                                tonumber(ARGV[1])) or -1
end
return out
