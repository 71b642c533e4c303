-- SPDX-License-Identifier: BSD-3-Clause
-- latch: Redisson's unlock latch (3.24+), included by every release
-- script. An unlock carries a request id, the same across its retries; its
-- first execution stores its answer in redisson_unlock_latch:{name}:<id>
-- for the latch TTL, and a repeat returns that answer instead of releasing
-- again, so an unlock re-sent after a timeout or a lost replica
-- confirmation never releases a newer hold. A TTL of 0 means no latch
-- (a single server, where releases are never re-sent).
local function latch_get(key, ttl)
  if tonumber(ttl) > 0 then
    local v = redis.call('get', key)
    if v then return tonumber(v) end
  end
  return nil
end

local function latch_set(key, ttl, answer)
  if tonumber(ttl) > 0 then
    redis.call('set', key, answer, 'px', ttl)
  end
  return answer
end
