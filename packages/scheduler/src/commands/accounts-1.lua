--[[
  Per account with tasks of one kind running or waiting: what it runs of the kind and in all,
  what waits, its cap (for `npm run admin -- queues`).

  Input: state.lua's, then ARGV[4] kind
  Output: JSON [{account, running, waiting, running_all_kinds, cap}]
]]
--- @include "includes/state"

local kind = ARGV[4]
local seen, rows = {}, {}
local function add(acct)
  if seen[acct] then return end
  seen[acct] = true
  local running = tonumber(rcall('HGET', runningKindKey(kind), acct)) or 0
  local waiting = rcall('ZCARD', lineKey(kind, acct))
  if running > 0 or waiting > 0 then
    rows[#rows + 1] = { account = acct, running = running, waiting = waiting, running_all_kinds = runningOf(acct), cap = capOf(acct) }
  end
end
for _, key in ipairs({ eligibleKey(kind), heldKey(kind) }) do
  for _, acct in ipairs(rcall('ZRANGE', key, 0, -1)) do add(acct) end
end
local flat = rcall('HGETALL', runningKindKey(kind))
for i = 1, #flat, 2 do add(flat[i]) end
if #rows == 0 then return '[]' end
return cjson.encode(rows)
