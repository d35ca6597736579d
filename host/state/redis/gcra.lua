-- One event of a shared rate limit (GCRA, the algorithm governor uses
-- locally): KEYS[1] holds the theoretical arrival time (µs, Redis TIME).
-- ARGV[1] the key prefix (unused: the key is KEYS[1]), ARGV[2] the
-- emission interval (µs), ARGV[3] the burst. Returns 0 when
-- admitted, else the µs to wait.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval, burst = tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then
  tat = now
end
local wait = tat - now - interval * (burst - 1)
if wait > 0 then
  return wait
end
local next = tat + interval
redis.call('SET', KEYS[1], string.format('%d', next), 'PX', math.ceil((next - now) / 1000) + 1000)
return 0
