--[[
  The fair scheduler's state (docs/fair-scheduling.md), shared by every scheduler command.

  Every key starts with the prefix, whose hash tag (`{sched}`) puts them all in one Redis Cluster
  slot: the cap is per account across every kind, so one script must see every kind's state.

  A task the scheduler knows is one field of the records hash (KEYS[1]),
  `state|kind|account|order|release|created|effective|deadline|group`:
    p  pending: in its account's line of its kind (`line:<kind>:<account>`, scored by order)
    r  released: its job (id from the release number) is in its kind's BullMQ queue, or its run
       has started and the worker has not reported that yet (starts are reported with the next call)
    a  active: a worker runs it (reported)
    d  delayed: waiting to be retried after a transient failure (`delayed`, scored by when)
  r, a and d are "in service": they count against the account's cap (`running`) and its share of
  the kind (`running:<kind>`), and are listed in `inservice:<kind>`; r are also in `ready:<kind>`.
  order is the task's database id (creation order), created its creation time in Unix ms,
  effective its place within its account and kind (created minus its priority, in ms), deadline
  when it expires if still pending (Unix ms, 0: never), group its fairness key ('*': none; keys are
  of A-Z a-z 0-9 . _ : @ -). Records of the previous release (the first six fields) read as
  effective = created, no deadline, no key, and a task without any of the three is still written
  in six fields. This file is the only place that reads or writes the record format (decode, encode).

  Within an account and kind, pending tasks wait in one line per group, `kline:<kind>:<account>:<group>`,
  scored by effective (ties: the member, the zero-padded order, then the id), and the groups with
  pending tasks in `groups:<kind>:<account>`, scored by (the group's in-service tasks of the kind,
  `grunning:<kind>:<account>`, then its head's effective), so the first group is the one whose turn
  it is. `line:<kind>:<account>` (by order) holds all of them too: the account's place among
  accounts stays by its oldest task (a priority never changes the share between accounts).

  Which account goes next in a kind is kept ready to read: `eligible:<kind>` holds every account
  with a pending task of the kind and under its cap, scored by (its in-service tasks of the kind,
  then the order of its oldest pending task), so its first member is the account the rule picks.
  Accounts with pending tasks at their cap wait in `held:<kind>`. Caps are in `caps` (the default
  comes with every call).

  Input, common to every command:
    KEYS[1] the records hash (`<prefix>tasks`)
    ARGV[1] prefix, ARGV[2] default cap, ARGV[3] every kind, comma-separated
]]
local rcall = redis.call
local TASKS = KEYS[1]
local P = ARGV[1]
-- The default cap in force is the one the workers' upkeep last stored (every call of a replica
-- whose own ACCOUNT_MAX_RUNNING differs would otherwise place accounts by another cap); ARGV[2]
-- until one is stored.
local DEFAULT_KEY = P .. 'defaultcap'
local DEFAULT_CAP = tonumber(rcall('GET', DEFAULT_KEY)) or tonumber(ARGV[2])
local KINDS = {}
for k in string.gmatch(ARGV[3], '[^,]+') do KINDS[#KINDS + 1] = k end
local RUNNING = P .. 'running'
local CAPS = P .. 'caps'
local DELAYED = P .. 'delayed'
local WORKERS = P .. 'workers'
local WORKER_TTL_MS = 10000
-- The eligible score is (in-service tasks of the kind) * 2^39 + order: exact in a double while
-- the count stays under 2^14 (caps are at most 10,000) and task ids under 2^39.
local SHIFT = 549755813888
local MAX_ORDER = 549755813887

local function lineKey(kind, acct) return P .. 'line:' .. kind .. ':' .. acct end
local function groupLineKey(kind, acct, g) return P .. 'kline:' .. kind .. ':' .. acct .. ':' .. g end
local function groupsKey(kind, acct) return P .. 'groups:' .. kind .. ':' .. acct end
local function groupRunningKey(kind, acct) return P .. 'grunning:' .. kind .. ':' .. acct end
-- Effective times are packed into group scores as ms since 2025-01-01, under MAX_ORDER (until 2042).
local EFFECTIVE_EPOCH = 1735689600000
local function eligibleKey(kind) return P .. 'eligible:' .. kind end
local function heldKey(kind) return P .. 'held:' .. kind end
local function runningKindKey(kind) return P .. 'running:' .. kind end
local function readyKey(kind) return P .. 'ready:' .. kind end
local function inserviceKey(kind) return P .. 'inservice:' .. kind end
local function slotsKey(kind) return P .. 'slots:' .. kind end
local function num(n) return string.format('%.0f', n) end

local t = rcall('TIME')
local NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local STATE_NAMES = { p = 'pending', r = 'ready', a = 'active', d = 'delayed' }

local function decode(v)
  if not v then return nil end
  local s, k, a, o, n, c, e, d, g = string.match(v, '^([prad])|([^|]+)|([^|]+)|(%d+)|(%d+)|(%d+)|(%-?%d+)|(%d+)|([^|]+)$')
  if not s then
    s, k, a, o, n, c = string.match(v, '^([prad])|([^|]+)|([^|]+)|(%d+)|(%d+)|(%d+)$')
    if not s then return nil end
    e, d, g = c, '0', '*'
  end
  return {
    state = s, kind = k, acct = a, order = math.min(tonumber(o), MAX_ORDER), n = tonumber(n), created = tonumber(c),
    effective = tonumber(e), deadline = tonumber(d), group = g,
  }
end
local function encode(r)
  local base = r.state .. '|' .. r.kind .. '|' .. r.acct .. '|' .. num(r.order) .. '|' .. num(r.n) .. '|' .. num(r.created)
  -- A task without priority, deadline or key keeps the previous release's six fields, which that
  -- release's scripts read (a rolling upgrade: docs/operations.md, "Upgrade notes").
  if r.effective == r.created and r.deadline == 0 and r.group == '*' then return base end
  return base .. '|' .. num(r.effective) .. '|' .. num(r.deadline) .. '|' .. r.group
end
-- A task's member in its group's line: ties of effective go by creation order, then id.
local function groupMember(id, r) return string.format('%015.0f', r.order) .. ':' .. id end
local function memberTask(member) return string.match(member, '^%d+:(.+)$') end
local function isKind(kind)
  for _, k in ipairs(KINDS) do if k == kind then return true end end
  return false
end

-- Read once per call (every write of a count goes through move, which keeps them current).
local caps, runnings = {}, {}
local function capOf(acct)
  if caps[acct] == nil then caps[acct] = tonumber(rcall('HGET', CAPS, acct)) or DEFAULT_CAP end
  return caps[acct]
end
local function runningOf(acct)
  if runnings[acct] == nil then runnings[acct] = tonumber(rcall('HGET', RUNNING, acct)) or 0 end
  return runnings[acct]
end
-- Adds d to a count (a field at zero or below goes) and returns the count.
local function hincr(key, field, d)
  local n = rcall('HINCRBY', key, field, d)
  if n > 0 then return n end
  rcall('HDEL', key, field)
  return 0
end
local function counted(s) return s == 'r' or s == 'a' or s == 'd' end
