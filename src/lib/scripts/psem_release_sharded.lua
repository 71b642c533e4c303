-- SPDX-License-Identifier: BSD-3-Clause
-- Release one permit of a permit-expirable semaphore, the message going
-- out with SPUBLISH, for a client on a cluster's sharded pub/sub
-- (psem_release.lua: PUBLISH). The script, its keys and arguments:
-- include/psemrelease.lua.
local PUBLISH = 'spublish'
-- @include psemrelease
