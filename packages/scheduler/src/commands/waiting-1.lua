--[[
  A page of the tasks of one kind waiting in their accounts' lines, for operators (Bull Board):
  accounts that could run a task now first (in the order they are served), then those held by
  their cap, each account's tasks in creation order.

  Input: state.lua's, then ARGV[4] kind, ARGV[5] how many to skip, ARGV[6] how many to return
  Output: JSON {total, tasks = [{task, account, group, created_ms, effective_ms, deadline_ms, held_by_cap}]}
]]
--- @include "includes/state"

local kind, skip, count = ARGV[4], tonumber(ARGV[5]) or 0, tonumber(ARGV[6]) or 20
local total, tasks = 0, {}
for _, key in ipairs({ eligibleKey(kind), heldKey(kind) }) do
  for _, acct in ipairs(rcall('ZRANGE', key, 0, -1)) do
    local line = lineKey(kind, acct)
    local n = rcall('ZCARD', line)
    if #tasks < count and skip < total + n then
      local from = math.max(0, skip - total)
      local held = runningOf(acct) >= capOf(acct)
      for _, id in ipairs(rcall('ZRANGE', line, from, from + count - #tasks - 1)) do
        local r = decode(rcall('HGET', TASKS, id))
        if r then
          tasks[#tasks + 1] = { task = id, account = acct, group = r.group, created_ms = r.created, effective_ms = r.effective, deadline_ms = r.deadline, held_by_cap = held }
        end
      end
    end
    total = total + n
  end
end
if #tasks == 0 then return cjson.encode({ total = total }) end
return cjson.encode({ total = total, tasks = tasks })
