"""The Lua scripts of the Redis store (each runs atomically in Redis).

The keys are those of :class:`.connection.RedisKeys`, built in the scripts
from the store prefix (``NS:store:``) passed as ``ARGV[1]``.
"""

#: marks of applied batches Redis keeps (``NS:store:marks``), for ledgers to tell a rollback
MARKS = 10_000

#: Apply one batch of writes, atomically and at most once.
#: ARGV: prefix, batch id, the batch (MessagePack, or JSON: it starts with ``{``), now, rule TTL,
#: evidence max, changes max, answered horizon, evidence max age, and what the writer knows: the
#: version, the epoch, the id of its last batch, the ids of its ledgers (the last four may be absent).
#: A rule entry carries what the writer counted since its last batch (added to the stored record,
#: after the TTL), and may carry the writer's whole record too (its support and against last): when
#: the store is as the writer's last batch left it and the writer knows it (the version is the one it
#: knows and that batch's mark, same epoch), nobody wrote since and the writer's record is the
#: merge, stored as it is.
BATCH = """
local p = ARGV[1]
if not redis.call('SET', p .. 'batch:' .. ARGV[2], '1', 'NX', 'EX', 600) then
  return {'dup', tonumber(redis.call('GET', p .. 'version') or '0')}
end
local b
if string.byte(ARGV[3], 1) == 123 then b = cjson.decode(ARGV[3]) else b = cmsgpack.unpack(ARGV[3]) end
local now, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
local alone = false
if ARGV[12] and ARGV[12] ~= '' then
  local version = redis.call('GET', p .. 'version') or '0'
  alone = version == ARGV[10] and (redis.call('GET', p .. 'epoch') or '') == ARGV[11]
    and redis.call('ZSCORE', p .. 'marks', ARGV[12]) == version
end
local changed, touched = {}, {}
local function change(c)
  if not touched[c] then touched[c] = true; changed[#changed + 1] = c end
end
local rejected = 0
-- The newest observation wins, not the last flush: a write older than the stored one is rejected
-- (counted: the writer reads the entry back). A drop is a tombstone and wins a tie.
-- mode: 0 put, 1 drop, 2 answered (the URL answered for itself: ends an older alias, known here
-- or not), 3 republished put. A put older than the answered horizon, or than the URL's last
-- answer, is rejected too.
local horizon = now - tonumber(ARGV[8])
redis.call('ZREMRANGEBYSCORE', p .. 'answered', '-inf', '(' .. horizon)
-- lww: 0 nothing to do, 1 rejected, 2 written; raw: the stored value (false: none)
local function lww(h, field, value, t, mode, guard, raw)
  local s = nil
  if raw then s = cjson.decode(raw) end
  if mode == 2 then
    redis.call('ZADD', p .. 'answered', 'GT', t, field)
    if not s or s[1] == '' or (tonumber(s[#s]) or 0) > t then return 0 end
  elseif s then
    local st = tonumber(s[#s]) or 0
    if st > t or (st == t and (mode ~= 1 or s[1] == '')) or (mode == 1 and guard ~= '' and s[1] ~= '' and s[1] ~= guard) then
      rejected = rejected + 1
      return 1
    end
  end
  if (mode == 0 or mode == 3) and h == p .. 'aliases' then
    local answered = tonumber(redis.call('ZSCORE', p .. 'answered', field) or '-1')
    if answered >= t or (mode == 0 and t < horizon) then rejected = rejected + 1; return 1 end
  end
  redis.call('HSET', h, field, value)
  return 2
end
-- The case-only aliases of a case key, for the declared-case rule: casealiases[key] is a JSON
-- object source -> [target, time], and aliascase[source] its key (only for case-only aliases).
local function case_index(source, value, t, key)
  local old = redis.call('HGET', p .. 'aliascase', source)
  if old then
    local m = cjson.decode(redis.call('HGET', p .. 'casealiases', old) or '{}')
    m[source] = nil
    if next(m) == nil then redis.call('HDEL', p .. 'casealiases', old)
    else redis.call('HSET', p .. 'casealiases', old, cjson.encode(m)) end
    redis.call('HDEL', p .. 'aliascase', source)
    change('c' .. old)
  end
  if key ~= '' then
    local target = cjson.decode(value)[1]
    if target ~= '' then
      local m = cjson.decode(redis.call('HGET', p .. 'casealiases', key) or '{}')
      m[source] = {target, t}
      redis.call('HSET', p .. 'casealiases', key, cjson.encode(m))
      redis.call('HSET', p .. 'aliascase', source, key)
      change('c' .. key)
    end
  end
end
local ended = {}
for _, a in ipairs(b.a) do
  local raw = redis.call('HGET', p .. 'aliases', a[1])
  local done = lww(p .. 'aliases', a[1], a[2], a[3], a[4], '', raw)
  if done > 0 then change('a' .. a[1]) end
  if done == 2 and a[2] ~= raw then
    if raw and cjson.decode(raw)[1] ~= '' and cjson.decode(a[2])[1] == '' then
      ended[#ended + 1] = a[1]  -- an alias this batch ended: the writer's ledger keeps it
    end
    case_index(a[1], a[2], a[3], a[5] or '')
  end
end
for _, c in ipairs(b.c or {}) do
  if lww(p .. 'cases', c[1], c[2], c[3], c[4], c[5], redis.call('HGET', p .. 'cases', c[1])) > 0 then change('c' .. c[1]) end
end
local listed = {}  -- origins known to be in the origins set
for _, r in ipairs(b.r) do
  local key, mode = p .. 'rules:' .. r[1], r[3]
  if alone and r[12] and (mode == 'merge' or mode == 'dropmerge') then
    redis.call('HSET', key, r[2], cjson.encode({r[11], r[12], r[6], r[7], r[8], r[9], r[10]}))
    if not listed[r[1]] then listed[r[1]] = true; redis.call('SADD', p .. 'origins', r[1]) end
  else
    if mode == 'drop' or mode == 'dropmerge' then redis.call('HDEL', key, r[2]) end
    if mode ~= 'drop' then
      local raw = redis.call('HGET', key, r[2])
      if not (raw and mode == 'setnx') then
        local s = {0, 0, 0, 0, 0, '', ''}
        if raw then s = cjson.decode(raw) end
        if mode == 'setnx' then
          s = {r[4], r[5], r[6], r[7], r[8], r[9], r[10]}
        elseif mode == 'max' then
          -- a record written back after a rollback: what both know, never counted twice
          s[1] = math.max(s[1], r[4]); s[2] = math.max(s[2], r[5])
          if r[6] > 0 and (s[3] == 0 or r[6] < s[3]) then s[3] = r[6] end
          if r[7] >= s[4] then s[4] = r[7]; s[6] = r[9] end
          if r[8] >= s[5] then s[5] = r[8]; s[7] = r[10] end
        else
          -- expired at the time of the writer's newest count (an archive learned late counts at its
          -- captures' times, as the writer did), never later than now
          local at = math.max(r[7], r[8])
          if at <= 0 or at > now then at = now end
          if s[2] > 0 and at - s[5] > ttl then s[1] = 0; s[2] = 0; s[6] = ''; s[7] = '' end
          if s[1] > 0 and at - s[4] > ttl then s[1] = 0; s[6] = '' end
          if r[6] > 0 and (s[3] == 0 or r[6] < s[3]) then s[3] = r[6] end
          if r[4] > 0 then s[1] = s[1] + r[4]; if r[7] >= s[4] then s[4] = r[7]; s[6] = r[9] end end
          if r[5] > 0 then s[2] = s[2] + r[5]; if r[8] >= s[5] then s[5] = r[8]; s[7] = r[10] end end
        end
        redis.call('HSET', key, r[2], cjson.encode(s))
        if not listed[r[1]] then listed[r[1]] = true; redis.call('SADD', p .. 'origins', r[1]) end
      end
    end
    if mode == 'drop' and redis.call('EXISTS', key) == 0 then redis.call('SREM', p .. 'origins', r[1]); listed[r[1]] = nil end
  end
  change('r' .. r[1])
end
for _, f in ipairs(b.f) do
  local key = p .. 'fanin:' .. f[1]
  -- sinks: every target with two sources or more, scored with their number (a sink for any cap up to it)
  if f[3] < 0 then  -- a sink written back: at least -f[3] sources
    redis.call('ZADD', p .. 'sinks', 'GT', -f[3], f[1])
  elseif f[2] == '' then
    redis.call('DEL', key); redis.call('SREM', p .. 'fanins', f[1]); redis.call('ZREM', p .. 'sinks', f[1])
  else
    local n = redis.call('SCARD', key)
    if n < f[3] then
      n = n + redis.call('SADD', key, f[2]); redis.call('SADD', p .. 'fanins', f[1])
      if n >= 2 then redis.call('ZADD', p .. 'sinks', 'GT', n, f[1]) end
    end
  end
  change('f' .. f[1])
end
for first = 1, #b.e, 1000 do redis.call('RPUSH', p .. 'evidence', unpack(b.e, first, math.min(first + 999, #b.e))) end
if #b.e > 0 then
  redis.call('LTRIM', p .. 'evidence', -tonumber(ARGV[6]), -1)
  -- by age before the newest entry ever held (a date in the future counts as now); a store
  -- written without that key takes its newest entry's time
  local newest = tonumber(redis.call('GET', p .. 'evidence_newest') or '')
  if not newest then newest = tonumber(string.match(redis.call('LINDEX', p .. 'evidence', -1), '^%[([^,]+),')) end
  for _, e in ipairs(b.e) do
    local t = tonumber(string.match(e, '^%[([^,]+),'))
    if t and t > newest then newest = t end
  end
  redis.call('SET', p .. 'evidence_newest', string.format('%.17g', newest))
  local oldest = math.min(newest, now) - tonumber(ARGV[9])
  while true do  -- by age too (oldest first: each entry is looked at once more than it is kept)
    local first = redis.call('LINDEX', p .. 'evidence', 0)
    if not first or cjson.decode(first)[1] >= oldest then break end
    redis.call('LPOP', p .. 'evidence')
  end
end
for _, d in ipairs(b.d) do
  redis.call('SADD', p .. 'deferred:' .. d[1], d[2]); redis.call('SADD', p .. 'deferreds', d[1])
end
local v = tonumber(redis.call('GET', p .. 'version') or '0')
if #changed > 0 then
  v = redis.call('INCRBY', p .. 'version', #changed)
  for first = 1, #changed, 1000 do
    redis.call('RPUSH', p .. 'changes', unpack(changed, first, math.min(first + 999, #changed)))
  end
  redis.call('LTRIM', p .. 'changes', -tonumber(ARGV[7]), -1)
end
-- the batch's mark, scored with the version it left: a writer's ledger names it, and a Redis
-- that lost it went back in time (the last MARKS are kept)
redis.call('ZADD', p .. 'marks', v, ARGV[2])
redis.call('ZREMRANGEBYRANK', p .. 'marks', 0, -MARKS - 1)
-- and the version it left, under the writer's ledger id: a mark that aged out of the kept ones
-- while this still holds a version as new is no rollback
if ARGV[13] then
  for id in string.gmatch(ARGV[13], '%S+') do redis.call('HSET', p .. 'ledgers', id, v) end
end
return {'ok', v, #changed, rejected, ended}
""".replace("MARKS", str(MARKS))

