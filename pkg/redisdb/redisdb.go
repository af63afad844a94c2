// Package redisdb opens the Redis client every service uses, traced with redisotel.
package redisdb

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
)

// Connect opens the client url names, enables context deadlines on every command and
// tracing with tp, and waits up to 10 seconds for a PING. url is one of
//
//	redis://[user:password@]host:port[/db]                  one server (rediss:// with TLS)
//	redis+cluster://[user:password@]host:port?addr=host2:port&addr=…   a Redis Cluster
//	redis+sentinel://[user:password@]sentinel:port?addr=…&master_name=name   behind Sentinel
//
// (rediss+cluster://, rediss+sentinel:// with TLS). Query parameters set client options as
// go-redis reads them (dial_timeout=3s, pool_size=20, …).
func Connect(ctx context.Context, url string, tp trace.TracerProvider) (redis.UniversalClient, error) {
	client, err := open(url)
	if err != nil {
		// A *url.Error quotes the whole URL, password included; say only what is wrong.
		var uerr *neturl.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("parse redis url: %v", err)
	}
	// Tracing costs every command something whether the trace is kept or not; two of its
	// defaults cost the most (CPU profiles of the gateway under redirect load and of the quota
	// service under creation load): the caller's function, file and line, found by walking
	// the stack on every command (6-10 % of the quota service), and the text of every
	// pipeline's commands, built even when the statement is not recorded — for a batch of
	// 100 click entries it was 5 % of the gateway's core. So no caller, and no span for a
	// pipeline of stream appends (the click producer's batches; its metrics tell their story).
	if err := redisotel.InstrumentTracing(client, redisotel.WithTracerProvider(tp), redisotel.WithDBStatement(false),
		redisotel.WithCallerEnabled(false), redisotel.WithCommandsFilter(untracedPipeline)); err != nil {
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

// open builds the client of url's kind, not yet connected.
func open(url string) (redis.UniversalClient, error) {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return nil, errors.New("redis url has no scheme")
	}
	base, kind, _ := strings.Cut(scheme, "+")
	if base != "redis" && base != "rediss" {
		return nil, fmt.Errorf("redis url scheme %q is not redis, rediss, redis+cluster or redis+sentinel", scheme)
	}
	plain := base + "://" + rest
	switch kind {
	case "":
		opts, err := redis.ParseURL(plain)
		if err != nil {
			return nil, err
		}
		opts.ContextTimeoutEnabled, opts.DialTimeout = true, orDefault(opts.DialTimeout)
		return redis.NewClient(opts), nil
	case "cluster":
		opts, err := redis.ParseClusterURL(plain)
		if err != nil {
			return nil, err
		}
		opts.ContextTimeoutEnabled, opts.DialTimeout = true, orDefault(opts.DialTimeout)
		return redis.NewClusterClient(opts), nil
	case "sentinel":
		opts, err := redis.ParseFailoverURL(plain)
		if err != nil {
			return nil, err
		}
		if opts.MasterName == "" {
			return nil, errors.New("redis+sentinel url needs master_name")
		}
		opts.ContextTimeoutEnabled, opts.DialTimeout = true, orDefault(opts.DialTimeout)
		return redis.NewFailoverClient(opts), nil
	}
	return nil, fmt.Errorf("redis url scheme %q is not redis, rediss, redis+cluster or redis+sentinel", scheme)
}

// orDefault is our dial timeout unless the URL set one: a few seconds, so a service whose
// Redis is away answers 503 rather than hanging on connects.
func orDefault(d time.Duration) time.Duration {
	if d == 0 {
		return 3 * time.Second
	}
	return d
}

// Ping is a readiness check for the client.
func Ping(client redis.UniversalClient) func(context.Context) error {
	return func(ctx context.Context) error { return client.Ping(ctx).Err() }
}

// untracedPipeline reports whether a pipeline goes without a span: one of nothing but XADD
// commands, and, as redisotel's own default, one holding a command that carries a password.
func untracedPipeline(cmds []redis.Cmder) bool {
	appends := len(cmds) > 0
	for _, c := range cmds {
		if redisotel.DefaultCommandFilter(c) {
			return true
		}
		appends = appends && c.Name() == "xadd"
	}
	return appends
}
