--[[
  A worker stopping: its slots no longer wait for work.

  Input: state.lua's and report.lua's (ARGV[4] the worker)
  Output: reply(answer = 0)
]]
--- @include "includes/state"
--- @include "includes/moves"
--- @include "includes/report"

rcall('ZREM', WORKERS, ARGV[4])
for _, kind in ipairs(KINDS) do rcall('HDEL', slotsKey(kind), ARGV[4]) end
prune()
return reply(0)
