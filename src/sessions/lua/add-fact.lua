--[[
  add-fact: adds or replaces one fact in a session's working memory and updates every accumulator, atomically.
  A fact id already holding byte-identical fact JSON is a duplicate (a re-sent or redelivered write): nothing is applied
  again and the change set-fired stored for it is returned. Prepended with accumulators.lua at load time.

  KEYS: [1] meta, [2] facts, [3] contributions, [4] totals, [5] accumulator ids, [6] changes,
        then per spec i: [5 + 2i] window zset, [6 + 2i] value zset.
  ARGV: [1] fact id, [2] fact JSON, [3] contribution record JSON {"t": "<event ms>", "c": [["<acc id>", "<value>"], ...]},
        [4] specs JSON [[id, fn, windowMs or 0], ...] (only compared with meta `specs`), [5] now (epoch ms), [6] max facts,
        then per spec i: [4 + 3i] id, [5 + 3i] fn, [6 + 3i] windowMs or 0.
  Output: {'NOT_FOUND'} | {'FULL', fact_count}
        | {'OK', fact_count, version, replaced (0|1), old fact JSON or '', duplicate (0|1), stored change JSON or '',
           then per spec: count (0 for min/max), sum, min/max or ''}.
]]

local meta = load_meta()
if not meta then return { 'NOT_FOUND' } end

local fact_id = ARGV[1]
local now = tonumber(ARGV[5])
local old_fact = redis.call('HGET', KEYS[2], fact_id)
local specs, by_id = load_specs(7)

-- A duplicate only evicts (time passed) and refreshes the TTL, as a retraction of an absent fact does; no version bump.
if old_fact == ARGV[2] then
  for _, spec in ipairs(specs) do evict(spec, now) end
  write_totals(specs)
  touch(meta, specs, now)
  local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
  local change = redis.call('HGET', KEYS[6], fact_id) or ''
  return read_aggregates(specs, { 'OK', redis.call('HLEN', KEYS[2]), version, 0, '', 1, change })
end

local fact_count = redis.call('HLEN', KEYS[2])
if not old_fact and fact_count >= tonumber(ARGV[6]) then return { 'FULL', fact_count } end

for _, spec in ipairs(specs) do evict(spec, now) end
if old_fact then remove_fact_contributions(fact_id, by_id) end
-- The replaced fact's change no longer describes this fact; set-fired stores the new one once it is applied.
redis.call('HDEL', KEYS[6], fact_id)

register_accumulators(meta, specs, ARGV[4])
redis.call('HSET', KEYS[2], fact_id, ARGV[2])
redis.call('HSET', KEYS[3], fact_id, ARGV[3])
-- With at most one fact before, the facts hash was absent or the contributions hash just emptied by the replacement.
if fact_count <= 1 then
  may_create(KEYS[2])
  may_create(KEYS[3])
end
local record = cjson.decode(ARGV[3])
for _, c in ipairs(record.c) do
  local spec = by_id[c[1]]
  if spec then add_contribution(spec, fact_id, record.t, c[2], now) end
end

local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
write_totals(specs)
touch(meta, specs, now)
local replaced = 0
if old_fact then replaced = 1 end
return read_aggregates(specs, { 'OK', redis.call('HLEN', KEYS[2]), version, replaced, old_fact or '', 0, '' })
