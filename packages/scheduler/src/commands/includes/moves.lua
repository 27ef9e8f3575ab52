--[[
  Moving tasks between states, keeping every index, count and placement right, and releasing
  tasks for idle worker slots. Needs state.lua.

  Tasks are released for idle worker slots only, so the choice is made when a slot frees (the
  finishing run reports it before its job ends, and BullMQ hands that slot the released job), not
  when the task was created. Each worker reports its idle slots per kind (`slots:<kind>`, a field
  per worker: slots not running a reported start) with each call and a heartbeat (`workers`, last
  seen); a worker silent for WORKER_TTL_MS (crashed) no longer counts. A kind's demand is its idle
  slots minus its released tasks: a released task holds the idle slot it was released for until
  its start is reported, so a start can wait for the worker's next call (saving a round trip).
]]

-- A pending task is released until this long after its deadline by Redis's clock: PostgreSQL's
-- clock decides the expiry (a claim refuses a task past it), so only a task the expiry sweep should
-- have taken out long ago is dropped here.
local DEADLINE_MARGIN_MS = 5000

-- Kinds whose next release may have changed during this call: released for at its end.
local dirty = {}
-- What this call released (each `{kind, task, account, release, front}`, front: to the head of
-- the kind's BullMQ queue, for a task that keeps its place), the ids of corrupt entries it dropped,
-- and of pending tasks past their deadline it took out of their lines instead of releasing them
-- (their expiry, in PostgreSQL, is the expiry sweep's).
local released, skipped, expired = {}, {}, {}

-- Reports a dropped entry once per call, however many of its indexes held it.
local skippedOnce = {}
local function skip(id)
  if skippedOnce[id] then return end
  skippedOnce[id] = true
  skipped[#skipped + 1] = id
end

-- Slots of the kind that would still be idle once every ready task is taken.
local function demand(kind)
  local idle = 0
  for _, n in ipairs(rcall('HVALS', slotsKey(kind))) do idle = idle + tonumber(n) end
  return idle - rcall('ZCARD', readyKey(kind))
end

-- Puts an account where it belongs for one kind: eligible, held by its cap, or neither (no line).
-- mine: its in-service tasks of the kind when the caller has just counted them (read otherwise).
local function place(kind, acct, running, cap, mine)
  local head = rcall('ZRANGE', lineKey(kind, acct), 0, 0, 'WITHSCORES')
  if #head == 0 then
    rcall('ZREM', eligibleKey(kind), acct)
    rcall('ZREM', heldKey(kind), acct)
  elseif running < cap then
    mine = math.min(mine or tonumber(rcall('HGET', runningKindKey(kind), acct)) or 0, 16383)
    rcall('ZADD', eligibleKey(kind), num(mine * SHIFT + math.min(tonumber(head[2]), MAX_ORDER)), acct)
    rcall('ZREM', heldKey(kind), acct)
  else
    rcall('ZADD', heldKey(kind), head[2], acct)
    rcall('ZREM', eligibleKey(kind), acct)
  end
end
local function placeAll(acct)
  local running, cap = runningOf(acct), capOf(acct)
  for _, kind in ipairs(KINDS) do place(kind, acct, running, cap) end
end

-- Puts a fairness group where it belongs in its account's groups of a kind: by its in-service
-- tasks of the kind, then its head's effective time; out when it has no pending task. mine: as
-- place's, the group's in-service tasks of the kind.
local function placeGroup(kind, acct, g, mine)
  local head = rcall('ZRANGE', groupLineKey(kind, acct, g), 0, 0, 'WITHSCORES')
  if #head == 0 then
    rcall('ZREM', groupsKey(kind, acct), g)
    return
  end
  mine = math.min(mine or tonumber(rcall('HGET', groupRunningKey(kind, acct), g)) or 0, 16383)
  local at = math.max(0, math.min(tonumber(head[2]) - EFFECTIVE_EPOCH, MAX_ORDER))
  rcall('ZADD', groupsKey(kind, acct), num(mine * SHIFT + at), g)
end

-- A bulk move (cancel-many) places each account and group it touched once, at its end
-- (flushPlacements), instead of once per task: the same result, a fraction of the commands.
local deferred = nil
local function deferPlacements() deferred = { accounts = {}, groups = {}, order = {} } end
local function deferPlace(kind, acct, g)
  local key = kind .. '|' .. acct .. '|' .. (g or '')
  local seen = g and deferred.groups or deferred.accounts
  if seen[key] then return end
  seen[key] = true
  deferred.order[#deferred.order + 1] = { kind = kind, acct = acct, group = g }
end
local function flushPlacements()
  local d = deferred
  deferred = nil
  for _, p in ipairs(d.order) do
    if p.group then placeGroup(p.kind, p.acct, p.group) else place(p.kind, p.acct, runningOf(p.acct), capOf(p.acct)) end
  end
end

-- Moves a task to state 'to' ('x': forget it).
local function move(id, r, to, due)
  local from = r.state
  local groupMoved = false
  if from == 'p' then
    rcall('ZREM', lineKey(r.kind, r.acct), id)
    rcall('ZREM', groupLineKey(r.kind, r.acct, r.group), groupMember(id, r))
    groupMoved = true
  elseif from == 'r' then rcall('ZREM', readyKey(r.kind), id)
  elseif from == 'd' then rcall('ZREM', DELAYED, id) end
  r.state = to
  -- A task joining behind an older one leaves its account's place as it was.
  local sameHead = false
  if to == 'x' then
    rcall('HDEL', TASKS, id)
  else
    if to == 'p' then
      local head = rcall('ZRANGE', lineKey(r.kind, r.acct), 0, 0, 'WITHSCORES')
      sameHead = #head > 0 and tonumber(head[2]) < r.order
      rcall('ZADD', lineKey(r.kind, r.acct), num(r.order), id)
      rcall('ZADD', groupLineKey(r.kind, r.acct, r.group), num(r.effective), groupMember(id, r))
      groupMoved = true
    elseif to == 'r' then rcall('ZADD', readyKey(r.kind), num(r.created), id)
    elseif to == 'd' then rcall('ZADD', DELAYED, num(due), id) end
    rcall('HSET', TASKS, id, encode(r))
  end
  dirty[r.kind] = true
  local before, after = counted(from), counted(to)
  -- The group's in-service tasks of the kind, when counted here (placeGroup reads it otherwise).
  local groupCount = nil
  if before ~= after then
    local d = after and 1 or -1
    local cap = capOf(r.acct)
    local running = rcall('HINCRBY', RUNNING, r.acct, d)
    if running <= 0 then rcall('HDEL', RUNNING, r.acct) end
    runnings[r.acct] = math.max(running, 0)
    local kindCount = hincr(runningKindKey(r.kind), r.acct, d)
    groupCount = hincr(groupRunningKey(r.kind, r.acct), r.group, d)
    groupMoved = true
    if after then rcall('ZADD', inserviceKey(r.kind), num(r.created), id) else rcall('ZREM', inserviceKey(r.kind), id) end
    -- Crossing the cap moves the account in every kind; otherwise only this kind's score changed.
    if (running - d < cap) ~= (running < cap) then
      for _, kind in ipairs(KINDS) do
        place(kind, r.acct, running, cap, kind == r.kind and kindCount or nil)
        dirty[kind] = true
      end
    else
      place(r.kind, r.acct, running, cap, kindCount)
    end
  elseif (from == 'p' or to == 'p') and not sameHead then
    if deferred then deferPlace(r.kind, r.acct) else place(r.kind, r.acct, runningOf(r.acct), capOf(r.acct)) end
  end
  if groupMoved then
    if deferred then deferPlace(r.kind, r.acct, r.group) else placeGroup(r.kind, r.acct, r.group, groupCount) end
  end
end

local function out(r, id, front)
  released[#released + 1] = { kind = r.kind, task = id, account = r.acct, release = r.n, front = front and true or false }
end

-- The task whose turn it is in an account's line of a kind: the head of the group whose turn it
-- is (fewest in-service tasks of the kind, then the oldest by effective time). Nil when none.
local function nextOf(kind, acct)
  for _ = 1, 100 do
    local top = rcall('ZRANGE', groupsKey(kind, acct), 0, 0)
    if #top == 0 then return nil end
    local head = rcall('ZRANGE', groupLineKey(kind, acct, top[1]), 0, 0)
    if #head > 0 then return memberTask(head[1]), top[1], head[1] end
    rcall('ZREM', groupsKey(kind, acct), top[1])
  end
  return nil
end

-- Puts up to 100 pending tasks of an account's line (by order) that are in no group's line into
-- theirs, and drops entries of tasks no longer pending. Returns how many entries it handled.
local function regroup(kind, acct)
  local handled = 0
  for _, lid in ipairs(rcall('ZRANGE', lineKey(kind, acct), 0, 99)) do
    local lr = decode(rcall('HGET', TASKS, lid))
    if lr and lr.state == 'p' and lr.kind == kind and lr.acct == acct then
      rcall('ZADD', groupLineKey(kind, acct, lr.group), num(lr.effective), groupMember(lid, lr))
      placeGroup(kind, acct, lr.group)
    else
      rcall('ZREM', lineKey(kind, acct), lid)
      if not lr then rcall('HDEL', TASKS, lid) end
      skip(lid)
    end
    handled = handled + 1
  end
  return handled
end

-- Releases the kind's next tasks by the fair rule while an idle slot of the kind has none: the
-- account whose turn it is (eligible's first), then within it the fairness group whose turn it is.
local function release(kind)
  -- The account whose turn it is first: when nobody waits in the kind (a drained queue, every end
  -- at light load), the idle slots need not be counted.
  local top = rcall('ZRANGE', eligibleKey(kind), 0, 0)
  if #top == 0 then return end
  local want = demand(kind)
  for _ = 1, 1000 do
    if want <= 0 then return end
    top = top or rcall('ZRANGE', eligibleKey(kind), 0, 0)
    if #top == 0 then return end
    local acct = top[1]
    top = nil
    local line = lineKey(kind, acct)
    local head = rcall('ZRANGE', line, 0, 0)
    local hr = head[1] and decode(rcall('HGET', TASKS, head[1]))
    if runningOf(acct) >= capOf(acct) or #head == 0 then
      place(kind, acct, runningOf(acct), capOf(acct))
    elseif not hr or hr.state ~= 'p' or hr.kind ~= kind or hr.acct ~= acct then
      -- The head of its line unknown, corrupt, or contradicting its record: off the line,
      -- reported, and the next one goes. A corrupt record goes too, so the sweeper can give the
      -- task back. A task no longer pending leaves its group's line too; a pending one of another
      -- kind or account keeps its own lines (only this stray entry goes).
      rcall('ZREM', line, head[1])
      if not hr then
        rcall('HDEL', TASKS, head[1])
      elseif hr.state ~= 'p' then
        rcall('ZREM', groupLineKey(hr.kind, hr.acct, hr.group), groupMember(head[1], hr))
        placeGroup(hr.kind, hr.acct, hr.group)
      end
      skip(head[1])
      place(kind, acct, runningOf(acct), capOf(acct))
    else
      -- The account's oldest task in its group's line first: one recorded by the previous release
      -- (no group line) joins its group as it comes to the head, so it keeps its place. When the
      -- group whose turn it is starts with it, it is in its group's line already (mostly: one group,
      -- no priorities), so that is only looked at otherwise.
      local id, g, member = nextOf(kind, acct)
      if id ~= head[1] and not rcall('ZSCORE', groupLineKey(kind, acct, hr.group), groupMember(head[1], hr)) then
        rcall('ZADD', groupLineKey(kind, acct, hr.group), num(hr.effective), groupMember(head[1], hr))
        placeGroup(kind, acct, hr.group)
        id, g, member = nextOf(kind, acct)
      end
      if not id then
        -- Pending tasks in its line but in no group's line (recorded by the previous release):
        -- grouped now, stale entries dropped.
        regroup(kind, acct)
      else
        -- Mostly the head of its account's line itself (one group, no priorities): read once.
        local r = id == head[1] and hr or decode(rcall('HGET', TASKS, id))
        if r and r.state == 'p' and r.kind == kind and r.acct == acct and r.group ~= g then
          -- A stale entry in another group's line: moved to its own group, its place kept.
          rcall('ZREM', groupLineKey(kind, acct, g), member)
          rcall('ZADD', groupLineKey(kind, acct, r.group), num(r.effective), groupMember(id, r))
          placeGroup(kind, acct, g)
          placeGroup(kind, acct, r.group)
          skip(id)
        elseif not r or r.state ~= 'p' or r.kind ~= kind or r.acct ~= acct then
          rcall('ZREM', groupLineKey(kind, acct, g), member)
          rcall('ZREM', line, id)
          placeGroup(kind, acct, g)
          if not r then rcall('HDEL', TASKS, id) end
          skip(id)
          place(kind, acct, runningOf(acct), capOf(acct))
        elseif r.deadline > 0 and NOW >= r.deadline + DEADLINE_MARGIN_MS then
          -- Well past its deadline: never released (the expiry sweep expires it in PostgreSQL,
          -- whose clock decides; the margin keeps a Redis clock running ahead of it from dropping a
          -- task the claim would still take).
          move(id, r, 'x')
          expired[#expired + 1] = id
        else
          r.n = r.n + 1
          move(id, r, 'r')
          out(r, id)
          want = want - 1
        end
      end
    end
  end
end

-- Retries whose time has come go straight back to ready, at the head of the queue: they never left
-- service.
local function promote()
  local due = rcall('ZRANGEBYSCORE', DELAYED, '-inf', NOW, 'LIMIT', 0, 100)
  for _, id in ipairs(due) do
    local r = decode(rcall('HGET', TASKS, id))
    if not r or r.state ~= 'd' or not isKind(r.kind) then
      rcall('ZREM', DELAYED, id)
      skipped[#skipped + 1] = id
    else
      r.n = r.n + 1
      move(id, r, 'r')
      out(r, id, true)
    end
  end
end

-- A record for a task the scheduler does not know yet (effective, deadline and group: its
-- priority-adjusted time, its deadline or 0, its fairness key or '*'; a start reported for a job
-- of an unknown task knows none of them).
local function record(kind, acct, order, created, n, effective, deadline, group)
  local c = tonumber(created) or NOW
  return {
    state = 'x', kind = kind, acct = acct, order = math.min(tonumber(order) or 0, MAX_ORDER), n = tonumber(n) or 0, created = c,
    effective = tonumber(effective) or c, deadline = tonumber(deadline) or 0, group = (group and group ~= '') and group or '*',
  }
end

-- The reply of every command that may release work: what it released, what it dropped, and the
-- command's own answer (named fields).
local function reply(answer)
  return cjson.encode({ released = released, skipped = skipped, expired = expired, answer = answer })
end
