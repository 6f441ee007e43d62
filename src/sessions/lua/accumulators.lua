--[[
  Shared functions, prepended to add-fact.lua and retract-fact.lua when they are loaded (not a script of its own).

  Key layout they rely on (see src/sessions/keys.ts):
    KEYS[1] meta hash, KEYS[2] facts hash, KEYS[3] contributions hash, KEYS[4] totals hash, KEYS[5] accumulator id set,
    KEYS[6] changes hash, then for the i-th spec: KEYS[5 + 2i] window zset ('<fact id>|<value>' by event time),
    KEYS[6 + 2i] value zset (fact id by value).
  Specs arrive as plain ARGV entries, three per spec (id, fn, windowMs or 0), beside the specs JSON that is only compared
  with meta `specs`. Numbers travel as strings so no precision is lost in Lua.

  Totals (count, sum, avg): every `<id>:n` / `<id>:s` field is read once (one HMGET), kept in the spec table, changed in
  Lua arithmetic (doubles, as the in-process store sums) and written back once (one HSET, one HDEL for accumulators left
  empty) before the TTLs are touched. A sum outside the double range (an overflow, or long double text an earlier version
  wrote with HINCRBYFLOAT) is instead changed with HINCRBYFLOAT in place for the rest of the call, as before.

  TTLs: a write refreshes every key's TTL (and meta expires_at) only when the stored expiry has fallen more than
  ttl_ms / 16 behind now + ttl_ms; otherwise only keys this call may have created get the meta hash's remaining TTL, so
  no key ever outlives the session and expires_at stays the moment the session really expires.
]]

