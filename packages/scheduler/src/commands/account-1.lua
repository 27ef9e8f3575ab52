--[[
  One account's use of its cap.

  Input: state.lua's, then ARGV[4] account
  Output: JSON {running, cap, waiting = {kind = pending tasks}}
]]
--- @include "includes/state"

local acct = ARGV[4]
local waiting = {}
for _, kind in ipairs(KINDS) do waiting[kind] = rcall('ZCARD', lineKey(kind, acct)) end
return cjson.encode({ running = runningOf(acct), cap = capOf(acct), waiting = waiting })
