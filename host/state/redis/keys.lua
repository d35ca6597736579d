-- forge.stash.keys: the live keys of the own space and, for a strict
-- group, of the public space (Rust sorts and dedups).
local space, h = ARGV[2], ARGV[3]
local lru = space_keys(space)
redis.call('ZADD', lru, 'XX', now, h)
local _, xk = names(space, h)
local out = redis.call('ZRANGEBYSCORE', xk, '(' .. now, '+inf')
if space ~= 'p' then
  local _, pxk = names('p', h)
  for _, k in ipairs(redis.call('ZRANGEBYSCORE', pxk, '(' .. now, '+inf')) do
    table.insert(out, k)
  end
end
return out
