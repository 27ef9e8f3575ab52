--[[
  The prediction a task's run uses: the one recorded already (a run before this one created it
  and did not see it end), else the candidate, recorded now.

  Input:
    KEYS[1] the task's prediction hash
    ARGV[1] candidate prediction id, ARGV[2] ttl in seconds, ARGV[3] the task's kind
  Output: {current prediction id, 1 when the candidate was recorded now, else 0}
]]
local fresh = redis.call('HSETNX', KEYS[1], 'current', ARGV[1])
if fresh == 1 then redis.call('HSET', KEYS[1], 'kind', ARGV[3]) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return { redis.call('HGET', KEYS[1], 'current'), fresh }
