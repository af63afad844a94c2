package redisdb

import (
	"context"
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
