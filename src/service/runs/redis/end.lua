local prefix, id, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local order = {}
local stack = {id}
while #stack > 0 do
  local next = table.remove(stack)
  local k = prefix .. next
  if redis.call('EXISTS', k) == 1 then
    order[#order + 1] = next
    for _, c in ipairs(redis.call('LRANGE', k .. ':children', 0, -1)) do stack[#stack + 1] = c end
  end
end
local ended = {}
for j = #order, 1, -1 do
  local run = order[j]
  local k = prefix .. run
  if redis.call('HEXISTS', k, 'ended') == 0 then
    local exp = tonumber(redis.call('HGET', k, 'exp') or '0')
    redis.call('HSET', k, 'ended', math.min(now, exp))
    ended[#ended + 1] = run
  end
  local fields = redis.call('HGETALL', k)
  for f = 1, #fields, 2 do
    if string.sub(fields[f], 1, 2) == 'f:' then
      local counter = string.sub(fields[f], 3)
      local left = tonumber(redis.call('HGET', k, 'c:' .. counter) or '0')
      if left > 0 then
        local owner = prefix .. fields[f + 1]
        if redis.call('HEXISTS', owner, 'c:' .. counter) == 1 then
          redis.call('HINCRBY', owner, 'c:' .. counter, left)
        end
        redis.call('HSET', k, 'c:' .. counter, 0)
      end
    end
  end
end
if #ended > 0 then redis.call('PUBLISH', ARGV[4], table.concat(ended, ' ')) end
return ended
