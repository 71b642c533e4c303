-- SPDX-License-Identifier: BSD-3-Clause
-- Watchdog renewal of permits of permit-expirable semaphores, batched
-- (Redisson's updateLeaseTime, many at once). KEYS[i] a semaphore's
-- timeout set "{name}:timeout"; ARGV[1] now (the caller's epoch ms),
-- ARGV[2] the new deadline, ARGV[2 + i] the permit id (32 hex digits) in
-- KEYS[i]. For each i: when the permit is still leased and its deadline
-- has not passed, it gets the new deadline and 1 is emitted, else 0 (an
-- expired permit is left for the next script of its semaphore to give
-- back). A key that is not a sorted set counts as gone; a ZSCORE refused
-- for another reason (an ACL right) fails the call.
-- @include permitid
local out = {}
local now = tonumber(ARGV[1])
for i = 1, #KEYS do
  local id = permit_raw(ARGV[2 + i])
  local d = redis.pcall('zscore', KEYS[i], id)
  if type(d) == 'table' and not string.find(d.err, 'WRONGTYPE', 1, true) then
    return d -- refused (an ACL right): the batch fails, tried again
  end
  if type(d) == 'string' and tonumber(d) > now then
    redis.call('zadd', KEYS[i], 'XX', ARGV[2], id)
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
