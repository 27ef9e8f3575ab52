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
    if r.state == 'p' then
      -- A task recorded by the previous release is in no group's line until it nears the head:
      -- its rank in its account's line stands in (its tasks ahead are of the same kind, and keyless).
      ahead = tonumber(rcall('ZRANK', groupLineKey(r.kind, r.acct, r.group), groupMember(id, r)))
        or tonumber(rcall('ZRANK', lineKey(r.kind, r.acct), id)) or 0
    end
    found[id] = { state = STATE_NAMES[r.state], ahead = ahead, held_by_cap = runningOf(r.acct) >= capOf(r.acct) }
    any = true
  end
end
if not any then return '{}' end
return cjson.encode(found)
