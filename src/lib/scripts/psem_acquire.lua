-- SPDX-License-Identifier: BSD-3-Clause
-- Take one permit of a permit-expirable semaphore, a message going out
-- with PUBLISH (psem_acquire_sharded.lua: SPUBLISH). The script, its keys
-- and arguments: include/psemacquire.lua.
local PUBLISH = 'publish'
-- @include psemacquire
