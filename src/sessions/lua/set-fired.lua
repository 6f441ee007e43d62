--[[
  set-fired: stores the fired rule set computed for one session version unless a newer version already stored its own.
  Given the fact id of the add that produced the version, an applied call also stores what changed against the previous
  fired set under that fact id, so a duplicate of that add (add-fact.lua) reports the same change again. An applied call
  also stores the aggregates the fired set was evaluated on, and when (meta `aggregates`, `aggregates_at`), or removes
  them when none are given, so they always describe the stored fired set.

  KEYS: [1] meta, [2] changes.
  ARGV: [1] version the fired set was computed for, [2] fired rule ids JSON, [3] fact id of the add, or '' (a retraction),
        [4] aggregates JSON (value per accumulator id) or '', [5] epoch ms the aggregates are as of, or ''.
  Output: {'NOT_FOUND'} | {'OK', previous fired JSON, applied (0|1)}.
]]

local function ids_json(ids)
  local parts = {}
  for i, id in ipairs(ids) do parts[i] = string.format('%d', id) end
  return '[' .. table.concat(parts, ',') .. ']'
end

-- One read for existence (ttl_ms is always set) and the stored fired set.
local meta = redis.call('HMGET', KEYS[1], 'ttl_ms', 'fired', 'fired_version')
if not meta[1] then return { 'NOT_FOUND' } end
local previous = meta[2] or '[]'
local stored_version = tonumber(meta[3] or '0')
if tonumber(ARGV[1]) <= stored_version then return { 'OK', previous, 0 } end
redis.call('HSET', KEYS[1], 'fired', ARGV[2], 'fired_version', ARGV[1])
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[1], 'aggregates', ARGV[4], 'aggregates_at', ARGV[5])
else
  redis.call('HDEL', KEYS[1], 'aggregates', 'aggregates_at')
end

if ARGV[3] ~= '' then
  local before, after = cjson.decode(previous), cjson.decode(ARGV[2])
  local held, holds = {}, {}
  for _, id in ipairs(before) do held[id] = true end
  for _, id in ipairs(after) do holds[id] = true end
  local activated, deactivated = {}, {}
  for _, id in ipairs(after) do
    if not held[id] then activated[#activated + 1] = id end
  end
  for _, id in ipairs(before) do
    if not holds[id] then deactivated[#deactivated + 1] = id end
  end
  redis.call('HSET', KEYS[2], ARGV[3], '{"activated":' .. ids_json(activated) .. ',"deactivated":' .. ids_json(deactivated) .. '}')
  -- The changes hash may be new here: it expires with the session (add-fact's touch refreshes both).
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
end
return { 'OK', previous, 1 }
