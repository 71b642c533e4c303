-- SPDX-License-Identifier: BSD-3-Clause
-- fairpurge: the fair lock's stale-head purge (Redisson's prelude to
-- acquire, release and force release). Drops queued waiters from the head
-- while the head's deadline has passed; only the head is examined, so a
-- live head shields stale waiters behind it until it leaves. Unlike
-- Redisson's, which stops at a head without a deadline (and so leaves the
-- queue stuck behind it), this drops such a head too. Returns true when it
-- dropped any.
local function purge_stale(queue, timeouts, now)
  local purged = false
  while true do
    local head = redis.call('lindex', queue, 0)
    if head == false then break end
    local deadline = tonumber(redis.call('zscore', timeouts, head))
    -- a head without a deadline (the set evicted or edited) is stale too
    if deadline ~= nil and deadline > now then break end
    redis.call('zrem', timeouts, head)
    redis.call('lpop', queue)
    purged = true
  end
  return purged
end
