local key, now, next, plain, moved, keep = KEYS[1], tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local state = redis.call('HGET', key, 'state')
if not state then return {} end
local line = plain
if next ~= '' and redis.call('HEXISTS', key, 'ended') == 0
   and tonumber(redis.call('HGET', key, 'exp')) > now then
  redis.call('HSET', key, 'state', next)
  state = next
  line = moved
  redis.call('PUBLISH', ARGV[6], ARGV[7])
end
redis.call('LPUSH', key .. ':calls', line)
redis.call('LTRIM', key .. ':calls', 0, keep - 1)
-- At most ARGV[8] bytes of lines (the newest always kept).
local total = 0
for i, kept in ipairs(redis.call('LRANGE', key .. ':calls', 0, -1)) do
  total = total + #kept
  if total > tonumber(ARGV[8]) and i > 1 then
    redis.call('LTRIM', key .. ':calls', 0, i - 2)
    break
  end
end
local ttl = redis.call('PTTL', key)
if ttl > 0 then redis.call('PEXPIRE', key .. ':calls', ttl) end
return {state}
