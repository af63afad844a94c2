// Package redisdb opens the Redis client every service uses, traced with redisotel.
package redisdb

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"time"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
)

// Connect parses url, enables context deadlines on every command and tracing with tp, and
// waits up to 10 seconds for a PING.
func Connect(ctx context.Context, url string, tp trace.TracerProvider) (*redis.Client, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		// A *url.Error quotes the whole URL, password included; say only what is wrong.
		var uerr *neturl.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("parse redis url: %v", err)
	}
	opts.ContextTimeoutEnabled = true
	opts.DialTimeout = 3 * time.Second
	client := redis.NewClient(opts)
	if err := redisotel.InstrumentTracing(client, redisotel.WithTracerProvider(tp), redisotel.WithDBStatement(false)); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("instrument redis: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("ping redis: %w", err)
	}
	return client, nil
}

// Ping is a readiness check for the client.
func Ping(client *redis.Client) func(context.Context) error {
	return func(ctx context.Context) error { return client.Ping(ctx).Err() }
}
