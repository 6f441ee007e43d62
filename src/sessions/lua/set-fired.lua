--[[
  set-fired: stores the fired rule set computed for one session version unless a newer version already stored its own.

  KEYS: [1] meta.
  ARGV: [1] version the fired set was computed for, [2] fired rule ids JSON.
  Output: {'NOT_FOUND'} | {'OK', previous fired JSON, applied (0|1)}.
]]

if redis.call('EXISTS', KEYS[1]) == 0 then return { 'NOT_FOUND' } end
local previous = redis.call('HGET', KEYS[1], 'fired') or '[]'
local stored_version = tonumber(redis.call('HGET', KEYS[1], 'fired_version') or '0')
if tonumber(ARGV[1]) <= stored_version then return { 'OK', previous, 0 } end
redis.call('HSET', KEYS[1], 'fired', ARGV[2], 'fired_version', ARGV[1])
return { 'OK', previous, 1 }
