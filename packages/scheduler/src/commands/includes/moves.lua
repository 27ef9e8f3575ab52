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

-- Kinds whose next release may have changed during this call: released for at its end.
local dirty = {}
-- What this call released (each `{kind, task, account, release, front}`, front: to the head of
-- the kind's BullMQ queue, for a task that keeps its place) and the ids of corrupt entries it dropped.
local released, skipped = {}, {}

-- Slots of the kind that would still be idle once every ready task is taken.
local function demand(kind)
  local idle = 0
  for _, n in ipairs(rcall('HVALS', slotsKey(kind))) do idle = idle + tonumber(n) end
  return idle - rcall('ZCARD', readyKey(kind))
end

-- Puts an account where it belongs for one kind: eligible, held by its cap, or neither (no line).
local function place(kind, acct, running, cap)
  local head = rcall('ZRANGE', lineKey(kind, acct), 0, 0, 'WITHSCORES')
  if #head == 0 then
    rcall('ZREM', eligibleKey(kind), acct)
    rcall('ZREM', heldKey(kind), acct)
  elseif running < cap then
    local mine = math.min(tonumber(rcall('HGET', runningKindKey(kind), acct)) or 0, 16383)
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

-- Moves a task to state 'to' ('x': forget it).
local function move(id, r, to, due)
  local from = r.state
  if from == 'p' then rcall('ZREM', lineKey(r.kind, r.acct), id)
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
    elseif to == 'r' then rcall('ZADD', readyKey(r.kind), num(r.created), id)
    elseif to == 'd' then rcall('ZADD', DELAYED, num(due), id) end
    rcall('HSET', TASKS, id, encode(r))
  end
  dirty[r.kind] = true
  local before, after = counted(from), counted(to)
  if before ~= after then
    local d = after and 1 or -1
    local cap = capOf(r.acct)
    local running = rcall('HINCRBY', RUNNING, r.acct, d)
    if running <= 0 then rcall('HDEL', RUNNING, r.acct) end
    runnings[r.acct] = math.max(running, 0)
    hincr(runningKindKey(r.kind), r.acct, d)
    if after then rcall('ZADD', inserviceKey(r.kind), num(r.created), id) else rcall('ZREM', inserviceKey(r.kind), id) end
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

local function out(r, id, front)
  released[#released + 1] = { kind = r.kind, task = id, account = r.acct, release = r.n, front = front and true or false }
end

-- Releases the kind's next tasks by the fair rule while an idle slot of the kind has none.
local function release(kind)
  local want = demand(kind)
  for _ = 1, 1000 do
    if want <= 0 then return end
    local top = rcall('ZRANGE', eligibleKey(kind), 0, 0)
    if #top == 0 then return end
    local acct = top[1]
    local head = rcall('ZRANGE', lineKey(kind, acct), 0, 0)
    if #head == 0 or runningOf(acct) >= capOf(acct) then
      place(kind, acct, runningOf(acct), capOf(acct))
    else
      local id = head[1]
      local r = decode(rcall('HGET', TASKS, id))
      if not r or r.state ~= 'p' or r.kind ~= kind or r.acct ~= acct then
        -- Unknown, corrupt, or contradicting its record: off the line, reported, and the next one
        -- goes. A corrupt record goes too, so the sweeper can give the task back.
        rcall('ZREM', lineKey(kind, acct), id)
        if not r then rcall('HDEL', TASKS, id) end
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

-- A record for a task the scheduler does not know yet.
local function record(kind, acct, order, created, n)
  return { state = 'x', kind = kind, acct = acct, order = math.min(tonumber(order) or 0, MAX_ORDER), n = tonumber(n) or 0, created = tonumber(created) or NOW }
end

-- The reply of every command that may release work: what it released, what it dropped, and the
-- command's own answer (named fields).
local function reply(answer)
  return cjson.encode({ released = released, skipped = skipped, answer = answer })
end
