--[[
  What the scheduler holds for each of these tasks.

  Input: state.lua's, then ARGV[4...] public ids
  Output: JSON object, public id -> {state, kind, account, release} (unknown or corrupt ones left out)
]]
--- @include "includes/state"

local found = {}
local any = false
if #ARGV >= 4 then
  local texts = rcall('HMGET', TASKS, unpack(ARGV, 4))
  for i, text in ipairs(texts) do
    local r = text and decode(text)
    if r then
      found[ARGV[3 + i]] = { state = STATE_NAMES[r.state], kind = r.kind, account = r.acct, release = r.n }
      any = true
    end
  end
end
if not any then return '{}' end
return cjson.encode(found)
