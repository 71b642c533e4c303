-- Delete the lock whoever holds it and notify one waiter.
-- KEYS[1] lock name, KEYS[2] channel. ARGV[1] message "0", ARGV[2] publish
-- command. Returns 1 when a lock was deleted, 0 when there was none.
-- Unlike Redisson's script it refuses to delete a key of another type, so
-- a mistyped name cannot destroy somebody's data.
local t = redis.call('type', KEYS[1]).ok
if t == 'none' then
  return 0
end
if t ~= 'hash' then
  return redis.error_reply('WRONGTYPE key holds a ' .. t .. ', not a lock')
end
redis.call('del', KEYS[1])
redis.call(ARGV[2], KEYS[2], ARGV[1])
return 1
