-- forge.stash.delete. ARGV[4] key. 1 when a live entry was removed from
-- the own space (never another).
local space, h, key = ARGV[2], ARGV[3], ARGV[4]
local vk, xk = names(space, h)
local lru, bk, tk = space_keys(space)
if not redis.call('ZSCORE', lru, h) then
  return 0
end
redis.call('ZADD', lru, now, h)
local v = redis.call('HGET', vk, key)
if not v then
  return 0
end
local e = tonumber(redis.call('ZSCORE', xk, key) or '0')
redis.call('HDEL', vk, key)
redis.call('ZREM', xk, key)
local freed = #key + #v
redis.call('HINCRBY', bk, h, -freed)
redis.call('DECRBY', tk, freed)
if redis.call('HLEN', vk) == 0 then
  drop(space, h)
end
if e > now then
  return 1
end
return 0
