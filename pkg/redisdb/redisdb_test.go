package redisdb

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"
)

// A malformed URL is reported without the URL: it may carry the password.
func TestConnectNeverQuotesTheURL(t *testing.T) {
	for _, raw := range []string{"redis://:s3cret%zz@cache:6379/0", "redis://user:s3cret@cache:6379/x", "rediss://:s3cret@[::1"} {
		_, err := Connect(context.Background(), raw, noop.NewTracerProvider())
		if err == nil {
			t.Fatalf("%s accepted", raw)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("the error quotes the password: %v", err)
		}
	}
}

// One URL setting names any of the three topologies, and each opens its own kind of client.
func TestOpenPicksTheTopologyFromTheScheme(t *testing.T) {
	cases := []struct {
		url  string
		want string
	}{
		{"redis://127.0.0.1:6379/0", "*redis.Client"},
		{"rediss://:pw@cache.example:6380/1", "*redis.Client"},
		{"redis+cluster://127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002", "*redis.ClusterClient"},
		{"rediss+cluster://user:pw@node-0:6379", "*redis.ClusterClient"},
		{"redis+sentinel://sentinel-0:26379?addr=sentinel-1:26379&master_name=mymaster", "*redis.Client"},
	}
	for _, tc := range cases {
		c, err := open(tc.url)
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		if got := fmt.Sprintf("%T", c); got != tc.want {
			t.Errorf("%s opened a %s, want %s", tc.url, got, tc.want)
		}
		_ = c.Close()
	}
	for _, bad := range []string{"127.0.0.1:6379", "http://127.0.0.1:6379", "redis+shard://127.0.0.1:6379",
		"redis+sentinel://sentinel-0:26379", "redis+cluster://127.0.0.1:7000?bogus=1"} {
		if c, err := open(bad); err == nil {
			_ = c.Close()
			t.Errorf("%s accepted", bad)
		}
	}
}
