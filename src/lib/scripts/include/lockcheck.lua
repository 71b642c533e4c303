-- SPDX-License-Identifier: BSD-3-Clause
-- lockcheck: included (an "@include lockcheck" line) at the top of every
-- script that reads or writes a lock's hash, so that a key which is not a
-- lock is refused before anything is written.
--
-- What every lock has, whoever wrote it (rlock, Redisson, another port):
-- a hash with a lease (PEXPIRE) whose fields are positive integer hold
-- counts, plus `mode` = read|write for a read-write lock. The owner ids
-- are not judged: other ports write ids that are not <uuid>:<thread>.
-- Hold counts are untrusted numbers (anyone can HSET them): a script may
-- loop over one only under a budget of its own (LOCK_PROBES).
local LOCK_PROBES = 10000

-- A field name fit for an error message: printable, at most 40 bytes.
local function lock_printable(s)
  local t = string.gsub(string.sub(s, 1, 40), '[^%w%p ]', '?')
  return t
end

-- The shape of a lock's fields `h` (HGETALL's answer): 'plain' (a
-- reentrant or fair lock), 'read' or 'write' (a read-write lock in that
-- mode), and the hold count of field `owner` (0 when absent or nil); or nil
-- and why not.
local function lock_fields(h, owner)
  local shape, mine = 'plain', 0
  for i = 1, #h, 2 do
    local f, v = h[i], h[i + 1]
    if f == 'mode' and (v == 'read' or v == 'write') then
      shape = v
    elseif #v > 15 or not string.find(v, '^[1-9][0-9]*$') then
      return nil, 'is a hash that is not a lock (field "' ..
             lock_printable(f) .. '" is not a hold count)'
    elseif f == owner then
      mine = tonumber(v)
    end
  end
  return shape, mine
end

-- The shape of `key`: 'none' (absent), 'plain' (a reentrant or fair lock),
-- 'read' or 'write' (a read-write lock in that mode); or nil and why not.
local function lock_shape(key)
  local t = redis.call('type', key).ok
  if t == 'none' then return 'none' end
  if t ~= 'hash' then return nil, 'holds a ' .. t .. ', not a lock' end
  if redis.call('pttl', key) < 0 then
    return nil, 'is a hash with no expiry, not a lock'
  end
  return lock_fields(redis.call('hgetall', key))
end

-- The shape of `key` when it is free or a lock of the wanted family:
-- 'plain' (reentrant and fair locks share one layout), 'rw' or 'any'.
-- Otherwise nil and the WRONGTYPE error reply to return.
local function lock_check(key, want)
  local shape, why = lock_shape(key)
  if shape == nil then
    return nil, redis.error_reply('WRONGTYPE key ' .. why)
  end
  local rw = shape == 'read' or shape == 'write'
  if want == 'plain' and rw then
    return nil, redis.error_reply('WRONGTYPE key holds a read-write lock, ' ..
                                  'not a plain or fair lock')
  end
  if want == 'rw' and shape == 'plain' then
    return nil, redis.error_reply('WRONGTYPE key holds a plain or fair ' ..
                                  'lock, not a read-write lock')
  end
  return shape
end

-- One look at `key` for an acquisition, in as few calls as Redisson's own
-- (PTTL, then HGETALL where the key exists with a lease), with every rule
-- above still applied: 'free' (absent), or 'held', its TTL and `owner`'s
-- hold count (0: another owner's); or nil and the WRONGTYPE error reply.
-- A key that is not a lock is refused before anything is written; the
-- full check (lock_check) runs only where the cheap reads say so, to word
-- the refusal.
local function lock_probe(key, want, owner)
  local ttl = redis.call('pttl', key)
  if ttl == -2 then return 'free' end
  if ttl == -1 then return lock_check(key, want) end -- no lease: refused
  local h = redis.pcall('hgetall', key)
  if h.err then return lock_check(key, want) end -- not a hash: refused
  local shape, mine = lock_fields(h, owner)
  if shape == nil then
    return nil, redis.error_reply('WRONGTYPE key ' .. mine)
  end
  local rw = shape == 'read' or shape == 'write'
  if (want == 'plain' and rw) or (want == 'rw' and not rw) then
    return lock_check(key, want) -- the other family: refused
  end
  return 'held', ttl, mine
end
