--[[
  A transient failure: the task runs again after a delay, still counted as running, ahead of its
  account's other tasks (for the current release only, as hand-back).

  Input: state.lua's and report.lua's, then args[1] public id, args[2] the run's release,
    args[3] the delay in ms
  Output: reply(answer = the state it was in | 'stale' | 'unknown')
]]
--- @include "includes/state"
--- @include "includes/moves"
--- @include "includes/report"
--- @include "includes/forget-corrupt"

local id = args[1]
local r = subject(id)
local answer = 'unknown'
if r and r.n ~= tonumber(args[2]) then
  answer = 'stale'
elseif r then
  answer = STATE_NAMES[r.state]
  if r.state == 'a' or r.state == 'r' then move(id, r, 'd', NOW + tonumber(args[3])) end
end
releaseAll()
return reply(answer)
