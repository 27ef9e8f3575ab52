--[[
  Tasks join their accounts' lines of one kind (known ones are left as they are); any released
  for an idle slot come back in the reply.

  Input: state.lua's and report.lua's, then
    args[1] kind; per task 5 more: public id, account, order, created ms, releases already used
  Output: reply(answer = how many joined)
]]
--- @include "includes/state"
--- @include "includes/moves"
--- @include "includes/report"

local kind = args[1]
local joined = 0
for i = 2, #args, 5 do
  local id = args[i]
  if not decode(rcall('HGET', TASKS, id)) then
    move(id, record(kind, args[i + 1], args[i + 2], args[i + 3], args[i + 4]), 'p')
    joined = joined + 1
  end
end
promote()
release(kind)
return reply(joined)
