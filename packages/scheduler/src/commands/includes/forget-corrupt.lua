--[[
  A task whose record is corrupt leaves every index it could be in (the counts are rebuilt by the
  next recount) and is reported as skipped. Needs state.lua and moves.lua.
]]
local function forgetCorrupt(id)
  rcall('HDEL', TASKS, id)
  rcall('ZREM', DELAYED, id)
  for _, kind in ipairs(KINDS) do
    rcall('ZREM', readyKey(kind), id)
    rcall('ZREM', inserviceKey(kind), id)
  end
  skip(id)
end

-- The record of the task the command is about: nil (and `answer` 'unknown') when there is none
-- or it was corrupt.
local function subject(id)
  local r = decode(rcall('HGET', TASKS, id))
  if not r and rcall('HEXISTS', TASKS, id) == 1 then forgetCorrupt(id) end
  return r
end
