package clicks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// saltKeyPrefix + "YYYY-MM-DD" holds a day's visitor salt in Redis.
const saltKeyPrefix = "linkmesh:analytics:salt:"

// saltGrace is how long a day's salt outlives the day, for clicks still being enriched
// across midnight; then Redis destroys it.
const saltGrace = 10 * time.Minute

// takeSalt sets the day's salt unless a replica already did, and answers the salt in force.
var takeSalt = redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PXAT', ARGV[2])
return redis.call('GET', KEYS[1])`)

// RedisSalts keeps the visitor salt of each UTC day in Redis, the same for every gateway
// replica: the first replica to need a day's salt draws it at random, and it expires
// saltGrace after its day, so no one can recompute an older day's hashes. (The Enricher
// keeps the day's keyed hash, so this is asked once a day.)
type RedisSalts struct {
	rdb redis.UniversalClient
}

// NewRedisSalts returns salts kept in rdb.
func NewRedisSalts(rdb redis.UniversalClient) *RedisSalts { return &RedisSalts{rdb: rdb} }

// Salt implements Salts.
func (s *RedisSalts) Salt(day string) ([]byte, error) {
	start, err := time.Parse(time.DateOnly, day)
	if err != nil {
		return nil, err
	}
	var fresh [32]byte
	_, _ = rand.Read(fresh[:])
	expireAt := start.Add(24*time.Hour + saltGrace).UnixMilli()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v, err := takeSalt.Run(ctx, s.rdb, []string{saltKeyPrefix + day}, hex.EncodeToString(fresh[:]), expireAt).Text()
	if err != nil {
		return nil, fmt.Errorf("visitor salt: %w", err)
	}
	salt, err := hex.DecodeString(v)
	if err != nil || len(salt) != len(fresh) {
		return nil, fmt.Errorf("visitor salt of %s unreadable", day)
	}
	return salt, nil
}
