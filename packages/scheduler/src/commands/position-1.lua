--[[
  Where each of these tasks stands while queued: in its state, how many of its account's pending
  tasks of the same kind and fairness group start before it (its rank in its group's line: log
  time, however long the line), and whether its account is at its cap of running tasks.

  Input: state.lua's, then ARGV[4...] public ids
  Output: JSON object, public id -> {state, ahead, held_by_cap} (unknown ones left out; ahead is 0
    for a task already released or waiting to be retried: it runs next)
]]
--- @include "includes/state"

local found = {}
local any = false
for i = 4, #ARGV do
  local id = ARGV[i]
  local r = decode(rcall('HGET', TASKS, id))
  if r then
    local ahead = 0
    if r.state == 'p' then ahead = tonumber(rcall('ZRANK', groupLineKey(r.kind, r.acct, r.group), groupMember(id, r))) or 0 end
    found[id] = { state = STATE_NAMES[r.state], ahead = ahead, held_by_cap = runningOf(r.acct) >= capOf(r.acct) }
    any = true
  end
end
if not any then return '{}' end
return cjson.encode(found)
