--[[
  One account's tasks by kind and fairness group: how many wait, how many run (the console).

  Input: state.lua's, then ARGV[4] account
  Output: JSON {kind = {group = {waiting, running}}} (kinds and groups with neither left out)
]]
--- @include "includes/state"

local acct = ARGV[4]
local out, any = {}, false
for _, kind in ipairs(KINDS) do
  local groups, has = {}, false
  for _, g in ipairs(rcall('ZRANGE', groupsKey(kind, acct), 0, 999)) do
    groups[g] = { waiting = rcall('ZCARD', groupLineKey(kind, acct, g)), running = tonumber(rcall('HGET', groupRunningKey(kind, acct), g)) or 0 }
    has = true
  end
  local flat = rcall('HGETALL', groupRunningKey(kind, acct))
  for i = 1, #flat, 2 do
    if not groups[flat[i]] and tonumber(flat[i + 1]) > 0 then
      groups[flat[i]] = { waiting = 0, running = tonumber(flat[i + 1]) }
      has = true
    end
  end
  if has then
    out[kind] = groups
    any = true
  end
end
if not any then return '{}' end
return cjson.encode(out)
