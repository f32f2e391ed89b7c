-- One node's renewal of its lease on a fleet's budget (sidejob::fleet).
--
-- KEYS (one hash tag, so one Redis Cluster slot):
--   1 meta    hash: capacity, learn_until (ms, server clock)
--   2 grants  hash: node -> slots the ledger gives it
--   3 wants   hash: node -> slots it wants
--   4 expiry  hash: node -> when its lease ends (ms, server clock)
--   5 learned hash: node -> what it held when it first renewed in a
--             learning lease
-- ARGV:
--   1 node, 2 capacity, 3 lease (ms), 4 want,
--   5 holding: the most the node may have in flight until it applies this
--     answer (its local capacity or its usage, whichever is more),
--   6 mode: "join" (ARGV 2 must be the budget's capacity), "renew" (the
--     budget's capacity stands, whatever ARGV 2 says), "resize" (the
--     capacity becomes ARGV 2) or "leave".
-- Returns {status, grant, target, nodes, learning, capacity}: status "ok",
-- "left", or "capacity" (joining a budget that has another capacity).
local meta, grants, wants, expiry, learned = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local node = ARGV[1]
local capacity = tonumber(ARGV[2])
local lease = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
local holding = tonumber(ARGV[5])
local mode = ARGV[6]

-- The server's clock: no node's clock decides an expiry.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local known = redis.call('HGET', meta, 'capacity')
if not known then
  -- A budget never seen, or Redis restarted empty: for one lease, nodes
  -- may still hold grants the ledger lost, so only what each reports
  -- holding is granted (Doorman's learning mode).
  redis.call('HSET', meta, 'capacity', capacity, 'learn_until', now + lease)
elseif mode == 'resize' then
  redis.call('HSET', meta, 'capacity', capacity)
elseif mode == 'join' and tonumber(known) ~= capacity then
  return {'capacity', 0, 0, 0, 0, tonumber(known)}
else
  capacity = tonumber(known)
end
local learn_until = tonumber(redis.call('HGET', meta, 'learn_until'))

-- Forget the nodes whose lease ran out: their slots are free again.
local leases = redis.call('HGETALL', expiry)
for i = 1, #leases, 2 do
  if tonumber(leases[i + 1]) <= now then
    redis.call('HDEL', grants, leases[i])
    redis.call('HDEL', wants, leases[i])
    redis.call('HDEL', expiry, leases[i])
  end
end

if mode == 'leave' then
  redis.call('HDEL', grants, node)
  redis.call('HDEL', wants, node)
  redis.call('HDEL', expiry, node)
  return {'left', 0, 0, 0, 0, capacity}
end

redis.call('HSET', wants, node, want)
redis.call('HSET', expiry, node, now + lease)

-- Fair share (Doorman's FairShare, by water-filling): in order of want, a
-- node wanting at most an equal share of what is left gets its want; the
-- first that wants more, and all after it, get an equal share of the rest.
local all = redis.call('HGETALL', wants)
local sorted = {}
for i = 2, #all, 2 do
  sorted[#sorted + 1] = tonumber(all[i])
end
table.sort(sorted)
local left = capacity
local level = nil
for i = 1, #sorted do
  local equal = math.floor(left / (#sorted - i + 1))
  if sorted[i] <= equal then
    left = left - sorted[i]
  else
    level = equal
    break
  end
end
local target = want
if level ~= nil and want > level then
  target = level
end

-- The ledger: a grant never exceeds what the others leave free, and never
-- falls below what the node may still hold (it gives back what it frees,
-- one renewal later).
local others = 0
local ledger = redis.call('HGETALL', grants)
for i = 1, #ledger, 2 do
  if ledger[i] ~= node then
    others = others + tonumber(ledger[i + 1])
  end
end
local available = math.max(capacity - others, 0)
local learning = 0
local grant
if now < learn_until then
  -- Learning: the nodes that have not renewed since the ledger was lost
  -- may hold what it does not show, at most the capacity less what the
  -- others held when they first renewed (all grants summed to at most the
  -- capacity then). So the known nodes share what they held at first: a
  -- node grows only into slots another known node gave back.
  learning = 1
  redis.call('HSETNX', learned, node, holding)
  local known = 0
  for _, held in ipairs(redis.call('HVALS', learned)) do
    known = known + tonumber(held)
  end
  grant = math.min(math.max(holding, target), math.max(known - others, 0))
  target = math.min(target, grant)
else
  redis.call('DEL', learned)
  grant = math.min(math.max(holding, target), available)
end
redis.call('HSET', grants, node, grant)
return {'ok', grant, math.min(target, grant), #sorted, learning, capacity}
