-- SPDX-License-Identifier: BSD-3-Clause
-- Release one permit of a permit-expirable semaphore, the message going
-- out with PUBLISH (psem_release_sharded.lua: SPUBLISH). The script, its
-- keys and arguments: include/psemrelease.lua.
local PUBLISH = 'publish'
-- @include psemrelease
