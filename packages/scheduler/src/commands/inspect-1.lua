--[[
  Per kind: the pending tasks that could run now, those held by their account's cap, and the
  creation time of the oldest that could run.

  Input: state.lua's
  Output: JSON {kinds = [{kind, runnable, held, oldest_created_ms}], now_ms}
]]
--- @include "includes/state"

local res = {}
for _, kind in ipairs(KINDS) do
  local runnable, held, oldest = 0, 0, 0
  for _, acct in ipairs(rcall('ZRANGE', eligibleKey(kind), 0, -1)) do
    local waiting = rcall('ZCARD', lineKey(kind, acct))
    local could = math.min(waiting, math.max(capOf(acct) - runningOf(acct), 0))
    runnable = runnable + could
    held = held + waiting - could
    local head = rcall('ZRANGE', lineKey(kind, acct), 0, 0)
    local r = head[1] and decode(rcall('HGET', TASKS, head[1]))
    if r and could > 0 and (oldest == 0 or r.created < oldest) then oldest = r.created end
  end
  for _, acct in ipairs(rcall('ZRANGE', heldKey(kind), 0, -1)) do
    held = held + rcall('ZCARD', lineKey(kind, acct))
  end
  res[#res + 1] = { kind = kind, runnable = runnable, held = held, oldest_created_ms = oldest }
end
return cjson.encode({ kinds = res, now_ms = NOW })
