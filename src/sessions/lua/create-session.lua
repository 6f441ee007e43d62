--[[
  create-session: creates a session's meta hash unless the id is taken.

  KEYS: [1] meta.
  ARGV: [1] ruleset id, [2] created at (epoch ms), [3] expires at (epoch ms), [4] ttl ms.
  Output: 1 created, 0 the id exists.
]]

if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'ruleset_id', ARGV[1], 'created_at', ARGV[2], 'expires_at', ARGV[3], 'ttl_ms', ARGV[4],
  'version', 0, 'fired', '[]', 'fired_version', 0)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
