--[[
  create-session: creates a session's meta hash unless the id is taken.

  KEYS: [1] meta, [2] log, [3] facts, [4] contributions, [5] changes, [6] facts let go, [7] their fingerprints.
  ARGV: [1] ruleset id, [2] created at (epoch ms), [3] expires at (epoch ms), [4] ttl ms, [5] stamp (write-session.lua:
        a fresh one, so a copy cached from an earlier session under the same id is never taken for this one).
  Output: 1 created, 0 the id exists.
]]

if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'ruleset_id', ARGV[1], 'created_at', ARGV[2], 'expires_at', ARGV[3], 'ttl_ms', ARGV[4],
  'version', 0, 'fired', '[]', 'stamp', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
-- Whatever an earlier session under this id left (its meta evicted or expired first) must not come back with this one.
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7])
-- The log starts at the create's stamp, so a copy read before the first write can catch up too.
redis.call('RPUSH', KEYS[2], ARGV[5] .. ' ')
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 1
