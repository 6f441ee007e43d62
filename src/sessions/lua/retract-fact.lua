--[[
  retract-fact: removes one fact and its contributions from a session's working memory, atomically.
  Prepended with accumulators.lua at load time.

  KEYS: [1] meta, [2] facts, [3] contributions, [4] totals, [5] accumulator ids, [6] changes,
        then per spec i: [5 + 2i] window zset, [6 + 2i] value zset.
  ARGV: [1] fact id, [2] now (epoch ms), then per spec i: [3i] id, [1 + 3i] fn, [2 + 3i] windowMs or 0.
  Output: {'NOT_FOUND'} | {'OK', fact_count, version, removed (0|1), then per spec: count (0 for min/max), sum,
          min/max or ''}.
  Retracting an absent fact changes nothing (no version bump, no TTL refresh) but still evicts and reports.
  A removed fact's stored change goes with it; a retraction stores no change of its own (it is not a fact write).
]]

local meta = load_meta()
if not meta then return { 'NOT_FOUND' } end

local fact_id = ARGV[1]
local now = tonumber(ARGV[2])
local specs, by_id = load_specs(3)
for _, spec in ipairs(specs) do evict(spec, now) end

local removed = redis.call('HDEL', KEYS[2], fact_id)
if removed == 1 then remove_fact_contributions(fact_id, by_id) end
-- Eviction may have changed totals even when nothing is removed; they are written before touch gives new keys a TTL.
write_totals(specs)
local version
if removed == 1 then
  redis.call('HDEL', KEYS[6], fact_id)
  version = redis.call('HINCRBY', KEYS[1], 'version', 1)
  touch(meta, specs, now)
else
  version = tonumber(redis.call('HGET', KEYS[1], 'version'))
end
return read_aggregates(specs, { 'OK', redis.call('HLEN', KEYS[2]), version, removed })
