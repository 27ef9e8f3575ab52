--[[
  Counts a login attempt for (e-mail, address) and asks for the e-mail's turn. One attempt at a
  time per (e-mail, address), so parallel attempts cannot exceed the limit. Times are the Redis
  server's, in ms; the keys share the e-mail's hash tag.

  Input:
    KEYS[1] failures of (e-mail, address), KEYS[2] attempt in flight for (e-mail, address),
    KEYS[3] failing addresses of the e-mail (zset: address -> last failure), KEYS[4] turn (the
    holder's token), KEYS[5] attempts waiting with priority (zset: token -> expiry)
    ARGV[1] failure limit, ARGV[2] token, ARGV[3] hold ms (turn, in-flight marker), ARGV[4] ms a
    priority entry lasts, ARGV[5] the window in ms
  Output: {0, retry after s} (refused) or {1, failing addresses, has turn, failed before}
]]
local rcall = redis.call
local failures = tonumber(rcall('GET', KEYS[1]) or '0')
if failures >= tonumber(ARGV[1]) then return { 0, math.max(1, rcall('TTL', KEYS[1])) } end
if not rcall('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then return { 0, 1 } end
local t = rcall('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
rcall('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - tonumber(ARGV[5]))
local failing = rcall('ZCARD', KEYS[3])
local failed_before = 0
if failures > 0 then failed_before = 1 end
rcall('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
if failed_before == 0 or rcall('ZCARD', KEYS[5]) == 0 then
  if rcall('SET', KEYS[4], ARGV[2], 'NX', 'PX', ARGV[3]) then return { 1, failing, 1, failed_before } end
end
if failed_before == 0 then
  rcall('ZADD', KEYS[5], now + tonumber(ARGV[4]), ARGV[2])
  rcall('PEXPIRE', KEYS[5], ARGV[4])
end
return { 1, failing, 0, failed_before }
