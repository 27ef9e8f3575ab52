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
for i = 2, #args, 8 do
  local id = args[i]
  if not decode(rcall('HGET', TASKS, id)) then
    move(id, record(kind, args[i + 1], args[i + 2], args[i + 3], args[i + 4], args[i + 5], args[i + 6], args[i + 7]), 'p')
    joined = joined + 1
  end
end
promote()
release(kind)
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
