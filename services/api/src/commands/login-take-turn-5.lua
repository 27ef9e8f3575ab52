--[[
  Tries to take the e-mail's turn. An attempt from an address that has failed lets every waiting
  one from an address that has not go first.

  Input: KEYS as login-begin's; ARGV[1] token, ARGV[2] hold ms, ARGV[3] failed before ('1'/'0')
  Output: 1 when the turn is taken, else 0
]]
local rcall = redis.call
if ARGV[3] == '1' then
  local t = rcall('TIME')
  rcall('ZREMRANGEBYSCORE', KEYS[5], '-inf', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
  if rcall('ZCARD', KEYS[5]) > 0 then return 0 end
end
if not rcall('SET', KEYS[4], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end
rcall('ZREM', KEYS[5], ARGV[1])
return 1
