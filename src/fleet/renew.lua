-- One node's call on a fleet's budget (sidejob::fleet): a join, a renewal,
-- a resize or a leave. Its work is O(log n) in the fleet's size n (and
-- O(log capacity)): no call reads every node's record.
--
-- KEYS (one hash tag, so one Redis Cluster slot); every key expires two
-- leases after the last call, so a budget nobody renews disappears:
--   1 meta    hash: the budget's settings (capacity, lease, refresh),
--             learn_until and last (ms, server clock: the end of a learning
--             lease, the last call), layout (2), and the running totals:
--             granted (the grants' sum), learned_sum (the learned values'
--             sum), width (the levels tree's, a power of two above the
--             capacity)
--   2 grants  hash: node -> slots the ledger gives it
--   3 wants   hash: node -> slots it wants
--   4 expiry  sorted set: node by when its lease ends (ms, server clock)
--   5 learned hash: node -> what it held when it first renewed in a
--             learning lease
--   6 owners  hash: node -> the token of the process that holds the name
--   7 levels  hash: a Fenwick tree over the wants (each capped at the
--             width): c<i> and s<i>, the count and sum of the wants in
--             i's range, to find the water level in O(log width)
--   8 order   sorted set: every node (sha1(name)..name) by its capped want:
--             a node's rank among the nodes above the water level
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
-- A ledger whose keys hold what this script never writes (a key of another
-- type, a value that is no count) is an error reply, `CORRUPT ...`, and is
-- forgotten; one whose records disagree with each other (a key deleted, a
-- node of an older layout at work) is forgotten too. Either is learned
-- again, as a lost ledger is.
local meta, grants, wants, expiry, learned, owners, levels, order =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
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

-- A ledger that holds what this script never writes: the call fails
-- naming what it found, and the whole budget is forgotten (settings
-- included), so the next call starts it afresh, learning: bad data costs
-- one failed call per node and a learning lease, never a grant past the
-- budget nor a budget that fails for good.
local function corrupt(what)
  redis.call('UNLINK', meta, grants, wants, expiry, learned, owners, levels, order)
  error({err = 'CORRUPT sidejob fleet ledger, forgotten: ' .. what})
end

-- A count read from the ledger: a whole number, not below zero.
local function count(value, what)
  local n = tonumber(value)
  if n == nil or n ~= n or n < 0 or n == math.huge or n ~= math.floor(n) then
    corrupt(what .. ' is ' .. tostring(value) .. ', not a count')
  end
  return n
end

-- A whole number as Redis reads one back (Lua would write 1e+15).
local function whole(n)
  return string.format('%d', n)
end

-- The tree's width for a capacity: a power of two above it, so a want at
-- or above the capacity is one value (no water level reaches it).
local function width_for(slots)
  local w = 1
  while w <= slots do
    w = w * 2
  end
  return w
end

local settings = redis.pcall('HMGET', meta, 'capacity', 'lease', 'learn_until', 'last',
  'refresh', 'granted', 'learned_sum', 'width', 'kept', 'version', 'water')
if settings.err then
  corrupt('`' .. meta .. '` is a ' .. redis.call('TYPE', meta)['ok'] .. ', not a hash')
end

-- Every key is of its kind or absent, checked when the keys' time to live
-- is renewed (a quarter lease at most apart) and on a budget's first call;
-- in between, a key of another kind fails the call that touches it
-- (WRONGTYPE). A ledger without settings is forgotten whatever it holds;
-- the older layout kept `expiry` in a hash.
local kept = tonumber(settings[9])
local audit = not settings[1] or not kept or now - kept >= (tonumber(settings[2]) or 0) / 4
local older = false
-- Whether this call must renew every key's time to live (see `keep`).
local renew_ttl = false
-- Whether this call moved the tree or the capacity: the water level
-- cached in `meta` (field `water`, with the `version` it was found at)
-- is found again.
local version = tonumber(settings[10]) or 0
local water = settings[11]
local changed = false
if audit then
  local kinds = {grants = 'hash', wants = 'hash', expiry = 'zset', learned = 'hash',
    owners = 'hash', levels = 'hash', order = 'zset'}
  local names = {grants = grants, wants = wants, expiry = expiry, learned = learned,
    owners = owners, levels = levels, order = order}
  for name, kind in pairs(kinds) do
    local found = redis.call('TYPE', names[name])['ok']
    if name == 'expiry' and found == 'hash' then
      older = true
    elseif settings[1] and found ~= 'none' and found ~= kind then
      corrupt('`' .. names[name] .. '` is a ' .. found .. ', not a ' .. kind)
    end
  end