#: Save a process's filter of alias sources: OR-ed into the saved one of the same size (the union
#: knows every alias either knew, up to the newer version), replacing a smaller one, never a larger.
#: KEYS: filter, filterstate. ARGV: bits, capacity, count, version.
SAVE_FILTER = """
local st = redis.call('GET', KEYS[2])
local capacity, count, version = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if st then
  local s = cjson.decode(st)
  if tonumber(s[1]) > capacity then return 0 end
  if tonumber(s[1]) == capacity and redis.call('EXISTS', KEYS[1]) == 1 then
    local tmp = KEYS[1] .. ':merge'
    redis.call('SET', tmp, ARGV[1])
    redis.call('BITOP', 'OR', KEYS[1], KEYS[1], tmp)
    redis.call('DEL', tmp)
    redis.call('SET', KEYS[2], cjson.encode({capacity, math.max(tonumber(s[2]), count), math.max(tonumber(s[3]), version)}))
    return 1
  end
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], cjson.encode({capacity, count, version}))
return 1
"""

#: What changed since a version. ARGV: prefix, known version, known epoch, the id of the last batch
#: this process applied (less than 10 minutes ago; "" if none), the known history, and the newest
#: mark of the ledger with its version ("" if none: see :mod:`.ledger`), and the ledger's id.
#: Returns {epoch, version} (nothing new), {epoch, version, '*'} (reload), {epoch, version, '!'}
#: (Redis went back to an older state: the batch is gone, or the version went down), {epoch,
#: version, '~'} (another process found that it did: the history changed) or
#: {epoch, version, change...}.
SYNC = """
local p = ARGV[1]
local epoch = redis.call('GET', p .. 'epoch') or ''
local v = tonumber(redis.call('GET', p .. 'version') or '0')
local known = tonumber(ARGV[2])
if epoch ~= ARGV[3] then return {epoch, v, '*'} end
if (redis.call('GET', p .. 'history') or '') ~= ARGV[5] then return {epoch, v, '~'} end
if ARGV[4] ~= '' and redis.call('EXISTS', p .. 'batch:' .. ARGV[4]) == 0 then return {epoch, v, '!'} end
if ARGV[6] and ARGV[6] ~= '' and not redis.call('ZSCORE', p .. 'marks', ARGV[6]) then
  -- the newest mark of the ledger is gone: went back, unless it left the kept marks long ago
  -- long ago: older than every kept mark, and this ledger's newest batch in Redis is as new
  local oldest = redis.call('ZRANGE', p .. 'marks', 0, 0, 'WITHSCORES')
  local held = tonumber(redis.call('HGET', p .. 'ledgers', ARGV[8] or '') or '-1')
  if tonumber(ARGV[7]) > v or not oldest[2] or tonumber(ARGV[7]) >= tonumber(oldest[2])
    or held < tonumber(ARGV[7]) then return {epoch, v, '!'} end
end
if v == known then return {epoch, v} end
local gap = v - known
if gap < 0 then return {epoch, v, '!'} end
if gap > redis.call('LLEN', p .. 'changes') then return {epoch, v, '*'} end
local out = {epoch, v}
for _, c in ipairs(redis.call('LRANGE', p .. 'changes', -gap, -1)) do out[#out + 1] = c end
return out
"""

