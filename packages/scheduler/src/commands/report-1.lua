--[[
  A worker's report alone (its idle slots and the runs it started), and whatever it allows now.

  Input: state.lua's and report.lua's
  Output: reply(answer = 0)
]]
--- @include "includes/state"
--- @include "includes/moves"
--- @include "includes/report"

prune()
releaseAll(true)
return reply(0)
