package mongodb

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
)

// Idle pooled connections close after MaxConnIdle unless the URI says otherwise.
func TestIdleConnectionsClose(t *testing.T) {
	for uri, want := range map[string]time.Duration{
		"mongodb://127.0.0.1:27017/":                      MaxConnIdle,
		"mongodb://127.0.0.1:27017/?maxIdleTimeMS=5000":   5 * time.Second,
		"mongodb://127.0.0.1:27017/?maxIdleTimeMS=600000": 10 * time.Minute,
	} {
		opts := clientOptions(uri, noop.NewTracerProvider())
		if opts.MaxConnIdleTime == nil || *opts.MaxConnIdleTime != want {
			t.Errorf("%s: idle time %v, want %s", uri, opts.MaxConnIdleTime, want)
		}
	}
}
