-- One node's call on a fleet's budget (sidejob::fleet): a join, a renewal,
-- a resize or a leave.
--
-- KEYS (one hash tag, so one Redis Cluster slot); every key expires two
-- leases after the last call, so a budget nobody renews disappears:
--   1 meta    hash: the budget's settings (capacity, lease, refresh), learn_until
--             and last (ms, server clock: the end of a learning lease, the
--             last call)
--   2 grants  hash: node -> slots the ledger gives it
--   3 wants   hash: node -> slots it wants
--   4 expiry  hash: node -> when its lease ends (ms, server clock)
--   5 learned hash: node -> what it held when it first renewed in a
--             learning lease
--   6 owners  hash: node -> the token of the process that holds the name
-- ARGV:
--   1 node, 2 token (random, one per Fleet),
--   3 capacity, 4 lease (ms), 5 refresh (ms), 6 want,
--   7 holding: the most the node may have in flight until it applies this
--     answer (its local capacity or its usage, whichever is more),
--   8 mode: "join" (the capacity must be the budget's), "renew" (the
--     budget's capacity stands), "resize" (the capacity becomes ARGV 3) or
--     "leave"; the lease and refresh must always be the budget's,
--   9 seen: the expiry this script answered the node's last applied call
--     with, or -1 if unknown (its first call, or a call since got no answer),
--  10 since: ms on the node's clock since it sent that call, or -1.
-- Returns {status, grant, target, nodes, learning, capacity, expiry, share}:
-- status "ok" or "left"; "late" (the lease the call renews ran out before
-- it got here: nothing changed); "capacity" (a join that disagrees with the
-- budget's capacity), "lease" or "refresh" (a call with another), the
-- budget's setting in the 6th field; "owner" (another process
-- holds the node's name: the 7th field is how long its lease has left, ms).
local meta, grants, wants, expiry, learned, owners =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local node, token = ARGV[1], ARGV[2]
local capacity = tonumber(ARGV[3])
local lease = tonumber(ARGV[4])
local refresh = tonumber(ARGV[5])
local want = tonumber(ARGV[6])
local holding = tonumber(ARGV[7])
local mode = ARGV[8]
local seen = tonumber(ARGV[9])
local since = tonumber(ARGV[10])

-- The server's clock: no node's clock decides an expiry.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

-- A call that reaches the script after the lease it renews ran out (it
-- waited out a partition, or in Redis's queue): its node has stopped using
-- that lease by now, and what it reported holding is stale. It changes
-- nothing (its node gave up on it, or counts it as failed).
if mode ~= 'leave' and seen >= 0 and seen <= now then
  return {'late', 0, 0, 0, 0, 0, 0, 0}
end

local settings = redis.call('HMGET', meta, 'capacity', 'lease', 'learn_until', 'last', 'refresh')
local stale = false
if not settings[1] then
  if mode == 'leave' then
    -- A leave never creates a budget (its capacity says nothing).
    for _, key in ipairs({grants, wants, expiry, owners}) do
      redis.call('HDEL', key, node)
    end
    return {'left', 0, 0, 0, 0, 0, 0, 0}
  end
  -- A budget never seen, one that expired, or a Redis restarted empty or
  -- that evicted it: whatever is left of the ledger is not to be trusted.
  redis.call('DEL', grants, wants, expiry, learned, owners)
  redis.call('HSET', meta, 'capacity', capacity, 'lease', lease, 'refresh', refresh,
    'learn_until', 0, 'last', now)
  stale = true
else
  local known, budget_lease = tonumber(settings[1]), tonumber(settings[2])
  if mode == 'join' and known ~= capacity then
    return {'capacity', 0, 0, 0, 0, known, 0, 0}
  end
  if mode ~= 'leave' and budget_lease ~= lease then
    -- A lease unlike the budget's would let the node outlive its grant.
    return {'lease', 0, 0, 0, 0, budget_lease, 0, 0}
  end
  local budget_refresh = tonumber(settings[5])
  if mode ~= 'leave' and budget_refresh ~= refresh then
    -- The ledger tells a gap of calls by the budget's refresh.
    return {'refresh', 0, 0, 0, 0, budget_refresh, 0, 0}
  end
  lease = budget_lease
  if mode == 'resize' then
    redis.call('HSET', meta, 'capacity', capacity)
  else
    capacity = known
  end
  -- May the ledger be stale? Its clock went back; no call for a few
  -- refreshes while it holds leases (a restore from a snapshot, a replica
  -- promoted late, a clock that jumped ahead); or this node's record is
  -- not the one its last answer came from (writes lost), or is as old as
  -- its own clock says it should not be (the server's clock jumped).
  local last = tonumber(settings[4])
  if now < last then
    stale = true
  elseif now - last > 3 * refresh and redis.call('HLEN', expiry) > 0 then
    stale = true
  end
  if seen >= 0 then
    local recorded = tonumber(redis.call('HGET', expiry, node))
    -- Calls reach the script a little after they are sent: a refresh at
    -- most for a renewal, 500 ms for a join's or a resize. A step below a
    -- tenth of the lease is within the nodes' margin.
    local tolerance = math.max(refresh, 500, lease / 10)
    if recorded ~= seen then
      stale = true
    elseif since >= 0 and math.abs((now - (recorded - lease)) - since) > tolerance then
      stale = true
    end
  end
  redis.call('HSET', meta, 'last', now)
end

-- A stale ledger starts a learning lease (Doorman's): for one lease, nodes
-- may hold grants the ledger does not show, so only what each reports
-- holding is granted, and no lease is purged: every live node renews once
-- in it.
local learn_until = tonumber(redis.call('HGET', meta, 'learn_until'))
if stale and now >= learn_until then
  learn_until = now + lease
  redis.call('HSET', meta, 'learn_until', learn_until)
  redis.call('DEL', grants, learned)
end
local learning = now < learn_until

-- Forget the nodes whose lease ran out: their slots are free again.
if not learning then
  local leases = redis.call('HGETALL', expiry)
  for i = 1, #leases, 2 do
    if tonumber(leases[i + 1]) <= now then
      for _, key in ipairs({grants, wants, expiry, owners}) do
        redis.call('HDEL', key, leases[i])
      end
    end
  end
end

-- One process per name: a live lease held by another token is not ours.
-- While learning, no lease is known to have ended: the name is free once
-- the learning lease is over, if its holder did not renew.
local owner = redis.call('HGET', owners, node)
if owner and owner ~= token then
  local ends = tonumber(redis.call('HGET', expiry, node))
  if ends then
    local wait = math.max(ends - now, 0)
    if learning then
      wait = math.max(wait, learn_until - now)
    end
    return {'owner', 0, 0, 0, 0, capacity, wait, 0}
  end
end

local ttl = 2 * lease
local function keep()
  for _, key in ipairs({meta, grants, wants, expiry, learned, owners}) do
    redis.call('PEXPIRE', key, ttl)
  end
end

if mode == 'leave' then
  for _, key in ipairs({grants, wants, expiry, owners}) do
    redis.call('HDEL', key, node)
  end
  keep()
  return {'left', 0, 0, 0, 0, capacity, 0, 0}
end

redis.call('HSET', wants, node, want)
redis.call('HSET', expiry, node, now + lease)
redis.call('HSET', owners, node, token)

-- Fair share (Doorman's FairShare, by water-filling): in order of want, a
-- node wanting at most an equal share of what is left gets its want; the
-- first that wants more, and all after it, get an equal share of the rest.
-- What the equal shares leave over (fewer slots than capped nodes) goes one
-- slot each to capped nodes in turns that move every lease, so every node
-- gets its turn and no slot idles.
local all = redis.call('HGETALL', wants)
local entries = {}
for i = 1, #all, 2 do
  entries[#entries + 1] = {all[i], tonumber(all[i + 1])}
end
table.sort(entries, function(a, b) return a[2] < b[2] end)
local left = capacity
local level, first_capped = nil, nil
for i = 1, #entries do
  local equal = math.floor(left / (#entries - i + 1))
  if entries[i][2] <= equal then
    left = left - entries[i][2]
  else
    level, first_capped = equal, i
    break
  end
end
local target = want
if level ~= nil and want > level then
  target = level
  local extra = left - level * (#entries - first_capped + 1)
  if extra > 0 then
    -- The capped nodes in a fixed order (a hash of the name), and a window
    -- of `extra` of them that moves on by `extra` every lease: with k
    -- capped nodes, each has a turn within ceil(k / extra) leases.
    local capped = {}
    for i = first_capped, #entries do
      capped[#capped + 1] = redis.sha1hex(entries[i][1]) .. entries[i][1]
    end
    table.sort(capped)
    local mine = redis.sha1hex(node) .. node
    local rank = 0
    for i = 1, #capped do
      if capped[i] == mine then
        rank = i - 1
        break
      end
    end
    local k = #capped
    local offset = ((math.floor(now / lease) % k) * extra) % k
    if (rank - offset) % k < extra then
      target = level + 1
    end
  end
end
local share = target

-- The ledger: a grant grows only into what the others leave free, and
-- never falls below what the node may still hold (it gives back what it
-- frees, one renewal later). So the grants sum to at most the capacity,
-- but after a resize down, while the nodes still hold more than the new
-- capacity: then they record what the nodes hold, and none grows.
local others = 0
local ledger = redis.call('HGETALL', grants)
for i = 1, #ledger, 2 do
  if ledger[i] ~= node then
    others = others + tonumber(ledger[i + 1])
  end
end
local grant
if learning then
  -- Learning: the nodes that have not renewed since the ledger was lost
  -- may hold what it does not show, at most the capacity less what the
  -- others held when they first renewed (all grants summed to at most the
  -- capacity then). So the known nodes share what they held at first: a
  -- node grows only into slots another known node gave back.
  redis.call('HSETNX', learned, node, holding)
  local known = 0
  for _, held in ipairs(redis.call('HVALS', learned)) do
    known = known + tonumber(held)
  end
  grant = math.max(holding, math.min(target, math.max(known - others, 0)))
else
  redis.call('DEL', learned)
  grant = math.max(holding, math.min(target, math.max(capacity - others, 0)))
end
redis.call('HSET', grants, node, grant)
keep()
return {'ok', grant, math.min(target, grant), #entries, learning and 1 or 0, capacity,
  now + lease, share}
