--[[
  Records a webhook of the task's current prediction and wakes its worker. An update counts only
  for the task's current prediction (a late webhook of an earlier one, or of one whose task ended,
  changes nothing), and a terminal status sticks (the model server sends its updates
  concurrently: a throttled log update may arrive after the final one).

  Input:
    KEYS[1] the task's prediction hash
    ARGV[1] prediction id, ARGV[2] status ('' none), ARGV[3] progress ('' none), ARGV[4] the
    terminal payload ('' none), ARGV[5] the store key of a large body ('' none), ARGV[6] ttl in
    seconds, ARGV[7] channel, ARGV[8] message
  Output: 1 when recorded, 0 when it was not the current prediction
]]
local rcall = redis.call
if rcall('HGET', KEYS[1], 'current') ~= ARGV[1] then return 0 end
local status = rcall('HGET', KEYS[1], 'status')
local final = status == 'succeeded' or status == 'failed' or status == 'canceled'
if ARGV[2] ~= '' and not final then rcall('HSET', KEYS[1], 'status', ARGV[2]) end
if ARGV[3] ~= '' and not final then rcall('HSET', KEYS[1], 'progress', ARGV[3]) end
if ARGV[4] ~= '' and not final then rcall('HSET', KEYS[1], 'payload', ARGV[4]) end
if ARGV[5] ~= '' then
  local refs = rcall('HGET', KEYS[1], 'refs')
  rcall('HSET', KEYS[1], 'refs', refs and (refs .. ' ' .. ARGV[5]) or ARGV[5])
end
rcall('EXPIRE', KEYS[1], ARGV[6])
rcall('PUBLISH', ARGV[7], ARGV[8])
return 1
