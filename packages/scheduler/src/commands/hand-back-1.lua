--[[
  A run handed back unfinished: the task keeps its place (still counted as running) and is
  released again at once, to the head of its kind's queue. Only the task's current release counts
  (a late or repeated hand-back changes nothing).

  Input: state.lua's and report.lua's, then args[1] public id, args[2] the run's release
  Output: reply(answer = the state it was in ('ready', 'active', ...) | 'stale' | 'unknown')
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
  if r.state == 'a' or r.state == 'r' then
    r.n = r.n + 1
    move(id, r, 'r')
    out(r, id, true)
  end
end
releaseAll()
return reply(answer)
