--[[
  read-session: everything an instance needs to build its copy of a session's working memory, in one atomic step and
  as one flat reply, so the reader builds the copy without turning hashes into objects first.

  KEYS: [1] meta, [2] facts, [3] contributions, [4] facts let go, [5] their fingerprints.
  ARGV: none.
  Output: {} when the session does not exist; else {ttl_ms, stamp, version, watermark, fired JSON ('' for each one
        absent), the facts let go to make room (`<fact id> <fingerprint>` lines, oldest first), then per fact: fact id,
        fact JSON, contribution record or '' (none stored)}.
]]

local meta = redis.call('HMGET', KEYS[1], 'ttl_ms', 'stamp', 'version', 'watermark', 'fired')
if not meta[1] then return {} end

local records = {}
local stored = redis.call('HGETALL', KEYS[3])
for i = 1, #stored, 2 do records[stored[i]] = stored[i + 1] end

local let_go = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
  let_go[#let_go + 1] = id .. ' ' .. (redis.call('HGET', KEYS[5], id) or '')
end
local out = { meta[1], meta[2] or '', meta[3] or '', meta[4] or '', meta[5] or '', table.concat(let_go, '\n') }
local facts = redis.call('HGETALL', KEYS[2])
for i = 1, #facts, 2 do
  out[#out + 1] = facts[i]
  out[#out + 1] = facts[i + 1]
  out[#out + 1] = records[facts[i]] or ''
end
return out
