--[[
  The tasks of a kind counted as running (released, active, delayed).

  Input: state.lua's, then ARGV[4] kind
  Output: their public ids
]]
--- @include "includes/state"

return rcall('ZRANGE', inserviceKey(ARGV[4]), 0, -1)