#: Take the URLs deferred under a rule, atomically and idempotently (a retried call gets the
#: same answer, not an empty one). KEYS: deferred:<rule>, deferreds, taken:<token>. ARGV: rule.
TAKE = """
local done = redis.call('GET', KEYS[3])
if done then return cjson.decode(done) end
local urls = redis.call('SMEMBERS', KEYS[1])
redis.call('DEL', KEYS[1]); redis.call('SREM', KEYS[2], ARGV[1])
redis.call('SET', KEYS[3], cjson.encode(urls), 'EX', 600)
return urls
"""

#: An alias and its target's alias, in one round trip (resolving follows the target next).
#: KEYS: aliases. ARGV: source. Returns {} (no alias), {alias} (a tombstone) or {alias, target's alias or nil}.
ALIAS = """
local a = redis.call('HGET', KEYS[1], ARGV[1])
if not a then return {} end
local target = cjson.decode(a)[1]
if target == '' then return {a} end
return {a, redis.call('HGET', KEYS[1], target)}
"""

#: Read many fan-in sets and rule records in one call (what a pipeline of a command each costs the
#: client per command, it pays once). ARGV: prefix, the number of targets, the targets, then for each
#: origin: the origin, the number of its fields, the fields. Returns what is there only, in pairs:
#: {target's position, its members...} for each fan-in that has members, {field's position among
#: all the fields, its value...} for each rule record found (positions from 1).
READ = """
local p = ARGV[1]
local n = tonumber(ARGV[2])
local fanins, rules = {}, {}
for i = 1, n do
  local members = redis.call('SMEMBERS', p .. 'fanin:' .. ARGV[i + 2])
  if #members > 0 then fanins[#fanins + 1] = i; fanins[#fanins + 1] = members end
end
local i, at = n + 3, 0
while i <= #ARGV do
  local key, m = p .. 'rules:' .. ARGV[i], tonumber(ARGV[i + 1])
  for first = i + 2, i + 1 + m, 500 do
    local part = redis.call('HMGET', key, unpack(ARGV, first, math.min(first + 499, i + 1 + m)))
    for j = 1, #part do
      if part[j] then rules[#rules + 1] = at + first - i - 2 + j; rules[#rules + 1] = part[j] end
    end
  end
  at = at + m
  i = i + 2 + m
end
return {fanins, rules}
"""

