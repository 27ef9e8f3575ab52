--[[
  Replaces every account's own cap (the others take the default, ARGV[2], stored for every call)
  and re-places the accounts whose cap changed.

  Input: state.lua's and report.lua's, then account, cap pairs
  Output: reply(answer = how many accounts changed)
]]
--- @include "includes/state"
--- @include "includes/moves"
--- @include "includes/report"

local wanted, current, changed, seen = {}, {}, {}, {}
local function change(acct)
  if not seen[acct] then
    seen[acct] = true
    changed[#changed + 1] = acct
  end
end
for i = 1, #args, 2 do wanted[args[i]] = args[i + 1] end
if tonumber(rcall('GET', DEFAULT_KEY)) ~= tonumber(ARGV[2]) then
  rcall('SET', DEFAULT_KEY, ARGV[2])
  DEFAULT_CAP = tonumber(ARGV[2])
  -- Every account waiting for work may be placed by another cap now.
  for _, kind in ipairs(KINDS) do
    for _, key in ipairs({ eligibleKey(kind), heldKey(kind) }) do
      for _, acct in ipairs(rcall('ZRANGE', key, 0, -1)) do change(acct) end
    end
  end
end
local flat = rcall('HGETALL', CAPS)
for i = 1, #flat, 2 do current[flat[i]] = flat[i + 1] end
for acct in pairs(current) do
  if wanted[acct] == nil then
    rcall('HDEL', CAPS, acct)
    change(acct)
  end
end
for acct, cap in pairs(wanted) do
  if current[acct] ~= cap then
    rcall('HSET', CAPS, acct, cap)
    change(acct)
  end
end
caps = {}
for _, acct in ipairs(changed) do placeAll(acct) end
releaseAll(true)
return reply(#changed)
