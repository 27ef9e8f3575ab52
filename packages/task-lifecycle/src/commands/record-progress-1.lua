--[[
  Stores a running task's progress (already rounded) and announces the change.

  Input:
    KEYS[1] the task's progress
    ARGV[1] progress, ARGV[2] ttl in seconds, ARGV[3] channel, ARGV[4] message
  Output: 1
]]
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