-- Keys this call may have created (a write to an absent or emptied key leaves it without a TTL).
local created, created_seen = {}, {}
local function may_create(key)
  if not created_seen[key] then
    created_seen[key] = true
    created[#created + 1] = key
  end
end

-- Spec i arrives as three plain ARGV entries from `first`: id, fn, window ms or 0 (no JSON to decode per call); the
-- totals of count/sum/avg specs come from one HMGET. Every field a spec uses is in its constructor, so it is sized once.
local function load_specs(first)
  local list, by_id, fields = {}, {}, {}
  for i = 1, (#KEYS - 6) / 2 do
    local at = first + 3 * (i - 1)
    local id, fn = ARGV[at], ARGV[at + 1]
    local ordered = fn == 'min' or fn == 'max'
    local spec = {
      id = id, fn = fn, window = tonumber(ARGV[at + 2]), ordered = ordered,
      time_key = KEYS[5 + 2 * i], value_key = KEYS[6 + 2 * i], live = false,
      n_field = false, s_field = false, n = 0, s = 0, s_text = false, dirty = false,
    }
    if not ordered then
      spec.n_field, spec.s_field = id .. ':n', id .. ':s'
      fields[#fields + 1] = spec.n_field
      fields[#fields + 1] = spec.s_field
    end
    list[i] = spec
    by_id[id] = spec
  end
  if #fields > 0 then
    local totals = redis.call('HMGET', KEYS[4], unpack(fields))
    local next_total = 1
    for _, spec in ipairs(list) do
      if not spec.ordered then
        spec.n = tonumber(totals[next_total]) or 0
        local text = totals[next_total + 1]
        if text then
          local sum = tonumber(text)
          -- Beyond the double range (or unreadable): kept as text and changed by HINCRBYFLOAT, as before.
          if sum and sum == sum and sum ~= math.huge and sum ~= -math.huge then spec.s = sum else spec.s_text = text end
        end
        next_total = next_total + 2
      end
    end
  end
  return list, by_id
end

-- The meta fields writes need, in one call; nil when the session is unknown or expired (ttl_ms is always set).
local function load_meta()
  local fields = redis.call('HMGET', KEYS[1], 'ttl_ms', 'expires_at', 'specs')
  if not fields[1] then return nil end
  return { ttl_ms = tonumber(fields[1]), expires_at = tonumber(fields[2]) or 0, specs = fields[3] }
end

-- delete finds sorted sets through the accumulator id set: ids are added once per specs list, not per contribution.
local function register_accumulators(meta, specs, specs_json)
  if #specs == 0 or meta.specs == specs_json then return end
  local ids = {}
  for i, spec in ipairs(specs) do ids[i] = spec.id end
  if redis.call('SADD', KEYS[5], unpack(ids)) > 0 then may_create(KEYS[5]) end
  redis.call('HSET', KEYS[1], 'specs', specs_json)
end

local function negate(number_text)
  if string.sub(number_text, 1, 1) == '-' then return string.sub(number_text, 2) end
  return '-' .. number_text
end

local function number_text(n)
  return string.format('%.17g', n)
end

-- Adds value_text (negated when sign is -1) to the spec's sum: in Lua while the double stays finite, else (and from then
-- on in this call) with HINCRBYFLOAT on the stored field, whose long double keeps the sum as an earlier version did.
local function add_to_sum(spec, value_text, sign)
  if not spec.s_text then
    local sum = spec.s + sign * tonumber(value_text)
    if sum ~= math.huge and sum ~= -math.huge and sum == sum then
      spec.s = sum
      return
    end
    if redis.call('HSET', KEYS[4], spec.s_field, number_text(spec.s)) == 1 then may_create(KEYS[4]) end
  end
  if sign < 0 then value_text = negate(value_text) end
  spec.s_text = redis.call('HINCRBYFLOAT', KEYS[4], spec.s_field, value_text)
end

-- Dropping the last contribution clears the sum too, so float residue never survives an empty accumulator.
local function take_from_total(spec, values)
  spec.dirty = true
  spec.n = spec.n - #values
  if spec.n <= 0 then
    spec.n, spec.s, spec.s_text = 0, 0, false
  else
    for _, value in ipairs(values) do add_to_sum(spec, value, -1) end
  end
end

-- One HSET of every changed count and in-Lua sum, one HDEL of the fields of accumulators left empty.
local function write_totals(specs)
  local set, gone = {}, {}
  for _, spec in ipairs(specs) do
    if spec.dirty then
      if spec.n <= 0 then
        gone[#gone + 1] = spec.n_field
        gone[#gone + 1] = spec.s_field
      else
        set[#set + 1] = spec.n_field
        set[#set + 1] = string.format('%d', spec.n)
        if not spec.s_text then
          set[#set + 1] = spec.s_field
          set[#set + 1] = number_text(spec.s)
        end
      end
    end
  end
  if #gone > 0 then redis.call('HDEL', KEYS[4], unpack(gone)) end
  if #set > 0 and redis.call('HSET', KEYS[4], unpack(set)) > 0 then may_create(KEYS[4]) end
end

-- Window set members are '<fact id>|<value>' (ids never hold '|'), so eviction needs no contribution record.
local function window_member(fact_id, value)
  return fact_id .. '|' .. value
end

-- Sorted sets this call found holding a member inside the window and did not shrink exist already (touch skips them).
local function note_shrunk(spec)
  spec.live = false
end

local function add_contribution(spec, fact_id, event_time, value, now)
  if spec.window > 0 then
    -- A fact already outside its window never counts.
    if tonumber(event_time) < now - spec.window then return end
    redis.call('ZADD', spec.time_key, event_time, window_member(fact_id, value))
    if not spec.live then may_create(spec.time_key) end
  end
  if spec.ordered then
    redis.call('ZADD', spec.value_key, value, fact_id)
    if not spec.live then may_create(spec.value_key) end
  else
    spec.dirty = true
    spec.n = spec.n + 1
    add_to_sum(spec, value, 1)
  end
end

local function remove_contribution(spec, fact_id, value)
  if spec.window > 0 then
    -- Absent from the window set: evicted earlier (or never in the window), so nothing to take back. A bare fact id is
    -- the member an older layout wrote.
    if redis.call('ZREM', spec.time_key, window_member(fact_id, value)) == 0
      and redis.call('ZREM', spec.time_key, fact_id) == 0 then
      return
    end
    note_shrunk(spec)
  end
  if spec.ordered then
    redis.call('ZREM', spec.value_key, fact_id)
    note_shrunk(spec)
  else
    take_from_total(spec, { value })
  end
end

-- Only for window members of the older layout (a bare fact id).
local function contribution_value(fact_id, accumulator_id)
  local record = redis.call('HGET', KEYS[3], fact_id)
  if not record then return nil end
  for _, c in ipairs(cjson.decode(record).c) do
    if c[1] == accumulator_id then return c[2] end
  end
  return nil
end

-- Window eviction by event time: everything strictly older than now - window leaves the running state. The oldest
-- member is looked at first, so a window with nothing to evict costs one call.
local function evict(spec, now)
  if spec.window <= 0 then return end
  local limit = now - spec.window
  local oldest = redis.call('ZRANGE', spec.time_key, 0, 0, 'WITHSCORES')
  if oldest[2] == nil then return end
  if tonumber(oldest[2]) >= limit then
    spec.live = true
    return
  end
  local cutoff = '(' .. number_text(limit)
  local expired = redis.call('ZRANGEBYSCORE', spec.time_key, '-inf', cutoff)
  local values = {}
  for _, member in ipairs(expired) do
    local bar = string.find(member, '|', 1, true)
    local fact_id, value
    if bar then
      fact_id, value = string.sub(member, 1, bar - 1), string.sub(member, bar + 1)
    else
      fact_id, value = member, contribution_value(member, spec.id)
    end
    if spec.ordered then
      redis.call('ZREM', spec.value_key, fact_id)
    elseif value then
      values[#values + 1] = value
    end
  end
  -- The count drops by all at once; the sum member by member unless the accumulator is left empty, which clears it.
  if #values > 0 then take_from_total(spec, values) end
  redis.call('ZREMRANGEBYSCORE', spec.time_key, '-inf', cutoff)
end

local function remove_fact_contributions(fact_id, by_id)
  local record = redis.call('HGET', KEYS[3], fact_id)
  if not record then return end
  for _, c in ipairs(cjson.decode(record).c) do
    local spec = by_id[c[1]]
    if spec then remove_contribution(spec, fact_id, c[2]) end
  end
  redis.call('HDEL', KEYS[3], fact_id)
end

-- Per spec three entries: contribution count, sum, and the min or max value (''). Count and sum are the ones
-- write_totals stored; min/max report count 0, which aggregateValue never reads for them.
local function read_aggregates(specs, out)
  for _, spec in ipairs(specs) do
    if spec.ordered then
      local range
      if spec.fn == 'min' then
        range = redis.call('ZRANGE', spec.value_key, 0, 0, 'WITHSCORES')
      else
        range = redis.call('ZRANGE', spec.value_key, -1, -1, 'WITHSCORES')
      end
      out[#out + 1] = '0'
      out[#out + 1] = '0'
      out[#out + 1] = range[2] or ''
    else
      out[#out + 1] = string.format('%d', spec.n)
      out[#out + 1] = spec.s_text or number_text(spec.s)
      out[#out + 1] = ''
    end
  end
  return out
end

-- A write keeps the whole session alive for another TTL, give or take ttl_ms / 16 (see the header).
local function touch(meta, specs, now)
  local ttl_ms = meta.ttl_ms
  if now + ttl_ms - meta.expires_at > math.floor(ttl_ms / 16) then
    redis.call('HSET', KEYS[1], 'expires_at', number_text(now + ttl_ms))
    for i = 1, 6 do redis.call('PEXPIRE', KEYS[i], ttl_ms) end
    for _, spec in ipairs(specs) do
      redis.call('PEXPIRE', spec.time_key, ttl_ms)
      redis.call('PEXPIRE', spec.value_key, ttl_ms)
    end
  elseif #created > 0 then
    local left = redis.call('PTTL', KEYS[1])
    if left > 0 then
      for _, key in ipairs(created) do redis.call('PEXPIRE', key, left) end
    end
  end
end
