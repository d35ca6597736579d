-- forge.stash.put, MemoryStore::put's steps in one atomic script.
-- ARGV[4] key, [5] JSON, [6] TTL (ms), [7] max_keys, [8] max_total_size,
-- [9] max_stashes, [10] max_gateway_size, [11] evict_idle (ms).
-- Returns {0, 0} stored; {1, 0} the stash holds max_keys; {2, size} over
-- max_total_size; {3, bytes} the space holds max_stashes in use; {4, bytes}
-- the space's bytes are full of stashes in use.
local space, h, key, json = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local ttl, max_keys, max_total = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local max_stashes, max_gateway, idle = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local vk, xk = names(space, h)
local lru, bk, tk = space_keys(space)
local new_bucket = redis.call('ZSCORE', lru, h) == false
purge(space, h)

-- A refusal changes nothing, except that a stash its own expired entries
-- left empty goes, as in memory.
local function refuse(code, n)
  if not new_bucket and redis.call('HLEN', vk) == 0 then
    drop(space, h)
  end
  return {code, n}
end

local cur = tonumber(redis.call('HGET', bk, h) or '0')
local old = redis.call('HGET', vk, key)
local size = #key + #json
if not old and redis.call('HLEN', vk) >= max_keys then
  return refuse(1, 0)
end
local after = cur - (old and (#key + #old) or 0) + size
if after > max_total then
  return refuse(2, size)
end

-- The space's caps, with the stash being written left out of the count.
local function fits()
  local others = tonumber(redis.call('GET', tk) or '0') - tonumber(redis.call('HGET', bk, h) or '0')
  return others + after <= max_gateway
    and (not new_bucket or redis.call('ZCARD', lru) < max_stashes)
end
if not fits() then
  for _, o in ipairs(redis.call('ZRANGE', lru, 0, -1)) do
    if o ~= h then
      purge(space, o)
      if redis.call('HLEN', (names(space, o))) == 0 then
        drop(space, o)
      end
    end
  end
  while not fits() do
    -- The least recently used stash other than h, if idle long enough.
    local first = redis.call('ZRANGE', lru, 0, 1, 'WITHSCORES')
    local victim, used = first[1], first[2]
    if victim == h then
      victim, used = first[3], first[4]
    end
    if not victim or now - tonumber(used) < idle then
      return refuse((new_bucket and redis.call('ZCARD', lru) >= max_stashes) and 3 or 4, after)
    end
    drop(space, victim)
  end
end

redis.call('HSET', vk, key, json)
redis.call('ZADD', xk, now + ttl, key)
redis.call('HSET', bk, h, after)
redis.call('INCRBY', tk, after - cur)
redis.call('ZADD', lru, now, h)
redis.call('SADD', ARGV[1] .. 'spaces', space)
return {0, 0}
