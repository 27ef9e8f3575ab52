--[[
  Ends a login attempt: a failure counts for (e-mail, address) and for the e-mail's failing
  addresses; a success clears (e-mail, address); the attempt's markers go.

  Input: KEYS as login-begin's; ARGV[1] outcome (failed | succeeded | abandoned), ARGV[2] address,
    ARGV[3] token, ARGV[4] failing addresses kept, ARGV[5] the window in seconds
  Output: 1
]]
local rcall = redis.call
if ARGV[1] == 'failed' then
  rcall('INCR', KEYS[1])
  rcall('EXPIRE', KEYS[1], ARGV[5], 'NX')
  local t = rcall('TIME')
  rcall('ZADD', KEYS[3], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), ARGV[2])
  rcall('ZREMRANGEBYRANK', KEYS[3], 0, -tonumber(ARGV[4]) - 1)
  rcall('EXPIRE', KEYS[3], ARGV[5])
elseif ARGV[1] == 'succeeded' then
  rcall('DEL', KEYS[1])
  rcall('ZREM', KEYS[3], ARGV[2])
end
for _, k in ipairs({ KEYS[2], KEYS[4] }) do
  if rcall('GET', k) == ARGV[3] then rcall('DEL', k) end
end
rcall('ZREM', KEYS[5], ARGV[3])
return 1
