-- SPDX-License-Identifier: BSD-3-Clause
-- Which of a batch of keys are locks, and a snapshot of each that is, for
-- rlock_client_list_locks (list.c). Reads only: it writes, expires and
-- deletes nothing, so a key that is not a lock is left exactly as it was.
--
-- KEYS: the candidates (one cluster slot per call); ARGV[1] now (epoch
-- ms, for the fair queue's deadlines), ARGV[2] how many queued waiters to
-- describe per lock, ARGV[3] the budget of hash fields this call may read,
-- then for each key i: ARGV[3+3i-2..3+3i] its fair queue, its queue's
-- deadlines and its fencing-token counter (names; '' when the name has no
-- derived names, see list.c).
--
-- Returns one entry per key examined, in order: 0 (not a lock, or gone),
-- -1 (a hash of more than FIELDS_MAX fields: not read), or
-- {kind, queue length, {type, pttl, nfields, field1, value1, ...,
-- owner1, ms left1, ...}} (the snapshot in lock_inspect.lua's form, the
-- first waiters after the fields). It stops before a key whose fields
-- would overrun the budget (never at the first), so one call stays short;
-- the caller sends the rest again.
-- @include lockcheck
local FIELDS_MAX = 1000
local now, shown, budget = tonumber(ARGV[1]), tonumber(ARGV[2]),
                           tonumber(ARGV[3])

-- A non-hash key costs TYPE; a hash without expiry TYPE and PTTL: neither
-- is read. Returns how many fields the key has when it may be a lock.
local function candidate_fields(key)
  if redis.call('type', key).ok ~= 'hash' then return 0 end
  if redis.call('pttl', key) < 0 then return 0 end
  return redis.call('hlen', key)
end

-- The fair queue's first waiters with the ms left before each deadline.
local function waiters(snap, queue, timeouts)
  local q = redis.call('lrange', queue, 0, shown - 1)
  local zset = redis.call('type', timeouts).ok == 'zset'
  -- a shift pending (fairpurge.lua's fair_shift) is counted, not applied
  local pending = timeouts .. ':shift'
  local shift = redis.call('type', pending).ok == 'string' and
                tonumber(redis.call('get', pending)) or 0
  for j = 1, #q do
    local d = zset and redis.call('zscore', timeouts, q[j]) or false
    snap[#snap + 1] = q[j]
    snap[#snap + 1] = d and (tonumber(d) - shift - now) or -1
  end
end

-- {kind, queue length, snapshot} of lock `key` (of `shape`), entry i.
local function describe(key, shape, i)
  local at = 3 + 3 * (i - 1)
  local queue, timeouts, token = ARGV[at + 1], ARGV[at + 2], ARGV[at + 3]
  local kind, qlen = 'read-write', 0
  if shape == 'plain' then
    kind = 'reentrant'
    if queue ~= '' and redis.call('type', queue).ok == 'list' then
      qlen = redis.call('llen', queue)
    end
    if qlen > 0 then
      kind = 'fair'
    elseif token ~= '' and redis.call('exists', token) == 1 then
      kind = 'fenced'
    end
  end
  local h = redis.call('hgetall', key)
  local snap = {'hash', redis.call('pttl', key), #h}
  for j = 1, #h do snap[#snap + 1] = h[j] end
  if qlen > 0 then waiters(snap, queue, timeouts) end
  return {kind, qlen, snap}
end

local out = {}
for i = 1, #KEYS do
  local key, entry = KEYS[i], 0
  local n = candidate_fields(key)
  if n > FIELDS_MAX then
    entry = -1
  elseif n > 0 then
    if i > 1 and n > budget then break end
    budget = budget - n
    local shape = lock_shape(key) -- lockcheck's rule, reading nothing else
    if shape == 'plain' or shape == 'read' or shape == 'write' then
      entry = describe(key, shape, i)
    end
  end
  out[i] = entry
end
return out
