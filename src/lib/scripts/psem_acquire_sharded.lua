-- SPDX-License-Identifier: BSD-3-Clause
-- Take one permit of a permit-expirable semaphore, a message going out
-- with SPUBLISH, for a client on a cluster's sharded pub/sub
-- (psem_acquire.lua: PUBLISH). The script, its keys and arguments:
-- include/psemacquire.lua.
local PUBLISH = 'spublish'
-- @include psemacquire
