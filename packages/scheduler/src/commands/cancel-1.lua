--[[
  A cancelled task leaves its line at once; a released one's job is removed by the caller, an
  active one is let go by its worker.

  Input: state.lua's and report.lua's, then args[1] public id
  Output: reply(answer = {outcome = 'removed' | 'ready' | 'active' | 'unknown', release = n})
]]
--- @include "includes/state"
--- @include "includes/moves"
--- @include "includes/report"
--- @include "includes/forget-corrupt"

local id = args[1]
local r = subject(id)
local answer = { outcome = 'unknown', release = 0 }
if r and (r.state == 'p' or r.state == 'd') then
  move(id, r, 'x')
  answer = { outcome = 'removed', release = r.n }
elseif r then
  answer = { outcome = STATE_NAMES[r.state], release = r.n }
end
releaseAll()
return reply(answer)
