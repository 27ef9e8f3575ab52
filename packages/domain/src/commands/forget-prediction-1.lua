--[[
  Forgets the task's prediction, reading its refs in the same step, so a large body the API
  stores meanwhile is either among the refs returned or ignored (its update finds no current
  prediction).

  Input: KEYS[1] the task's prediction hash
  Output: the space-separated file-store keys of the large bodies kept for it, or nil
]]
local refs = redis.call('HGET', KEYS[1], 'refs')
redis.call('DEL', KEYS[1])
return refs
