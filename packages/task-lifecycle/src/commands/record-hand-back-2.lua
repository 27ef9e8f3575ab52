--[[
  Records a committed hand-back, the one move back (processing -> queued): only from 10, so a
  terminal marker (a cancel racing it) is never undone; the running value of the progress goes too.

  Input:
    KEYS[1] the task's status marker, KEYS[2] its progress
    ARGV[1] ttl in seconds, ARGV[2] channel, ARGV[3] message
  Output: 1 when the marker moved back, else 0
]]
if redis.call('GET', KEYS[1]) ~= '10' then return 0 end
redis.call('SET', KEYS[1], '0', 'EX', ARGV[1])
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
