-- What every gateway sharing this prefix holds: {stashes, bytes}.
local stashes, bytes = 0, 0
for _, s in ipairs(redis.call('SMEMBERS', ARGV[1] .. 'spaces')) do
  local lru, _, tk = space_keys(s)
  stashes = stashes + redis.call('ZCARD', lru)
  bytes = bytes + tonumber(redis.call('GET', tk) or '0')
end
return {stashes, bytes}
