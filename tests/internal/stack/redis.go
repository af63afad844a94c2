package stack

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisReadyTimeout is generous: redis normally answers within milliseconds.
const redisReadyTimeout = 20 * time.Second

// startRedis starts a throwaway-persistence redis-server on a free loopback
// port and waits for PING. It returns the process and its redis:// URL.
func startRedis(ctx context.Context, dir, logsDir string, logger *slog.Logger) (*process, string, error) {
	return startRedisOn(ctx, 0, dir, logsDir, logger)
}

// startRedisOn is startRedis on port, or on a free one when port is 0.
func startRedisOn(ctx context.Context, fixed int, dir, logsDir string, logger *slog.Logger) (*process, string, error) {
	bin, err := lookBinary("redis-server")
	if err != nil {
		return nil, "", fmt.Errorf("start redis: %w", err)
	}
	for attempt := 1; ; attempt++ {
		port := fixed
		if port == 0 {
			if port, err = freePort(); err != nil {
				return nil, "", fmt.Errorf("start redis: %w", err)
			}
		}
		p, err := startProcess(processSpec{
			name: "redis",
			path: bin,
			args: []string{
				"--port", strconv.Itoa(port),
				"--bind", "127.0.0.1",
				// Redis holds only caches, counters and rate-limit state, so
				// it needs no persistence.
				"--save", "",
				"--appendonly", "no",
				"--daemonize", "no",
			},
			dir:     dir,
			logPath: filepath.Join(logsDir, "redis.log"),
		})
		if err != nil {
			return nil, "", fmt.Errorf("start redis: %w", err)
		}
		url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
		err = waitReady(ctx, p, redisReadyTimeout, func(ctx context.Context) error {
			return pingRedis(ctx, url)
		})
		if err == nil {
			return p, url, nil
		}
		p.stop(syscall.SIGKILL, time.Second)
		if attempt < 3 && p.addrInUse() && fixed == 0 {
			logger.Info("redis port was taken, retrying", "port", port)
			continue
		}
		return nil, "", fmt.Errorf("start redis: %w", err)
	}
}

// pingRedis opens a one-off client and sends PING.
func pingRedis(ctx context.Context, url string) error {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return fmt.Errorf("parse redis url: %w", err)
	}
	opts.MaxRetries = -1 // the caller polls; retries would only delay it
	client := redis.NewClient(opts)
	defer client.Close()
	return client.Ping(ctx).Err()
}

// RestartRedis kills Redis (SIGKILL, as a crash: without persistence it comes back empty),
// keeps it away for down, and starts it again on the same port.
func (d *Datastores) RestartRedis(ctx context.Context, down time.Duration) error {
	port, err := portOf(d.RedisURL)
	if err != nil {
		return err
	}
	d.redis.stop(syscall.SIGKILL, 5*time.Second)
	time.Sleep(down)
	p, _, err := startRedisOn(ctx, port, d.Dir, d.LogDir, d.logger)
	if err != nil {
		return err
	}
	d.redis = p
	return nil
}
