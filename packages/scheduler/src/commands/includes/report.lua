--[[
  The report that comes with a worker's call, and the command's own arguments after it.
  Needs state.lua and moves.lua.

  Input, after state.lua's:
    ARGV[4] the reporting worker's id ('' when none), ARGV[5] its idle slots, `kind=n,...` ('' none),
    ARGV[6] how many starts it reports, then 6 arguments per start (kind, public id, account,
    order, created ms, the job's release number); then the command's own arguments (`args`).
]]
local reportedKinds = {}
if ARGV[4] ~= '' then
  rcall('ZADD', WORKERS, NOW, ARGV[4])
  for kind, idle in string.gmatch(ARGV[5], '([^,=]+)=(%d+)') do
    rcall('HSET', slotsKey(kind), ARGV[4], idle)
    reportedKinds[#reportedKinds + 1] = kind
  end
end

-- The end of the workers no longer heard from (in the periodic calls only: reports and ticks).
local function prune()
  for _, gone in ipairs(rcall('ZRANGEBYSCORE', WORKERS, '-inf', NOW - WORKER_TTL_MS, 'LIMIT', 0, 100)) do
    rcall('ZREM', WORKERS, gone)
    for _, kind in ipairs(KINDS) do rcall('HDEL', slotsKey(kind), gone) end
  end
end

-- Releases for every kind this call may have changed (or all of them).
local function releaseAll(everyKind)
  promote()
  for _, kind in ipairs(reportedKinds) do dirty[kind] = true end
  for _, kind in ipairs(KINDS) do
    if everyKind or dirty[kind] then release(kind) end
  end
end

-- Runs the reporting worker started since its last call (reported lazily, with the next call):
-- each released task becomes active; a job the scheduler did not release (queued by an earlier
-- release, or after its record was lost) counts from now on.
local starts = tonumber(ARGV[6]) or 0
for i = 7, 6 + 6 * starts, 6 do
  local kind, id = ARGV[i], ARGV[i + 1]
  if isKind(kind) then
    local r = decode(rcall('HGET', TASKS, id))
    if not r then r = record(kind, ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]) end
    r.n = math.max(r.n, tonumber(ARGV[i + 5]) or 0)
    -- Started: it never expires (a hand-back or retry releases it again whatever its deadline).
    r.deadline = 0
    if r.state ~= 'a' then move(id, r, 'a') end
  end
end

local args = {}
for i = 7 + 6 * starts, #ARGV do args[#args + 1] = ARGV[i] end
