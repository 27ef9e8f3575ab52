--[[
  Decides every waiting request of one API key at once, atomically and by the server's clock, so
  any number of API replicas agree (docs/architecture.md, "Rate limits"). Each request is decided
  in arrival order exactly as if it had come alone. Minute: an exact sliding window over a sorted
  set of accepted request times (ms). Day: rolling 24 h of hourly buckets (the current hour and the
  23 before it) in a hash. A revoked key's marker refuses the whole batch before anything is
  counted; rejected requests add nothing. The same call reads the keys the requests ask for (a
  read of one task prefetches its status marker and progress), so no request needs a second round
  trip. All keys carry the account's hash tag: one Redis Cluster slot. The number of keys varies
  (the caller passes it first).

  Input:
    KEYS[1] minute zset, KEYS[2] day hash, KEYS[3] revocation marker, KEYS[4...] keys to prefetch
    ARGV[1] minute limit, ARGV[2] day limit, ARGV[3] number of requests, ARGV[4] a prefix unique
    to this call (the sorted-set members are the prefix and a request number); for a batch
    request: ARGV[5] '1' (all the requests or none), ARGV[6] and ARGV[7] the sorted-set member and
    the hour of the one request already counted for it, taken back first (so a refused batch
    counts nothing, and an accepted one counts its size)
  Output: {-1} when the key is revoked; else the twelve slots, in this order (rate-limit.ts
    names them):
      1 accepted, 2 minute count before, 3 day count before, 4 minute reset, 5 day reset,
      6 limited window (0 minute, 2 day), 7 limited minute remaining, 8 limited minute reset,
      9 limited day remaining, 10 limited day reset, 11 retry after, 12 hour
    then the value (or nil) of each prefetched key, in KEYS order.
]]
local rcall = redis.call
if rcall('EXISTS', KEYS[3]) == 1 then return { -1 } end
if ARGV[6] then
  rcall('ZREM', KEYS[1], ARGV[6])
  if rcall('HEXISTS', KEYS[2], ARGV[7]) == 1 and rcall('HINCRBY', KEYS[2], ARGV[7], -1) <= 0 then
    rcall('HDEL', KEYS[2], ARGV[7])
  end
end
local n = tonumber(ARGV[3])
-- How many requests must fit at once: each alone, or a batch's all together.
local need = 1
if ARGV[5] == '1' then need = n end
local m = #KEYS - 3
local prefetched = {}
if m > 0 then prefetched = rcall('MGET', unpack(KEYS, 4, 3 + m)) end
local mlimit = tonumber(ARGV[1])
local dlimit = tonumber(ARGV[2])
local t = rcall('TIME')
local sec = tonumber(t[1])
local now = sec * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = 60000

rcall('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local mcount = rcall('ZCARD', KEYS[1])

local hour = math.floor(sec / 3600)
local flat = rcall('HGETALL', KEYS[2])
local hours = {}
local counts = {}
local dcount = 0
for i = 1, #flat, 2 do
  local h = tonumber(flat[i])
  if h <= hour - 24 then
    rcall('HDEL', KEYS[2], flat[i])
  else
    local c = tonumber(flat[i + 1])
    dcount = dcount + c
    counts[h] = c
    table.insert(hours, h)
  end
end
table.sort(hours)

local accepted = 0
while accepted < n and mcount + accepted < mlimit and dcount + accepted < dlimit do accepted = accepted + 1 end
if accepted < need then accepted = 0 end
if accepted > 0 then
  local members = {}
  for i = 1, accepted do
    members[2 * i - 1] = now
    members[2 * i] = ARGV[4] .. i
  end
  rcall('ZADD', KEYS[1], unpack(members))
  rcall('PEXPIRE', KEYS[1], window + 1000)
  rcall('HINCRBY', KEYS[2], hour, accepted)
  rcall('EXPIRE', KEYS[2], 25 * 3600)
  if counts[hour] == nil then table.insert(hours, hour) end
  counts[hour] = (counts[hour] or 0) + accepted
end
local mtotal = mcount + accepted
local dtotal = dcount + accepted

-- Seconds until the window holds fewer than it does now: when its (index+1)-th oldest time leaves.
local function minute_reset(index)
  local e = rcall('ZRANGE', KEYS[1], index, index, 'WITHSCORES')
  if #e == 0 then return 0 end
  return math.max(1, math.ceil((tonumber(e[2]) + window - now) / 1000))
end
-- Seconds until 'need' counted requests have left the day window, oldest hours first.
local function day_reset(need)
  for _, h in ipairs(hours) do
    need = need - counts[h]
    if need <= 0 then return math.max(1, (h + 24) * 3600 - sec) end
  end
  return 86400
end

local SLOTS = 12
local out = {}
for i = 1, SLOTS do out[i] = 0 end
out[1] = accepted
out[2] = mcount
out[3] = dcount
out[12] = hour
if accepted > 0 then
  out[4] = minute_reset(0)
  out[5] = day_reset(1)
end
if accepted < n then
  local mwait = 0
  local dwait = 0
  if mtotal + need > mlimit then mwait = minute_reset(mtotal + need - mlimit - 1) end
  if dtotal + need > dlimit then dwait = day_reset(dtotal + need - dlimit) end
  local mres = mwait
  if mres == 0 then mres = minute_reset(0) end
  local dres = dwait
  if dres == 0 then dres = day_reset(1) end
  local w = 0
  local retry = mwait
  if dwait >= mwait then
    w = 2
    retry = dwait
  end
  out[6] = w
  out[7] = math.max(0, mlimit - mtotal)
  out[8] = mres
  out[9] = math.max(0, dlimit - dtotal)
  out[10] = dres
  out[11] = retry
end
for i = 1, m do out[SLOTS + i] = prefetched[i] end
return out
