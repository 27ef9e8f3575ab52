--[[
  Cancelled tasks leave their lines at once (a bulk cancel's batch); a released one's job is
  removed by the caller, an active one is let go by its worker.

  Input: state.lua's and report.lua's, then args public ids
  Output: reply(answer = [{task, outcome = 'removed' | 'ready' | 'active' | 'delayed' | 'unknown', release}])
]]
--- @include "includes/state"
--- @include "includes/moves"
--- @include "includes/report"
--- @include "includes/forget-corrupt"

local results = {}
deferPlacements()
for _, id in ipairs(args) do
  local r = subject(id)
  if r and (r.state == 'p' or r.state == 'd') then
    move(id, r, 'x')
    results[#results + 1] = { task = id, outcome = 'removed', release = r.n }
  elseif r then
    results[#results + 1] = { task = id, outcome = STATE_NAMES[r.state], release = r.n }
  else
    results[#results + 1] = { task = id, outcome = 'unknown', release = 0 }
  end
end
flushPlacements()
releaseAll()
return reply(results)
