--[[
  Records a committed status change of a task in its status marker, and announces it. Statuses
  only move forward (0 -> 10 -> 20/30/40), so the marker keeps the highest status it was given:
  late or reordered writers can never move it back. The event is published by the same script
  that moves the marker, so whoever misses the event (subscribed too late) is sure to see the new
  marker when it reads afterwards. A non-terminal status the marker already has is announced
  again: a reader may have seeded it (from a row it read just after the commit) without announcing
  it, and event streams must hear it; they drop an event equal to the last one they sent.

  Input:
    KEYS[1] the task's status marker
    ARGV[1] status, ARGV[2] ttl in seconds, ARGV[3] channel, ARGV[4] message,
    ARGV[5] '1' to announce a status the marker already has
  Output: 1 when the marker moved, else 0
]]
local current = redis.call('GET', KEYS[1])
if current and tonumber(current) > tonumber(ARGV[1]) then return 0 end
if current and tonumber(current) == tonumber(ARGV[1]) then
  if ARGV[5] == '1' then redis.call('PUBLISH', ARGV[3], ARGV[4]) end
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
