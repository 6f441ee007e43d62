--[[
  write-session: applies the writes an instance worked out on its cached copy of the session's working memory, in
  order, unless the session changed since that copy was read. Every applied add or retract stores a fresh stamp; a
  call names the stamp its copy held before its first write, so writes from a stale copy (another instance wrote in
  between, or the session was deleted and created again) change nothing. A copy whose watermark, once its first write
  was worked out, is behind the stored one (another writer's duplicate or refused write moved time on without a new
  stamp) worked out its adds and retracts on windows that had not moved yet: it is behind too. When that stamp is
  still in the log of recent writes, the answer is BEHIND with what the copy lacks (the current meta and every fact written since, the call's own
  facts among them), so the instance brings its copy up to date and works the writes out again; otherwise STALE, and
  the instance reads the session anew. Several writes of one session go in one call when they were worked out together.
  A call whose writes were evaluated under an older rules revision than the last stored write's is refused (RULES):
  the instance loads the newer rules and works the writes out again, so a session never goes back to older rules.

  KEYS: [1] meta, [2] facts, [3] contributions, [4] changes, [5] log, [6] facts let go (sorted set: fact id by the
        version its leaving made), [7] their fingerprints (hash).
  ARGV: [1] stamp the copy held before the first write, [2] log length to keep, [3] fired rule ids JSON and
        [4] aggregates JSON after the last add or retract of the call ('' when it has none), [5] the copy's watermark
        once its first write was worked out ('' when it has none), [6] and [7] the lowest and highest rules revision
        the call's writes were evaluated under ('' for no check), [8] how many facts let go to keep, then seven per
        write: kind, now (epoch ms, the writer's clock), fact id, and for add, retract and evict the new stamp; for add
        also: fact JSON, contribution record JSON {"t": "<event ms>", "s": "<seq>", "c": [["<accumulator id>",
        "<value>"], ...]}, fired-set change JSON; for evict also the fact JSON's fingerprint ('' where unused).
  Kinds: 'add' stores the fact, its contribution record and change; 'retract' removes all three; 'evict' (a fact let
        go to make room) removes the fact and its record but keeps its change, and lists it among the facts let go with
        its fingerprint (once per fact id: let go again, it moves to the end; past ARGV[8] the oldest leave, with their
        change unless the fact is held again), so a redelivery of it answers as a duplicate; all three log the write and
        bump the version, and the last of them stores its stamp, the fired set and the aggregates (as of the
        watermark).
        'touch' (a duplicate add) returns the change stored for its fact id; 'check' (a refused add, a retraction of an
        absent fact) stores nothing of its own. Every write moves the watermark (the latest now any write brought);
        all but 'check' refresh the TTL.
  Output: {'NOT_FOUND'} | {'STALE'} | {'RULES', the stored rules revision}
        | {'BEHIND', stamp, version, watermark or '', fired JSON, the facts let go (as read-session.lua gives them),
           then per fact written since the copy's stamp: fact id, fact JSON or '' (gone), contribution record or ''}
        | {'OK', then per write: the stored change JSON for a touch, else ''}.

  TTLs: writes refresh every key's TTL to ttl_ms + ttl_ms / 16 (and meta expires_at to that past the latest now among
  them) when less than ttl_ms is left, by the meta hash's remaining TTL (Redis's clock, not the writers'), so a session
  lives at least ttl_ms past every write;
  otherwise the other keys get the meta hash's remaining TTL (a key a write created has none yet), so no key outlives
  the session.
]]

local WRITE = 7
local FIRST = 9
local writes = (#ARGV - FIRST + 1) / WRITE

-- One read for existence (ttl_ms is always set), expiry, stamp, version, watermark and rules revision.
local meta = redis.call('HMGET', KEYS[1], 'ttl_ms', 'expires_at', 'stamp', 'version', 'watermark', 'revision')
if not meta[1] then return { 'NOT_FOUND' } end
local stored_revision = tonumber(meta[6])
local lowest_revision = tonumber(ARGV[6])
if stored_revision and lowest_revision and stored_revision > lowest_revision then return { 'RULES', meta[6] } end

-- Only adds and retracts store what the copy worked out (the fired set, the aggregates, their changes).
local stores = false
for i = 0, writes - 1 do
  local kind = ARGV[FIRST + WRITE * i]
  if kind == 'add' or kind == 'retract' or kind == 'evict' then stores = true end
end
-- A touch answers with aggregates the copy worked out: from a late copy they would be of windows that had not moved yet.
local answers = stores
for i = 0, writes - 1 do
  if ARGV[FIRST + WRITE * i] == 'touch' then answers = true end
end
local copy_watermark = tonumber(ARGV[5])
local late = answers and meta[5] and (copy_watermark == nil or tonumber(meta[5]) > copy_watermark)

if (meta[3] or '') ~= ARGV[1] or late then
  -- Fact ids logged after the copy's stamp, each once; none found means the stamp left the log (or never was in it).
  local ids, seen, found = {}, {}, false
  for _, entry in ipairs(redis.call('LRANGE', KEYS[5], 0, -1)) do
    local space = string.find(entry, ' ', 1, true)
    local id = string.sub(entry, space + 1)
    if found and id ~= '' and not seen[id] then
      seen[id] = true
      ids[#ids + 1] = id
    end
    if string.sub(entry, 1, space - 1) == ARGV[1] then found = true end
  end
  -- A copy that is only late holds the current stamp: nothing was written since, time alone moved on.
  if (meta[3] or '') == ARGV[1] then found = true end
  if not found then return { 'STALE' } end
  -- The copy applied these writes already: their facts are brought back to what Redis holds too.
  for i = 0, writes - 1 do
    local id = ARGV[FIRST + WRITE * i + 2]
    if id ~= '' and not seen[id] then
      seen[id] = true
      ids[#ids + 1] = id
    end
  end
  local now_meta = redis.call('HMGET', KEYS[1], 'stamp', 'version', 'watermark', 'fired')
  local let_go = {}
  for _, id in ipairs(redis.call('ZRANGE', KEYS[6], 0, -1)) do
    let_go[#let_go + 1] = id .. ' ' .. (redis.call('HGET', KEYS[7], id) or '')
  end
  local out = { 'BEHIND', now_meta[1] or '', now_meta[2] or '0', now_meta[3] or '', now_meta[4] or '[]',
    table.concat(let_go, '\n') }
  for _, id in ipairs(ids) do
    out[#out + 1] = id
    out[#out + 1] = redis.call('HGET', KEYS[2], id) or ''
    out[#out + 1] = redis.call('HGET', KEYS[3], id) or ''
  end
  return out
end

local out = { 'OK' }
local version = tonumber(meta[4]) or 0
local stored_watermark = tonumber(meta[5])
local watermark = stored_watermark
local last, latest = nil, nil
for i = 0, writes - 1 do
  local at = FIRST + WRITE * i
  local kind, fact_id = ARGV[at], ARGV[at + 2]
  local change = ''
  if kind == 'touch' then
    change = redis.call('HGET', KEYS[4], fact_id) or ''
  elseif kind == 'add' then
    redis.call('HSET', KEYS[2], fact_id, ARGV[at + 4])
    redis.call('HSET', KEYS[3], fact_id, ARGV[at + 5])
    redis.call('HSET', KEYS[4], fact_id, ARGV[at + 6])
  elseif kind == 'retract' then
    redis.call('HDEL', KEYS[2], fact_id)
    redis.call('HDEL', KEYS[3], fact_id)
    redis.call('HDEL', KEYS[4], fact_id)
  elseif kind == 'evict' then
    redis.call('HDEL', KEYS[2], fact_id)
    redis.call('HDEL', KEYS[3], fact_id)
    redis.call('ZADD', KEYS[6], version + 1, fact_id)
    redis.call('HSET', KEYS[7], fact_id, ARGV[at + 4])
    local over = redis.call('ZCARD', KEYS[6]) - tonumber(ARGV[8])
    if over > 0 then
      for _, gone in ipairs(redis.call('ZRANGE', KEYS[6], 0, over - 1)) do
        redis.call('HDEL', KEYS[7], gone)
        if redis.call('HEXISTS', KEYS[2], gone) == 0 then redis.call('HDEL', KEYS[4], gone) end
      end
      redis.call('ZREMRANGEBYRANK', KEYS[6], 0, over - 1)
    end
  end
  if kind == 'add' or kind == 'retract' or kind == 'evict' then
    redis.call('RPUSH', KEYS[5], ARGV[at + 3] .. ' ' .. fact_id)
    version = version + 1
    last = at
  end
  local now = tonumber(ARGV[at + 1])
  if watermark == nil or now > watermark then watermark = now end
  if kind ~= 'check' and (latest == nil or now > latest) then latest = now end
  out[#out + 1] = change
end

if last then
  -- The aggregates are as of where the windows ended: the watermark, which an earlier write's clock may have set.
  redis.call('HSET', KEYS[1], 'stamp', ARGV[last + 3], 'version', version, 'fired', ARGV[3], 'aggregates', ARGV[4],
    'aggregates_at', string.format('%.17g', watermark))
  local highest_revision = tonumber(ARGV[7])
  if highest_revision and (stored_revision == nil or highest_revision > stored_revision) then
    redis.call('HSET', KEYS[1], 'revision', ARGV[7])
  end
  redis.call('LTRIM', KEYS[5], -tonumber(ARGV[2]), -1)
end

if watermark ~= stored_watermark then
  redis.call('HSET', KEYS[1], 'watermark', string.format('%.17g', watermark))
end

if latest then
  local ttl_ms = tonumber(meta[1])
  -- Decided on Redis's clock, which expires the keys: writers' clocks differ, and one ahead of the rest would otherwise
  -- keep their writes from refreshing until the session expired under them.
  local left = redis.call('PTTL', KEYS[1])
  -- Less than a whole TTL left: the session must live ttl_ms past this write, and ttl_ms / 16 more spares the next
  -- writes of that stretch the seven PEXPIREs.
  if left < ttl_ms then
    local refreshed = ttl_ms + math.floor(ttl_ms / 16)
    redis.call('HSET', KEYS[1], 'expires_at', string.format('%.17g', latest + refreshed))
    for i = 1, 7 do redis.call('PEXPIRE', KEYS[i], refreshed) end
  elseif left > 0 then
    for i = 2, 7 do redis.call('PEXPIRE', KEYS[i], left) end
  end
end
return out
