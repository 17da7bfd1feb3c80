local prefix = ARGV[1]
for i = 2, #ARGV, 2 do
  local k = prefix .. ARGV[i]
  local limit = tonumber(redis.call('HGET', k, 'l:' .. ARGV[i + 1]) or '0')
  local left = tonumber(redis.call('HGET', k, 'c:' .. ARGV[i + 1]) or '0')
  if left < limit then redis.call('HINCRBY', k, 'c:' .. ARGV[i + 1], 1) end
end
return 'ok'