#: Drop the rule records of a few origins whose every count is older than the rule TTL (they mean
#: nothing any more: a record expires them when next counted), so an origin keeps only what still
#: counts. The origins are visited in turn (a cursor over the origins set, kept in Redis), a few per
#: call: each call is short. As in the SQLite store, no change is logged: a process that holds such a
#: record keeps it (a count added to it starts it afresh, as on Redis), the others no longer read it.
#: "Older" is before the newest evidence entry's time (never after now), as the evidence log is pruned.
#: ARGV: prefix, now, rule TTL, origins per call. Returns the number of records dropped.
COMPACT = """
local p = ARGV[1]
local now, ttl = tonumber(ARGV[2]), tonumber(ARGV[3])
-- past use at the store's newest learning time (an archive learned late keeps what still counted)
local newest = tonumber(redis.call('GET', p .. 'evidence_newest') or '')
if newest and newest < now then now = newest end
local scan = redis.call('SSCAN', p .. 'origins', redis.call('GET', p .. 'compacted') or '0', 'COUNT', ARGV[4])
redis.call('SET', p .. 'compacted', scan[1])
local dropped = 0
for _, origin in ipairs(scan[2]) do
  local key = p .. 'rules:' .. origin
  local fields = redis.call('HGETALL', key)
  for i = 1, #fields, 2 do
    local s = cjson.decode(fields[i + 1])
    if (s[1] == 0 or now - s[4] > ttl) and (s[2] == 0 or now - s[5] > ttl) then
      redis.call('HDEL', key, fields[i]); dropped = dropped + 1
    end
  end
  if redis.call('EXISTS', key) == 0 then redis.call('SREM', p .. 'origins', origin) end
end
return dropped
"""
