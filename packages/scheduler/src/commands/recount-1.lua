--[[
  Rebuilds the running counts from the tasks in service (repairs whatever a corrupt record or a
  lost report left behind) and re-places every account whose count changed.

  Input: state.lua's and report.lua's
  Output: reply(answer = how many accounts changed)
]]
--- @include "includes/state"
--- @include "includes/moves"
--- @include "includes/report"

local counts, perKind, perGroup, changed = {}, {}, {}, {}
for _, kind in ipairs(KINDS) do
  perKind[kind] = {}
  perGroup[kind] = {}
  for _, id in ipairs(rcall('ZRANGE', inserviceKey(kind), 0, -1)) do
    local r = decode(rcall('HGET', TASKS, id))
    if r and counted(r.state) and r.kind == kind then
      counts[r.acct] = (counts[r.acct] or 0) + 1
      perKind[kind][r.acct] = (perKind[kind][r.acct] or 0) + 1
      perGroup[kind][r.acct] = perGroup[kind][r.acct] or {}
      perGroup[kind][r.acct][r.group] = (perGroup[kind][r.acct][r.group] or 0) + 1
    else
      rcall('ZREM', inserviceKey(kind), id)
      skipped[#skipped + 1] = id
    end
  end
end
local function rewrite(key, want)
  local flat = rcall('HGETALL', key)
  local have = {}
  for i = 1, #flat, 2 do have[flat[i]] = tonumber(flat[i + 1]) end
  for acct, n in pairs(have) do
    if want[acct] ~= n then
      changed[acct] = true
      if want[acct] then rcall('HSET', key, acct, want[acct]) else rcall('HDEL', key, acct) end
    end
  end
  for acct, n in pairs(want) do
    if have[acct] == nil then
      changed[acct] = true
      rcall('HSET', key, acct, n)
    end
  end
end
-- The fairness groups' counts, for every account that runs (or ran, by the old counts) tasks of a
-- kind; a group whose count changed is placed again.
local groupChanges = {}
for _, kind in ipairs(KINDS) do
  local accounts = {}
  local flat = rcall('HGETALL', runningKindKey(kind))
  for i = 1, #flat, 2 do accounts[flat[i]] = true end
  for acct in pairs(perGroup[kind]) do accounts[acct] = true end
  for acct in pairs(accounts) do
    local want = perGroup[kind][acct] or {}
    local gflat = rcall('HGETALL', groupRunningKey(kind, acct))
    local have = {}
    for i = 1, #gflat, 2 do have[gflat[i]] = tonumber(gflat[i + 1]) end
    for g, n in pairs(have) do
      if want[g] ~= n then
        if want[g] then rcall('HSET', groupRunningKey(kind, acct), g, want[g]) else rcall('HDEL', groupRunningKey(kind, acct), g) end
        groupChanges[#groupChanges + 1] = { kind, acct, g }
      end
    end
    for g, n in pairs(want) do
      if have[g] == nil then
        rcall('HSET', groupRunningKey(kind, acct), g, n)
        groupChanges[#groupChanges + 1] = { kind, acct, g }
      end
    end
  end
end
for _, c in ipairs(groupChanges) do placeGroup(c[1], c[2], c[3]) end
rewrite(RUNNING, counts)
for _, kind in ipairs(KINDS) do rewrite(runningKindKey(kind), perKind[kind]) end
runnings = {}
local n = 0
for acct in pairs(changed) do
  placeAll(acct)
  n = n + 1
end
releaseAll(true)
return reply(n)
