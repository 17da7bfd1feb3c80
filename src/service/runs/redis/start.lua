local key, prefix, id, now = KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3])
local meta, state, exp, parent, expire_at = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local max_children = tonumber(ARGV[9])
local n = tonumber(ARGV[10]); local i = 11
local counters = {}
for k = 1, n do counters[k] = {ARGV[i], tonumber(ARGV[i + 1])}; i = i + 2 end
local ancestors = {}
for k = i, #ARGV do ancestors[#ancestors + 1] = ARGV[k] end
if parent ~= '' then
  local p = prefix .. parent
  local pexp = tonumber(redis.call('HGET', p, 'exp') or '0')
  if pexp <= now or redis.call('HEXISTS', p, 'ended') == 1 then return {'parent_ended'} end
  if redis.call('LLEN', p .. ':children') >= max_children then return {'too_many_children'} end
end
local carve = {}
for _, c in ipairs(counters) do
  for _, a in ipairs(ancestors) do
    local left = redis.call('HGET', prefix .. a, 'c:' .. c[1])
    if left then
      if tonumber(left) < c[2] then return {'overdrawn', c[1], tostring(c[2]), left} end
      carve[#carve + 1] = {a, c[1], c[2]}
      break
    end
  end
end
-- `0 - n`, not `-n`: Lua writes -0 as '-0', which HINCRBY refuses.
for _, x in ipairs(carve) do
  if x[3] > 0 then redis.call('HINCRBY', prefix .. x[1], 'c:' .. x[2], 0 - x[3]) end
end
redis.call('HSET', key, 'meta', meta, 'state', state, 'exp', exp)
for _, c in ipairs(counters) do
  redis.call('HSET', key, 'c:' .. c[1], c[2], 'l:' .. c[1], c[2])
end
for _, x in ipairs(carve) do redis.call('HSET', key, 'f:' .. x[2], x[1]) end
redis.call('EXPIREAT', key, expire_at)
if parent ~= '' then
  local p = prefix .. parent
  redis.call('RPUSH', p .. ':children', id)
  local at = redis.call('PEXPIRETIME', p)
  if at > 0 then redis.call('PEXPIREAT', p .. ':children', at) end
end
return {'ok'}
