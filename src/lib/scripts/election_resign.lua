-- SPDX-License-Identifier: BSD-3-Clause
-- Resign from an election (rlock/election.h): the reentrant lock's release
-- (lock_release.lua, same arguments and answers) that also deletes the
-- leader record ARGV[8] (rlock_leader:{name}) when it names ARGV[3] and
-- the lock went. A leader holds one level (a second campaign is refused),
-- so its release deletes the lock, publishes the unlock message and wakes
-- one standby.
-- @include latch
-- @include holdcheck
local channel, latch, record = ARGV[6], ARGV[7], ARGV[8]
local replay = latch_get(latch, ARGV[5])
if replay ~= nil then return replay end
local done, answer = hold_release(KEYS[1], ARGV[3], ARGV[2], latch, ARGV[5])
if done then return answer end
redis.call('del', KEYS[1])
local rec = redis.pcall('hget', record, 'owner')
if rec == ARGV[3] then redis.call('del', record) end
redis.call(ARGV[4], channel, ARGV[1])
return latch_set(latch, ARGV[5], 1)