end

local granted, learned_sum, width, learn_until
local stale = false

-- Forgets every node: a ledger that cannot be trusted. Its settings stay.
local function forget_all()
  changed = true
  redis.call('UNLINK', grants, wants, expiry, learned, owners, levels, order)
  granted, learned_sum = 0, 0
  stale = true
end

if not settings[1] then
  if mode == 'leave' then
    -- A leave never creates a budget (its capacity says nothing); what is
    -- left of a ledger without settings is forgotten by the next join.
    return {'left', 0, 0, 0, 0, 0, 0, 0}
  end
  -- A budget never seen, one that expired, or a Redis restarted empty or
  -- that evicted it: whatever is left of the ledger is not to be trusted.
  width, learn_until = width_for(capacity), 0
  forget_all()
  redis.call('HSET', meta, 'capacity', capacity, 'lease', lease, 'refresh', refresh,
    'learn_until', 0, 'last', now, 'layout', 2, 'width', width)
else
  local known = count(settings[1], 'meta.capacity')
  local budget_lease = count(settings[2], 'meta.lease')
  learn_until = count(settings[3] or 0, 'meta.learn_until')
  local last = count(settings[4] or now, 'meta.last')
  local budget_refresh = count(settings[5], 'meta.refresh')
  if mode == 'join' and known ~= capacity then
    return {'capacity', 0, 0, 0, 0, known, 0, 0}
  end
  if mode ~= 'leave' and budget_lease ~= lease then
    -- A lease unlike the budget's would let the node outlive its grant.
    return {'lease', 0, 0, 0, 0, budget_lease, 0, 0}
  end
  if mode ~= 'leave' and budget_refresh ~= refresh then
    -- The ledger tells a gap of calls by the budget's refresh.
    return {'refresh', 0, 0, 0, 0, budget_refresh, 0, 0}
  end
  lease = budget_lease
  if mode ~= 'resize' then
    capacity = known
  end
  granted = count(settings[6] or 0, 'meta.granted')
  learned_sum = count(settings[7] or 0, 'meta.learned_sum')
  width = count(settings[8] or width_for(known), 'meta.width')
  if older or width <= known or width ~= width_for(width - 1) then
    -- A ledger of an older layout (its nodes cannot keep this one's
    -- totals), or a width that is no power of two: learned again.
    width = width_for(math.max(capacity, width))
    forget_all()
  end
  -- May the ledger be stale? Its clock went back; no call for a few
  -- refreshes while it holds leases (a restore from a snapshot, a replica
  -- promoted late, a clock that jumped ahead); or this node's record is
  -- not the one its last answer came from (writes lost), or is as old as
  -- its own clock says it should not be (the server's clock jumped).
  if now < last then
    stale = true
  elseif now - last > 3 * refresh and redis.call('ZCARD', expiry) > 0 then
    stale = true
  end
  if seen >= 0 then
    local recorded = tonumber(redis.call('ZSCORE', expiry, node))
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
end

-- The records agree with each other (O(log n), at the audit): every node
-- has its want,
-- lease, owner and place in the order, the tree counts the wants above
-- zero, no grant without a node, and no grants summed without grants. A
-- key deleted by hand, evicted, or written by a node of an older layout
-- breaks one of these. Until the audit finds it, the grants' running
-- total still bounds every grant.
if audit then
  local nodes = redis.call('HLEN', wants)
  local counted = count(redis.call('HGET', levels, 'c' .. width) or 0, 'levels.c' .. width)
  if redis.call('ZCARD', expiry) ~= nodes or redis.call('ZCARD', order) ~= nodes
      or redis.call('HLEN', owners) ~= nodes
      or redis.call('ZCOUNT', order, '(0', '+inf') ~= counted
      or redis.call('HLEN', grants) > nodes
      or (granted > 0 and redis.call('EXISTS', grants) == 0)
      or (learned_sum > 0 and redis.call('EXISTS', learned) == 0) then
    forget_all()
  end
end

-- Adds `n` wants of value `value` (capped at the width) to the tree.
local function tree_add(value, n)
  local v = math.min(value, width)
  if v < 1 or n == 0 then
    return
  end
  changed = true
  local i = v
  while i <= width do
    redis.call('HINCRBY', levels, 'c' .. i, n)
    redis.call('HINCRBY', levels, 's' .. i, whole(n * v))
    -- The next range covering `i`: add its lowest set bit.
    local low = 1
    while (i / low) % 2 == 0 do
      low = low * 2
    end
    i = i + low
  end
end

local function member(name)
  return redis.sha1hex(name) .. name
end

-- Forgets node `name`: its slots are free again.
local function forget(name)
  local grant = redis.call('HGET', grants, name)
  if grant then
    granted = math.max(granted - count(grant, 'grants.' .. name), 0)
  end
  local wanted = redis.call('HGET', wants, name)
  if wanted then
    tree_add(count(wanted, 'wants.' .. name), -1)
  end
  renew_ttl = true
  redis.call('ZREM', order, member(name))
  redis.call('ZREM', expiry, name)
  redis.call('HDEL', grants, name)
  redis.call('HDEL', wants, name)
  redis.call('HDEL', owners, name)
end

-- A resize past the tree's width: the tree and the order are made again
-- at the new width, once (O(n log n), as rare as a resize that doubles).
if mode == 'resize' then
  renew_ttl = true
  changed = true
  redis.call('HSET', meta, 'capacity', capacity)
  if capacity >= width then
    width = width_for(capacity)
    redis.call('UNLINK', levels)
    local all = redis.call('HGETALL', wants)
    for i = 1, #all, 2 do
      local value = count(all[i + 1], 'wants.' .. all[i])
      tree_add(value, 1)
      redis.call('ZADD', order, math.min(value, width), member(all[i]))
    end
    redis.call('HSET', meta, 'width', width)
  end
end

-- A stale ledger starts a learning lease (Doorman's): for one lease, nodes
-- may hold grants the ledger does not show, so only what each reports
-- holding is granted, and no lease is purged: every live node renews once
-- in it.
local function start_learning()
  learn_until = now + lease
  redis.call('UNLINK', grants, learned)
  granted, learned_sum = 0, 0
end
if stale and now >= learn_until then
  start_learning()
end
local learning = now < learn_until

-- Forget the nodes whose lease ran out: their slots are free again. A few
-- at a time (each call forgets up to 16); until then they count as
-- holding their grants, which only makes the others' shares smaller.
if not learning then
  for _, name in ipairs(redis.call('ZRANGEBYSCORE', expiry, '-inf', now, 'LIMIT', 0, 16)) do
    forget(name)
  end
  local mine = tonumber(redis.call('ZSCORE', expiry, node))
  if mine and mine <= now then
    forget(node)
  end
  -- Outside learning a node's record has its grant (whoever did not
  -- renew in the learning lease has expired): one without was lost.
  if redis.call('HEXISTS', wants, node) == 1 and redis.call('HEXISTS', grants, node) == 0 then
    forget_all()
    start_learning()
    learning = true
  end
end

-- One process per name: a live lease held by another token is not ours.
-- While learning, no lease is known to have ended: the name is free once
-- the learning lease is over, if its holder did not renew.
local owner = redis.call('HGET', owners, node)
if owner and owner ~= token then
  local ends = tonumber(redis.call('ZSCORE', expiry, node))
  if ends then
    local wait = math.max(ends - now, 0)
    if learning then
      wait = math.max(wait, learn_until - now)
    end
    return {'owner', 0, 0, 0, 0, capacity, wait, 0}
  end
end

-- Every key expires two leases after the last call: their time to live
-- is renewed at the audit (a quarter lease apart at most) and whenever
-- the set of nodes or the ledger's state changed; the settings' at every
-- call.
local ttl = 2 * lease
local function keep()
  renew_ttl = renew_ttl or audit or stale
  if changed then
    version = version + 1
  end
  redis.call('HSET', meta, 'last', now, 'learn_until', whole(learn_until),
    'granted', whole(granted), 'learned_sum', whole(learned_sum), 'version', version,
    'water', water or '')
  if renew_ttl then
    redis.call('HSET', meta, 'kept', now)
    for _, key in ipairs({grants, wants, expiry, learned, owners, levels, order}) do
      redis.call('PEXPIRE', key, ttl)
    end
  end
  redis.call('PEXPIRE', meta, ttl)
end

if mode == 'leave' then
  forget(node)
  keep()
  return {'left', 0, 0, 0, 0, capacity, 0, 0}
end

-- The node's want, lease and owner; the tree and the order follow a want
-- that moved.
local before = redis.call('HGET', wants, node)
local capped = math.min(want, width)
if before then
  local old = count(before, 'wants.' .. node)
  if old ~= want then
    tree_add(old, -1)
    tree_add(want, 1)
  end
else
  tree_add(want, 1)
  renew_ttl = true
end
redis.call('HSET', wants, node, ARGV[6])
redis.call('ZADD', order, capped, member(node))
redis.call('ZADD', expiry, now + lease, node)
redis.call('HSET', owners, node, token)
local nodes = redis.call('HLEN', wants)

-- Fair share (Doorman's FairShare, by water-filling): the water level is
-- the highest L with sum(min(want, L)) <= capacity; a node wanting at most
-- L gets its want, the others L. Found by descending the tree: a prefix of
-- wants (those up to i) sums to s and counts c, and the level may be i
-- when s + i * (wanting - c) stays within the capacity.
local level, below, sum, wanting
if not changed and water then
  local at, l, b, m, w = string.match(water, '^(%d+) (%-?%d+) (%d+) (%d+) (%d+)$')
  if tonumber(at) == version then
    level, below, sum, wanting = tonumber(l), tonumber(b), tonumber(m), tonumber(w)
  end
end
if not level then
  local root = redis.call('HMGET', levels, 'c' .. width, 's' .. width)
  wanting = count(root[1] or 0, 'levels.c' .. width)
  local total = count(root[2] or 0, 'levels.s' .. width)
  -- No level (-1) while every want fits.
  level, below, sum = -1, 0, 0
  if total > capacity then
    level = 0
    local step = width
    while step >= 1 do
      local at = level + step
      if at <= width then
        local range = redis.call('HMGET', levels, 'c' .. at, 's' .. at)
        local c = below + count(range[1] or 0, 'levels.c' .. at)
        local s = sum + count(range[2] or 0, 'levels.s' .. at)
        if s + at * (wanting - c) <= capacity then
          level, below, sum = at, c, s
        end
      end
      step = step / 2
    end
  end
  -- Tagged with the version `keep` writes.
  water = table.concat({changed and version + 1 or version, level, below, whole(sum),
    wanting}, ' ')
end
local target = want
if level >= 0 then
  -- What the equal shares leave over (fewer slots than capped nodes) goes
  -- one slot each to capped nodes in turns that move every lease: the
  -- capped nodes in a fixed order (by want, then a hash of the name), and
  -- a window of `extra` of them that moves on by `extra` every lease, so
  -- with k capped nodes and steady wants each has a turn within
  -- ceil(k / extra) leases.
  if capped > level then
    target = level
    local k = wanting - below
    local extra = capacity - sum - level * k
    if extra > 0 then
      local rank = redis.call('ZRANK', order, member(node))
        - redis.call('ZCOUNT', order, '-inf', level)
      local offset = ((math.floor(now / lease) % k) * extra) % k
      if (rank - offset) % k < extra then
        target = level + 1
      end
    end
  end
end
local share = target

-- The ledger: a grant grows only into what the others leave free, and
-- never falls below what the node may still hold (it gives back what it
-- frees, one renewal later). So the grants sum to at most the capacity,
-- but after a resize down, while the nodes still hold more than the new
-- capacity: then they record what the nodes hold, and none grows.
local mine = redis.call('HGET', grants, node)
local others = granted
if mine then
  others = math.max(granted - count(mine, 'grants.' .. node), 0)
end
local grant
if learning then
  -- Learning: the nodes that have not renewed since the ledger was lost
  -- may hold what it does not show, at most the capacity less what the
  -- others held when they first renewed (all grants summed to at most the
  -- capacity then). So the known nodes share what they held at first: a
  -- node grows only into slots another known node gave back.
  if redis.call('HSETNX', learned, node, holding) == 1 then
    learned_sum = learned_sum + holding
  end
  grant = math.max(holding, math.min(target, math.max(learned_sum - others, 0)))
else
  if learned_sum > 0 or redis.call('EXISTS', learned) == 1 then
    redis.call('UNLINK', learned)
    learned_sum = 0
  end
  grant = math.max(holding, math.min(target, math.max(capacity - others, 0)))
end
redis.call('HSET', grants, node, whole(grant))
granted = others + grant
keep()
return {'ok', grant, math.min(target, grant), nodes, learning and 1 or 0, capacity,
  now + lease, share}
