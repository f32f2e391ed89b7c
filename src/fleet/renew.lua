-- One node's call on a fleet's budget (sidejob::fleet): a join, a renewal,
-- a resize or a leave. Its work is O(log n) in the fleet's size n and
-- O(log capacity): no call reads every node's record. A renewal that
-- changes nothing else reads the settings, its node's record and the
-- leases due, and writes its record, its lease and the settings back.
-- A node whose share stands renews without it, with plain commands
-- (`quiet.rs`): they extend its lease key and renew `alive`, and read
-- `meta` and its record to tell whether something moved.
--
-- KEYS (one hash tag, so one Redis Cluster slot); every key expires two
-- leases after the last call that renewed them (one at least every half
-- lease: a quiet node calls the script when `kept` is older), so a budget
-- nobody renews disappears:
--   1 meta    hash: the budget's settings (capacity, lease, refresh);
--             learn_until and last (ms, server clock: the end of a learning
--             lease, the last script call); layout (3); epoch (grants of another
--             epoch were lost with a ledger that may be stale); and running
--             figures: nodes, granted (the grants' sum), learned_sum
--             and learned_n (the sum and count of `held`),
--             wanting and wanted (the count and sum of the wants above
--             zero, each capped at the width), width (of the levels tree),
--             version (of the wants and capacity), water (the water level
--             found at a version, and when), unwatered (calls since), kept
--             (when the keys' time to live was last renewed), audited, due
--             (no lease in `expiry` ends before it: a lower bound)
--   2 nodes   hash: node -> "want grant expiry token epoch" (and, for a
--             caller refused its name, node \0aside\0 token -> what it
--             holds meanwhile, want 0: see set_aside)
--   3 expiry  sorted set: node by when its lease ends (ms, server clock),
--             a lower bound: a quiet renewal extends the node's lease key
--             (`<tag>:lease:<node>\0<token>`, beside these keys) and raises
--             its place here only now and then
--   4 held    hash: node -> what it held when it first renewed in a
--             learning lease (not `learned`, which a node of the older
--             layout deletes)
--   5 levels  hash: a 16-ary tree over the wants (each capped at the
--             width): c<k>:<j> and s<k>:<j>, the count and sum of the wants
--             in block j of 16^k values, to find the water level in
--             O(log width) reads
--   6 order   sorted set: every node (sha1(name)..name) by its capped want:
--             a node's rank among the nodes above the water level
-- ARGV:
--   1 node, 2 token (random, one per Fleet, no spaces),
--   3 capacity, 4 lease (ms), 5 refresh (ms), 6 want,
--   7 holding: the most the node may have in flight until it applies this
--     answer (its local capacity or its usage, whichever is more),
--   8 mode: "join" (the capacity must be the budget's), "renew" (the
--     budget's capacity stands), "resize" (the capacity becomes ARGV 3) or
--     "leave"; the lease and refresh must always be the budget's,
--   9 seen: the expiry this script answered the node's last applied call
--     with, or -1 if unknown (its first call, or a call since got no answer),
--  10 since: ms on the node's clock since it sent that call, or -1.
-- Returns {status, grant, target, nodes, learning, capacity, expiry, share,
-- record} (the record written, "" but for "ok"):
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
local meta, nodes_key, expiry, held, levels, order =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
-- Keys beside them under the same hash tag (KEYS[1] is `<tag>:meta`):
-- `alive`, which a call by any node renews (this script's or a node's
-- quiet renewal: see `quiet.rs`) and which runs out after a few refreshes
-- with no call, and each node's lease key, `lease:<node>\0<token>`, whose
-- time to live is the node's lease: a quiet renewal extends it with a
-- plain `PEXPIRE`, so the lease in `expiry` is only a lower bound.
local prefix = string.sub(meta, 1, -5)
local alive = prefix .. 'alive'
local function lease_key(name, owner)
  return prefix .. 'lease:' .. name .. '\0' .. owner
end
local node, token = ARGV[1], ARGV[2]
local capacity = tonumber(ARGV[3])
local lease = tonumber(ARGV[4])
local refresh = tonumber(ARGV[5])
-- Counts past 2^48 are beyond any capacity (a node's is at most 2^24):
-- capped, so every sum below stays exact in a double.
local want = math.min(tonumber(ARGV[6]), 2 ^ 48)
local holding = math.min(tonumber(ARGV[7]), 2 ^ 48)
local mode = ARGV[8]
local seen = tonumber(ARGV[9])
local since = tonumber(ARGV[10])
local LAYOUT = 3
local RADIX = 16

-- The server's clock: no node's clock decides an expiry.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

-- A call that reaches the script after the lease it renews ran out (it
-- waited out a partition, or in Redis's queue): its node has stopped using
-- that lease by now, and what it reported holding is stale. It changes
-- nothing (its node gave up on it, or counts it as failed).
if mode ~= 'leave' and seen >= 0 and seen <= now then
  return {'late', 0, 0, 0, 0, 0, 0, 0, ''}
end

-- A ledger that holds what this script never writes: the call fails
-- naming what it found, and the whole budget is forgotten (settings
-- included), so the next call starts it afresh, learning: bad data costs
-- one failed call per node and a learning lease, never a grant past the
-- budget nor a budget that fails for good.
local function corrupt(what)
  redis.call('UNLINK', meta, nodes_key, expiry, held, levels, order)
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

-- The tree's width for a capacity: a power of the radix above it, so a
-- want at or above the capacity is one value (no water level reaches it).
local function width_for(slots)
  local w = RADIX
  while w <= slots do
    w = w * RADIX
  end
  return w
end

local function is_width(w)
  while w >= RADIX and w % RADIX == 0 do
    w = w / RADIX
  end
  return w == 1
end

local FIELDS = {'capacity', 'lease', 'learn_until', 'last', 'refresh', 'layout', 'epoch',
  'nodes', 'granted', 'learned_sum', 'learned_n', 'wanting', 'wanted', 'width', 'version', 'water',
  'unwatered', 'kept', 'audited', 'due'}
local got = redis.pcall('HMGET', meta, unpack(FIELDS))
if got.err then
  corrupt('`' .. meta .. '` is a ' .. redis.call('TYPE', meta)['ok'] .. ', not a hash')
end
local settings = {}
for i, field in ipairs(FIELDS) do
  settings[field] = got[i]
end

-- Every key is of its kind or absent, checked at an audit a quarter lease
-- apart (on a timer of its own: calls that renew the keys' time to live
-- do not put it off) and on a budget's first call; in between, a key of
-- another kind fails the call that touches it (WRONGTYPE) until then. A
-- ledger without settings is forgotten whatever it holds; an older layout
-- kept `expiry` in a hash.
local audited = tonumber(settings.audited)
local audit = not settings.capacity or not audited
  or now - audited >= (tonumber(settings.lease) or 0) / 4
  or now < audited
local older = false
if audit then
    local kinds = {{nodes_key, 'hash'}, {expiry, 'zset'}, {held, 'hash'}, {levels, 'hash'},
    {order, 'zset'}}
  for _, pair in ipairs(kinds) do
    local found = redis.call('TYPE', pair[1])['ok']
    if pair[1] == expiry and found == 'hash' then
      older = true
    elseif settings.capacity and found ~= 'none' and found ~= pair[2] then
      corrupt('`' .. pair[1] .. '` is a ' .. found .. ', not a ' .. pair[2])
    end
  end
end

-- The running figures.
local epoch, count_nodes, granted, learned_sum, learned_n, wanting, wanted, width, version
local learn_until, water, unwatered
local stale = false
-- Whether this call moved the wants, the capacity or the width (the water
-- level is found again), or must renew every key's time to live.
local changed, renew_ttl = false, false

-- Forgets every node: a ledger that cannot be trusted. Its settings stay;
-- grants of the epoch before are no grants.
local function forget_all()
  redis.call('UNLINK', nodes_key, expiry, held, levels, order)
  epoch = epoch + 1
  count_nodes, granted, learned_sum, learned_n, wanting, wanted = 0, 0, 0, 0, 0, 0
  changed, stale = true, true
end

if not settings.capacity then
  if mode == 'leave' then
    -- A leave never creates a budget (its capacity says nothing); what is
    -- left of a ledger without settings is forgotten by the next join.
    return {'left', 0, 0, 0, 0, 0, 0, 0, ''}
  end
  -- A budget never seen, one that expired, or a Redis restarted empty or
  -- that evicted it: whatever is left of the ledger is not to be trusted.
  epoch, version, width, learn_until, unwatered = 0, 0, width_for(capacity), 0, 0
  forget_all()
  redis.call('HSET', meta, 'capacity', capacity, 'lease', lease, 'refresh', refresh,
    'layout', LAYOUT)
else
  local known = count(settings.capacity, 'meta.capacity')
  local budget_lease = count(settings.lease, 'meta.lease')
  local budget_refresh = count(settings.refresh, 'meta.refresh')
  if mode == 'join' and known ~= capacity then
    return {'capacity', 0, 0, 0, 0, known, 0, 0, ''}
  end
  if mode ~= 'leave' and budget_lease ~= lease then
    -- A lease unlike the budget's would let the node outlive its grant.
    return {'lease', 0, 0, 0, 0, budget_lease, 0, 0, ''}
  end
  if mode ~= 'leave' and budget_refresh ~= refresh then
    -- The ledger tells a gap of calls by the budget's refresh.
    return {'refresh', 0, 0, 0, 0, budget_refresh, 0, 0, ''}
  end
  lease = budget_lease
  if mode ~= 'resize' then
    capacity = known
  end
  learn_until = count(settings.learn_until or 0, 'meta.learn_until')
  -- No record of the last call: as if it were long ago.
  local last = count(settings.last or 0, 'meta.last')
  epoch = count(settings.epoch or 0, 'meta.epoch')
  count_nodes = count(settings.nodes or 0, 'meta.nodes')
  granted = count(settings.granted or 0, 'meta.granted')
  learned_sum = count(settings.learned_sum or 0, 'meta.learned_sum')
  learned_n = count(settings.learned_n or 0, 'meta.learned_n')
  wanting = count(settings.wanting or 0, 'meta.wanting')
  wanted = count(settings.wanted or 0, 'meta.wanted')
  width = count(settings.width or width_for(known), 'meta.width')
  version = count(settings.version or 0, 'meta.version')
  unwatered = count(settings.unwatered or 0, 'meta.unwatered')
  water = settings.water
  if older or (settings.layout and tonumber(settings.layout) ~= LAYOUT) or width <= known
      or not is_width(width) then
    -- A ledger of an older layout (its nodes cannot keep this one's
    -- figures), or a width that is no power of the radix: learned again.
    width = width_for(math.max(capacity, known))
    forget_all()
    redis.call('HSET', meta, 'layout', LAYOUT)
  elseif not settings.layout then
    -- Settings alone (an older layout with no node left, or set by hand):
    -- taken as they are.
    redis.call('HSET', meta, 'layout', LAYOUT)
  end
  -- May the ledger be stale? Its clock went back; no call for a few
  -- refreshes while it holds leases (a restore from a snapshot, a replica
  -- promoted late, a clock that jumped ahead).
  -- `alive` runs out a few refreshes after the last call (and before any
  -- lease key a live node renews could: see `alive_ttl`); a ledger that
  -- lost the time of its last call cannot tell a gap either.
  if now < last then
    stale = true
  elseif count_nodes > 0 and (not settings.last or redis.call('EXISTS', alive) == 0) then
    stale = true
  end
end

-- This node's record: "want grant expiry token epoch".
local record = redis.call('HGET', nodes_key, node)
local mine
if record then
  local w, g, e, t, p = string.match(record, '^(%d+) (%d+) (%d+) (%S+) (%d+)$')
  if not w then
    corrupt('the record of `' .. node .. '` is ' .. record)
  end
  mine = {want = tonumber(w), grant = tonumber(g), expiry = tonumber(e), token = t,
    epoch = tonumber(p)}
end

-- When the lease of a record ends: the later of its record's expiry and
-- its lease key's (a quiet renewal extends only the key).
local function lease_end(name, rec)
  local t = redis.call('PEXPIRETIME', lease_key(name, rec.token))
  if t > rec.expiry then
    return t
  end
  return rec.expiry
end
if mine then
  mine.expiry = lease_end(node, mine)
end

-- The node's record is not the one its last answer came from (writes
-- lost), or is as old as its own clock says it should not be (the
-- server's clock jumped).
if seen >= 0 and mode ~= 'leave' then
  local recorded = mine and mine.expiry
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

-- The tree's top blocks summed: the count and sum of every want it holds
-- (nil if a field is no number).
local function tree_totals()
  local span = width / RADIX
  local fields = {}
  for t = 0, RADIX - 1 do
    fields[#fields + 1] = 'c' .. whole(span) .. ':' .. whole(t)
    fields[#fields + 1] = 's' .. whole(span) .. ':' .. whole(t)
  end
  local top = redis.call('HMGET', levels, unpack(fields))
  local c, s = 0, 0
  for t = 0, RADIX - 1 do
    local ct, st = tonumber(top[2 * t + 1] or 0), tonumber(top[2 * t + 2] or 0)
    if not ct or not st then
      return nil, nil
    end
    c, s = c + ct, s + st
  end
  return c, s
end

-- The records agree with the running figures (O(log n), at the audit):
-- every node has its record, lease and place in the order, and the order
-- and the tree's top blocks count the wants the figures count. A key
-- deleted by hand, evicted, or written by a node of an older layout
-- breaks one of these; until the audit finds it, the grants' running
-- total still bounds every grant. What the audit cannot see without
-- reading every record: the running total itself, and the tree's lower
-- blocks, edited by hand; such an edit stands until the next learning
-- lease (or, for the tree, until the ledger is forgotten).
local tree_count, tree_sum
if audit then
  tree_count, tree_sum = tree_totals()
end
if audit and (redis.call('HLEN', nodes_key) ~= count_nodes
    or tree_count ~= wanting or tree_sum ~= wanted
    or redis.call('ZCARD', expiry) ~= count_nodes
    or redis.call('ZCARD', order) ~= count_nodes
    or redis.call('ZCOUNT', order, '(0', '+inf') ~= wanting
    or redis.call('HLEN', held) ~= learned_n) then
  forget_all()
  record, mine = nil, nil
end

-- Moves one want in the tree from value `from` to value `to`, each capped
-- at the width (0: no want); a block both fall in changes only in sum.
local function tree_move(from, to)
  from, to = math.min(from, width), math.min(to, width)
  if from == to then
    return
  end
  changed = true
  if from >= 1 then
    wanting, wanted = wanting - 1, wanted - from
  end
  if to >= 1 then
    wanting, wanted = wanting + 1, wanted + to
  end
  -- The blocks' fields and what each moves by, read in one call and
  -- written in one (no field twice: each names its span).
  local fields, deltas = {}, {}
  local function add(kind, span, block, delta)
    fields[#fields + 1] = kind .. whole(span) .. ':' .. whole(block)
    deltas[#deltas + 1] = delta
  end
  local span = 1
  while span < width do
    local a = from >= 1 and math.floor((from - 1) / span) or -1
    local b = to >= 1 and math.floor((to - 1) / span) or -1
    if a == b then
      add('s', span, a, to - from)
    else
      if a >= 0 then
        add('c', span, a, -1)
        add('s', span, a, -from)
      end
      if b >= 0 then
        add('c', span, b, 1)
        add('s', span, b, to)
      end
    end
    span = span * RADIX
  end
  -- (A block the records no longer match, its key deleted by hand, may
  -- fall below zero here, as it did by `HINCRBY`: the audit finds the tree
  -- unlike the figures and forgets the ledger.)
  local got = redis.call('HMGET', levels, unpack(fields))
  local writes = {}
  for i, field in ipairs(fields) do
    local value = tonumber(got[i] or 0)
    if value == nil or value ~= math.floor(value) or math.abs(value) == math.huge then
      corrupt('levels.' .. field .. ' is ' .. tostring(got[i]) .. ', not a count')
    end
    writes[#writes + 1] = field
    writes[#writes + 1] = whole(value + deltas[i])
  end
  redis.call('HSET', levels, unpack(writes))
end

local function member(name)
  return redis.sha1hex(name) .. name
end

-- The grant a record holds: none from an epoch before.
local function grant_of(rec)
  if rec and rec.epoch == epoch then
    return rec.grant
  end
  return 0
end

-- Forgets node `name` (its record `rec`, read): its slots are free again.
local function forget(name, rec)
  granted = math.max(granted - grant_of(rec), 0)
  tree_move(rec.want, 0)
  count_nodes = count_nodes - 1
  renew_ttl = true
  redis.call('ZREM', order, member(name))
  redis.call('ZREM', expiry, name)
  redis.call('HDEL', nodes_key, name)
  redis.call('DEL', lease_key(name, rec.token))
end

-- A node's record read by name, for one that is not the caller.
local function read(name)
  local rec = redis.call('HGET', nodes_key, name)
  if not rec then
    return nil
  end
  local w, g, e, t, p = string.match(rec, '^(%d+) (%d+) (%d+) (%S+) (%d+)$')
  if not w then
    corrupt('the record of `' .. name .. '` is ' .. rec)
  end
  return {want = tonumber(w), grant = tonumber(g), expiry = tonumber(e), token = t,
    epoch = tonumber(p)}
end

-- A stale ledger starts a learning lease (Doorman's): for one lease, nodes
-- may hold grants the ledger does not show, so only what each reports
-- holding is granted, and no lease is purged: every live node renews once
-- in it. Every grant before is void (a new epoch).
local function start_learning()
  learn_until = now + lease
  epoch = epoch + 1
  granted, learned_sum, learned_n = 0, 0, 0
  redis.call('UNLINK', held)
  renew_ttl = true
end
if stale and now >= learn_until then
  start_learning()
end
-- A learning lease lasts a lease from when it started; one that seems to
-- last longer was started on a clock since stepped back: it lasts a lease
-- from now.
learn_until = math.min(learn_until, now + lease)
-- While learning, what the nodes held is the bound: a `held` that lost or
-- gained a record (deleted, evicted, written by hand) no longer tells it,
-- and the learning starts over.
if now < learn_until and redis.call('HLEN', held) ~= learned_n then
  start_learning()
end
local learning = now < learn_until

-- Forget the nodes whose lease ran out: their slots are free again. A few
-- at a time (each call looks at up to 16, and this node's own); until then
-- they count as holding their grants, which only makes the others' shares
-- smaller. `expiry` is a lower bound (quiet renewals extend the lease key
-- and raise it only now and then): a lease found renewed is put back at
-- its end. `due`, the earliest end in `expiry` when last looked (no lease
-- there ends sooner), spares the look until then.
local due = tonumber(settings.due) or 0
if stale then
  due = 0
end
if not learning and now >= due then
  for _, name in ipairs(redis.call('ZRANGEBYSCORE', expiry, '-inf', now, 'LIMIT', 0, 16)) do
    if name == node then
      if mine and mine.expiry > now then
        redis.call('ZADD', expiry, mine.expiry, node)
      elseif mine then
        forget(node, mine)
        record, mine = nil, nil
      end
    else
      local rec = read(name)
      if rec then
        local ends = lease_end(name, rec)
        if ends > now then
          redis.call('ZADD', expiry, ends, name)
        else
          forget(name, rec)
        end
      else
        redis.call('ZREM', expiry, name)
      end
    end
  end
  local first = redis.call('ZRANGE', expiry, 0, 0, 'WITHSCORES')
  due = tonumber(first[2]) or (now + lease)
end
if not learning then
  if mine and mine.expiry <= now then
    forget(node, mine)
    record, mine = nil, nil
  end
end

local ttl = 2 * lease
-- How long `alive` outlives the last call: a few refreshes, and less than
-- what is left of any lease a live node renews every refresh, so a ledger
-- restored from a snapshot old enough to have lost a live lease has lost
-- `alive` too (and learns, purging none). `quiet.rs` computes the same.
-- (At least two refreshes whatever the settings: a lease of three
-- refreshes or less is refused by the nodes, not by the script.)
local alive_ttl = math.max(math.min(3 * refresh, lease - refresh), 2 * refresh)
-- Writes the running figures back; every key's time to live is renewed at
-- the audit (a quarter lease apart at most) and whenever the set of nodes
-- or the ledger's state changed.
local function keep()
  if changed then
    version = version + 1
  end
  redis.call('HSET', meta, 'last', now, 'learn_until', whole(learn_until),
    'epoch', epoch, 'nodes', count_nodes, 'granted', whole(granted),
    'learned_sum', whole(learned_sum), 'learned_n', learned_n, 'wanting', wanting, 'wanted', whole(wanted),
    'width', whole(width), 'version', version, 'water', water or '',
    'unwatered', unwatered, 'due', whole(due))
  -- The time of this call, for a gap of calls (see `alive_ttl`).
  redis.call('SET', alive, '1', 'PX', alive_ttl)
  if audit then
    redis.call('HSET', meta, 'audited', now)
  end
  if renew_ttl or audit or stale then
    redis.call('HSET', meta, 'kept', now)
    for _, key in ipairs({meta, nodes_key, expiry, held, levels, order}) do
      redis.call('PEXPIRE', key, ttl)
    end
  end
end

-- What a caller refused its name holds meanwhile, set aside under a record
-- of its own: named by its token, want 0, grant what it holds, its own
-- lease. A ledger restored stale can give a live node's name back to a
-- process long dead; the node, refused, still holds the permits it took on
-- its grant until they end, and the others' grants must leave those slots
-- free (a learning lease learns them too). The record goes when the caller
-- holds nothing, leaves or gets its name, and runs out with its lease if
-- the caller stops calling. With a dead lease restored under the name, the
-- grants recorded can sum past the capacity until that lease runs out
-- (the same slots counted twice), which only holds the others back.
local aside = node .. '\0aside\0' .. token
local function drop_aside()
  local rec = read(aside)
  if rec then
    forget(aside, rec)
  end
  local learned = redis.call('HGET', held, aside)
  if learned then
    redis.call('HDEL', held, aside)
    learned_sum = math.max(learned_sum - count(learned, 'held'), 0)
    learned_n = math.max(learned_n - 1, 0)
  end
end
local function set_aside()
  local rec = read(aside)
  if not rec then
    count_nodes = count_nodes + 1
    renew_ttl = true
    redis.call('ZADD', order, 0, member(aside))
  end
  granted = math.max(granted - grant_of(rec), 0) + holding
  if learning and redis.call('HSETNX', held, aside, whole(holding)) == 1 then
    learned_sum, learned_n = learned_sum + holding, learned_n + 1
    renew_ttl = true
  end
  redis.call('ZADD', expiry, now + lease, aside)
  due = math.min(due, now + lease)
  redis.call('HSET', nodes_key, aside,
    table.concat({'0', whole(holding), whole(now + lease), token, epoch}, ' '))
end

-- One process per name: a live lease held by another token is not ours.
-- While learning, no lease is known to have ended: the name is free once
-- the learning lease is over, if its holder did not renew.
if mine and mine.token ~= token then
  local wait = math.max(mine.expiry - now, 0)
  if learning then
    wait = math.max(wait, learn_until - now)
  end
  -- (A join sets nothing aside: a process not yet joined holds only the
  -- floor it may admit while it joins, which no grant covers anyway.)
  if mode == 'leave' or (mode ~= 'join' and holding == 0) then
    drop_aside()
  elseif mode ~= 'join' then
    set_aside()
  end
  -- What this call changed (leases forgotten, a learning lease) stays.
  keep()
  return {'owner', 0, 0, 0, 0, capacity, wait, 0, ''}
end
-- A record made afresh: the name is this node's (again), and what it set
-- aside while refused is reported under it from now on.
if not mine then
  drop_aside()
end

-- A resize: the new capacity, and past the tree's width, the tree and the
-- order are made again at the new width, once (O(n log n), as rare as a
-- resize that multiplies the capacity by the radix).
if mode == 'resize' then
  renew_ttl, changed = true, true
  redis.call('HSET', meta, 'capacity', capacity)
  if capacity >= width then
    width = width_for(capacity)
    redis.call('UNLINK', levels)
    wanting, wanted = 0, 0
    local all = redis.call('HGETALL', nodes_key)
    for i = 1, #all, 2 do
      local w = string.match(all[i + 1], '^(%d+) ')
      if not w then
        corrupt('the record of `' .. all[i] .. '` is ' .. all[i + 1])
      end
      tree_move(0, tonumber(w))
      redis.call('ZADD', order, math.min(tonumber(w), width), member(all[i]))
    end
  end
end

if mode == 'leave' then
  if mine then
    forget(node, mine)
  end
  keep()
  return {'left', 0, 0, 0, 0, capacity, 0, 0, ''}
end

-- The node's want; the tree and the order follow a want that moved.
local capped = math.min(want, width)
if mine then
  if mine.want ~= want then
    tree_move(mine.want, want)
    if math.min(mine.want, width) ~= capped then
      redis.call('ZADD', order, capped, member(node))
    end
  end
else
  tree_move(0, want)
  redis.call('ZADD', order, capped, member(node))
  count_nodes = count_nodes + 1
  renew_ttl = true
end
redis.call('ZADD', expiry, now + lease, node)
due = math.min(due, now + lease)

-- Fair share (Doorman's FairShare, by water-filling): the water level is
-- the highest L with sum(min(want, L)) <= capacity; a node wanting at most
-- L gets its want, the others L. Found by descending the tree: below a
-- value v the wants sum to s and count c, and the level may be v when
-- s + v * (wanting - c) stays within the capacity. The level found is
-- kept with the version of the wants it was found at, and found again
-- when they moved, at most once every sixteenth of the nodes' script calls
-- or half a refresh, whichever comes first (with sixteen nodes or fewer,
-- at every call; a quiet node that reads a level older than that calls
-- the script for it, about sixteen of them a refresh). Until then
-- the level is a little stale: it moves targets, never the grants' bound.
local level, below, sum = -1, 0, 0
local at, l, b, m, found
if water then
  at, l, b, m, found = string.match(water, '^(%d+) (%-?%d+) (%d+) (%d+) (%d+)$')
end
-- A level not parsed is none; at the audit it is found again whatever it
-- says (a quarter lease bounds a wrong one).
local cached = at and not audit
local fresh = cached and tonumber(at) == version and not changed
unwatered = unwatered + 1
if cached and not fresh and unwatered * 16 < count_nodes and now - tonumber(found) < refresh / 2
    and now >= tonumber(found) then
  fresh = true -- stale, within its bound
end
if fresh then
  level, below, sum = tonumber(l), tonumber(b), tonumber(m)
else
  if wanted > capacity then
    level = 0
    local base, span = 0, width / RADIX
    while span >= 1 do
      local fields = {}
      for t = 0, RADIX - 1 do
        fields[#fields + 1] = 'c' .. whole(span) .. ':' .. whole(base + t)
        fields[#fields + 1] = 's' .. whole(span) .. ':' .. whole(base + t)
      end
      local range = redis.call('HMGET', levels, unpack(fields))
      local into = nil
      for t = 0, RADIX - 1 do
        local c = below + count(range[2 * t + 1] or 0, 'levels.c')
        local s = sum + count(range[2 * t + 2] or 0, 'levels.s')
        local last = (base + t + 1) * span
        if s + last * (wanting - c) <= capacity then
          level, below, sum = last, c, s
        else
          into = base + t
          break
        end
      end
      if not into then
        break
      end
      base, span = into * RADIX, span / RADIX
    end
  end
  water = table.concat({changed and version + 1 or version, level, below, whole(sum), now}, ' ')
  unwatered = 0
end

local target = want
if level >= 0 and capped > level then
  -- What the equal shares leave over (fewer slots than capped nodes) goes
  -- one slot each to capped nodes in turns that move every lease: the
  -- capped nodes in a fixed order (by want, then a hash of the name), and
  -- a window of `extra` of them that moves on by `extra` every lease, so
  -- with k capped nodes and steady wants each has a turn within
  -- ceil(k / extra) leases.
  target = level
  local k = wanting - below
  local extra = capacity - sum - level * k
  if k > 0 and extra > 0 then
    local rank = redis.call('ZRANK', order, member(node))
    if not rank then
      -- Its place was lost (the audit will tell why): taken again.
      redis.call('ZADD', order, capped, member(node))
      rank = redis.call('ZRANK', order, member(node))
    end
    rank = rank - redis.call('ZCOUNT', order, '-inf', level)
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
local others = math.max(granted - grant_of(mine), 0)
local grant
if learning then
  -- Learning: the nodes that have not renewed since the ledger was lost
  -- may hold what it does not show, at most the capacity less what the
  -- others held when they first renewed (all grants summed to at most the
  -- capacity then). So the known nodes share what they held at first: a
  -- node grows only into slots another known node gave back.
  if redis.call('HSETNX', held, node, whole(holding)) == 1 then
    learned_sum, learned_n = learned_sum + holding, learned_n + 1
    renew_ttl = true
  end
  -- Within the capacity too: after a resize down, what they held may
  -- sum past it.
  grant = math.max(holding,
    math.min(target, math.max(math.min(learned_sum, capacity) - others, 0)))
else
  if learned_n > 0 then
    redis.call('UNLINK', held)
    learned_sum, learned_n = 0, 0
  end
  grant = math.max(holding, math.min(target, math.max(capacity - others, 0)))
end
local written = table.concat({ARGV[6], whole(grant), whole(now + lease), token, epoch}, ' ')
redis.call('HSET', nodes_key, node, written)
redis.call('SET', lease_key(node, token), '1', 'PXAT', now + lease)
granted = others + grant
keep()
return {'ok', grant, math.min(target, grant), count_nodes, learning and 1 or 0, capacity,
  now + lease, share, written}
