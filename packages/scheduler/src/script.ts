// The fair scheduler's state machine, one Lua script run atomically by Redis (docs/fair-scheduling.md).
//
// Every key starts with the prefix, whose hash tag (`{sched}`) puts them all in one Redis Cluster
// slot: the cap is per account across every kind, so one script must see every kind's state.
//
// A task the scheduler knows is one field of the records hash, `state|kind|account|order|release|created`:
//   p  pending: in its account's line of its kind (`line:<kind>:<account>`, scored by order)
//   r  released: its job (id from the release number) is in its kind's BullMQ queue, or its run has
//      started and the worker has not reported that yet (starts are reported with the next call)
//   a  active: a worker runs it (reported)
//   d  delayed: waiting to be retried after a transient failure (`delayed`, scored by when)
// r, a and d are "in service": they count against the account's cap (`running`) and its share of
// the kind (`running:<kind>`), and are listed in `inservice:<kind>`; r are also in `ready:<kind>`.
// order is the task's database id (creation order), created its creation time in Unix ms.
//
// Which account goes next in a kind is kept ready to read: `eligible:<kind>` holds every account
// with a pending task of the kind and under its cap, scored by (its in-service tasks of the kind,
// then the order of its oldest pending task), so its first member is the account the rule picks.
// Accounts with pending tasks at their cap wait in `held:<kind>`. Caps are in `caps` (the default
// comes with every call).
//
// Tasks are released for idle worker slots only, so the choice is made when a slot frees (the
// finishing run reports it before its job ends, and BullMQ hands that slot the released job), not
// when the task was created. Each worker reports its idle slots per kind (`slots:<kind>`, a field
// per worker: slots not running a reported start) with each call and a heartbeat (`workers`, last
// seen); a worker silent for WORKER_TTL_MS (crashed) no longer counts. A kind's demand is its idle
// slots minus its released tasks: a released task holds the idle slot it was released for until
// its start is reported, so a start can wait for the worker's next call (saving a round trip).
//
// KEYS[1] the records hash (`<prefix>tasks`)
// ARGV[1] operation, ARGV[2] prefix, ARGV[3] default cap, ARGV[4] every kind, comma-separated,
// ARGV[5] the reporting worker's id ('' when none), ARGV[6] its idle slots, `kind=n,...` ('' none),
// ARGV[7] how many starts it reports, then 6 arguments per start; then the operation's arguments
// (see each branch).
// Operations that can release work return {released, skipped, answer}: released is a flat list of
// kind, public id, account, release number, front (1: to the head of the queue); skipped the ids of
// entries found corrupt and dropped.
export const SCHEDULER_SCRIPT = `
local TASKS = KEYS[1]
local P = ARGV[2]
-- The default cap in force is the one the workers' upkeep last stored (every call of a replica
-- whose own ACCOUNT_MAX_RUNNING differs would otherwise place accounts by another cap); ARGV[3]
-- until one is stored.
local DEFAULT_KEY = P .. 'defaultcap'
local DEFAULT_CAP = tonumber(redis.call('GET', DEFAULT_KEY)) or tonumber(ARGV[3])
local KINDS = {}
for k in string.gmatch(ARGV[4], '[^,]+') do KINDS[#KINDS + 1] = k end
local RUNNING = P .. 'running'
local CAPS = P .. 'caps'
local DELAYED = P .. 'delayed'
local WORKERS = P .. 'workers'
local WORKER_TTL_MS = 10000
-- The eligible score is (in-service tasks of the kind) * 2^39 + order: exact in a double while
-- the count stays under 2^14 (caps are at most 10,000) and task ids under 2^39.
local SHIFT = 549755813888
local MAX_ORDER = 549755813887

local function lineKey(kind, acct) return P .. 'line:' .. kind .. ':' .. acct end
local function eligibleKey(kind) return P .. 'eligible:' .. kind end
local function heldKey(kind) return P .. 'held:' .. kind end
local function runningKindKey(kind) return P .. 'running:' .. kind end
local function readyKey(kind) return P .. 'ready:' .. kind end
local function inserviceKey(kind) return P .. 'inservice:' .. kind end
local function slotsKey(kind) return P .. 'slots:' .. kind end
local function num(n) return string.format('%.0f', n) end

local t = redis.call('TIME')
local NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- Workers: the report that came with this call.
local reportedKinds = {}
if ARGV[5] ~= '' then
  redis.call('ZADD', WORKERS, NOW, ARGV[5])
  for kind, idle in string.gmatch(ARGV[6], '([^,=]+)=(%d+)') do
    redis.call('HSET', slotsKey(kind), ARGV[5], idle)
    reportedKinds[#reportedKinds + 1] = kind
  end
end
-- The end of the workers no longer heard from (in the periodic calls only: reports and ticks).
local function prune()
  for _, gone in ipairs(redis.call('ZRANGEBYSCORE', WORKERS, '-inf', NOW - WORKER_TTL_MS, 'LIMIT', 0, 100)) do
    redis.call('ZREM', WORKERS, gone)
    for _, kind in ipairs(KINDS) do redis.call('HDEL', slotsKey(kind), gone) end
  end
end

-- Slots of the kind that would still be idle once every ready task is taken.
local function demand(kind)
  local idle = 0
  for _, n in ipairs(redis.call('HVALS', slotsKey(kind))) do idle = idle + tonumber(n) end
  return idle - redis.call('ZCARD', readyKey(kind))
end

local function decode(v)
  if not v then return nil end
  local s, k, a, o, n, c = string.match(v, '^([prad])|([^|]+)|([^|]+)|(%d+)|(%d+)|(%d+)$')
  if not s then return nil end
  return { state = s, kind = k, acct = a, order = math.min(tonumber(o), MAX_ORDER), n = tonumber(n), created = tonumber(c) }
end
local function encode(r)
  return r.state .. '|' .. r.kind .. '|' .. r.acct .. '|' .. num(r.order) .. '|' .. num(r.n) .. '|' .. num(r.created)
end
local function isKind(kind)
  for _, k in ipairs(KINDS) do if k == kind then return true end end
  return false
end

-- Read once per call (every write of a count goes through move, which keeps them current).
local caps, runnings = {}, {}
local function capOf(acct)
  if caps[acct] == nil then caps[acct] = tonumber(redis.call('HGET', CAPS, acct)) or DEFAULT_CAP end
  return caps[acct]
end
local function runningOf(acct)
  if runnings[acct] == nil then runnings[acct] = tonumber(redis.call('HGET', RUNNING, acct)) or 0 end
  return runnings[acct]
end
-- Kinds whose next release may have changed during this call: released for at its end.
local dirty = {}
local function hincr(key, field, d)
  if redis.call('HINCRBY', key, field, d) <= 0 then redis.call('HDEL', key, field) end
end

-- Puts an account where it belongs for one kind: eligible, held by its cap, or neither (no line).
local function place(kind, acct, running, cap)
  local head = redis.call('ZRANGE', lineKey(kind, acct), 0, 0, 'WITHSCORES')
  if #head == 0 then
    redis.call('ZREM', eligibleKey(kind), acct)
    redis.call('ZREM', heldKey(kind), acct)
  elseif running < cap then
    local mine = math.min(tonumber(redis.call('HGET', runningKindKey(kind), acct)) or 0, 16383)
    redis.call('ZADD', eligibleKey(kind), num(mine * SHIFT + math.min(tonumber(head[2]), MAX_ORDER)), acct)
    redis.call('ZREM', heldKey(kind), acct)
  else
    redis.call('ZADD', heldKey(kind), head[2], acct)
    redis.call('ZREM', eligibleKey(kind), acct)
  end
end
local function placeAll(acct)
  local running, cap = runningOf(acct), capOf(acct)
  for _, kind in ipairs(KINDS) do place(kind, acct, running, cap) end
end

local function counted(s) return s == 'r' or s == 'a' or s == 'd' end

-- Moves a task to state 'to' ('x': forget it), keeping every index, count and placement right.
local function move(id, r, to, due)
  local from = r.state
  if from == 'p' then redis.call('ZREM', lineKey(r.kind, r.acct), id)
  elseif from == 'r' then redis.call('ZREM', readyKey(r.kind), id)
  elseif from == 'd' then redis.call('ZREM', DELAYED, id) end
  r.state = to
  -- A task joining behind an older one leaves its account's place as it was.
  local sameHead = false
  if to == 'x' then
    redis.call('HDEL', TASKS, id)
  else
    if to == 'p' then
      local head = redis.call('ZRANGE', lineKey(r.kind, r.acct), 0, 0, 'WITHSCORES')
      sameHead = #head > 0 and tonumber(head[2]) < r.order
      redis.call('ZADD', lineKey(r.kind, r.acct), num(r.order), id)
    elseif to == 'r' then redis.call('ZADD', readyKey(r.kind), num(r.created), id)
    elseif to == 'd' then redis.call('ZADD', DELAYED, num(due), id) end
    redis.call('HSET', TASKS, id, encode(r))
  end
  dirty[r.kind] = true
  local before, after = counted(from), counted(to)
  if before ~= after then
    local d = after and 1 or -1
    local cap = capOf(r.acct)
    local running = redis.call('HINCRBY', RUNNING, r.acct, d)
    if running <= 0 then redis.call('HDEL', RUNNING, r.acct) end
    runnings[r.acct] = math.max(running, 0)
    hincr(runningKindKey(r.kind), r.acct, d)
    if after then redis.call('ZADD', inserviceKey(r.kind), num(r.created), id) else redis.call('ZREM', inserviceKey(r.kind), id) end
    -- Crossing the cap moves the account in every kind; otherwise only this kind's score changed.
    if (running - d < cap) ~= (running < cap) then
      for _, kind in ipairs(KINDS) do
        place(kind, r.acct, running, cap)
        dirty[kind] = true
      end
    else
      place(r.kind, r.acct, running, cap)
    end
  elseif (from == 'p' or to == 'p') and not sameHead then
    place(r.kind, r.acct, runningOf(r.acct), capOf(r.acct))
  end
end

local released, skipped = {}, {}
-- front: the job goes to the head of the kind's BullMQ queue (a hand-back or a retry keeps its place).
local function out(r, id, front)
  released[#released + 1] = r.kind
  released[#released + 1] = id
  released[#released + 1] = r.acct
  released[#released + 1] = r.n
  released[#released + 1] = front and 1 or 0
end

-- Releases the kind's next tasks by the fair rule while an idle slot of the kind has none.
local function release(kind)
  local want = demand(kind)
  for _ = 1, 1000 do
    if want <= 0 then return end
    local top = redis.call('ZRANGE', eligibleKey(kind), 0, 0)
    if #top == 0 then return end
    local acct = top[1]
    local head = redis.call('ZRANGE', lineKey(kind, acct), 0, 0)
    if #head == 0 or runningOf(acct) >= capOf(acct) then
      place(kind, acct, runningOf(acct), capOf(acct))
    else
      local id = head[1]
      local r = decode(redis.call('HGET', TASKS, id))
      if not r or r.state ~= 'p' or r.kind ~= kind or r.acct ~= acct then
        -- Unknown, corrupt, or contradicting its record: off the line, reported, and the next one
        -- goes. A corrupt record goes too, so the sweeper can give the task back.
        redis.call('ZREM', lineKey(kind, acct), id)
        if not r then redis.call('HDEL', TASKS, id) end
        skipped[#skipped + 1] = id
        place(kind, acct, runningOf(acct), capOf(acct))
      else
        r.n = r.n + 1
        move(id, r, 'r')
        out(r, id)
        want = want - 1
      end
    end
  end
end

-- Retries whose time has come go straight back to ready, at the head of the queue: they never left
-- service.
local function promote()
  local due = redis.call('ZRANGEBYSCORE', DELAYED, '-inf', NOW, 'LIMIT', 0, 100)
  for _, id in ipairs(due) do
    local r = decode(redis.call('HGET', TASKS, id))
    if not r or r.state ~= 'd' or not isKind(r.kind) then
      redis.call('ZREM', DELAYED, id)
      skipped[#skipped + 1] = id
    else
      r.n = r.n + 1
      move(id, r, 'r')
      out(r, id, true)
    end
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

local function record(id, kind, acct, order, created, n)
  return { state = 'x', kind = kind, acct = acct, order = math.min(tonumber(order) or 0, MAX_ORDER), n = tonumber(n) or 0, created = tonumber(created) or NOW }
end

local op = ARGV[1]
local answer = 0

-- Runs the reporting worker started since its last call (they are reported lazily, with the next
-- call): each released task becomes active; a job the scheduler did not release (queued by an
-- earlier release, or after its record was lost) counts from now on. 6 arguments each: kind,
-- public id, account, order, created ms, the job's release number.
local starts = tonumber(ARGV[7]) or 0
for i = 8, 7 + 6 * starts, 6 do
  local kind, id = ARGV[i], ARGV[i + 1]
  if isKind(kind) then
    local r = decode(redis.call('HGET', TASKS, id))
    if not r then r = record(id, kind, ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]) end
    r.n = math.max(r.n, tonumber(ARGV[i + 5]) or 0)
    if r.state ~= 'a' then move(id, r, 'a') end
  end
end
-- The operation's own arguments.
local args = {}
for i = 8 + 6 * starts, #ARGV do args[#args + 1] = ARGV[i] end

if op == 'submit' then
  -- kind; then per task: public id, account, order, created ms, releases already used.
  local kind = args[1]
  for i = 2, #args, 5 do
    local id = args[i]
    if not decode(redis.call('HGET', TASKS, id)) then
      move(id, record(id, kind, args[i + 1], args[i + 2], args[i + 3], args[i + 4]), 'p')
      answer = answer + 1
    end
  end
  promote()
  release(kind)
elseif op == 'done' or op == 'handback' or op == 'retry' or op == 'cancel' then
  -- public id; handback and retry: the release the run was (only that run's end counts, not a
  -- late or repeated one), retry: then the delay in ms.
  local id = args[1]
  local r = decode(redis.call('HGET', TASKS, id))
  if not r then
    if redis.call('HEXISTS', TASKS, id) == 1 then
      -- Corrupt: off every index it could be in; the counts are rebuilt by the next recount.
      redis.call('HDEL', TASKS, id)
      redis.call('ZREM', DELAYED, id)
      for _, kind in ipairs(KINDS) do
        redis.call('ZREM', readyKey(kind), id)
        redis.call('ZREM', inserviceKey(kind), id)
      end
      skipped[#skipped + 1] = id
    end
    answer = 'unknown'
  elseif op == 'done' then
    move(id, r, 'x')
    answer = 'done'
  elseif (op == 'handback' or op == 'retry') and r.n ~= tonumber(args[2]) then
    answer = 'stale'
  elseif op == 'handback' then
    -- Its place is kept: still counted, released again at once to the head of its kind's queue.
    answer = r.state
    if r.state == 'a' or r.state == 'r' then
      r.n = r.n + 1
      move(id, r, 'r')
      out(r, id, true)
    end
  elseif op == 'retry' then
    answer = r.state
    if r.state == 'a' or r.state == 'r' then move(id, r, 'd', NOW + tonumber(args[3])) end
  else
    -- A cancelled task leaves its line at once; a released one's job is removed by the caller, an
    -- active one is let go by its worker.
    if r.state == 'p' or r.state == 'd' then
      move(id, r, 'x')
      answer = 'removed'
    else
      answer = r.state .. ':' .. num(r.n)
    end
  end
  releaseAll()
elseif op == 'report' or op == 'tick' then
  -- report: a worker's idle slots and starts (with the call, above), and whatever they allow now.
  prune()
  releaseAll(true)
elseif op == 'leave' then
  -- A worker stopping: its slots no longer wait for work.
  redis.call('ZREM', WORKERS, ARGV[5])
  for _, kind in ipairs(KINDS) do redis.call('HDEL', slotsKey(kind), ARGV[5]) end
  prune()
elseif op == 'caps' then
  -- The default cap (ARGV[3], stored for every call), then account, cap pairs: every account's
  -- own cap (the others take the default).
  local wanted, current, changed, seen = {}, {}, {}, {}
  local function change(acct)
    if not seen[acct] then
      seen[acct] = true
      changed[#changed + 1] = acct
    end
  end
  for i = 1, #args, 2 do wanted[args[i]] = args[i + 1] end
  if tonumber(redis.call('GET', DEFAULT_KEY)) ~= tonumber(ARGV[3]) then
    redis.call('SET', DEFAULT_KEY, ARGV[3])
    DEFAULT_CAP = tonumber(ARGV[3])
    -- Every account waiting for work may be placed by another cap now.
    for _, kind in ipairs(KINDS) do
      for _, key in ipairs({ eligibleKey(kind), heldKey(kind) }) do
        for _, acct in ipairs(redis.call('ZRANGE', key, 0, -1)) do change(acct) end
      end
    end
  end
  local flat = redis.call('HGETALL', CAPS)
  for i = 1, #flat, 2 do current[flat[i]] = flat[i + 1] end
  for acct in pairs(current) do
    if wanted[acct] == nil then
      redis.call('HDEL', CAPS, acct)
      change(acct)
    end
  end
  for acct, cap in pairs(wanted) do
    if current[acct] ~= cap then
      redis.call('HSET', CAPS, acct, cap)
      change(acct)
    end
  end
  caps = {}
  for _, acct in ipairs(changed) do placeAll(acct) end
  answer = #changed
  releaseAll(true)
elseif op == 'recount' then
  -- Rebuilds the running counts from the tasks in service (repairs whatever a corrupt record or a
  -- lost report left behind) and re-places every account whose count changed.
  local counts, perKind, changed = {}, {}, {}
  for _, kind in ipairs(KINDS) do
    perKind[kind] = {}
    for _, id in ipairs(redis.call('ZRANGE', inserviceKey(kind), 0, -1)) do
      local r = decode(redis.call('HGET', TASKS, id))
      if r and counted(r.state) and r.kind == kind then
        counts[r.acct] = (counts[r.acct] or 0) + 1
        perKind[kind][r.acct] = (perKind[kind][r.acct] or 0) + 1
      else
        redis.call('ZREM', inserviceKey(kind), id)
        skipped[#skipped + 1] = id
      end
    end
  end
  local function rewrite(key, want)
    local flat = redis.call('HGETALL', key)
    local have = {}
    for i = 1, #flat, 2 do have[flat[i]] = tonumber(flat[i + 1]) end
    for acct, n in pairs(have) do
      if want[acct] ~= n then
        changed[acct] = true
        if want[acct] then redis.call('HSET', key, acct, want[acct]) else redis.call('HDEL', key, acct) end
      end
    end
    for acct, n in pairs(want) do
      if have[acct] == nil then
        changed[acct] = true
        redis.call('HSET', key, acct, n)
      end
    end
  end
  rewrite(RUNNING, counts)
  for _, kind in ipairs(KINDS) do rewrite(runningKindKey(kind), perKind[kind]) end
  runnings = {}
  for acct in pairs(changed) do
    placeAll(acct)
    answer = answer + 1
  end
  releaseAll(true)
elseif op == 'lookup' then
  -- public ids: their records (false when unknown).
  return redis.call('HMGET', TASKS, unpack(args))
elseif op == 'inservice' then
  -- kind: the ids in service (released, active, delayed).
  return redis.call('ZRANGE', inserviceKey(args[1]), 0, -1)
elseif op == 'inspect' then
  -- Per kind: runnable pending, held pending, oldest runnable created ms.
  local res = {}
  for _, kind in ipairs(KINDS) do
    local runnable, held, oldest = 0, 0, 0
    for _, acct in ipairs(redis.call('ZRANGE', eligibleKey(kind), 0, -1)) do
      local waiting = redis.call('ZCARD', lineKey(kind, acct))
      local could = math.min(waiting, math.max(capOf(acct) - runningOf(acct), 0))
      runnable = runnable + could
      held = held + waiting - could
      local head = redis.call('ZRANGE', lineKey(kind, acct), 0, 0)
      local r = head[1] and decode(redis.call('HGET', TASKS, head[1]))
      if r and could > 0 and (oldest == 0 or r.created < oldest) then oldest = r.created end
    end
    for _, acct in ipairs(redis.call('ZRANGE', heldKey(kind), 0, -1)) do
      held = held + redis.call('ZCARD', lineKey(kind, acct))
    end
    res[#res + 1] = { kind, runnable, held, num(oldest) }
  end
  return { res, num(NOW) }
elseif op == 'account' then
  -- account: {in service, cap, pending per kind...}
  local acct = args[1]
  local res = { runningOf(acct), capOf(acct) }
  for _, kind in ipairs(KINDS) do res[#res + 1] = redis.call('ZCARD', lineKey(kind, acct)) end
  return res
else
  return redis.error_reply('unknown scheduler operation ' .. tostring(op))
end
return { released, skipped, answer }
`;
