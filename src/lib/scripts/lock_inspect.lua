-- SPDX-License-Identifier: BSD-3-Clause
-- Snapshot a lock atomically. KEYS[1] lock name.
-- Returns {type, pttl, nfields, field1, value1, ...}; type is 'none' for
-- an absent key, else 'hash'. A key that is not a lock of any kind
-- (lockcheck) is refused with a WRONGTYPE error. (The fair lock's inspect
-- appends its queue after the fields.)
-- @include lockcheck
-- @include snapshot
return out
