-- SPDX-License-Identifier: BSD-3-Clause
-- Delete a read-write lock if it is in ARGV[3]'s mode ("read" or
-- "write"), whoever holds it, and notify: KEYS[1] lock, ARGV[4] channel.
-- ARGV[1] message ("0" for read, "1" for write), ARGV[2] publish command,
-- ARGV[3] mode. Returns 1 when deleted, 0 otherwise. Read holds' timeout
-- keys are left to expire, as Redisson does. A key that is not a
-- read-write lock (lockcheck) is refused with a WRONGTYPE error.
-- @include lockcheck
-- Names that are not keys of their own (channels, prefixes, the latch)
-- come as ARGV, so a cluster migrating the slot never refuses the call
-- for their absence (TRYAGAIN).
local channel = ARGV[4]
local mode, refusal = lock_check(KEYS[1], 'rw')
if mode == nil then return refusal end
if mode == ARGV[3] then
  redis.call('del', KEYS[1])
  redis.call(ARGV[2], channel, ARGV[1])
  return 1
end
return 0
