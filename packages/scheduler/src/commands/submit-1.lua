--[[
  Tasks join their accounts' lines of one kind (known ones are left as they are); any released
  for an idle slot come back in the reply.

  Input: state.lua's and report.lua's, then
    args[1] kind; per task 8 more: public id, account, order, created ms, releases already used,
    effective ms (created minus its priority), deadline ms (0: none), fairness group ('*': none)
  Output: reply(answer = {joined = how many joined, positions = {public id = {ahead, held_by_cap}}}:
    where each submitted task stands once this call released what it could, as position-1.lua says)
]]
--- @include "includes/state"
--- @include "includes/moves"
--- @include "includes/report"

local kind = args[1]
local joined = 0

-- A lone new task whose turn it would be at once goes straight to ready: its kind has an idle slot
-- that no ready task holds, no account waits in the kind, its account has nothing pending in it and
-- is under its cap, and it is not past its deadline. Joining its line and being released by
-- release() ends in the same state; this way the lines, groups and placements it would enter and
-- leave in the same call are not written (about half the commands of a creation at light load).
-- Nothing else can be released by it (no account waits), so release() is not called after it.
local function releasedAtOnce()
  if #args ~= 9 or not isKind(kind) then return false end
  local id = args[2]
  if rcall('HGET', TASKS, id) then return false end
  if rcall('ZCARD', eligibleKey(kind)) > 0 or demand(kind) <= 0 then return false end
  local r = record(kind, args[3], args[4], args[5], args[6], args[7], args[8], args[9])
  if runningOf(r.acct) >= capOf(r.acct) or rcall('EXISTS', lineKey(kind, r.acct)) == 1 then return false end
  if r.deadline > 0 and NOW >= r.deadline + DEADLINE_MARGIN_MS then return false end
  r.n = r.n + 1
  move(id, r, 'r')
  out(r, id)
  joined = 1
  return true
end

-- Retries due go first: they never left service.
promote()
if not releasedAtOnce() then
  for i = 2, #args, 8 do
    local id = args[i]
    if not decode(rcall('HGET', TASKS, id)) then
      move(id, record(kind, args[i + 1], args[i + 2], args[i + 3], args[i + 4], args[i + 5], args[i + 6], args[i + 7]), 'p')
      joined = joined + 1
    end
  end
  release(kind)
end
local positions = {}
for i = 2, #args, 8 do
  local id = args[i]
  local r = decode(rcall('HGET', TASKS, id))
  if r then
    local ahead = 0
    if r.state == 'p' then ahead = tonumber(rcall('ZRANK', groupLineKey(r.kind, r.acct, r.group), groupMember(id, r))) or 0 end
    positions[id] = { ahead = ahead, held_by_cap = runningOf(r.acct) >= capOf(r.acct) }
  end
end
return reply({ joined = joined, positions = positions })
