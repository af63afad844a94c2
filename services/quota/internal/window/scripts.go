package window

import "github.com/redis/go-redis/v9"

// redisKeys names the Redis keys of one counter. The braces are a cluster hash tag, so every
// key of a counter lives in the same slot and one script may touch them all.
type redisKeys struct {
	units  string // sorted set: member = unit id, score = unix ms the unit was taken
	marker string // present while the sorted set is authoritative for this counter
}

func keysFor(scope, key string) redisKeys {
	base := "quota:{" + scope + ":" + key + "}"
	return redisKeys{units: base + ":units", marker: base + ":hydrated"}
}

// reserveScript takes one unit if the window has room. Because it runs atomically, concurrent
// reserves on any number of replicas are exact.
//
// KEYS: units, marker. ARGV: now ms, cutoff ms (now - window), limit, member, window ms.
// Returns {status, used, oldest score}; status -1 = needs hydration, 0 = denied, 1 = taken.
var reserveScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then
  return {-1, 0, ''}
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
local used = redis.call('ZCARD', KEYS[1])
local status = 0
if used < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
  used = used + 1
  status = 1
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {status, used, oldest[2] or ''}
`)

// usageScript reads a counter without taking a unit: status 2 when read, -1 when it needs
// hydration first.
//
// KEYS: units, marker. ARGV: now ms, cutoff ms (now - window), as reserveScript's first two.
var usageScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then
  return {-1, 0, ''}
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
local used = redis.call('ZCARD', KEYS[1])
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {2, used, oldest[2] or ''}
`)

// hydrateScript rebuilds the sorted set from the durable record, unless another replica got
// there first (the marker is back). The set and the marker get the same expiry, so they
// always vanish together.
//
// KEYS: units, marker. ARGV: window ms, then score, member pairs. Returns 1 if it hydrated.
var hydrateScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
redis.call('DEL', KEYS[1])
for i = 2, #ARGV, 2 do
  redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i + 1])
end
if #ARGV > 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
return 1
`)

// removeScript takes a unit out and reports whether it was there, which makes release
// idempotent: only the call that removed the member touches MongoDB.
//
// KEYS: units. ARGV: member.
var removeScript = redis.NewScript(`return redis.call('ZREM', KEYS[1], ARGV[1])`)

// restoreScript puts a released unit back when its MongoDB decrement failed, so a retried
// release does both steps again.
//
// KEYS: units. ARGV: score, member, window ms.
var restoreScript = redis.NewScript(`
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`)

// reserveManyScript takes up to ARGV[6] units at once, as many as the window has room for,
// named ARGV[4] .. "." .. i: status 1 when it took any, 0 when none, -1 when the counter
// needs hydration first; the fourth value is how many it took.
//
// KEYS: units, marker. ARGV: now ms, cutoff ms, limit, member prefix, window ms, count.
var reserveManyScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then
  return {-1, 0, '', 0}
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
local used = redis.call('ZCARD', KEYS[1])
local n = math.min(tonumber(ARGV[3]) - used, tonumber(ARGV[6]))
if n < 0 then
  n = 0
end
for i = 1, n do
  redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4] .. '.' .. i)
end
local status = 0
if n > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
  status = 1
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {status, used + n, oldest[2] or '', n}
`)

// removeManyScript gives back units a reservation of several took but could not record.
//
// KEYS: units. ARGV: the members.
var removeManyScript = redis.NewScript(`return redis.call('ZREM', KEYS[1], unpack(ARGV))`)
