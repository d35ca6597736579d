-- forge.stash.get. ARGV[4] key. The live JSON from the own space, else
-- (for a strict group) from the public space, which is read without
-- refreshing it.
local space, h, key = ARGV[2], ARGV[3], ARGV[4]
local function live(s)
  local vk, xk = names(s, h)
  local e = redis.call('ZSCORE', xk, key)
  if e and tonumber(e) > now then
    return redis.call('HGET', vk, key)
  end
  return false
end
local lru = space_keys(space)
redis.call('ZADD', lru, 'XX', now, h)
local v = live(space)
if v or space == 'p' then
  return v
end
return live('p')
