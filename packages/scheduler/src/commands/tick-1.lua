--[[
  The periodic upkeep: retries that are due, and anything that waits for a free slot.

  Input: state.lua's and report.lua's (no worker)
  Output: reply(answer = 0)
]]
--- @include "includes/state"
--- @include "includes/moves"
--- @include "includes/report"

prune()
releaseAll(true)
return reply(0)
