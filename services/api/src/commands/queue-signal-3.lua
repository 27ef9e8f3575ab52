--[[
  One task kind's BullMQ queue as an autoscaler sees it: how many jobs wait, and how old the
  oldest is, by Redis's clock, so every API replica reports the same numbers. The job hash shares
  the queue's hash tag, so the script stays in one cluster slot. BullMQ pushes new jobs on the left
  of `wait` and workers take them from the right.

  Input:
    KEYS[1] the queue's `wait` list, KEYS[2] its `prioritized` set, KEYS[3] its `paused` list
    ARGV[1] the queue's key prefix (job hashes are <prefix><job id>)
  Output: {waiting jobs, age of the oldest in ms (0 when none)}
]]
local rcall = redis.call
local depth = rcall('LLEN', KEYS[1]) + rcall('ZCARD', KEYS[2]) + rcall('LLEN', KEYS[3])
local oldest = rcall('LINDEX', KEYS[1], -1)
local ageMs = 0
if oldest then
  local ts = tonumber(rcall('HGET', ARGV[1] .. oldest, 'timestamp'))
  if ts then
    local now = rcall('TIME')
    ageMs = math.max(0, tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) - ts)
  end
end
return { depth, ageMs }
