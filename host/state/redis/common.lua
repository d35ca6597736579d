-- Shared head of every stash script (host/state/redis/mod.rs prepends it).
-- ARGV[1] the key prefix, ARGV[2] the space ("p" public, "g-NAME" a strict
-- group), ARGV[3] the handle; the rest are the script's own.
--
-- Layout, per space S under prefix P:
--   P S :v: H   hash   key -> JSON of stash H
--   P S :x: H   zset   key -> expiry (ms, Redis TIME)
--   P S :lru    zset   H -> last operation of this space on it (ms)
--   P S :b      hash   H -> bytes of keys and values of stash H
--   P S :t      string bytes of every stash of the space
--   P spaces    set    every S written, for usage
-- Time is Redis's own (TIME), so every gateway sharing it agrees on TTLs
-- and idleness whatever their clocks say.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function names(space, h)
  local base = ARGV[1] .. space
  return base .. ':v:' .. h, base .. ':x:' .. h
end

local function space_keys(space)
  local base = ARGV[1] .. space
  return base .. ':lru', base .. ':b', base .. ':t'
end

-- Drops the expired entries of stash h of space; the bytes freed.
local function purge(space, h)
  local vk, xk = names(space, h)
  local _, bk, tk = space_keys(space)
  local dead = redis.call('ZRANGEBYSCORE', xk, '-inf', now)
  local freed = 0
  for _, k in ipairs(dead) do
    local v = redis.call('HGET', vk, k)
    if v then
      freed = freed + #k + #v
      redis.call('HDEL', vk, k)
    end
    redis.call('ZREM', xk, k)
  end
  if freed > 0 then
    redis.call('HINCRBY', bk, h, -freed)
    redis.call('DECRBY', tk, freed)
  end
  return freed
end

-- Removes stash h of space whole (evicted, or left empty); its bytes.
local function drop(space, h)
  local vk, xk = names(space, h)
  local lru, bk, tk = space_keys(space)
  local b = tonumber(redis.call('HGET', bk, h) or '0')
  redis.call('DEL', vk, xk)
  redis.call('HDEL', bk, h)
  redis.call('ZREM', lru, h)
  if b ~= 0 then
    redis.call('DECRBY', tk, b)
  end
  return b
end
