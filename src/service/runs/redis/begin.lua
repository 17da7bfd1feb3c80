local key, prefix, now = KEYS[1], ARGV[1], tonumber(ARGV[2])
local i = 3
local ns = tonumber(ARGV[i]); i = i + 1
local states = {}
for k = 1, ns do states[k] = ARGV[i]; i = i + 1 end
local nc = tonumber(ARGV[i]); i = i + 1
local counters = {}
for k = 1, nc do counters[k] = ARGV[i]; i = i + 1 end
local chain = {key}
for k = i, #ARGV do chain[#chain + 1] = prefix .. ARGV[k] end
local state = redis.call('HGET', key, 'state')
if not state or redis.call('HEXISTS', key, 'ended') == 1
   or tonumber(redis.call('HGET', key, 'exp')) <= now then
  return {'ended'}
end
if ns >= 0 then
  local ok = false
  for _, s in ipairs(states) do if s == state or s == '*' then ok = true; break end end
  if not ok then return {'state', state} end
end
local spend = {}
for _, c in ipairs(counters) do
  for _, k in ipairs(chain) do
    local left = redis.call('HGET', k, 'c:' .. c)
    if left then
      if tonumber(left) <= 0 then
        return {'budget', c, redis.call('HGET', k, 'l:' .. c) or '0'}
      end
      spend[#spend + 1] = {k, c}
      break
    end
  end
end
local out = {'ok', state}
for _, s in ipairs(spend) do
  redis.call('HINCRBY', s[1], 'c:' .. s[2], -1)
  out[#out + 1] = string.sub(s[1], #prefix + 1)
  out[#out + 1] = s[2]
end
return out
