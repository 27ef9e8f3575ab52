--[[
  The task ended, or its run found nothing to do: it leaves the scheduler and frees its place.

  Input: state.lua's and report.lua's, then args[1] public id
  Output: reply(answer = 'done' | 'unknown')
]]
--- @include "includes/state"
--- @include "includes/moves"
--- @include "includes/report"
--- @include "includes/forget-corrupt"

local id = args[1]
local r = subject(id)
local answer = 'unknown'
if r then
  move(id, r, 'x')
  answer = 'done'
end
releaseAll()
return reply(answer)
