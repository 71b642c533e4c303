-- SPDX-License-Identifier: BSD-3-Clause
-- countcheck: included by the semaphore and latch scripts, so that a key
-- which is not a count (a lock's hash, a list, a string that is not a
-- decimal integer) is refused before anything is written.
-- Redisson's semaphores store permits as a Java int, its latch a long.
local COUNT_INT_MAX = 2147483647

-- The count at `key`: false when absent, a number, or nil and the
-- WRONGTYPE error reply (`what` names the kind for the message). One GET.
-- A GET refused for another reason (an ACL right) is that error, as is.
local function count_get(key, what)
  local v = redis.pcall('get', key)
  if type(v) == 'table' and v.err then
    if not string.find(v.err, 'WRONGTYPE', 1, true) then return nil, v end
    return nil, redis.error_reply('WRONGTYPE key holds a ' ..
                                  redis.call('type', key).ok .. ', not a ' ..
                                  what)
  end
  if v == false then return false end
  if #v > 20 or not string.find(v, '^-?[0-9]+$') then
    return nil, redis.error_reply('WRONGTYPE key holds a string that is ' ..
                                  'not a ' .. what)
  end
  return tonumber(v)
end

-- Whether `n` is a count Redisson's int fields can hold.
local function count_int(n)
  return n >= -COUNT_INT_MAX and n <= COUNT_INT_MAX
end
