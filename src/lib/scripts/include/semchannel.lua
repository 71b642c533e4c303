-- SPDX-License-Identifier: BSD-3-Clause
-- semchannel: `channel`, Redisson's channel of the semaphore KEYS[1]:
-- redisson_sc:{KEYS[1]}, or redisson_sc:KEYS[1] when the name has a {tag}
-- (Redisson's prefixName, as rlock__name_prefixed makes it). Made here by
-- the hot scripts, which are not sent it (psemacquire.lua says why).
local channel = string.find(KEYS[1], '{', 1, true) and
                'redisson_sc:' .. KEYS[1] or 'redisson_sc:{' .. KEYS[1] .. '}'
